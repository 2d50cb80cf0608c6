/*
 * jobconfig.c - the job's configuration files, read and checked (see
 * jobconfig.h).  Each check produces the one line a person reads when the
 * job does not start, so every message names the file, the field, what is
 * wrong and what to do.
 *
 * Why one file of this size: every check of the three job files, each with
 * its one-line message, in the order the files are read; split by file,
 * the guards and the wording they share would be repeated.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobconfig.h"
#include "restart.h"
#include "strv.h"
#include "textesc.h"

#define RC_NAME "resourceconfig.json"
#define HP_NAME "hyperparameters.json"
#define IDC_NAME "inputdataconfig.json"

/* A value quoted for a message: compact JSON, cut short so one line stays
 * readable (JSON escaping already keeps it on one line). */
static void show(json_t *v, char *out, size_t outlen)
{
	char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

	if (!s) {
		snprintf(out, outlen, "%s", v ? "(value)" : "(missing)");
		return;
	}
	if (strlen(s) > 64)
		snprintf(out, outlen, "%.60s...\" (%zu characters)", s, strlen(s) - 2);
	else
		snprintf(out, outlen, "%s", s);
	free(s);
}

int smt_json_too_deep(const char *buf, size_t len, int max)
{
	int depth = 0, in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				return 1;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 0;
}

