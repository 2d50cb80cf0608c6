/* rankcred.c - a rank's credentials, and files opened with them (rankcred.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rankcred.h"

/* The numbers after NAME on a status line, at most MAX of them. */
static size_t numbers(const char *s, unsigned long *v, size_t max)
{
	size_t n = 0;
	char *end;

	while (n < max) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s < '0' || *s > '9')
			break;
		v[n++] = strtoul(s, &end, 10);
		s = end;
	}
	return n;
}

int smt_rankcred_of(const char *proc, pid_t pid, struct smt_rankcred *out)
{
	char path[PATH_MAX], line[1024];
	unsigned long uid[4], gid[4], groups[SMT_RANKCRED_GROUPS_MAX];
	size_t nu = 0, ng = 0, ngr = 0;
	int have_groups = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", proc ? proc : "/proc", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Uid:", 4) == 0)
			nu = numbers(line + 4, uid, 4);
		else if (strncmp(line, "Gid:", 4) == 0)
			ng = numbers(line + 4, gid, 4);
		else if (strncmp(line, "Groups:", 7) == 0) {
			ngr = numbers(line + 7, groups, SMT_RANKCRED_GROUPS_MAX);
			have_groups = 1;
		}
	}
	fclose(f);
	if (nu != 4 || ng != 4 || !have_groups)
		return -EIO;
	memset(out, 0, sizeof(*out));
	out->uid = (uid_t)uid[1];
	out->gid = (gid_t)gid[1];
	out->ngroups = ngr;
	for (size_t i = 0; i < ngr; i++)
		out->groups[i] = (gid_t)groups[i];
	/* A rank that may become root again (a saved or real uid of 0) is
	 * root for this purpose: acting as its effective uid would protect
	 * nothing it could not reach. */
	for (size_t i = 0; i < 4; i++)
		if (uid[i] == 0 || uid[i] == (unsigned long)geteuid())
			out->privileged = 1;
	return 0;
}

/* The thread's own groups, set with the raw call (see the header). */
static int thread_setgroups(size_t n, const gid_t *g)
{
	return (int)syscall(SYS_setgroups, n, g);
}

/* Become C for file access on this thread; SAVED gets what to restore. */
struct saved_ids {
	uid_t fsuid;
	gid_t fsgid;
	int ngroups;
	gid_t groups[NGROUPS_MAX > 256 ? 256 : NGROUPS_MAX];
};

static int become(const struct smt_rankcred *c, struct saved_ids *s)
{
	/* Everything to restore is read before anything changes, so that
	 * restore() is right whatever step fails. */
	s->fsuid = (uid_t)setfsuid((uid_t)-1);
	s->fsgid = (gid_t)setfsgid((gid_t)-1);
	s->ngroups = getgroups((int)(sizeof(s->groups) / sizeof(s->groups[0])), s->groups);
	if (s->ngroups < 0) {
		s->ngroups = -1;
		return -EPERM;
	}
	if (thread_setgroups(c->ngroups, c->groups) < 0)
		return -EPERM;
	setfsgid(c->gid);
	setfsuid(c->uid);
	/* setfsuid() reports no error: asking again (an invalid ID changes
	 * nothing) says whether it took. */
	if ((uid_t)setfsuid((uid_t)-1) != c->uid || (gid_t)setfsgid((gid_t)-1) != c->gid)
		return -EPERM;
	return 0;
}

static void restore(const struct saved_ids *s)
{
	setfsuid(s->fsuid);
	setfsgid(s->fsgid);
	if (s->ngroups >= 0)
		thread_setgroups((size_t)s->ngroups, s->groups);
}

int smt_rankcred_open(const struct smt_rankcred *c, const char *path)
{
	const int flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
	struct saved_ids saved;
	struct stat st;
	int fd, rc;

	if (c == NULL || c->privileged) {
		fd = open(path, flags);
		if (fd < 0)
			return -errno;
	} else {
		rc = become(c, &saved);
		fd = rc < 0 ? -1 : open(path, flags);
		if (rc == 0 && fd < 0)
			rc = -errno;
		restore(&saved);
		if (fd < 0)
			return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int safe_owner(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int smt_rankcred_trusted(const char *path, char *resolved, size_t size)
{
	char real[PATH_MAX], *p;
	struct stat st;
	int dir, next, ok = 0;

	if (realpath(path, real) == NULL || strlen(real) >= size)
		return 0;
	/* Each component of the resolved path, walked without following a
	 * link: what is checked is what gdb will open. */
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	p = real + 1;
	while (dir >= 0) {
		char *slash = strchr(p, '/');
		if (fstat(dir, &st) < 0 || !safe_owner(&st))
			break;
		if (slash)
			*slash = '\0';
		next = openat(dir, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (slash)
			*slash = '/';
		close(dir);
		dir = next;
		if (slash == NULL) {
			ok = dir >= 0 && fstat(dir, &st) == 0 && S_ISREG(st.st_mode) &&
				safe_owner(&st);
			break;
		}
		p = slash + 1;
	}
	if (dir >= 0)
		close(dir);
	if (ok)
		memcpy(resolved, real, strlen(real) + 1);
	return ok;
}
