/*
 * plan.c - what this host will do (see plan.h): the options and the job
 * files, resolved into a launch, a role, the hosts, the process counts,
 * the rank command, what this host executes and the environment.  Pure
 * logic apart from reading the files, probing the GPUs and Neuron devices,
 * stat'ing the code directory and looking programs up on PATH.
 *
 * Why one file of this size: the plan's parts depend on each other in one
 * order - the launch (launch.c), the distribution hosts, the counts, the
 * rank command (rankcmd.c), the environment, what this host executes -
 * which smt_plan_build() reads top to bottom.
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
#include "rankcmd.h"
#include "pathsearch.h"
#include "shellwords.h"
#include "pysite.h"
#include "smenv.h"
#include "strv.h"
#include "textesc.h"

/* smtd(8) A rank's standard output: built and installed beside libsmthostname.so. */
#define SMT_LINEBUF_NAME "libsmtlinebuf.so"

#ifndef SMT_PRELOAD_DEFAULT
#define SMT_PRELOAD_DEFAULT "/usr/local/lib/libsmthostname.so"
#endif
#ifndef SMT_SMTCTL_DEFAULT
#define SMT_SMTCTL_DEFAULT "/usr/local/bin/smtctl"
#endif

struct smt_plan {
	struct smt_options opts; /* with every default filled in */
	struct smt_jobconfig *cfg;
	enum smt_launch launch;
	char reason[160];
	enum smt_role role;
	char hosts_digest[SMT_DIGEST_TEXT]; /* of cfg->hosts (smt_digest_text) */
	char **dist_hosts; /* NULL-terminated; strings belong to cfg */
	size_t ndist;
	char *dist_groups[2]; /* the default distribution group; belongs to cfg */
	long ppn, np;
	long num_gpus, num_neurons;
	char **launcher;   /* SMTCTL [--socket S] rank [--tty] -- */
	char *stdout_preload; /* libsmtlinebuf.so beside --preload's library */
	char **torchrun_argv; /* this host's, on torchrun's hosts */
	char **warnings;
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
	json_t *vars; /* NAME -> value of every variable the plan adds (env_names) */
	char torch_version[72]; /* torch installed for the job's python3, "" when none */
	char torch_source[4200]; /* where torch_version was read */
};



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

/* The first line of PATH as a positive number, else 0. */
static long read_count(const char *path)
{
	char buf[32];
	long n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%ld", &n) != 1)
		n = 0;
	fclose(f);
	return n > 0 && n < 1024 ? n : 0;
}

/*
 * Neuron cores, as the toolkit counts them: the sum of the nc_count that
 * `neuron-ls -j` reports for each device, without running it.  Each
 * /dev/neuronN is a device; the driver publishes its cores in
 * /sys/devices/virtual/neuron_device/neuronN/core_count.  neuron-ls
 * reports the logical cores of Trainium2 and later, the physical ones
 * grouped by NEURON_LOGICAL_NC_CONFIG (2 unless set to 1).  A device whose
 * count cannot be read counts 2, the cores of a Trainium1 or Inferentia2.
 */
static long neuron_cores(const char *prefix, char *const *envp)
{
	const char *lnc = smt_env_get(envp, "NEURON_LOGICAL_NC_CONFIG");
	long n = 0, group = lnc && strcmp(lnc, "1") == 0 ? 1 : 2;
	char path[4096], name[64];
	struct dirent *d;
	DIR *dir;

	if (!prefix)
		prefix = "";
	snprintf(path, sizeof(path), "%s/dev", prefix);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		const char *s = d->d_name;
		long cores;
		FILE *f;

		if (strncmp(s, "neuron", 6) != 0 || !s[6] ||
		    strspn(s + 6, "0123456789") != strlen(s + 6))
			continue;
		snprintf(path, sizeof(path), "%s/sys/devices/virtual/neuron_device/%s/core_count",
			 prefix, s);
		cores = read_count(path);
		if (!cores) {
			n += 2;
			continue;
		}
		snprintf(path, sizeof(path),
			 "%s/sys/devices/virtual/neuron_device/%s/info/architecture/device_name",
			 prefix, s);
		f = fopen(path, "re");
		name[0] = '\0';
		if (f) {
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
		}
		if (strncmp(name, "Trainium", 8) == 0 && atoi(name + 8) >= 2 && cores >= group)
			cores /= group;
		n += cores;
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
	if (o->preflight_timeout <= 0)
		o->preflight_timeout = SMT_PREFLIGHT_TIMEOUT_DEFAULT;
	if (o->min_free_disk < 0)
		o->min_free_disk = SMT_MIN_FREE_DISK_DEFAULT;
	if (o->gpu_check < 0)
		o->gpu_check = 1;
	if (o->efa_check < 0)
		o->efa_check = 1;
	/* min_shm stays -1 when not given: the daemon decides between an
	 * error and a warning (smt_daemon_prelaunch). */
}

