/* rankd.c - the rank launcher's socket (rankd.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "procfs.h"
#include "rankd.h"
#include "smt_proto.h"
#include "unixlisten.h"

/* Launchers connected at once; a host runs far fewer ranks. */
#define MAX_CONNS 4096
/* A launcher says hello at once; one that does not is dropped. */
#define HELLO_TIMEOUT_MS 5000

enum phase { P_HELLO, P_START, P_RUNNING, P_DONE };

struct conn {
	uv_poll_t poll;
	uv_timer_t timer;
	struct smt_rankd *rd;
	int fd;
	pid_t peer;
	int uid;
	int rank;
	enum phase phase;
	int closing;
	int handles;
	LIST_ENTRY(conn) link;  /* in rd->conns until it starts closing */
};

struct smt_rankd {
	uv_loop_t *loop;
	const struct smt_rankd_ops *ops;
	void *ctx;
	int listen_fd;
	uv_poll_t listener;
	char *path;
	dev_t dev;
	ino_t ino;
	LIST_HEAD(, conn) conns;
	unsigned nconns;
	int closing;
	int handles;
	char buf[SMT_RANKD_MSG_MAX + 1];
};

static void rd_release(struct smt_rankd *rd)
{
	if (--rd->handles == 0 && rd->closing) {
		free(rd->path);
		free(rd);
	}
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->handles > 0)
		return;
	close(c->fd);
	c->rd->nconns--;
	rd_release(c->rd);
	free(c);
}

static void conn_close(struct conn *c)
{
	struct smt_rankd *rd = c->rd;

	if (c->closing)
		return;
	c->closing = 1;
	LIST_REMOVE(c, link);
	if (c->phase != P_HELLO && c->phase != P_DONE && !rd->closing && rd->ops->hangup)
		rd->ops->hangup(rd->ctx, c->rank);
	uv_close((uv_handle_t *)&c->poll, conn_closed);
	uv_close((uv_handle_t *)&c->timer, conn_closed);
}

