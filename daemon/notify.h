/*
 * notify.h - tell a service manager how the daemon is doing (sd_notify).
 *
 * Under systemd with Type=notify, NOTIFY_SOCKET names a datagram socket
 * (a path, or "@name" for an abstract one) to which the service sends
 * "READY=1" once it serves, "STATUS=..." as it changes, and "WATCHDOG=1"
 * at least every WATCHDOG_USEC microseconds when WatchdogSec= is set.
 * Through libsystemd's sd_notify when configure found it (HAVE_SYSTEMD),
 * else a minimal datagram write of our own with the same meaning.
 *
 * Every function is a no-op returning 0 when NOTIFY_SOCKET is unset (a
 * container's PID 1, a shell): callers never need to know whether they run
 * under systemd.  They return 0 when the message was sent or there was
 * nobody to send it to, or a negative errno; a failure is worth a warning,
 * never the job.  The environment is left as it is (systemd's default
 * NotifyAccess=main ignores messages from the ranks that inherit it).
 * Each call opens and closes its own socket (close-on-exec): no state.
 */
#ifndef SMT_NOTIFY_H
#define SMT_NOTIFY_H
#include <stdint.h>

/* "READY=1": the control socket is listening. */
int smt_notify_ready(void);

/* "STATUS=STATE", STATE being one line (a state name of smtd(8) Roles). */
int smt_notify_status(const char *state);

/* "WATCHDOG=1": the event loop is alive. */
int smt_notify_watchdog(void);

/*
 * Whether the service manager expects watchdog pings: 1 with *USEC set to
 * the interval in microseconds (ping at half of it), 0 when it does not
 * (WATCHDOG_USEC unset, or WATCHDOG_PID names another process), or a
 * negative errno when WATCHDOG_USEC is malformed.
 */
int smt_notify_watchdog_usec(uint64_t *usec);

#endif
