/*
 * plan.c - what this host will do (see plan.h): the options and the job
 * files, resolved into a role, the hosts, the process counts, the rank
 * command, the mpirun argv and the environment.  Pure logic apart from
 * reading the files, probing the GPU count and stat'ing the code directory.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "jobconfig.h"
#include "mpiargv.h"
#include "ompiparams.h"
#include "plan.h"
#include "smenv.h"
#include "pathsearch.h"
#include "strv.h"

#ifndef SMT_PRELOAD_DEFAULT
#define SMT_PRELOAD_DEFAULT "/usr/local/lib/libsmthostname.so"
#endif
#ifndef SMT_SMTCTL_DEFAULT
#define SMT_SMTCTL_DEFAULT "/usr/local/bin/smtctl"
#endif

struct smt_plan {
	struct smt_options opts; /* with every default filled in */
	struct smt_jobconfig *cfg;
	enum smt_role role;
	char **dist_hosts; /* NULL-terminated; strings belong to cfg */
	size_t ndist;
	long ppn, np;
	char *code_dir;
	char *program; /* the entry point, NULL with a -- COMMAND */
	char **user_args;
	char **rank_argv;
	char **mpi_argv;
	char **forward; /* job-wide SM_* names forwarded with -x */
	char **env_names; /* the names this plan adds to the environment, sorted */
	char **envp;
	char *hostfile, *hostfile_contents;
	char *root; /* absolute */
};

static void __attribute__((format(printf, 3, 4)))
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}


/* A growable NULL-terminated vector of owned strings. */
struct strv {
	char **v;
	size_t n, cap;
};

static int strv_push(struct strv *s, const char *str)
{
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **p = realloc(s->v, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(str)))
		return -ENOMEM;
	s->v[++s->n] = NULL;
	return 0;
}

static int strv_pushf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int strv_pushf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	char *str;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&str, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	rc = strv_push(s, str);
	free(str);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NVIDIA GPUs: the driver's /proc entries, else the /dev/nvidiaN nodes. */
static long gpu_count(const char *prefix)
{
	char path[4096];
	struct dirent *d;
	DIR *dir;
	long n = 0;

	snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus", prefix ? prefix : "");
	dir = opendir(path);
	if (dir) {
		while ((d = readdir(dir)))
			if (d->d_name[0] != '.')
				n++;
		closedir(dir);
		return n;
	}
	snprintf(path, sizeof(path), "%s/dev", prefix ? prefix : "");
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		const char *s = d->d_name;

		if (strncmp(s, "nvidia", 6) != 0 || !s[6])
			continue;
		s += 6;
		while (isdigit((unsigned char)*s))
			s++;
		if (!*s)
			n++;
	}
	closedir(dir);
	return n;
}

static void resolve_options(struct smt_options *o)
{
	if (!o->root)
		o->root = SMT_ROOT_DEFAULT;
	if (!o->socket_path)
		o->socket_path = SMT_SOCKET_DEFAULT;
	if (!o->mpirun_path)
		o->mpirun_path = "mpirun";
	if (!o->sshd_path)
		o->sshd_path = "/usr/sbin/sshd";
	if (!o->ssh_path)
		o->ssh_path = "ssh";
	if (!o->smtctl_path)
		o->smtctl_path = SMT_SMTCTL_DEFAULT;
	if (!o->preload_path)
		o->preload_path = SMT_PRELOAD_DEFAULT;
	if (o->wait_timeout <= 0)
		o->wait_timeout = SMT_WAIT_TIMEOUT_DEFAULT;
	if (o->launch_timeout <= 0)
		o->launch_timeout = SMT_LAUNCH_TIMEOUT_DEFAULT;
	if (o->result_timeout <= 0)
		o->result_timeout = SMT_RESULT_TIMEOUT_DEFAULT;
	if (o->peer_timeout <= 0)
		o->peer_timeout = SMT_PEER_TIMEOUT_DEFAULT;
	if (o->grace <= 0)
		o->grace = SMT_GRACE_DEFAULT;
}

