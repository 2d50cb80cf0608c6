/* smenv.c - the SM_* variables of smtd(8) ENVIRONMENT (see smenv.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyrender.h"
#include "smenv.h"

static const char *const host_specific[] = {
	"SM_CURRENT_HOST", "SM_CURRENT_INSTANCE_TYPE", "SM_CURRENT_INSTANCE_GROUP",
	"SM_CURRENT_INSTANCE_GROUP_HOSTS", "SM_TRAINING_ENV", "SM_RESOURCE_CONFIG",
	"SM_NUM_CPUS", "SM_NUM_GPUS", "SM_NUM_NEURONS", "SM_IS_MASTER", NULL,
};

int smt_smenv_host_specific(const char *name)
{
	for (const char *const *p = host_specific; *p; p++)
		if (strcmp(*p, name) == 0)
			return 1;
	return 0;
}

void smt_smenv_real(double v, char *out, size_t outlen)
{
	smt_py_float(v, out, outlen);
}

/* mapping.to_env_vars' format_value: a string as it is, None empty, the rest json.dumps. */
char *smt_smenv_value(json_t *value)
{
	if (json_is_string(value))
		return strdup(json_string_value(value));
	if (json_is_null(value))
		return strdup("");
	return smt_py_json(value);
}

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();

	for (; a && v && *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *path_json(const char *root, const char *sub)
{
	char *p;
	json_t *j;

	if (asprintf(&p, "%s/%s", root, sub) < 0)
		return NULL;
	j = json_string(p);
	free(p);
	return j;
}

/* Set KEY of OBJ, stealing VAL; a NULL VAL (allocation failure) is an error. */
static int put(json_t *obj, const char *key, json_t *val)
{
	if (!val)
		return -ENOMEM;
	return json_object_set_new(obj, key, val) < 0 ? -ENOMEM : 0;
}

static const struct smt_group *current_group(const struct smt_jobconfig *cfg)
{
	for (size_t i = 0; i < cfg->ngroups; i++)
		if (cfg->current_group && strcmp(cfg->groups[i].name, cfg->current_group) == 0)
			return &cfg->groups[i];
	return NULL;
}

/*
 * environment.py's get_distribution_hosts: the hosts of the distribution
 * instance groups, group by group, when resourceconfig.json has groups;
 * every host when it has none; none when no distribution is enabled.
 */
static json_t *toolkit_dist_hosts(const struct smt_jobconfig *cfg, const struct smt_smenv_in *in)
{
	json_t *a;

	if (!json_array_size(json_object_get(cfg->resource, "instance_groups")))
		return strv_json(cfg->hosts);
	a = json_array();
	for (size_t i = 0; a && i < cfg->ngroups; i++)
		for (char *const *g = in->dist_groups; g && *g; g++)
			if (strcmp(*g, cfg->groups[i].name) == 0)
				for (char **h = cfg->groups[i].hosts; *h; h++)
					json_array_append_new(a, json_string(*h));
	return a;
}

/*
 * `mp_parameters and mp_parameters != "{}"` on the toolkit's own
 * SM_HP_MP_PARAMETERS: null unless the image sets that variable (the
 * toolkit reads it before it sets it for the program).
 */
static json_t *modelparallel_enabled(const char *mp)
{
	if (!mp)
		return json_null();
	if (!*mp)
		return json_string("");
	return json_boolean(strcmp(mp, "{}") != 0);
}

static int ends_py(const char *s)
{
	size_t n = strlen(s);

	return n >= 3 && strcmp(s + n - 3, ".py") == 0;
}

/* The toolkit's Environment properties, which are also SM_TRAINING_ENV. */
static json_t *properties(const struct smt_jobconfig *cfg, const struct smt_smenv_in *in)
{
	const struct smt_group *grp = current_group(cfg);
	json_t *p = json_object(), *groups = json_array(), *gdict = json_object();
	json_t *chans = json_object(), *dist_groups = json_array();
	const char *name;
	json_t *v;
	char *module_dir = NULL;
	int rc = 0;

	if (!p || !groups || !gdict || !chans || !dist_groups)
		goto fail;
	/* environment.py: sagemaker_submit_directory as given (an S3 URI), else ROOT/code. */
	if (cfg->submit_dir ? !(module_dir = strdup(cfg->submit_dir)) :
	    asprintf(&module_dir, "%s/code", in->root) < 0)
		goto fail;
	for (size_t i = 0; i < cfg->ngroups; i++) {
		const struct smt_group *g = &cfg->groups[i];

		json_array_append_new(groups, json_string(g->name));
		json_object_set_new(gdict, g->name,
				    json_pack("{s:s, s:s?, s:o}", "instance_group_name", g->name,
					      "instance_type", g->instance_type, "hosts",
					      strv_json(g->hosts)));
	}
	for (char *const *g = in->dist_groups; g && *g; g++)
		json_array_append_new(dist_groups, json_string(*g));
	json_object_foreach(cfg->inputdata, name, v) {
		char *dir;

		if (asprintf(&dir, "%s/input/data/%s", in->root, name) < 0)
			goto fail;
		json_object_set_new(chans, name, json_string(dir));
		free(dir);
	}
	rc |= put(p, "additional_framework_parameters", json_deep_copy(cfg->framework_params));
	rc |= put(p, "channel_input_dirs", chans);
	chans = NULL;
	rc |= put(p, "current_host", json_string(cfg->current_host));
	rc |= put(p, "current_instance_group", json_string(grp ? grp->name :
		  cfg->current_group ? cfg->current_group : "homogeneousCluster"));
	rc |= put(p, "current_instance_group_hosts", grp ? strv_json(grp->hosts) : json_array());
	rc |= put(p, "current_instance_type", cfg->current_instance_type ?
		  json_string(cfg->current_instance_type) : json_string("local"));
	rc |= put(p, "distribution_hosts", toolkit_dist_hosts(cfg, in));
	rc |= put(p, "distribution_instance_groups", dist_groups);
	dist_groups = NULL;
	rc |= put(p, "framework_module", in->framework_module ?
		  json_string(in->framework_module) : json_null());
	rc |= put(p, "hosts", strv_json(cfg->hosts));
	rc |= put(p, "hyperparameters", json_deep_copy(cfg->user_hps));
	rc |= put(p, "input_config_dir", path_json(in->root, "input/config"));
	rc |= put(p, "input_data_config", json_deep_copy(cfg->inputdata));
	rc |= put(p, "input_dir", path_json(in->root, "input"));
	rc |= put(p, "instance_groups", groups);
	groups = NULL;
	rc |= put(p, "instance_groups_dict", gdict);
	gdict = NULL;
	rc |= put(p, "is_hetero", json_boolean(cfg->ngroups > 1));
	rc |= put(p, "is_master", json_boolean(strcmp(cfg->current_host, in->master) == 0));
	rc |= put(p, "is_modelparallel_enabled", modelparallel_enabled(in->mp_env));
	rc |= put(p, "is_smddpmprun_installed", json_boolean(in->smddpmprun_installed));
	rc |= put(p, "job_name", in->training_job_name ? json_string(in->training_job_name) :
		  json_null());
	rc |= put(p, "log_level", cfg->log_level ? json_incref(cfg->log_level) : json_integer(20));
	rc |= put(p, "master_hostname", json_string(in->master));
	rc |= put(p, "model_dir", path_json(in->root, "model"));
	rc |= put(p, "module_dir", json_string(module_dir));
	/* _parse_module_name: the program without its .py. */
	rc |= put(p, "module_name", in->program ? json_stringn(in->program, ends_py(in->program) ?
		  strlen(in->program) - 3 : strlen(in->program)) : json_null());
	rc |= put(p, "network_interface_name", json_string(cfg->iface));
	rc |= put(p, "num_cpus", json_integer(in->num_cpus));
	rc |= put(p, "num_gpus", json_integer(in->num_gpus));
	rc |= put(p, "num_neurons", json_integer(in->num_neurons));
	rc |= put(p, "output_data_dir", path_json(in->root, "output/data"));
	rc |= put(p, "output_dir", path_json(in->root, "output"));
	rc |= put(p, "output_intermediate_dir", path_json(in->root, "output/intermediate"));
	rc |= put(p, "resource_config", json_deep_copy(cfg->resource));
	rc |= put(p, "user_entry_point", in->program ? json_string(in->program) : json_null());
	free(module_dir);
	if (rc)
		goto fail_p;
	return p;
fail:
	free(module_dir);
fail_p:
	json_decref(p);
	json_decref(groups);
	json_decref(gdict);
	json_decref(chans);
	json_decref(dist_groups);
	return NULL;
}

static int cmp_json_strings(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

static int sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr);
	json_t **items = calloc(n + 1, sizeof(*items));

	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		items[i] = json_incref(json_array_get(arr, i));
	qsort(items, n, sizeof(*items), cmp_json_strings);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, items[i]);
	free(items);
	return 0;
}