/* sagemaker_preflight_command, when no option gave one: its words are
 * checked now, as the option's are (options.c). */
static int preflight_command(struct smt_plan *p, char *err, size_t errlen)
{
	char **words = NULL;
	size_t n = 0;
	char msg[256];

	if (p->opts.preflight_command || !p->cfg->preflight_command)
		return 0;
	int bad = smt_shellwords_split(p->cfg->preflight_command, &words, &n, msg, sizeof(msg)) < 0;

	if (bad || n == 0) {
		smt_errorf(err, errlen, "%s: sagemaker_preflight_command: %s; fix the value",
			   p->cfg->hp_path, bad ? msg : "the value has no word to run");
		smt_strv_free(words);
		return -EINVAL;
	}
	smt_strv_free(words);
	p->opts.preflight_command = p->cfg->preflight_command;
	return 0;
}

static int in_strv(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return 1;
	return 0;
}

/*
 * Distribution hosts (smtd(8) Roles), in the order of `hosts`: those of the
 * groups sagemaker_distribution_instance_groups names, by default the
 * current group when a distribution is launched and there are groups (as
 * SM_DISTRIBUTION_INSTANCE_GROUPS says too); all hosts without groups.
 */
static int distribution(struct smt_plan *p)
{
	struct smt_jobconfig *c = p->cfg;
	char **groups = c->dist_groups;

	p->dist_hosts = calloc(c->nhosts + 1, sizeof(char *));
	if (!p->dist_hosts)
		return -ENOMEM;
	/* environment.py: the current group, "homogeneousCluster" by default. */
	if (!groups && p->launch != SMT_LAUNCH_STANDALONE) {
		p->dist_groups[0] = c->current_group ? c->current_group : "homogeneousCluster";
		groups = p->dist_groups;
	}
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

/* This host's instance type: resourceconfig.json's, else its group's. */
static const char *own_instance_type(const struct smt_jobconfig *c)
{
	if (c->current_instance_type)
		return c->current_instance_type;
	for (size_t i = 0; i < c->ngroups; i++)
		if (c->current_group && strcmp(c->groups[i].name, c->current_group) == 0)
			return c->groups[i].instance_type;
	return NULL;
}

/*
 * What torch_distributed.py sets in torchrun's environment (smtd(8) torchrun), and
 * how often torchrun looks at its processes: torch 1.x and the first 2.x
 * releases look every 5 s, then wait at the exit barrier for the other
 * hosts' torchrun, so a host would end up to 5 s after its last process
 * (measured: 3 to 6 s on 3 hosts with torch 1.13) instead of within a
 * second.  PET_MONITOR_INTERVAL is torchrun's --monitor_interval without
 * changing its command line; 0.1 s is the default of later torch
 * releases.  The image's value, if it sets one, stands.
 */
static int torchrun_vars(const struct smt_plan *p, json_t *vars, char **envp)
{
	const char *type = own_instance_type(p->cfg);
	int rc = 0;

	if (!smt_env_get(envp, "PET_MONITOR_INTERVAL"))
		rc |= json_object_set_new(vars, "PET_MONITOR_INTERVAL", json_string("0.1"));

	rc |= json_object_set_new(vars, "NCCL_SOCKET_IFNAME", json_string(p->cfg->iface));
	/* Simple protocol for EFA's out-of-order delivery, on every type (toolkit 4.8). */
	rc |= json_object_set_new(vars, "NCCL_PROTO", json_string("simple"));
	if (smt_mpiargv_efa_type(type))
		rc |= json_object_set_new(vars, "FI_PROVIDER", json_string("efa"));
	if (smt_mpiargv_efa_rdma_type(type)) {
		rc |= json_object_set_new(vars, "FI_EFA_USE_DEVICE_RDMA", json_string("1"));
		rc |= json_object_set_new(vars, "RDMAV_FORK_SAFE", json_string("1"));
	}
	return rc ? -ENOMEM : 0;
}

/*
 * The variables a rank gets besides SM_* (smtd(8), ENVIRONMENT): what the
 * toolkit sets in its own environment (CURRENT_HOST, SAGEMAKER_JOB_NAME,
 * SAGEMAKER_REGION, PYTHONPATH with the code directory first) and, when
 * torch is installed for the job's python3, what the PyTorch container's
 * training.py sets (SM_DLC_TORCH_VERSION, MASTER_ADDR, MASTER_PORT, its
 * NCCL variables).  IMAGE_WINS: the image's own value, when it has one,
 * stands (the container's variables; the toolkit's are always set).  One
 * line per variable; a NULL value is not set.
 */
static int job_vars(const struct smt_plan *p, json_t *vars, char **envp)
{
	const char *pp = smt_env_get(envp, "PYTHONPATH");
	const char *region =
		p->cfg->region ? p->cfg->region : smt_env_get(envp, "AWS_DEFAULT_REGION");
	const char *torch = p->torch_version[0] ? p->torch_version : NULL;
	char *pythonpath = NULL;
	int rc = 0;

	if (asprintf(&pythonpath, "%s%s%s", p->code_dir, pp && *pp ? ":" : "",
		     pp && *pp ? pp : "") < 0)
		return -ENOMEM;
	const struct { const char *name, *value; int image_wins; } defs[] = {
		{ "CURRENT_HOST", p->cfg->current_host, 0 },
		{ "SAGEMAKER_JOB_NAME", p->cfg->job_name ? p->cfg->job_name : "", 0 },
		{ "SAGEMAKER_REGION", region ? region : "", 0 },
		{ "PYTHONPATH", pythonpath, 0 },
		{ "SM_DLC_TORCH_VERSION", torch, 1 },
		{ "MASTER_ADDR", torch ? smt_plan_leader(p) : NULL, 1 },
		{ "MASTER_PORT", torch ? "7777" : NULL, 1 },
		{ "NCCL_SOCKET_IFNAME", torch ? p->cfg->iface : NULL, 1 },
		{ "NCCL_IB_DISABLE", torch ? "1" : NULL, 1 },
		{ "NCCL_DEBUG", torch ? "WARN" : NULL, 1 },
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (defs[i].value && !(defs[i].image_wins && smt_env_get(envp, defs[i].name)))
			rc |= json_object_set_new(vars, defs[i].name, json_string(defs[i].value));
	free(pythonpath);
	return rc ? -ENOMEM : 0;
}

static int installed(const char *prog, char **envp);

static int environment(struct smt_plan *p, char **envp)
{
	struct smt_smenv_in in = {
		.root = p->opts.root,
		.code_dir = p->code_dir,
		.program = p->program,
		.dist_hosts = p->dist_hosts,
		.dist_groups = p->cfg->dist_groups ? p->cfg->dist_groups : p->dist_groups,
		.master = p->ndist ? p->dist_hosts[0] : p->cfg->current_host,
		.user_args = p->user_args,
		.num_gpus = p->num_gpus,
		.num_neurons = p->num_neurons,
		.num_cpus = sysconf(_SC_NPROCESSORS_ONLN),
		.training_job_name = smt_env_get(envp, "TRAINING_JOB_NAME"),
		.mp_env = smt_env_get(envp, "SM_HP_MP_PARAMETERS"),
		.framework_module = smt_env_get(envp, "SAGEMAKER_TRAINING_MODULE"),
		.smddpmprun_installed = installed("smddpmprun", envp),
	};
	struct smt_strvbuf names = { 0 }, fwd = { 0 }, env = { 0 };
	json_t *vars = NULL;
	const char *name;
	json_t *v;
	int rc;

	if ((rc = smt_smenv_build(p->cfg, &in, &vars)) < 0)
		return rc;
	/* The preload library must read this host's resourceconfig.json. */
	rc = json_object_set_new(vars, "SMTD_RESOURCE_CONFIG", json_string(p->cfg->rc_path));
	if (rc < 0 || job_vars(p, vars, envp) < 0)
		goto nomem;
	if (p->launch == SMT_LAUNCH_TORCHRUN && p->role != SMT_ROLE_STANDALONE &&
	    torchrun_vars(p, vars, envp) < 0)
		goto nomem;
	json_object_foreach(vars, name, v)
		if (smt_strvbuf_add(&names, name) < 0)
			goto nomem;
	if (!names.v)
		goto nomem;
	qsort(names.v, names.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < names.n; i++)
		if (strncmp(names.v[i], "SM_", 3) == 0 && !smt_smenv_host_specific(names.v[i]) &&
		    smt_strvbuf_add(&fwd, names.v[i]) < 0)
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
		if (smt_strvbuf_add(&env, *e) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < names.n; i++)
		if (smt_strvbuf_addf(&env, "%s=%s", names.v[i],
			       json_string_value(json_object_get(vars, names.v[i]))) < 0)
			goto nomem;
	if (!fwd.v && !(fwd.v = calloc(1, sizeof(char *))))
		goto nomem;
	p->env_names = names.v;
	p->forward = fwd.v;
	p->envp = env.v;
	p->vars = vars;
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

static int warn(struct smt_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct smt_plan *p, const char *fmt, ...)
{
	struct smt_strvbuf s = { .v = p->warnings, .n = smt_strv_len(p->warnings) };
	va_list ap;
	char *msg;
	int rc;

	s.cap = s.n + 1;
	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	rc = smt_strvbuf_add(&s, msg);
	free(msg);
	p->warnings = s.v;
	return rc;
}

static int installed(const char *prog, char **envp)
{
	return smt_path_find(prog, envp, NULL, NULL, 0) == 0;
}

/* The rank launcher's words (plan.h says why it is there). */
static int launcher(struct smt_plan *p)
{
	const struct smt_options *o = &p->opts;
	struct smt_strvbuf s = { 0 };
	int rc = 0;

	rc |= smt_strvbuf_add(&s, o->smtctl_path);
	if (strcmp(o->socket_path, SMT_SOCKET_DEFAULT) != 0) {
		rc |= smt_strvbuf_add(&s, "--socket");
		rc |= smt_strvbuf_add(&s, o->socket_path);
	}
	rc |= smt_strvbuf_add(&s, "rank");
	if (o->rank_stdout == SMT_RANK_STDOUT_TTY)
		rc |= smt_strvbuf_add(&s, "--tty");
	rc |= smt_strvbuf_add(&s, "--");
	p->launcher = s.v;
	/* The preload libraries are installed side by side: --preload names
	 * the directory of both.  Also with --tty: a standalone program (no
	 * launcher) and a launcher without a pty have a pipe. */
	const char *slash = strrchr(o->preload_path, '/');
	int dir = slash ? (int)(slash - o->preload_path) + 1 : 0;

	if (asprintf(&p->stdout_preload, "%.*s%s", dir, o->preload_path, SMT_LINEBUF_NAME) < 0) {
		p->stdout_preload = NULL;
		rc = -1;
	}
	return rc ? -ENOMEM : 0;
}

/*
 * The smtctl and socket paths reach the other hosts' shell (mpirun's
 * orte_launch_agent, `ssh HOST smtctl --socket S ...`): what it would
 * interpret even quoted is refused (shellwords.h).
 */
static int check_remote_paths(const struct smt_plan *p, char *err, size_t errlen)
{
	static const char *const names[2] = {"--smtctl (or SMTD_SMTCTL)",
					     "--socket (or SMTD_SOCKET)"};
	const char *paths[2] = { p->opts.smtctl_path, p->opts.socket_path };

	for (int i = 0; i < 2; i++) {
		char *q = NULL, bad = 0, shown[8];

		if (smt_shellwords_quote(paths[i], &q, &bad) == 0) {
			free(q);
			continue;
		}
		if (!q && !bad)
			return -ENOMEM;
		if ((unsigned char)bad < 0x20 || bad == 0x7f)
			snprintf(shown, sizeof(shown), "\\x%02x", (unsigned char)bad);
		else
			snprintf(shown, sizeof(shown), "%c", bad);
		smt_errorf(err, errlen,
			   "%s: \"%.200s\" has '%s', which the shell of the other hosts would "
			   "interpret: the path reaches them on the command lines that ssh and "
			   "mpirun's orte_launch_agent run there; choose a path without $ ` \" \\ "
			   "or control characters",
			   names[i], paths[i], shown);
		return -EINVAL;
	}
	return 0;
}

/* The instance type for the EFA variables, smddpmprun -i and SAGEMAKER_INSTANCE_TYPE:
 * the leader's (sagemaker_instance_type first under SMDataParallel). */
static const char *leader_instance_type(const struct smt_plan *p)
{
	if (p->launch == SMT_LAUNCH_SMDDP && p->cfg->sm_instance_type)
		return p->cfg->sm_instance_type;
	for (size_t i = 0; i < p->cfg->ngroups; i++)
		if (in_strv(p->cfg->groups[i].hosts, p->dist_hosts[0]) &&
		    p->cfg->groups[i].instance_type)
			return p->cfg->groups[i].instance_type;
	return p->cfg->current_instance_type;
}

/*
 * Toolkit 4.5.0's model parallel (mpi.py, _modelparallel_environment_command):
 * mp_parameters set and not empty; NCCL variables from the image's
 * SM_DLC_TORCH_VERSION; smddpmprun when ddp_dist_backend is auto.
 */
static int modelparallel(struct smt_plan *p, char **envp, struct smt_mpiargv_in *in, char *err,
			 size_t errlen)
{
	json_t *mp = p->cfg->mp_parameters, *backend;
	/* The image's value first, as the variable itself (job_vars). */
	const char *version = smt_env_get(envp, "SM_DLC_TORCH_VERSION");
	const char *source = "SM_DLC_TORCH_VERSION (smtd's environment)";
	char *rendered, shown[96];
	size_t digits;

	in->torch_major = -1;
	rendered = mp ? smt_smenv_value(mp) : NULL;
	if (mp && !rendered)
		return -ENOMEM;
	in->modelparallel = rendered && *rendered && strcmp(rendered, "{}") != 0;
	free(rendered);
	if (!in->modelparallel)
		return 0;
	if (!json_is_object(mp)) {
		rendered = json_dumps(mp, JSON_ENCODE_ANY | JSON_COMPACT);
		smt_errorf(err, errlen,
			   "%s: mp_parameters: %.60s is not a JSON object; write the "
			   "model-parallel parameters as {\"name\": value, ...}",
			   p->cfg->hp_path, rendered ? rendered : "(value)");
		free(rendered);
		return -EINVAL;
	}
	if (!version && p->torch_version[0]) {
		version = p->torch_version;
		source = p->torch_source;
	}
	if (version && *version) {
		digits = strspn(version, "0123456789");
		if (digits == 0 || digits > 6 || (version[digits] && version[digits] != '.')) {
			snprintf(shown, sizeof(shown), "%.60s", version);
			smt_errorf(err, errlen,
				   "%s: \"%s\" does not start with a major version number; %s",
				   source, shown,
				   source == p->torch_source ? "set SM_DLC_TORCH_VERSION as the "
							       "image's PyTorch version (2.0.1)" :
							       "set it as the image's PyTorch "
							       "version (2.0.1) or unset it");
			return -EINVAL;
		}
		in->torch_major = atoi(version);
	}
	backend = json_object_get(mp, "ddp_dist_backend");
	in->smddpmprun = (!backend || (json_is_string(backend) &&
				       strcmp(json_string_value(backend), "auto") == 0)) &&
			 installed("smddpmprun", envp);
	return 0;
}

static int mpi_argv(struct smt_plan *p, char **envp, char *err, size_t errlen)
{
	const struct smt_options *o = &p->opts;
	int smddp = p->launch == SMT_LAUNCH_SMDDP;
	const char *custom = o->mpi_options ? o->mpi_options :
			     smddp ? p->cfg->smddp_options : p->cfg->mpi_options;
	char msg[256], mpirun[4096], site_btl[4096];
	int rc, have_btl;

	if (p->ndist > SMT_HOSTFILE_THRESHOLD && (rc = hostfile(p)) < 0)
		return rc;
	/* mpirun not found is reported when it is started, not here. */
	have_btl = smt_ompi_param("btl", envp,
				  smt_path_find(o->mpirun_path, envp, NULL, mpirun,
						sizeof(mpirun)) == 0 ? mpirun : NULL,
				  site_btl, sizeof(site_btl));
	if (have_btl == -ENAMETOOLONG) {
		smt_errorf(err, errlen, "Open MPI's btl parameter (OMPI_MCA_btl or an "
		       "openmpi-mca-params.conf) is longer than %zu bytes; shorten it",
		       sizeof(site_btl) - 1);
		return -EINVAL;
	}
	struct smt_mpiargv_in in = {
		.kind = smddp ? SMT_MPIARGV_SMDDP : SMT_MPIARGV_MPI,
		.mpirun = o->mpirun_path,
		.hosts = p->dist_hosts,
		.processes_per_host = p->ppn,
		.num_processes = p->np,
		.hostfile = p->hostfile,
		.iface = p->cfg->iface,
		.preload = o->preload_path,
		.smtctl = o->smtctl_path,
		.socket = o->socket_path,
		.instance_type = leader_instance_type(p),
		.envp = envp,
		.forward = p->forward,
		.custom = custom,
		.rank_argv = p->rank_argv,
		.site_btl = have_btl == 1 ? site_btl : NULL,
		.launcher = p->launcher,
		.torch_major = -1,
	};
	if (smddp) {
		/* Without it the ranks would run, but not data parallel. */
		in.smddprun = installed("smddprun", envp);
		if (!in.smddprun) {
			smt_errorf(err, errlen,
				   "smddprun is not on PATH (%s): SMDataParallel (%s) needs it on "
				   "every host; install the smdistributed dataparallel library in "
				   "the image, or choose another launch with --launch",
				   smt_env_get(envp, "PATH") ? smt_env_get(envp, "PATH") :
							       SMT_PATHSEARCH_DEFAULT,
				   p->reason);
			return -EINVAL;
		}
	} else if ((rc = modelparallel(p, envp, &in, err, errlen)) < 0) {
		return rc;
	}
	rc = smt_mpiargv_build(&in, &p->mpi_argv, msg, sizeof(msg));
	if (rc == -EINVAL) {
		if (o->mpi_options)
			smt_errorf(err, errlen,
				   "--mpi-options (or SMTD_MPI_OPTIONS): %s; fix the quoting", msg);
		else
			smt_errorf(err, errlen, "%s: %s: %s; fix the quoting", p->cfg->hp_path,
			       smddp ? "sagemaker_distributed_dataparallel_custom_mpi_options" :
			       "sagemaker_mpi_custom_mpi_options", msg);
	} else if (rc == -EILSEQ) {
		smt_errorf(err, errlen, "%s", msg);
		rc = -EINVAL;
	}
	return rc;
}

/*
 * torch_distributed.py's command, with the launcher through --no_python
 * (plan.h): torchrun then starts the launcher, which starts the program.
 */
static int torchrun_argv(struct smt_plan *p, char **envp)
{
	struct smt_strvbuf s = { 0 };
	size_t node = 0;
	int rc = 0;

	while (node < p->ndist && strcmp(p->dist_hosts[node], p->cfg->current_host) != 0)
		node++;
	if (smt_env_get(envp, "RUN_NEURON_PARALLEL_COMPILE") &&
	    strcmp(smt_env_get(envp, "RUN_NEURON_PARALLEL_COMPILE"), "1") == 0)
		rc |= smt_strvbuf_add(&s, "neuron_parallel_compile");
	rc |= smt_strvbuf_add(&s, "torchrun");
	rc |= smt_strvbuf_add(&s, "--nnodes");
	rc |= smt_strvbuf_addf(&s, "%zu", p->ndist);
	rc |= smt_strvbuf_add(&s, "--nproc_per_node");
	rc |= smt_strvbuf_addf(&s, "%ld", p->ppn);
	if (p->ndist > 1) {
		rc |= smt_strvbuf_add(&s, "--master_addr");
		rc |= smt_strvbuf_add(&s, p->dist_hosts[0]);
		rc |= smt_strvbuf_add(&s, "--master_port");
		rc |= smt_strvbuf_add(&s, "7777");
		rc |= smt_strvbuf_add(&s, "--node_rank");
		rc |= smt_strvbuf_addf(&s, "%zu", node);
	}
	rc |= smt_strvbuf_add(&s, "--no_python");
	for (char **w = p->launcher; *w; w++)
		rc |= smt_strvbuf_add(&s, *w);
	for (char **w = p->rank_argv; *w; w++)
		rc |= smt_strvbuf_add(&s, *w);
	p->torchrun_argv = s.v;
	if (rc)
		return -ENOMEM;
	if (!installed(s.v[0], envp))
		return warn(p, "%s is not on PATH: this host's launch will fail", s.v[0]);
	return 0;
}

/* Processes per host and in all (smtd-config(5), smtd(8) Roles). */
static int counts(struct smt_plan *p, char *err, size_t errlen)
{
	const struct smt_options *o = &p->opts;
	int mpi = p->launch == SMT_LAUNCH_MPI;

	if (o->processes_per_host > 0)
		p->ppn = o->processes_per_host;
	else if (p->cfg->processes_per_host > 0)
		p->ppn = p->cfg->processes_per_host;
	else
		p->ppn = p->num_gpus > 0 ? p->num_gpus : p->num_neurons;
	if (p->ppn <= 0)
		p->ppn = 1;
	if (p->launch == SMT_LAUNCH_SMDDP || p->launch == SMT_LAUNCH_TORCHRUN) {
		/* Every distribution host runs processes_per_host: the
		 * MPI-only sagemaker_mpi_num_processes does not apply. */
		p->np = (long)p->ndist * p->ppn;
		if (o->num_processes > 0 && o->num_processes != p->np) {
			smt_errorf(err, errlen,
				   "--num-processes (or SMTD_NUM_PROCESSES): %ld, but %s runs "
				   "hosts x processes per host (%zu x %ld = %ld); drop it, or set "
				   "--processes-per-host",
				   o->num_processes, smt_launch_name(p->launch), p->ndist, p->ppn,
				   p->np);
			return -EINVAL;
		}
		return 0;
	}
	p->np = o->num_processes > 0 ? o->num_processes : p->cfg->num_processes;
	if (p->np > 0 && mpi && (size_t)p->np > p->ndist * (size_t)p->ppn) {
		if (o->num_processes > 0)
			smt_errorf(err, errlen,
				   "--num-processes (or SMTD_NUM_PROCESSES): %ld is more than "
				   "hosts x processes per host (%zu x %ld = %zu); lower it",
				   p->np, p->ndist, p->ppn, p->ndist * (size_t)p->ppn);
		else
			smt_errorf(err, errlen,
				   "%s: sagemaker_mpi_num_processes: %ld is more than hosts x "
				   "processes per host (%zu x %ld = %zu); lower it",
				   p->cfg->hp_path, p->np, p->ndist, p->ppn,
				   p->ndist * (size_t)p->ppn);
		return -EINVAL;
	}
	if (p->np <= 0)
		p->np = mpi ? (long)p->ndist * p->ppn : 1;
	return 0;
}

int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen)
{
	struct smt_plan *p;
	int rc = -ENOMEM;

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
	smt_digest_text((const char *const *)p->cfg->hosts, p->cfg->nhosts, p->hosts_digest);
	if ((rc = smt_launch_choose(&p->opts, p->cfg, &p->launch, p->reason, sizeof(p->reason),
				     err, errlen)) < 0)
		goto out;
	p->opts.mpi_enabled = p->launch == SMT_LAUNCH_MPI || p->launch == SMT_LAUNCH_SMDDP;
	if ((rc = distribution(p)) < 0)
		goto out;
	if (p->launch == SMT_LAUNCH_STANDALONE || !in_strv(p->dist_hosts, p->cfg->current_host))
		p->role = SMT_ROLE_STANDALONE;
	else if (strcmp(p->dist_hosts[0], p->cfg->current_host) == 0)
		p->role = SMT_ROLE_LEADER;
	else
		p->role = SMT_ROLE_WORKER;
	if (p->launch != SMT_LAUNCH_STANDALONE && p->ndist > 1 &&
	    (rc = check_remote_paths(p, err, errlen)) < 0)
		goto out;

	p->num_gpus = gpu_count(opts->gpu_probe_root);
	p->num_neurons = neuron_cores(opts->gpu_probe_root, envp);
	if ((rc = counts(p, err, errlen)) < 0)
		goto out;
	p->opts.processes_per_host = p->ppn;
	p->opts.num_processes = p->np;
	/* The option and its variable win over the hyperparameter. */
	if (p->opts.stall_timeout == 0 && p->cfg->stall_timeout > 0)
		p->opts.stall_timeout = p->cfg->stall_timeout;
	if (p->opts.max_restarts < 0)
		p->opts.max_restarts = p->cfg->max_restarts > 0 ? p->cfg->max_restarts : 0;
	if ((rc = preflight_command(p, err, errlen)) < 0)
		goto out;

	struct smt_rankcmd rc_out = { 0 };
	rc = smt_rankcmd_build(&p->opts, p->cfg, p->launch, p->role != SMT_ROLE_STANDALONE, &rc_out,
			       err, errlen);
	/* The plan keeps the parts, whatever was filled in. */
	p->code_dir = rc_out.code_dir;
	p->program = rc_out.program;
	p->user_args = rc_out.user_args;
	p->rank_argv = rc_out.argv;
	if (rc < 0)
		goto out;
	if ((rc = launcher(p)) < 0)
		goto out;
	if (smt_launch_unknown_setting(p->cfg) &&
	    (rc = warn(p,
		       "%s: %s: not a setting smtd knows (neither a distribution nor one of the "
		       "toolkit's settings); the job runs as if it were absent",
		       p->cfg->hp_path, smt_launch_unknown_setting(p->cfg))) < 0)
		goto out;
	rc = smt_pysite_torch_version(envp, p->torch_version, sizeof(p->torch_version),
				      p->torch_source, sizeof(p->torch_source));
	if (rc == -ENOMEM)
		goto out;
	if ((rc = environment(p, envp)) < 0)
		goto out;
	/* Workers build it too: it checks the custom options on every host. */
	if ((p->launch == SMT_LAUNCH_MPI || p->launch == SMT_LAUNCH_SMDDP) && p->ndist &&
	    (rc = mpi_argv(p, envp, err, errlen)) < 0)
		goto out;
	if (p->launch == SMT_LAUNCH_TORCHRUN && p->role != SMT_ROLE_STANDALONE &&
	    (rc = torchrun_argv(p, envp)) < 0)
		goto out;
	if (!p->warnings && !(p->warnings = calloc(1, sizeof(char *)))) {
		rc = -ENOMEM;
		goto out;
	}
	*out = p;
	p = NULL;
	rc = 0;
out:
	if (rc == -ENOMEM)
		smt_errorf(err, errlen, "out of memory while planning the job");
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
	smt_strv_free(p->launcher);
	free(p->stdout_preload);
	smt_strv_free(p->torchrun_argv);
	smt_strv_free(p->warnings);
	json_decref(p->vars);
	free(p->hostfile);
	free(p->hostfile_contents);
	free(p->root);
	free(p);
}

const struct smt_options *smt_plan_options(const struct smt_plan *p) { return &p->opts; }
enum smt_role smt_plan_role(const struct smt_plan *p) { return p->role; }
const char *smt_plan_root(const struct smt_plan *p) { return p->opts.root; }
const char *smt_plan_current_host(const struct smt_plan *p)
{
	return p ? p->cfg->current_host : NULL;
}
const char *smt_plan_leader(const struct smt_plan *p)
{
	return p->ndist ? p->dist_hosts[0] : p->cfg->current_host;
}
size_t smt_plan_host_count(const struct smt_plan *p) { return p->cfg->nhosts; }
const char *smt_plan_host(const struct smt_plan *p, size_t i)
{
	return i < p->cfg->nhosts ? p->cfg->hosts[i] : NULL;
}
const char *smt_plan_hosts_digest(const struct smt_plan *p) { return p->hosts_digest; }
size_t smt_plan_dist_host_count(const struct smt_plan *p) { return p->ndist; }
const char *smt_plan_dist_host(const struct smt_plan *p, size_t i)
{
	return i < p->ndist ? p->dist_hosts[i] : NULL;
}
long smt_plan_processes_per_host(const struct smt_plan *p) { return p->ppn; }
long smt_plan_num_processes(const struct smt_plan *p) { return p->np; }
enum smt_launch smt_plan_launch(const struct smt_plan *p) { return p->launch; }
const char *smt_plan_launcher_name(const struct smt_plan *p)
{
	if (p->role == SMT_ROLE_STANDALONE)
		return NULL;
	return p->launch == SMT_LAUNCH_TORCHRUN ? "torchrun" : "mpirun";
}
const char *smt_plan_launch_reason(const struct smt_plan *p) { return p->reason; }
char *const *smt_plan_argv(const struct smt_plan *p)
{
	if (p->role == SMT_ROLE_STANDALONE)
		return p->rank_argv;
	if (p->launch == SMT_LAUNCH_TORCHRUN)
		return p->torchrun_argv;
	return p->role == SMT_ROLE_LEADER ? p->mpi_argv : NULL;
}
char *const *smt_plan_launcher_argv(const struct smt_plan *p) { return p->launcher; }
const char *smt_plan_stdout_preload(const struct smt_plan *p) { return p->stdout_preload; }
char *const *smt_plan_warnings(const struct smt_plan *p) { return p->warnings; }
char *const *smt_plan_rank_argv(const struct smt_plan *p) { return p->rank_argv; }
char *const *smt_plan_mpi_argv(const struct smt_plan *p) { return p->mpi_argv; }
char *const *smt_plan_envp(const struct smt_plan *p) { return p->envp; }
char *const *smt_plan_env_names(const struct smt_plan *p) { return p->env_names; }
const char *smt_plan_workdir(const struct smt_plan *p) { return p->code_dir; }
const char *smt_plan_program(const struct smt_plan *p) { return p->program; }
const char *smt_plan_instance_type(const struct smt_plan *p) { return own_instance_type(p->cfg); }
const char *smt_plan_iface(const struct smt_plan *p) { return p->cfg->iface; }
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

/* O's members in the order of their names (a new object; O is released). */
static json_t *sorted_object(json_t *o)
{
	size_t n = json_object_size(o), i = 0;
	const char **keys = calloc(n + 1, sizeof(*keys));
	json_t *out = keys ? json_object() : NULL, *v;
	const char *key;

	json_object_foreach(o, key, v)
		if (keys)
			keys[i++] = key;
	if (keys)
		qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; out && i < n; i++)
		if (json_object_set(out, keys[i], json_object_get(o, keys[i])) < 0) {
			json_decref(out);
			out = NULL;
		}
	free(keys);
	json_decref(o);
	return out;
}

/*
 * What a rank gets on top of smtd's own environment, with values: the
 * plan's variables, then mpirun's -x NAME=VALUE, which win on every host.
 */
static json_t *rank_env(const struct smt_plan *p)
{
	json_t *o = json_deep_copy(p->vars);

	for (char **a = p->role != SMT_ROLE_STANDALONE ? p->mpi_argv : NULL; o && a && a[0] && a[1];
	     a++) {
		const char *eq = strchr(a[1], '=');
		char *name;

		if (strcmp(a[0], "-x") != 0 || !eq)
			continue;
		if (!(name = strndup(a[1], (size_t)(eq - a[1]))) ||
		    json_object_set_new(o, name, json_string(eq + 1)) < 0) {
			free(name);
			json_decref(o);
			return NULL;
		}
		free(name);
	}
	return o ? sorted_object(o) : NULL;
}

int smt_plan_print(const struct smt_plan *p, FILE *out, int json)
{
	char *const *argv = smt_plan_argv(p);
	const char *hf = smt_plan_hostfile(p, NULL);

	if (json) {
		json_t *o = json_pack(
			"{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o, "
			"s:o, s:s, s:s?}",
			"launch", smt_launch_name(p->launch), "launch_reason", p->reason, "role",
			smt_role_name(p->role), "leader", smt_plan_leader(p), "current_host",
			p->cfg->current_host, "hosts", strv_json(p->cfg->hosts, p->cfg->nhosts),
			"distribution_hosts", strv_json(p->dist_hosts, p->ndist),
			"processes_per_host", (json_int_t)p->ppn, "num_processes",
			(json_int_t)p->np, "argv",
			argv ? strv_json(argv, smt_strv_len(argv)) : json_array(), "rank_argv",
			strv_json(p->rank_argv, smt_strv_len(p->rank_argv)), "launcher",
			strv_json(p->launcher, smt_strv_len(p->launcher)), "env",
			strv_json(p->env_names, smt_strv_len(p->env_names)), "rank_env",
			rank_env(p), "warnings", strv_json(p->warnings, smt_strv_len(p->warnings)),
			"workdir", p->code_dir, "hostfile", hf);
		int rc;

		if (!o)
			return -ENOMEM;
		rc = json_dumpf(o, out, JSON_COMPACT) < 0 ? -EIO : 0;
		json_decref(o);
		fputc('\n', out);
		return fflush(out) == 0 ? rc : -errno;
	}
	fprintf(out, "launch: %s (%s)\nrole: %s\ncurrent_host: %s\nleader: %s\nhosts (%zu):",
		smt_launch_name(p->launch), p->reason, smt_role_name(p->role), p->cfg->current_host,
		smt_plan_leader(p), p->cfg->nhosts);
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
	for (size_t i = 0; p->warnings[i]; i++)
		fprintf(out, "warning: %s\n", p->warnings[i]);
	return fflush(out) == 0 ? 0 : -errno;
}
