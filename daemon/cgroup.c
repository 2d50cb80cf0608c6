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
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
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

int smt_cgroup_oom_kills(const char *sysfs, const char *cgroup_file, long *count)
{
	char line[PATH_MAX + 64], mount[PATH_MAX];
	char v2path[PATH_MAX] = "", v1path[PATH_MAX] = "";
	FILE *f;
	int rc = -ENOENT;

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
			snprintf(v2path, sizeof(v2path), "%s", path);
			continue;
		}
		for (char *save = NULL, *tok = strtok_r((char *)controllers, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "memory") == 0)
				snprintf(v1path, sizeof(v1path), "%s", path);
	}
	fclose(f);

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
