/*
 * smenv.h - the SM_* environment of a rank (smtd(8) ENVIRONMENT), with the names and
 * value formats of the sagemaker-training toolkit: strings as they are,
 * every other value as compact JSON with sorted keys and ASCII escapes.
 *
 * The values are this host's own.  smt_smenv_host_specific() names the
 * variables whose value differs from host to host (SM_CURRENT_HOST, ...):
 * the leader must not forward those with mpirun -x, since every host's own
 * smtd gives them to its orted and so to its ranks.
 */
#ifndef SMT_SMENV_H
#define SMT_SMENV_H

#include <jansson.h>

#include "jobconfig.h"

struct smt_smenv_in {
	const char *root;
	const char *code_dir;
	const char *program;       /* user entry point; NULL with a -- COMMAND */
	char *const *dist_hosts;   /* NULL-terminated */
	char *const *dist_groups;  /* the distribution instance groups in effect
				      (the current one by default); NULL: none */
	const char *master;        /* the leader */
	char *const *user_args;    /* the --key value list (SM_USER_ARGS) */
	long num_gpus;
	long num_neurons;          /* Neuron cores */
	long num_cpus;
	const char *training_job_name; /* TRAINING_JOB_NAME of smtd's environment, or NULL */
	const char *framework_module; /* SAGEMAKER_TRAINING_MODULE of smtd's environment, or NULL */
	const char *mp_env;        /* SM_HP_MP_PARAMETERS of smtd's environment, or NULL */
	int smddpmprun_installed;
};

/* A new object NAME -> string value holding every SM_* variable. */
int smt_smenv_build(const struct smt_jobconfig *cfg, const struct smt_smenv_in *in,
		    json_t **vars);

/* Nonzero for a variable whose value is this host's (not to be forwarded). */
int smt_smenv_host_specific(const char *name);

/* VALUE rendered as the toolkit renders an environment value (new string). */
char *smt_smenv_value(json_t *value);

/*
 * V as Python writes a float (repr, json.dumps, str): the shortest digits
 * that read back as V, "0.1" and "123.0", with an exponent below 1e-4 and
 * from 1e16 ("1e-05").  jansson writes 17 digits ("0.10000000000000001"),
 * which is not what the toolkit gave the program.
 */
void smt_smenv_real(double v, char *out, size_t outlen);

#endif
