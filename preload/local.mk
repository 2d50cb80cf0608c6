# The preload library is loaded into every rank, so it is built without the
# sanitizers (their runtime must come first in a process, which it cannot
# in someone else's python3) and links libc only.
lib_LTLIBRARIES += preload/libsmthostname.la
preload_libsmthostname_la_SOURCES = preload/smthostname.c
preload_libsmthostname_la_CFLAGS = $(WARN_CFLAGS)
preload_libsmthostname_la_LDFLAGS = -module -avoid-version -shared -no-undefined
