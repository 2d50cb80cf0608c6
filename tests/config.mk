# config tests
TESTS += tests/integration/config_bad_input.sh
EXTRA_DIST += tests/integration/config_bad_input.sh
