/*
 * test_ranktty.c - a rank's stdout as a pseudo-terminal (client/ranktty.h,
 * smtd(8) OUTPUT), on a real libuv loop with real ptys:
 *  - smtctl_rank_pty gives a raw pty nobody controls;
 *  - the output hub (output.h) takes every byte a rank wrote to the pty,
 *    its last ones included, after the rank closed it (a read of a pty
 *    gives at most 4 KiB, and libuv took a short read with POLLHUP for the
 *    end), and its end (EIO) is no error;
 *  - rankd (rankd.h) takes a pty's master or a pipe as stdout and a pipe as
 *    stderr, and refuses anything else with one line.
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
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "dynbuf.h"
#include "output.h"
#include "rankd.h"
#include "ranks.h"
#include "ranktty.h"
#include "smt_proto.h"

#define HOST "algo-1"
#define TAG "[1,mpirank:0,algo-1]<stdout>: "
#define LONG_LINE 100000

static void run_until(uv_loop_t *loop, const int *flag, const char *what)
{
	for (int i = 0; i < 20000 && !*flag; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		if (!*flag)
			usleep(1000);
	}
	if (!*flag)
		fail_msg("timed out waiting for %s", what);
}

/* ---- smtctl_rank_pty ---- */

static void test_pty_raw_nobodys(void **state)
{
	struct termios t;
	int m, s, n;
	pid_t sid;

	(void)state;
	assert_int_equal(smtctl_rank_pty(&m, &s), 0);
	assert_true(fcntl(m, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(s, F_GETFD) & FD_CLOEXEC);
	assert_true(isatty(s));
	assert_int_equal(ioctl(m, TIOCGPTN, &n), 0);
	assert_int_equal(tcgetattr(s, &t), 0);
	assert_int_equal(t.c_oflag & (OPOST | ONLCR | OCRNL), 0);
	assert_int_equal(t.c_lflag & (ICANON | ISIG | ECHO | IEXTEN), 0);
	assert_int_equal(t.c_iflag & (ICRNL | IXON | ISTRIP), 0);
	/* Nobody's controlling terminal. */
	assert_int_equal(ioctl(s, TIOCGSID, &sid), -1);
	assert_int_equal(errno, ENOTTY);
	/* Bytes pass as written: no "\r\n", no ^C. */
	assert_int_equal(write(s, "a\n\r\x03\x04z", 6), 6);
	char buf[16];
	assert_int_equal(read(m, buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "a\n\r\x03\x04z", 6);
	close(s);
	close(m);
}

/* ---- the hub reads a pty to its end ---- */

struct env {
	uv_loop_t loop;
	struct smt_ranks *ranks;
	struct smt_output *o;
	int ended, flushed, closed;
};

static void on_streams_ended(void *arg, int rank)
{
	if (rank == 0)
		((struct env *)arg)->ended = 1;
}

static void on_flushed(void *arg)
{
	((struct env *)arg)->flushed = 1;
}

static void on_closed(void *arg)
{
	((struct env *)arg)->closed = 1;
}

struct writer {
	int fd;
	char *data;
	size_t len;
};

/* A rank with stdio's defaults on a terminal: a write per line. */
static void *write_lines(void *arg)
{
	struct writer *w = arg;
	size_t off = 0;

	while (off < w->len) {
		char *nl = memchr(w->data + off, '\n', w->len - off);
		size_t n = (size_t)(nl - (w->data + off)) + 1;
		for (size_t done = 0; done < n;) {
			ssize_t k = write(w->fd, w->data + off + done, n - done);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				abort();
			done += (size_t)k;
		}
		off += n;
	}
	close(w->fd);
	return NULL;
}

static void test_hub_reads_pty_to_its_end(void **state)
{
	struct env e;
	struct smt_dynbuf want;
	struct writer w;
	pthread_t th;
	int m, s, errp[2], out;

	(void)state;
	memset(&e, 0, sizeof(e));
	out = memfd_create("stdout", MFD_CLOEXEC);
	assert_true(out >= 0);
	assert_int_equal(uv_loop_init(&e.loop), 0);
	assert_int_equal(smt_ranks_new(HOST, &e.ranks), 0);
	struct smt_output_config cfg = {
		.loop = &e.loop, .format = SMT_FORMAT_TEXT, .out_fd = out, .msg_fd = -1,
		.msg_name = "mpirun", .line_cut_ms = 60000, .current_host = HOST, .ranks = e.ranks,
		.streams_ended = on_streams_ended, .arg = &e,
	};
	assert_int_equal(smt_output_new(&cfg, &e.o), 0);
	assert_int_equal(smtctl_rank_pty(&m, &s), 0);
	assert_int_equal(pipe2(errp, O_CLOEXEC), 0);
	assert_int_equal(smt_output_add_rank(e.o, 0, m, errp[0]), 0);
	close(errp[1]);

	/* 2000 short lines, a long one, and a last short one right before the
	 * rank closes its side: the bytes a short read with POLLHUP lost. */
	smt_dynbuf_init(&want, (size_t)1 << 24);
	struct smt_dynbuf src;
	smt_dynbuf_init(&src, (size_t)1 << 24);
	for (int i = 0; i < 2000; i++) {
		assert_int_equal(smt_dynbuf_addf(&src, "line %04d \r\x03\x04\xff end\n", i), 0);
		assert_int_equal(smt_dynbuf_addf(&want, TAG "line %04d \r\x03\x04\xff end\n", i),
				 0);
	}
	char *lng = malloc(LONG_LINE);
	assert_non_null(lng);
	memset(lng, 'L', LONG_LINE);
	assert_int_equal(smt_dynbuf_add(&src, lng, LONG_LINE), 0);
	assert_int_equal(smt_dynbuf_addstr(&src, "\nthe last line\n"), 0);
	assert_int_equal(smt_dynbuf_addstr(&want, TAG), 0);
	assert_int_equal(smt_dynbuf_add(&want, lng, LONG_LINE), 0);
	assert_int_equal(smt_dynbuf_addstr(&want, "\n" TAG "the last line\n"), 0);
	free(lng);
	w.fd = s;
	w.data = src.p;
	w.len = src.len;
	assert_int_equal(pthread_create(&th, NULL, write_lines, &w), 0);
	run_until(&e.loop, &e.ended, "the end of the pty");
	pthread_join(th, NULL);
	smt_output_flush(e.o, on_flushed, &e);
	run_until(&e.loop, &e.flushed, "stdout flushed");

	off_t size = lseek(out, 0, SEEK_END);
	char *got = malloc((size_t)size + 1);
	assert_non_null(got);
	assert_int_equal(pread(out, got, (size_t)size, 0), size);
	assert_int_equal((size_t)size, want.len);
	assert_memory_equal(got, want.p, want.len);
	free(got);

	smt_output_close(e.o, on_closed, &e);
	run_until(&e.loop, &e.closed, "the hub's handles closed");
	smt_output_free(e.o);
	uv_run(&e.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e.loop), 0);
	smt_ranks_free(e.ranks);
	smt_dynbuf_free(&src);
	smt_dynbuf_free(&want);
	close(out);
}

/* ---- rankd takes only a pty's master or a pipe ---- */

struct rd_env {
	int hellos;
};

static int rd_admit(void *ctx, pid_t launcher, int rank, char *why, size_t len)
{
	(void)ctx, (void)launcher, (void)rank, (void)why, (void)len;
	return 0;
}

static json_t *rd_hello(void *ctx, int rank, pid_t launcher, int out_fd, int err_fd)
{
	(void)rank, (void)launcher;
	((struct rd_env *)ctx)->hellos++;
	close(out_fd);
	close(err_fd);
	return json_object();
}

static void rd_started(void *ctx, int rank, pid_t pid, unsigned long long start)
{
	(void)ctx, (void)rank, (void)pid, (void)start;
}

static void rd_exited(void *ctx, int rank, int wstatus, int exec_errno, int64_t end_ms,
		      long long maxrss_kb)
{
	(void)ctx, (void)rank, (void)wstatus, (void)exec_errno, (void)end_ms, (void)maxrss_kb;
}

static void rd_hangup(void *ctx, int rank)
{
	(void)ctx, (void)rank;
}

static const struct smt_rankd_ops rd_ops = {
	.admit = rd_admit, .hello = rd_hello, .started = rd_started, .exited = rd_exited,
	.hangup = rd_hangup,
};

/* Say hello with OUT and ERR; the answer's "error", or "" when accepted. */
static void hello(uv_loop_t *loop, const char *path, int out, int err, char *answer, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *msg = "{\"op\":\"hello\",\"rank\":0,\"local_rank\":0}";
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)msg, strlen(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm;
	int fds[2] = { out, err }, c;
	char buf[1024];
	ssize_t n = -1;

	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	strcpy(sa.sun_path, path);
	c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(sendmsg(c, &mh, 0), (ssize_t)strlen(msg));
	for (int i = 0; i < 5000 && n < 0; i++) {
		struct pollfd p = { c, POLLIN, 0 };
		uv_run(loop, UV_RUN_NOWAIT);
		if (poll(&p, 1, 1) == 1)
			n = recv(c, buf, sizeof(buf) - 1, 0);
	}
	assert_true(n > 0);
	buf[n] = '\0';
	json_t *v = json_loads(buf, 0, NULL);
	assert_non_null(v);
	snprintf(answer, len, "%s", json_is_true(json_object_get(v, SMT_F_OK)) ? "" :
		 json_string_value(json_object_get(v, SMT_F_ERROR)));
	json_decref(v);
	close(c);
}

static void test_rankd_takes_pty_or_pipe_only(void **state)
{
	static const char refused[] =
		"stdout must be a pipe or a pseudo-terminal's master, stderr a pipe";
	char dir[] = "/tmp/test_ranktty.XXXXXX", path[128], answer[256];
	struct rd_env env = { 0 };
	struct smt_rankd *rd;
	uv_loop_t loop;
	int m, s, p[2], q[2], sv[2], file, null;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/smtd.sock.ranks", dir);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_rankd_listen(&loop, path, &rd_ops, &env, &rd), 0);
	assert_int_equal(smtctl_rank_pty(&m, &s), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(pipe2(q, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	file = memfd_create("file", MFD_CLOEXEC);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(file >= 0 && null >= 0);

	hello(&loop, path, m, p[0], answer, sizeof(answer));
	assert_string_equal(answer, "");
	hello(&loop, path, q[0], p[0], answer, sizeof(answer));
	assert_string_equal(answer, "");
	assert_int_equal(env.hellos, 2);
	/* A file, a device, a pty's slave, a socket: refused, nothing taken. */
	hello(&loop, path, file, p[0], answer, sizeof(answer));
	assert_string_equal(answer, refused);
	hello(&loop, path, null, p[0], answer, sizeof(answer));
	assert_string_equal(answer, refused);
	hello(&loop, path, s, p[0], answer, sizeof(answer));
	assert_string_equal(answer, refused);
	hello(&loop, path, sv[0], p[0], answer, sizeof(answer));
	assert_string_equal(answer, refused);
	hello(&loop, path, m, sv[0], answer, sizeof(answer));
	assert_string_equal(answer, refused);
	hello(&loop, path, m, m, answer, sizeof(answer));
	assert_string_equal(answer, refused);
	assert_int_equal(env.hellos, 2);

	smt_rankd_close(rd);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	close(m), close(s), close(p[0]), close(p[1]), close(q[0]), close(q[1]);
	close(sv[0]), close(sv[1]), close(file), close(null);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pty_raw_nobodys),
		cmocka_unit_test(test_hub_reads_pty_to_its_end),
		cmocka_unit_test(test_rankd_takes_pty_or_pipe_only),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
