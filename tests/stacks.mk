# stalls (issue 16): stack texts, faulthandler dumps, the odd rank, live reads
STACKS_UNIT = tests/unit/test_stackparse tests/unit/test_pystack tests/unit/test_stackgroup
check_PROGRAMS += $(STACKS_UNIT)
TESTS += $(STACKS_UNIT)
tests_unit_test_stackparse_SOURCES = tests/unit/test_stackparse.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_stackparse_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_stackparse_LDADD = $(TEST_LIBS)
tests_unit_test_pystack_SOURCES = tests/unit/test_pystack.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_pystack_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_pystack_LDADD = $(TEST_LIBS)
tests_unit_test_stackgroup_SOURCES = tests/unit/test_stackgroup.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_stackgroup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_stackgroup_LDADD = $(TEST_LIBS)

EXTRA_DIST += tests/data/stacks
