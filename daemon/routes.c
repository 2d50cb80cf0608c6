/*
 * routes.c - the control API's endpoints: which path and method does
 * what, with which of the daemon's callbacks (api.h), and how each reads
 * its query.  The framing of requests and answers is httpconn.c's.
 *
 * One table (routes[]) says, for every path and method, the callback that
 * must exist, the handler, and whether the answer grows with the job
 * (LARGE: deferred and serialized a step at a time for clients other than
 * the leader).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpconn_int.h"
#include "strv.h"

/* The value of KEY in a query string, as a number; -1 when absent, -2 when
 * not a number. */
static long long query_number(const char *query, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
		if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
			char *end;
			errno = 0;
			long long v = strtoll(p + klen + 1, &end, 10);
			if (errno || end == p + klen + 1 || (*end && *end != '&') || v < 0)
				return -2;
			return v;
		}
	}
	return -1;
}

/* The status's host list replaced by its digest (SMT_Q_BRIEF): a worker
 * of 1000 hosts answers the leader's every watch with a few hundred bytes,
 * not 30 KB the leader would parse. */
static void make_brief(json_t *v)
{
	json_t *hosts = json_object_get(v, SMT_F_HOSTS), *h;
	size_t n = json_array_size(hosts), i;
	const char **names;
	char text[SMT_DIGEST_TEXT];

	if (!json_is_array(hosts) || !(names = calloc(n ? n : 1, sizeof(*names))))
		return;
	json_array_foreach(hosts, i, h)
		names[i] = json_string_value(json_object_get(h, SMT_F_HOST));
	smt_digest_text(names, n, text);
	free(names);
	json_object_del(v, SMT_F_HOSTS);
	json_object_set_new(v, SMT_F_HOSTS_DIGEST, json_string(text));
}

void smt_routes_status(struct smt_httpconn *c)
{
	json_t *v = c->ops->status(c->ctx, (c->brief ? SMT_STATUS_BRIEF : 0) |
					       (c->leader_req ? SMT_STATUS_LEADER : 0));
	if (v && c->brief && json_object_get(v, SMT_F_HOSTS))
		make_brief(v);
	if (!v) {
		smt_httpconn_respond_error(c, 500, NULL, "the daemon could not render its status");
		return;
	}
	smt_httpconn_respond_large(c, 200, v);
}

/* keep=1 (SMT_Q_KEEP): only the leader, only on a TCP channel, whose
 * keepalive tells whether it lives; a poll held with no time anywhere else
 * would hold its connection's place for good.  0 when refused (answered). */
static int keep_allowed(struct smt_httpconn *c, const char *query)
{
	long long keep = query_number(query, SMT_Q_KEEP);

	if (keep == -1 || keep == 0)
		return 1;
	if (keep != 1) {
		smt_httpconn_respond_error(c, 400, NULL, "keep must be 0 or 1");
		return 0;
	}
	if (!c->leader_req || !c->peer.token) {
		smt_httpconn_respond_error(c, 400, NULL,
					   "keep=1 is for the leader on a worker's TCP channel");
		return 0;
	}
	return 1;
}

static void do_status(struct smt_httpconn *c, const char *query)
{
	long long wait = query_number(query, SMT_Q_WAIT);
	long long timeout = query_number(query, SMT_Q_TIMEOUT);

	c->brief = query_number(query, SMT_Q_BRIEF) == 1;
	if (wait == -2 || timeout == -2) {
		smt_httpconn_respond_error(c, 400, NULL,
					   "wait and timeout must be non-negative integers");
		return;
	}
	if (!keep_allowed(c, query))
		return;
	/* Hold the answer while the status is still the one the client has:
	 * the leader's watch of a worker, with no polling on either side. */
	if (wait >= 0 && c->ops->generation && wait == c->ops->generation(c->ctx)) {
		c->wait = WAIT_POLL;
		c->hold_ms = query_number(query, SMT_Q_KEEP) == 1 ? SMT_HOLD_KEPT :
			timeout < 0 ? 5000 :
			timeout > 60000  ? 60000 :
			timeout          ? (unsigned)timeout :
					   1;
		return;
	}
	smt_routes_status(c);
}

static void do_healthz(struct smt_httpconn *c, const char *query)
{
	int ok = c->ops->healthy(c->ctx);
	smt_httpconn_respond_json(c, ok ? 200 : 503,
		     json_pack("{ss}", SMT_F_STATUS, ok ? "ok" : "unhealthy"), NULL);
}

