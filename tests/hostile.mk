# A rank that is not root, and not friendly (smtd(8) SECURITY): each attack
# a rank running as uid 65534 can try, against the real daemon and tools.
HOSTILE_UNIT = tests/unit/test_rankcred tests/unit/test_procfs tests/unit/test_textesc_controls
check_PROGRAMS += $(HOSTILE_UNIT)
TESTS += $(HOSTILE_UNIT)
tests_unit_test_rankcred_SOURCES = tests/unit/test_rankcred.c
tests_unit_test_rankcred_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_rankcred_LDADD = $(TEST_LIBS)
tests_unit_test_procfs_SOURCES = tests/unit/test_procfs.c
tests_unit_test_procfs_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_procfs_LDADD = $(TEST_LIBS)
tests_unit_test_textesc_controls_SOURCES = tests/unit/test_textesc_controls.c
tests_unit_test_textesc_controls_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_textesc_controls_LDADD = $(TEST_LIBS)

HOSTILE_TESTS = tests/integration/hostile_stacks.sh tests/integration/hostile_channels.sh \
	tests/integration/hostile_orted.sh tests/integration/hostile_ranklog.sh \
	tests/integration/hostile_conns.sh tests/integration/hostile_sources.sh
TESTS += $(HOSTILE_TESTS)
EXTRA_DIST += $(HOSTILE_TESTS)

# The hostfile's writer (what is at its name is never written through or
# blocked on), and rankd after a launcher's failed recvmsg (no other rank's
# descriptors closed).
HOSTILE_UNIT2 = tests/unit/test_safefile tests/unit/test_rankd
check_PROGRAMS += $(HOSTILE_UNIT2)
TESTS += $(HOSTILE_UNIT2)
tests_unit_test_safefile_SOURCES = tests/unit/test_safefile.c
tests_unit_test_safefile_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_safefile_LDADD = $(TEST_LIBS)
tests_unit_test_rankd_SOURCES = tests/unit/test_rankd.c
tests_unit_test_rankd_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_rankd_LDADD = $(TEST_LIBS)

# The preload's variables count for nothing in a set-user-ID program.
check_PROGRAMS += tests/helpers/secure_hostname
tests_helpers_secure_hostname_SOURCES = tests/helpers/secure_hostname.c
# Run set-user-ID: no sanitizer runtime.
tests_helpers_secure_hostname_CFLAGS = $(WARN_CFLAGS)
tests_helpers_secure_hostname_LDFLAGS =
tests_helpers_secure_hostname_LDADD = -ldl
TESTS += tests/integration/hostile_preload_env.sh
EXTRA_DIST += tests/integration/hostile_preload_env.sh

# A PID reused while its stack was read: the read is refused.
TESTS += tests/integration/stacks_pid_reuse.sh
EXTRA_DIST += tests/integration/stacks_pid_reuse.sh

# Ranks as uid 65534 on every host of a 3-host MPI job.
TESTS += tests/multihost/test_hostile.sh
EXTRA_DIST += tests/multihost/test_hostile.sh tests/multihost/hostile_rank.py
