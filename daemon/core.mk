# core modules: the loop, children, signals, result files
daemon_libsmtd_a_SOURCES += daemon/daemon.c daemon/daemon.h \
	daemon/resultfile.c daemon/resultfile.h
