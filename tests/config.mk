# config tests
TESTS += tests/integration/config_bad_input.sh
EXTRA_DIST += tests/integration/config_bad_input.sh
TESTS += tests/integration/config_golden.sh tests/integration/config_launch.sh \
	tests/integration/config_launch_agent.sh
EXTRA_DIST += tests/integration/config_launch.sh tests/integration/config_launch_agent.sh
# The result files, attacked through symbolic links (run as nobody).
TESTS += tests/integration/result_links.sh
EXTRA_DIST += tests/integration/result_links.sh
EXTRA_DIST += tests/integration/config_golden.sh tests/golden
config_unit_tests = tests/unit/test_shellwords tests/unit/test_options tests/unit/test_jobconfig \
	tests/unit/test_mpiargv tests/unit/test_plan tests/unit/test_ompiparams \
	tests/unit/test_pathsearch
check_PROGRAMS += $(config_unit_tests)
TESTS += $(config_unit_tests)
tests_unit_test_shellwords_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_shellwords_LDADD = $(TEST_LIBS)
tests_unit_test_options_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_options_LDADD = $(TEST_LIBS)
tests_unit_test_jobconfig_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_jobconfig_LDADD = $(TEST_LIBS)
tests_unit_test_mpiargv_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_mpiargv_LDADD = $(TEST_LIBS)
tests_unit_test_ompiparams_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_ompiparams_LDADD = $(TEST_LIBS)
tests_unit_test_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_plan_LDADD = $(TEST_LIBS)
tests_unit_test_pathsearch_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_pathsearch_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/fuzz/fuzz_config.c tests/fuzz/fuzz_config.sources tests/fuzz/fuzz_config.seeds
# The program named by sagemaker_program / SAGEMAKER_PROGRAM in
# sagemaker_submit_directory.
TESTS += tests/integration/config_program.sh
EXTRA_DIST += tests/integration/config_program.sh
