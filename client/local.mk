# smtctl: the command-line client (SPEC §9).  dial.c is `smtctl
# dial-stdio`, a plain byte pump with no HTTP in it; libcurl is loaded at
# run time (proto/smt_curl.c) by the commands that speak HTTP, so
# dial-stdio, exec'd over ssh once per worker, never maps it.
bin_PROGRAMS += smtctl
smtctl_SOURCES = client/smtctl.c client/smtctl.h client/dial.c client/rank.c
smtctl_LDADD = proto/libsmtproto.a $(JANSSON_LIBS)
