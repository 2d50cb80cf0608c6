/* test_cgroup.c - the OOM-kill counter on fake cgroup v1 and v2 trees. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"

static char dir[256];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(cmd, sizeof(cmd), "%s", path);
	*strrchr(cmd, '/') = '\0';
	/* mkdir -p without a shell */
	for (char *p = cmd + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(cmd, 0755);
		*p = '/';
	}
	mkdir(cmd, 0755);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/smt-cg-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char *argv[] = { "rm", "-rf", dir, NULL };
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}

static void test_v2(void **state)
{
	char sys[300], self[300];
	long n = -1;
	(void)state;
	put("sys/job/a/memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n");
	put("self", "0::/job/a\n");
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(self, sizeof(self), "%s/self", dir);
	assert_int_equal(smt_cgroup_oom_kills(sys, self, &n), 0);
	assert_int_equal(n, 2);
}

static void test_v2_namespaced(void **state)
{
	char sys[300], self[300];
	long n = -1;
	(void)state;
	/* A cgroup namespace shows our cgroup at the mount point itself. */
	put("sys/memory.events", "oom 0\noom_kill 7\n");
	put("self", "0::/outside/our/view\n");
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(self, sizeof(self), "%s/self", dir);
	assert_int_equal(smt_cgroup_oom_kills(sys, self, &n), 0);
	assert_int_equal(n, 7);
}

static void test_v1(void **state)
{
	char sys[300], self[300];
	long n = -1;
	(void)state;
	put("sys/memory/process_api/x/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	put("self", "9:name=systemd:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n");
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(self, sizeof(self), "%s/self", dir);
	assert_int_equal(smt_cgroup_oom_kills(sys, self, &n), 0);
	assert_int_equal(n, 3);
}

static void test_none(void **state)
{
	char sys[300], self[300];
	long n = -1;
	(void)state;
	put("self", "1:cpu:/\n0::/\n");
	snprintf(sys, sizeof(sys), "%s/empty", dir);
	snprintf(self, sizeof(self), "%s/self", dir);
	assert_int_equal(smt_cgroup_oom_kills(sys, self, &n), -ENOENT);
	assert_int_equal(n, -1);
	snprintf(self, sizeof(self), "%s/missing", dir);
	assert_int_equal(smt_cgroup_oom_kills(sys, self, &n), -ENOENT);
}

/* The limit that applies is the smallest of the cgroup's and its
 * ancestors'; "max" and v1's huge "no limit" are none. */
static void test_memory_limit(void **state)
{
	char sys[300], self[300];
	long long b = -1;
	(void)state;
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(self, sizeof(self), "%s/self", dir);
	put("sys/memory.max", "max\n");
	put("sys/job/memory.max", "268435456\n");
	put("sys/job/a/memory.max", "max\n");
	put("sys/job/a/b/memory.max", "536870912\n");
	put("self", "0::/job/a/b\n");
	assert_int_equal(smt_cgroup_memory_limit(sys, self, &b), 0);
	assert_int_equal(b, 268435456);
	put("self", "0::/\n");
	assert_int_equal(smt_cgroup_memory_limit(sys, self, &b), 0);
	assert_int_equal(b, 0);
	/* v1, seen from inside: the path is outside the mount's view. */
	put("v1/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("v1/memory/process_api/x/memory.limit_in_bytes", "67108864\n");
	snprintf(sys, sizeof(sys), "%s/v1", dir);
	snprintf(self, sizeof(self), "%s/cg", dir);
	put("cg", "4:memory:/process_api/x\n0::/\n");
	assert_int_equal(smt_cgroup_memory_limit(sys, self, &b), 0);
	assert_int_equal(b, 67108864);
	put("cg", "4:memory:/elsewhere\n");
	assert_int_equal(smt_cgroup_memory_limit(sys, self, &b), 0);
	assert_int_equal(b, 0);
	put("cg", "1:cpu:/\n");
	assert_int_equal(smt_cgroup_memory_limit(sys, self, &b), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_namespaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_limit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
