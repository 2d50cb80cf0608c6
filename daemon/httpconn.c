/*
 * httpconn.c - the framing of one connection's requests and answers
 * (httpconn.h); what each path does is routes.c's.
 *
 * http-parser is paused at the end of every request (on_message_complete),
 * so one call of http_parser_execute never runs past one request; the
 * input after it waits in PENDING.  The parser is never left in an error
 * state while it may be resumed: libhttp-parser asserts (aborting PID 1)
 * when a parser in error state is paused or resumed.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpconn_int.h"

const char *smt_httpconn_reason(int status)
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

/* ---- answers ---- */

static void out_append(struct smt_httpconn *c, const char *data, size_t len)
{
	if (!c->oom && len && smt_dynbuf_add(&c->out, data, len) < 0)
		c->oom = 1;
}

void smt_httpconn_respond(struct smt_httpconn *c, int status, const char *ctype,
			  const char *body, size_t len, const char *extra)
{
	int rc = smt_dynbuf_addf(&c->out, "HTTP/1.1 %d %s\r\n"
				 "Content-Type: %s\r\n"
				 "Content-Length: %zu\r\n"
				 "Cache-Control: no-store\r\n"
				 "%s%s\r\n",
				 status, smt_httpconn_reason(status), ctype, len,
				 extra ? extra : "", c->closing ? "Connection: close\r\n" : "");

	if (rc < 0)
		c->oom = 1;
	if (c->parser.method != HTTP_HEAD)
		out_append(c, body, len);
	if (c->stats)
		c->stats->requests++;
}

void smt_httpconn_respond_json(struct smt_httpconn *c, int status, json_t *v,
			       const char *extra)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(v);
	if (!text) {
		static const char fallback[] = "{\"" SMT_F_ERROR "\":\"out of memory\"}\n";
		smt_httpconn_respond(c, 500, SMT_CONTENT_TYPE_JSON, fallback, sizeof fallback - 1,
				     NULL);
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
	smt_httpconn_respond(c, status, SMT_CONTENT_TYPE_JSON, body, len, extra);
	free(body);
}

void smt_httpconn_respond_error(struct smt_httpconn *c, int status, const char *extra,
				const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (status >= 400 && status < 500 && c->stats)
		c->stats->bad_requests++;
	smt_httpconn_respond_json(c, status, json_pack("{ss}", SMT_F_ERROR, msg), extra);
}

void smt_httpconn_respond_large(struct smt_httpconn *c, int status, json_t *v)
{
	if (!c->defer || c->leader_req || (!json_is_array(v) && !json_is_object(v))) {
		smt_httpconn_respond_json(c, status, v, NULL);
		return;
	}
	if (smt_jsonrender_new(v, &c->render) < 0) {
		c->oom = 1;
		return;
	}
	c->render_status = status;
	c->wait = WAIT_RENDERING;
}

/* One step of the answer being rendered; 1 once it is answered. */
static int render_continue(struct smt_httpconn *c)
{
	struct smt_jsonrender *r = c->render;
	int rc = smt_jsonrender_step(r);
	const char *text;
	size_t len;
	char *body;

	if (rc == 0)
		return 0;
	c->render = NULL;
	c->wait = WAIT_NONE;
	text = rc > 0 ? smt_jsonrender_text(r, &len) : NULL;
	/* A final newline, as smt_httpconn_respond_json writes. */
	body = text ? malloc(len + 1) : NULL;
	if (!body) {
		smt_jsonrender_free(r);
		c->oom = 1;
		return -ENOMEM;
	}
	memcpy(body, text, len);
	body[len++] = '\n';
	smt_jsonrender_free(r);
	smt_httpconn_respond(c, c->render_status, SMT_CONTENT_TYPE_JSON, body, len, NULL);
	free(body);
	return 1;
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
	c->value_is_token = 0;
	c->token_len = 0;
	smt_dynbuf_reset(&c->body);
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
		c->value_is_token = c->field_len == sizeof(SMT_HEADER_TOKEN) - 1 &&
				    strncasecmp(c->field, SMT_HEADER_TOKEN, c->field_len) == 0;
		if (c->value_is_token)
			c->token_len = 0;
	}
	if (c->value_is_expect)
		for (size_t i = 0; i < len && c->expect_len < EXPECT_MAX; i++)
			c->expect[c->expect_len++] = at[i];
	/* One byte more than a token is kept: a longer value never matches. */
	if (c->value_is_token)
		for (size_t i = 0; i < len && c->token_len <= SMT_TOKEN_HEX; i++)
			c->token[c->token_len++] = at[i];
	return 0;
}

