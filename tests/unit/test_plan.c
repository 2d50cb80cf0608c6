/* test_plan.c - roles, hosts, process counts, rank command, environment. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan.h"
#include "smenv.h"

struct fixture {
	char dir[64];
	char path[256];
	char gpu[256];
};

static void write_file(struct fixture *f, const char *name, const char *text)
{
	char p[512];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/input/config/%s", f->dir, name);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char p[512];

	strcpy(f->dir, "/tmp/smt-plan.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(p, sizeof(p), "%s/input", f->dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/input/config", f->dir);
	mkdir(p, 0755);
	snprintf(f->gpu, sizeof(f->gpu), "%s/gpu", f->dir);
	mkdir(f->gpu, 0755);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct smt_plan *build(struct fixture *f, char **argv, char **envp)
{
	struct smt_options o;
	struct smt_plan *plan = NULL;
	char err[512] = "";
	int argc = 0, rc;
	char *full[32] = { "smtd", "--root", f->dir };
	char gpuenv[300];
	char *env[16];
	int n = 0;

	for (int i = 0; argv && argv[i]; i++)
		full[3 + i] = argv[i];
	while (full[argc])
		argc++;
	snprintf(gpuenv, sizeof(gpuenv), "SMTD_GPU_PROBE_ROOT=%s", f->gpu);
	env[n++] = gpuenv;
	for (int i = 0; envp && envp[i]; i++)
		env[n++] = envp[i];
	/* The machine's python3 and its torch stay out unless the test gives a PATH. */
	env[n++] = "PATH=/nonexistent";
	env[n] = NULL;
	assert_int_equal(smt_options_parse(&o, argc, full, env, err, sizeof(err)), 0);
	rc = smt_plan_build(&o, env, &plan, err, sizeof(err));
	if (rc != 0)
		fail_msg("plan: %s", err);
	return plan;
}

/* S with the job directory written ROOT (static buffer). */
static const char *rooted(struct fixture *f, const char *s)
{
	static char out[8192];
	size_t len = strlen(f->dir), n = 0;

	while (*s && n + 5 < sizeof(out)) {
		if (strncmp(s, f->dir, len) == 0) {
			memcpy(out + n, "ROOT", 4);
			n += 4;
			s += len;
		} else {
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
	return out;
}

/* The configuration error smt_plan_build gives, with "ROOT" for the job directory. */
static char *build_error(struct fixture *f, char **argv, char **envp)
{
	struct smt_options o;
	struct smt_plan *plan = NULL;
	static char err[2048], out[2048];
	char *full[32] = { "smtd", "--root", f->dir };
	char gpuenv[300], *env[16];
	int argc = 0, n = 0;

	for (int i = 0; argv && argv[i]; i++)
		full[3 + i] = argv[i];
	while (full[argc])
		argc++;
	snprintf(gpuenv, sizeof(gpuenv), "SMTD_GPU_PROBE_ROOT=%s", f->gpu);
	env[n++] = gpuenv;
	for (int i = 0; envp && envp[i]; i++)
		env[n++] = envp[i];
	/* The machine's python3 and its torch stay out unless the test gives a PATH. */
	env[n++] = "PATH=/nonexistent";
	env[n] = NULL;
	err[0] = '\0';
	assert_int_equal(smt_options_parse(&o, argc, full, env, err, sizeof(err)), 0);
	assert_int_equal(smt_plan_build(&o, env, &plan, err, sizeof(err)), -EINVAL);
	assert_null(plan);
	snprintf(out, sizeof(out), "%s", rooted(f, err));
	return out;
}

/* ARGV joined by ' ' for compact comparisons (static buffer). */
static const char *joined(char *const *argv)
{
	static char buf[8192];

	buf[0] = '\0';
	for (size_t i = 0; argv && argv[i]; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? " " : "", argv[i]);
	return buf;
}

/* An executable stand-in at DIR/bin/NAME. */
static void stand_in(struct fixture *f, const char *name)
{
	char p[512];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/bin", f->dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bin/%s", f->dir, name);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs("#!/bin/sh\nexec \"$@\"\n", fp);
	fclose(fp);
	assert_int_equal(chmod(p, 0755), 0);
}

/* A file at DIR/REL, its directories created. */
static void put(struct fixture *f, const char *rel, const char *text)
{
	char p[1024], cmd[1200];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/%s", f->dir, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static const char *env_value(char *const *envp, const char *name)
{
	size_t len = strlen(name);

	for (; *envp; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

static const char *const groups_rc =
	"{\"current_host\":\"%s\",\"hosts\":[\"algo-1\",\"algo-2\",\"algo-3\"],"
	"\"current_group_name\":\"%s\",\"current_instance_type\":\"ml.c5.xlarge\","
	"\"instance_groups\":[{\"instance_group_name\":\"train\",\"instance_type\":\"ml.p4d.24xlarge\",\"hosts\":[\"algo-2\",\"algo-3\"]},"
	"{\"instance_group_name\":\"data\",\"instance_type\":\"ml.c5.xlarge\",\"hosts\":[\"algo-1\"]}]}";

static void set_rc(struct fixture *f, const char *host, const char *group)
{
	char text[1024];

	snprintf(text, sizeof(text), groups_rc, host, group);
	write_file(f, "resourceconfig.json", text);
}

static void test_roles(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;

	write_file(f, "hyperparameters.json",
		   "{\"sagemaker_program\":\"\\\"train.py\\\"\",\"sagemaker_mpi_enabled\":true,"
		   "\"sagemaker_distribution_instance_groups\":[\"train\"],\"b\":\"x y\",\"a\":1}");
	set_rc(f, "algo-2", "train");
	p = build(f, NULL, NULL);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_LEADER);
	assert_string_equal(smt_plan_leader(p), "algo-2");
	assert_int_equal(smt_plan_dist_host_count(p), 2);
	assert_int_equal(smt_plan_processes_per_host(p), 1);
	assert_int_equal(smt_plan_num_processes(p), 2);
	assert_string_equal(smt_plan_argv(p)[0], "mpirun");
	assert_string_equal(smt_plan_rank_argv(p)[0], "python3");
	assert_string_equal(smt_plan_rank_argv(p)[1], "-m");
	/* One-letter names get one dash, as in the toolkit. */
	assert_string_equal(smt_plan_rank_argv(p)[4], "-a");
	assert_string_equal(smt_plan_rank_argv(p)[5], "1");
	assert_string_equal(smt_plan_rank_argv(p)[7], "x y");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_CURRENT_HOST"), "algo-2");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HOSTS"), "[\"algo-1\",\"algo-2\",\"algo-3\"]");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HPS"), "{\"a\":1,\"b\":\"x y\"}");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_USER_ARGS"), "[\"-a\",\"1\",\"-b\",\"x y\"]");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HP_B"), "x y");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HP_A"), "1");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_CURRENT_INSTANCE_GROUP"), "train");
	assert_non_null(strstr(env_value(smt_plan_envp(p), "SM_TRAINING_ENV"), "\"current_host\":\"algo-2\""));
	/* Host-specific names never travel with -x. */
	for (char *const *a = smt_plan_argv(p); *a; a++) {
		assert_string_not_equal(*a, "SM_CURRENT_HOST");
		assert_string_not_equal(*a, "SM_TRAINING_ENV");
	}
	assert_null(smt_plan_hostfile(p, NULL));
	smt_plan_free(p);

	set_rc(f, "algo-3", "train");
	p = build(f, NULL, NULL);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_WORKER);
	assert_null(smt_plan_argv(p));
	assert_string_equal(env_value(smt_plan_envp(p), "SM_CURRENT_HOST"), "algo-3");
	smt_plan_free(p);

	/* Outside the distribution group: standalone, without mpi4py. */
	set_rc(f, "algo-1", "data");
	p = build(f, NULL, NULL);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_STANDALONE);
	assert_string_equal(smt_plan_argv(p)[0], "python3");
	assert_non_null(strstr(smt_plan_argv(p)[1], "/code/train.py"));
	smt_plan_free(p);

	/* MPI off: standalone on every host; the option wins over the file. */
	set_rc(f, "algo-2", "train");
	p = build(f, (char *[]){ "--no-mpi", NULL }, NULL);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_STANDALONE);
	smt_plan_free(p);
}

