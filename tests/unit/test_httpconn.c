/* test_httpconn.c - one control API connection fed with bytes (httpconn.c),
 * every endpoint through routes.c. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "httpconn.h"
#include "smt_proto.h"
#include "strv.h"

struct fake {
	int healthy, ready, has_job;
	int kills, last_signo;
	long last_tail, last_rank;
	int posts, post_pid;
	char post_path[64];
	char post_body[256];
	int leader_contacts;
	int statuses;
	int status_flags;
	int with_hosts;
	int lines_calls;
};

static json_t *f_status(void *ctx, int flags)
{
	struct fake *f = ctx;

	f->statuses++;
	f->status_flags = flags;
	if (f->with_hosts)
		return json_pack("{ss ss s[{ss sb} {ss sb}]}", SMT_F_ROLE, "worker", SMT_F_STATE,
				 "running", SMT_F_HOSTS, SMT_F_HOST, "algo-1", SMT_F_READY, 1,
				 SMT_F_HOST, "algo-2", SMT_F_READY, 0);
	return json_pack("{ss ss}", SMT_F_ROLE, "leader", SMT_F_STATE, "running");
}

static json_int_t f_generation(void *ctx) { return 7; }

static void f_leader_contact(void *ctx)
{
	((struct fake *)ctx)->leader_contacts++;
}

static int f_healthy(void *ctx) { return ((struct fake *)ctx)->healthy; }
static int f_ready(void *ctx) { return ((struct fake *)ctx)->ready; }

static int f_kill(void *ctx, int signo)
{
	struct fake *f = ctx;

	if (!f->has_job)
		return -ESRCH;
	f->kills++;
	f->last_signo = signo;
	return 0;
}

static json_t *f_logs(void *ctx, long tail, long rank)
{
	struct fake *f = ctx;

	f->last_tail = tail;
	f->last_rank = rank;
	return json_pack("{s[s]}", SMT_F_LINES, "hello");
}

static char *f_metrics(void *ctx)
{
	return strdup("# TYPE smtd_up gauge\nsmtd_up 1");
}

static int f_result(void *ctx, json_t *body, int pid, json_t **reply)
{
	struct fake *f = ctx;
	const char *path = SMT_PATH_RESULT;

	f->posts++;
	f->post_pid = pid;
	snprintf(f->post_path, sizeof f->post_path, "%s", path);
	char *t = body ? json_dumps(body, JSON_COMPACT) : NULL;
	snprintf(f->post_body, sizeof f->post_body, "%s", t ? t : "-");
	free(t);
	*reply = json_pack("{sb}", "ok", 1);
	return 200;
}

/* No output yet: a fetch is held. */
static int f_lines(void *ctx, uint64_t from, size_t max, int final, const char **body,
		   size_t *len)
{
	struct fake *f = ctx;

	(void)from, (void)max;
	f->lines_calls++;
	*body = "";
	*len = 0;
	return final ? 0 : -EAGAIN;
}

static const struct smt_api_ops ops = {
	.status = f_status, .healthy = f_healthy, .ready = f_ready, .kill = f_kill,
	.logs = f_logs, .metrics = f_metrics, .result = f_result,
	.generation = f_generation, .leader_contact = f_leader_contact, .lines = f_lines,
};

struct t {
	struct fake f;
	struct smt_api_stats stats;
	struct smt_httpconn *c;
	char *out;
};

static struct t *setup_peer(int uid, int read_only)
{
	struct t *t = calloc(1, sizeof *t);
	struct smt_httpconn_peer peer = { .uid = uid, .pid = 4321, .daemon_uid = 1234,
					  .read_only = read_only };

	assert_non_null(t);
	t->f.healthy = t->f.ready = t->f.has_job = 1;
	assert_int_equal(smt_httpconn_new(&ops, &t->f, &peer, &t->stats, &t->c), 0);
	return t;
}

static int setup(void **state)
{
	*state = setup_peer(0, 0);
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	smt_httpconn_free(t->c);
	free(t->out);
	free(t);
	return 0;
}

/* Feed TEXT and answer every request it completes, as the server does
 * when the client reads its answers; returns the requests answered and
 * leaves the output in t->out. */
static int feed(struct t *t, const char *text, size_t len)
{
	char *buf;

	int n = smt_httpconn_feed(t->c, text, len);
	while (n >= 0 && smt_httpconn_pending(t->c) > 0 && !smt_httpconn_held(t->c) &&
	       !smt_httpconn_deferred(t->c) && !smt_httpconn_closing(t->c)) {
		int more = smt_httpconn_next(t->c);
		if (more < 0)
			n = more;
		else
			n += more;
	}
	size_t olen = smt_httpconn_take_output(t->c, &buf);
	free(t->out);
	t->out = malloc(olen + 1);
	assert_non_null(t->out);
	if (olen)
		memcpy(t->out, buf, olen);
	t->out[olen] = '\0';
	free(buf);
	return n;
}

static int feeds(struct t *t, const char *text)
{
	return feed(t, text, strlen(text));
}

static void assert_has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not found in:\n%s", needle, hay);
}

static void assert_status(struct t *t, int status)
{
	char line[64];

	snprintf(line, sizeof line, "HTTP/1.1 %d ", status);
	if (strncmp(t->out, line, strlen(line)) != 0)
		fail_msg("expected status %d, got:\n%s", status, t->out);
}

static const char *body_of(struct t *t)
{
	const char *b = strstr(t->out, "\r\n\r\n");
	assert_non_null(b);
	return b + 4;
}

