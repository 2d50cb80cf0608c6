/* resultfile.c - the success and failure files SageMaker reads. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resultfile.h"

static int make_output_dir(const char *root, char *dir, size_t len)
{
	int n = snprintf(dir, len, "%s/output", root);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
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
 * Write to a temporary name and link it into place: link() fails with
 * EEXIST instead of replacing, which is what "never overwrite" needs, and
 * the reader sees either nothing or the whole file.
 */
static int write_once(const char *root, const char *name, const char *text, size_t len)
{
	char dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
	int fd = -1, rc, n;

	rc = make_output_dir(root, dir, sizeof(dir));
	if (rc < 0)
		return rc;
	n = snprintf(final, sizeof(final), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(final))
		return -ENAMETOOLONG;
	n = snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", dir, name, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, text, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && link(tmp, final) < 0)
		rc = -errno;
	unlink(tmp);
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