/* Whether the request carried the channel's token.  Every byte compared,
 * whatever differs first: the time of the answer says nothing about how
 * much of a guess was right. */
static int token_matches(const struct smt_httpconn *c)
{
	unsigned char diff = c->token_len != SMT_TOKEN_HEX;

	for (size_t i = 0; i < SMT_TOKEN_HEX; i++)
		diff |= (unsigned char)((i < c->token_len ? c->token[i] : 0) ^ c->peer.token[i]);
	return diff == 0;
}

static int on_headers_complete(http_parser *p)
{
	struct smt_httpconn *c = p->data;

	/* Before anything else, the body included, is read or answered. */
	if (c->peer.token && !token_matches(c))
		return refuse(c, 403, "this channel serves only the job's leader (no valid "
				      SMT_HEADER_TOKEN ")");
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
	int rc = smt_dynbuf_add(&c->body, at, len);

	if (rc == -ENOBUFS)
		return refuse(c, 413, "body too large");
	if (rc < 0) {
		c->oom = 1;
		return -1;
	}
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
	smt_routes_dispatch(c, 1);
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
	smt_dynbuf_init(&c->body, SMT_MAX_BODY_BYTES);
	smt_dynbuf_init(&c->pending, SMT_MAX_HEADER_BYTES + SMT_MAX_BODY_BYTES);
	/* Answers are bounded by the caller, which reads the output before it
	 * lets the next request in (api.c). */
	smt_dynbuf_init(&c->out, SIZE_MAX / 2);
	*out = c;
	return 0;
}

void smt_httpconn_free(struct smt_httpconn *c)
{
	if (!c)
		return;
	smt_jsonrender_free(c->render);
	smt_dynbuf_free(&c->pending);
	smt_dynbuf_free(&c->body);
	smt_dynbuf_free(&c->out);
	free(c);
}

static int keep_pending(struct smt_httpconn *c, const char *data, size_t len)
{
	int rc = len ? smt_dynbuf_add(&c->pending, data, len) : 0;

	if (rc == -ENOBUFS) {
		c->broken = 1;
		c->error = "too much input behind a waiting request";
		return 0;
	}
	if (rc < 0)
		c->oom = 1;
	return rc;
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
		smt_httpconn_respond_error(c, c->error_status, NULL, "%s", c->error);
	} else if (err == HPE_HEADER_OVERFLOW) {
		c->closing = 1;
		c->error = "headers too large";
		smt_httpconn_respond_error(c, 431, NULL, "%s", c->error);
	} else if (err != HPE_OK) {
		c->closing = 1;
		c->error = http_errno_description(err);
		smt_httpconn_respond_error(c, 400, NULL, "malformed request: %s", c->error);
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
	if (c->wait != WAIT_NONE || smt_dynbuf_len(&c->pending))
		return keep_pending(c, data, len);
	return parse(c, data, len);
}

int smt_httpconn_next(struct smt_httpconn *c)
{
	if (c->oom)
		return -ENOMEM;
	if (c->wait != WAIT_NONE || c->closing || c->broken || !smt_dynbuf_len(&c->pending))
		return 0;
	size_t len;
	char *rest = smt_dynbuf_take(&c->pending, &len);
	int n = parse(c, rest, len);
	free(rest);
	return n;
}

size_t smt_httpconn_pending(const struct smt_httpconn *c)
{
	return smt_dynbuf_len(&c->pending);
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

int smt_httpconn_held_news(const struct smt_httpconn *c)
{
	return c->wait == WAIT_POLL || (c->wait == WAIT_LINES && c->lines_gen >= 0);
}

int smt_httpconn_poke(struct smt_httpconn *c)
{
	if (c->wait != WAIT_LINES || c->oom)
		return 0;
	if (!smt_routes_lines(c, 0))
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
		smt_routes_status(c);
	} else if (c->wait == WAIT_LINES) {
		c->wait = WAIT_NONE;
		smt_routes_lines(c, 1);
	} else if (c->wait == WAIT_DEFERRED) {
		c->wait = WAIT_NONE;
		smt_routes_dispatch(c, 0);
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
	size_t len = 0;

	*buf = smt_dynbuf_take(&c->out, &len);
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
