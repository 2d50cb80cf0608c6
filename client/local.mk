bin_PROGRAMS += smtctl
smtctl_SOURCES = client/smtctl.c
smtctl_LDADD = proto/libsmtproto.a $(CURL_LIBS) $(JANSSON_LIBS)
