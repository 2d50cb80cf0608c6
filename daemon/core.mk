# core modules: the loop, children, signals, result files
daemon_libsmtd_a_SOURCES += daemon/daemon.c daemon/daemon.h \
	daemon/resultfile.c daemon/resultfile.h \
	daemon/spawn.c daemon/spawn.h \
	daemon/reaper.c daemon/reaper.h \
	daemon/killtree.c daemon/killtree.h \
	daemon/job.c daemon/job.h \
	daemon/cgroup.c daemon/cgroup.h \
	daemon/sshd.c daemon/sshd.h \
	daemon/curluv.c daemon/curluv.h \
	daemon/peers.c daemon/peers.h \
	daemon/orted.c daemon/orted.h \
	daemon/logpipe.c daemon/logpipe.h
daemon_libsmtd_a_SOURCES += daemon/daemon_int.h daemon/leader.c daemon/worker.c daemon/status.c
