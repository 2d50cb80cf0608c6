/*
 * test_api_server.c - the control API server on a real loop and real
 * sockets: socket set-up, idle and trickle timeouts, the connection
 * limit, clients that go away, the TCP listener, and closing with no
 * handle left.  The clients are plain sockets in this process; the loop is
 * turned between their steps.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <uv.h>

#include "api.h"
#include "smt_proto.h"

struct env {
	uv_loop_t loop;
	struct smt_api *api;
	char dir[64];
	char path[160];
	int closed;
	int kills;
	int leader_contacts;
	int logs_rendered;
	size_t big_logs;
};

static json_t *f_status(void *ctx, int brief) { return json_pack("{ss}", SMT_F_STATE, "running"); }
static int f_yes(void *ctx) { return 1; }
static int f_kill(void *ctx, int signo)
{
	((struct env *)ctx)->kills++;
	return 0;
}
static json_t *f_logs(void *ctx, long tail, long rank)
{
	struct env *e = ctx;
	e->logs_rendered++;
	char *big = malloc(e->big_logs + 1);
	memset(big, 'x', e->big_logs);
	big[e->big_logs] = '\0';
	json_t *v = json_pack("{s[s]}", SMT_F_LINES, big);
	free(big);
	return v;
}

static json_int_t f_generation(void *ctx) { return 7; }
static void f_leader_contact(void *ctx)
{
	((struct env *)ctx)->leader_contacts++;
}

static const struct smt_api_ops ops = {
	.status = f_status, .healthy = f_yes, .ready = f_yes, .kill = f_kill, .logs = f_logs,
	.generation = f_generation, .leader_contact = f_leader_contact,
};

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Turn the loop for about MS milliseconds. */
static void pump(struct env *e, int ms)
{
	long end = now_ms() + ms;
	do {
		uv_run(&e->loop, UV_RUN_NOWAIT);
		poll(NULL, 0, 2);
	} while (now_ms() < end);
	uv_run(&e->loop, UV_RUN_NOWAIT);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);

	assert_non_null(e);
	strcpy(e->dir, "/tmp/smt-api-test.XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->path, sizeof e->path, "%s/run/smtd/smtd.sock", e->dir);
	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(smt_api_new(&e->loop, &ops, e, &e->api), 0);
	e->big_logs = 10;
	*state = e;
	return 0;
}

static void on_closed(void *arg)
{
	((struct env *)arg)->closed++;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[128];

	int before = e->closed;
	if (e->api)
		smt_api_close(e->api, on_closed, e);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(e->closed, before + (e->api != NULL));
	/* The server leaves no handle behind. */
	assert_int_equal(uv_loop_close(&e->loop), 0);
	snprintf(cmd, sizeof cmd, "%s/run/smtd", e->dir);
	unlink(e->path);
	rmdir(cmd);
	snprintf(cmd, sizeof cmd, "%s/run", e->dir);
	rmdir(cmd);
	rmdir(e->dir);
	free(e);
	return 0;
}

static int client(struct env *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, e->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	pump(e, 5);
	return fd;
}

static void send_str(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/*
 * Read into BUF while turning the loop, until UNTIL appears (NULL: until
 * EOF) or MS pass.  Returns the length; *EOFP tells whether EOF was seen.
 */
static size_t receive(struct env *e, int fd, char *buf, size_t cap, const char *until,
		      int ms, int *eofp)
{
	size_t len = 0;
	long end = now_ms() + ms;

	*eofp = 0;
	buf[0] = '\0';
	while (now_ms() < end) {
		uv_run(&e->loop, UV_RUN_NOWAIT);
		ssize_t n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			buf[len] = '\0';
			if (until && strstr(buf, until))
				break;
			continue;
		}
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			*eofp = 1;
			break;
		}
		poll(NULL, 0, 2);
	}
	return len;
}

