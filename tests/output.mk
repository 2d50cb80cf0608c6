# output tests: the ranks' output from the framer to the leader's stdout,
# the wire to the leader, the rank table and the failure report.
OUTPUT_UNIT = tests/unit/test_dynbuf tests/unit/test_vec tests/unit/test_textesc tests/unit/test_ring \
	tests/unit/test_framer tests/unit/test_lineproto tests/unit/test_outbox \
	tests/unit/test_format tests/unit/test_merge tests/unit/test_fdwriter tests/unit/test_output \
	tests/unit/test_ranks tests/unit/test_report
check_PROGRAMS += $(OUTPUT_UNIT)
TESTS += $(OUTPUT_UNIT)
tests_unit_test_dynbuf_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_dynbuf_LDADD = $(TEST_LIBS)
tests_unit_test_vec_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_vec_LDADD = $(TEST_LIBS)
tests_unit_test_textesc_SOURCES = tests/unit/test_textesc.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_textesc_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_textesc_LDADD = $(TEST_LIBS)
tests_unit_test_ring_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_ring_LDADD = $(TEST_LIBS)
tests_unit_test_framer_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_framer_LDADD = $(TEST_LIBS)
tests_unit_test_lineproto_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_lineproto_LDADD = $(TEST_LIBS)
tests_unit_test_outbox_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_outbox_LDADD = $(TEST_LIBS)
tests_unit_test_format_SOURCES = tests/unit/test_format.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_format_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_format_LDADD = $(TEST_LIBS)
tests_unit_test_merge_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_merge_LDADD = $(TEST_LIBS)
tests_unit_test_fdwriter_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_fdwriter_LDADD = $(TEST_LIBS)
# Real pipes written by threads, a real loop.
tests_unit_test_output_SOURCES = tests/unit/test_output.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_output_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_output_LDADD = $(TEST_LIBS) -lpthread
tests_unit_test_ranks_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_ranks_LDADD = $(TEST_LIBS)
# The report from real mpirun captures (tests/data/mpirun-captures.txt).
tests_unit_test_report_SOURCES = tests/unit/test_report.c tests/unit/testdata.c tests/unit/testdata.h \
	tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_report_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_report_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/data/mpirun-captures.txt tests/data/mpirun tests/helpers/capture-mpirun.sh \
	tests/helpers/capture-launcher.py
