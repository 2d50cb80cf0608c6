/* safefile.c - a file smtd writes where others may write (safefile.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
