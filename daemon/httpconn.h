/*
 * httpconn.h - one HTTP/1.1 connection of the control API, without the
 * socket: bytes go in, response bytes come out.
 *
 * api.c owns the sockets and the timers and moves bytes between them and
 * this object; the unit tests and the fuzzer drive it directly.  Every
 * complete request is dispatched to the smt_api_ops callbacks at once and
 * its response appended to the output, so pipelined requests are answered
 * in order.  After a response that closes the connection (400, 413, 431,
 * "Connection: close", HTTP/1.0 without keep-alive), further input is
 * ignored and smt_httpconn_closing() is nonzero.
 */
#ifndef SMT_HTTPCONN_H
#define SMT_HTTPCONN_H

#include <stddef.h>

#include "api.h"

struct smt_httpconn;

/* Counters shared by the connections of one server, for /metrics. */
struct smt_api_stats {
	unsigned long connections;   /* open now */
	unsigned long accepted;      /* since start */
	unsigned long rejected;      /* closed at once: too many connections */
	unsigned long timeouts;      /* dropped: idle or trickling */
	unsigned long requests;      /* answered */
	unsigned long bad_requests;  /* answered 4xx by the server itself */
};

struct smt_httpconn_peer {
	int uid;         /* SO_PEERCRED uid, -1 when unknown (TCP) */
	int daemon_uid;  /* the daemon's own uid: may change things too */
	int read_only;   /* only GET/HEAD of the read endpoints (TCP) */
};

/* STATS may be NULL.  Returns 0 or -ENOMEM. */
int smt_httpconn_new(const struct smt_api_ops *ops, void *ctx,
		     const struct smt_httpconn_peer *peer,
		     struct smt_api_stats *stats, struct smt_httpconn **out);
void smt_httpconn_free(struct smt_httpconn *c);

/*
 * Parse LEN bytes and answer every request they complete.  Returns the
 * number of requests completed by these bytes (>= 0), or -ENOMEM.
 */
int smt_httpconn_feed(struct smt_httpconn *c, const char *data, size_t len);

/*
 * The response bytes produced so far, handed over: *BUF is malloc'ed (the
 * caller frees it) or NULL when there is nothing to send.  Returns the
 * length.
 */
size_t smt_httpconn_take_output(struct smt_httpconn *c, char **buf);

/*
 * A GET /v1/status?wait=GEN[&timeout=MS] whose GEN is the status's current
 * generation (ops->generation) is held: no answer yet, and input after it
 * is kept until it is released.  smt_httpconn_held returns the hold time
 * in milliseconds (never 0) while a request is held, else 0.
 * smt_httpconn_release answers it with the status as it is now and goes
 * on with the input kept behind it; returns the number of requests
 * answered, or -ENOMEM.
 */
unsigned smt_httpconn_held(const struct smt_httpconn *c);
int smt_httpconn_release(struct smt_httpconn *c);

/* Nonzero once a request on this connection carried "X-Smtd-Leader: 1". */
int smt_httpconn_from_leader(const struct smt_httpconn *c);

/* Nonzero once the connection must be closed after the output is sent. */
int smt_httpconn_closing(const struct smt_httpconn *c);

/* Why the connection closes (for the log), or NULL when it was asked to. */
const char *smt_httpconn_error(const struct smt_httpconn *c);

#endif
