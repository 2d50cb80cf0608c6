/* pysite.c - the job's Python and its torch, read from files (pysite.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathsearch.h"
#include "pysite.h"
#include "strv.h"

#define MAX_DIRS 16

struct dirs {
	char v[MAX_DIRS][PATH_MAX];
	size_t n;
};

/* BASE/MIDpythonVER/TAIL (VER NULL: BASE/MID only). */
static void add_dir(struct dirs *d, const char *base, const char *mid, const char *ver,
		    const char *tail)
{
	if (d->n < MAX_DIRS &&
	    (size_t)snprintf(d->v[d->n], PATH_MAX, "%s/%s%s%s%s", base, mid, ver ? "python" : "",
			     ver ? ver : "", tail) < PATH_MAX)
		d->n++;
}

/* A version as Python packaging writes one: digits first, then [0-9A-Za-z.+_-]. */
static int valid_version(const char *v, size_t n)
{
	if (n == 0 || n > 64 || v[0] < '0' || v[0] > '9')
		return 0;
	return strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+_-") >= n;
}

/* At most LEN-1 bytes of the regular file PATH, never through a link. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* torch/version.py: the line `__version__ = '2.1.0'`. */
static int from_version_py(const char *dir, char *version, size_t vlen)
{
	char path[PATH_MAX + 32], buf[8192], *line, *q, *end;

	snprintf(path, sizeof(path), "%s/torch/version.py", dir);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -ENOENT;
	for (line = buf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, "__version__", 11) != 0)
			continue;
		q = strpbrk(line, "'\"");
		end = q ? strchr(q + 1, *q) : NULL;
		if (!end || memchr(line, '\n', (size_t)(q - line)) ||
		    !valid_version(q + 1, (size_t)(end - q - 1)) || (size_t)(end - q - 1) >= vlen)
			return -ENOENT;
		snprintf(version, vlen, "%.*s", (int)(end - q - 1), q + 1);
		return 0;
	}
	return -ENOENT;
}

/* torch-VERSION.dist-info, torch-VERSION[-pyX.Y].egg-info */
static int from_dist_name(const char *dir, char *version, size_t vlen, char *name, size_t nlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = -ENOENT;

	if (!d)
		return -ENOENT;
	while (rc < 0 && (e = readdir(d))) {
		const char *v = e->d_name + 6, *dot = strrchr(e->d_name, '.');
		size_t n;

		if (strncmp(e->d_name, "torch-", 6) != 0 || !dot ||
		    (strcmp(dot, ".dist-info") != 0 && strcmp(dot, ".egg-info") != 0))
			continue;
		n = strcspn(v, "-");
		if ((size_t)(dot - v) < n)
			n = (size_t)(dot - v);
		if (!valid_version(v, n) || n >= vlen)
			continue;
		snprintf(version, vlen, "%.*s", (int)n, v);
		snprintf(name, nlen, "%s/%s", dir, e->d_name);
		rc = 0;
	}
	closedir(d);
	return rc;
}

/* "3.11" from a pythonX.Y file name, else NULL. */
static const char *py_version(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strncmp(base, "python3.", 8) != 0 || strspn(base + 8, "0123456789") == 0 ||
	    base[8 + strspn(base + 8, "0123456789")])
		return NULL;
	return base + 6;
}

/* PREFIX of PREFIX/bin/pythonX.Y, in OUT. */
static void parent_of_bin(const char *path, char *out, size_t len)
{
	char *slash;

	snprintf(out, len, "%s", path);
	for (int i = 0; i < 2; i++)
		if ((slash = strrchr(out, '/')))
			*slash = '\0';
	if (!*out)
		snprintf(out, len, "/");
}

/* Whether the venv's pyvenv.cfg says include-system-site-packages = true. */
static int venv_includes_system(const char *cfg)
{
	char buf[4096];
	const char *p;

	if (read_small(cfg, buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "include-system-site-packages")))
		return 0;
	p += strlen("include-system-site-packages");
	p += strspn(p, " \t=");
	return strncmp(p, "true", 4) == 0;
}

static void site_dirs(char *const *envp, const char *found, struct dirs *d)
{
	char real[PATH_MAX], prefix[PATH_MAX], venv[PATH_MAX], cfg[PATH_MAX + 16];
	const char *pp = smt_env_get(envp, "PYTHONPATH"), *home = smt_env_get(envp, "HOME");
	const char *ver;
	int system = 1;
	struct stat st;

	for (const char *p = pp; p && *p; p += strcspn(p, ":") + (p[strcspn(p, ":")] != 0)) {
		int n = (int)strcspn(p, ":");

		if (p[0] == '/' && n < PATH_MAX && d->n < MAX_DIRS)
			snprintf(d->v[d->n++], PATH_MAX, "%.*s", n, p);
	}
	if (!realpath(found, real) || !(ver = py_version(real)))
		return;
	parent_of_bin(real, prefix, sizeof(prefix));
	parent_of_bin(found, venv, sizeof(venv));
	snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", venv);
	if (stat(cfg, &st) == 0) {
		add_dir(d, venv, "lib/", ver, "/site-packages");
		system = venv_includes_system(cfg);
	}
	if (!system)
		return;
	if (home && home[0] == '/')
		add_dir(d, home, ".local/lib/", ver, "/site-packages");
	add_dir(d, prefix, "local/lib/", ver, "/dist-packages");
	add_dir(d, prefix, "lib/python3/dist-packages", NULL, "");
	add_dir(d, prefix, "lib/", ver, "/dist-packages");
	add_dir(d, prefix, "lib/", ver, "/site-packages");
}

int smt_pysite_torch_version(char *const *envp, char *version, size_t vlen, char *source,
			     size_t slen)
{
	char found[PATH_MAX];
	struct dirs *d = calloc(1, sizeof(*d));
	int rc = -ENOENT;

	if (!d)
		return -ENOMEM;
	if (smt_path_find("python3", envp, NULL, found, sizeof(found)) == 0)
		site_dirs(envp, found, d);
	/* The first directory that has torch is the one `import torch` loads. */
	for (size_t i = 0; rc < 0 && i < d->n; i++) {
		if ((rc = from_version_py(d->v[i], version, vlen)) == 0)
			snprintf(source, slen, "%s/torch/version.py", d->v[i]);
		else
			rc = from_dist_name(d->v[i], version, vlen, source, slen);
	}
	free(d);
	return rc;
}
