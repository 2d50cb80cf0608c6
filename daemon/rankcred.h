/*
 * rankcred.h - a rank's credentials, and files opened with them.
 *
 * smtd runs as root next to ranks that often do not.  Whatever a rank can
 * name - a source file in a traceback, a debugger extension next to its
 * interpreter - smtd opens or runs with that rank's credentials, never its
 * own, so that a rank learns or runs nothing through smtd that it could not
 * on its own (smtd(8), SECURITY).
 *
 * A rank is "privileged" when any of its user IDs (real, effective, saved,
 * filesystem) is 0 or smtd's own: acting as it gains nothing, so smtd acts
 * as itself, and trusts only files no one else could have written
 * (smt_rankcred_trusted).
 *
 * smt_rankcred_open() takes the rank's identity for one open() only, on the
 * calling thread (setfsuid, setfsgid and the thread's own supplementary
 * groups, through the raw system call: glibc's setgroups() would change
 * every thread), and gives it back before returning.  smtd's other threads
 * (libuv's pool) never see it.
 */
#ifndef SMT_RANKCRED_H
#define SMT_RANKCRED_H

#include <stddef.h>
#include <sys/types.h>

#define SMT_RANKCRED_GROUPS_MAX 32

struct smt_rankcred {
	uid_t uid;          /* effective */
	gid_t gid;          /* effective */
	size_t ngroups;     /* supplementary groups (at most the first 32) */
	gid_t groups[SMT_RANKCRED_GROUPS_MAX];
	int privileged;     /* a user ID is 0 or smtd's: smtd acts as itself */
};

/* The credentials of PID from PROC/PID/status (PROC NULL: "/proc").
 * 0, -ESRCH when it is gone, -EIO when the file cannot be parsed. */
int smt_rankcred_of(const char *proc, pid_t pid, struct smt_rankcred *out);

/*
 * Open PATH for reading as C (NULL: as smtd): without following a final
 * link, without blocking (a FIFO never hangs the loop), without becoming a
 * controlling terminal.  Returns a close-on-exec descriptor of a regular
 * file, or -errno: -EINVAL when PATH is not a regular file, -EPERM when
 * smtd cannot take C's identity (it is not root), the open's own error
 * otherwise (-EACCES, -ENOENT, -ELOOP for a link).  The descriptor is left
 * in non-blocking mode.
 */
int smt_rankcred_open(const struct smt_rankcred *c, const char *path);

/*
 * Whether PATH may be run or sourced with smtd's own privileges: the file
 * it resolves to, and every directory above it, are owned by root or by
 * smtd's uid and writable by no one else (group and other write bits
 * clear), so no one else could have put it there or swapped it since.  On
 * 1, RESOLVED (SIZE bytes) holds the path with every link resolved, which
 * the caller uses instead of PATH.  0 otherwise.
 */
int smt_rankcred_trusted(const char *path, char *resolved, size_t size);

#endif
