/* cgroup.c - the memory cgroup's OOM-kill counter, v2 and v1. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

/* Find "oom_kill N" in a flat-keyed cgroup file. */
static int read_key(const char *path, const char *key, long *value)
{
	char buf[4096];
	size_t klen = strlen(key);
	int fd, n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			*value = strtol(line + klen + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * The cgroup path may name a cgroup outside our view when a cgroup
 * namespace or a container mount shows only our own subtree: then the
 * mount point itself is our cgroup.
 */
static int read_counter(const char *mount, const char *rel, const char *file, const char *key,
			long *value)
{
	char path[PATH_MAX];
	int rc;

	if (snprintf(path, sizeof(path), "%s%s/%s", mount, rel, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = read_key(path, key, value);
	if (rc == -ENOENT && strcmp(rel, "/") != 0) {
		snprintf(path, sizeof(path), "%s/%s", mount, file);
		rc = read_key(path, key, value);
	}
	return rc;
}

/* The cgroup v2 path (V2) and the v1 memory controller's path (V1) of the
 * process CGROUP_FILE describes; "" for none. */
static int memory_paths(const char *cgroup_file, char *v2, char *v1, size_t size)
{
	char line[PATH_MAX + 64];
	FILE *f;

	v2[0] = v1[0] = '\0';
	f = fopen(cgroup_file, "re");
	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		/* hierarchy-ID:controllers:path */
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c1 = *c2 = '\0';
		const char *controllers = c1 + 1, *path = c2 + 1;
		if (strcmp(line, "0") == 0 && *controllers == '\0') {
			snprintf(v2, size, "%s", path);
			continue;
		}
		for (char *save = NULL, *tok = strtok_r((char *)controllers, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "memory") == 0)
				snprintf(v1, size, "%s", path);
	}
	fclose(f);
	return 0;
}

int smt_cgroup_oom_kills(const char *sysfs, const char *cgroup_file, long *count)
{
	char mount[PATH_MAX], v2path[PATH_MAX], v1path[PATH_MAX];
	int rc = memory_paths(cgroup_file, v2path, v1path, sizeof(v2path));

	if (rc < 0)
		return rc;
	rc = -ENOENT;
	/* cgroup v2: the unified hierarchy at SYSFS (or SYSFS/unified in a
	 * hybrid set-up, which never holds the memory controller). */
	if (v2path[0]) {
		rc = read_counter(sysfs, strcmp(v2path, "/") ? v2path : "/", "memory.events",
				  "oom_kill", count);
		if (rc == 0)
			return 0;
	}
	if (v1path[0]) {
		snprintf(mount, sizeof(mount), "%s/memory", sysfs);
		rc = read_counter(mount, strcmp(v1path, "/") ? v1path : "/", "memory.oom_control",
				  "oom_kill", count);
	}
	return rc;
}

/* A limit file's value: bytes, or 0 for none ("max", or v1's huge number). */
static long long read_limit(const char *path)
{
	char buf[64];
	long long v;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (strncmp(buf, "max", 3) == 0)
		return 0;
	v = strtoll(buf, NULL, 10);
	return v > 0 && v < (1LL << 60) ? v : 0;
}

/* The smallest limit FILE sets on REL and its ancestors under MOUNT (a
 * child's limit never lifts its parent's); 0 none, -1 nothing readable.
 * A REL outside our view (a container's mount shows only our subtree)
 * ends at the mount point, as read_counter does. */
static long long smallest_limit(const char *mount, const char *rel, const char *file)
{
	char path[PATH_MAX], dir[PATH_MAX];
	long long best = -1;

	snprintf(dir, sizeof(dir), "%s", strcmp(rel, "/") ? rel : "");
	for (;;) {
		char *slash;
		long long v;

		if (snprintf(path, sizeof(path), "%s%s/%s", mount, dir, file) < (int)sizeof(path) &&
		    (v = read_limit(path)) >= 0 && (best < 0 || (v > 0 && (best == 0 || v < best))))
			best = v;
		if (!dir[0])
			break;
		slash = strrchr(dir, '/');
		*slash = '\0';
	}
	return best;
}

int smt_cgroup_memory_limit(const char *sysfs, const char *cgroup_file, long long *bytes)
{
	char mount[PATH_MAX], v2path[PATH_MAX], v1path[PATH_MAX];
	long long v = -1;
	int rc = memory_paths(cgroup_file, v2path, v1path, sizeof(v2path));

	if (rc < 0)
		return rc;
	if (v2path[0])
		v = smallest_limit(sysfs, v2path, "memory.max");
	if (v < 0 && v1path[0]) {
		snprintf(mount, sizeof(mount), "%s/memory", sysfs);
		v = smallest_limit(mount, v1path, "memory.limit_in_bytes");
	}
	if (v < 0)
		return -ENOENT;
	*bytes = v;
	return 0;
}
