/* ompiparams.c - MCA parameters as Open MPI would read them. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "ompiparams.h"

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int copy(const char *value, char *out, size_t outlen)
{
	return snprintf(out, outlen, "%s", value) < (int)outlen ? 1 : -ENAMETOOLONG;
}

int smt_ompi_param_in_file(const char *file, const char *name, char *out, size_t outlen)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	FILE *f = fopen(file, "re");

	if (f == NULL)
		return -errno;
	/* A later line wins, as in Open MPI's own reader. */
	while (getline(&line, &cap, f) >= 0) {
		char *hash = strchr(line, '#'), *eq, *key;
		if (hash)
			*hash = '\0';
		eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		key = trim(line);
		if (strcmp(key, name) == 0)
			rc = copy(trim(eq + 1), out, outlen);
	}
	free(line);
	fclose(f);
	return rc;
}

/* The installation's file for the mpirun at PATH. */
static int install_file(const char *path, char *out, size_t outlen)
{
	char real[PATH_MAX], *slash;

	if (path == NULL || realpath(path, real) == NULL)
		return -ENOENT;
	/* PREFIX/bin/mpirun -> PREFIX */
	for (int i = 0; i < 2; i++) {
		slash = strrchr(real, '/');
		if (slash == NULL)
			return -ENOENT;
		*slash = '\0';
	}
	if (strcmp(real, "/usr") == 0)
		return snprintf(out, outlen, "/etc/openmpi/openmpi-mca-params.conf") < (int)outlen ?
			       0 : -ENAMETOOLONG;
	return snprintf(out, outlen, "%s/etc/openmpi-mca-params.conf", real) < (int)outlen ?
		       0 : -ENAMETOOLONG;
}

static int in_files(const char *list, const char *name, char *out, size_t outlen)
{
	char file[PATH_MAX];
	const char *p = list, *end;

	for (;; p = end + 1) {
		end = strchrnul(p, ':');
		if (end > p && (size_t)(end - p) < sizeof(file)) {
			snprintf(file, sizeof(file), "%.*s", (int)(end - p), p);
			int rc = smt_ompi_param_in_file(file, name, out, outlen);
			if (rc == 1 || rc == -ENAMETOOLONG)
				return rc;
		}
		if (*end == '\0')
			return 0;
	}
}

int smt_ompi_param(const char *name, char *const *envp, const char *mpirun_path, char *out,
		   size_t outlen)
{
	char var[256], home_file[PATH_MAX], inst[PATH_MAX];
	const char *v, *home;
	int rc;

	snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
	v = smt_env_get(envp, var);
	if (v)
		return copy(v, out, outlen);
	v = smt_env_get(envp, "OMPI_MCA_mca_base_param_files");
	if (v)
		return in_files(v, name, out, outlen);
	home = smt_env_get(envp, "HOME");
	if (home && snprintf(home_file, sizeof(home_file), "%s/.openmpi/mca-params.conf", home) <
			    (int)sizeof(home_file)) {
		rc = smt_ompi_param_in_file(home_file, name, out, outlen);
		if (rc == 1 || rc == -ENAMETOOLONG)
			return rc;
	}
	if (install_file(mpirun_path, inst, sizeof(inst)) < 0)
		return 0;
	rc = smt_ompi_param_in_file(inst, name, out, outlen);
	return rc == 1 || rc == -ENAMETOOLONG ? rc : 0;
}