static void do_readyz(struct smt_httpconn *c, const char *query)
{
	int ok = c->ops->ready(c->ctx);
	smt_httpconn_respond_json(c, ok ? 200 : 503,
		     json_pack("{ss}", SMT_F_STATUS, ok ? "ready" : "not ready"), NULL);
}

/* A decimal number of at most 9 digits, so it always fits. */
static int parse_small_uint(const char *s, size_t len, long *out)
{
	if (len == 0 || len > 9)
		return -EINVAL;
	long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static void do_logs(struct smt_httpconn *c, const char *query)
{
	long tail = SMT_LOGS_TAIL_DEFAULT, rank = -1;

	for (const char *p = query; p && *p;) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t klen = eq ? (size_t)(eq - p) : len;
		const char *val = eq ? eq + 1 : p + len;
		size_t vlen = len - klen - (eq ? 1 : 0);

		if (klen == strlen(SMT_Q_TAIL) && memcmp(p, SMT_Q_TAIL, klen) == 0) {
			if (parse_small_uint(val, vlen, &tail) < 0 || tail > SMT_LOGS_TAIL_MAX) {
				smt_httpconn_respond_error(c, 400, NULL,
							   "%s must be an integer from 0 to %d",
							   SMT_Q_TAIL, SMT_LOGS_TAIL_MAX);
				return;
			}
		} else if (klen == strlen(SMT_Q_RANK) && memcmp(p, SMT_Q_RANK, klen) == 0) {
			if (parse_small_uint(val, vlen, &rank) < 0) {
				smt_httpconn_respond_error(c, 400, NULL,
							   "%s must be a non-negative integer",
							   SMT_Q_RANK);
				return;
			}
		} else if (len > 0) {
			smt_httpconn_respond_error(
				c, 400, NULL, "unknown query parameter '%.*s' (expected %s, %s)",
				(int)(klen > 64 ? 64 : klen), p, SMT_Q_TAIL, SMT_Q_RANK);
			return;
		}
		p = end ? end + 1 : NULL;
	}
	json_t *v = c->ops->logs(c->ctx, tail, rank);
	if (!v) {
		smt_httpconn_respond_error(c, 500, NULL, "the daemon could not render its logs");
		return;
	}
	smt_httpconn_respond_large(c, 200, v);
}

static void do_metrics(struct smt_httpconn *c, const char *query)
{
	char *text = c->ops->metrics(c->ctx);
	if (!text) {
		smt_httpconn_respond_error(c, 500, NULL, "the daemon could not render its metrics");
		return;
	}
	size_t len = strlen(text);
	const struct smt_api_stats zero = { 0 };
	const struct smt_api_stats *s = c->stats ? c->stats : &zero;
	char *all = NULL;
	int n = asprintf(
		&all,
		"%s%s"
		"# HELP smtd_api_connections Open connections to the control API.\n"
		"# TYPE smtd_api_connections gauge\n"
		"smtd_api_connections %lu\n"
		"# HELP smtd_api_connections_total Connections accepted by the control API.\n"
		"# TYPE smtd_api_connections_total counter\n"
		"smtd_api_connections_total %lu\n"
		"# HELP smtd_api_rejected_connections_total Connections closed at once because too "
		"many were open.\n"
		"# TYPE smtd_api_rejected_connections_total counter\n"
		"smtd_api_rejected_connections_total %lu\n"
		"# HELP smtd_api_timeouts_total Connections dropped for not completing a request "
		"in time.\n"
		"# TYPE smtd_api_timeouts_total counter\n"
		"smtd_api_timeouts_total %lu\n"
		"# HELP smtd_api_requests_total Requests answered by the control API.\n"
		"# TYPE smtd_api_requests_total counter\n"
		"smtd_api_requests_total %lu\n"
		"# HELP smtd_api_bad_requests_total Requests refused with a 4xx status by the "
		"control API.\n"
		"# TYPE smtd_api_bad_requests_total counter\n"
		"smtd_api_bad_requests_total %lu\n",
		text, len && text[len - 1] != '\n' ? "\n" : "", s->connections, s->accepted,
		s->rejected, s->timeouts, s->requests, s->bad_requests);
	free(text);
	if (n < 0) {
		c->oom = 1;
		return;
	}
	smt_httpconn_respond(c, 200, SMT_CONTENT_TYPE_METRICS, all, (size_t)n, NULL);
	free(all);
}

