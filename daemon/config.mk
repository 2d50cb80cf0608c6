# config modules: options, config files, plan, mpirun argv
daemon_libsmtd_a_SOURCES += daemon/options.c daemon/options.h daemon/plan.c daemon/plan.h
