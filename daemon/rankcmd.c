/*
 * rankcmd.c - the rank command (rankcmd.h): the program in the code
 * directory and the user hyperparameters as its arguments, rendered as the
 * SageMaker training toolkit renders them (to_cmd_args).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "install.h"
#include "rankcmd.h"
#include "pyrender.h"
#include "strv.h"
#include "textesc.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The toolkit's to_cmd_args rendering of one value: a mapping as k=v pairs
 * joined by commas, keys sorted, each v as str() renders it; None empty;
 * anything else as str() renders it (True, 0.1, ['a', 'b']).
 */
static char *arg_value(json_t *v)
{
	const char **keys;
	const char *key;
	json_t *item;
	char *s = NULL;
	size_t len = 0, n = 0;
	FILE *f;

	if (json_is_null(v))
		return strdup("");
	if (!json_is_object(v))
		return smt_py_str(v);
	f = open_memstream(&s, &len);
	keys = calloc(json_object_size(v) + 1, sizeof(*keys));
	if (!f || !keys)
		goto fail;
	json_object_foreach(v, key, item)
		keys[n++] = key;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char *val = smt_py_str(json_object_get(v, keys[i]));

		if (!val)
			goto fail;
		fprintf(f, "%s%s=%s", i ? "," : "", keys[i], val);
		free(val);
	}
	free(keys);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
fail:
	free(keys);
	if (f)
		fclose(f);
	free(s);
	return NULL;
}

static int user_args(const struct smt_jobconfig *c, struct smt_rankcmd *p)
{
	struct smt_strvbuf s = { 0 };
	size_t n = json_object_size(c->user_hps), i = 0;
	const char **keys = calloc(n + 1, sizeof(*keys));
	const char *key;
	json_t *v;
	int rc = -ENOMEM;

	if (!keys || !(s.v = calloc(1, sizeof(char *))))
		goto out;
	s.cap = 1;
	json_object_foreach(c->user_hps, key, v)
		keys[i++] = key;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++) {
		char *val = arg_value(json_object_get(c->user_hps, keys[i]));

		if (!val)
			goto out;
		rc = smt_strvbuf_addf(&s, "%s%s", strlen(keys[i]) > 1 ? "--" : "-", keys[i]);
		if (rc == 0)
			rc = smt_strvbuf_add(&s, val);
		free(val);
		if (rc < 0)
			goto out;
	}
	p->user_args = s.v;
	s.v = NULL;
	rc = 0;
out:
	smt_strv_free(s.v);
	free(keys);
	return rc;
}

int smt_rankcmd_build(const struct smt_options *o, const struct smt_jobconfig *c,
		      enum smt_launch launch, int distributed, struct smt_rankcmd *p, char *err,
		      size_t errlen)
{
	struct smt_strvbuf s = { 0 };
	const char *program;
	const char *dot;
	struct stat st;
	int package, rc = -ENOMEM;

	if (c->submit_dir && c->submit_dir[0] == '/' &&
	    stat(c->submit_dir, &st) == 0 && S_ISDIR(st.st_mode))
		p->code_dir = strdup(c->submit_dir);
	else if (asprintf(&p->code_dir, "%s/code", o->root) < 0)
		p->code_dir = NULL;
	if (!p->code_dir)
		return -ENOMEM;
	if ((rc = user_args(c, p)) < 0)
		return rc;
	if (o->command) {
		for (int i = 0; i < o->command_argc; i++)
			if ((rc = smt_strvbuf_add(&s, o->command[i])) < 0)
				goto out;
		p->argv = s.v;
		return 0;
	}
	program = o->program ? o->program : c->program;
	if (!program || !*program) {
		smt_errorf(err, errlen,
			   "%s: sagemaker_program: missing; name the program to run there, in "
			   "SAGEMAKER_PROGRAM or --program, or give a command after --",
			   c->hp_path);
		return -EINVAL;
	}
	if (!(p->program = strdup(program)))
		return -ENOMEM;
	dot = strrchr(program, '.');
	/* A package (install.h) runs as a module of what pip installed, as
	 * the toolkit's PYTHON_PACKAGE entry point does. */
	package = smt_install_is_package(p->code_dir, program);
	rc = 0;
	if (package || (dot && strcmp(dot, ".py") == 0)) {
		rc |= smt_strvbuf_add(&s, "python3");
		if (distributed && (launch == SMT_LAUNCH_MPI || launch == SMT_LAUNCH_SMDDP)) {
			/* mpi4py makes an uncaught exception abort the job (the toolkit's reason).
			 */
			rc |= smt_strvbuf_add(&s, "-m");
			rc |= smt_strvbuf_add(&s, "mpi4py");
		} else if (distributed && launch == SMT_LAUNCH_TORCHRUN) {
			/* What torchrun runs for a script without --no_python. */
			rc |= smt_strvbuf_add(&s, "-u");
		}
	}
	if (package) {
		rc |= smt_strvbuf_add(&s, "-m");
		rc |= smt_strvbuf_addf(&s, "%.*s", (int)(dot && strcmp(dot, ".py") == 0 ?
						       (size_t)(dot - program) : strlen(program)),
				       program);
	} else if (program[0] == '/')
		rc |= smt_strvbuf_add(&s, program);
	else
		rc |= smt_strvbuf_addf(&s, "%s/%s", p->code_dir, program);
	for (char **a = p->user_args; *a; a++)
		rc |= smt_strvbuf_add(&s, *a);
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	p->argv = s.v;
	return 0;
out:
	smt_strv_free(s.v);
	return rc;
}