static void test_socket_setup(void **state)
{
	struct env *e = *state;
	struct stat st;
	char dir[160];
	struct smt_api *other;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	assert_int_equal(stat(e->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	snprintf(dir, sizeof dir, "%s/run/smtd", e->dir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);

	/* A second server refuses to start and leaves the first one alone. */
	assert_int_equal(smt_api_new(&e->loop, &ops, e, &other), 0);
	assert_int_equal(smt_api_listen_unix(other, e->path, NULL), -EADDRINUSE);
	int closed = e->closed;
	smt_api_close(other, on_closed, e);
	assert_int_equal(e->closed, closed + 1);

	int fd = client(e), eof;
	char buf[4096];
	send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "\"ok\"", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));

	/* Every socket and loop descriptor of the process is close-on-exec. */
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int leaky = -1;
	while ((de = readdir(d))) {
		char link[64], target[128] = "";
		int n = atoi(de->d_name);
		if (de->d_name[0] == '.' || n == dirfd(d))
			continue;
		snprintf(link, sizeof link, "/proc/self/fd/%d", n);
		if (readlink(link, target, sizeof target - 1) < 0 ||
		    (strncmp(target, "socket:", 7) != 0 && strncmp(target, "anon_inode:", 11) != 0))
			continue;
		int flags = fcntl(n, F_GETFD);
		if (flags >= 0 && !(flags & FD_CLOEXEC))
			leaky = n;
	}
	closedir(d);
	assert_int_equal(leaky, -1);
	close(fd);

	/* Closing removes the socket file. */
	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(stat(e->path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_stale_and_foreign(void **state)
{
	struct env *e = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	char dir[160];

	snprintf(dir, sizeof dir, "%s/run", e->dir);
	mkdir(dir, 0755);
	snprintf(dir, sizeof dir, "%s/run/smtd", e->dir);
	mkdir(dir, 0755);

	/* Not a socket: left alone. */
	int fd = open(e->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), -EEXIST);
	assert_int_equal(stat(e->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(e->path);

	/* A socket file nobody listens on: removed and replaced. */
	strcpy(sa.sun_path, e->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	close(fd);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, "no-such-group-smt"), -ENOENT);
	struct group *g = getgrgid(65534);
	assert_non_null(g);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, g->gr_name), 0);
	assert_int_equal(stat(e->path, &st), 0);
	assert_int_equal(st.st_gid, 65534);
	assert_int_equal(st.st_mode & 07777, 0660);
	/* One Unix listener per server. */
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), -EBUSY);

	char buf[256];
	int eof, c = client(e);
	send_str(c, "GET /readyz HTTP/1.1\r\n\r\n");
	receive(e, c, buf, sizeof buf, "ready\"}", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	close(c);
}

static void test_idle_and_trickle(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int eof;

	smt_api_set_limits(e->api, 300, 0);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);

	/* Idle: dropped after the timeout. */
	long t0 = now_ms();
	int fd = client(e);
	receive(e, fd, buf, sizeof buf, NULL, 3000, &eof);
	long idle = now_ms() - t0;
	assert_true(eof);
	assert_true(idle >= 250 && idle < 1500);
	close(fd);

	/* Trickling: bytes do not buy time. */
	t0 = now_ms();
	fd = client(e);
	send_str(fd, "GET /v1/status HTTP/1.1\r\n");
	eof = 0;
	while (!eof && now_ms() - t0 < 3000) {
		if (send(fd, "X: y\r\n", 6, MSG_NOSIGNAL) < 0)
			break;
		receive(e, fd, buf, sizeof buf, NULL, 50, &eof);
	}
	long trickle = now_ms() - t0;
	assert_true(trickle >= 250 && trickle < 1500);
	close(fd);

	/* Each complete request re-arms the timer. */
	t0 = now_ms();
	fd = client(e);
	for (int i = 0; i < 4; i++) {
		send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
		receive(e, fd, buf, sizeof buf, "\"ok\"}", 1000, &eof);
		assert_false(eof);
		assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
		pump(e, 200);
	}
	assert_true(now_ms() - t0 >= 800);
	receive(e, fd, buf, sizeof buf, NULL, 3000, &eof);
	assert_true(eof);
	close(fd);
	pump(e, 10);
	assert_int_equal(smt_api_connections(e->api), 0);
}