int smt_config_read_file(const char *path, char **bufp, size_t *lenp, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc = -EINVAL;

	*bufp = NULL;
	*lenp = 0;
	/* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		smt_errorf(err, errlen, "%s: cannot open: %s; make it a readable file", path,
		       strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) < 0) {
		smt_errorf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		smt_errorf(err, errlen,
			   "%s: is %s, not a regular file; replace it with a JSON file", path,
			   S_ISDIR(st.st_mode)          ? "a directory" :
				   S_ISFIFO(st.st_mode) ? "a FIFO" :
				   S_ISSOCK(st.st_mode) ? "a socket" :
							  "a device");
		goto out;
	}
	if (st.st_size > SMT_CONFIG_MAX_BYTES) {
		smt_errorf(err, errlen, "%s: is %lld bytes, larger than the limit of %d; shrink it",
		       path, (long long)st.st_size, SMT_CONFIG_MAX_BYTES);
		goto out;
	}
	buf = malloc(SMT_CONFIG_MAX_BYTES + 2);
	if (!buf) {
		smt_errorf(err, errlen, "%s: out of memory", path);
		rc = -ENOMEM;
		goto out;
	}
	/* The file may grow after fstat: read at most one byte past the limit. */
	while (len <= SMT_CONFIG_MAX_BYTES) {
		ssize_t n = read(fd, buf + len, SMT_CONFIG_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			smt_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > SMT_CONFIG_MAX_BYTES) {
		smt_errorf(err, errlen, "%s: is larger than the limit of %d bytes; shrink it", path,
		       SMT_CONFIG_MAX_BYTES);
		goto out;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

int smt_config_parse_object(const char *path, const char *buf, size_t len, json_t **out,
			    char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;

	*out = NULL;
	if (len > SMT_CONFIG_MAX_BYTES) {
		smt_errorf(err, errlen, "%s: is larger than the limit of %d bytes; shrink it", path,
		       SMT_CONFIG_MAX_BYTES);
		return -EINVAL;
	}
	if (smt_json_too_deep(buf, len, SMT_CONFIG_MAX_DEPTH)) {
		smt_errorf(err, errlen, "%s: nested deeper than %d levels; flatten it", path,
		       SMT_CONFIG_MAX_DEPTH);
		return -EINVAL;
	}
	/* JSON_ALLOW_NUL stays off: a NUL inside a string is rejected. */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		smt_errorf(err, errlen,
			   "%s: line %d column %d: not valid UTF-8 JSON: %s; fix the file", path,
			   jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		smt_errorf(err, errlen, "%s: the top level is %s, not a JSON object; write {...}",
			   path,
			   json_is_array(root)          ? "an array" :
				   json_is_string(root) ? "a string" :
							  "a scalar");
		json_decref(root);
		return -EINVAL;
	}
	*out = root;
	return 0;
}

int smt_valid_hostname(const char *name)
{
	size_t len = strlen(name), label = 0;

	if (len == 0 || len > SMT_HOST_NAME_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char c = name[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || name[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(isascii((unsigned char)c) && (isalnum((unsigned char)c) || c == '-')))
			return 0;
		if (label == 0 && c == '-')
			return 0;
		label++;
	}
	return 1;
}

int smt_valid_ifname(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > SMT_IFNAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!isascii(c) || !(isalnum(c) || c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

json_t *smt_hp_decode(json_t *value)
{
	const char *s;
	json_t *decoded;

	if (!json_is_string(value))
		return json_incref(value);
	s = json_string_value(value);
	/* Deeply nested values stay strings rather than reach the parser. */
	if (smt_json_too_deep(s, json_string_length(value), SMT_CONFIG_MAX_DEPTH))
		return json_incref(value);
	decoded = json_loadb(s, json_string_length(value), JSON_DECODE_ANY, NULL);
	return decoded ? decoded : json_incref(value);
}


void smt_jobconfig_free(struct smt_jobconfig *cfg)
{
	if (!cfg)
		return;
	free(cfg->rc_path);
	free(cfg->hp_path);
	free(cfg->idc_path);
	free(cfg->current_host);
	smt_strv_free(cfg->hosts);
	free(cfg->iface);
	free(cfg->current_group);
	free(cfg->current_instance_type);
	for (size_t i = 0; i < cfg->ngroups; i++) {
		free(cfg->groups[i].name);
		free(cfg->groups[i].instance_type);
		smt_strv_free(cfg->groups[i].hosts);
	}
	free(cfg->groups);
	json_decref(cfg->resource);
	json_decref(cfg->user_hps);
	json_decref(cfg->framework_params);
	json_decref(cfg->platform_hps);
	json_decref(cfg->inputdata);
	free(cfg->region);
	json_decref(cfg->log_level);
	free(cfg->program);
	free(cfg->mpi_options);
	free(cfg->preflight_command);
	smt_strv_free(cfg->dist_groups);
	free(cfg->job_name);
	free(cfg->submit_dir);
	free(cfg->smddp_options);
	free(cfg->sm_instance_type);
	json_decref(cfg->mp_parameters);
	free(cfg);
}

static int in_list(char **list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

/* The index of the host in LIST that names the same host as S - DNS names
 * are not case-sensitive -, or -1. */
static long same_host(char **list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(list[i], s) == 0)
			return (long)i;
	return -1;
}

/*
 * A list of host names at FIELD of PATH: an array of distinct valid names.
 * When ALL is given, every name must be one of ALL.
 */
static int host_list(const char *path, const char *field, json_t *arr, char **all, size_t nall,
		     char ***out, size_t *nout, char *err, size_t errlen)
{
	char v[128];
	char **list = NULL;
	size_t n, i;
	json_t *h;

	*out = NULL;
	*nout = 0;
	if (!arr) {
		smt_errorf(err, errlen, "%s: %s: missing; list the job's hosts, e.g. [\"algo-1\"]",
		       path, field);
		return -EINVAL;
	}
	if (!json_is_array(arr)) {
		show(arr, v, sizeof(v));
		smt_errorf(err, errlen,
			   "%s: %s: %s is not an array of host names; write [\"algo-1\", ...]",
			   path, field, v);
		return -EINVAL;
	}
	n = json_array_size(arr);
	if (n == 0) {
		smt_errorf(err, errlen, "%s: %s: is empty; list at least one host", path, field);
		return -EINVAL;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	json_array_foreach(arr, i, h) {
		const char *name = json_string_value(h);

		show(h, v, sizeof(v));
		if (!json_is_string(h)) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s is not a string; write host names as strings",
				   path, field, i, v);
			goto fail;
		}
		if (strlen(name) != json_string_length(h) || !smt_valid_hostname(name)) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s is not a valid host name (RFC 1123: letters, "
				   "digits, '-' and '.', labels of at most 63 and names of at most "
				   "253 characters); fix the host list",
				   path, field, i, v);
			goto fail;
		}
		long first = same_host(list, i, name);
		if (first >= 0 && strcmp(list[first], name) == 0) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s appears twice; list each host once", path,
				   field, i, v);
			goto fail;
		}
		if (first >= 0) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s is the same host as %s[%ld] \"%s\" (host names "
				   "are not case-sensitive); list each host once",
				   path, field, i, v, field, first, list[first]);
			goto fail;
		}
		if (all && !in_list(all, nall, name)) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s is not in hosts; name only hosts of the job",
				   path, field, i, v);
			goto fail;
		}
		list[i] = strdup(name);
		if (!list[i])
			goto nomem;
	}
	*out = list;
	*nout = n;
	return 0;
