# Every test is run by `make check`.  Unit tests are cmocka programs; the
# integration tests are shell scripts that drive the real binaries.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	export top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)'; \
	export SMTD='$(abs_top_builddir)/smtd' SMTCTL='$(abs_top_builddir)/smtctl'; \
	export SMTD_PRELOAD='$(abs_top_builddir)/preload/.libs/libsmthostname.so'; \
	export MPICC='$(MPICC)' CC='$(CC)'; \
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0; \
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1;
TEST_CPPFLAGS = $(AM_CPPFLAGS) $(CMOCKA_CFLAGS)
TEST_LIBS = $(SMTD_LIBS) $(CMOCKA_LIBS)
EXTRA_DIST += tests/lib.sh

include $(srcdir)/tests/config.mk
include $(srcdir)/tests/output.mk
include $(srcdir)/tests/api.mk
include $(srcdir)/tests/preload.mk
include $(srcdir)/tests/core.mk
include $(srcdir)/tests/multihost.mk
include $(srcdir)/tests/ship.mk
include $(srcdir)/tests/stacks.mk
include $(srcdir)/tests/curlload.mk
include $(srcdir)/tests/crash.mk
include $(srcdir)/tests/ranktty.mk
include $(srcdir)/tests/hostile.mk
include $(srcdir)/tests/restart.mk
include $(srcdir)/tests/toolkit.mk
EXTRA_DIST += tests/fuzz
include $(srcdir)/tests/house.mk
include $(srcdir)/tests/preflight.mk
