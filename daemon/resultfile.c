/* resultfile.c - the success and failure files SageMaker reads. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "resultfile.h"

/* Fewer than this many collisions with an attacker's names is no accident. */
#define TMP_ATTEMPTS 16

/*
 * ROOT/output as a directory descriptor, created when missing.  ROOT itself
 * is the operator's choice and may be a link; "output" is inside the job's
 * reach and must be a real directory.
 */
static int open_output_dir(const char *root)
{
	struct stat st;
	int rootfd, fd, err;

	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	if (mkdirat(rootfd, "output", 0755) < 0 && errno != EEXIST) {
		err = errno;
		close(rootfd);
		return -err;
	}
	fd = openat(rootfd, "output", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = errno;
	if (fd < 0 && (err == ELOOP || err == ENOTDIR) &&
	    fstatat(rootfd, "output", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
		smt_error("%s/output is a symbolic link: no result file is written through it; "
			  "make %s/output a directory", root, root);
		err = ELOOP;
	}
	close(rootfd);
	return fd < 0 ? -err : fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A new file in DIR that nobody else can have named: an O_TMPFILE (TMP is
 * then "") or, where the file system has none, ".NAME.<random>.tmp",
 * created only if it does not exist, never through a link.
 */
static int create_temporary(int dir, const char *name, char *tmp, size_t tmplen)
{
	int fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);

	tmp[0] = '\0';
	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	for (int i = 0; i < TMP_ATTEMPTS; i++) {
		unsigned char r[8];

		if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
			return -EIO;
		snprintf(tmp, tmplen, ".%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", name,
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* Give the written file FD (temporary name TMP, "" for none) its NAME. */
static int publish(int dir, int fd, const char *tmp, const char *name)
{
	char proc[64];

	if (tmp[0])
		return linkat(dir, tmp, dir, name, 0) < 0 ? -errno : 0;
	if (linkat(fd, "", dir, name, AT_EMPTY_PATH) == 0)
		return 0;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc does not. */
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

/*
 * Write the file, then link it into place: link() fails with EEXIST
 * instead of replacing or following what is there, which is what "never
 * overwrite" and "never through a link" need, and the reader sees either
 * nothing or the whole file.
 */
static int write_once(const char *root, const char *name, const char *text, size_t len)
{
	char tmp[64];
	struct stat st;
	int dir, fd, rc;

	dir = open_output_dir(root);
	if (dir < 0)
		return dir;
	fd = create_temporary(dir, name, tmp, sizeof tmp);
	if (fd < 0) {
		close(dir);
		return fd;
	}
	rc = write_all(fd, text, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc == 0)
		rc = publish(dir, fd, tmp, name);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (tmp[0])
		unlinkat(dir, tmp, 0);
	if (rc == -EEXIST && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		smt_error("%s/output/%s is a symbolic link: the result is not written through it; "
			  "remove the link (the result is in this log)", root, name);
		rc = -ELOOP;
	}
	/* The new name must survive a crash as well as the contents. */
	if (rc == 0 && fsync(dir) < 0)
		rc = -errno;
	close(dir);
	return rc;
}

int smt_resultfile_failure(const char *root, const char *text, size_t len)
{
	return write_once(root, "failure", text, len);
}

int smt_resultfile_success(const char *root)
{
	int rc = write_once(root, "success", "", 0);

	return rc == -EEXIST ? 0 : rc;
}
