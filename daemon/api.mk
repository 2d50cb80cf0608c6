# api modules: the control API server (SPEC §9).  httpconn.c parses and
# answers the bytes of one connection; api.c owns the sockets and timers.
daemon_libsmtd_a_SOURCES += daemon/api.c daemon/api.h \
	daemon/httpconn.c daemon/httpconn.h