static void test_default_group_and_counts(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	char path[512];

	/* No sagemaker_distribution_instance_groups: the current group. */
	write_file(f, "hyperparameters.json", "{\"sagemaker_mpi_enabled\":\"true\",\"sagemaker_mpi_num_of_processes_per_host\":\"4\"}");
	set_rc(f, "algo-1", "data");
	p = build(f, (char *[]){ "--", "/bin/true", "x", NULL }, NULL);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_LEADER);
	assert_int_equal(smt_plan_dist_host_count(p), 1);
	assert_int_equal(smt_plan_processes_per_host(p), 4);
	assert_string_equal(smt_plan_rank_argv(p)[0], "/bin/true");
	assert_string_equal(smt_plan_rank_argv(p)[1], "x");
	assert_null(smt_plan_rank_argv(p)[2]);
	smt_plan_free(p);

	/* Option > SMTD_* > hyperparameter. */
	p = build(f, (char *[]){ "--processes-per-host", "6", "--", "/bin/true", NULL },
		  (char *[]){ "SMTD_PROCESSES_PER_HOST=5", NULL });
	assert_int_equal(smt_plan_processes_per_host(p), 6);
	smt_plan_free(p);
	p = build(f, (char *[]){ "--", "/bin/true", NULL }, (char *[]){ "SMTD_PROCESSES_PER_HOST=5", NULL });
	assert_int_equal(smt_plan_processes_per_host(p), 5);
	smt_plan_free(p);

	/* Without any: the NVIDIA GPU count. */
	write_file(f, "hyperparameters.json", "{\"sagemaker_mpi_enabled\":\"true\"}");
	snprintf(path, sizeof(path), "%s/proc", f->gpu);
	mkdir(path, 0755);
	strcat(path, "/driver");
	mkdir(path, 0755);
	strcat(path, "/nvidia");
	mkdir(path, 0755);
	strcat(path, "/gpus");
	mkdir(path, 0755);
	for (int i = 0; i < 3; i++) {
		char g[600];
		snprintf(g, sizeof(g), "%s/%d", path, i);
		mkdir(g, 0755);
	}
	p = build(f, (char *[]){ "--", "/bin/true", NULL }, NULL);
	assert_int_equal(smt_plan_processes_per_host(p), 3);
	assert_string_equal(env_value(smt_plan_envp(p), "SM_NUM_GPUS"), "3");
	smt_plan_free(p);
}

