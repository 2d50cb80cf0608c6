# Restarts in place (issue 24, SPEC §15): on 3 simulated hosts, with real
# torch DDP (checkpoint and resume), mpi4py ranks that fail, stall, hold or
# leave daemons behind, smtctl restart, a lost host and SIGTERM between
# attempts.
TESTS += tests/multihost/test_restart.sh
EXTRA_DIST += tests/multihost/test_restart.sh tests/helpers/restart_job.py \
	tests/helpers/ddp_ckpt.py
