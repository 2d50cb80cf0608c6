# output tests: the mpirun --xml decoder, line forwarding, failure report
check_PROGRAMS += tests/unit/test_xmlstream tests/unit/test_output tests/unit/test_report
TESTS += tests/unit/test_xmlstream tests/unit/test_output tests/unit/test_report
tests_unit_test_xmlstream_SOURCES = tests/unit/test_xmlstream.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_xmlstream_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_xmlstream_LDADD = $(TEST_LIBS)
tests_unit_test_output_SOURCES = tests/unit/test_output.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_output_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_output_LDADD = $(TEST_LIBS)
tests_unit_test_report_SOURCES = tests/unit/test_report.c tests/unit/testdata.c tests/unit/testdata.h
tests_unit_test_report_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_report_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/data/mpirun-captures.txt \
	tests/data/mpirun-abort.xml tests/data/mpirun-badhost.xml \
	tests/data/mpirun-badhost.stderr tests/data/mpirun-badoption.stderr \
	tests/data/mpirun-bytes.xml tests/data/mpirun-exit3.xml \
	tests/data/mpirun-improper.xml tests/data/mpirun-missing.xml \
	tests/data/mpirun-noexec.xml tests/data/mpirun-noslots.xml \
	tests/data/mpirun-ok.xml tests/data/mpirun-python-valueerror.xml \
	tests/data/mpirun-segv.xml tests/data/mpirun-sigkill.xml \
	tests/fuzz/fuzz_xmlstream.c tests/fuzz/fuzz_xmlstream.sources \
	tests/fuzz/fuzz_xmlstream.seeds
