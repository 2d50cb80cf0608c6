/*
 * test_rankd.c - rankd (rankd.h) and a launcher whose connection ends
 * in an error, on a real libuv loop.
 *
 * A launcher that goes away with smtd's answer still unread makes smtd's
 * next recvmsg() on its connection fail (ECONNRESET).  When that happens
 * between the loop's poll, which said the connection had a message, and
 * the recvmsg(), the kernel writes no control data, and the control buffer
 * holds what an earlier recvmsg() left there: another launcher's
 * descriptors, which smtd has handed on as that rank's output.  Taking
 * them for this peer's and closing them cut another rank's output off.
 * Here, in one turn of the loop: launcher A's hello (its descriptors are
 * the last control data received) and launcher B's end of writing (B has
 * an answer it did not read); while A's hello is handled, B goes.  A's descriptors, held by the hello callback, must stay open, and
 * B's connection is closed as a hang-up.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "rankd.h"

struct env {
	int hellos, hangups;
	int fds[2][2]; /* per rank: the stdout and stderr smtd took */
	int close_on_hello; /* closed when rank 0 says hello, unless -1 */
};

static int admit(void *ctx, pid_t launcher, int rank, char *why, size_t len)
{
	(void)ctx, (void)launcher, (void)rank, (void)why, (void)len;
	return 0;
}

/* As the host's job does: the rank's output descriptors are kept. */
static json_t *hello(void *ctx, int rank, pid_t launcher, int out_fd, int err_fd)
{
	struct env *e = ctx;

	(void)launcher;
	assert_true(rank == 0 || rank == 1);
	e->fds[rank][0] = out_fd;
	e->fds[rank][1] = err_fd;
	e->hellos++;
	if (rank == 0 && e->close_on_hello >= 0) {
		close(e->close_on_hello);
		e->close_on_hello = -1;
	}
	return json_object();
}

static void started(void *ctx, int rank, pid_t pid, unsigned long long start)
{
	(void)ctx, (void)rank, (void)pid, (void)start;
}

static void exited(void *ctx, int rank, int wstatus, int exec_errno, int64_t end_ms,
		   long long maxrss_kb)
{
	(void)ctx, (void)rank, (void)wstatus, (void)exec_errno, (void)end_ms, (void)maxrss_kb;
}

static void hangup(void *ctx, int rank)
{
	struct env *e = ctx;

	/* B's end counts only as the loop sees it after A's hello. */
	assert_int_equal(rank, 1);
	assert_int_equal(e->hellos, 2);
	e->hangups++;
}

static const struct smt_rankd_ops ops = {
	.admit = admit, .hello = hello, .started = started, .exited = exited, .hangup = hangup,
};

static void run_until(uv_loop_t *loop, const int *count, int want, const char *what)
{
	for (int i = 0; i < 5000 && *count < want; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		if (*count < want)
			usleep(1000);
	}
	if (*count < want)
		fail_msg("timed out waiting for %s", what);
}

static int launcher(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, path);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return c;
}

/* Launcher C's hello for RANK with two pipes' read ends (closed here once
 * sent: smtd has its own). */
static void say_hello(int c, int rank)
{
	char msg[64];
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { msg, 0 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm;
	int p[2], q[2], fds[2];

	iov.iov_len = (size_t)snprintf(msg, sizeof(msg), "{\"op\":\"hello\",\"rank\":%d}", rank);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(pipe2(q, O_CLOEXEC), 0);
	fds[0] = p[0];
	fds[1] = q[0];
	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	assert_int_equal(sendmsg(c, &mh, 0), (ssize_t)iov.iov_len);
	close(p[0]), close(p[1]), close(q[0]), close(q[1]);
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static void test_recv_error_closes_no_other_ranks_fds(void **state)
{
	char dir[] = "/tmp/test_rankd.XXXXXX", path[128];
	struct env e = { .close_on_hello = -1 };
	struct smt_rankd *rd;
	uv_loop_t loop;
	int a, b;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/smtd.sock.ranks", dir);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_rankd_listen(&loop, path, &ops, &e, &rd), 0);

	/* A is accepted; B says hello and leaves the answer unread. */
	a = launcher(path);
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	b = launcher(path);
	say_hello(b, 1);
	run_until(&loop, &e.hellos, 1, "rank 1's hello");
	/* Until B, read to its end, is off epoll's ready list. */
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	/* Both readable at the next poll: A's hello, then B's end of writing
	 * (nothing to read, and no error yet); B goes while A's hello is
	 * handled, and its error comes with smtd's recvmsg. */
	e.close_on_hello = b;
	say_hello(a, 0);
	assert_int_equal(shutdown(b, SHUT_WR), 0);
	run_until(&loop, &e.hellos, 2, "rank 0's hello");
	assert_int_equal(e.close_on_hello, -1);
	run_until(&loop, &e.hangups, 1, "rank 1's hang-up");
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_true(is_open(e.fds[0][0]));
	assert_true(is_open(e.fds[0][1]));
	assert_true(is_open(e.fds[1][0]));
	assert_true(is_open(e.fds[1][1]));
	assert_int_equal(e.hangups, 1);

	close(a);
	smt_rankd_close(rd);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	for (int r = 0; r < 2; r++)
		close(e.fds[r][0]), close(e.fds[r][1]);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recv_error_closes_no_other_ranks_fds),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
