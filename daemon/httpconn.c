/*
 * httpconn.c - parse the requests of one connection and answer them.
 *
 * http-parser is paused at the end of every request (on_message_complete),
 * so one call of http_parser_execute never runs past one request; the
 * input after it waits in PENDING.  The parser is never left in an error
 * state while it may be resumed: libhttp-parser asserts (aborting PID 1)
 * when a parser in error state is paused or resumed.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>
#include <jansson.h>

#include "httpconn.h"
#include "smt_proto.h"

/* Only the header names we act on are kept, so a short buffer suffices. */
#define FIELD_MAX 32
#define EXPECT_MAX 32

/* A large answer is serialized at most this many values per step, and
 * descends at most this deep. */
#define RENDER_STEP 256
#define RENDER_DEPTH 8

/*
 * A JSON answer serialized a step at a time (smt_httpconn_release), each
 * value freed once written, so that a large answer never holds the loop
 * for long.  The text is the same as json_dumps(ROOT, JSON_COMPACT |
 * JSON_ENSURE_ASCII) gives.
 */
struct render {
	json_t *root;
	int status;
	struct frame {
		json_t *v;       /* an array or an object */
		size_t index;    /* array: the next element */
		void *iter;      /* object: the next member */
		int started;     /* something written inside already */
		int owned;       /* only this answer holds it: written values may go */
	} stack[RENDER_DEPTH];
	int depth;
	char *body;
	size_t len, cap;
};

struct smt_httpconn {
	http_parser parser;
	const struct smt_api_ops *ops;
	void *ctx;
	struct smt_httpconn_peer peer;
	struct smt_api_stats *stats;

	/* The request being parsed. */
	char url[SMT_MAX_HEADER_BYTES + 1];
	size_t url_len;
	size_t header_bytes;
	char field[FIELD_MAX];
	size_t field_len;
	int in_value;
	int value_is_expect;
	char expect[EXPECT_MAX];
	size_t expect_len;
	char *body;
	size_t body_len;
	size_t body_cap;

	/* Set by a callback that refuses the request: answered after parsing. */
	int error_status;
	const char *error;

	int closing;          /* answer, then close */
	int broken;           /* close now: too much input behind a request */
	int oom;
	int completed;

	/* A request waiting for its answer: a long poll (GET
	 * /v1/status?wait=GEN) held until the status changes or HOLD_MS
	 * pass, or a large answer deferred or being rendered
	 * (smt_httpconn_set_defer). */
	enum { WAIT_NONE, WAIT_POLL, WAIT_LINES, WAIT_DEFERRED, WAIT_RENDERING } wait;
	struct render *render;
	unsigned hold_ms;
	/* A held GET /v1/lines: where from, and how much at most. */
	uint64_t lines_from;
	size_t lines_max;
	int defer;
	int trusted;          /* uid 0 or the daemon's, not read-only */
	int value_is_leader;
	int leader_req;
	int leader_conn;      /* some request here came from the leader */
	/* Input not parsed yet: behind a waiting request, or behind the
	 * request just answered. */
	char *pending;
	size_t pending_len;

	char *out;
	size_t out_len;
	size_t out_cap;
};

static const char *reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
	}
}

/* ---- output ---- */

static void out_append(struct smt_httpconn *c, const char *data, size_t len)
{
	if (c->oom || len == 0)
		return;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 1024;
		while (cap < c->out_len + len)
			cap *= 2;
		char *p = realloc(c->out, cap);
		if (!p) {
			c->oom = 1;
			return;
		}
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
}

