# A rank's stdout is a terminal, as under mpirun (smtd(8) OUTPUT): lines
# of stdio's defaults arrive at once, raw bytes, no tty signals.
check_PROGRAMS += tests/helpers/ttyrank
tests_helpers_ttyrank_SOURCES = tests/helpers/ttyrank.c
# A rank: no sanitizer runtime, so LD_PRELOAD of libsmthostname works.
tests_helpers_ttyrank_CFLAGS = $(WARN_CFLAGS)
tests_helpers_ttyrank_LDFLAGS =
TESTS += tests/multihost/test_rank_tty.sh
EXTRA_DIST += tests/multihost/test_rank_tty.sh
# The pty itself, the hub reading one to its end, rankd's kinds of
# descriptors.
check_PROGRAMS += tests/unit/test_ranktty
TESTS += tests/unit/test_ranktty
tests_unit_test_ranktty_SOURCES = tests/unit/test_ranktty.c client/ranktty.c client/ranktty.h
tests_unit_test_ranktty_CPPFLAGS = $(TEST_CPPFLAGS) -I$(srcdir)/client
tests_unit_test_ranktty_LDADD = $(TEST_LIBS) -lpthread
