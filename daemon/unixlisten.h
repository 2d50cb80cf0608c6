/*
 * unixlisten.h - a Unix socket smtd listens on, made the same way for
 * every listener: the control socket (api.c), the rank launchers'
 * SOCKET.ranks (rankd.c) and the leader's channels (peers.c).
 *
 * smtd runs as root next to code it does not control, so a path is never
 * taken on trust.  What is already there is looked at, not followed:
 * nothing (the socket is created); a socket that answers a connection
 * (another daemon's: left alone, -EADDRINUSE); a socket that refuses one
 * (stale, left by a daemon that died: removed, and logged); anything else,
 * a symbolic link included (never touched, -EEXIST).  The file is created
 * with MODE and no more, even for a moment (bind under a umask, then
 * chmod), in group GID unless it is (gid_t)-1.  Never an abstract address:
 * anyone may connect to one.  Each failure is one error line naming WHAT
 * ("control socket") and the path.
 */
#ifndef SMT_UNIXLISTEN_H
#define SMT_UNIXLISTEN_H

#include <sys/stat.h>
#include <sys/types.h>

/*
 * Listen on PATH with socket TYPE (SOCK_STREAM, SOCK_SEQPACKET).  Returns
 * the listening descriptor (non-blocking, close-on-exec), with the file's
 * identity in *ST when ST is not NULL (so that only that file is removed
 * at the end), or -errno: -ENAMETOOLONG (no room in a socket address),
 * -EADDRINUSE, -EEXIST, another from the system.  On failure nothing this
 * call created is left.
 */
int smt_unix_listen(const char *what, const char *path, int type, mode_t mode, gid_t gid,
		    struct stat *st);

#endif
