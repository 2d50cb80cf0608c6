# output modules: the mpirun --xml decoder, rank line forwarding, failure report
daemon_libsmtd_a_SOURCES += daemon/xmlstream.c daemon/xmlstream.h \
	daemon/output.c daemon/output.h daemon/report.c daemon/report.h
