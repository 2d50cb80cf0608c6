# smtctl: the command-line client (SPEC §9).  dial.c is `smtctl
# dial-stdio`, a plain byte pump with no HTTP in it.
bin_PROGRAMS += smtctl
smtctl_SOURCES = client/smtctl.c client/smtctl.h client/dial.c
smtctl_LDADD = proto/libsmtproto.a $(CURL_LIBS) $(JANSSON_LIBS)
