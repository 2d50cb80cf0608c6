# A rank that is not root, and not friendly (smtd(8) SECURITY): each attack
# a rank running as uid 65534 can try, against the real daemon and tools.
HOSTILE_UNIT = tests/unit/test_rankcred tests/unit/test_procenv tests/unit/test_ctlesc
check_PROGRAMS += $(HOSTILE_UNIT)
TESTS += $(HOSTILE_UNIT)
tests_unit_test_rankcred_SOURCES = tests/unit/test_rankcred.c
tests_unit_test_rankcred_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_rankcred_LDADD = $(TEST_LIBS)
tests_unit_test_procenv_SOURCES = tests/unit/test_procenv.c
tests_unit_test_procenv_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_procenv_LDADD = $(TEST_LIBS)
tests_unit_test_ctlesc_SOURCES = tests/unit/test_ctlesc.c
tests_unit_test_ctlesc_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_ctlesc_LDADD = $(TEST_LIBS)

HOSTILE_TESTS = tests/integration/hostile_stacks.sh tests/integration/hostile_channels.sh \
	tests/integration/hostile_orted.sh tests/integration/hostile_ranklog.sh \
	tests/integration/hostile_conns.sh tests/integration/hostile_sources.sh
TESTS += $(HOSTILE_TESTS)
EXTRA_DIST += $(HOSTILE_TESTS)
