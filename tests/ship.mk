# shipping: sd_notify, man pages, units, install
check_PROGRAMS += tests/unit/test_notify tests/unit/test_notify_fallback
tests_unit_test_notify_SOURCES = tests/unit/test_notify.c
tests_unit_test_notify_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_notify_LDADD = $(TEST_LIBS)
# The same test against our own NOTIFY_SOCKET writer, libsystemd or not.
tests_unit_test_notify_fallback_SOURCES = tests/unit/test_notify.c daemon/notify.c
tests_unit_test_notify_fallback_CPPFLAGS = $(TEST_CPPFLAGS) -DSMT_NOTIFY_FALLBACK
tests_unit_test_notify_fallback_LDADD = $(CMOCKA_LIBS)
TESTS += tests/unit/test_notify tests/unit/test_notify_fallback

SHIP_TESTS = \
	tests/integration/ship_man.sh \
	tests/integration/ship_systemd.sh \
	tests/integration/ship_install.sh
TESTS += $(SHIP_TESTS)
EXTRA_DIST += $(SHIP_TESTS)
TESTS += tests/integration/ship_container.sh
EXTRA_DIST += tests/integration/ship_container.sh
