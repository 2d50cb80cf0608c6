/*
 * httpconn.h - one HTTP/1.1 connection of the control API, without the
 * socket: bytes go in, response bytes come out.
 *
 * api.c owns the sockets and the timers and moves bytes between them and
 * this object; the unit tests and the fuzzer drive it directly.  Requests
 * are taken one at a time: smt_httpconn_feed and smt_httpconn_next parse
 * input up to the end of the next complete request, answer it (its
 * response is appended to the output) and keep the input after it, so the
 * caller decides when the next one is read - pipelined requests are
 * answered in order, and no faster than the caller takes their answers.
 * After a response that closes the connection (400, 413, 431,
 * "Connection: close", HTTP/1.0 without keep-alive), further input is
 * ignored and smt_httpconn_closing() is nonzero.
 *
 * A request can also wait, with no answer yet and the input behind it
 * kept: a long poll (see smt_httpconn_held), and, when the caller asked
 * for it (smt_httpconn_set_defer), a request whose answer may be large
 * (status, logs, metrics) from a client other than the leader
 * (smt_httpconn_deferred): it is answered when the caller says so, and
 * its JSON is then serialized a step at a time, so that no answer holds
 * the caller's loop for long.  smt_httpconn_release does the next step
 * of either.
 *
 * The request line and headers may be SMT_MAX_HEADER_BYTES long in all,
 * every byte counted (431 beyond); a body SMT_MAX_BODY_BYTES (413).
 * "X-Smtd-Leader" marks the leader's requests only from a trusted peer:
 * not read-only, with uid 0 or the daemon's own, or on a TCP channel with
 * the job's token; from anyone else it is ignored.
 */
#ifndef SMT_HTTPCONN_H
#define SMT_HTTPCONN_H

#include <limits.h>
#include <stddef.h>

#include "apiops.h"

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
	int pid;         /* SO_PEERCRED PID, 0 when unknown (TCP) */
	int daemon_uid;  /* the daemon's own uid: may change things too */
	int read_only;   /* only GET/HEAD of the read endpoints (TCP) */
	/* A worker's TCP channel: every request must carry this token
	 * (SMT_HEADER_TOKEN) or is refused, 403, and the connection closed;
	 * with it, the request is root's.  NULL elsewhere. */
	const char *token;
};

/* STATS may be NULL.  Returns 0 or -ENOMEM. */
int smt_httpconn_new(const struct smt_api_ops *ops, void *ctx,
		     const struct smt_httpconn_peer *peer,
		     struct smt_api_stats *stats, struct smt_httpconn **out);
void smt_httpconn_free(struct smt_httpconn *c);

/*
 * Take LEN bytes of input.  When no request is waiting or kept input is
 * queued before them, they are parsed up to the end of the first complete
 * request, which is answered; the rest is kept (see smt_httpconn_next).
 * Returns the number of requests answered (0 or 1), or -ENOMEM.  Input
 * kept behind a waiting request is bounded: beyond SMT_MAX_HEADER_BYTES +
 * SMT_MAX_BODY_BYTES the connection must be closed at once.
 */
int smt_httpconn_feed(struct smt_httpconn *c, const char *data, size_t len);

/*
 * Parse the kept input up to the end of the next complete request and
 * answer it.  Returns the number of requests answered (0 or 1), or
 * -ENOMEM.  Does nothing while a request waits or the connection closes.
 */
int smt_httpconn_next(struct smt_httpconn *c);

/* The number of input bytes kept and not parsed yet. */
size_t smt_httpconn_pending(const struct smt_httpconn *c);

/*
 * The response bytes produced so far, handed over: *BUF is malloc'ed (the
 * caller frees it) or NULL when there is nothing to send.  Returns the
 * length.
 */
size_t smt_httpconn_take_output(struct smt_httpconn *c, char **buf);

/*
 * A GET /v1/status?wait=GEN[&timeout=MS] whose GEN is the status's current
 * generation (ops->generation) is held: no answer yet.
 * smt_httpconn_held returns the hold time in milliseconds (never 0) while
 * a request is held, else 0; SMT_HOLD_KEPT for a long poll with keep=1
 * (SMT_Q_KEEP), held with no time at all.
 */
#define SMT_HOLD_KEPT UINT_MAX
unsigned smt_httpconn_held(const struct smt_httpconn *c);

/*
 * A GET /v1/lines held because the worker had no output yet: nonzero.
 * smt_httpconn_poke answers it if there is output now (1), else leaves it
 * held (0); smt_httpconn_release answers it in any case (its time is up).
 */
int smt_httpconn_held_lines(const struct smt_httpconn *c);
int smt_httpconn_poke(struct smt_httpconn *c);
/* A held request that a change of the status answers (smt_api_notify): a
 * watch of the status, or a GET /v1/lines that carried SMT_Q_GEN. */
int smt_httpconn_held_news(const struct smt_httpconn *c);

/*
 * With DEFER nonzero, a later request for status, logs or metrics that
 * does not come from the leader is not answered at once: it waits until
 * smt_httpconn_release, so that the caller renders large answers one at a
 * time and within its memory budget; its answer, and that of a long poll
 * released later, is then rendered a step at a time.  With DEFER zero
 * (the default) every answer is given at once.
 */
void smt_httpconn_set_defer(struct smt_httpconn *c, int defer);

/* Nonzero while a deferred request waits for smt_httpconn_release: not
 * started yet, or rendering (smt_httpconn_rendering). */
int smt_httpconn_deferred(const struct smt_httpconn *c);
int smt_httpconn_rendering(const struct smt_httpconn *c);

/*
 * Go on with the waiting request: answer a held long poll with the status
 * as it is now; start a deferred request as if it had just arrived (its
 * answer is then rendering, or a long poll held); render the next step of
 * an answer.  The input kept behind it is parsed by smt_httpconn_next.
 * Returns the number of requests answered (0 or 1), or -ENOMEM.  Safe in
 * every state.
 */
int smt_httpconn_release(struct smt_httpconn *c);

/* Nonzero once a request on this connection came from the leader: it
 * carried "X-Smtd-Leader: 1" and the peer is trusted (see above). */
int smt_httpconn_from_leader(const struct smt_httpconn *c);

/* Nonzero once the connection must be closed after the output is sent
 * (never while a request waits for its answer, unless the connection
 * broke: out of memory or too much input behind it). */
int smt_httpconn_closing(const struct smt_httpconn *c);

/* Why the connection closes (for the log), or NULL when it was asked to. */
const char *smt_httpconn_error(const struct smt_httpconn *c);

#endif
