# The preload library is loaded into every rank, so it is built without the
# sanitizers (their runtime must come first in a process, which it cannot
# in someone else's python3) and links libc only.  Only gethostname and
# __gethostname_chk are exported (-fvisibility=hidden); -z defs makes an
# unresolved symbol a link error instead of a crash inside a rank.
lib_LTLIBRARIES += preload/libsmthostname.la
preload_libsmthostname_la_SOURCES = preload/smthostname.c \
	preload/hostscan.c preload/hostscan.h
preload_libsmthostname_la_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden
preload_libsmthostname_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-Wl,-z,defs -Wl,--as-needed

# The same rules for the library that line-buffers a rank's stdout pipe
# (smtd(8) A rank's standard output): a constructor, nothing exported.
lib_LTLIBRARIES += preload/libsmtlinebuf.la
preload_libsmtlinebuf_la_SOURCES = preload/smtlinebuf.c
preload_libsmtlinebuf_la_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden
preload_libsmtlinebuf_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-Wl,-z,defs -Wl,--as-needed
