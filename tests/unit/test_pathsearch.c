/* test_pathsearch.c - execvp()'s search of PATH, without the exec. */
#include "config.h"

#include <errno.h>
#include <limits.h>
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

#include "pathsearch.h"

static char dir[] = "/tmp/test_pathsearch.XXXXXX";

static void put(const char *rel, mode_t mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	char path[512];

	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	const char *dirs[] = { "a", "b", "b/sub" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, dirs[i]);
		if (mkdir(path, 0755) < 0)
			return -1;
	}
	put("a/noexec", 0644);
	put("b/noexec", 0755);
	put("a/only-a", 0755);
	put("b/tool", 0755);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_search(void **state)
{
	char path_var[600], out[PATH_MAX], want[600];
	char *envp[] = { path_var, NULL };

	(void)state;
	snprintf(path_var, sizeof(path_var), "PATH=%s/a:%s/b", dir, dir);
	/* The first executable file wins: a/noexec is skipped. */
	assert_int_equal(smt_path_find("noexec", envp, NULL, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/b/noexec", dir);
	assert_string_equal(out, want);
	assert_int_equal(smt_path_find("only-a", envp, NULL, NULL, 0), 0);
	assert_int_equal(smt_path_find("missing", envp, NULL, out, sizeof(out)), -ENOENT);
	/* A directory is not a program. */
	assert_int_equal(smt_path_find("sub", envp, NULL, out, sizeof(out)), -EACCES);
	/* Only a file that cannot be executed: EACCES, as execvp() reports it. */
	snprintf(path_var, sizeof(path_var), "PATH=%s/a", dir);
	assert_int_equal(smt_path_find("noexec", envp, NULL, out, sizeof(out)), -EACCES);
	/* Too small an output buffer. */
	snprintf(path_var, sizeof(path_var), "PATH=%s/b", dir);
	assert_int_equal(smt_path_find("tool", envp, NULL, out, 4), -ENAMETOOLONG);
	assert_int_equal(smt_path_find("", envp, NULL, out, sizeof(out)), -ENOENT);
	assert_int_equal(smt_path_find(NULL, envp, NULL, out, sizeof(out)), -ENOENT);
}

static void test_slash_and_cwd(void **state)
{
	char path_var[] = "PATH=/nonexistent";
	char *envp[] = { path_var, NULL };
	char prog[600], out[PATH_MAX], want[600];

	(void)state;
	snprintf(prog, sizeof(prog), "%s/b/tool", dir);
	assert_int_equal(smt_path_find(prog, envp, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, prog);
	/* A relative name with a '/' is taken from CWD, never from PATH. */
	assert_int_equal(smt_path_find("b/tool", envp, dir, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/b/tool", dir);
	assert_string_equal(out, want);
	assert_int_equal(smt_path_find("b/missing", envp, dir, out, sizeof(out)), -ENOENT);
	/* An empty element of PATH is the current directory. */
	snprintf(want, sizeof(want), "%s/b", dir);
	assert_int_equal(chdir(want), 0);
	char empty[] = "PATH=/nonexistent::";
	char *envp2[] = { empty, NULL };
	assert_int_equal(smt_path_find("tool", envp2, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "./tool");
	assert_int_equal(chdir("/"), 0);
}

static void test_default_path(void **state)
{
	char *envp[] = { "HOME=/root", NULL };
	char out[PATH_MAX];

	(void)state;
	/* Without PATH: smtd's default, which has /bin/sh's directory. */
	assert_int_equal(smt_path_find("sh", envp, NULL, out, sizeof(out)), 0);
	assert_int_equal(smt_path_find("sh", NULL, NULL, out, sizeof(out)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search),
		cmocka_unit_test(test_slash_and_cwd),
		cmocka_unit_test(test_default_path),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