static int in_strv(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return 1;
	return 0;
}

/* Distribution hosts (SPEC §4), in the order of `hosts`. */
static int distribution(struct smt_plan *p, int mpi)
{
	struct smt_jobconfig *c = p->cfg;
	char **groups = c->dist_groups;
	char *cur[2] = { c->current_group, NULL };

	p->dist_hosts = calloc(c->nhosts + 1, sizeof(char *));
	if (!p->dist_hosts)
		return -ENOMEM;
	if (!groups && mpi && c->current_group && c->ngroups)
		groups = cur;
	for (size_t i = 0; i < c->nhosts; i++) {
		int take = !groups || !c->ngroups;

		for (size_t g = 0; !take && g < c->ngroups; g++)
			take = in_strv(groups, c->groups[g].name) &&
			       in_strv(c->groups[g].hosts, c->hosts[i]);
		if (take)
			p->dist_hosts[p->ndist++] = c->hosts[i];
	}
	return 0;
}

/* The toolkit's to_cmd_args rendering of one value. */
static char *arg_value(json_t *v)
{
	char *s = NULL;

	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_true(v))
		return strdup("True");
	if (json_is_false(v))
		return strdup("False");
	if (json_is_null(v))
		return strdup("");
	if (json_is_object(v)) {
		/* A mapping renders as k=v pairs joined by commas, keys sorted. */
		size_t len = 0;
		const char *key;
		json_t *item;
		FILE *f = open_memstream(&s, &len);
		char **keys;
		size_t n = 0, i = 0;

		if (!f)
			return NULL;
		keys = calloc(json_object_size(v) + 1, sizeof(*keys));
		json_object_foreach(v, key, item)
			if (keys)
				keys[n++] = (char *)key;
		if (keys)
			qsort(keys, n, sizeof(*keys), cmp_str);
		for (i = 0; keys && i < n; i++) {
			char *val = arg_value(json_object_get(v, keys[i]));
			fprintf(f, "%s%s=%s", i ? "," : "", keys[i], val ? val : "");
			free(val);
		}
		free(keys);
		fclose(f);
		return s;
	}
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int user_args(struct smt_plan *p)
{
	struct strv s = { 0 };
	size_t n = json_object_size(p->cfg->user_hps), i = 0;
	const char **keys = calloc(n + 1, sizeof(*keys));
	const char *key;
	json_t *v;
	int rc = -ENOMEM;

	if (!keys || !(s.v = calloc(1, sizeof(char *))))
		goto out;
	s.cap = 1;
	json_object_foreach(p->cfg->user_hps, key, v)
		keys[i++] = key;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++) {
		char *val = arg_value(json_object_get(p->cfg->user_hps, keys[i]));

		if (!val)
			goto out;
		rc = strv_pushf(&s, "%s%s", strlen(keys[i]) > 1 ? "--" : "-", keys[i]);
		if (rc == 0)
			rc = strv_push(&s, val);
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

static int rank_command(struct smt_plan *p, int under_mpi, char *err, size_t errlen)
{
	const struct smt_options *o = &p->opts;
	struct strv s = { 0 };
	const char *program;
	const char *dot;
	struct stat st;
	int rc = -ENOMEM;

	if (p->cfg->submit_dir && p->cfg->submit_dir[0] == '/' &&
	    stat(p->cfg->submit_dir, &st) == 0 && S_ISDIR(st.st_mode))
		p->code_dir = strdup(p->cfg->submit_dir);
	else if (asprintf(&p->code_dir, "%s/code", o->root) < 0)
		p->code_dir = NULL;
	if (!p->code_dir)
		return -ENOMEM;
	if ((rc = user_args(p)) < 0)
		return rc;
	if (o->command) {
		for (int i = 0; i < o->command_argc; i++)
			if ((rc = strv_push(&s, o->command[i])) < 0)
				goto out;
		p->rank_argv = s.v;
		return 0;
	}
	program = o->program ? o->program : p->cfg->program;
	if (!program || !*program) {
		seterr(err, errlen, "%s: sagemaker_program: missing; name the program to run there, in SAGEMAKER_PROGRAM or --program, or give a command after --",
		       p->cfg->hp_path);
		return -EINVAL;
	}
	if (!(p->program = strdup(program)))
		return -ENOMEM;
	dot = strrchr(program, '.');
	rc = 0;
	if (dot && strcmp(dot, ".py") == 0) {
		rc |= strv_push(&s, "python3");
		if (under_mpi) {
			rc |= strv_push(&s, "-m");
			rc |= strv_push(&s, "mpi4py");
		}
	}
	if (program[0] == '/')
		rc |= strv_push(&s, program);
	else
		rc |= strv_pushf(&s, "%s/%s", p->code_dir, program);
	for (char **a = p->user_args; *a; a++)
		rc |= strv_push(&s, *a);
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	p->rank_argv = s.v;
	return 0;
out:
	smt_strv_free(s.v);
	return rc;
}

static int environment(struct smt_plan *p, char **envp)
{
	struct smt_smenv_in in = {
		.root = p->opts.root,
		.code_dir = p->code_dir,
		.program = p->program,
		.dist_hosts = p->dist_hosts,
		.master = p->ndist ? p->dist_hosts[0] : p->cfg->current_host,
		.user_args = p->user_args,
		.num_gpus = gpu_count(p->opts.gpu_probe_root),
		.num_cpus = sysconf(_SC_NPROCESSORS_ONLN),
	};
	struct strv names = { 0 }, fwd = { 0 }, env = { 0 };
	json_t *vars = NULL;
	const char *name;
	json_t *v;
	int rc;

	if ((rc = smt_smenv_build(p->cfg, &in, &vars)) < 0)
		return rc;
	/* The preload library must read this host's resourceconfig.json. */
	rc = json_object_set_new(vars, "SMTD_RESOURCE_CONFIG", json_string(p->cfg->rc_path));
	if (rc < 0)
		goto nomem;
	json_object_foreach(vars, name, v)
		if (strv_push(&names, name) < 0)
			goto nomem;
	if (!names.v)
		goto nomem;
	qsort(names.v, names.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < names.n; i++)
		if (strncmp(names.v[i], "SM_", 3) == 0 && !smt_smenv_host_specific(names.v[i]) &&
		    strv_push(&fwd, names.v[i]) < 0)
			goto nomem;
	for (char **e = envp; e && *e; e++) {
		size_t len = strcspn(*e, "=");
		char nm[256];

		if (len < sizeof(nm)) {
			memcpy(nm, *e, len);
			nm[len] = '\0';
			if (json_object_get(vars, nm))
				continue;
		}
		if (strv_push(&env, *e) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < names.n; i++)
		if (strv_pushf(&env, "%s=%s", names.v[i],
			       json_string_value(json_object_get(vars, names.v[i]))) < 0)
			goto nomem;
	if (!fwd.v && !(fwd.v = calloc(1, sizeof(char *))))
		goto nomem;
	p->env_names = names.v;
	p->forward = fwd.v;
	p->envp = env.v;
	json_decref(vars);
	return 0;
nomem:
	smt_strv_free(names.v);
	smt_strv_free(fwd.v);
	smt_strv_free(env.v);
	json_decref(vars);
	return -ENOMEM;
}

static int hostfile(struct smt_plan *p)
{
	const char *sock = p->opts.socket_path;
	const char *slash = strrchr(sock, '/');
	size_t len = 0;
	FILE *f;

	if (asprintf(&p->hostfile, "%.*s/hostfile", slash ? (int)(slash - sock) : 1,
		     slash ? sock : ".") < 0) {
		p->hostfile = NULL;
		return -ENOMEM;
	}
	f = open_memstream(&p->hostfile_contents, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < p->ndist; i++)
		fprintf(f, "%s slots=%ld\n", p->dist_hosts[i], p->ppn);
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

#define SMT_HOSTFILE_THRESHOLD 64

static int mpi_argv(struct smt_plan *p, char **envp, char *err, size_t errlen)
{
	const struct smt_options *o = &p->opts;
	const struct smt_group *grp = NULL;
	char msg[256], mpirun[4096], site_btl[4096];
	int rc, have_btl;

	if (p->ndist > SMT_HOSTFILE_THRESHOLD && (rc = hostfile(p)) < 0)
		return rc;
	for (size_t i = 0; i < p->cfg->ngroups; i++)
		if (in_strv(p->cfg->groups[i].hosts, p->dist_hosts[0]))
			grp = &p->cfg->groups[i];
	/* mpirun not found is reported when it is started, not here. */
	have_btl = smt_ompi_param("btl", envp,
				  smt_path_find(o->mpirun_path, envp, NULL, mpirun,
						sizeof(mpirun)) == 0 ? mpirun : NULL,
				  site_btl, sizeof(site_btl));
	if (have_btl == -ENAMETOOLONG) {
		seterr(err, errlen, "Open MPI's btl parameter (OMPI_MCA_btl or an "
		       "openmpi-mca-params.conf) is longer than %zu bytes; shorten it",
		       sizeof(site_btl) - 1);
		return -EINVAL;
	}
	struct smt_mpiargv_in in = {
		.mpirun = o->mpirun_path,
		.hosts = p->dist_hosts,
		.processes_per_host = p->ppn,
		.num_processes = p->np,
		.hostfile = p->hostfile,
		.iface = p->cfg->iface,
		.preload = o->preload_path,
		.smtctl = o->smtctl_path,
		.socket = o->socket_path,
		.instance_type = grp && grp->instance_type ? grp->instance_type :
				 p->cfg->current_instance_type,
		.envp = envp,
		.forward = p->forward,
		.custom = o->mpi_options ? o->mpi_options : p->cfg->mpi_options,
		.rank_argv = p->rank_argv,
		.site_btl = have_btl == 1 ? site_btl : NULL,
	};
	rc = smt_mpiargv_build(&in, &p->mpi_argv, msg, sizeof(msg));
	if (rc == -EINVAL) {
		if (o->mpi_options)
			seterr(err, errlen, "--mpi-options (or SMTD_MPI_OPTIONS): %s; fix the quoting",
			       msg);
		else
			seterr(err, errlen, "%s: sagemaker_mpi_custom_mpi_options: %s; fix the quoting",
			       p->cfg->hp_path, msg);
	}
	return rc;
}

int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen)
{
	struct smt_plan *p;
	int rc = -ENOMEM, mpi;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	p->opts = *opts;
	p->opts.priv_ = NULL;
	resolve_options(&p->opts);
	/* Absolute, so that paths stay right after the launch changes directory. */
	p->root = realpath(p->opts.root, NULL);
	if (p->root)
		p->opts.root = p->root;
	rc = smt_jobconfig_read(p->opts.root, opts->current_host, &p->cfg, err, errlen);
	if (rc < 0)
		goto out;
	mpi = opts->mpi_enabled >= 0 ? opts->mpi_enabled : p->cfg->mpi_enabled > 0;
	p->opts.mpi_enabled = mpi;
	if ((rc = distribution(p, mpi)) < 0)
		goto out;
	if (!mpi || !in_strv(p->dist_hosts, p->cfg->current_host))
		p->role = SMT_ROLE_STANDALONE;
	else if (strcmp(p->dist_hosts[0], p->cfg->current_host) == 0)
		p->role = SMT_ROLE_LEADER;
	else
		p->role = SMT_ROLE_WORKER;

	if (opts->processes_per_host > 0)
		p->ppn = opts->processes_per_host;
	else if (p->cfg->processes_per_host > 0)
		p->ppn = p->cfg->processes_per_host;
	else
		p->ppn = gpu_count(opts->gpu_probe_root);
	if (p->ppn <= 0)
		p->ppn = 1;
	p->np = opts->num_processes > 0 ? opts->num_processes : p->cfg->num_processes;
	if (p->np > 0 && mpi && (size_t)p->np > p->ndist * (size_t)p->ppn) {
		if (opts->num_processes > 0)
			seterr(err, errlen, "--num-processes (or SMTD_NUM_PROCESSES): %ld is more than hosts x processes per host (%zu x %ld = %zu); lower it",
			       p->np, p->ndist, p->ppn, p->ndist * (size_t)p->ppn);
		else
			seterr(err, errlen, "%s: sagemaker_mpi_num_processes: %ld is more than hosts x processes per host (%zu x %ld = %zu); lower it",
			       p->cfg->hp_path, p->np, p->ndist, p->ppn, p->ndist * (size_t)p->ppn);
		rc = -EINVAL;
		goto out;
	}
	if (p->np <= 0)
		p->np = mpi ? (long)p->ndist * p->ppn : 1;
	p->opts.processes_per_host = p->ppn;
	p->opts.num_processes = p->np;

	if ((rc = rank_command(p, p->role != SMT_ROLE_STANDALONE, err, errlen)) < 0)
		goto out;
	if ((rc = environment(p, envp)) < 0)
		goto out;
	/* Workers build it too: it checks the custom options on every host. */
	if (mpi && p->ndist && (rc = mpi_argv(p, envp, err, errlen)) < 0)
		goto out;
	*out = p;
	p = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		seterr(err, errlen, "out of memory while planning the job");
	smt_plan_free(p);
	return rc;
}

void smt_plan_free(struct smt_plan *p)
{
	if (!p)
		return;
	smt_jobconfig_free(p->cfg);
	free(p->dist_hosts);
	free(p->code_dir);
	free(p->program);
	smt_strv_free(p->user_args);
	smt_strv_free(p->rank_argv);
	smt_strv_free(p->mpi_argv);
	smt_strv_free(p->forward);
	smt_strv_free(p->env_names);
	smt_strv_free(p->envp);
	free(p->hostfile);
	free(p->hostfile_contents);
	free(p->root);
	free(p);
}

const struct smt_options *smt_plan_options(const struct smt_plan *p) { return &p->opts; }
enum smt_role smt_plan_role(const struct smt_plan *p) { return p->role; }
const char *smt_plan_root(const struct smt_plan *p) { return p->opts.root; }
const char *smt_plan_current_host(const struct smt_plan *p) { return p ? p->cfg->current_host : NULL; }
const char *smt_plan_leader(const struct smt_plan *p)
{
	return p->ndist ? p->dist_hosts[0] : p->cfg->current_host;
}
size_t smt_plan_host_count(const struct smt_plan *p) { return p->cfg->nhosts; }
const char *smt_plan_host(const struct smt_plan *p, size_t i)
{
	return i < p->cfg->nhosts ? p->cfg->hosts[i] : NULL;
}
size_t smt_plan_dist_host_count(const struct smt_plan *p) { return p->ndist; }
const char *smt_plan_dist_host(const struct smt_plan *p, size_t i)
{
	return i < p->ndist ? p->dist_hosts[i] : NULL;
}
long smt_plan_processes_per_host(const struct smt_plan *p) { return p->ppn; }
long smt_plan_num_processes(const struct smt_plan *p) { return p->np; }
char *const *smt_plan_argv(const struct smt_plan *p)
{
	switch (p->role) {
	case SMT_ROLE_LEADER: return p->mpi_argv;
	case SMT_ROLE_STANDALONE: return p->rank_argv;
	default: return NULL;
	}
}
char *const *smt_plan_rank_argv(const struct smt_plan *p) { return p->rank_argv; }
char *const *smt_plan_mpi_argv(const struct smt_plan *p) { return p->mpi_argv; }
char *const *smt_plan_envp(const struct smt_plan *p) { return p->envp; }
char *const *smt_plan_env_names(const struct smt_plan *p) { return p->env_names; }
const char *smt_plan_workdir(const struct smt_plan *p) { return p->code_dir; }
const char *smt_plan_interface(const struct smt_plan *p) { return p->cfg->iface; }
const char *smt_plan_hostfile(const struct smt_plan *p, const char **contents)
{
	if (contents)
		*contents = p->role == SMT_ROLE_LEADER ? p->hostfile_contents : NULL;
	return p->role == SMT_ROLE_LEADER ? p->hostfile : NULL;
}

/* A word quoted for a person to copy into a shell. */
static void print_word(FILE *out, const char *w)
{
	if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789-_./:=,+@%^") == strlen(w)) {
		fputs(w, out);
		return;
	}
	fputc('\'', out);
	for (; *w; w++)
		if (*w == '\'')
			fputs("'\\''", out);
		else
			fputc(*w, out);
	fputc('\'', out);
}

static json_t *strv_json(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int smt_plan_print(const struct smt_plan *p, FILE *out, int json)
{
	char *const *argv = smt_plan_argv(p);
	const char *hf = smt_plan_hostfile(p, NULL);

	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:s, s:s?}",
				      "role", smt_role_name(p->role), "leader", smt_plan_leader(p),
				      "current_host", p->cfg->current_host,
				      "hosts", strv_json(p->cfg->hosts, p->cfg->nhosts),
				      "distribution_hosts", strv_json(p->dist_hosts, p->ndist),
				      "processes_per_host", (json_int_t)p->ppn,
				      "num_processes", (json_int_t)p->np,
				      "argv", argv ? strv_json(argv, smt_strv_len(argv)) : json_array(),
				      "rank_argv", strv_json(p->rank_argv, smt_strv_len(p->rank_argv)),
				      "env", strv_json(p->env_names, smt_strv_len(p->env_names)),
				      "workdir", p->code_dir, "hostfile", hf);
		int rc;

		if (!o)
			return -ENOMEM;
		rc = json_dumpf(o, out, JSON_COMPACT) < 0 ? -EIO : 0;
		json_decref(o);
		fputc('\n', out);
		return fflush(out) == 0 ? rc : -errno;
	}
	fprintf(out, "role: %s\ncurrent_host: %s\nleader: %s\nhosts (%zu):",
		smt_role_name(p->role), p->cfg->current_host, smt_plan_leader(p), p->cfg->nhosts);
	for (size_t i = 0; i < p->cfg->nhosts; i++)
		fprintf(out, " %s", p->cfg->hosts[i]);
	fprintf(out, "\ndistribution_hosts (%zu):", p->ndist);
	for (size_t i = 0; i < p->ndist; i++)
		fprintf(out, " %s", p->dist_hosts[i]);
	fprintf(out, "\nprocesses_per_host: %ld\nnum_processes: %ld\nworkdir: %s\n", p->ppn,
		p->np, p->code_dir);
	if (hf)
		fprintf(out, "hostfile: %s\n", hf);
	fputs("argv:", out);
	for (size_t i = 0; argv && argv[i]; i++) {
		fputc(' ', out);
		print_word(out, argv[i]);
	}
	if (!argv)
		fputs(" (none: the leader's mpirun starts orted here)", out);
	fputs("\nenv:", out);
	for (size_t i = 0; p->env_names[i]; i++)
		fprintf(out, " %s", p->env_names[i]);
	fputc('\n', out);
	return fflush(out) == 0 ? 0 : -errno;
}
