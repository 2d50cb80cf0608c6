/* test_preflight.c - the built-in checks on a probe root, sizes, the
 * instance type tables, what the toolkit installs. */
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "install.h"
#include "preflight.h"

static char root[64];

static void mk(const char *rel)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	assert_int_equal(system(cmd), 0);
}

static void touch(const char *rel)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/smt-preflight.XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static void test_sizes(void **state)
{
	char err[256];
	uint64_t v = 7;

	(void)state;
	assert_int_equal(smt_preflight_parse_size("--min-shm", "0", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0);
	assert_int_equal(smt_preflight_parse_size("--min-shm", "1536", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(smt_preflight_parse_size("--min-shm", "512K", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 512 * 1024);
	assert_int_equal(smt_preflight_parse_size("--min-shm", "64m", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(smt_preflight_parse_size("--min-shm", "2G", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 2ULL << 30);
	const char *bad[] = { "", "G", "1.5G", "1GB", "-1", "1 G", " 1G", "1T", "0x10",
			      "9999999999999999", NULL };
	for (const char **b = bad; *b; b++) {
		assert_int_equal(smt_preflight_parse_size("--min-shm", *b, &v, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "--min-shm: '"));
		assert_non_null(strstr(err, "' is not a size (a number of bytes with an optional K, "
					    "M or G suffix, 1024-based, like 512M or 2G; 0 turns the "
					    "check off)"));
	}
	char words[32];
	smt_preflight_size_words(64ULL << 20, words, sizeof(words));
	assert_string_equal(words, "64 MiB");
	smt_preflight_size_words(1536, words, sizeof(words));
	assert_string_equal(words, "1.5 KiB");
	smt_preflight_size_words(100, words, sizeof(words));
	assert_string_equal(words, "100 bytes");
}

static void test_types(void **state)
{
	(void)state;
	assert_int_equal(smt_preflight_type_gpus("ml.p4d.24xlarge"), 8);
	assert_int_equal(smt_preflight_type_efa("ml.p4d.24xlarge"), 4);
	assert_int_equal(smt_preflight_type_efa("ml.p5.48xlarge"), 32);
	assert_int_equal(smt_preflight_type_gpus("ml.g5.xlarge"), 1);
	assert_int_equal(smt_preflight_type_efa("ml.g5.xlarge"), 0);
	/* The toolkit's EFA type not in the table: at least one device. */
	assert_int_equal(smt_preflight_type_efa("ml.p6e-gb200.36xlarge"), 1);
	assert_int_equal(smt_preflight_type_gpus("ml.m5.xlarge"), 0);
	assert_int_equal(smt_preflight_type_efa("ml.m5.xlarge"), 0);
	assert_int_equal(smt_preflight_type_gpus(NULL), 0);
}

static int run(const char *type, char *fail, long *gpus, json_t **checks)
{
	struct smt_preflight_config c = {
		.probe_root = root, .instance_type = type, .gpu_check = 1, .efa_check = 1,
	};

	*checks = json_array();
	return smt_preflight_builtin(&c, *checks, gpus, fail, 512);
}

static void test_gpus(void **state)
{
	char fail[512], p[256];
	json_t *checks;
	long gpus;

	(void)state;
	mk("dev");
	/* Regular files are not device nodes: none of 4 is there. */
	touch("dev/nvidia0");
	assert_int_equal(run("ml.p3.8xlarge", fail, &gpus, &checks), -1);
	assert_string_equal(fail, "0 of 4 GPUs visible (no /dev/nvidia0)");
	json_decref(checks);
	unlink(strcat(strcpy(p, root), "/dev/nvidia0"));
	if (geteuid() != 0) {
		skip();
		return;
	}
	for (int i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		snprintf(p, sizeof(p), "%s/dev/nvidia%d", root, i);
		assert_int_equal(mknod(p, S_IFCHR | 0600, makedev(1, 3)), 0);
	}
	assert_int_equal(run("ml.p3.8xlarge", fail, &gpus, &checks), -1);
	assert_string_equal(fail, "3 of 4 GPUs visible (no /dev/nvidia2)");
	assert_int_equal(gpus, 3);
	json_decref(checks);
	snprintf(p, sizeof(p), "%s/dev/nvidia2", root);
	assert_int_equal(mknod(p, S_IFCHR | 0600, makedev(1, 3)), 0);
	/* The driver lists fewer than the nodes: a GPU fell off the bus. */
	mk("proc/driver/nvidia/gpus/0000:00:1a.0");
	mk("proc/driver/nvidia/gpus/0000:00:1b.0");
	mk("proc/driver/nvidia/gpus/0000:00:1c.0");
	assert_int_equal(run("ml.p3.8xlarge", fail, &gpus, &checks), -1);
	assert_string_equal(fail, "3 of 4 GPUs visible (/proc/driver/nvidia/gpus lists 3)");
	json_decref(checks);
	mk("proc/driver/nvidia/gpus/0000:00:1d.0");
	assert_int_equal(run("ml.p3.8xlarge", fail, &gpus, &checks), 0);
	assert_int_equal(gpus, 4);
	assert_string_equal(json_string_value(json_object_get(json_array_get(checks, 0), "detail")),
			    "4 of 4 GPUs visible");
	json_decref(checks);
	/* A type smtd does not know: counted for the leader, not checked. */
	assert_int_equal(run("ml.m5.xlarge", fail, &gpus, &checks), 0);
	assert_int_equal(gpus, 4);
	assert_int_equal(json_array_size(checks), 0);
	json_decref(checks);
}

static void test_efa(void **state)
{
	char fail[512], p[512];
	json_t *checks;
	long gpus;

	(void)state;
	assert_int_equal(run("ml.trn1.32xlarge", fail, &gpus, &checks), -1);
	assert_string_equal(fail, "0 of 8 EFA devices of ml.trn1.32xlarge (/sys/class/infiniband/* bound to the efa driver); without them the job runs over TCP or hangs");
	json_decref(checks);
	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "sys/class/infiniband/rdmap%ds0/device", i);
		mk(p);
		snprintf(p, sizeof(p), "%s/sys/class/infiniband/rdmap%ds0/device/driver", root, i);
		/* One of another driver does not count. */
		assert_int_equal(symlink(i == 5 ? "../../../bus/pci/drivers/mlx5_core"
					      : "../../../bus/pci/drivers/efa", p), 0);
	}
	assert_int_equal(run("ml.trn1.32xlarge", fail, &gpus, &checks), -1);
	assert_non_null(strstr(fail, "7 of 8 EFA devices of ml.trn1.32xlarge"));
	json_decref(checks);
	assert_int_equal(run("ml.p4d.24xlarge", fail, &gpus, &checks), -1);
	/* The GPUs fail first: the first failure is named. */
	assert_string_equal(fail, "0 of 8 GPUs visible (no /dev/nvidia0)");
	assert_int_equal(json_array_size(checks), 2);
	json_decref(checks);
}

static void test_shm_disk(void **state)
{
	struct smt_preflight_config c = { .probe_root = root, .min_shm = 1ULL << 62 };
	const char *dirs[] = { root, "/nonexistent/dir", NULL };
	char fail[512];
	json_t *checks = json_array();
	long gpus;

	(void)state;
	mk("dev/shm");
	/* Not fatal: a warning in the checks, and it passes. */
	assert_int_equal(smt_preflight_builtin(&c, checks, &gpus, fail, sizeof(fail)), 0);
	assert_true(json_is_true(json_object_get(json_array_get(checks, 0), "warning")));
	json_decref(checks);
	c.shm_fatal = 1;
	checks = json_array();
	assert_int_equal(smt_preflight_builtin(&c, checks, &gpus, fail, sizeof(fail)), -1);
	assert_non_null(strstr(fail, ", less than --min-shm 4096 PiB") ||
			strstr(fail, ", less than --min-shm 4194304 TiB"));
	json_decref(checks);
	c.min_shm = 0;
	c.min_free_disk = 1ULL << 62;
	c.disk_dirs = dirs;
	checks = json_array();
	assert_int_equal(smt_preflight_builtin(&c, checks, &gpus, fail, sizeof(fail)), -1);
	assert_int_equal(strncmp(fail, root, strlen(root)), 0);
	assert_non_null(strstr(fail, " free, less than --min-free-disk "));
	/* A directory that does not exist is not checked. */
	assert_int_equal(json_array_size(checks), 1);
	json_decref(checks);
}

static void test_install(void **state)
{
	const char *const *argv;
	char dir[256];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/code", root);
	mk("code");
	assert_null(smt_install_argv(dir, "train.py"));
	assert_null(smt_install_argv(dir, NULL));
	touch("code/requirements.txt");
	argv = smt_install_argv(dir, "train.py");
	assert_non_null(argv);
	assert_string_equal(argv[3], "install");
	assert_string_equal(argv[4], "-r");
	/* Not Python: the toolkit installs nothing for a command. */
	assert_null(smt_install_argv(dir, "run.sh"));
	assert_null(smt_install_argv(dir, "train"));
	touch("code/pyproject.toml");
	assert_true(smt_install_is_package(dir, "train.py"));
	assert_true(smt_install_is_package(dir, "train"));
	assert_false(smt_install_is_package(dir, "run.sh"));
	argv = smt_install_argv(dir, "train.py");
	assert_string_equal(argv[4], ".");
	assert_string_equal(argv[5], "-r");
	assert_string_equal(argv[6], "requirements.txt");
	assert_null(argv[7]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_types),
		cmocka_unit_test_setup_teardown(test_gpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_efa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shm_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_install, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
