# config tests
TESTS += tests/integration/config_bad_input.sh
EXTRA_DIST += tests/integration/config_bad_input.sh
TESTS += tests/integration/config_golden.sh
EXTRA_DIST += tests/integration/config_golden.sh tests/golden
