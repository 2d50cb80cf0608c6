# Issue 23: tests that can fail.  Nothing of the job left, observed while
# smtd is alive (tests/multihost/smtd.sh's smtd_nothing_left).
TESTS += tests/multihost/test_nothing_left.sh
EXTRA_DIST += tests/multihost/test_nothing_left.sh
