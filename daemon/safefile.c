/* safefile.c - a file smtd writes where others may write (safefile.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safefile.h"

int smt_safefile_open(int dirfd, const char *name, enum smt_safefile_mode how, mode_t mode)
{
	const int base = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat st;
	int fd;

	fd = openat(dirfd, name, base | O_CREAT | O_EXCL, mode);
	if (fd >= 0)
		return fd;
	if (errno != EEXIST)
		return -errno;
	/* There already: O_NONBLOCK so that a FIFO fails (no reader) or is
	 * seen for what it is below, instead of hanging here. */
	fd = openat(dirfd, name, base | (how == SMT_SAFEFILE_APPEND ? O_APPEND : 0));
	if (fd < 0)
		return errno == ENXIO ? -EINVAL : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_uid != geteuid() || st.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	if (how == SMT_SAFEFILE_TRUNCATE && ftruncate(fd, 0) < 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

const char *smt_safefile_strerror(int rc)
{
	switch (rc) {
	case -ELOOP:
		return "a symbolic link is there (left alone: remove it)";
	case -EINVAL:
		return "not a regular file (left alone: remove it)";
	case -EPERM:
		return "another user's file, or one with other links (left alone: remove it)";
	default:
		return strerror(-rc);
	}
}

int smt_safefile_replace(const char *root, const char *const *dirs, size_t n, const char *name,
			 const char *text, size_t len)
{
	char tmp[300];
	int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, rc = 0;

	for (size_t i = 0; dir >= 0 && i < n; i++) {
		int next = -1;

		if (mkdirat(dir, dirs[i], 0755) == 0 || errno == EEXIST)
			next = openat(dir, dirs[i],
				      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			rc = -errno;
		close(dir);
		dir = next;
	}
	if (dir < 0) {
		rc = rc ? rc : -errno;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	for (size_t off = 0; off < len && rc == 0;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	close(fd);
	if (rc == 0 && renameat(dir, tmp, dir, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dir, tmp, 0);
out:
	if (dir >= 0)
		close(dir);
	return rc;
}