static void out_printf(struct smt_httpconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out_printf(struct smt_httpconn *c, const char *fmt, ...)
{
	char small[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		out_append(c, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		c->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	out_append(c, big, (size_t)n);
	free(big);
}

/*
 * One complete response.  A HEAD request gets the headers of the GET
 * answer and no body.  EXTRA is NULL or more header lines, each ending in
 * CRLF.
 */
static void respond(struct smt_httpconn *c, int status, const char *ctype,
		    const char *body, size_t len, const char *extra)
{
	out_printf(c, "HTTP/1.1 %d %s\r\n"
		   "Content-Type: %s\r\n"
		   "Content-Length: %zu\r\n"
		   "Cache-Control: no-store\r\n"
		   "%s%s\r\n",
		   status, reason_phrase(status), ctype, len, extra ? extra : "",
		   c->closing ? "Connection: close\r\n" : "");
	if (c->parser.method != HTTP_HEAD)
		out_append(c, body, len);
	if (c->stats)
		c->stats->requests++;
}

/* Answer with the JSON value V, whose reference is taken. */
static void respond_json(struct smt_httpconn *c, int status, json_t *v,
			 const char *extra)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	if (!text) {
		static const char fallback[] = "{\"" SMT_F_ERROR "\":\"out of memory\"}\n";
		respond(c, 500, SMT_CONTENT_TYPE_JSON, fallback, sizeof fallback - 1, NULL);
		return;
	}
	size_t len = strlen(text);
	/* A final newline makes `curl` output end cleanly in a terminal. */
	char *body = realloc(text, len + 2);
	if (!body) {
		free(text);
		c->oom = 1;
		return;
	}
	body[len++] = '\n';
	body[len] = '\0';
	respond(c, status, SMT_CONTENT_TYPE_JSON, body, len, extra);
	free(body);
}

/* ---- large answers, a step at a time ---- */

static int render_append(struct render *r, const char *data, size_t len)
{
	if (r->len + len + 2 > r->cap) {
		size_t cap = r->cap ? r->cap : 16 * 1024;
		while (cap < r->len + len + 2)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (!b)
			return -ENOMEM;
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, len);
	r->len += len;
	return 0;
}

static int render_dump(struct render *r, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	int rc = render_append(r, text, strlen(text));
	free(text);
	return rc;
}

/* Walk into V: the root, a container near it, and any large one. */
static int render_descends(const struct render *r, json_t *v)
{
	size_t n = json_is_array(v) ? json_array_size(v) :
		   json_is_object(v) ? json_object_size(v) : 0;

	if (!json_is_array(v) && !json_is_object(v))
		return 0;
	return r->depth < RENDER_DEPTH && (r->depth < 2 || n > 16);
}

static int render_push(struct render *r, json_t *v)
{
	/* A value the daemon keeps a reference to elsewhere is left whole. */
	int owned = v->refcount == 1 && (r->depth == 0 || r->stack[r->depth - 1].owned);
	struct frame *f = &r->stack[r->depth++];

	f->owned = owned;
	f->v = v;
	f->index = 0;
	f->iter = json_is_object(v) ? json_object_iter(v) : NULL;
	f->started = 0;
	return render_append(r, json_is_array(v) ? "[" : "{", 1);
}

/* Serialize up to RENDER_STEP values.  Returns 1 when the text is
 * complete, 0 when more is to come, -ENOMEM. */
static int render_step(struct render *r)
{
	int budget = RENDER_STEP, rc = 0;

	while (r->depth > 0 && budget-- > 0 && rc == 0) {
		struct frame *f = &r->stack[r->depth - 1];
		json_t *child;

		if (json_is_array(f->v)) {
			if (f->index == json_array_size(f->v)) {
				r->depth--;
				rc = render_append(r, "]", 1);
				continue;
			}
			if (f->started)
				rc = render_append(r, ",", 1);
			child = json_array_get(f->v, f->index);
		} else {
			if (!f->iter) {
				r->depth--;
				rc = render_append(r, "}", 1);
				continue;
			}
			json_t *key = json_string(json_object_iter_key(f->iter));
			if (!key)
				return -ENOMEM;
			if (f->started)
				rc = render_append(r, ",", 1);
			if (rc == 0)
				rc = render_dump(r, key);
			json_decref(key);
			if (rc == 0)
				rc = render_append(r, ":", 1);
			child = json_object_iter_value(f->iter);
		}
		f->started = 1;
		if (rc < 0)
			break;
		if (render_descends(r, child)) {
			/* The child stays in its parent until the end. */
			if (json_is_array(f->v))
				f->index++;
			else
				f->iter = json_object_iter_next(f->v, f->iter);
			rc = render_push(r, child);
			continue;
		}
		rc = render_dump(r, child);
		/* Written: its memory goes now, not at the end. */
		if (json_is_array(f->v)) {
			if (f->owned)
				json_array_set_new(f->v, f->index, json_null());
			f->index++;
		} else {
			void *next = json_object_iter_next(f->v, f->iter);
			if (f->owned)
				json_object_iter_set_new(f->v, f->iter, json_null());
			f->iter = next;
		}
	}
	if (rc < 0)
		return rc;
	return r->depth == 0;
}

static void render_free(struct render *r)
{
	if (!r)
		return;
	json_decref(r->root);
	free(r->body);
	free(r);
}

/*
 * Answer with a JSON value V (its reference is taken) that may be large:
 * rendered a step at a time when large answers are deferred and the
 * request is not the leader's (the connection then waits in
 * WAIT_RENDERING), else at once.
 */
static void respond_large(struct smt_httpconn *c, int status, json_t *v)
{
	if (!c->defer || c->leader_req || (!json_is_array(v) && !json_is_object(v))) {
		respond_json(c, status, v, NULL);
		return;
	}
	struct render *r = calloc(1, sizeof *r);
	if (!r || render_push(r, v) < 0) {
		render_free(r);
		json_decref(v);
		c->oom = 1;
		return;
	}
	r->root = v;
	r->status = status;
	c->render = r;
	c->wait = WAIT_RENDERING;
}

/* One step of the answer being rendered; 1 once it is answered. */
static int render_continue(struct smt_httpconn *c)
{
	struct render *r = c->render;
	int rc = render_step(r);

	if (rc == 0)
		return 0;
	c->render = NULL;
	c->wait = WAIT_NONE;
	if (rc < 0) {
		render_free(r);
		c->oom = 1;
		return rc;
	}
	/* A final newline, as respond_json writes. */
	r->body[r->len++] = '\n';
	respond(c, r->status, SMT_CONTENT_TYPE_JSON, r->body, r->len, NULL);
	render_free(r);
	return 1;
}

static void respond_error(struct smt_httpconn *c, int status, const char *extra,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void respond_error(struct smt_httpconn *c, int status, const char *extra,
			  const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (status >= 400 && status < 500 && c->stats)
		c->stats->bad_requests++;
	respond_json(c, status, json_pack("{ss}", SMT_F_ERROR, msg), extra);
}

/* ---- the endpoints ---- */

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

static void status_now(struct smt_httpconn *c)
{
	json_t *v = c->ops->status(c->ctx);
	if (!v) {
		respond_error(c, 500, NULL, "the daemon could not render its status");
		return;
	}
	respond_large(c, 200, v);
}

static void do_status(struct smt_httpconn *c, const char *query)
{
	long long wait = query_number(query, SMT_Q_WAIT);
	long long timeout = query_number(query, SMT_Q_TIMEOUT);

	if (wait == -2 || timeout == -2) {
		respond_error(c, 400, NULL, "wait and timeout must be non-negative integers");
		return;
	}
	/* Hold the answer while the status is still the one the client has:
	 * the leader's watch of a worker, with no polling on either side. */
	if (wait >= 0 && c->ops->generation && wait == c->ops->generation(c->ctx)) {
		c->wait = WAIT_POLL;
		c->hold_ms = timeout < 0 ? 5000 : timeout > 60000 ? 60000 : timeout ? (unsigned)timeout : 1;
		return;
	}
	status_now(c);
}

static void do_healthz(struct smt_httpconn *c, const char *query)
{
	int ok = c->ops->healthy(c->ctx);
	respond_json(c, ok ? 200 : 503,
		     json_pack("{ss}", SMT_F_STATUS, ok ? "ok" : "unhealthy"), NULL);
}

static void do_readyz(struct smt_httpconn *c, const char *query)
{
	int ok = c->ops->ready(c->ctx);
	respond_json(c, ok ? 200 : 503,
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
				respond_error(c, 400, NULL, "%s must be an integer from 0 to %d",
					      SMT_Q_TAIL, SMT_LOGS_TAIL_MAX);
				return;
			}
		} else if (klen == strlen(SMT_Q_RANK) && memcmp(p, SMT_Q_RANK, klen) == 0) {
			if (parse_small_uint(val, vlen, &rank) < 0) {
				respond_error(c, 400, NULL, "%s must be a non-negative integer",
					      SMT_Q_RANK);
				return;
			}
		} else if (len > 0) {
			respond_error(c, 400, NULL, "unknown query parameter '%.*s' (expected %s, %s)",
				      (int)(klen > 64 ? 64 : klen), p, SMT_Q_TAIL, SMT_Q_RANK);
			return;
		}
		p = end ? end + 1 : NULL;
	}
	json_t *v = c->ops->logs(c->ctx, tail, rank);
	if (!v) {
		respond_error(c, 500, NULL, "the daemon could not render its logs");
		return;
	}
	respond_large(c, 200, v);
}

static void do_metrics(struct smt_httpconn *c, const char *query)
{
	char *text = c->ops->metrics(c->ctx);
	if (!text) {
		respond_error(c, 500, NULL, "the daemon could not render its metrics");
		return;
	}
	size_t len = strlen(text);
	const struct smt_api_stats zero = { 0 };
	const struct smt_api_stats *s = c->stats ? c->stats : &zero;
	char *all = NULL;
	int n = asprintf(&all,
		"%s%s"
		"# HELP smtd_api_connections Open connections to the control API.\n"
		"# TYPE smtd_api_connections gauge\n"
		"smtd_api_connections %lu\n"
		"# HELP smtd_api_connections_total Connections accepted by the control API.\n"
		"# TYPE smtd_api_connections_total counter\n"
		"smtd_api_connections_total %lu\n"
		"# HELP smtd_api_rejected_connections_total Connections closed at once because too many were open.\n"
		"# TYPE smtd_api_rejected_connections_total counter\n"
		"smtd_api_rejected_connections_total %lu\n"
		"# HELP smtd_api_timeouts_total Connections dropped for not completing a request in time.\n"
		"# TYPE smtd_api_timeouts_total counter\n"
		"smtd_api_timeouts_total %lu\n"
		"# HELP smtd_api_requests_total Requests answered by the control API.\n"
		"# TYPE smtd_api_requests_total counter\n"
		"smtd_api_requests_total %lu\n"
		"# HELP smtd_api_bad_requests_total Requests refused with a 4xx status by the control API.\n"
		"# TYPE smtd_api_bad_requests_total counter\n"
		"smtd_api_bad_requests_total %lu\n",
		text, len && text[len - 1] != '\n' ? "\n" : "",
		s->connections, s->accepted, s->rejected, s->timeouts,
		s->requests, s->bad_requests);
	free(text);
	if (n < 0) {
		c->oom = 1;
		return;
	}
	respond(c, 200, SMT_CONTENT_TYPE_METRICS, all, (size_t)n, NULL);
	free(all);
}

/* The body of a POST as JSON: NULL with *BAD = 0 when it is empty. */
static json_t *parse_body(struct smt_httpconn *c, int *bad)
{
	json_error_t err;

	*bad = 0;
	if (c->body_len == 0)
		return NULL;
	json_t *v = json_loadb(c->body, c->body_len, JSON_REJECT_DUPLICATES, &err);
	if (!v) {
		*bad = 1;
		respond_error(c, 400, NULL, "the body is not valid JSON: %s", err.text);
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
			respond_error(c, 400, NULL,
				      "expected a body like {\"%s\":\"TERM\"}: a signal name or a number from 1 to %d",
				      SMT_F_SIGNAL, SMT_SIGNAL_MAX);
			return;
		}
	}
	int r = c->ops->kill(c->ctx, signo);
	if (r == -ESRCH) {
		respond_error(c, 409, NULL, "there is no job to signal");
		return;
	}
	if (r < 0) {
		respond_error(c, 500, NULL, "could not signal the job: %s", strerror(-r));
		return;
	}
	const char *name = smt_signal_name(signo);
	respond_json(c, 202, name ? json_pack("{ss}", SMT_F_SIGNAL, name)
				  : json_pack("{si}", SMT_F_SIGNAL, signo), NULL);
}

