# smtctl: the command-line client (smtd(8) The control API).  dial.c is `smtctl
# dial-stdio`, a plain byte pump with no HTTP in it; libcurl is loaded at
# run time (proto/smt_curl.c) by the commands that speak HTTP, so
# dial-stdio, exec'd over ssh once per worker, never maps it.
bin_PROGRAMS += smtctl
# pathsearch (and strv's smt_env_get) from daemon/: the launcher finds a
# program exactly as smtd's spawn does; an answer is read into daemon/'s
# dynbuf, with its cap.
smtctl_SOURCES = client/smtctl.c client/smtctl.h client/dial.c client/rank.c \
	client/ranktty.c client/ranktty.h \
	daemon/pathsearch.c daemon/strv.c daemon/vec.c daemon/dynbuf.c
smtctl_LDADD = proto/libsmtproto.a $(JANSSON_LIBS)