static void test_connection_limit(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fds[3], eof;

	smt_api_set_limits(e->api, 0, 3);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	for (int i = 0; i < 3; i++)
		fds[i] = client(e);
	assert_int_equal(smt_api_connections(e->api), 3);

	int extra = client(e);
	receive(e, extra, buf, sizeof buf, NULL, 2000, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 503 Service Unavailable\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\n{\"error\":\"too many connections\"}\n"));
	close(extra);

	for (int i = 0; i < 3; i++) {
		send_str(fds[i], "GET /healthz HTTP/1.1\r\n\r\n");
		receive(e, fds[i], buf, sizeof buf, "\"ok\"}", 2000, &eof);
		assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	}
	close(fds[0]);
	pump(e, 20);
	int again = client(e);
	send_str(again, "GET /healthz HTTP/1.1\r\n\r\n");
	receive(e, again, buf, sizeof buf, "\"ok\"}", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	close(again);
	close(fds[1]);
	close(fds[2]);
}

static void test_client_gone_mid_response(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int eof;

	e->big_logs = 4 * 1024 * 1024;
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	for (int i = 0; i < 5; i++) {
		int gone = client(e);
		send_str(gone, "GET /v1/logs HTTP/1.1\r\n\r\n");
		/* Read a little of the answer, then go. */
		assert_true(receive(e, gone, buf, 101, "HTTP/1.1", 2000, &eof) > 0);
		close(gone);
	}
	int fd = client(e);
	send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "\"ok\"}", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	close(fd);
	pump(e, 20);
	assert_int_equal(smt_api_connections(e->api), 0);
}

static void test_pipelining_and_half_close(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int eof;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	int fd = client(e);
	send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n"
		     "POST /v1/kill HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
		     "GET /v1/status HTTP/1.1\r\n\r\n");
	/* The client is done sending; the answers still come, then EOF. */
	shutdown(fd, SHUT_WR);
	receive(e, fd, buf, sizeof buf, NULL, 2000, &eof);
	assert_true(eof);
	char *a = strstr(buf, "HTTP/1.1 200"), *b = strstr(buf, "HTTP/1.1 202");
	char *c = strstr(buf, "{\"state\":\"running\"}");
	assert_true(a && b && c && a < b && b < c);
	assert_int_equal(e->kills, 1);
	close(fd);
}

static int tcp_client(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static void test_tcp(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int eof;

	static const char *const bad[] = { "nope", "1.2.3.4:99999", "[::1]8080", "1.2.3.4:",
					   "host.example:80", ":-1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(smt_api_listen_tcp(e->api, bad[i]), -EINVAL);
	assert_int_equal(smt_api_tcp_port(e->api), -ENOENT);
	assert_int_equal(smt_api_listen_tcp(e->api, "127.0.0.1:0"), 0);
	int port = smt_api_tcp_port(e->api);
	assert_true(port > 0);

	int fd = tcp_client(port);
	send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "\"ok\"}", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	send_str(fd, "POST /v1/kill HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "}\n", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 403 Forbidden"));
	assert_non_null(strstr(buf, "read-only"));
	assert_int_equal(e->kills, 0);
	close(fd);
}

static void test_close_with_clients(void **state)
{
	struct env *e = *state;
	char buf[64];
	int fds[4], eof;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	for (int i = 0; i < 4; i++)
		fds[i] = client(e);
	send_str(fds[0], "GET /v1/sta");
	pump(e, 10);
	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(e->closed, 1);
	for (int i = 0; i < 4; i++) {
		receive(e, fds[i], buf, sizeof buf, NULL, 500, &eof);
		assert_true(eof);
		close(fds[i]);
	}
}

/* While the server lingers after smt_api_close, a request on an idle
 * keep-alive connection is still answered (the leader's result on an idle
 * channel to a host that has just stopped), and the end comes as soon as
 * the client closes, not after the linger. */
/* A keep-alive client that has had one answer and is now idle: the
 * leader's channel (root sending X-Smtd-Leader) when LEADER. */
