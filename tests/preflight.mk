# The pre-launch phase (preflight checks, the
# code directory's install) on simulated hosts, and its options' bad input.
TESTS += tests/multihost/test_preflight.sh tests/multihost/test_install.sh \
	tests/integration/preflight_options.sh
EXTRA_DIST += tests/multihost/test_preflight.sh tests/multihost/test_install.sh \
	tests/integration/preflight_options.sh
check_PROGRAMS += tests/unit/test_preflight
TESTS += tests/unit/test_preflight
tests_unit_test_preflight_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_preflight_LDADD = $(TEST_LIBS)