static void test_hostfile(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	char text[4096] = "{\"current_host\":\"h0\",\"hosts\":[";
	const char *contents = NULL;

	for (int i = 0; i < 70; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s\"h%d\"", i ? "," : "", i);
	strcat(text, "]}");
	write_file(f, "resourceconfig.json", text);
	write_file(f, "hyperparameters.json", "{\"sagemaker_mpi_enabled\":true,\"sagemaker_mpi_num_of_processes_per_host\":2}");
	p = build(f, (char *[]){ "--socket", "/run/x/smtd.sock", "--", "/bin/true", NULL }, NULL);
	assert_string_equal(smt_plan_hostfile(p, &contents), "/run/x/hostfile");
	assert_int_equal(strncmp(contents, "h0 slots=2\nh1 slots=2\n", 22), 0);
	assert_string_equal(smt_plan_argv(p)[1], "--hostfile");
	assert_string_equal(smt_plan_argv(p)[2], "/run/x/hostfile");
	assert_int_equal(smt_plan_num_processes(p), 140);
	smt_plan_free(p);
}

static void test_missing_program(void **state)
{
	struct fixture *f = *state;
	struct smt_options o;
	struct smt_plan *p = NULL;
	char err[512], *argv[] = { "smtd", "--root", f->dir, NULL }, *env[] = { NULL };
	char expect[600];

	write_file(f, "resourceconfig.json", "{\"current_host\":\"a\",\"hosts\":[\"a\"]}");
	write_file(f, "hyperparameters.json", "{}");
	assert_int_equal(smt_options_parse(&o, 3, argv, env, err, sizeof(err)), 0);
	assert_int_equal(smt_plan_build(&o, env, &p, err, sizeof(err)), -EINVAL);
	snprintf(expect, sizeof(expect), "%s/input/config/hyperparameters.json: sagemaker_program: missing; name the program to run there, in SAGEMAKER_PROGRAM or --program, or give a command after --",
		 f->dir);
	assert_string_equal(err, expect);
}

static void write_hp(struct fixture *f, const char *hp)
{
	write_file(f, "hyperparameters.json", hp);
}

static const char *const two_hosts_rc =
	"{\"current_host\":\"%s\",\"hosts\":[\"algo-1\",\"algo-2\"],\"current_instance_type\":\"%s\"}";

static void set_two_hosts(struct fixture *f, const char *host, const char *type)
{
	char text[512];

	snprintf(text, sizeof(text), two_hosts_rc, host, type);
	write_file(f, "resourceconfig.json", text);
}

/* The launch, from the hyperparameters and the options, in the order of smtd(8) Roles. */
static void test_launch_choice(void **state)
{
	static const struct {
		const char *hp;
		char *opt[4];
		char *env;
		enum smt_launch launch;
		const char *reason;
	} cases[] = {
		{ "{}", { NULL }, NULL, SMT_LAUNCH_STANDALONE, "no distribution is enabled in hyperparameters.json" },
		{ "{\"sagemaker_mpi_enabled\":\"true\"}", { NULL }, NULL, SMT_LAUNCH_MPI,
		  "sagemaker_mpi_enabled is true in hyperparameters.json" },
		{ "{\"sagemaker_distributed_dataparallel_enabled\":\"true\"}", { NULL }, NULL, SMT_LAUNCH_SMDDP,
		  "sagemaker_distributed_dataparallel_enabled is true in hyperparameters.json" },
		{ "{\"sagemaker_pytorch_ddp_enabled\":true}", { NULL }, NULL, SMT_LAUNCH_SMDDP,
		  "sagemaker_pytorch_ddp_enabled is true in hyperparameters.json" },
		{ "{\"sagemaker_torch_distributed_enabled\":\"true\"}", { NULL }, NULL, SMT_LAUNCH_TORCHRUN,
		  "sagemaker_torch_distributed_enabled is true in hyperparameters.json" },
		/* The SDK's model parallel: MPI with SMDataParallel written as false. */
		{ "{\"sagemaker_mpi_enabled\":\"true\",\"sagemaker_distributed_dataparallel_enabled\":\"false\"}",
		  { NULL }, NULL, SMT_LAUNCH_MPI, "sagemaker_mpi_enabled is true in hyperparameters.json" },
		{ "{\"sagemaker_distributed_dataparallel_enabled\":true,\"sagemaker_torch_distributed_enabled\":true}",
		  { NULL }, NULL, SMT_LAUNCH_SMDDP,
		  "sagemaker_distributed_dataparallel_enabled is true in hyperparameters.json" },
		/* Training Compiler and the PyTorch container's native launcher are not distributions. */
		{ "{\"sagemaker_training_compiler_enabled\":\"true\"}", { NULL }, NULL, SMT_LAUNCH_STANDALONE,
		  "no distribution is enabled in hyperparameters.json" },
		{ "{\"sagemaker_toolkit_native_launcher_enabled\":\"true\",\"sagemaker_mpi_enabled\":true}",
		  { NULL }, NULL, SMT_LAUNCH_MPI, "sagemaker_mpi_enabled is true in hyperparameters.json" },
		{ "{\"sagemaker_mpi_enabled\":true}", { "--no-mpi" }, NULL, SMT_LAUNCH_STANDALONE,
		  "--no-mpi (or SMTD_MPI_ENABLED) and no other distribution in hyperparameters.json" },
		{ "{\"sagemaker_mpi_enabled\":true,\"sagemaker_torch_distributed_enabled\":true}", { "--no-mpi" },
		  NULL, SMT_LAUNCH_TORCHRUN, "sagemaker_torch_distributed_enabled is true in hyperparameters.json" },
		{ "{}", { NULL }, "SMTD_MPI_ENABLED=true", SMT_LAUNCH_MPI, "--mpi (or SMTD_MPI_ENABLED)" },
		{ "{\"sagemaker_mpi_enabled\":true}", { "--launch", "torchrun" }, NULL, SMT_LAUNCH_TORCHRUN,
		  "--launch torchrun (or SMTD_LAUNCH)" },
		/* An explicit launch is a decision: even an unsupported flag yields to it. */
		{ "{\"sagemaker_pytorch_xla_multi_worker_enabled\":true}", { NULL }, "SMTD_LAUNCH=standalone",
		  SMT_LAUNCH_STANDALONE, "--launch standalone (or SMTD_LAUNCH)" },
		/* Disabled or empty flags are not enabled, known or not. */
		{ "{\"sagemaker_parameter_server_enabled\":false,\"sagemaker_foo_enabled\":\"\","
		  "\"sagemaker_bar_enabled\":0,\"sagemaker_enable_cloudwatch_metrics\":true}",
		  { NULL }, NULL, SMT_LAUNCH_STANDALONE, "no distribution is enabled in hyperparameters.json" },
	};
	struct fixture *f = *state;

	char path[600];

	set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	stand_in(f, "smddprun");
	snprintf(path, sizeof(path), "PATH=%s/bin", f->dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[8] = { NULL };
		char *env[3] = { cases[i].env ? cases[i].env : path, cases[i].env ? path : NULL, NULL };
		struct smt_plan *p;
		int n = 0;

		write_hp(f, cases[i].hp);
		for (int k = 0; cases[i].opt[k]; k++)
			argv[n++] = cases[i].opt[k];
		argv[n++] = "--";
		argv[n++] = "/bin/true";
		p = build(f, argv, env);
		assert_int_equal(smt_plan_launch(p), cases[i].launch);
		assert_string_equal(smt_plan_launch_reason(p), cases[i].reason);
		assert_int_equal(smt_plan_role(p), cases[i].launch == SMT_LAUNCH_STANDALONE ?
					    SMT_ROLE_STANDALONE : SMT_ROLE_LEADER);
		if (cases[i].launch == SMT_LAUNCH_STANDALONE)
			assert_null(smt_plan_launcher_name(p));
		else
			assert_string_equal(smt_plan_launcher_name(p),
					    cases[i].launch == SMT_LAUNCH_TORCHRUN ? "torchrun" :
										     "mpirun");
		assert_non_null(smt_plan_warnings(p));
		smt_plan_free(p);
	}
	assert_string_equal(smt_launch_name(SMT_LAUNCH_SMDDP), "smddp");
}

