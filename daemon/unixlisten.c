/* unixlisten.c - a Unix socket smtd listens on (unixlisten.h). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "unixlisten.h"

/* What is at PATH already: 0 when the path is free (again), else -errno. */
static int probe(const char *what, const char *path, int type, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, r, err;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		smt_error("%s %s: the path exists and is not a socket; not removing it", what,
			  path);
		return -EEXIST;
	}
	if ((fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	err = errno;
	close(fd);
	if (r == 0) {
		smt_error("%s %s: another daemon is already answering there "
			  "(is smtd already running?)", what, path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		smt_error("%s %s: cannot check it: %s", what, path, strerror(err));
		return -err;
	}
	smt_info("%s %s: removing a stale socket file", what, path);
	if (unlink(path) < 0 && errno != ENOENT) {
		err = errno;
		smt_error("%s %s: cannot remove the stale socket: %s", what, path, strerror(err));
		return -err;
	}
	return 0;
}

int smt_unix_listen(const char *what, const char *path, int type, mode_t mode, gid_t gid,
		    struct stat *st)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat own;
	int fd = -1, bound = 0, r, err;
	mode_t old;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		smt_error("%s %s: the path is too long (at most %zu bytes)", what, path,
			  sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	if ((r = probe(what, path, type, &sa)) < 0)
		return r;
	if ((fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		r = -errno;
		goto fail;
	}
	/* The file is never, even for a moment, open to more than MODE. */
	old = umask(~mode & 0777);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	err = errno;
	umask(old);
	if (r < 0) {
		r = -err;
		goto fail;
	}
	bound = 1;
	if (chmod(path, mode) < 0 || (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) ||
	    stat(path, st ? st : &own) < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	smt_error("%s %s: cannot listen: %s", what, path, strerror(-r));
	if (fd >= 0)
		close(fd);
	/* Only what this call created goes. */
	if (bound)
		unlink(path);
	return r;
}
