/*
 * jobconfig.h - reading and validating the SageMaker-style job files
 * (smtd-config(5)): ROOT/input/config/resourceconfig.json, hyperparameters.json
 * and inputdataconfig.json.
 *
 * Every file is read with the same guards before jansson sees it: a regular
 * readable file (opened non-blocking, so a FIFO never hangs), at most
 * 1 MiB, nested at most 32 deep (counted on the raw bytes, so a 10,000-deep
 * array never reaches a recursive parser), UTF-8 JSON without NUL
 * characters, an object at the top.  Every rule violation gives -EINVAL and
 * one line in ERR: "<file>: <field>: <what is wrong>; <what to do>".
 *
 * Hyperparameter strings are decoded as JSON when they parse, as SageMaker
 * writes them JSON-encoded ("\"train.py\"", "2", "true"); the sagemaker_*
 * ones the daemon uses are validated here, the rest are user
 * hyperparameters.  Named (not opaque) because plan.c, smenv.c and the tests
 * read it field by field; nothing outside the config modules includes it.
 */
#ifndef SMT_JOBCONFIG_H
#define SMT_JOBCONFIG_H

#include <jansson.h>
#include <stddef.h>

#define SMT_CONFIG_MAX_BYTES (1024 * 1024)
#define SMT_CONFIG_MAX_DEPTH 32
#define SMT_HOST_NAME_MAX 253
#define SMT_IFNAME_MAX 15
#define SMT_MAX_PROCESSES 1000000L

struct smt_group {
	char *name;
	char *instance_type; /* NULL when the file does not say */
	char **hosts;        /* NULL-terminated, in file order */
	size_t nhosts;
};

struct smt_jobconfig {
	char *rc_path, *hp_path, *idc_path;
	int rc_present; /* resourceconfig.json existed */

	char *current_host;
	char **hosts; /* NULL-terminated, file order */
	size_t nhosts;
	char *iface;                 /* default "eth0" */
	char *current_group;         /* NULL when absent */
	char *current_instance_type; /* NULL when absent */
	struct smt_group *groups;
	size_t ngroups;

	json_t *resource;   /* resourceconfig.json as read (or synthesized) */
	/*
	 * The decoded hyperparameters split as toolkit 4.5.0 splits them
	 * (environment.py, params.SAGEMAKER_HYPERPARAMETERS): the platform's
	 * own (sagemaker_program, sagemaker_submit_directory,
	 * sagemaker_region, sagemaker_job_name, ..., _tuning_objective_metric
	 * and every other _tuning_* key) in platform_hps, the other sagemaker_*
	 * ones in framework_params, the rest in user_hps (the program's
	 * arguments, SM_HPS).
	 */
	json_t *user_hps;
	json_t *framework_params;
	json_t *platform_hps;
	json_t *inputdata;  /* inputdataconfig.json ({} when absent) */

	/* sagemaker_* hyperparameters, validated; NULL / -1 when absent. */
	char *program;
	int mpi_enabled;
	long processes_per_host;
	long num_processes;
	double stall_timeout;      /* sagemaker_stall_timeout, 0 when not given */
	long max_restarts;         /* sagemaker_max_restarts, -1 when not given */
	char *mpi_options;
	char **dist_groups; /* NULL-terminated; NULL when absent */
	size_t ndist_groups;
	char *job_name;
	char *submit_dir;
	char *preflight_command;       /* sagemaker_preflight_command */
	char *region;              /* sagemaker_region */
	json_t *log_level;         /* sagemaker_container_log_level, decoded; NULL: absent */

	/* The distributions other than MPI (read_distribution); -1 / NULL when absent. */
	int smddp_enabled;             /* sagemaker_distributed_dataparallel_enabled */
	int pytorch_ddp_enabled;       /* sagemaker_pytorch_ddp_enabled */
	int torch_distributed_enabled; /* sagemaker_torch_distributed_enabled */
	char *smddp_options;           /* sagemaker_distributed_dataparallel_custom_mpi_options */
	char *sm_instance_type;        /* sagemaker_instance_type */
	json_t *mp_parameters;         /* the user hyperparameter mp_parameters, decoded */
};

/*
 * Read the three files of ROOT/input/config.  CURRENT_HOST (may be NULL) overrides the
 * file's current_host and names the single host when resourceconfig.json
 * is absent (else gethostname()).
 */
int smt_jobconfig_read(const char *root, const char *current_host,
		       struct smt_jobconfig **out, char *err, size_t errlen);

/*
 * The same from JSON text already in memory (tests, fuzzing).  A NULL
 * buffer means the file is absent.  The paths are only used in messages.
 */
int smt_jobconfig_parse(const char *root, const char *rc_buf, size_t rc_len,
			const char *hp_buf, size_t hp_len, const char *idc_buf, size_t idc_len,
			const char *current_host, struct smt_jobconfig **out, char *err,
			size_t errlen);
void smt_jobconfig_free(struct smt_jobconfig *cfg);

/*
 * Read PATH with the guards above into *BUF (NUL-terminated, malloc'd).
 * Returns 0, -ENOENT when it does not exist (no message), or -EINVAL with a
 * message.
 */
int smt_config_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen);

/* Parse one JSON document with the guards above; the top must be an object. */
int smt_config_parse_object(const char *path, const char *buf, size_t len, json_t **out,
			    char *err, size_t errlen);

/* Nonzero when BUF nests arrays/objects deeper than MAX (strings skipped). */
int smt_json_too_deep(const char *buf, size_t len, int max);

/* RFC 1123 host name: labels of [A-Za-z0-9-] (1-63, no leading or trailing
 * '-') joined by '.', at most 253 characters. */
int smt_valid_hostname(const char *name);
/* 1-15 characters of [A-Za-z0-9_.-]. */
int smt_valid_ifname(const char *name);

/* VALUE as the toolkit decodes a hyperparameter: JSON when a string parses
 * as JSON, else itself.  Returns a new reference. */
json_t *smt_hp_decode(json_t *value);

#endif