static void do_post(struct smt_httpconn *c, const char *path)
{
	int bad;
	json_t *body = parse_body(c, &bad), *reply = NULL;

	if (bad)
		return;
	int status = c->ops->post(c->ctx, path, body, c->peer.pid, &reply);
	json_decref(body);
	if (status < 100 || status > 599) {
		json_decref(reply);
		respond_error(c, 500, NULL, "the daemon gave no valid answer");
		return;
	}
	if (!reply) {
		if (status >= 400) {
			respond_error(c, status, NULL, "%s", status == 404
				      ? "no such path" : reason_phrase(status));
			return;
		}
		reply = json_object();
	}
	respond_json(c, status, reply, NULL);
}

/* GET /v1/lines?from=N&max=B&wait=MS: the leader takes a worker's rank
 * output (lineproto.h), held up to MS while there is none. */
static int lines_answer(struct smt_httpconn *c, int final)
{
	const char *body = NULL;
	size_t len = 0;
	int rc = c->ops->lines(c->ctx, c->lines_from, c->lines_max, final, &body, &len);

	if (rc == -EAGAIN)
		return 0;
	if (rc == -ERANGE)
		respond_error(c, 409, NULL, "from is not an offset of this host's output");
	else if (rc < 0)
		respond_error(c, rc == -ENOENT ? 404 : 500, NULL, "no output to take here: %s",
			      strerror(-rc));
	else
		respond(c, 200, SMT_CONTENT_TYPE_LINES, body, len, NULL);
	return 1;
}

