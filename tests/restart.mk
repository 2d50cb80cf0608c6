# Restarts in place (smtd(8) Restarts): on 3 simulated hosts, with real
# torch DDP (checkpoint and resume), mpi4py ranks that fail, stall, hold or
# leave daemons behind, smtctl restart, a lost host and SIGTERM between
# attempts.
TESTS += tests/multihost/test_restart.sh
EXTRA_DIST += tests/multihost/test_restart.sh tests/helpers/restart_job.py \
	tests/helpers/ddp_ckpt.py
# The policy and the records (restart.c): kinds, counts, the failure text
# within 1024 bytes, attempts.json never through a link.
check_PROGRAMS += tests/unit/test_restart
TESTS += tests/unit/test_restart
tests_unit_test_restart_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_restart_LDADD = $(TEST_LIBS)
# B10 (bench/b10_restart.sh, for bench/run.sh): smtd's restart against
# torchrun's own --max-restarts, and after a stall.
EXTRA_DIST += bench/b10_restart.sh bench/b10job.py
