# stalls: stack texts, faulthandler dumps, the odd rank, live reads
STACKS_UNIT = tests/unit/test_stackparse tests/unit/test_pystack tests/unit/test_stackgroup
check_PROGRAMS += $(STACKS_UNIT)
TESTS += $(STACKS_UNIT)
tests_unit_test_stackparse_SOURCES = tests/unit/test_stackparse.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_stackparse_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_stackparse_LDADD = $(TEST_LIBS)
tests_unit_test_pystack_SOURCES = tests/unit/test_pystack.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_pystack_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_pystack_LDADD = $(TEST_LIBS)
tests_unit_test_stackgroup_SOURCES = tests/unit/test_stackgroup.c tests/unit/testdata.c tests/unit/testdata.h \
	tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_stackgroup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_stackgroup_LDADD = $(TEST_LIBS)

EXTRA_DIST += tests/data/stacks tests/helpers/ddp_stall.py tests/helpers/mpi_stall.py

# The driver: smt_stacks on a libuv loop, for the integration test and bench.
check_PROGRAMS += tests/helpers/stacks_read tests/helpers/sleeper
tests_helpers_stacks_read_SOURCES = tests/helpers/stacks_read.c
tests_helpers_stacks_read_CPPFLAGS = $(TEST_CPPFLAGS)
tests_helpers_stacks_read_LDADD = $(SMTD_LIBS)
# A native process to read: sleeps in nanosleep under known function names.
tests_helpers_sleeper_SOURCES = tests/helpers/sleeper.c
tests_helpers_sleeper_CFLAGS = $(WARN_CFLAGS) -g -O0 -pthread
tests_helpers_sleeper_LDFLAGS = -pthread

STACKS_TESTS = tests/integration/stacks_read.sh tests/integration/stacks_fixtures.sh
TESTS += $(STACKS_TESTS)
EXTRA_DIST += $(STACKS_TESTS) tests/helpers/sleeper.py tests/helpers/heartbeat.py \
	tests/helpers/torchrun_wrapper.sh
