# preload tests
#
# hostname_probe stands for a rank: it is built without the sanitizers, as
# a program that LD_PRELOAD loads our library into is, because the
# sanitizer runtime refuses to come after a preloaded library.  The
# scanner itself is checked under the sanitizers by test_hostscan.
check_PROGRAMS += tests/helpers/hostname_probe tests/unit/test_hostscan
tests_helpers_hostname_probe_SOURCES = tests/helpers/hostname_probe.c
tests_helpers_hostname_probe_CFLAGS = $(WARN_CFLAGS) -pthread
tests_helpers_hostname_probe_LDFLAGS = -pthread

tests_unit_test_hostscan_SOURCES = tests/unit/test_hostscan.c \
	preload/hostscan.c preload/hostscan.h
tests_unit_test_hostscan_CPPFLAGS = $(TEST_CPPFLAGS) -I$(top_srcdir)/preload
tests_unit_test_hostscan_LDADD = $(CMOCKA_LIBS)

TESTS += tests/unit/test_hostscan \
	tests/integration/preload_config.sh \
	tests/integration/preload_buffers.sh \
	tests/integration/preload_threads.sh \
	tests/integration/preload_elf.sh
EXTRA_DIST += tests/integration/preload_config.sh \
	tests/integration/preload_buffers.sh \
	tests/integration/preload_threads.sh \
	tests/integration/preload_elf.sh
