/*
 * safefile.h - a file smtd writes in a directory someone else may write.
 *
 * smtd runs as root; the directories it writes files into (--rank-log-dir,
 * the hostfile's) may be writable by the job.  A name there may already be
 * taken by something planted: a FIFO that would block the open (and with
 * it the loop, so smtd, PID 1 and all), a file of another user that would
 * then receive what smtd writes, a hard link to a file elsewhere.  So a
 * file is either created fresh (O_EXCL), or opened without blocking and
 * without following a final link and used only if it is a regular file
 * owned by smtd's uid with exactly one link; anything else is left alone.
 */
#ifndef SMT_SAFEFILE_H
#define SMT_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

enum smt_safefile_mode { SMT_SAFEFILE_APPEND, SMT_SAFEFILE_TRUNCATE };

/*
 * Open DIRFD/NAME (DIRFD may be AT_FDCWD) for writing: created with MODE
 * when missing, else appended to or truncated.  Returns a close-on-exec,
 * non-blocking descriptor, or -errno: -ELOOP for a link, -EINVAL when it
 * is not a regular file, -EPERM when it belongs to another user or has
 * other links, the open's own error otherwise.
 */
int smt_safefile_open(int dirfd, const char *name, enum smt_safefile_mode how, mode_t mode);

/*
 * TEXT (LEN bytes) as ROOT/DIRS[0]/.../DIRS[N-1]/NAME, replacing what is
 * there: each directory created when missing and opened without following
 * a link, the text written to a temporary name made only if it did not
 * exist, then renamed over NAME (which replaces the name, never what a
 * link there names).  0 or -errno.
 */
int smt_safefile_replace(const char *root, const char *const *dirs, size_t n, const char *name,
			 const char *text, size_t len);

/* What RC of smt_safefile_open means, in words for a log line. */
const char *smt_safefile_strerror(int rc);

#endif