static void do_lines(struct smt_httpconn *c, const char *query)
{
	long long from = query_number(query, SMT_Q_FROM);
	long long max = query_number(query, SMT_Q_MAX);
	long long wait = query_number(query, SMT_Q_WAIT);

	if (!c->leader_req) {
		respond_error(c, 403, NULL, "only the leader takes a worker's output");
		return;
	}
	if (from < 0 || max == -2 || wait == -2) {
		respond_error(c, 400, NULL, "from (and max, wait) must be non-negative integers");
		return;
	}
	c->lines_from = (uint64_t)from;
	c->lines_max = max < 0 ? 256 * 1024 : max > 16 * 1024 * 1024 ? 16 * 1024 * 1024 : (size_t)max;
	if (lines_answer(c, wait <= 0))
		return;
	c->wait = WAIT_LINES;
	c->hold_ms = wait > 60000 ? 60000 : (unsigned)wait;
}

/* GET /v1/stacks?id=N: the stacks a POST /v1/stacks collected. */
static void do_stacks(struct smt_httpconn *c, const char *query)
{
	long long id = query_number(query, SMT_F_ID);
	int status = 200;
	json_t *v;

	if (id == -2) {
		respond_error(c, 400, NULL, "id must be a non-negative integer");
		return;
	}
	v = c->ops->stacks(c->ctx, id, &status);
	if (!v) {
		respond_error(c, status >= 400 ? status : 500, NULL, "%s",
			      status == 404 ? "no such collection of stacks"
			      : status == 409 ? "the stacks are still being collected"
			      : "the daemon could not render the stacks");
		return;
	}
	respond_large(c, status, v);
}