nomem:
	smt_strv_free(list);
	return -ENOMEM;
fail:
	smt_strv_free(list);
	return -EINVAL;
}

/* An optional string field; -EINVAL when present and not a string. */
static int opt_string(const char *path, json_t *obj, const char *field, char **out, char *err,
		      size_t errlen)
{
	json_t *v = json_object_get(obj, field);
	char shown[128];

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		show(v, shown, sizeof(shown));
		smt_errorf(err, errlen, "%s: %s: %s is not a string; fix the value", path, field,
			   shown);
		return -EINVAL;
	}
	*out = strdup(json_string_value(v));
	return *out ? 0 : -ENOMEM;
}

static int read_groups(struct smt_jobconfig *cfg, json_t *arr, char *err, size_t errlen)
{
	const char *path = cfg->rc_path;
	char field[64], shown[128];
	size_t i;
	json_t *g;
	int rc;

	if (!arr)
		return 0;
	if (!json_is_array(arr)) {
		smt_errorf(err, errlen,
			   "%s: instance_groups: is not an array; write [{\"instance_group_name\": "
			   "..., \"hosts\": [...]}]",
			   path);
		return -EINVAL;
	}
	cfg->groups = calloc(json_array_size(arr) + 1, sizeof(*cfg->groups));
	if (!cfg->groups)
		return -ENOMEM;
	json_array_foreach(arr, i, g) {
		struct smt_group *grp = &cfg->groups[i];

		cfg->ngroups = i + 1;
		snprintf(field, sizeof(field), "instance_groups[%zu]", i);
		if (!json_is_object(g)) {
			smt_errorf(err, errlen,
				   "%s: %s: is not an object; write {\"instance_group_name\": ..., "
				   "\"hosts\": [...]}",
				   path, field);
			return -EINVAL;
		}
		snprintf(field, sizeof(field), "instance_groups[%zu].instance_group_name", i);
		if ((rc = opt_string(path, g, "instance_group_name", &grp->name, err, errlen)) <
		    0) {
			/* Re-point the message at the indexed field. */
			show(json_object_get(g, "instance_group_name"), shown, sizeof(shown));
			smt_errorf(err, errlen, "%s: %s: %s is not a string; name the group", path,
				   field, shown);
			return rc;
		}
		if (!grp->name || !*grp->name) {
			smt_errorf(err, errlen, "%s: %s: missing or empty; name the group", path,
				   field);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(cfg->groups[j].name, grp->name) == 0) {
				smt_errorf(err, errlen,
					   "%s: %s: \"%s\" appears twice; give each group its own "
					   "name",
					   path, field, grp->name);
				return -EINVAL;
			}
		snprintf(field, sizeof(field), "instance_groups[%zu].instance_type", i);
		if ((rc = opt_string(path, g, "instance_type", &grp->instance_type, err, errlen)) <
		    0)
			return rc;
		snprintf(field, sizeof(field), "instance_groups[%zu].hosts", i);
		rc = host_list(path, field, json_object_get(g, "hosts"), cfg->hosts, cfg->nhosts,
			       &grp->hosts, &grp->nhosts, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int read_resource(struct smt_jobconfig *cfg, json_t *rc_json, const char *current_host,
			 char *err, size_t errlen)
{
	const char *path = cfg->rc_path;
	char shown[128];
	json_t *v;
	int rc;

	rc = host_list(path, "hosts", json_object_get(rc_json, "hosts"), NULL, 0, &cfg->hosts,
		       &cfg->nhosts, err, errlen);
	if (rc < 0)
		return rc;
	v = json_object_get(rc_json, "current_host");
	if (current_host) {
		if (!smt_valid_hostname(current_host) ||
		    !in_list(cfg->hosts, cfg->nhosts, current_host)) {
			smt_errorf(
				err, errlen,
				"%s: hosts: the current host \"%s\" (--current-host, "
				"SMTD_CURRENT_HOST) is not in hosts; give one of the listed hosts",
				path, current_host);
			return -EINVAL;
		}
	} else if (!v) {
		smt_errorf(err, errlen, "%s: current_host: missing; name this host, one of hosts",
			   path);
		return -EINVAL;
	} else {
		show(v, shown, sizeof(shown));
		if (!json_is_string(v) ||
		    !in_list(cfg->hosts, cfg->nhosts, json_string_value(v))) {
			smt_errorf(err, errlen,
				   "%s: current_host: %s is not in hosts; name this host, one of "
				   "hosts",
				   path, shown);
			return -EINVAL;
		}
		current_host = json_string_value(v);
	}
	if (!(cfg->current_host = strdup(current_host)))
		return -ENOMEM;
	if ((rc = opt_string(path, rc_json, "network_interface_name", &cfg->iface, err, errlen)) <
	    0)
		return rc;
	if (cfg->iface && !smt_valid_ifname(cfg->iface)) {
		show(json_object_get(rc_json, "network_interface_name"), shown, sizeof(shown));
		smt_errorf(err, errlen,
			   "%s: network_interface_name: %s is not a valid interface name (1 to 15 "
			   "letters, digits, '_', '-', '.'); fix the name",
			   path, shown);
		return -EINVAL;
	}
	if ((rc = opt_string(path, rc_json, "current_group_name", &cfg->current_group, err,
			     errlen)) < 0)
		return rc;
	if ((rc = opt_string(path, rc_json, "current_instance_type", &cfg->current_instance_type,
			     err, errlen)) < 0)
		return rc;
	if ((rc = read_groups(cfg, json_object_get(rc_json, "instance_groups"), err, errlen)) < 0)
		return rc;
	if (cfg->current_group && cfg->ngroups) {
		size_t i;

		for (i = 0; i < cfg->ngroups; i++)
			if (strcmp(cfg->groups[i].name, cfg->current_group) == 0)
				break;
		if (i == cfg->ngroups) {
			smt_errorf(err, errlen,
				   "%s: current_group_name: \"%s\" is not one of instance_groups; "
				   "fix the group name",
				   path, cfg->current_group);
			return -EINVAL;
		}
	}
	return 0;
}

/* The single-host configuration used when resourceconfig.json is absent. */
static int synthesize_resource(struct smt_jobconfig *cfg, const char *current_host, char *err,
			       size_t errlen)
{
	char name[SMT_HOST_NAME_MAX + 2] = "";

	if (!current_host) {
		if (gethostname(name, sizeof(name) - 1) < 0) {
			smt_errorf(err, errlen,
				   "%s: absent, and gethostname failed: %s; give --current-host",
				   cfg->rc_path, strerror(errno));
			return -EINVAL;
		}
		current_host = name;
	}
	if (!smt_valid_hostname(current_host)) {
		smt_errorf(err, errlen,
			   "%s: absent, and this host's name \"%.64s\" is not a valid host name "
			   "(RFC 1123); give --current-host",
			   cfg->rc_path, current_host);
		return -EINVAL;
	}
	cfg->hosts = calloc(2, sizeof(char *));
	if (!cfg->hosts || !(cfg->hosts[0] = strdup(current_host)) ||
	    !(cfg->current_host = strdup(current_host)))
		return -ENOMEM;
	cfg->nhosts = 1;
	cfg->resource = json_pack("{s:s, s:[s]}", "current_host", current_host, "hosts",
				  current_host);
	return cfg->resource ? 0 : -ENOMEM;
}

/*
 * A hyperparameter that must be a whole number from MIN to MAX (WHAT names
 * it in the error): a JSON integer, or a string of digits that decodes to
 * one ("2", as SageMaker writes it, but not " 2", "02" or "2\n", which JSON
 * would take too).  A number in range but badly written is shown as
 * written; any other as decoded.
 */
static int hp_whole(const char *path, const char *key, json_t *raw, json_t *v, long min, long max,
		    const char *what, long *out, char *err, size_t errlen)
{
	char shown[128];
	const char *s = json_string_value(raw);
	int digits = !s || strcmp(s, "0") == 0 ||
		     (s[0] >= '1' && s[0] <= '9' &&
		      strspn(s, "0123456789") == json_string_length(raw));
	int in_range = json_is_integer(v) && json_integer_value(v) >= min &&
		       json_integer_value(v) <= max;

	if (in_range && digits) {
		*out = (long)json_integer_value(v);
		return 0;
	}
	show(in_range ? raw : v, shown, sizeof(shown));
	smt_errorf(err, errlen, "%s: %s: %s is not %s (%ld to %ld); fix the value", path, key,
		   shown, what, min, max);
	return -EINVAL;
}

static int hp_count(const char *path, const char *key, json_t *raw, json_t *v, long *out,
		    char *err, size_t errlen)
{
	return hp_whole(path, key, raw, v, 1, SMT_MAX_PROCESSES, "a positive integer", out, err,
			errlen);
}

static int hp_restarts(const char *path, const char *key, json_t *raw, json_t *v, long *out,
		       char *err, size_t errlen)
{
	return hp_whole(path, key, raw, v, 0, SMT_RESTART_MAX, "a number of restarts", out, err,
			errlen);
}

/*
 * A number of seconds from 1 to 1e9: a JSON number, or a string written as
 * the options take it (digits and at most one decimal point between digits).
 */
static int hp_seconds(const char *path, const char *key, json_t *raw, json_t *v, double *out,
		      char *err, size_t errlen)
{
	char shown[128];
	const char *s = json_string_value(raw);
	size_t whole = s ? strspn(s, "0123456789") : 0, frac = 0;

	if (s && s[whole] == '.')
		frac = strspn(s + whole + 1, "0123456789");
	int written = !s || (whole > 0 && whole <= 10 && whole + (frac ? frac + 1 : 0) ==
			     json_string_length(raw) && (s[whole] == '\0' || frac > 0));
	double n = json_number_value(v);

	if (written && json_is_number(v) && n >= 1 && n <= 1e9) {
		*out = n;
		return 0;
	}
	show(raw, shown, sizeof(shown));
	smt_errorf(err, errlen,
		   "%s: %s: %s is not a number of seconds from 1 to 1000000000; fix the "
		   "value",
		   path, key, shown);
	return -EINVAL;
}

static int hp_string(const char *path, const char *key, json_t *v, char **out, char *err,
		     size_t errlen)
{
	char shown[128];

	if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
		*out = strdup(json_string_value(v));
		return *out ? 0 : -ENOMEM;
	}
	show(v, shown, sizeof(shown));
	smt_errorf(err, errlen, "%s: %s: %s is not a string; fix the value", path, key, shown);
	return -EINVAL;
}

static int hp_dist_groups(struct smt_jobconfig *cfg, json_t *v, char *err, size_t errlen)
{
	const char *key = "sagemaker_distribution_instance_groups";
	char shown[128];
	size_t i;
	json_t *g;

	if (!json_is_array(v)) {
		show(v, shown, sizeof(shown));
		smt_errorf(err, errlen,
			   "%s: %s: %s is not an array of instance group names; fix the value",
			   cfg->hp_path, key, shown);
		return -EINVAL;
	}
	cfg->dist_groups = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!cfg->dist_groups)
		return -ENOMEM;
	json_array_foreach(v, i, g) {
		size_t j;

		show(g, shown, sizeof(shown));
		for (j = 0; json_is_string(g) && j < cfg->ngroups; j++)
			if (strcmp(cfg->groups[j].name, json_string_value(g)) == 0)
				break;
		if (!json_is_string(g) || j == cfg->ngroups) {
			smt_errorf(err, errlen,
				   "%s: %s[%zu]: %s is not one of the instance groups of %s; fix "
				   "the name",
				   cfg->hp_path, key, i, shown, cfg->rc_path);
			return -EINVAL;
		}
		if (!(cfg->dist_groups[i] = strdup(json_string_value(g))))
			return -ENOMEM;
		cfg->ndist_groups = i + 1;
	}
	return 0;
}

/*
 * Toolkit 4.5.0's params.SAGEMAKER_HYPERPARAMETERS: the platform's keys,
 * neither the program's arguments nor framework parameters.  SageMaker's
 * tuning jobs add _tuning_objective_metric; any other _tuning_* key is
 * taken as the platform's too (a deliberate difference, docs/MIGRATING.md):
 * passed on, it would end every argparse program with exit 2.
 */
static json_t *destination(struct smt_jobconfig *cfg, const char *key)
{
	static const char *const platform[] = {
		"sagemaker_program", "sagemaker_submit_directory",
		"sagemaker_enable_cloudwatch_metrics", "sagemaker_region",
		"sagemaker_container_log_level", "sagemaker_job_name", "default_user_module_name",
		"_tuning_objective_metric", "sagemaker_s3_output", NULL,
	};

	for (const char *const *p = platform; *p; p++)
		if (strcmp(*p, key) == 0)
			return cfg->platform_hps;
	if (strncmp(key, "_tuning_", 8) == 0)
		return cfg->platform_hps;
	return strncmp(key, "sagemaker_", 10) == 0 ? cfg->framework_params : cfg->user_hps;
}

static int read_hyperparameters(struct smt_jobconfig *cfg, json_t *hp, char *err, size_t errlen)
{
	const char *path = cfg->hp_path;
	const char *key;
	json_t *raw;
	char shown[128];
	int rc = 0;

	cfg->user_hps = json_object();
	cfg->framework_params = json_object();
	cfg->platform_hps = json_object();
	if (!cfg->user_hps || !cfg->framework_params || !cfg->platform_hps)
		return -ENOMEM;
	if (!hp)
		return 0;
	json_object_foreach(hp, key, raw) {
		json_t *v = smt_hp_decode(raw);

		if (!v)
			return -ENOMEM;
		if (!*key || strchr(key, '=')) {
			smt_errorf(err, errlen,
				   "%s: \"%s\": a hyperparameter name must be non-empty and "
				   "without '='; rename it",
				   path, key);
			rc = -EINVAL;
		} else if (strcmp(key, "sagemaker_program") == 0) {
			rc = hp_string(path, key, v, &cfg->program, err, errlen);
		} else if (strcmp(key, "sagemaker_mpi_enabled") == 0) {
			if (json_is_boolean(v)) {
				cfg->mpi_enabled = json_is_true(v);
			} else {
				show(v, shown, sizeof(shown));
				smt_errorf(err, errlen,
					   "%s: %s: %s is not true or false; fix the value", path,
					   key, shown);
				rc = -EINVAL;
			}
		} else if (strcmp(key, "sagemaker_mpi_num_of_processes_per_host") == 0) {
			rc = hp_count(path, key, raw, v, &cfg->processes_per_host, err, errlen);
		} else if (strcmp(key, "sagemaker_mpi_num_processes") == 0) {
			rc = hp_count(path, key, raw, v, &cfg->num_processes, err, errlen);
		} else if (strcmp(key, "sagemaker_mpi_custom_mpi_options") == 0) {
			rc = hp_string(path, key, v, &cfg->mpi_options, err, errlen);
		} else if (strcmp(key, "sagemaker_distribution_instance_groups") == 0) {
			rc = hp_dist_groups(cfg, v, err, errlen);
		} else if (strcmp(key, "sagemaker_max_restarts") == 0) {
			rc = hp_restarts(path, key, raw, v, &cfg->max_restarts, err, errlen);
		} else if (strcmp(key, "sagemaker_stall_timeout") == 0) {
			rc = hp_seconds(path, key, raw, v, &cfg->stall_timeout, err, errlen);
		} else if (strcmp(key, "sagemaker_job_name") == 0) {
			rc = hp_string(path, key, v, &cfg->job_name, err, errlen);
		} else if (strcmp(key, "sagemaker_preflight_command") == 0) {
			rc = hp_string(path, key, v, &cfg->preflight_command, err, errlen);
		} else if (strcmp(key, "sagemaker_submit_directory") == 0) {
			rc = hp_string(path, key, v, &cfg->submit_dir, err, errlen);
		} else if (strcmp(key, "sagemaker_region") == 0) {
			rc = hp_string(path, key, v, &cfg->region, err, errlen);
		} else if (strcmp(key, "sagemaker_container_log_level") == 0) {
			cfg->log_level = json_incref(v);
		}
		if (rc == 0)
			rc = json_object_set_new(destination(cfg, key), key, v) < 0 ? -ENOMEM : 0;
		else
			json_decref(v);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * The hyperparameters of the distributions other than MPI, taken from the
 * decoded sagemaker_* ones (framework_params) and from mp_parameters (a
 * user hyperparameter the SDK sets for model parallelism).  Kept apart
 * from read_hyperparameters: the plan decides what they mean (plan.h).
 */
static int read_distribution(struct smt_jobconfig *cfg, char *err, size_t errlen)
{
	static const char *const flags[] = {
		"sagemaker_distributed_dataparallel_enabled", "sagemaker_pytorch_ddp_enabled",
		"sagemaker_torch_distributed_enabled",
	};
	int *const fields[] = {
		&cfg->smddp_enabled, &cfg->pytorch_ddp_enabled, &cfg->torch_distributed_enabled,
	};
	char shown[128];
	json_t *v;
	int rc;

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		v = json_object_get(cfg->framework_params, flags[i]);
		if (!v)
			continue;
		if (!json_is_boolean(v)) {
			show(v, shown, sizeof(shown));
			smt_errorf(err, errlen, "%s: %s: %s is not true or false; fix the value",
			       cfg->hp_path, flags[i], shown);
			return -EINVAL;
		}
		*fields[i] = json_is_true(v);
	}
	v = json_object_get(cfg->framework_params,
			    "sagemaker_distributed_dataparallel_custom_mpi_options");
	if (v &&
	    (rc = hp_string(cfg->hp_path, "sagemaker_distributed_dataparallel_custom_mpi_options",
			    v, &cfg->smddp_options, err, errlen)) < 0)
		return rc;
	v = json_object_get(cfg->framework_params, "sagemaker_instance_type");
	if (v && (rc = hp_string(cfg->hp_path, "sagemaker_instance_type", v,
				 &cfg->sm_instance_type, err, errlen)) < 0)
		return rc;
	cfg->mp_parameters = json_incref(json_object_get(cfg->user_hps, "mp_parameters"));
	return 0;
}

/* Channel names become paths and variable names: keep them to SageMaker's set. */
static int read_inputdata(struct smt_jobconfig *cfg, json_t *idc, char *err, size_t errlen)
{
	const char *name;
	json_t *v;

	cfg->inputdata = idc ? json_incref(idc) : json_object();
	if (!cfg->inputdata)
		return -ENOMEM;
	json_object_foreach(cfg->inputdata, name, v) {
		size_t len = strlen(name);
		int ok = len > 0 && len <= 64 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;

		for (size_t i = 0; ok && i < len; i++)
			ok = isascii((unsigned char)name[i]) &&
			     (isalnum((unsigned char)name[i]) || strchr("._-", name[i]));
		if (!ok) {
			smt_errorf(err, errlen,
				   "%s: \"%.64s\": not a valid channel name (1 to 64 letters, "
				   "digits, '.', '_', '-'); rename the channel",
				   cfg->idc_path, name);
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_doc(const char *path, const char *buf, size_t len, json_t **out, char *err,
		     size_t errlen)
{
	*out = NULL;
	if (!buf)
		return 0;
	return smt_config_parse_object(path, buf, len, out, err, errlen);
}

int smt_jobconfig_parse(const char *root, const char *rc_buf, size_t rc_len,
			const char *hp_buf, size_t hp_len, const char *idc_buf, size_t idc_len,
			const char *current_host, struct smt_jobconfig **out, char *err,
			size_t errlen)
{
	struct smt_jobconfig *cfg;
	json_t *rc_json = NULL, *hp_json = NULL, *idc_json = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		goto out;
	cfg->mpi_enabled = -1;
	cfg->processes_per_host = -1;
	cfg->num_processes = -1;
	cfg->max_restarts = -1;
	cfg->smddp_enabled = cfg->pytorch_ddp_enabled = cfg->torch_distributed_enabled = -1;
	if (asprintf(&cfg->rc_path, "%s/input/config/" RC_NAME, root) < 0 ||
	    asprintf(&cfg->hp_path, "%s/input/config/" HP_NAME, root) < 0 ||
	    asprintf(&cfg->idc_path, "%s/input/config/" IDC_NAME, root) < 0) {
		cfg->rc_path = cfg->hp_path = cfg->idc_path = NULL;
		goto out;
	}
	if ((rc = parse_doc(cfg->rc_path, rc_buf, rc_len, &rc_json, err, errlen)) < 0 ||
	    (rc = parse_doc(cfg->hp_path, hp_buf, hp_len, &hp_json, err, errlen)) < 0 ||
	    (rc = parse_doc(cfg->idc_path, idc_buf, idc_len, &idc_json, err, errlen)) < 0)
		goto out;
	cfg->rc_present = rc_json != NULL;
	if (rc_json) {
		cfg->resource = json_incref(rc_json);
		rc = read_resource(cfg, rc_json, current_host, err, errlen);
	} else {
		rc = synthesize_resource(cfg, current_host, err, errlen);
	}
	if (rc < 0)
		goto out;
	if (!cfg->iface && !(cfg->iface = strdup("eth0"))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = read_hyperparameters(cfg, hp_json, err, errlen)) < 0)
		goto out;
	if ((rc = read_distribution(cfg, err, errlen)) < 0)
		goto out;
	if ((rc = read_inputdata(cfg, idc_json, err, errlen)) < 0)
		goto out;
	*out = cfg;
	cfg = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		smt_errorf(err, errlen, "out of memory while reading the configuration");
	json_decref(rc_json);
	json_decref(hp_json);
	json_decref(idc_json);
	smt_jobconfig_free(cfg);
	return rc;
}

int smt_jobconfig_read(const char *root, const char *current_host,
		       struct smt_jobconfig **out, char *err, size_t errlen)
{
	static const char *const names[3] = { RC_NAME, HP_NAME, IDC_NAME };
	char *bufs[3] = { NULL, NULL, NULL };
	size_t lens[3] = { 0, 0, 0 };
	char path[4096];
	int rc = 0;

	*out = NULL;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/input/config/%s", root, names[i]);
		rc = smt_config_read_file(path, &bufs[i], &lens[i], err, errlen);
		if (rc == -ENOENT)
			rc = 0;
		if (rc < 0)
			goto out;
	}
	rc = smt_jobconfig_parse(root, bufs[0], lens[0], bufs[1], lens[1], bufs[2], lens[2],
				 current_host, out, err, errlen);
out:
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
	return rc;
}
