# A rank's stdout (smtd(8) A rank's standard output): lines of stdio's
# defaults arrive at once, through a line-buffered pipe or a terminal, raw
# bytes, no tty signals.
check_PROGRAMS += tests/helpers/ttyrank
tests_helpers_ttyrank_SOURCES = tests/helpers/ttyrank.c
# A rank: no sanitizer runtime, so LD_PRELOAD of libsmthostname works.
tests_helpers_ttyrank_CFLAGS = $(WARN_CFLAGS)
tests_helpers_ttyrank_LDFLAGS =
TESTS += tests/multihost/test_rank_tty.sh tests/integration/rank_stdout_standalone.sh
EXTRA_DIST += tests/multihost/test_rank_tty.sh tests/integration/rank_stdout_standalone.sh
# The pty itself, the hub reading one to its end, rankd's kinds of
# descriptors.
check_PROGRAMS += tests/unit/test_ranktty
TESTS += tests/unit/test_ranktty
tests_unit_test_ranktty_SOURCES = tests/unit/test_ranktty.c client/ranktty.c client/ranktty.h
tests_unit_test_ranktty_CPPFLAGS = $(TEST_CPPFLAGS) -I$(srcdir)/client
tests_unit_test_ranktty_LDADD = $(TEST_LIBS) -lpthread