static void reply(struct conn *c, json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);

	json_decref(msg);
	if (!text)
		return;
	/* Answers are small and the launcher waits for them: a full socket
	 * means a broken launcher, which loses its connection. */
	if (send(c->fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		smt_debug("rank launcher %d: cannot answer: %s", (int)c->peer, strerror(errno));
	free(text);
}

static void refuse(struct conn *c, const char *why)
{
	if (c->rank >= 0)
		smt_warn("rank launcher (pid %d, rank %d): refused: %s", (int)c->peer, c->rank,
			 why);
	else
		smt_warn("rank launcher (pid %d): refused: %s", (int)c->peer, why);
	reply(c, json_pack("{s:b, s:s}", SMT_F_OK, 0, SMT_F_ERROR, why));
	c->phase = P_DONE;
	conn_close(c);
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * What smtd will read as a rank's output is what the launcher says it is:
 * stdout a pipe or a pty's master (/dev/ptmx, 5:2, answering TIOCGPTN),
 * stderr a pipe.  Never a file, a socket or a device smtd would read from
 * or block on in the loop.
 */
static int output_fds_ok(int out_fd, int err_fd)
{
	struct stat so, se;
	unsigned n;

	if (fstat(out_fd, &so) < 0 || fstat(err_fd, &se) < 0 || !S_ISFIFO(se.st_mode))
		return 0;
	if (S_ISFIFO(so.st_mode))
		return 1;
	return S_ISCHR(so.st_mode) && major(so.st_rdev) == 5 && minor(so.st_rdev) == 2 &&
	       ioctl(out_fd, TIOCGPTN, &n) == 0;
}

static void on_hello(struct conn *c, json_t *msg, int *fds, int nfds)
{
	struct smt_rankd *rd = c->rd;
	json_t *r = json_object_get(msg, SMT_F_RANK), *answer;
	char why[256];

	if (nfds != 2 || !json_is_integer(r) || json_integer_value(r) < 0 ||
	    json_integer_value(r) > 0x7fffffff) {
		close_fds(fds, nfds);
		refuse(c, "hello needs a rank number and two descriptors (stdout, stderr)");
		return;
	}
	c->rank = (int)json_integer_value(r);
	if (!output_fds_ok(fds[0], fds[1])) {
		close_fds(fds, nfds);
		refuse(c, "stdout must be a pipe or a pseudo-terminal's master, stderr a pipe");
		return;
	}
	why[0] = '\0';
	if (rd->ops->admit(rd->ctx, c->peer, c->rank, why, sizeof(why)) < 0) {
		close_fds(fds, nfds);
		refuse(c, why[0] ? why : "not admitted");
		return;
	}
	answer = rd->ops->hello(rd->ctx, c->rank, c->peer, fds[0], fds[1]);
	if (!answer) {
		refuse(c, "out of memory");
		return;
	}
	json_object_set_new(answer, SMT_F_OK, json_true());
	c->phase = P_START;
	reply(c, answer);
}

static void on_start(struct conn *c, json_t *msg)
{
	struct smt_rankd *rd = c->rd;
	json_int_t pid = json_integer_value(json_object_get(msg, SMT_F_PID));
	struct smt_proc_stat st;
	int fd;

	if (pid <= 1 || pid > smt_proc_pid_max()) {
		refuse(c, "start needs the program's PID");
		return;
	}
	/* Only the launcher's own child is taken, and only while it is that
	 * process: the pidfd pins it, its parent and start time prove it. */
	fd = smt_pidfd_open((pid_t)pid);
	if ((fd < 0 && fd != -ENOSYS) || smt_proc_stat(NULL, (pid_t)pid, &st) < 0 ||
	    st.ppid != c->peer) {
		if (fd >= 0)
			close(fd);
		refuse(c, "the PID is not the launcher's child");
		return;
	}
	if (fd >= 0)
		close(fd);
	c->phase = P_RUNNING;
	rd->ops->started(rd->ctx, c->rank, (pid_t)pid, st.starttime);
	reply(c, json_pack("{s:b}", SMT_F_OK, 1));
}

static void on_exit_msg(struct conn *c, json_t *msg)
{
	struct smt_rankd *rd = c->rd;
	json_t *status = json_object_get(msg, SMT_F_STATUS),
	       *e = json_object_get(msg, SMT_F_EXEC_ERRNO);

	if (!json_is_integer(status) && !json_is_integer(e)) {
		refuse(c, "exit needs a status");
		return;
	}
	c->phase = P_DONE;
	rd->ops->exited(rd->ctx, c->rank,
			json_is_integer(status) ? (int)json_integer_value(status) : -1,
			json_is_integer(e) ? (int)json_integer_value(e) : 0,
			json_integer_value(json_object_get(msg, SMT_F_END_MS)),
			json_integer_value(json_object_get(msg, SMT_F_MAXRSS_KB)));
	conn_close(c);
}

static void on_packet(struct conn *c, const char *p, size_t n, int *fds, int nfds)
{
	json_error_t err;
	json_t *msg = json_loadb(p, n, JSON_REJECT_DUPLICATES, &err);
	const char *op = json_string_value(json_object_get(msg, SMT_F_OP));

	if (!json_is_object(msg) || !op) {
		close_fds(fds, nfds);
		json_decref(msg);
		refuse(c, "not a JSON object with an \"op\"");
		return;
	}
	if (c->phase == P_HELLO && strcmp(op, "hello") == 0) {
		uv_timer_stop(&c->timer);
		on_hello(c, msg, fds, nfds);
	} else {
		close_fds(fds, nfds);
		if (c->phase == P_START && strcmp(op, "start") == 0)
			on_start(c, msg);
		else if (c->phase == P_RUNNING && strcmp(op, "exit") == 0)
			on_exit_msg(c, msg);
		else
			refuse(c, "unexpected message");
	}
	json_decref(msg);
}

static void on_conn(uv_poll_t *h, int status, int events)
{
	struct conn *c = h->data;
	struct smt_rankd *rd = c->rd;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { rd->buf, SMT_RANKD_MSG_MAX };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	int fds[4], nfds = 0;
	ssize_t n;

	(void)events;
	if (status < 0) {
		conn_close(c);
		return;
	}
	memset(&ctl, 0, sizeof(ctl));
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* On an error the kernel wrote no control data: what the buffer holds
	 * is not descriptors of this peer's, and none may be closed. */
	if (n < 0) {
		conn_close(c);
		return;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *v = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < k; i++) {
			if (nfds < 4)
				fds[nfds++] = v[i];
			else
				close(v[i]);
		}
	}
	if (n <= 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		close_fds(fds, nfds);
		if (n > 0)
			refuse(c, "message too large");
		else
			conn_close(c);
		return;
	}
	on_packet(c, rd->buf, (size_t)n, fds, nfds);
}

static void on_hello_timeout(uv_timer_t *t)
{
	struct conn *c = t->data;

	smt_warn("rank launcher (pid %d) said nothing in %d ms; dropping it", (int)c->peer,
		 HELLO_TIMEOUT_MS);
	conn_close(c);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct smt_rankd *rd = h->data;

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		int fd = accept4(rd->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		    (cred.uid != 0 && cred.uid != getuid()) || rd->nconns >= MAX_CONNS ||
		    !(c = calloc(1, sizeof(*c)))) {
			smt_warn("rank launcher socket: refusing a connection (uid %d, %u open)",
				 len == sizeof(cred) ? (int)cred.uid : -1, rd->nconns);
			close(fd);
			continue;
		}
		c->rd = rd;
		c->fd = fd;
		c->peer = cred.pid;
		c->uid = (int)cred.uid;
		c->rank = -1;
		if (uv_poll_init(rd->loop, &c->poll, fd) < 0) {
			close(fd);
			free(c);
			continue;
		}
		uv_timer_init(rd->loop, &c->timer);
		c->poll.data = c->timer.data = c;
		c->handles = 2;
		rd->handles++;
		rd->nconns++;
		LIST_INSERT_HEAD(&rd->conns, c, link);
		uv_poll_start(&c->poll, UV_READABLE, on_conn);
		uv_timer_start(&c->timer, on_hello_timeout, HELLO_TIMEOUT_MS, 0);
	}
}

