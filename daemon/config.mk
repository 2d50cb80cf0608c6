# config modules: options, config files, plan, mpirun argv, SM_* environment
daemon_libsmtd_a_SOURCES += daemon/options.c daemon/options.h daemon/plan.c daemon/plan.h \
	daemon/jobconfig.c daemon/jobconfig.h daemon/shellwords.c daemon/shellwords.h \
	daemon/mpiargv.c daemon/mpiargv.h daemon/smenv.c daemon/smenv.h \
	daemon/ompiparams.c daemon/ompiparams.h daemon/strv.c daemon/strv.h \
	daemon/pathsearch.c daemon/pathsearch.h
