# supervision tests: real processes, real signals, real mpirun
check_PROGRAMS += tests/helpers/sigrank
tests_helpers_sigrank_SOURCES = tests/helpers/sigrank.c
tests_helpers_sigrank_CFLAGS = $(WARN_CFLAGS)
# A stand-in rank: no sanitizer runtime, so LD_PRELOAD of libsmthostname works.
tests_helpers_sigrank_LDFLAGS =

CORE_TESTS = \
	tests/integration/supervise_standalone.sh \
	tests/integration/supervise_nofile.sh \
	tests/integration/supervise_signals.sh \
	tests/integration/supervise_pid1.sh \
	tests/integration/supervise_oom.sh \
	tests/integration/supervise_mpi.sh \
	tests/integration/supervise_notify.sh \
	tests/integration/supervise_mpi_signals.sh \
	tests/integration/supervise_volume.sh \
	tests/integration/api_daemon.sh \
	tests/integration/api_orted.sh \
	tests/integration/rank_launcher.sh \
	tests/integration/supervise_json_log.sh
TESTS += $(CORE_TESTS)
EXTRA_DIST += $(CORE_TESTS)

check_PROGRAMS += tests/unit/test_cgroup
tests_unit_test_cgroup_SOURCES = tests/unit/test_cgroup.c
tests_unit_test_cgroup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_cgroup_LDADD = $(TEST_LIBS)
TESTS += tests/unit/test_cgroup
# Which processes are the job, from a fake /proc (jobtree.h).
check_PROGRAMS += tests/unit/test_jobtree
tests_unit_test_jobtree_SOURCES = tests/unit/test_jobtree.c
tests_unit_test_jobtree_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_jobtree_LDADD = $(TEST_LIBS)
TESTS += tests/unit/test_jobtree
EXTRA_DIST += tests/helpers/mpi_job.c tests/helpers/build-mpi.sh
CLEANFILES += tests/mpi/mpi_job tests/mpi/sigrank_mpi
# PIDs reused in a PID namespace with a small pid_max.
check_PROGRAMS += tests/helpers/pidreuse
tests_helpers_pidreuse_SOURCES = tests/helpers/pidreuse.c
tests_helpers_pidreuse_LDADD = $(SMTD_LIBS)
TESTS += tests/integration/supervise_pid_reuse.sh
EXTRA_DIST += tests/integration/supervise_pid_reuse.sh
# --start-timeout and --result-timeout firing.
TESTS += tests/integration/supervise_timeouts.sh
EXTRA_DIST += tests/integration/supervise_timeouts.sh