/* A distribution smtd does not launch: one line naming the file, the flag and what smtd launches. */
static void test_unsupported(void **state)
{
	static const struct { const char *hp, *msg; } cases[] = {
		{ "{\"sagemaker_pytorch_xla_multi_worker_enabled\":\"true\"}",
		  "ROOT/input/config/hyperparameters.json: sagemaker_pytorch_xla_multi_worker_enabled: true asks for PyTorch XLA's multi-worker launcher, which smtd does not launch; smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel (sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and torchrun (sagemaker_torch_distributed_enabled); run this job with the SageMaker training toolkit, or choose a launch with --launch" },
		/* Alongside a supported one, still refused: never a silent wrong job. */
		{ "{\"sagemaker_mpi_enabled\":true,\"sagemaker_parameter_server_enabled\":true}",
		  "ROOT/input/config/hyperparameters.json: sagemaker_parameter_server_enabled: true asks for TensorFlow's parameter servers, which smtd does not launch; smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel (sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and torchrun (sagemaker_torch_distributed_enabled); run this job with the SageMaker training toolkit, or choose a launch with --launch" },
		{ "{\"sagemaker_multi_worker_mirrored_strategy_enabled\":true}",
		  "ROOT/input/config/hyperparameters.json: sagemaker_multi_worker_mirrored_strategy_enabled: true asks for TensorFlow's MultiWorkerMirroredStrategy (TF_CONFIG), which smtd does not launch; smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel (sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and torchrun (sagemaker_torch_distributed_enabled); run this job with the SageMaker training toolkit, or choose a launch with --launch" },
	};
	struct fixture *f = *state;

	set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_hp(f, cases[i].hp);
		assert_string_equal(build_error(f, (char *[]){ "--", "/bin/true", NULL }, NULL), cases[i].msg);
		/* The same on a worker, and without a command. */
		set_two_hosts(f, "algo-2", "ml.c5.xlarge");
		assert_string_equal(build_error(f, NULL, NULL), cases[i].msg);
		set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	}
}

/* A sagemaker_*_enabled key smtd does not know: a warning, and the job runs. */
static void test_unknown_setting(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;

	set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	write_hp(f, "{\"sagemaker_mpi_enabled\":true,\"sagemaker_new_thing_enabled\":\"yes\"}");
	p = build(f, (char *[]){ "--", "/bin/true", NULL }, NULL);
	assert_int_equal(smt_plan_launch(p), SMT_LAUNCH_MPI);
	assert_string_equal(rooted(f, smt_plan_warnings(p)[0]),
			    "ROOT/input/config/hyperparameters.json: sagemaker_new_thing_enabled: not a setting smtd knows (neither a distribution nor one of the toolkit's settings); the job runs as if it were absent");
	assert_null(smt_plan_warnings(p)[1]);
	smt_plan_free(p);
}

