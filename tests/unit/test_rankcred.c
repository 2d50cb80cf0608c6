/* test_rankcred.c - files a hostile rank names in its traceback, read as
 * the rank (daemon/rankcred.h, daemon/pystack.h): real files, a real FIFO,
 * /dev/zero, a link, a root-only file, a file too large, and uid 65534.
 * Needs root (smtd's case); skipped otherwise.  An alarm turns a hang
 * (the FIFO of the old code) into a failure. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pystack.h"
#include "rankcred.h"

static char dir[] = "/tmp/smt-rankcred-XXXXXX";
static const struct smt_rankcred nobody = { .uid = 65534, .gid = 65534, .ngroups = 0 };

static void path_of(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

static void put_file(const char *name, const char *text, mode_t mode, uid_t uid)
{
	char p[256];
	FILE *f;

	path_of(p, sizeof(p), name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
	assert_int_equal(chown(p, uid, uid), 0);
}

static int setup(void **state)
{
	char p[256];

	(void)state;
	if (geteuid() != 0)
		return 0;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	put_file("train.py", "import os\n    os.abort()  \n", 0644, 65534);
	put_file("secret", "root's key\nline two\n", 0600, 0);
	path_of(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0666), 0);
	path_of(p, sizeof(p), "link");
	assert_int_equal(symlink("secret", p), 0);
	/* A line 2 past 9 MiB of one line: beyond the budget. */
	path_of(p, sizeof(p), "huge.py");
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	for (int i = 0; i < 9 * 1024; i++)
		for (int j = 0; j < 1024; j++)
			fputc('x', f);
	fputs("\nfar_away()\n", f);
	fclose(f);
	assert_int_equal(chmod(p, 0644), 0);
	alarm(20);
	return 0;
}

static int teardown(void **state)
{
	const char *names[] = { "train.py", "secret", "fifo", "link", "huge.py" };
	char p[256];

	(void)state;
	if (geteuid() != 0)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_of(p, sizeof(p), names[i]);
		unlink(p);
	}
	rmdir(dir);
	return 0;
}

static void test_open(void **state)
{
	char p[256];
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	path_of(p, sizeof(p), "train.py");
	fd = smt_rankcred_open(&nobody, p);
	assert_true(fd >= 0);
	close(fd);
	path_of(p, sizeof(p), "secret");
	assert_int_equal(smt_rankcred_open(&nobody, p), -EACCES);
	fd = smt_rankcred_open(NULL, p);
	assert_true(fd >= 0);
	close(fd);
	path_of(p, sizeof(p), "link");
	assert_int_equal(smt_rankcred_open(NULL, p), -ELOOP);
	path_of(p, sizeof(p), "fifo");
	assert_int_equal(smt_rankcred_open(&nobody, p), -EINVAL);
	assert_int_equal(smt_rankcred_open(NULL, p), -EINVAL);
	assert_int_equal(smt_rankcred_open(&nobody, "/dev/zero"), -EINVAL);
	/* smtd is itself again afterwards */
	assert_int_equal(setfsuid((uid_t)-1), 0);
	assert_int_equal(setfsgid((gid_t)-1), 0);
}

/* A dump whose frames name what a rank would like smtd to read for it. */
static void test_hostile_frames(void **state)
{
	char text[2048], *out;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(text, sizeof(text),
		 "Current thread 0x00007f00 (most recent call first):\n"
		 "  File \"train.py\", line 2 in f\n"
		 "  File \"%s/secret\", line 1 in a\n"
		 "  File \"%s/fifo\", line 1 in b\n"
		 "  File \"/dev/zero\", line 2 in c\n"
		 "  File \"%s/link\", line 1 in d\n"
		 "  File \"%s/huge.py\", line 2 in e\n",
		 dir, dir, dir, dir);
	assert_int_equal(smt_pystack_add_source(text, strlen(text), dir, &nobody, &out), 0);
	/* Only the rank's own file gets its line; nothing else is added
	 * (huge.py's line 2 lies past the 8 MiB read for a dump). */
	char want[2048], *at = strchr(text, '\n') + 1;
	at = strchr(at, '\n') + 1;
	snprintf(want, sizeof(want), "%.*s    os.abort()\n%s", (int)(at - text), text, at);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(setfsuid((uid_t)-1), 0);
}

/* The rank's own readable file, through a directory it may enter. */
static void test_rank_reads_own(void **state)
{
	char text[512], *out;
	struct smt_rankcred me;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(smt_rankcred_of(NULL, getpid(), &me), 0);
	assert_int_equal(me.uid, 0);
	assert_true(me.privileged);
	assert_int_equal(smt_rankcred_of(NULL, 999999999, &me), -ESRCH);
	snprintf(text, sizeof(text), "  File \"%s/secret\", line 2 in a\n", dir);
	assert_int_equal(smt_pystack_add_source(text, strlen(text), NULL, NULL, &out), 0);
	assert_non_null(strstr(out, "    line two\n"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_hostile_frames),
		cmocka_unit_test(test_rank_reads_own),
	};

	signal(SIGALRM, SIG_DFL);
	return cmocka_run_group_tests(tests, setup, teardown);
}
