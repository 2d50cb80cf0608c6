/*
 * httpconn_int.h - one connection's request, shared by the framing
 * (httpconn.c: http-parser, the answer's bytes, waiting) and the routes
 * (routes.c: which path does what).  Nothing else includes it.
 */
#ifndef SMT_HTTPCONN_INT_H
#define SMT_HTTPCONN_INT_H

#include <stdint.h>

#include <http_parser.h>
#include <jansson.h>

#include "dynbuf.h"
#include "httpconn.h"
#include "jsonrender.h"
#include "smt_proto.h"

/* Only the header names we act on are kept, so a short buffer suffices. */
#define FIELD_MAX 32
#define EXPECT_MAX 32

/* What a request without its answer waits for. */
enum smt_httpwait {
	WAIT_NONE,
	WAIT_POLL,      /* GET /v1/status?wait=GEN: the status to change */
	WAIT_LINES,     /* GET /v1/lines: rank output to send */
	WAIT_DEFERRED,  /* a large answer: the caller's turn (smt_httpconn_set_defer) */
	WAIT_RENDERING, /* a large answer being serialized a step at a time */
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
	int value_is_token;
	char token[SMT_TOKEN_HEX + 1];   /* SMT_HEADER_TOKEN's value, cut */
	size_t token_len;
	char expect[EXPECT_MAX];
	size_t expect_len;
	struct smt_dynbuf body;   /* capped at SMT_MAX_BODY_BYTES */

	/* Set by a callback that refuses the request: answered after parsing. */
	int error_status;
	const char *error;

	int closing;          /* answer, then close */
	int broken;           /* close now: too much input behind a request */
	int oom;
	int completed;

	enum smt_httpwait wait;
	struct smt_jsonrender *render;
	int render_status;
	unsigned hold_ms;     /* WAIT_POLL, WAIT_LINES: at most this long */
	int brief;            /* WAIT_POLL: answer with the hosts' digest (SMT_Q_BRIEF) */
	/* A held GET /v1/lines: where from, and how much at most. */
	uint64_t lines_from;
	size_t lines_max;
	long long lines_gen;  /* SMT_Q_GEN: also answered when the generation moves; -1 */
	int defer;
	int trusted;          /* uid 0 or the daemon's, not read-only */
	int value_is_leader;
	int leader_req;
	int leader_conn;      /* some request here came from the leader */
	/* Input not parsed yet: behind a waiting request, or behind the
	 * request just answered. */
	struct smt_dynbuf pending;
	struct smt_dynbuf out;
};

/* ---- answers (httpconn.c) ---- */

const char *smt_httpconn_reason(int status);
/* One complete response; a HEAD request gets the headers alone.  EXTRA is
 * NULL or more header lines, each ending in CRLF. */
void smt_httpconn_respond(struct smt_httpconn *c, int status, const char *ctype,
			  const char *body, size_t len, const char *extra);
/* The JSON value V (its reference taken), with a final newline. */
void smt_httpconn_respond_json(struct smt_httpconn *c, int status, json_t *v,
			       const char *extra);
/* The same for a value that may be large: serialized a step at a time when
 * large answers are deferred and the request is not the leader's. */
void smt_httpconn_respond_large(struct smt_httpconn *c, int status, json_t *v);
/* {"error": MESSAGE}; a 4xx counts as a bad request. */
void smt_httpconn_respond_error(struct smt_httpconn *c, int status, const char *extra,
				const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- the routes (routes.c) ---- */

/* Answer the request just parsed (c->url), or leave it waiting: deferred
 * when MAY_DEFER and its answer may be large, or held (a long poll). */
void smt_routes_dispatch(struct smt_httpconn *c, int may_defer);
/* A held long poll's answer: the status now. */
void smt_routes_status(struct smt_httpconn *c);
/* A held GET /v1/lines: 1 when answered, 0 when there is nothing yet and
 * not FINAL. */
int smt_routes_lines(struct smt_httpconn *c, int final);

#endif