enum method_kind { M_GET, M_POST };

enum answer_size { SMALL, LARGE };

static const struct route {
	const char *path;
	enum method_kind method;
	size_t op_offset;  /* which callback must exist */
	void (*handler)(struct smt_httpconn *c, const char *query);
	/* LARGE: the answer grows with the job (hosts, ranks, kept lines)
	 * and may be deferred (smt_httpconn_set_defer). */
	enum answer_size size;
} routes[] = {
	{ SMT_PATH_STATUS, M_GET, offsetof(struct smt_api_ops, status), do_status, LARGE },
	{ SMT_PATH_HEALTHZ, M_GET, offsetof(struct smt_api_ops, healthy), do_healthz, SMALL },
	{ SMT_PATH_READYZ, M_GET, offsetof(struct smt_api_ops, ready), do_readyz, SMALL },
	{ SMT_PATH_LOGS, M_GET, offsetof(struct smt_api_ops, logs), do_logs, LARGE },
	{ SMT_PATH_METRICS, M_GET, offsetof(struct smt_api_ops, metrics), do_metrics, LARGE },
	{ SMT_PATH_KILL, M_POST, offsetof(struct smt_api_ops, kill), do_kill, SMALL },
	/* The daemons' own protocol; handler NULL: ops->post answers. */
	{ SMT_PATH_RESULT, M_POST, offsetof(struct smt_api_ops, post), NULL, SMALL },
	{ SMT_PATH_LAUNCH, M_POST, offsetof(struct smt_api_ops, post), NULL, SMALL },
	{ SMT_PATH_ORTED, M_POST, offsetof(struct smt_api_ops, post), NULL, SMALL },
	{ SMT_PATH_LINES, M_GET, offsetof(struct smt_api_ops, lines), do_lines, SMALL },
	/* POST starts a collection (ops->post), GET gives its result. */
	{ SMT_PATH_STACKS, M_POST, offsetof(struct smt_api_ops, post), NULL, SMALL },
	{ SMT_PATH_STACKS, M_GET, offsetof(struct smt_api_ops, stacks), do_stacks, LARGE },
};

