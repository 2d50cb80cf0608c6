/*
 * launch.c - which launch the job asks for (launch.h): the options, then
 * the distribution hyperparameters, one table of them.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "launch.h"
#include "textesc.h"

const char *smt_launch_name(enum smt_launch launch)
{
	switch (launch) {
	case SMT_LAUNCH_MPI: return "mpi";
	case SMT_LAUNCH_SMDDP: return "smddp";
	case SMT_LAUNCH_TORCHRUN: return "torchrun";
	default: return "standalone";
	}
}

/*
 * The distribution hyperparameters of the SageMaker SDK and training
 * toolkit (estimator.py's LAUNCH_*_ENV_NAME, environment.py's
 * get_distribution_instance_groups_from_resource_config), the settings
 * named *_enabled that are not distributions, and what smtd does with each.
 * Only a distribution smtd cannot launch is refused (running the job some
 * other way would be a silent wrong job); any other sagemaker_*_enabled
 * hyperparameter is a setting smtd does not know, which the plan reports
 * as a warning (smt_launch_unknown_setting) and the job runs.
 */
static const struct dist_flag {
	const char *name;
	const char *what;    /* for the message; NULL: not a distribution */
	int launch;          /* enum smt_launch, -1: smtd does not launch it */
} dist_flags[] = {
	{ "sagemaker_mpi_enabled", "MPI", SMT_LAUNCH_MPI },
	{ "sagemaker_distributed_dataparallel_enabled", "SMDataParallel", SMT_LAUNCH_SMDDP },
	{ "sagemaker_pytorch_ddp_enabled", "SMDataParallel", SMT_LAUNCH_SMDDP },
	{ "sagemaker_torch_distributed_enabled", "torchrun", SMT_LAUNCH_TORCHRUN },
	{ "sagemaker_pytorch_xla_multi_worker_enabled", "PyTorch XLA's multi-worker launcher", -1 },
	{ "sagemaker_parameter_server_enabled", "TensorFlow's parameter servers", -1 },
	{ "sagemaker_multi_worker_mirrored_strategy_enabled",
	  "TensorFlow's MultiWorkerMirroredStrategy (TF_CONFIG)", -1 },
	/* SageMaker Training Compiler: a setting of the framework inside the
	 * program, which launches the same way with it or without. */
	{ "sagemaker_training_compiler_enabled", NULL, SMT_LAUNCH_STANDALONE },
	/* The PyTorch container's training.py: whether it captures the
	 * program's stderr into its error message, not how it launches. */
	{ "sagemaker_toolkit_native_launcher_enabled", NULL, SMT_LAUNCH_STANDALONE },
};

static const struct dist_flag *find_flag(const char *key)
{
	for (size_t i = 0; i < sizeof(dist_flags) / sizeof(dist_flags[0]); i++)
		if (strcmp(dist_flags[i].name, key) == 0)
			return &dist_flags[i];
	return NULL;
}

#define SMT_LAUNCHES                                                                               \
	"smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel "                               \
	"(sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and "         \
	"torchrun "                                                                                \
	"(sagemaker_torch_distributed_enabled)"

/* As the toolkit reads a flag: Python's truth of the decoded value. */
static int truthy(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_TRUE: return 1;
	case JSON_INTEGER: return json_integer_value(v) != 0;
	case JSON_REAL: return json_real_value(v) != 0;
	case JSON_STRING: return json_string_length(v) > 0;
	case JSON_ARRAY: return json_array_size(v) > 0;
	case JSON_OBJECT: return json_object_size(v) > 0;
	default: return 0;
	}
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A distribution smtd does not launch, enabled: one line, and -EINVAL. */
static int refuse_unsupported(const struct smt_jobconfig *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach(c->framework_params, key, v) {
		const struct dist_flag *f = find_flag(key);
		char *shown;

		if (!f || !f->what || f->launch >= 0 || !truthy(v))
			continue;
		shown = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		smt_errorf(err, errlen,
			   "%s: %s: %.40s asks for %s, which smtd does not launch; " SMT_LAUNCHES
			   "; run this job with the SageMaker training toolkit, or choose a launch "
			   "with --launch",
			   c->hp_path, key, shown ? shown : "true", f->what);
		free(shown);
		return -EINVAL;
	}
	return 0;
}

const char *smt_launch_unknown_setting(const struct smt_jobconfig *c)
{
	const char *key;
	json_t *v;

	json_object_foreach(c->framework_params, key, v) if (strncmp(key, "sagemaker_", 10) == 0 &&
							     ends_with(key, "_enabled") &&
							     !find_flag(key)) return key;
	return NULL;
}

int smt_launch_choose(const struct smt_options *o, const struct smt_jobconfig *c,
		      enum smt_launch *launch, char *reason, size_t reasonlen, char *err,
		      size_t errlen)
{
	static const enum smt_launch all[] = {
		SMT_LAUNCH_STANDALONE, SMT_LAUNCH_MPI, SMT_LAUNCH_SMDDP, SMT_LAUNCH_TORCHRUN,
	};
	int rc;

	if (o->launch) {
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			if (strcmp(o->launch, smt_launch_name(all[i])) == 0)
				*launch = all[i];
		snprintf(reason, reasonlen, "--launch %s (or SMTD_LAUNCH)", o->launch);
		return 0;
	}
	if ((rc = refuse_unsupported(c, err, errlen)) < 0)
		return rc;
	if (o->mpi_enabled == 1) {
		*launch = SMT_LAUNCH_MPI;
		snprintf(reason, reasonlen, "--mpi (or SMTD_MPI_ENABLED)");
	} else if (o->mpi_enabled < 0 && c->mpi_enabled == 1) {
		*launch = SMT_LAUNCH_MPI;
		snprintf(reason, reasonlen,
			 "sagemaker_mpi_enabled is true in hyperparameters.json");
	} else if (c->smddp_enabled == 1 || c->pytorch_ddp_enabled == 1) {
		*launch = SMT_LAUNCH_SMDDP;
		snprintf(reason, reasonlen, "%s is true in hyperparameters.json",
			 c->smddp_enabled == 1 ? "sagemaker_distributed_dataparallel_enabled" :
			 "sagemaker_pytorch_ddp_enabled");
	} else if (c->torch_distributed_enabled == 1) {
		*launch = SMT_LAUNCH_TORCHRUN;
		snprintf(reason, reasonlen,
			 "sagemaker_torch_distributed_enabled is true in hyperparameters.json");
	} else {
		*launch = SMT_LAUNCH_STANDALONE;
		snprintf(reason, reasonlen, "%s",
			 o->mpi_enabled == 0 && c->mpi_enabled == 1 ?
				 "--no-mpi (or SMTD_MPI_ENABLED) and no other distribution in "
				 "hyperparameters.json" :
				 "no distribution is enabled in hyperparameters.json");
	}
	return 0;
}
