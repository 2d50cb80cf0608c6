# The daemon is a thin main (smtd.c) over a library of modules, so that the
# unit tests link exactly the code that runs in production.  libcurl is not
# linked: proto/smt_curl.c loads it for the leader of a multi-host job only.
noinst_LIBRARIES += daemon/libsmtd.a
daemon_libsmtd_a_SOURCES = daemon/log.c daemon/log.h
SMTD_LIBS = daemon/libsmtd.a proto/libsmtproto.a $(UV_LIBS) $(JANSSON_LIBS) \
	$(HTTP_PARSER_LIBS) $(SYSTEMD_LIBS)
AM_CPPFLAGS += $(UV_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS) $(SYSTEMD_CFLAGS)

include $(srcdir)/daemon/config.mk
include $(srcdir)/daemon/output.mk
include $(srcdir)/daemon/api.mk
include $(srcdir)/daemon/core.mk

sbin_PROGRAMS += smtd
smtd_SOURCES = daemon/smtd.c
smtd_LDADD = $(SMTD_LIBS)
include $(srcdir)/daemon/notify.mk
include $(srcdir)/daemon/stacks.mk