/* The body of a POST as JSON: NULL with *BAD = 0 when it is empty. */
static json_t *parse_body(struct smt_httpconn *c, int *bad)
{
	json_error_t err;

	*bad = 0;
	if (smt_dynbuf_len(&c->body) == 0)
		return NULL;
	json_t *v = json_loadb(smt_dynbuf_ptr(&c->body), smt_dynbuf_len(&c->body),
			       JSON_REJECT_DUPLICATES, &err);
	if (!v) {
		*bad = 1;
		smt_httpconn_respond_error(c, 400, NULL, "the body is not valid JSON: %s",
					   err.text);
	}
	return v;
}

static void do_kill(struct smt_httpconn *c, const char *query)
{
	int bad, signo = SIGTERM;
	json_t *body = parse_body(c, &bad);

	if (bad)
		return;
	if (body) {
		json_t *sig = json_is_object(body) ? json_object_get(body, SMT_F_SIGNAL) : NULL;
		if (!json_is_object(body)) {
			signo = -1;
		} else if (json_is_string(sig)) {
			signo = smt_signal_parse(json_string_value(sig));
		} else if (json_is_integer(sig)) {
			json_int_t n = json_integer_value(sig);
			signo = n >= 1 && n <= SMT_SIGNAL_MAX ? (int)n : -1;
		} else if (sig) {
			signo = -1;
		}
		json_decref(body);
		if (signo < 0) {
			smt_httpconn_respond_error(c, 400, NULL,
						   "expected a body like {\"%s\":\"TERM\"}: a "
						   "signal name or a number from 1 to %d",
						   SMT_F_SIGNAL, SMT_SIGNAL_MAX);
			return;
		}
	}
	int r = c->ops->kill(c->ctx, signo);
	if (r == -ESRCH) {
		smt_httpconn_respond_error(c, 409, NULL, "there is no job to signal");
		return;
	}
	if (r < 0) {
		smt_httpconn_respond_error(c, 500, NULL, "could not signal the job: %s",
					   strerror(-r));
		return;
	}
	const char *name = smt_signal_name(signo);
	smt_httpconn_respond_json(c, 202, name ? json_pack("{ss}", SMT_F_SIGNAL, name)
				  : json_pack("{si}", SMT_F_SIGNAL, signo), NULL);
}

/* A POST of the daemons' protocol, to the callback at OP_OFFSET. */
static void do_post(struct smt_httpconn *c, size_t op_offset)
{
	smt_api_post_fn fn;
	int bad;
	json_t *body = parse_body(c, &bad), *reply = NULL;

	if (bad)
		return;
	memcpy(&fn, (const char *)c->ops + op_offset, sizeof(fn));
	int status = fn(c->ctx, body, c->peer.pid, &reply);
	json_decref(body);
	if (status < 100 || status > 599) {
		json_decref(reply);
		smt_httpconn_respond_error(c, 500, NULL, "the daemon gave no valid answer");
		return;
	}
	if (!reply) {
		if (status >= 400) {
			smt_httpconn_respond_error(c, status, NULL, "%s", status == 404
				      ? "no such path" : smt_httpconn_reason(status));
			return;
		}
		reply = json_object();
	}
	smt_httpconn_respond_json(c, status, reply, NULL);
}

/* GET /v1/lines?from=N&max=B&wait=MS[&gen=G]: the leader takes a worker's
 * rank output (lineproto.h), held up to MS while there is none. */
int smt_routes_lines(struct smt_httpconn *c, int final)
{
	const char *body = NULL;
	size_t len = 0;
	int rc;

	/* A fetch that named a generation the status has left is answered
	 * with the status (SMT_Q_GEN): the news, on the connection the
	 * leader holds, even as this daemon closes. */
	if (c->lines_gen >= 0 && c->ops->generation &&
	    c->lines_gen != c->ops->generation(c->ctx)) {
		c->brief = 1;
		smt_routes_status(c);
		return 1;
	}
	rc = c->ops->lines(c->ctx, c->lines_from, c->lines_max, final, &body, &len);
	if (rc == -EAGAIN)
		return 0;
	if (rc == -ERANGE)
		smt_httpconn_respond_error(c, 409, NULL,
					   "from is not an offset of this host's output");
	else if (rc < 0)
		smt_httpconn_respond_error(c, rc == -ENOENT ? 404 : 500, NULL,
					   "no output to take here: %s", strerror(-rc));
	else
		smt_httpconn_respond(c, 200, SMT_CONTENT_TYPE_LINES, body, len, NULL);
	return 1;
}