/* SM_<UPPER(KEY)> as Python's str.upper() gives it for ASCII names. */
static int set_var(json_t *vars, const char *prefix, const char *key, json_t *value)
{
	char *name, *val;
	int rc;

	if (asprintf(&name, "%s%s", prefix, key) < 0)
		return -ENOMEM;
	for (char *c = name; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	val = smt_smenv_value(value);
	rc = val ? put(vars, name, json_string(val)) : -ENOMEM;
	free(val);
	free(name);
	return rc;
}

int smt_smenv_build(const struct smt_jobconfig *cfg, const struct smt_smenv_in *in,
		    json_t **out)
{
	static const char *const keys[] = {
		"hosts",
		"network_interface_name",
		"user_entry_point",
		"resource_config",
		"input_data_config",
		"output_data_dir",
		"current_host",
		"current_instance_type",
		"current_instance_group",
		"current_instance_group_hosts",
		"instance_groups",
		"instance_groups_dict",
		"distribution_instance_groups",
		"is_hetero",
		"module_name",
		"log_level",
		"framework_module",
		"input_dir",
		"input_config_dir",
		"output_dir",
		"num_cpus",
		"num_gpus",
		"num_neurons",
		"model_dir",
		"module_dir",
		"output_intermediate_dir",
		"distribution_hosts",
		"master_hostname",
		"is_master",
		NULL,
	};
	json_t *vars = json_object(), *props = properties(cfg, in), *chan_names = NULL;
	const char *key;
	json_t *v;
	int rc = -ENOMEM;

	*out = NULL;
	if (!vars || !props)
		goto out;
	for (const char *const *k = keys; *k; k++)
		if ((rc = set_var(vars, "SM_", *k, json_object_get(props, *k))) < 0)
			goto out;
	if ((rc = set_var(vars, "SM_", "hps", cfg->user_hps)) < 0 ||
	    (rc = set_var(vars, "SM_", "framework_params", cfg->framework_params)) < 0 ||
	    (rc = set_var(vars, "SM_", "training_env", props)) < 0)
		goto out;
	rc = -ENOMEM;
	chan_names = json_array();
	v = strv_json(in->user_args);
	if (!chan_names || !v)
		goto out;
	rc = set_var(vars, "SM_", "user_args", v);
	json_decref(v);
	if (rc < 0)
		goto out;
	json_object_foreach(json_object_get(props, "channel_input_dirs"), key, v) {
		json_array_append_new(chan_names, json_string(key));
		if ((rc = set_var(vars, "SM_CHANNEL_", key, v)) < 0)
			goto out;
	}
	/* The object keeps insertion order; SM_CHANNELS is sorted, as in the toolkit. */
	if ((rc = sort_strings(chan_names)) < 0 ||
	    (rc = set_var(vars, "SM_", "channels", chan_names)) < 0)
		goto out;
	json_object_foreach(cfg->user_hps, key, v)
		if ((rc = set_var(vars, "SM_HP_", key, v)) < 0)
			goto out;
	*out = vars;
	vars = NULL;
	rc = 0;
out:
	json_decref(vars);
	json_decref(props);
	json_decref(chan_names);
	return rc;
}
