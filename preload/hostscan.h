/*
 * hostscan.h - find the top-level "current_host" of resourceconfig.json.
 *
 * The hostname library is loaded into every rank, so it cannot bring jansson
 * along.  This scanner validates a whole JSON document held in memory and
 * extracts one thing: the string value of the key "current_host" of the
 * top-level object.  It is pure (no allocation, no I/O, no globals, no
 * recursion) so it is safe in any thread and in a forked child.
 *
 * It accepts what the daemon's configuration reader accepts, no more: RFC
 * 8259 JSON, UTF-8, no NUL inside strings (not even as \u0000), a top-level
 * object, at most SMT_HOSTSCAN_MAX_DEPTH nested containers counting that
 * object as 1.  Escapes are decoded before the key is compared, so
 * "current\u005fhost" is the key; the same key nested in another container
 * or appearing inside a string does not count.
 */
#ifndef SMT_HOSTSCAN_H
#define SMT_HOSTSCAN_H

#include <stddef.h>
#include <sys/types.h>

/* RFC 1123 limits, as smtd-config(5) applies them to every host name. */
#define SMT_HOSTSCAN_MAX       253
#define SMT_HOSTSCAN_LABEL_MAX 63
/* smtd-config(5): deeper documents are configuration errors. */
#define SMT_HOSTSCAN_MAX_DEPTH 32

/*
 * Scans JSON[0..LEN) and on success copies the host name, NUL-terminated,
 * to OUT and returns its length (1..SMT_HOSTSCAN_MAX).  Otherwise OUT is
 * an empty string and the result is:
 *   -EBADMSG  not valid JSON, not an object, invalid UTF-8, a NUL in a
 *             string, or nested deeper than SMT_HOSTSCAN_MAX_DEPTH;
 *   -ENOENT   valid, but with no top-level "current_host";
 *   -EINVAL   "current_host" appears more than once, is not a string, or
 *             is not a valid host name (smt_hostscan_valid_name).
 */
ssize_t smt_hostscan(const char *json, size_t len,
		     char out[SMT_HOSTSCAN_MAX + 1]);

/*
 * True when NAME[0..LEN) is a host name smtd-config(5) accepts: 1..253 characters
 * of dot-separated labels, each 1..63 of [A-Za-z0-9-], never starting or
 * ending with '-'.
 */
int smt_hostscan_valid_name(const char *name, size_t len);

#endif
