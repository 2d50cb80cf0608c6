# Issue 23: tests that can fail.  Nothing of the job left, observed while
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
