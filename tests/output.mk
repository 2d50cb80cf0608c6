# output tests: the ranks' output from the framer to the leader's stdout,
# the rank table and the failure report (issue 14).
OUTPUT_UNIT = tests/unit/test_dynbuf
check_PROGRAMS += $(OUTPUT_UNIT)
TESTS += $(OUTPUT_UNIT)
tests_unit_test_dynbuf_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_dynbuf_LDADD = $(TEST_LIBS)
