# stalls (issue 16): reading live stacks, faulthandler dumps, naming the odd rank
daemon_libsmtd_a_SOURCES += \
	daemon/stackparse.c daemon/stackparse.h \
	daemon/pystack.c daemon/pystack.h \
	daemon/stackgroup.c daemon/stackgroup.h \
	daemon/stacks.c daemon/stacks.h