static void listener_closed(uv_handle_t *h)
{
	struct smt_rankd *rd = h->data;

	close(rd->listen_fd);
	rd_release(rd);
}

int smt_rankd_listen(uv_loop_t *loop, const char *path, const struct smt_rankd_ops *ops,
		     void *ctx, struct smt_rankd **out)
{
	struct smt_rankd *rd;
	struct stat st;
	int rc;

	rd = calloc(1, sizeof(*rd));
	if (!rd || !(rd->path = strdup(path))) {
		free(rd);
		return -ENOMEM;
	}
	LIST_INIT(&rd->conns);
	rd->loop = loop;
	rd->ops = ops;
	rd->ctx = ctx;
	rd->listen_fd = smt_unix_listen("rank launcher socket", path, SOCK_SEQPACKET, 0660,
					(gid_t)-1, &st);
	if (rd->listen_fd < 0) {
		rc = rd->listen_fd;
		goto fail;
	}
	rd->dev = st.st_dev;
	rd->ino = st.st_ino;
	uv_poll_init(loop, &rd->listener, rd->listen_fd);
	rd->listener.data = rd;
	rd->handles = 1;
	uv_poll_start(&rd->listener, UV_READABLE, on_accept);
	*out = rd;
	return 0;
fail:
	free(rd->path);
	free(rd);
	return rc;
}

void smt_rankd_close(struct smt_rankd *rd)
{
	struct stat st;

	if (!rd)
		return;
	rd->closing = 1;
	while (!LIST_EMPTY(&rd->conns))
		conn_close(LIST_FIRST(&rd->conns));
	/* Remove the file only while it is still ours. */
	if (stat(rd->path, &st) == 0 && st.st_dev == rd->dev && st.st_ino == rd->ino)
		unlink(rd->path);
	uv_close((uv_handle_t *)&rd->listener, listener_closed);
}