static void do_lines(struct smt_httpconn *c, const char *query)
{
	long long from = query_number(query, SMT_Q_FROM);
	long long max = query_number(query, SMT_Q_MAX);
	long long wait = query_number(query, SMT_Q_WAIT);
	long long gen = query_number(query, SMT_Q_GEN);

	if (!c->leader_req) {
		smt_httpconn_respond_error(c, 403, NULL, "only the leader takes a worker's output");
		return;
	}
	if (from < 0 || max == -2 || wait == -2 || gen == -2) {
		smt_httpconn_respond_error(
			c, 400, NULL, "from (and max, wait, gen) must be non-negative integers");
		return;
	}
	if (!keep_allowed(c, query))
		return;
	c->lines_from = (uint64_t)from;
	c->lines_gen = gen;
	c->lines_max = max < 0         ? 256 * 1024 :
		max > 16 * 1024 * 1024 ? 16 * 1024 * 1024 :
					 (size_t)max;
	if (smt_routes_lines(c, wait <= 0))
		return;
	c->wait = WAIT_LINES;
	c->hold_ms = query_number(query, SMT_Q_KEEP) == 1 ? SMT_HOLD_KEPT :
		     wait > 60000 ? 60000 : (unsigned)wait;
}

/* GET /v1/stacks?id=N: the stacks a POST /v1/stacks collected. */
static void do_stacks(struct smt_httpconn *c, const char *query)
{
	long long id = query_number(query, SMT_F_ID);
	int status = 200;
	json_t *v;

	if (id == -2) {
		smt_httpconn_respond_error(c, 400, NULL, "id must be a non-negative integer");
		return;
	}
	v = c->ops->stacks(c->ctx, id, &status);
	if (!v) {
		smt_httpconn_respond_error(c, status >= 400 ? status : 500, NULL, "%s",
			      status == 404 ? "no such collection of stacks"
			      : status == 409 ? "the stacks are still being collected"
			      : "the daemon could not render the stacks");
		return;
	}
	smt_httpconn_respond_large(c, status, v);
}

enum method_kind { M_GET, M_POST };

enum answer_size { SMALL, LARGE };

/* Who may ask: TCP also serves the probes' and monitors' requests; every
 * other one is the control socket's alone (smtd(8), SECURITY): what a
 * network peer may see is this list, not what happens to be read-only. */
enum reach { SOCKET_ONLY, TCP_TOO };

static const struct route {
	const char *path;
	enum method_kind method;
	size_t op_offset;  /* which callback must exist */
	void (*handler)(struct smt_httpconn *c, const char *query);
	/* LARGE: the answer grows with the job (hosts, ranks, kept lines)
	 * and may be deferred (smt_httpconn_set_defer). */
	enum answer_size size;
	enum reach reach;
} routes[] = {
	{SMT_PATH_STATUS, M_GET, offsetof(struct smt_api_ops, status), do_status, LARGE, TCP_TOO},
	{SMT_PATH_HEALTHZ, M_GET, offsetof(struct smt_api_ops, healthy), do_healthz, SMALL,
	 TCP_TOO},
	{SMT_PATH_READYZ, M_GET, offsetof(struct smt_api_ops, ready), do_readyz, SMALL, TCP_TOO},
	{SMT_PATH_LOGS, M_GET, offsetof(struct smt_api_ops, logs), do_logs, LARGE, TCP_TOO},
	{SMT_PATH_METRICS, M_GET, offsetof(struct smt_api_ops, metrics), do_metrics, LARGE,
	 TCP_TOO},
	{SMT_PATH_KILL, M_POST, offsetof(struct smt_api_ops, kill), do_kill, SMALL, SOCKET_ONLY},
	/* The daemons' own protocol (handler NULL: the POST callback at the
	 * offset answers, do_post). */
	{SMT_PATH_RESULT, M_POST, offsetof(struct smt_api_ops, result), NULL, SMALL, SOCKET_ONLY},
	{SMT_PATH_LAUNCH, M_POST, offsetof(struct smt_api_ops, launch), NULL, SMALL, SOCKET_ONLY},
	{SMT_PATH_ORTED, M_POST, offsetof(struct smt_api_ops, orted), NULL, SMALL, SOCKET_ONLY},
	{SMT_PATH_END, M_POST, offsetof(struct smt_api_ops, end), NULL, SMALL, SOCKET_ONLY},
	{SMT_PATH_LINES, M_GET, offsetof(struct smt_api_ops, lines), do_lines, SMALL, SOCKET_ONLY},
	/* POST starts a collection, GET gives its result: stacks hold source
	 * lines, never for the network. */
	{SMT_PATH_STACKS, M_POST, offsetof(struct smt_api_ops, stacks_start), NULL, SMALL,
	 SOCKET_ONLY},
	{SMT_PATH_STACKS, M_GET, offsetof(struct smt_api_ops, stacks), do_stacks, LARGE,
	 SOCKET_ONLY},
	/* A restart (smtd(8) Restarts); a worker's next attempt, from the leader. */
	{SMT_PATH_RESTART, M_POST, offsetof(struct smt_api_ops, restart), NULL, SMALL,
	 SOCKET_ONLY},
	{SMT_PATH_ATTEMPT, M_POST, offsetof(struct smt_api_ops, attempt), NULL, SMALL,
	 SOCKET_ONLY},
};

