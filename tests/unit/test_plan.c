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
	char p[512];
	const char *files[] = { "input/config/resourceconfig.json", "input/config/hyperparameters.json",
				"input/config/inputdataconfig.json", "gpu/proc/driver/nvidia/gpus/0",
				"gpu/proc/driver/nvidia/gpus/1", "gpu/proc/driver/nvidia/gpus/2", NULL };
	const char *dirs[] = { "gpu/proc/driver/nvidia/gpus", "gpu/proc/driver/nvidia",
			       "gpu/proc/driver", "gpu/proc", "gpu", "input/config", "input", NULL };

	for (int i = 0; files[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, files[i]);
		unlink(p);
	}
	for (int i = 0; dirs[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, dirs[i]);
		rmdir(p);
	}
	rmdir(f->dir);
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
	env[n] = NULL;
	assert_int_equal(smt_options_parse(&o, argc, full, env, err, sizeof(err)), 0);
	rc = smt_plan_build(&o, env, &plan, err, sizeof(err));
	if (rc != 0)
		fail_msg("plan: %s", err);
	return plan;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_group_and_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_program, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