static void test_status(void **state)
{
	struct t *t = *state;

	assert_int_equal(feeds(t, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"), 1);
	assert_status(t, 200);
	assert_has(t->out, "Content-Type: application/json\r\n");
	const char *body = body_of(t);
	char cl[64];
	snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", strlen(body));
	assert_has(t->out, cl);
	assert_string_equal(body, "{\"role\":\"leader\",\"state\":\"running\"}\n");
	assert_false(smt_httpconn_closing(t->c));
	assert_int_equal(t->stats.requests, 1);
}

/* ?brief=1 (the leader's probes and watches): the host list as its
 * digest, the same the leader computes from its own list. */
static void test_status_brief(void **state)
{
	struct t *t = *state;
	unsigned long long d = smt_digest_add(smt_digest_add(SMT_DIGEST_INIT, "algo-1"), "algo-2");
	char want[200];

	t->f.with_hosts = 1;
	feeds(t, "GET /v1/status?brief=1 HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	snprintf(want, sizeof(want),
		 "{\"role\":\"worker\",\"state\":\"running\",\"hosts_digest\":\"%016llx\"}\n", d);
	assert_string_equal(body_of(t), want);
	/* Without it, the list itself. */
	feeds(t, "GET /v1/status HTTP/1.1\r\n\r\n");
	assert_has(body_of(t), "\"hosts\":[{\"host\":\"algo-1\",\"ready\":true}");
	/* Another list, another digest. */
	assert_true(d != smt_digest_add(smt_digest_add(SMT_DIGEST_INIT, "algo-1"), "algo-3"));
	assert_true(d != smt_digest_add(SMT_DIGEST_INIT, "algo-1algo-2"));
}

static void test_health_ready(void **state)
{
	struct t *t = *state;

	feeds(t, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_string_equal(body_of(t), "{\"status\":\"ok\"}\n");
	feeds(t, "GET /readyz HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_string_equal(body_of(t), "{\"status\":\"ready\"}\n");
	t->f.healthy = t->f.ready = 0;
	feeds(t, "GET /healthz HTTP/1.1\r\n\r\n");
	assert_status(t, 503);
	assert_string_equal(body_of(t), "{\"status\":\"unhealthy\"}\n");
	feeds(t, "GET /readyz HTTP/1.1\r\n\r\n");
	assert_status(t, 503);
	assert_string_equal(body_of(t), "{\"status\":\"not ready\"}\n");
}

static void post(struct t *t, const char *path, const char *body)
{
	char req[1024];

	snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nContent-Length: %zu\r\n\r\n%s",
		 path, strlen(body), body);
	feeds(t, req);
}

static void test_kill(void **state)
{
	struct t *t = *state;
	static const struct { const char *body; int signo; } ok[] = {
		{ "", SIGTERM }, { "{}", SIGTERM }, { "{\"signal\":\"KILL\"}", SIGKILL },
		{ "{\"signal\":\"sigusr1\"}", SIGUSR1 }, { "{\"signal\":2}", SIGINT },
		{ "{\"signal\":\"15\"}", SIGTERM }, { "{\"signal\":40}", 40 },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		post(t, SMT_PATH_KILL, ok[i].body);
		assert_status(t, 202);
		assert_int_equal(t->f.last_signo, ok[i].signo);
	}
	assert_int_equal(t->f.kills, 7);
	post(t, SMT_PATH_KILL, "{\"signal\":\"HUP\"}");
	assert_string_equal(body_of(t), "{\"signal\":\"HUP\"}\n");

	static const char *const bad[] = {
		"{\"signal\":\"FOO\"}", "{\"signal\":0}", "{\"signal\":65}", "{\"signal\":-9}",
		"{\"signal\":null}", "{\"signal\":[]}", "[]", "\"TERM\"", "not json",
		"{\"signal\":\"TERM\",\"signal\":\"KILL\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		post(t, SMT_PATH_KILL, bad[i]);
		assert_status(t, 400);
		assert_has(body_of(t), "{\"error\":");
	}
	assert_int_equal(t->f.kills, 8);
	assert_false(smt_httpconn_closing(t->c));

	t->f.has_job = 0;
	post(t, SMT_PATH_KILL, "");
	assert_status(t, 409);
	assert_has(body_of(t), "there is no job to signal");
}

static void test_kill_denied(void **state)
{
	struct t *t = setup_peer(1000, 0);

	post(t, SMT_PATH_KILL, "{\"signal\":\"KILL\"}");
	assert_status(t, 403);
	assert_string_equal(body_of(t), "{\"error\":\"permission denied: uid 1000 may not "
			    "change the job (only root or uid 1234)\"}\n");
	assert_int_equal(t->f.kills, 0);
	post(t, SMT_PATH_RESULT, "{}");
	assert_status(t, 403);
	assert_int_equal(t->f.posts, 0);
	/* Reading stays open to every peer. */
	feeds(t, "GET /v1/status HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	*state = t;
	teardown(state);

	/* The daemon's own uid may. */
	t = setup_peer(1234, 0);
	post(t, SMT_PATH_KILL, "");
	assert_status(t, 202);
	*state = t;
	teardown(state);
	*state = NULL;
}

static void test_read_only(void **state)
{
	struct t *t = setup_peer(-1, 1);

	post(t, SMT_PATH_KILL, "");
	assert_status(t, 403);
	assert_has(body_of(t), "read-only");
	post(t, SMT_PATH_RESULT, "{}");
	assert_status(t, 403);
	post(t, "/v1/other", "{}");
	assert_status(t, 404);
	assert_int_equal(t->f.kills + t->f.posts, 0);
	static const char *const paths[] = { SMT_PATH_STATUS, SMT_PATH_HEALTHZ, SMT_PATH_READYZ,
					     SMT_PATH_LOGS, SMT_PATH_METRICS };
	for (size_t i = 0; i < 5; i++) {
		char req[128];
		snprintf(req, sizeof req, "GET %s HTTP/1.1\r\n\r\n", paths[i]);
		feeds(t, req);
		assert_status(t, 200);
	}
	*state = t;
	teardown(state);
	*state = NULL;
}

static void test_logs(void **state)
{
	struct t *t = *state;

	feeds(t, "GET /v1/logs HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_string_equal(body_of(t), "{\"lines\":[\"hello\"]}\n");
	assert_int_equal(t->f.last_tail, SMT_LOGS_TAIL_DEFAULT);
	assert_int_equal(t->f.last_rank, -1);
	feeds(t, "GET /v1/logs?tail=5&rank=3 HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_int_equal(t->f.last_tail, 5);
	assert_int_equal(t->f.last_rank, 3);
	feeds(t, "GET /v1/logs?tail=0 HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_int_equal(t->f.last_tail, 0);

	static const char *const bad[] = {
		"tail=abc", "tail=", "tail=-1", "tail=100001", "tail=99999999999", "rank=-1",
		"rank=x", "tail=1&foo=2", "tail=1%30", "rank",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char req[128];
		snprintf(req, sizeof req, "GET /v1/logs?%s HTTP/1.1\r\n\r\n", bad[i]);
		feeds(t, req);
		assert_status(t, 400);
	}
	feeds(t, "GET /v1/logs?tail=1&foo=2 HTTP/1.1\r\n\r\n");
	assert_string_equal(body_of(t), "{\"error\":\"unknown query parameter 'foo' "
			    "(expected tail, rank)\"}\n");
	assert_false(smt_httpconn_closing(t->c));
}

static void test_metrics(void **state)
{
	struct t *t = *state;

	feeds(t, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_has(t->out, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n");
	assert_has(body_of(t), "smtd_up 1\n# HELP smtd_api_connections ");
	assert_has(body_of(t), "\nsmtd_api_requests_total 0\n");
	feeds(t, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_has(body_of(t), "\nsmtd_api_requests_total 1\n");
}

static void test_not_found_and_method(void **state)
{
	struct t *t = *state;

	feeds(t, "GET /nope HTTP/1.1\r\n\r\n");
	assert_status(t, 404);
	assert_string_equal(body_of(t), "{\"error\":\"no such path: /nope\"}\n");
	feeds(t, "GET /v1/status/ HTTP/1.1\r\n\r\n");
	assert_status(t, 404);
	post(t, "/v1/unknown", "{}");
	assert_status(t, 404);
	post(t, "/other", "{}");
	assert_status(t, 404);

	post(t, SMT_PATH_STATUS, "{}");
	assert_status(t, 405);
	assert_has(t->out, "Allow: GET, HEAD\r\n");
	feeds(t, "DELETE /healthz HTTP/1.1\r\n\r\n");
	assert_status(t, 405);
	feeds(t, "GET /v1/kill HTTP/1.1\r\n\r\n");
	assert_status(t, 405);
	assert_has(t->out, "Allow: POST\r\n");
	feeds(t, "GET /v1/result HTTP/1.1\r\n\r\n");
	assert_status(t, 405);
	assert_false(smt_httpconn_closing(t->c));
	assert_int_equal(t->stats.bad_requests, 8);
}

static void test_post_generic(void **state)
{
	struct t *t = *state;

	post(t, SMT_PATH_RESULT, "{\"exit_code\":1}");
	assert_status(t, 200);
	assert_string_equal(body_of(t), "{\"ok\":true}\n");
	assert_string_equal(t->f.post_body, "{\"exit_code\":1}");
	assert_int_equal(t->f.post_pid, 4321);
	post(t, SMT_PATH_RESULT, "");
	assert_status(t, 200);
	assert_string_equal(t->f.post_body, "-");
	post(t, SMT_PATH_RESULT, "{bad");
	assert_status(t, 400);
	assert_has(body_of(t), "the body is not valid JSON");
	assert_int_equal(t->f.posts, 2);
	/* Chunked bodies are reassembled. */
	feeds(t, "POST /v1/result HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "3\r\n{\"a\r\n5\r\n\":42}\r\n0\r\n\r\n");
	assert_status(t, 200);
	assert_string_equal(t->f.post_body, "{\"a\":42}");
}

static void test_too_large_headers(void **state)
{
	struct t *t = *state;
	size_t n = SMT_MAX_HEADER_BYTES + 100;
	char *req = malloc(n + 64);

	int off = sprintf(req, "GET /v1/status HTTP/1.1\r\nX-Big: ");
	memset(req + off, 'a', n);
	strcpy(req + off + n, "\r\n\r\n");
	feeds(t, req);
	assert_status(t, 431);
	assert_has(t->out, "Connection: close\r\n");
	assert_true(smt_httpconn_closing(t->c));
	assert_string_equal(smt_httpconn_error(t->c), "headers too large");
	/* Nothing more is read. */
	assert_int_equal(feeds(t, "GET /v1/status HTTP/1.1\r\n\r\n"), 0);
	assert_string_equal(t->out, "");
	free(req);
}

static void test_too_large_headers_many(void **state)
{
	struct t *t = *state;

	/* Many small headers, fed in pieces, add up. */
	feeds(t, "GET /v1/status HTTP/1.1\r\n");
	for (int i = 0; i < 1000 && !smt_httpconn_closing(t->c); i++)
		feeds(t, "X-A: bbbbbbbbbbbbbbbb\r\n");
	assert_status(t, 431);
	/* And a long URL. */
	struct t *u = setup_peer(0, 0);
	char *req = malloc(SMT_MAX_HEADER_BYTES + 64);
	int off = sprintf(req, "GET /v1/logs?");
	memset(req + off, 'x', SMT_MAX_HEADER_BYTES);
	strcpy(req + off + SMT_MAX_HEADER_BYTES, " HTTP/1.1\r\n\r\n");
	feeds(u, req);
	assert_status(u, 431);
	free(req);
	void *s = u;
	teardown(&s);
}

static void test_too_large_body(void **state)
{
	struct t *t = *state;

	feeds(t, "POST /v1/kill HTTP/1.1\r\nContent-Length: 65537\r\n\r\n{");
	assert_status(t, 413);
	assert_true(smt_httpconn_closing(t->c));

	/* Chunked: the limit is on what arrives. */
	struct t *u = setup_peer(0, 0);
	feeds(u, "POST /v1/kill HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	char chunk[8192 + 16];
	int len = sprintf(chunk, "2000\r\n");
	memset(chunk + len, ' ', 8192);
	strcpy(chunk + len + 8192, "\r\n");
	for (int i = 0; i < 9 && !smt_httpconn_closing(u->c); i++)
		feeds(u, chunk);
	assert_status(u, 413);
	assert_int_equal(u->f.kills, 0);
	void *s = u;
	teardown(&s);

	/* Exactly the limit is fine. */
	u = setup_peer(0, 0);
	char *req = malloc(SMT_MAX_BODY_BYTES + 128);
	len = sprintf(req, "POST /v1/kill HTTP/1.1\r\nContent-Length: %d\r\n\r\n{}",
		      SMT_MAX_BODY_BYTES);
	memset(req + len, ' ', SMT_MAX_BODY_BYTES - 2);
	feed(u, req, (size_t)len + SMT_MAX_BODY_BYTES - 2);
	assert_status(u, 202);
	free(req);
	s = u;
	teardown(&s);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"GARBAGE\r\n\r\n", "GET / HTTP/1.1 extra\r\n\r\n", "GET /v1/status HTTP/1.1\r\nBad Header\r\n\r\n",
		"GET /v1/status HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"\x01\x02\x03", "GET /v1/status HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET \x7f HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct t *t = setup_peer(0, 0);
		feeds(t, bad[i]);
		assert_status(t, 400);
		assert_has(t->out, "Connection: close\r\n");
		assert_has(body_of(t), "{\"error\":\"malformed request");
		assert_true(smt_httpconn_closing(t->c));
		void *s = t;
		teardown(&s);
	}
}

static void test_keep_alive_and_pipelining(void **state)
{
	struct t *t = *state;

	assert_int_equal(feeds(t, "GET /healthz HTTP/1.1\r\n\r\n"), 1);
	assert_int_equal(feeds(t, "GET /readyz HTTP/1.1\r\n\r\n"), 1);
	assert_false(smt_httpconn_closing(t->c));

	assert_int_equal(feeds(t, "GET /healthz HTTP/1.1\r\n\r\n"
				  "POST /v1/kill HTTP/1.1\r\nContent-Length: 16\r\n\r\n{\"signal\":\"INT\"}"
				  "GET /nope HTTP/1.1\r\n\r\n"
				  "GET /readyz HTTP/1.1\r\n\r\n"), 4);
	const char *a = strstr(t->out, "HTTP/1.1 200");
	const char *b = strstr(t->out, "HTTP/1.1 202");
	const char *c = strstr(t->out, "HTTP/1.1 404");
	const char *d = strstr(a + 1, "{\"status\":\"ready\"}");
	assert_true(a && b && c && d && a < b && b < c && c < d);
	assert_int_equal(t->f.last_signo, SIGINT);
	assert_false(smt_httpconn_closing(t->c));
}

static void test_byte_by_byte(void **state)
{
	struct t *t = *state;
	const char *req = "POST /v1/kill HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n{\"signal\":\"USR2\"}";
	int done = 0;

	for (size_t i = 0; req[i]; i++) {
		done += feed(t, req + i, 1);
		if (req[i + 1])
			assert_string_equal(t->out, "");
	}
	assert_int_equal(done, 1);
	assert_status(t, 202);
	assert_int_equal(t->f.last_signo, SIGUSR2);
}

static void test_connection_close(void **state)
{
	struct t *t = *state;

	assert_int_equal(feeds(t, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"
				  "GET /healthz HTTP/1.1\r\n\r\n"), 1);
	assert_has(t->out, "Connection: close\r\n");
	assert_null(strstr(t->out + 1, "HTTP/1.1"));
	assert_true(smt_httpconn_closing(t->c));
	assert_null(smt_httpconn_error(t->c));

	struct t *u = setup_peer(0, 0);
	feeds(u, "GET /healthz HTTP/1.0\r\n\r\n");
	assert_status(u, 200);
	assert_true(smt_httpconn_closing(u->c));
	void *s = u;
	teardown(&s);
}

static void test_head_expect_upgrade(void **state)
{
	struct t *t = *state;

	feeds(t, "HEAD /v1/status HTTP/1.1\r\n\r\n");
	assert_status(t, 200);
	assert_has(t->out, "Content-Length: 36\r\n");
	assert_string_equal(body_of(t), "");

	feeds(t, "POST /v1/kill HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
	assert_string_equal(t->out, "HTTP/1.1 100 Continue\r\n\r\n");
	feeds(t, "{}");
	assert_status(t, 202);

	feeds(t, "GET /v1/status HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	assert_status(t, 400);
	assert_true(smt_httpconn_closing(t->c));
}

static void test_missing_ops(void **state)
{
	static const struct smt_api_ops none = { 0 };
	struct smt_httpconn_peer peer = { .uid = 0 };
	struct smt_httpconn *c;
	char *out;

	assert_int_equal(smt_httpconn_new(&none, NULL, &peer, NULL, &c), 0);
	assert_int_equal(smt_httpconn_feed(c, "GET /metrics HTTP/1.1\r\n\r\n", 25), 1);
	size_t len = smt_httpconn_take_output(c, &out);
	assert_true(len > 0);
	assert_memory_equal(out, "HTTP/1.1 501 ", 13);
	free(out);
	/* A POST path not in the routes is unknown, whatever the callbacks. */
	assert_int_equal(smt_httpconn_feed(c, "POST /v1/zzz HTTP/1.1\r\n\r\n", 25), 1);
	len = smt_httpconn_take_output(c, &out);
	assert_memory_equal(out, "HTTP/1.1 404 ", 13);
	free(out);
	smt_httpconn_free(c);
}


/* Every byte of the request line and the headers counts,
 * separators and line ends too. */
static void test_header_bytes_all_counted(void **state)
{
	struct t *t = *state;

	/* 2,000 headers of "X-A: b" are 16 KB of headers, in one piece. */
	size_t n = 2000, len = 0;
	char *req = malloc(64 + n * 8);
	len += (size_t)sprintf(req, "GET /v1/status HTTP/1.1\r\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(req + len, "X-A: b\r\n");
	len += (size_t)sprintf(req + len, "\r\n");
	assert_int_equal(feed(t, req, len), 0);
	assert_status(t, 431);
	assert_string_equal(body_of(t), "{\"error\":\"headers too large\"}\n");
	assert_true(smt_httpconn_closing(t->c));
	assert_int_equal(t->f.statuses, 0);
	free(req);

	/* The limit is exact: SMT_MAX_HEADER_BYTES from the request line to the
	 * empty line are fine, one more byte is not. */
	for (size_t extra = 0; extra < 2; extra++) {
		struct t *u = setup_peer(0, 0);
		const char *head = "GET /healthz HTTP/1.1\r\nX-Pad: ";
		size_t total = SMT_MAX_HEADER_BYTES + extra;
		size_t pad = total - strlen(head) - 4;
		req = malloc(total + 1);
		strcpy(req, head);
		memset(req + strlen(head), 'p', pad);
		memcpy(req + strlen(head) + pad, "\r\n\r\n", 5);
		assert_int_equal(strlen(req), total);
		feeds(u, req);
		assert_status(u, extra ? 431 : 200);
		free(req);
		void *s = u;
		teardown(&s);
	}
}

/* Only a trusted peer on the Unix socket speaks for the
 * leader. */
static void test_leader_header_trusted_only(void **state)
{
	static const struct { int uid, read_only, leader; } peers[] = {
		{ 0, 0, 1 },       /* root on the Unix socket */
		{ 1234, 0, 1 },    /* the daemon's own uid */
		{ 1000, 0, 0 },    /* another local user */
		{ -1, 1, 0 },      /* TCP (--health-listen) */
		{ 0, 1, 0 },       /* read-only, whatever the uid */
	};
	for (size_t i = 0; i < sizeof peers / sizeof peers[0]; i++) {
		struct t *t = setup_peer(peers[i].uid, peers[i].read_only);
		feeds(t, "GET /v1/status HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
		assert_status(t, 200);
		assert_int_equal(t->f.leader_contacts, peers[i].leader);
		assert_int_equal(smt_httpconn_from_leader(t->c), peers[i].leader);
		/* What only the leader may read is asked for only then. */
		assert_int_equal(t->f.status_flags, peers[i].leader ? SMT_STATUS_LEADER : 0);
		void *s = t;
		teardown(&s);
	}
	(void)state;
}

/* A worker's TCP channel: only a request with the token is served (as
 * root's, the leader's header honoured); any other gets 403, closes the
 * connection and reaches no callback. */
static void test_channel_token(void **state)
{
	static const char token[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const char *const refused[] = {
		"GET /v1/status HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n\r\n",
		/* the right length, one digit off */
		"GET /v1/status HTTP/1.1\r\nX-Smtd-Token: "
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee\r\n\r\n",
		/* one digit short, one too many, empty */
		"GET /v1/status HTTP/1.1\r\nX-Smtd-Token: "
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n\r\n",
		"GET /v1/status HTTP/1.1\r\nX-Smtd-Token: "
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\r\n\r\n",
		"GET /v1/status HTTP/1.1\r\nX-Smtd-Token: \r\n\r\n",
		"POST /v1/kill HTTP/1.1\r\nX-Smtd-Leader: 1\r\nContent-Length: 17\r\n\r\n"
		"{\"signal\":\"KILL\"}",
	};
	struct smt_httpconn_peer peer = { .uid = 0, .daemon_uid = 1234, .token = token };

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		struct t *t = calloc(1, sizeof *t);
		assert_non_null(t);
		t->f.healthy = t->f.ready = t->f.has_job = 1;
		assert_int_equal(smt_httpconn_new(&ops, &t->f, &peer, &t->stats, &t->c), 0);
		feeds(t, refused[i]);
		assert_status(t, 403);
		assert_has(t->out, "this channel serves only the job's leader (no valid "
			   "X-Smtd-Token)");
		assert_true(smt_httpconn_closing(t->c));
		assert_int_equal(t->f.statuses + t->f.kills + t->f.leader_contacts, 0);
		void *s = t;
		teardown(&s);
	}
	struct t *t = calloc(1, sizeof *t);
	assert_non_null(t);
	assert_int_equal(smt_httpconn_new(&ops, &t->f, &peer, &t->stats, &t->c), 0);
	feeds(t, "GET /v1/status HTTP/1.1\r\nx-smtd-token: "
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n"
		 "X-Smtd-Leader: 1\r\n\r\n");
	assert_status(t, 200);
	assert_int_equal(t->f.leader_contacts, 1);
	assert_int_equal(t->f.status_flags, SMT_STATUS_LEADER);
	assert_false(smt_httpconn_closing(t->c));
	void *s = t;
	teardown(&s);
	(void)state;
}

/* keep=1 (a poll held with no time): only the leader, only on a TCP
 * channel; anywhere else, or another value, is a 400 that says why, and
 * nothing is held. */
static void test_keep_poll(void **state)
{
	static const char token[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
#define TOKEN_LINE "X-Smtd-Token: " \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n"
	static const struct {
		int channel;
		const char *req, *why;
	} cases[] = {
		{ 0, "GET /v1/status?wait=7&keep=1 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n",
		  "keep=1 is for the leader on a worker's TCP channel" },
		{ 0, "GET /v1/lines?from=0&wait=10&keep=1 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n",
		  "keep=1 is for the leader on a worker's TCP channel" },
		{ 1, "GET /v1/status?wait=7&keep=1 HTTP/1.1\r\n" TOKEN_LINE "\r\n",
		  "keep=1 is for the leader on a worker's TCP channel" },
		{ 1, "GET /v1/status?wait=7&keep=2 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n" TOKEN_LINE
		     "\r\n", "keep must be 0 or 1" },
		{ 1, "GET /v1/status?wait=7&keep=yes HTTP/1.1\r\nX-Smtd-Leader: 1\r\n" TOKEN_LINE
		     "\r\n", "keep must be 0 or 1" },
	};
	struct smt_httpconn_peer chan = { .uid = 0, .daemon_uid = 1234, .token = token };
	struct t *t;
	void *s;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].channel) {
			t = calloc(1, sizeof *t);
			assert_non_null(t);
			t->f.healthy = t->f.ready = t->f.has_job = 1;
			assert_int_equal(smt_httpconn_new(&ops, &t->f, &chan, &t->stats, &t->c), 0);
		} else {
			t = setup_peer(0, 0);
		}
		feeds(t, cases[i].req);
		assert_int_equal(smt_httpconn_held(t->c), 0);
		assert_status(t, 400);
		assert_has(t->out, cases[i].why);
		s = t;
		teardown(&s);
	}
	/* The leader on the channel: held, with no time. */
	t = calloc(1, sizeof *t);
	assert_non_null(t);
	t->f.healthy = t->f.ready = t->f.has_job = 1;
	assert_int_equal(smt_httpconn_new(&ops, &t->f, &chan, &t->stats, &t->c), 0);
	feeds(t, "GET /v1/status?wait=7&timeout=10&keep=1 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n"
		 TOKEN_LINE "\r\n");
	assert_int_equal(smt_httpconn_held(t->c), SMT_HOLD_KEPT);
	assert_int_equal(smt_httpconn_release(t->c), 1);
	feeds(t, "");
	assert_status(t, 200);
	s = t;
	teardown(&s);
	/* ... and so is its fetch of the lines. */
	t = calloc(1, sizeof *t);
	assert_non_null(t);
	assert_int_equal(smt_httpconn_new(&ops, &t->f, &chan, &t->stats, &t->c), 0);
	feeds(t, "GET /v1/lines?from=0&wait=10&keep=1 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n"
		 TOKEN_LINE "\r\n");
	assert_int_equal(smt_httpconn_held(t->c), SMT_HOLD_KEPT);
	assert_true(smt_httpconn_held_lines(t->c));
	s = t;
	teardown(&s);
#undef TOKEN_LINE
	(void)state;
}

/* GET /v1/lines&gen=G: held while the generation is G and there are no
 * lines, answered at once with the brief status when it is not; a held one
 * is answered by a change of the status (smt_httpconn_held_news); a gen
 * that is no number is a 400 that says why. */
static void test_lines_gen(void **state)
{
	static const char *const bad[] = {
		"GET /v1/lines?from=0&wait=10&gen=x HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n",
		"GET /v1/lines?from=0&wait=10&gen=-3 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n",
	};
	struct t *t;
	void *s;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		t = setup_peer(0, 0);
		feeds(t, bad[i]);
		assert_int_equal(smt_httpconn_held(t->c), 0);
		assert_status(t, 400);
		assert_has(t->out, "from (and max, wait, gen) must be non-negative integers");
		s = t;
		teardown(&s);
	}
	/* Another generation than the worker's (7): the status, at once,
	 * brief, and no lines taken. */
	t = setup_peer(0, 0);
	feeds(t, "GET /v1/lines?from=0&wait=10&gen=6 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
	assert_int_equal(smt_httpconn_held(t->c), 0);
	assert_status(t, 200);
	assert_has(t->out, "Content-Type: " SMT_CONTENT_TYPE_JSON "\r\n");
	assert_has(t->out, "\"state\":\"running\"");
	assert_int_equal(t->f.statuses, 1);
	assert_true(t->f.status_flags & SMT_STATUS_BRIEF);
	assert_int_equal(t->f.lines_calls, 0);
	s = t;
	teardown(&s);
	/* The worker's: held, and a change of the status answers it. */
	t = setup_peer(0, 0);
	feeds(t, "GET /v1/lines?from=0&wait=10&gen=7 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
	assert_int_not_equal(smt_httpconn_held(t->c), 0);
	assert_true(smt_httpconn_held_news(t->c));
	assert_int_equal(smt_httpconn_release(t->c), 1);
	feeds(t, "");
	assert_status(t, 200);
	assert_has(t->out, "Content-Type: " SMT_CONTENT_TYPE_LINES "\r\n");
	assert_int_equal(t->f.statuses, 0);
	s = t;
	teardown(&s);
	/* Without gen, a held fetch is the lines' business only. */
	t = setup_peer(0, 0);
	feeds(t, "GET /v1/lines?from=0&wait=10 HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
	assert_true(smt_httpconn_held_lines(t->c));
	assert_false(smt_httpconn_held_news(t->c));
	s = t;
	teardown(&s);
	(void)state;
}

/* Pipelined requests are answered one at a time, each
 * only when the caller asks for the next. */
static void test_pipelined_one_at_a_time(void **state)
{
	struct t *t = *state;
	const char *first = "GET /v1/logs?tail=1 HTTP/1.1\r\n\r\n";
	const char *three = "GET /v1/logs?tail=1 HTTP/1.1\r\n\r\n"
			    "GET /v1/logs?tail=2 HTTP/1.1\r\n\r\n"
			    "GET /readyz HTTP/1.1\r\n\r\n";
	char *out;

	assert_int_equal(smt_httpconn_feed(t->c, three, strlen(three)), 1);
	assert_int_equal(t->f.last_tail, 1);
	assert_int_equal(smt_httpconn_pending(t->c), strlen(three) - strlen(first));
	size_t len = smt_httpconn_take_output(t->c, &out);
	assert_true(len > 0);
	assert_memory_equal(out, "HTTP/1.1 200 ", 13);
	assert_null(memmem(out + 1, len - 1, "HTTP/1.1", 8));
	free(out);
	/* More input waits behind what is kept. */
	assert_int_equal(smt_httpconn_feed(t->c, "GET /healthz HTTP/1.1\r\n\r\n", 25), 0);
	assert_int_equal(smt_httpconn_take_output(t->c, &out), 0);
	assert_int_equal(smt_httpconn_next(t->c), 1);
	assert_int_equal(t->f.last_tail, 2);
	smt_httpconn_take_output(t->c, &out);
	free(out);
	assert_int_equal(smt_httpconn_next(t->c), 1);
	len = smt_httpconn_take_output(t->c, &out);
	assert_non_null(memmem(out, len, "ready", 5));
	free(out);
	assert_int_equal(smt_httpconn_next(t->c), 1);
	len = smt_httpconn_take_output(t->c, &out);
	assert_non_null(memmem(out, len, "\"ok\"", 4));
	free(out);
	assert_int_equal(smt_httpconn_pending(t->c), 0);
	assert_int_equal(smt_httpconn_next(t->c), 0);
}

/* Release a deferred request and render its answer to the end, as the
 * server's idle handle does a step per turn; returns the steps taken. */
static int answer_deferred(struct t *t)
{
	int steps = 0;

	while (smt_httpconn_deferred(t->c)) {
		int r = smt_httpconn_release(t->c);
		assert_int_equal(r, smt_httpconn_deferred(t->c) ? 0 : 1);
		steps++;
	}
	return steps;
}

/* Large answers wait for smt_httpconn_release when deferring is on; the
 * leader's requests and small answers never wait. */
static void test_deferred(void **state)
{
	struct t *t = *state;
	char *out;

	smt_httpconn_set_defer(t->c, 1);
	assert_int_equal(feeds(t, "GET /v1/logs?tail=3 HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n"), 0);
	assert_string_equal(t->out, "");
	assert_true(smt_httpconn_deferred(t->c));
	assert_false(smt_httpconn_closing(t->c));
	assert_int_equal(t->f.last_tail, 0);
	/* The request behind it waits too: answers stay in order. */
	assert_int_equal(smt_httpconn_next(t->c), 0);
	assert_int_equal(smt_httpconn_take_output(t->c, &out), 0);
	/* Started: the logs are built, then rendered in a step. */
	assert_int_equal(answer_deferred(t), 2);
	assert_false(smt_httpconn_deferred(t->c));
	assert_int_equal(t->f.last_tail, 3);
	assert_int_equal(feeds(t, ""), 1);
	assert_has(t->out, "{\"lines\":[\"hello\"]}\n");
	assert_has(t->out, "\"ok\"");

	/* HEAD of status, and metrics, wait too; healthz, readyz and kill not. */
	feeds(t, "HEAD /v1/status HTTP/1.1\r\n\r\n");
	assert_true(smt_httpconn_deferred(t->c));
	answer_deferred(t);
	feeds(t, "");
	assert_has(t->out, "Content-Length: 36\r\n");
	assert_string_equal(body_of(t), "");
	feeds(t, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_true(smt_httpconn_deferred(t->c));
	assert_int_equal(answer_deferred(t), 1);
	feeds(t, "GET /readyz HTTP/1.1\r\n\r\nPOST /v1/kill HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	assert_false(smt_httpconn_deferred(t->c));
	assert_int_equal(t->f.kills, 1);

	/* The leader's requests are answered at once. */
	feeds(t, "GET /v1/status HTTP/1.1\r\nX-Smtd-Leader: 1\r\n\r\n");
	assert_false(smt_httpconn_deferred(t->c));
	assert_status(t, 200);
	/* A deferred long poll is held once released, then rendered. */
	smt_httpconn_set_defer(t->c, 1);
	feeds(t, "GET /v1/status?wait=7&timeout=50 HTTP/1.1\r\n\r\n");
	assert_true(smt_httpconn_deferred(t->c));
	assert_int_equal(smt_httpconn_release(t->c), 0);
	assert_int_equal(smt_httpconn_held(t->c), 50);
	assert_int_equal(smt_httpconn_release(t->c), 0);
	assert_true(smt_httpconn_rendering(t->c));
	assert_int_equal(answer_deferred(t), 1);
	feeds(t, "");
	assert_string_equal(body_of(t), "{\"role\":\"leader\",\"state\":\"running\"}\n");
}

/* A value with every kind of JSON in it, large enough to take many steps. */
static json_t *big_value(void)
{
	json_t *lines = json_array();
	for (int i = 0; i < 3000; i++)
		json_array_append_new(lines, json_pack("{s:i, s:s, s:f, s:n, s:b, s:[], s:{}, s:[i,s]}",
			"rank", i, "line", i % 3 ? "caf\xc3\xa9 \"quoted\" \\ \t\x01" : "",
			"t", i / 7.0, "none", "ok", i & 1, "empty", "obj", "pair", i, "\xe2\x82\xac"));
	json_t *ranks = json_array();
	for (int i = 0; i < 40; i++)
		json_array_append_new(ranks, json_pack("{s:i, s:[i,i,i]}", "rank", i, "x", 1, 2, 3));
	return json_pack("{s:o, s:{s:o, s:{}, s:[[[i]]]}, s:[], s:s, s:{s:s}}", "lines", lines,
			 "job", "ranks", ranks, "empty", "deep", 1, "none", "version", "1.0",
			 "\xc3\xbc\"key\n", "k", "v");
}

/* With a value in CTX, the daemon keeps the answer it gives (a cache):
 * rendering must leave it whole. */
static json_t *f_big_logs(void *ctx, long tail, long rank)
{
	json_t **kept = ctx;
	return kept && *kept ? json_incref(*kept) : big_value();
}

/* A large answer rendered a step at a time is the same text json_dumps
 * gives, and takes many steps. */
static void test_render_in_steps(void **state)
{
	static const struct smt_api_ops big_ops = { .logs = f_big_logs };
	struct smt_httpconn_peer peer = { .uid = 0 };
	struct smt_httpconn *c;
	char *out;

	(void)state;
	assert_int_equal(smt_httpconn_new(&big_ops, NULL, &peer, NULL, &c), 0);
	smt_httpconn_set_defer(c, 1);
	assert_int_equal(smt_httpconn_feed(c, "GET /v1/logs HTTP/1.1\r\n\r\n", 26), 0);
	int steps = 0, r;
	while ((r = smt_httpconn_release(c)) == 0) {
		assert_int_equal(smt_httpconn_take_output(c, &out), 0);
		steps++;
	}
	assert_int_equal(r, 1);
	/* 3,000 lines, 256 values a step. */
	assert_true(steps >= 11);
	size_t len = smt_httpconn_take_output(c, &out);
	json_t *v = big_value();
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(v);
	const char *body = strstr(out, "\r\n\r\n") + 4;
	assert_int_equal(strlen(body), strlen(want) + 1);
	assert_memory_equal(body, want, strlen(want));
	assert_int_equal(body[strlen(want)], '\n');
	char cl[64];
	snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", strlen(want) + 1);
	assert_non_null(strstr(out, cl));
	assert_int_equal((size_t)(body - out) + strlen(body), len);
	free(want);
	free(out);
	/* Freed half-way: no leak. */
	assert_int_equal(smt_httpconn_feed(c, "GET /v1/logs HTTP/1.1\r\n\r\n", 26), 0);
	assert_int_equal(smt_httpconn_release(c), 0);
	assert_int_equal(smt_httpconn_release(c), 0);
	smt_httpconn_free(c);

	/* A value the daemon still holds is rendered the same and left whole. */
	json_t *kept = big_value();
	char *before = json_dumps(kept, JSON_COMPACT | JSON_ENSURE_ASCII);
	assert_int_equal(smt_httpconn_new(&big_ops, &kept, &peer, NULL, &c), 0);
	smt_httpconn_set_defer(c, 1);
	assert_int_equal(smt_httpconn_feed(c, "GET /v1/logs HTTP/1.1\r\n\r\n", 26), 0);
	while ((r = smt_httpconn_release(c)) == 0)
		;
	assert_int_equal(r, 1);
	smt_httpconn_take_output(c, &out);
	assert_non_null(strstr(out, before));
	char *after = json_dumps(kept, JSON_COMPACT | JSON_ENSURE_ASCII);
	assert_string_equal(after, before);
	free(out);
	free(before);
	free(after);
	json_decref(kept);
	smt_httpconn_free(c);
}

/* A long poll that closes the connection is held and
 * then answered, and releasing it never touches a parser in error state
 * (libhttp-parser asserts on that: an abort of PID 1). */
static void test_long_poll_that_closes(void **state)
{
	static const char *const polls[] = {
		"GET /v1/status?wait=7&timeout=100 HTTP/1.1\r\nConnection: close\r\n\r\n",
		"GET /v1/status?wait=7&timeout=100 HTTP/1.0\r\n\r\n",
	};
	for (size_t i = 0; i < 2; i++) {
		struct t *t = setup_peer(0, 0);
		assert_int_equal(feeds(t, polls[i]), 0);
		assert_int_equal(smt_httpconn_held(t->c), 100);
		assert_string_equal(t->out, "");
		/* Not closing yet: the answer is still to come. */
		assert_false(smt_httpconn_closing(t->c));
		/* Whatever follows a closing request is ignored. */
		assert_int_equal(feeds(t, "GET /healthz HTTP/1.1\r\n\r\n"), 0);
		assert_int_equal(smt_httpconn_release(t->c), 1);
		assert_int_equal(feeds(t, ""), 0);
		assert_status(t, 200);
		assert_has(t->out, "Connection: close\r\n");
		assert_string_equal(body_of(t), "{\"role\":\"leader\",\"state\":\"running\"}\n");
		assert_true(smt_httpconn_closing(t->c));
		assert_null(smt_httpconn_error(t->c));
		/* Releasing again, parsing again: nothing, and no abort. */
		assert_int_equal(smt_httpconn_release(t->c), 0);
		assert_int_equal(smt_httpconn_next(t->c), 0);
		assert_int_equal(smt_httpconn_feed(t->c, "x", 1), 0);
		void *s = t;
		teardown(&s);
	}
	(void)state;
}

/* A held poll with more requests behind it, some malformed: answered in
 * order, the parser resumed only from a pause. */
static void test_long_poll_then_more(void **state)
{
	struct t *t = *state;

	feeds(t, "GET /v1/status?wait=7&timeout=10 HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\n\r\nBAD\r\n\r\n");
	assert_int_equal(smt_httpconn_held(t->c), 10);
	assert_int_equal(smt_httpconn_release(t->c), 1);
	assert_int_equal(feeds(t, ""), 1);
	const char *a = strstr(t->out, "\"state\":\"running\"");
	const char *b = strstr(t->out, "\"ready\"");
	const char *c = strstr(t->out, "HTTP/1.1 400 ");
	assert_true(a && b && c && a < b && b < c);
	assert_true(smt_httpconn_closing(t->c));
	assert_int_equal(smt_httpconn_release(t->c), 0);
	/* Release in other states is harmless too. */
	struct t *u = setup_peer(0, 0);
	assert_int_equal(smt_httpconn_release(u->c), 0);
	feeds(u, "\x01\x02");
	assert_int_equal(smt_httpconn_release(u->c), 0);
	assert_int_equal(smt_httpconn_next(u->c), 0);
	void *s = u;
	teardown(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_brief, setup, teardown),
		cmocka_unit_test_setup_teardown(test_health_ready, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
		cmocka_unit_test(test_kill_denied),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test_setup_teardown(test_logs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found_and_method, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_generic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_headers_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_body, setup, teardown),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test_setup_teardown(test_keep_alive_and_pipelining, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_by_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connection_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_expect_upgrade, setup, teardown),
		cmocka_unit_test(test_missing_ops),
		cmocka_unit_test_setup_teardown(test_header_bytes_all_counted, setup, teardown),
		cmocka_unit_test(test_leader_header_trusted_only),
		cmocka_unit_test(test_channel_token),
		cmocka_unit_test(test_keep_poll),
		cmocka_unit_test(test_lines_gen),
		cmocka_unit_test_setup_teardown(test_pipelined_one_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred, setup, teardown),
		cmocka_unit_test(test_render_in_steps),
		cmocka_unit_test(test_long_poll_that_closes),
		cmocka_unit_test_setup_teardown(test_long_poll_then_more, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