/* torchrun on every distribution host (smtd(8) torchrun). */
static void test_torchrun(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	char path[600];

	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_torch_distributed_enabled\":true,"
		    "\"sagemaker_mpi_num_of_processes_per_host\":\"2\",\"sagemaker_mpi_num_processes\":\"3\",\"lr\":\"0.5\"}");
	set_rc(f, "algo-2", "train");
	stand_in(f, "torchrun");
	snprintf(path, sizeof(path), "PATH=%s/bin", f->dir);
	p = build(f, (char *[]){ "--smtctl", "/s/smtctl", NULL }, (char *[]){ path, NULL });
	assert_int_equal(smt_plan_launch(p), SMT_LAUNCH_TORCHRUN);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_LEADER);
	assert_int_equal(smt_plan_dist_host_count(p), 2);
	/* The MPI-only process count does not apply. */
	assert_int_equal(smt_plan_num_processes(p), 4);
	assert_string_equal(rooted(f, joined(smt_plan_argv(p))),
			    "torchrun --nnodes 2 --nproc_per_node 2 --master_addr algo-2 --master_port 7777 --node_rank 0 "
			    "--no_python /s/smtctl rank -- python3 -u ROOT/code/train.py --lr 0.5");
	assert_string_equal(rooted(f, joined(smt_plan_rank_argv(p))), "python3 -u ROOT/code/train.py --lr 0.5");
	assert_string_equal(joined(smt_plan_launcher_argv(p)), "/s/smtctl rank --");
	assert_null(smt_plan_mpi_argv(p));
	assert_null(smt_plan_warnings(p)[0]);
	assert_string_equal(env_value(smt_plan_envp(p), "NCCL_SOCKET_IFNAME"), "eth0");
	assert_string_equal(env_value(smt_plan_envp(p), "NCCL_PROTO"), "simple");
	assert_null(env_value(smt_plan_envp(p), "FI_PROVIDER"));
	assert_string_equal(env_value(smt_plan_envp(p), "SM_DISTRIBUTION_INSTANCE_GROUPS"), "[\"train\"]");
	/* torchrun looks at its processes every 0.1 s, not every 5 s (torch < 2.4)... */
	assert_string_equal(env_value(smt_plan_envp(p), "PET_MONITOR_INTERVAL"), "0.1");
	smt_plan_free(p);
	/* ... unless the image says otherwise. */
	p = build(f, (char *[]){ "--smtctl", "/s/smtctl", NULL },
		  (char *[]){ path, "PET_MONITOR_INTERVAL=2", NULL });
	assert_string_equal(env_value(smt_plan_envp(p), "PET_MONITOR_INTERVAL"), "2");
	assert_null(strstr(joined(smt_plan_env_names(p)), "PET_MONITOR_INTERVAL"));
	smt_plan_free(p);

	/* A worker runs its own torchrun, with its node rank; a socket of its own. */
	set_rc(f, "algo-3", "train");
	p = build(f, (char *[]){ "--smtctl", "/s/smtctl", "--socket", "/tmp/s.sock", NULL },
		  (char *[]){ path, "RUN_NEURON_PARALLEL_COMPILE=1", NULL });
	assert_int_equal(smt_plan_role(p), SMT_ROLE_WORKER);
	assert_string_equal(rooted(f, joined(smt_plan_argv(p))),
			    "neuron_parallel_compile torchrun --nnodes 2 --nproc_per_node 2 --master_addr algo-2 "
			    "--master_port 7777 --node_rank 1 --no_python /s/smtctl --socket /tmp/s.sock rank -- "
			    "python3 -u ROOT/code/train.py --lr 0.5");
	/* The stand-in PATH has no neuron_parallel_compile. */
	assert_string_equal(smt_plan_warnings(p)[0],
			    "neuron_parallel_compile is not on PATH: this host's launch will fail");
	smt_plan_free(p);

	/* Outside the distribution group: standalone, the program alone. */
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_torch_distributed_enabled\":true,"
		    "\"sagemaker_distribution_instance_groups\":[\"train\"],\"lr\":\"0.5\"}");
	set_rc(f, "algo-1", "data");
	p = build(f, NULL, (char *[]){ path, NULL });
	assert_int_equal(smt_plan_role(p), SMT_ROLE_STANDALONE);
	/* A torchrun job, but smtd runs the program here itself. */
	assert_null(smt_plan_launcher_name(p));
	assert_string_equal(rooted(f, joined(smt_plan_argv(p))), "python3 ROOT/code/train.py --lr 0.5");
	assert_null(env_value(smt_plan_envp(p), "NCCL_PROTO"));
	assert_null(env_value(smt_plan_envp(p), "PET_MONITOR_INTERVAL"));
	smt_plan_free(p);

	/* One host: no rendezvous options; EFA variables of this host's type; a command. */
	write_hp(f, "{\"sagemaker_torch_distributed_enabled\":true,\"sagemaker_mpi_num_of_processes_per_host\":\"2\"}");
	write_file(f, "resourceconfig.json", "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"],"
		   "\"current_instance_type\":\"ml.trn1.32xlarge\"}");
	p = build(f, (char *[]){ "--smtctl", "/s/smtctl", "--", "./run", "x", NULL }, (char *[]){ path, NULL });
	assert_string_equal(joined(smt_plan_argv(p)),
			    "torchrun --nnodes 1 --nproc_per_node 2 --no_python /s/smtctl rank -- ./run x");
	assert_string_equal(env_value(smt_plan_envp(p), "FI_PROVIDER"), "efa");
	assert_string_equal(env_value(smt_plan_envp(p), "FI_EFA_USE_DEVICE_RDMA"), "1");
	assert_string_equal(env_value(smt_plan_envp(p), "RDMAV_FORK_SAFE"), "1");
	assert_non_null(strstr(joined(smt_plan_env_names(p)),
			       "FI_PROVIDER NCCL_PROTO NCCL_SOCKET_IFNAME PET_MONITOR_INTERVAL PYTHONPATH RDMAV_FORK_SAFE"));
	smt_plan_free(p);

	/* An explicit process count that torchrun cannot run. */
	assert_string_equal(build_error(f, (char *[]){ "--num-processes", "3", "--", "./run", NULL }, NULL),
			    "--num-processes (or SMTD_NUM_PROCESSES): 3, but torchrun runs hosts x processes per host (1 x 2 = 2); drop it, or set --processes-per-host");
	/* torchrun missing: a warning, the plan stands. */
	p = build(f, (char *[]){ "--", "./run", NULL }, (char *[]){ "PATH=/nonexistent", NULL });
	assert_string_equal(smt_plan_warnings(p)[0], "torchrun is not on PATH: this host's launch will fail");
	smt_plan_free(p);
}