static int has_op(const struct smt_api_ops *ops, size_t offset)
{
	void *fn;
	memcpy(&fn, (const char *)ops + offset, sizeof fn);
	return fn != NULL;
}

/* Answer the request just parsed, or defer it when MAY_DEFER. */
static void dispatch(struct smt_httpconn *c, int may_defer)
{
	struct http_parser_url u;
	char path[SMT_MAX_HEADER_BYTES + 1], query[SMT_MAX_HEADER_BYTES + 1];

	http_parser_url_init(&u);
	if (http_parser_parse_url(c->url, c->url_len, 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_PATH))) {
		c->closing = 1;
		c->error = "malformed request target";
		respond_error(c, 400, NULL, "malformed request target");
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

	/* Later POST paths of the daemons' protocol need no change here. */
	if (!r && !(is_post && strncmp(path, "/v1/", 4) == 0 && c->ops->post && !c->peer.read_only)) {
		respond_error(c, 404, NULL, "no such path: %.200s", path);
		return;
	}
	if (r && r->method == M_GET && method != HTTP_GET && method != HTTP_HEAD) {
		respond_error(c, 405, "Allow: GET, HEAD\r\n", "%s accepts GET and HEAD", r->path);
		return;
	}
	if (r && r->method == M_POST && !is_post) {
		respond_error(c, 405, "Allow: POST\r\n", "%s accepts POST", r->path);
		return;
	}
	if (is_post && c->peer.read_only) {
		respond_error(c, 403, NULL, "this listener serves read-only requests");
		return;
	}
	if (is_post && c->peer.uid != 0 && c->peer.uid != c->peer.daemon_uid) {
		respond_error(c, 403, NULL,
			      "permission denied: uid %d may not change the job (only root or uid %d)",
			      c->peer.uid, c->peer.daemon_uid);
		return;
	}
	if (r && !has_op(c->ops, r->op_offset)) {
		respond_error(c, 501, NULL, "%s is not available", r->path);
		return;
	}
	if (r && r->size == LARGE && may_defer && c->defer && !c->leader_req) {
		c->wait = WAIT_DEFERRED;
		return;
	}
	if (r && r->handler)
		r->handler(c, query);
	else
		do_post(c, path);
}

/* ---- http-parser callbacks ---- */

static int refuse(struct smt_httpconn *c, int status, const char *why)
{
	c->error_status = status;
	c->error = why;
	return -1;
}

/*
 * Every byte of the request line and the headers is counted by the parser
 * itself (http_parser_set_max_header_size); this count of the bytes kept
 * only guards the URL buffer.
 */
static int count_header(struct smt_httpconn *c, size_t len)
{
	c->header_bytes += len;
	if (c->header_bytes > SMT_MAX_HEADER_BYTES)
		return refuse(c, 431, "headers too large");
	return 0;
}

