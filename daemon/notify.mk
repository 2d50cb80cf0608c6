# notify: sd_notify for Type=notify units (libsystemd when configure found
# it, else a datagram of our own to $NOTIFY_SOCKET).
daemon_libsmtd_a_SOURCES += daemon/notify.c daemon/notify.h