/* SMDataParallel: mpirun on the leader, orted on the workers. */
static void test_smddp(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	char path[600];

	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_distributed_dataparallel_enabled\":true,"
		    "\"sagemaker_distributed_dataparallel_custom_mpi_options\":\"-x A=1\","
		    "\"sagemaker_mpi_custom_mpi_options\":\"-x IGNORED=1\","
		    "\"sagemaker_instance_type\":\"ml.p4d.24xlarge\",\"sagemaker_mpi_num_of_processes_per_host\":8}");
	set_two_hosts(f, "algo-1", "ml.g5.2xlarge");
	stand_in(f, "smddprun");
	snprintf(path, sizeof(path), "PATH=%s/bin", f->dir);
	p = build(f, NULL, (char *[]){ path, NULL });
	assert_int_equal(smt_plan_launch(p), SMT_LAUNCH_SMDDP);
	assert_int_equal(smt_plan_role(p), SMT_ROLE_LEADER);
	assert_string_equal(smt_plan_launcher_name(p), "mpirun");
	assert_int_equal(smt_plan_num_processes(p), 16);
	assert_string_equal(smt_plan_argv(p)[0], "mpirun");
	assert_non_null(strstr(rooted(f, joined(smt_plan_argv(p))),
			       " -x A=1 -x NCCL_PROTO=simple -x FI_EFA_USE_DEVICE_RDMA=1 -x SMDATAPARALLEL_SERVER_ADDR=algo-1 "
			       "-x SMDATAPARALLEL_SERVER_PORT=7592 -x SAGEMAKER_INSTANCE_TYPE=ml.p4d.24xlarge "
			       "" SMT_SMTCTL_DEFAULT " rank -- smddprun python3 -m mpi4py ROOT/code/train.py"));
	assert_null(strstr(joined(smt_plan_argv(p)), "IGNORED"));
	assert_null(smt_plan_warnings(p)[0]);
	smt_plan_free(p);

	/* A worker: nothing to execute, the leader's mpirun starts orted here. */
	set_two_hosts(f, "algo-2", "ml.g5.2xlarge");
	p = build(f, NULL, (char *[]){ path, NULL });
	assert_int_equal(smt_plan_role(p), SMT_ROLE_WORKER);
	assert_string_equal(smt_plan_launcher_name(p), "mpirun"); /* its orted */
	assert_null(smt_plan_argv(p));
	assert_non_null(smt_plan_mpi_argv(p));
	smt_plan_free(p);
	/* Without smddprun the job would not be data parallel: refused on every host. */
	assert_string_equal(build_error(f, NULL, (char *[]){ "PATH=/nonexistent", NULL }),
			    "smddprun is not on PATH (/nonexistent): SMDataParallel (sagemaker_distributed_dataparallel_enabled is true in hyperparameters.json) needs it on every host; install the smdistributed dataparallel library in the image, or choose another launch with --launch");

	/* Its custom options are checked, and named, on every host. */
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_pytorch_ddp_enabled\":true,"
		    "\"sagemaker_distributed_dataparallel_custom_mpi_options\":\"-x 'A\"}");
	assert_string_equal(build_error(f, NULL, (char *[]){ path, NULL }),
			    "ROOT/input/config/hyperparameters.json: sagemaker_distributed_dataparallel_custom_mpi_options: unbalanced single quote at byte 4; fix the quoting");
}

