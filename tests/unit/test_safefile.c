/*
 * test_safefile.c - the hostfile as smtd writes it (safefile.h): in the
 * control socket's directory, which the job may be able to write, with
 * smt_safefile_open(..., SMT_SAFEFILE_TRUNCATE, 0644), as the leader's
 * write_hostfile does.  What someone else put at the name is never written
 * through and never blocks: a symbolic link (also a dangling one, which
 * would create its target), a FIFO, another user's file, a hard link to a
 * file elsewhere.  A fresh file is smtd's, mode 0644 under the umask; smtd's
 * own file of an earlier run is truncated and written again.  (The
 * --rank-log-dir files use the same function, appending: hostile_ranklog.)
 */
#define _GNU_SOURCE
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
#include <sys/stat.h>
#include <unistd.h>

#include "safefile.h"

#define CONTENTS "algo-1 slots=8\nalgo-2 slots=8\n"

static char dir[] = "/tmp/test_safefile.XXXXXX";
static char path[256], other[256];

static void on_alarm(int sig)
{
	(void)sig;
	/* A blocked open: the FIFO case failed. */
	static const char msg[] = "the hostfile's open blocked on a FIFO\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/hostfile", dir);
	snprintf(other, sizeof(other), "%s/elsewhere", dir);
	umask(022);
	return 0;
}

/* Before each test: what a failed one left. */
static int clean(void **state)
{
	(void)state;
	unlink(path);
	unlink(other);
	return 0;
}

static int teardown(void **state)
{
	clean(state);
	rmdir(dir);
	return 0;
}

/* Write CONTENTS as write_hostfile does; the open's result. */
static int write_hostfile(void)
{
	int fd = smt_safefile_open(AT_FDCWD, path, SMT_SAFEFILE_TRUNCATE, 0644);

	if (fd < 0)
		return fd;
	assert_int_equal(write(fd, CONTENTS, strlen(CONTENTS)), (ssize_t)strlen(CONTENTS));
	close(fd);
	return 0;
}

static void put(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_file(const char *p, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(p, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, text);
}

static void test_fresh_and_again(void **state)
{
	struct stat st;

	(void)state;
	assert_int_equal(write_hostfile(), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_nlink, 1);
	assert_file(path, CONTENTS);
	/* An earlier run's longer file of smtd's own: truncated, written. */
	put(path, CONTENTS CONTENTS "algo-3 slots=8\n");
	assert_int_equal(write_hostfile(), 0);
	assert_file(path, CONTENTS);
	unlink(path);
}

static void test_link_not_followed(void **state)
{
	(void)state;
	put(other, "precious\n");
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(write_hostfile(), -ELOOP);
	assert_file(other, "precious\n");
	unlink(path);
	/* A dangling link would create the file it names. */
	unlink(other);
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(write_hostfile(), -ELOOP);
	assert_int_equal(access(other, F_OK), -1);
	unlink(path);
}

static void test_fifo_never_blocks(void **state)
{
	(void)state;
	assert_int_equal(mkfifo(path, 0666), 0);
	signal(SIGALRM, on_alarm);
	alarm(5);
	assert_int_equal(write_hostfile(), -EINVAL);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	unlink(path);
}

static void test_hard_link_left_alone(void **state)
{
	(void)state;
	put(other, "precious\n");
	assert_int_equal(link(other, path), 0);
	assert_int_equal(write_hostfile(), -EPERM);
	assert_file(other, "precious\n");
	unlink(path);
	unlink(other);
}

static void test_other_users_file_left_alone(void **state)
{
	struct stat st;

	(void)state;
	if (geteuid() != 0)
		skip();
	put(path, "mine\n");
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(write_hostfile(), -EPERM);
	assert_file(path, "mine\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fresh_and_again, clean),
		cmocka_unit_test_setup(test_link_not_followed, clean),
		cmocka_unit_test_setup(test_hard_link_left_alone, clean),
		cmocka_unit_test_setup(test_other_users_file_left_alone, clean),
		/* Last: the old open blocked here for good (an alarm ends it). */
		cmocka_unit_test_setup(test_fifo_never_blocks, clean),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