static int idle_client(struct env *e, int leader)
{
	char buf[4096];
	int fd, eof;

	if (!e->path[0] || access(e->path, F_OK) != 0)
		assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	fd = client(e);
	send_str(fd, leader ? "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Smtd-Leader: 1\r\n\r\n"
			    : "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "running", 1000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	return fd;
}

static void test_linger_answers(void **state)
{
	struct env *e = *state;
	char buf[4096];
	int fd = idle_client(e, 1), eof;
	long t0;

	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	t0 = now_ms();
	send_str(fd, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "running", 1500, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_false(eof);
	assert_true(now_ms() - t0 < 1500);
	close(fd);
	while (e->closed == 0 && now_ms() - t0 < 1500)
		pump(e, 5);
	assert_int_equal(e->closed, 1);
}

/* With no linger (a worker whose leader is lost), close ends at once. */
static void test_no_linger(void **state)
{
	struct env *e = *state;
	char buf[256];
	int fd = idle_client(e, 1), eof;
	long t0;

	smt_api_set_linger(e->api, 0);
	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	t0 = now_ms();
	receive(e, fd, buf, sizeof buf, NULL, 1500, &eof);
	assert_true(eof);
	assert_true(now_ms() - t0 < 1000);
	close(fd);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(e->closed, 1);
}


/* At close, idle clients and clients in the middle of a
 * request are closed at once; only the leader's channel lingers. */
static void test_close_does_not_wait_for_clients(void **state)
{
	struct env *e = *state;
	char buf[4096];
	int fds[3], eof;

	int leader = idle_client(e, 1);
	fds[0] = idle_client(e, 0);
	fds[1] = client(e);
	fds[2] = client(e);
	send_str(fds[2], "GET /v1/sta");
	pump(e, 10);
	assert_int_equal(smt_api_connections(e->api), 4);

	long t0 = now_ms();
	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	for (int i = 0; i < 3; i++) {
		receive(e, fds[i], buf, sizeof buf, NULL, 1500, &eof);
		assert_true(eof);
		close(fds[i]);
	}
	long others = now_ms() - t0;
	if (others >= 300)
		fail_msg("idle clients kept the server open for %ld ms", others);
	/* The leader's channel is still open and answered. */
	send_str(leader, "GET /v1/status HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
	receive(e, leader, buf, sizeof buf, "running", 1000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_false(eof);
	assert_int_equal(e->closed, 0);
	close(leader);
	while (e->closed == 0 && now_ms() - t0 < 1500)
		pump(e, 5);
	assert_int_equal(e->closed, 1);
}

/* Item 2: "X-Smtd-Leader" over TCP buys nothing - no idle
 * exemption, no leader contact - and TCP clients have their own, smaller
 * limit that leaves the Unix socket's places alone. */
static void test_tcp_limit_and_no_leader(void **state)
{
	struct env *e = *state;
	char buf[4096];
	int tcp[3], unx[3], eof;

	smt_api_set_limits(e->api, 400, 3);
	smt_api_set_tcp_limit(e->api, 2);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	assert_int_equal(smt_api_listen_tcp(e->api, "127.0.0.1:0"), 0);
	int port = smt_api_tcp_port(e->api);

	long t0 = now_ms();
	for (int i = 0; i < 2; i++) {
		tcp[i] = tcp_client(port);
		send_str(tcp[i], "GET /v1/status HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
		receive(e, tcp[i], buf, sizeof buf, "running", 2000, &eof);
		assert_non_null(strstr(buf, "HTTP/1.1 200"));
	}
	assert_int_equal(e->leader_contacts, 0);
	tcp[2] = tcp_client(port);
	receive(e, tcp[2], buf, sizeof buf, NULL, 2000, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	close(tcp[2]);
	/* The Unix socket still has all of its places. */
	for (int i = 0; i < 3; i++) {
		unx[i] = client(e);
		send_str(unx[i], "GET /healthz HTTP/1.1\r\n\r\n");
		receive(e, unx[i], buf, sizeof buf, "\"ok\"}", 2000, &eof);
		assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	}
	/* The TCP clients are dropped after the idle timeout, header or not. */
	for (int i = 0; i < 2; i++) {
		receive(e, tcp[i], buf, sizeof buf, NULL, 3000, &eof);
		assert_true(eof);
		close(tcp[i]);
	}
	long idle = now_ms() - t0;
	if (idle < 350 || idle > 1500)
		fail_msg("TCP clients sending X-Smtd-Leader dropped after %ld ms", idle);
	for (int i = 0; i < 3; i++)
		close(unx[i]);
}

/* A long poll with "Connection: close" or HTTP/1.0 is
 * answered - at its timeout or when the status changes - then closed. */
static void test_long_poll_that_closes(void **state)
{
	struct env *e = *state;
	static const char *const polls[] = {
		"GET /v1/status?wait=7&timeout=200 HTTP/1.1\r\nConnection: close\r\n\r\n",
		"GET /v1/status?wait=7&timeout=200 HTTP/1.0\r\n\r\n",
		"GET /v1/status?wait=7&timeout=30000 HTTP/1.0\r\n\r\n",
	};
	char buf[4096];
	int eof;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	for (int i = 0; i < 3; i++) {
		int fd = client(e);
		long t0 = now_ms();
		send_str(fd, polls[i]);
		if (i == 2) {
			pump(e, 100);
			smt_api_notify(e->api);
		}
		receive(e, fd, buf, sizeof buf, NULL, 3000, &eof);
		long ms = now_ms() - t0;
		assert_true(eof);
		if (!strstr(buf, "HTTP/1.1 200 OK\r\n") ||
		    !strstr(buf, "\r\n\r\n{\"state\":\"running\"}\n"))
			fail_msg("long poll %d: got '%s' after %ld ms", i, buf, ms);
		if (ms < 90 || ms > 1000)
			fail_msg("long poll %d answered after %ld ms", i, ms);
		close(fd);
	}
	pump(e, 20);
	assert_int_equal(smt_api_connections(e->api), 0);
}

/* The last change of state releases the long polls just before the
 * server closes: their answers, rendered in steps, still arrive whole. */
static void test_close_right_after_notify(void **state)
{
	struct env *e = *state;
	char buf[4096];
	int fds[3], eof;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	for (int i = 0; i < 3; i++) {
		fds[i] = client(e);
		send_str(fds[i], i == 1 ? "GET /v1/status?wait=7&timeout=30000 HTTP/1.0\r\n\r\n"
					: "GET /v1/status?wait=7&timeout=30000 HTTP/1.1\r\n\r\n");
	}
	pump(e, 20);
	smt_api_notify(e->api);
	smt_api_close(e->api, on_closed, e);
	e->api = NULL;
	for (int i = 0; i < 3; i++) {
		receive(e, fds[i], buf, sizeof buf, NULL, 1500, &eof);
		assert_true(eof);
		if (!strstr(buf, "\r\n\r\n{\"state\":\"running\"}\n"))
			fail_msg("poll %d got '%s'", i, buf);
		close(fds[i]);
	}
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(e->closed, 1);
}

/* After an answer that ends the connection the server
 * half-closes and reads what the client still sends, until the client
 * ends or DRAIN_MS (1 s) pass; then it closes. */
static void test_drain_after_closing_answer(void **state)
{
	struct env *e = *state;
	char buf[4096];
	int eof;

	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	int fd = client(e);
	send_str(fd, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
	receive(e, fd, buf, sizeof buf, NULL, 2000, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	pump(e, 100);
	/* Still open and reading: what the client sends is taken, not refused. */
	assert_int_equal(smt_api_connections(e->api), 1);
	for (int i = 0; i < 20; i++) {
		send_str(fd, "more bytes the server discards\r\n");
		pump(e, 2);
	}
	assert_int_equal(smt_api_connections(e->api), 1);
	shutdown(fd, SHUT_WR);
	pump(e, 50);
	assert_int_equal(smt_api_connections(e->api), 0);
	close(fd);

	/* A client that never ends its side is closed after DRAIN_MS. */
	fd = client(e);
	long t0 = now_ms();
	send_str(fd, "GET /healthz HTTP/1.0\r\n\r\n");
	while (smt_api_connections(e->api) > 0 && now_ms() - t0 < 3000)
		pump(e, 5);
	long ms = now_ms() - t0;
	if (ms < 900 || ms > 1600)
		fail_msg("a draining connection was closed after %ld ms", ms);
	close(fd);
}

/* Read from every client in FDS, turning the loop, until each got N
 * complete answers with a body of SIZE bytes of logs. */
static void read_answers(struct env *e, int *fds, int nfds, int n, size_t size)
{
	size_t each = size + 256;
	char **bufs = calloc((size_t)nfds, sizeof *bufs);
	size_t *lens = calloc((size_t)nfds, sizeof *lens);
	int done = 0;
	long t0 = now_ms();

	for (int i = 0; i < nfds; i++)
		bufs[i] = malloc(each * (size_t)n);
	while (done < nfds && now_ms() - t0 < 20000) {
		done = 0;
		uv_run(&e->loop, UV_RUN_NOWAIT);
		for (int i = 0; i < nfds; i++) {
			ssize_t r = recv(fds[i], bufs[i] + lens[i], each * (size_t)n - lens[i],
					 MSG_DONTWAIT);
			if (r > 0)
				lens[i] += (size_t)r;
			int got = 0;
			for (char *p = bufs[i]; (p = memmem(p, (size_t)(bufs[i] + lens[i] - p),
						      "HTTP/1.1 200 OK", 15)); p++)
				got++;
			/* The last answer is complete once its body ended. */
			if (got == n && lens[i] >= 3 &&
			    memcmp(bufs[i] + lens[i] - 3, "]}\n", 3) == 0)
				done++;
		}
	}
	assert_int_equal(done, nfds);
	for (int i = 0; i < nfds; i++)
		free(bufs[i]);
	free(bufs);
	free(lens);
}

/* Pipelined requests are rendered only while the
 * connection's unsent answers are under its cap, and large answers only
 * while all unsent answers are under the total; a small request of
 * another client is answered meanwhile; nothing is lost. */
static void test_pipelined_output_caps(void **state)
{
	struct env *e = *state;
	char buf[4096], req[8 * 32];
	int fds[6], eof;

	/* Larger than what the kernel buffers for a Unix socket (about 200
	 * KiB), so that an answer nobody reads stays queued in the server. */
	e->big_logs = 1024 * 1024;
	smt_api_set_output_limits(e->api, 64 * 1024, 2 * 1024 * 1024);
	assert_int_equal(smt_api_listen_unix(e->api, e->path, NULL), 0);
	req[0] = '\0';
	for (int i = 0; i < 8; i++)
		strcat(req, "GET /v1/logs HTTP/1.1\r\n\r\n");
	for (int i = 0; i < 6; i++) {
		fds[i] = client(e);
		send_str(fds[i], req);
	}
	pump(e, 300);
	/* At most one answer per connection, and rendering stopped once the
	 * total passed 2 MiB: 2 answers of 1 MiB, perhaps one more. */
	if (e->logs_rendered > 3)
		fail_msg("%d large answers rendered for clients that read nothing",
			 e->logs_rendered);
	int fd = client(e);
	long t0 = now_ms();
	send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
	receive(e, fd, buf, sizeof buf, "\"ok\"}", 2000, &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	if (now_ms() - t0 > 50)
		fail_msg("/healthz took %ld ms", now_ms() - t0);
	close(fd);
	/* The clients read: every answer arrives, whole. */
	read_answers(e, fds, 6, 8, e->big_logs);
	assert_int_equal(e->logs_rendered, 48);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
}

int main(void)
{
	/* As in smtd: a client that leaves must not kill the process. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_setup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_and_trickle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_gone_mid_response, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelining_and_half_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_with_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_linger_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_linger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_does_not_wait_for_clients, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_limit_and_no_leader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_poll_that_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_after_closing_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_right_after_notify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_output_caps, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