/* Toolkit 4.5.0's model parallel on the MPI path. */
static void test_modelparallel(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	char path[600];

	set_two_hosts(f, "algo-1", "ml.p4d.24xlarge");
	stand_in(f, "smddpmprun");
	snprintf(path, sizeof(path), "PATH=%s/bin", f->dir);
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true,"
		    "\"mp_parameters\":\"{\\\"partitions\\\": 2}\"}");
	p = build(f, NULL, (char *[]){ path, "SM_DLC_TORCH_VERSION=2.0.1", NULL });
	assert_non_null(strstr(joined(smt_plan_argv(p)),
			       " -x FI_EFA_USE_DEVICE_RDMA=1 -mca orte_launch_agent " SMT_SMTCTL_DEFAULT " exec-orted orted "
			       "-x NCCL_ALGO=ring " SMT_SMTCTL_DEFAULT " rank -- smddpmprun -i ml.p4d.24xlarge --allow-bypass python3 -m mpi4py "));
	smt_plan_free(p);
	/* Another DDP backend: no smddpmprun; torch 1: no NCCL_ALGO. */
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true,"
		    "\"mp_parameters\":{\"ddp_dist_backend\":\"nccl\"}}");
	p = build(f, NULL, (char *[]){ path, "SM_DLC_TORCH_VERSION=1.13.1", NULL });
	assert_null(strstr(joined(smt_plan_argv(p)), "smddpmprun"));
	assert_null(strstr(joined(smt_plan_argv(p)), "NCCL_ALGO"));
	smt_plan_free(p);
	/* Empty mp_parameters: not model parallel. */
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true,\"mp_parameters\":\"{}\"}");
	p = build(f, NULL, (char *[]){ path, "SM_DLC_TORCH_VERSION=2.0.1", NULL });
	assert_null(strstr(joined(smt_plan_argv(p)), "smddpmprun"));
	assert_null(strstr(joined(smt_plan_argv(p)), "NCCL_ALGO"));
	smt_plan_free(p);
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true,\"mp_parameters\":\"[1]\"}");
	assert_string_equal(build_error(f, NULL, NULL),
			    "ROOT/input/config/hyperparameters.json: mp_parameters: [1] is not a JSON object; write the model-parallel parameters as {\"name\": value, ...}");
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true,\"mp_parameters\":{\"a\":1}}");
	assert_string_equal(build_error(f, NULL, (char *[]){ "SM_DLC_TORCH_VERSION=latest", NULL }),
			    "SM_DLC_TORCH_VERSION (smtd's environment): \"latest\" does not start with a major version number; set it as the image's PyTorch version (2.0.1) or unset it");
}

/* Processes per host: the GPUs, else the Neuron cores, else 1. */
static void test_neuron_cores(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;

	write_hp(f, "{\"sagemaker_torch_distributed_enabled\":true}");
	set_two_hosts(f, "algo-1", "ml.trn1.32xlarge");
	p = build(f, (char *[]){ "--", "./run", NULL }, NULL);
	assert_int_equal(smt_plan_processes_per_host(p), 1);
	assert_string_equal(env_value(smt_plan_envp(p), "SM_NUM_NEURONS"), "0");
	smt_plan_free(p);
	/* Two Trainium1 devices of 2 cores, one whose count cannot be read (2). */
	put(f, "gpu/dev/neuron0", "");
	put(f, "gpu/dev/neuron1", "");
	put(f, "gpu/dev/neuron12", "");
	put(f, "gpu/dev/neuron_x", "");
	put(f, "gpu/sys/devices/virtual/neuron_device/neuron0/core_count", "2\n");
	put(f, "gpu/sys/devices/virtual/neuron_device/neuron1/core_count", "2\n");
	put(f, "gpu/sys/devices/virtual/neuron_device/neuron1/info/architecture/device_name", "Trainium1\n");
	p = build(f, (char *[]){ "--", "./run", NULL }, NULL);
	assert_int_equal(smt_plan_processes_per_host(p), 6);
	assert_string_equal(env_value(smt_plan_envp(p), "SM_NUM_NEURONS"), "6");
	assert_non_null(strstr(env_value(smt_plan_envp(p), "SM_TRAINING_ENV"), "\"num_neurons\":6"));
	smt_plan_free(p);
	/* Trainium2: the logical cores, as neuron-ls reports them. */
	put(f, "gpu/sys/devices/virtual/neuron_device/neuron0/core_count", "8\n");
	put(f, "gpu/sys/devices/virtual/neuron_device/neuron0/info/architecture/device_name", "Trainium2\n");
	p = build(f, (char *[]){ "--", "./run", NULL }, NULL);
	assert_int_equal(smt_plan_processes_per_host(p), 4 + 2 + 2);
	smt_plan_free(p);
	p = build(f, (char *[]){ "--", "./run", NULL }, (char *[]){ "NEURON_LOGICAL_NC_CONFIG=1", NULL });
	assert_int_equal(smt_plan_processes_per_host(p), 8 + 2 + 2);
	smt_plan_free(p);
	/* GPUs first. */
	put(f, "gpu/dev/nvidia0", "");
	p = build(f, (char *[]){ "--", "./run", NULL }, NULL);
	assert_int_equal(smt_plan_processes_per_host(p), 1);
	assert_string_equal(env_value(smt_plan_envp(p), "SM_NUM_GPUS"), "1");
	smt_plan_free(p);
}

/* A code directory with setup.py or pyproject.toml is a package, run as a
 * module as the toolkit's PYTHON_PACKAGE entry point; a .sh program is a
 * command; a command after -- is run as it is. */
static void test_setup_py(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;

	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true}");
	set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	put(f, "code/setup.py", "from setuptools import setup\n");
	p = build(f, NULL, NULL);
	assert_string_equal(joined(smt_plan_rank_argv(p)), "python3 -m mpi4py -m train");
	smt_plan_free(p);
	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"lr\":0.5}");
	p = build(f, NULL, NULL);
	assert_string_equal(joined(smt_plan_rank_argv(p)), "python3 -m train --lr 0.5");
	smt_plan_free(p);
	write_hp(f, "{\"sagemaker_program\":\"run.sh\"}");
	p = build(f, NULL, NULL);
	assert_non_null(strstr(joined(smt_plan_rank_argv(p)), "/code/run.sh"));
	smt_plan_free(p);
	p = build(f, (char *[]){ "--", "python3", "-m", "mypkg.train", NULL }, NULL);
	assert_string_equal(joined(smt_plan_argv(p)), "python3 -m mypkg.train");
	smt_plan_free(p);
}

