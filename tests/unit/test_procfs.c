/* test_procfs.c - the job's mark found anywhere in /proc/PID/environ
 * (daemon/procfs.h), after 300 KiB of hyperparameters, across the reading
 * window's edges, and not mistaken in an entry that only starts like it.
 * A fake /proc tree (smt_proc_has_env's PROC argument). */
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
#include <unistd.h>

#include "procfs.h"

static char dir[] = "/tmp/smt-procenv-XXXXXX";

/* PID's environ: FILL bytes of SM_HPS={"x": "yyy..."} first, then ENTRIES
 * (NUL-separated, as given), with LAST_NUL or not. */
static void write_env(int pid, size_t fill, const char *const *entries, int last_nul)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d", dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/environ", dir, pid);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("PATH=/usr/bin", f);
	fputc('\0', f);
	if (fill) {
		fputs("SM_HPS={\"x\": \"", f);
		for (size_t i = 0; i < fill; i++)
			fputc('y', f);
		fputs("\"}", f);
		fputc('\0', f);
	}
	for (size_t i = 0; entries[i]; i++) {
		fputs(entries[i], f);
		if (entries[i + 1] || last_nul)
			fputc('\0', f);
	}
	fclose(f);
}

static void test_mark_after_large_env(void **state)
{
	const char *const mark[] = { "SM_TRAINING_ENV=x", "SMTD_JOB=abc", NULL };
	const char *const near[] = { "SMTD_JOB=abcd", "SMTD_JOB", NULL };

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* Fills that put the mark before, across and after 64 KiB edges. */
	const size_t fills[] = { 0, 100, 65536 - 40, 65536 - 20, 65536, 300 * 1024, 131072 - 30 };
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
		write_env(100, fills[i], mark, i % 2);
		assert_int_equal(smt_proc_has_env(dir, 100, "SMTD_JOB=abc"), 1);
		assert_int_equal(smt_proc_has_env(dir, 100, "SMTD_JOB="), 1);
		assert_int_equal(smt_proc_has_env(dir, 100, "SM_HPS="), fills[i] ? 1 : 0);
		assert_int_equal(smt_proc_has_env(dir, 100, "SMTD_JOB=ab"), 0);
		write_env(101, fills[i], near, i % 2);
		assert_int_equal(smt_proc_has_env(dir, 101, "SMTD_JOB=abc"), 0);
		assert_int_equal(smt_proc_has_env(dir, 101, "SMTD_JOB="), 1);
	}
	/* An entry longer than the window that merely starts like the mark. */
	const char *const none[] = { "PATH=/bin", NULL };
	write_env(102, 200 * 1024, none, 1);
	assert_int_equal(smt_proc_has_env(dir, 102, "SM_HPS={\"x\""), 0);
	assert_int_equal(smt_proc_has_env(dir, 102, "PATH=/bin"), 1);
	assert_int_equal(smt_proc_has_env(dir, 103, "PATH=/bin"), -ESRCH);
}

/* Also after a failed assertion: nothing is left in /tmp. */
static int teardown(void **state)
{
	char p[128];

	(void)state;
	for (int pid = 100; pid <= 102; pid++) {
		snprintf(p, sizeof(p), "%s/%d/environ", dir, pid);
		unlink(p);
		snprintf(p, sizeof(p), "%s/%d", dir, pid);
		rmdir(p);
	}
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark_after_large_env),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
