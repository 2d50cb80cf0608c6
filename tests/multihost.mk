# multihost tests: simulated hosts on one machine (tests/multihost/hosts.sh,
# docs/MULTIHOST-TESTING.md).  They need root and skip otherwise, and skip
# under SMT_TEST_QUICK=1 (distcheck).
check_PROGRAMS += tests/multihost/mh-init
tests_multihost_mh_init_SOURCES = tests/multihost/mh_init.c
# The stand-in PID 1 is a test fixture, not code under test: no sanitizer
# runtime in a namespace's init.
tests_multihost_mh_init_CFLAGS = $(WARN_CFLAGS)
tests_multihost_mh_init_LDFLAGS =
TESTS += tests/multihost/test_harness.sh
EXTRA_DIST += tests/multihost/prelude.sh tests/multihost/hosts.sh tests/multihost/host-init.sh \
	tests/multihost/test_harness.sh
TESTS += tests/multihost/test_smtd_job.sh
EXTRA_DIST += tests/multihost/smtd.sh tests/multihost/entry-init.sh tests/multihost/test_smtd_job.sh
TESTS += tests/multihost/test_faults_ranks.sh tests/multihost/test_faults_hosts.sh
EXTRA_DIST += tests/multihost/test_faults_ranks.sh tests/multihost/test_faults_hosts.sh
TESTS += tests/multihost/test_launch_smddp.sh
EXTRA_DIST += tests/multihost/test_launch_smddp.sh tests/helpers/env_probe.py
TESTS += tests/multihost/test_launch_refused.sh
EXTRA_DIST += tests/multihost/test_launch_refused.sh
# The leader's channels: TCP with the job's token, ssh, the fall-back.
TESTS += tests/multihost/test_channels.sh
EXTRA_DIST += tests/multihost/test_channels.sh
TESTS += tests/multihost/test_launch_torchrun.sh
EXTRA_DIST += tests/multihost/test_launch_torchrun.sh tests/helpers/ddp_job.py
# Every host owns its ranks (output, back-pressure, grace, an
# entry point that starts sshd and a sidecar, PIDs before MPI_Init, the
# launcher without smtd).
check_PROGRAMS += tests/helpers/outrank tests/helpers/slowread tests/helpers/nswatch
tests_helpers_outrank_SOURCES = tests/helpers/outrank.c
# A rank: no sanitizer runtime, so LD_PRELOAD of libsmthostname works.
tests_helpers_outrank_CFLAGS = $(WARN_CFLAGS)
tests_helpers_outrank_LDFLAGS =
tests_helpers_slowread_SOURCES = tests/helpers/slowread.c
tests_helpers_nswatch_SOURCES = tests/helpers/nswatch.c
# A test witness on every simulated host: no sanitizer runtime, which
# would make its scans of /proc several times dearer.
tests_helpers_nswatch_CFLAGS = $(WARN_CFLAGS)
tests_helpers_nswatch_LDFLAGS =
MH14_TESTS = tests/multihost/test_rank_output.sh \
	tests/multihost/test_rank_backpressure.sh tests/multihost/test_rank_grace.sh \
	tests/multihost/test_rank_entrypoint.sh tests/multihost/test_rank_launcher.sh
TESTS += $(MH14_TESTS)
EXTRA_DIST += $(MH14_TESTS) tests/multihost/rank_bytes.py
# Stalls: a stuck torchrun and mpirun job, the odd rank named;
# progress patterns and live stacks.
TESTS += tests/multihost/test_stall.sh tests/multihost/test_stall_progress.sh
EXTRA_DIST += tests/multihost/test_stall.sh tests/multihost/test_stall_progress.sh \
	tests/multihost/stamp.py
# The end of a job: nothing of it left, observed while smtd is alive
# (tests/multihost/smtd.sh's smtd_nothing_left); no host waits out --grace
# once the ranks have ended; every signal on every host, a worker stopped
# alone and /metrics of a known job.
TESTS += tests/multihost/test_nothing_left.sh tests/multihost/test_grace_end.sh \
	tests/multihost/test_signals_hosts.sh
EXTRA_DIST += tests/multihost/test_nothing_left.sh tests/multihost/test_grace_end.sh \
	tests/multihost/test_signals_hosts.sh
