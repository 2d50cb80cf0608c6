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
EXTRA_DIST += tests/multihost/hosts.sh tests/multihost/host-init.sh tests/multihost/test_harness.sh
TESTS += tests/multihost/test_smtd_job.sh
EXTRA_DIST += tests/multihost/smtd.sh tests/multihost/test_smtd_job.sh
TESTS += tests/multihost/test_faults_ranks.sh tests/multihost/test_faults_hosts.sh
EXTRA_DIST += tests/multihost/test_faults_ranks.sh tests/multihost/test_faults_hosts.sh
TESTS += tests/multihost/test_launch_smddp.sh
EXTRA_DIST += tests/multihost/test_launch_smddp.sh tests/helpers/env_probe.py
TESTS += tests/multihost/test_launch_refused.sh
EXTRA_DIST += tests/multihost/test_launch_refused.sh
TESTS += tests/multihost/test_launch_torchrun.sh
EXTRA_DIST += tests/multihost/test_launch_torchrun.sh tests/helpers/ddp_job.py