/* The smtctl and socket paths reach the other hosts' shell. */
static void test_remote_paths(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;
	const char *agent = NULL;

	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_mpi_enabled\":true}");
	set_two_hosts(f, "algo-1", "ml.c5.xlarge");
	p = build(f, (char *[]){ "--smtctl", "/opt/my tools/smtctl", "--socket", "/run/it's;here/s.sock", NULL }, NULL);
	for (char *const *a = smt_plan_argv(p); *a; a++)
		if (strcmp(*a, "orte_launch_agent") == 0)
			agent = a[1];
	assert_string_equal(agent, "/opt/my\\ tools/smtctl --socket /run/it\\'s\\;here/s.sock exec-orted orted");
	/* The launcher's words are argv words: as they are. */
	assert_string_equal(joined(smt_plan_launcher_argv(p)), "/opt/my tools/smtctl --socket /run/it's;here/s.sock rank --");
	smt_plan_free(p);
	assert_string_equal(build_error(f, (char *[]){ "--socket", "/run/$(reboot)/s.sock", NULL }, NULL),
			    "--socket (or SMTD_SOCKET): \"/run/$(reboot)/s.sock\" has '$', which the shell of the other hosts would interpret: the path reaches them on the command lines that ssh and mpirun's orte_launch_agent run there; choose a path without $ ` \" \\ or control characters");
	assert_string_equal(build_error(f, NULL, (char *[]){ "SMTD_SMTCTL=/opt/a\"b/smtctl", NULL }),
			    "--smtctl (or SMTD_SMTCTL): \"/opt/a\"b/smtctl\" has '\"', which the shell of the other hosts would interpret: the path reaches them on the command lines that ssh and mpirun's orte_launch_agent run there; choose a path without $ ` \" \\ or control characters");
	/* (A control character never gets this far: the options refuse it,
	 * test_options.c.) */
	/* One host, or standalone: nothing reaches another host's shell. */
	write_file(f, "resourceconfig.json", "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}");
	p = build(f, (char *[]){ "--socket", "/run/$x/s.sock", NULL }, NULL);
	assert_string_equal(joined(smt_plan_launcher_argv(p)), "" SMT_SMTCTL_DEFAULT " --socket /run/$x/s.sock rank --");
	smt_plan_free(p);
}

/* sagemaker_stall_timeout when no option says otherwise; "0" switches it off. */
static void test_stall_timeout(void **state)
{
	struct fixture *f = *state;
	struct smt_plan *p;

	write_hp(f, "{\"sagemaker_program\":\"train.py\",\"sagemaker_stall_timeout\":\"30\"}");
	p = build(f, NULL, NULL);
	assert_true(smt_plan_options(p)->stall_timeout == 30);
	smt_plan_free(p);
	p = build(f, (char *[]){ "--stall-timeout", "5", NULL }, NULL);
	assert_true(smt_plan_options(p)->stall_timeout == 5);
	smt_plan_free(p);
	p = build(f, NULL, (char *[]){ "SMTD_STALL_TIMEOUT=0", NULL });
	assert_true(smt_plan_options(p)->stall_timeout <= 0);
	smt_plan_free(p);
}

/* Floats as the toolkit (Python) writes them, in ARGS and SM_HP_*. */
static void test_floats(void **state)
{
	static const struct { double v; const char *text; } cases[] = {
		{ 0.1, "0.1" }, { 1e-5, "1e-05" }, { 123456.0, "123456.0" }, { 3.0, "3.0" },
		{ 1e16, "1e+16" }, { 1e15, "1000000000000000.0" }, { 0.1 + 0.2, "0.30000000000000004" },
		{ -2.5, "-2.5" }, { 0.0001, "0.0001" }, { 1.5e-7, "1.5e-07" }, { -0.0, "-0.0" },
		{ 2.5e300, "2.5e+300" },
	};
	struct fixture *f = *state;
	struct smt_plan *p;
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		smt_smenv_real(cases[i].v, out, sizeof(out));
		assert_string_equal(out, cases[i].text);
	}
	write_file(f, "resourceconfig.json", "{\"current_host\":\"a\",\"hosts\":[\"a\"]}");
	write_hp(f, "{\"sagemaker_program\":\"t.py\",\"lr\":\"0.1\",\"decay\":1e-5,\"n\":\"3\",\"w\":\"2.0\"}");
	p = build(f, NULL, NULL);
	assert_string_equal(rooted(f, joined(smt_plan_argv(p))),
			    "python3 ROOT/code/t.py --decay 1e-05 --lr 0.1 -n 3 -w 2.0");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HP_LR"), "0.1");
	assert_string_equal(env_value(smt_plan_envp(p), "SM_HP_W"), "2.0");
	smt_plan_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_group_and_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_program, setup, teardown),
		cmocka_unit_test_setup_teardown(test_launch_choice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsupported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torchrun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_smddp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_setting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modelparallel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_neuron_cores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_setup_py, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_floats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_timeout, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