static int on_message_begin(http_parser *p)
{
	struct smt_httpconn *c = p->data;

	c->url_len = 0;
	c->header_bytes = 0;
	c->field_len = 0;
	c->in_value = 0;
	c->value_is_expect = 0;
	c->expect_len = 0;
	c->body_len = 0;
	c->value_is_leader = 0;
	c->leader_req = 0;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct smt_httpconn *c = p->data;

	if (count_header(c, len) < 0)
		return -1;
	memcpy(c->url + c->url_len, at, len);
	c->url_len += len;
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct smt_httpconn *c = p->data;

	if (count_header(c, len) < 0)
		return -1;
	if (c->in_value) {
		c->in_value = 0;
		c->field_len = 0;
	}
	for (size_t i = 0; i < len && c->field_len < FIELD_MAX; i++)
		c->field[c->field_len++] = at[i];
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct smt_httpconn *c = p->data;

	if (count_header(c, len) < 0)
		return -1;
	if (!c->in_value) {
		c->in_value = 1;
		c->value_is_expect = c->field_len == 6 && strncasecmp(c->field, "expect", 6) == 0;
		/* Only a trusted peer can speak for the leader. */
		c->value_is_leader = c->trusted && c->field_len == 13 &&
				     strncasecmp(c->field, "x-smtd-leader", 13) == 0;
		if (c->value_is_leader)
			c->leader_req = 1;
		if (c->value_is_expect)
			c->expect_len = 0;
	}
	if (c->value_is_expect)
		for (size_t i = 0; i < len && c->expect_len < EXPECT_MAX; i++)
			c->expect[c->expect_len++] = at[i];
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct smt_httpconn *c = p->data;

	if (p->upgrade)
		return refuse(c, 400, "protocol upgrades are not supported");
	if ((p->flags & F_CONTENTLENGTH) && p->content_length > SMT_MAX_BODY_BYTES)
		return refuse(c, 413, "body too large");
	/*
	 * curl sends "Expect: 100-continue" before larger bodies and waits a
	 * second for this interim answer; give it at once.
	 */
	if (c->expect_len == 12 && strncasecmp(c->expect, "100-continue", 12) == 0 &&
	    p->http_major == 1 && p->http_minor >= 1)
		out_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct smt_httpconn *c = p->data;

	if (c->body_len + len > SMT_MAX_BODY_BYTES)
		return refuse(c, 413, "body too large");
	if (c->body_len + len > c->body_cap) {
		size_t cap = c->body_cap ? c->body_cap : 1024;
		while (cap < c->body_len + len)
			cap *= 2;
		char *b = realloc(c->body, cap);
		if (!b) {
			c->oom = 1;
			return -1;
		}
		c->body = b;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, at, len);
	c->body_len += len;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct smt_httpconn *c = p->data;

	if (!http_should_keep_alive(p))
		c->closing = 1;
	c->url[c->url_len] = '\0';
	if (c->leader_req)
		c->leader_conn = 1;
	if (c->leader_req && c->ops->leader_contact)
		c->ops->leader_contact(c->ctx);
	dispatch(c, 1);
	if (c->wait == WAIT_NONE)
		c->completed++;
	/* One request at a time: the caller decides when the next one is
	 * read.  Pausing, not an error, so that the parser can go on. */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* ---- the connection ---- */

int smt_httpconn_new(const struct smt_api_ops *ops, void *ctx,
		     const struct smt_httpconn_peer *peer,
		     struct smt_api_stats *stats, struct smt_httpconn **out)
{
	struct smt_httpconn *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	/* The parser then counts every byte of the request line and the
	 * headers, separators and line ends included.  A process-wide
	 * setting: the control API is the only user of http-parser. */
	http_parser_set_max_header_size(SMT_MAX_HEADER_BYTES);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->ops = ops;
	c->ctx = ctx;
	c->peer = *peer;
	c->trusted = !peer->read_only && peer->uid >= 0 &&
		     (peer->uid == 0 || peer->uid == peer->daemon_uid);
	c->stats = stats;
	*out = c;
	return 0;
}

void smt_httpconn_free(struct smt_httpconn *c)
{
	if (!c)
		return;
	render_free(c->render);
	free(c->pending);
	free(c->body);
	free(c->out);
	free(c);
}

static int keep_pending(struct smt_httpconn *c, const char *data, size_t len)
{
	if (len == 0)
		return 0;
	if (c->pending_len + len > SMT_MAX_HEADER_BYTES + SMT_MAX_BODY_BYTES) {
		c->broken = 1;
		c->error = "too much input behind a waiting request";
		return 0;
	}
	char *p = realloc(c->pending, c->pending_len + len);
	if (!p) {
		c->oom = 1;
		return -ENOMEM;
	}
	memcpy(p + c->pending_len, data, len);
	c->pending = p;
	c->pending_len += len;
	return 0;
}

/* Parse up to the end of the next complete request; keep the rest. */
static int parse(struct smt_httpconn *c, const char *data, size_t len)
{
	c->completed = 0;
	if (HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED)
		http_parser_pause(&c->parser, 0);
	size_t used = http_parser_execute(&c->parser, &settings, data, len);

	enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
	if (c->oom)
		return -ENOMEM;
	if (err == HPE_PAUSED) {
		/* A request was answered or waits: the rest is read after it,
		 * unless it closed the connection. */
		if (!c->closing && keep_pending(c, data + used, len - used) < 0)
			return -ENOMEM;
		return c->completed;
	}
	if (c->error_status) {
		c->closing = 1;
		respond_error(c, c->error_status, NULL, "%s", c->error);
	} else if (err == HPE_HEADER_OVERFLOW) {
		c->closing = 1;
		c->error = "headers too large";
		respond_error(c, 431, NULL, "%s", c->error);
	} else if (err != HPE_OK) {
		c->closing = 1;
		c->error = http_errno_description(err);
		respond_error(c, 400, NULL, "malformed request: %s", c->error);
	} else if (c->parser.upgrade) {
		/* The parser stops reading at an upgrade; so do we. */
		c->closing = 1;
		c->error = "protocol upgrades are not supported";
	}
	return c->oom ? -ENOMEM : c->completed;
}

int smt_httpconn_feed(struct smt_httpconn *c, const char *data, size_t len)
{
	if (c->oom)
		return -ENOMEM;
	if (c->closing || c->broken || len == 0)
		return 0;
	if (c->wait != WAIT_NONE || c->pending_len)
		return keep_pending(c, data, len);
	return parse(c, data, len);
}

int smt_httpconn_next(struct smt_httpconn *c)
{
	if (c->oom)
		return -ENOMEM;
	if (c->wait != WAIT_NONE || c->closing || c->broken || c->pending_len == 0)
		return 0;
	char *rest = c->pending;
	size_t len = c->pending_len;
	c->pending = NULL;
	c->pending_len = 0;
	int n = parse(c, rest, len);
	free(rest);
	return n;
}

size_t smt_httpconn_pending(const struct smt_httpconn *c)
{
	return c->pending_len;
}

int smt_httpconn_from_leader(const struct smt_httpconn *c)
{
	return c->leader_conn;
}

unsigned smt_httpconn_held(const struct smt_httpconn *c)
{
	return c->wait == WAIT_POLL || c->wait == WAIT_LINES ? c->hold_ms : 0;
}

int smt_httpconn_held_lines(const struct smt_httpconn *c)
{
	return c->wait == WAIT_LINES;
}

int smt_httpconn_poke(struct smt_httpconn *c)
{
	if (c->wait != WAIT_LINES || c->oom)
		return 0;
	if (!lines_answer(c, 0))
		return 0;
	c->wait = WAIT_NONE;
	return c->oom ? -ENOMEM : 1;
}

void smt_httpconn_set_defer(struct smt_httpconn *c, int defer)
{
	c->defer = defer;
}

int smt_httpconn_deferred(const struct smt_httpconn *c)
{
	return c->wait == WAIT_DEFERRED || c->wait == WAIT_RENDERING;
}

int smt_httpconn_rendering(const struct smt_httpconn *c)
{
	return c->wait == WAIT_RENDERING;
}

int smt_httpconn_release(struct smt_httpconn *c)
{
	if (c->oom)
		return -ENOMEM;
	if (c->wait == WAIT_POLL) {
		c->wait = WAIT_NONE;
		status_now(c);
	} else if (c->wait == WAIT_LINES) {
		c->wait = WAIT_NONE;
		lines_answer(c, 1);
	} else if (c->wait == WAIT_DEFERRED) {
		c->wait = WAIT_NONE;
		dispatch(c, 0);
	} else if (c->wait == WAIT_RENDERING) {
		return render_continue(c);
	} else {
		return 0;
	}
	if (c->oom)
		return -ENOMEM;
	return c->wait == WAIT_NONE;
}

size_t smt_httpconn_take_output(struct smt_httpconn *c, char **buf)
{
	size_t len = c->out_len;

	*buf = len ? c->out : NULL;
	if (!len)
		return 0;
	c->out = NULL;
	c->out_len = c->out_cap = 0;
	return len;
}

int smt_httpconn_closing(const struct smt_httpconn *c)
{
	return c->oom || c->broken || (c->closing && c->wait == WAIT_NONE);
}

const char *smt_httpconn_error(const struct smt_httpconn *c)
{
	return c->oom ? "out of memory" : c->error;
}