static int has_op(const struct smt_api_ops *ops, size_t offset)
{
	void *fn;
	memcpy(&fn, (const char *)ops + offset, sizeof fn);
	return fn != NULL;
}

void smt_routes_dispatch(struct smt_httpconn *c, int may_defer)
{
	struct http_parser_url u;
	char path[SMT_MAX_HEADER_BYTES + 1], query[SMT_MAX_HEADER_BYTES + 1];

	http_parser_url_init(&u);
	if (http_parser_parse_url(c->url, c->url_len, 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_PATH))) {
		c->closing = 1;
		c->error = "malformed request target";
		smt_httpconn_respond_error(c, 400, NULL, "malformed request target");
		return;
	}
	memcpy(path, c->url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
	path[u.field_data[UF_PATH].len] = '\0';
	query[0] = '\0';
	if (u.field_set & (1 << UF_QUERY)) {
		memcpy(query, c->url + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
		query[u.field_data[UF_QUERY].len] = '\0';
	}

	int method = c->parser.method;
	int is_post = method == HTTP_POST;
	/* A path may have a route per method; another method gets 405. */
	const struct route *r = NULL;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		if (!r)
			r = &routes[i];
		if ((routes[i].method == M_POST) == is_post) {
			r = &routes[i];
			break;
		}
	}

	if (!r) {
		smt_httpconn_respond_error(c, 404, NULL, "no such path: %.200s", path);
		return;
	}
	if (r->method == M_GET && method != HTTP_GET && method != HTTP_HEAD) {
		smt_httpconn_respond_error(c, 405, "Allow: GET, HEAD\r\n",
					   "%s accepts GET and HEAD", r->path);
		return;
	}
	if (r->method == M_POST && !is_post) {
		smt_httpconn_respond_error(c, 405, "Allow: POST\r\n", "%s accepts POST", r->path);
		return;
	}
	if (is_post && c->peer.read_only) {
		smt_httpconn_respond_error(c, 403, NULL, "this listener serves read-only requests");
		return;
	}
	if (c->peer.read_only && r->reach != TCP_TOO) {
		smt_httpconn_respond_error(c, 403, NULL, "%.200s is not served over TCP (only "
			      "/healthz, /readyz, /v1/status, /v1/logs and /metrics)", path);
		return;
	}
	if (is_post && c->peer.uid != 0 && c->peer.uid != c->peer.daemon_uid) {
		smt_httpconn_respond_error(
			c, 403, NULL,
			"permission denied: uid %d may not change the job (only root or uid %d)",
			c->peer.uid, c->peer.daemon_uid);
		return;
	}
	if (!has_op(c->ops, r->op_offset)) {
		smt_httpconn_respond_error(c, 501, NULL, "%s is not available", r->path);
		return;
	}
	if (r->size == LARGE && may_defer && c->defer && !c->leader_req) {
		c->wait = WAIT_DEFERRED;
		return;
	}
	if (r->handler)
		r->handler(c, query);
	else
		do_post(c, r->op_offset);
}
