# A rank's stdout is a terminal, as under mpirun (issue 21, SPEC §7): lines
# of stdio's defaults arrive at once, raw bytes, no tty signals.
check_PROGRAMS += tests/helpers/ttyrank
tests_helpers_ttyrank_SOURCES = tests/helpers/ttyrank.c
# A rank: no sanitizer runtime, so LD_PRELOAD of libsmthostname works.
tests_helpers_ttyrank_CFLAGS = $(WARN_CFLAGS)
tests_helpers_ttyrank_LDFLAGS =
TESTS += tests/multihost/test_rank_tty.sh
EXTRA_DIST += tests/multihost/test_rank_tty.sh
