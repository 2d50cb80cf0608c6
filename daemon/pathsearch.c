/* pathsearch.c - execvp()'s search, without the exec (see pathsearch.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathsearch.h"
#include "strv.h"

static int check_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EACCES;
	if (access(path, X_OK) < 0)
		return -errno;
	return 0;
}

static int copy_out(const char *path, char *out, size_t outlen)
{
	if (out && snprintf(out, outlen, "%s", path) >= (int)outlen)
		return -ENAMETOOLONG;
	return 0;
}

int smt_path_find(const char *prog, char *const *envp, const char *cwd, char *out,
		  size_t outlen)
{
	char path[PATH_MAX];
	const char *p, *end;
	int rc = -ENOENT;

	if (prog == NULL || *prog == '\0')
		return -ENOENT;
	if (strchr(prog, '/')) {
		if (prog[0] != '/' && cwd) {
			if (snprintf(path, sizeof(path), "%s/%s", cwd, prog) >= (int)sizeof(path))
				return -ENAMETOOLONG;
		} else if (snprintf(path, sizeof(path), "%s", prog) >= (int)sizeof(path)) {
			return -ENAMETOOLONG;
		}
		rc = check_file(path);
		return rc == 0 ? copy_out(path, out, outlen) : rc;
	}
	p = smt_env_get(envp, "PATH");
	if (p == NULL)
		p = SMT_PATHSEARCH_DEFAULT;
	for (;; p = end + 1) {
		int len;

		end = strchrnul(p, ':');
		len = (int)(end - p);
		/* An empty element is the current directory ("%.*s" of "." with
		 * precision 0 would print nothing). */
		if ((len ? snprintf(path, sizeof(path), "%.*s/%s", len, p, prog) :
			   snprintf(path, sizeof(path), "./%s", prog)) < (int)sizeof(path)) {
			int r = check_file(path);

			if (r == 0)
				return copy_out(path, out, outlen);
			/* execvp() goes on after EACCES but reports it at the end. */
			if (r == -EACCES)
				rc = -EACCES;
		}
		if (*end == '\0')
			break;
	}
	return rc;
}
