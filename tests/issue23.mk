# Tests that can fail.  Nothing of the job left, observed while
# smtd is alive (tests/multihost/smtd.sh's smtd_nothing_left).
TESTS += tests/multihost/test_nothing_left.sh
EXTRA_DIST += tests/multihost/test_nothing_left.sh
# The end of a stopped MPI job: no host waits out --grace once the ranks
# have ended.
TESTS += tests/multihost/test_grace_end.sh
EXTRA_DIST += tests/multihost/test_grace_end.sh
# docs/BENCHMARKS.md is bench/run.sh's output: its head is
# bench/BENCHMARKS.head.md and its prose's numbers are its table's.
TESTS += tests/integration/bench_doc.sh
EXTRA_DIST += tests/integration/bench_doc.sh
# Behaviours no test ran: --start-timeout and --result-timeout firing; the
# program named by sagemaker_program / SAGEMAKER_PROGRAM in
# sagemaker_submit_directory; every signal on every host, a worker
# stopped alone and /metrics of a known job (simulated hosts).
TESTS += tests/integration/supervise_timeouts.sh tests/integration/config_program.sh \
	tests/multihost/test_signals_hosts.sh
EXTRA_DIST += tests/integration/supervise_timeouts.sh tests/integration/config_program.sh \
	tests/multihost/test_signals_hosts.sh
