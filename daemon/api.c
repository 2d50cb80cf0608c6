/*
 * api.c - the sockets of the control API: listeners, connections, timers.
 *
 * Parsing and answering are httpconn.c's; this file moves bytes between
 * libuv streams and one smt_httpconn per client and decides when a client
 * is dropped.  Each connection owns two handles (its stream and its idle
 * timer) and is freed when both are closed.
 *
 * Requests are answered one at a time per connection, and a connection's
 * next request is parsed only while its unsent answers stay under
 * SMT_API_CONN_OUTPUT_MAX: reading stops while input waits to be parsed.
 * Small answers are given as soon as the request is read.  Large ones
 * (status, logs, metrics; httpconn.c defers them) are done from an idle
 * handle, one step per turn of the loop - the daemon's callback that
 * builds the answer, then its JSON a slice at a time - so that the loop
 * polls between two steps: a /healthz, a signal or the ranks' output wait
 * for one step at most.  A large answer is started only when no other is
 * being rendered and the unsent answers of all connections are under
 * SMT_API_OUTPUT_MAX.  The leader's requests are exempt from all of this:
 * they are the job's own protocol.
 *
 * Why one file of this size: a connection's life - reading, one request
 * per turn, pacing of large answers, the output limits, lingering at exit,
 * draining before close - is one state machine over libuv handles whose
 * transitions are read together; the listeners are the rest.
 */
#include "config.h"

#include <errno.h>
#include <arpa/inet.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.h"
#include "httpconn.h"
#include "log.h"
#include "smt_proto.h"
#include "tcpchannel.h"
#include "unixlisten.h"

#define LISTEN_BACKLOG 128

union stream {
	uv_handle_t handle;
	uv_stream_t stream;
	uv_pipe_t pipe;
	uv_tcp_t tcp;
};

/* The three kinds of listener, each with its own places (within_limits). */
enum listen_kind { L_UNIX, L_HEALTH, L_CHANNEL };

static int kind_tcp(enum listen_kind kind)
{
	return kind != L_UNIX;
}

struct listener {
	union stream h;
	struct smt_api *api;
	enum listen_kind kind;
};

/* At close, how long a leader's connection may wait for its client to
 * hang up. */
#define LINGER_MS 2000
/* At close, how long another client's answers still queued may take. */
#define EXIT_FLUSH_MS 200
/* After an answer that ends a connection, input is read and discarded for
 * at most this long. */
#define DRAIN_MS 1000
/* Changes this close together answer a long poll once (smt_api_notify). */
#define NOTIFY_SETTLE_MS 20

struct conn {
	union stream h;
	uv_timer_t timer;
	struct smt_api *api;
	struct smt_httpconn *http;
	LIST_ENTRY(conn) link;     /* in api->conns until it starts closing */
	TAILQ_ENTRY(conn) run;     /* the run queue, when on it */
	int on_run_queue;
	enum listen_kind kind;
	int uid;            /* the client's, from SO_PEERCRED; -1 over TCP */
	struct sockaddr_storage addr; /* over TCP: the client's address */
	int open_handles;
	int closing;        /* uv_close called */
	int reading;        /* uv_read_start in effect */
	int eof;            /* the client sent everything it will send */
	int close_after_writes;
	int lingering;      /* the server closes: wait for the client's end */
	int draining;       /* answered and half-closed: input is discarded */
	int busy;           /* in the parser, whose callbacks may close the server */
	int rendering;      /* counted in api->renders */
	int kept;           /* holds a poll with no time: counted in api->kept */
	int keepalive;      /* its TCP keepalive is set */
	int timed_out;      /* ... and found nobody at the other end */
	uv_shutdown_t shutdown_req;
	unsigned writes;
	size_t queued;      /* bytes given to uv_write and not written yet */
	char buf[16 * 1024];
};

struct write_req {
	uv_write_t req;
	struct conn *c;
	char *data;
	size_t len;
};

struct smt_api {
	uv_loop_t *loop;
	const struct smt_api_ops *ops;
	void *ctx;
	int uid;
	unsigned idle_ms;
	unsigned max_conns;      /* on the Unix socket */
	unsigned max_tcp_conns;  /* on the TCP listener */
	unsigned max_channel_conns; /* on the channel listener */
	unsigned unix_conns, tcp_conns;
	size_t conn_output_max, output_max;
	size_t queued;           /* every connection's unsent answers */
	unsigned linger_ms;
	struct listener *unix_listener;
	struct listener *tcp_listener;
	struct listener *channel_listener;
	char channel_token[SMT_TOKEN_HEX + 1];
	struct sockaddr_storage channel_leader; /* where the token came from */
	int have_channel_leader;
	char *unix_path;
	dev_t unix_dev;
	ino_t unix_ino;
	LIST_HEAD(, conn) conns;
	/* Connections with a request to answer or input to parse, served
	 * one request per turn of the loop by IDLE. */
	TAILQ_HEAD(, conn) run_queue;
	uv_idle_t idle;
	uv_timer_t pace;         /* the pause after a long step */
	uv_timer_t settle;       /* held long polls answered when it fires */
	int idle_init;
	int pacing;
	unsigned renders;        /* connections whose answer is rendering */
	unsigned kept;           /* connections holding a poll with no time */
	double channel_pt;       /* the peer timeout the channel's keepalive follows */
	int fresh;               /* a connection was accepted this turn */
	int64_t longest_step_ms; /* logged when it grows; -1 before the first */
	struct smt_api_stats stats;
	unsigned live;  /* handles not yet closed: listeners, connections, idle */
	uint64_t last_refusal_log;
	int closing;
	void (*done)(void *);
	void *done_arg;
};

static void api_finish(struct smt_api *api)
{
	void (*done)(void *) = api->done;
	void *arg = api->done_arg;

	free(api->unix_path);
	free(api);
	if (done)
		done(arg);
}

/* A handle is gone; the last one ends a closing server. */
static void api_release(struct smt_api *api)
{
	api->live--;
	if (api->closing && api->live == 0)
		api_finish(api);
}

/* ---- the run queue ---- */

static void on_idle(uv_idle_t *idle);

/* The handles of the run queue and of the long polls, made when first
 * needed. */
static void run_queue_init(struct smt_api *api)
{
	if (api->idle_init)
		return;
	uv_idle_init(api->loop, &api->idle);
	uv_timer_init(api->loop, &api->pace);
	uv_timer_init(api->loop, &api->settle);
	api->idle.data = api->pace.data = api->settle.data = api;
	api->idle_init = 1;
	api->live += 3;
}

static void run_queue_add(struct conn *c)
{
	struct smt_api *api = c->api;

	/* A closing server has no idle handle: its lingering connections
	 * (the leader's) are served at once, in conn_after. */
	if (c->on_run_queue || c->closing || api->closing)
		return;
	run_queue_init(api);
	c->on_run_queue = 1;
	TAILQ_INSERT_TAIL(&api->run_queue, c, run);
	if (!api->pacing)
		uv_idle_start(&api->idle, on_idle);
}

static void run_queue_remove(struct conn *c)
{
	struct smt_api *api = c->api;

	if (!c->on_run_queue)
		return;
	c->on_run_queue = 0;
	TAILQ_REMOVE(&api->run_queue, c, run);
	if (TAILQ_EMPTY(&api->run_queue))
		uv_idle_stop(&api->idle);
}

/* ---- connections ---- */

static void api_wake(struct smt_api *api);

static void on_conn_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->open_handles > 0)
		return;
	struct smt_api *api = c->api;
	smt_httpconn_free(c->http);
	free(c);
	api_release(api);
}

/*
 * How long the other end of C's connection has been silent, in ms, as far
 * as a keepalive could have timed it: all of the keepalive's silence when
 * it found nobody; else the kernel's time since its last ACK (an answer
 * just sent on a link that went down is not the leader heard).  0 when
 * unknown.
 */
static uint64_t conn_quiet_ms(struct conn *c)
{
	uv_os_fd_t fd;
	long long ms;

	if (c->timed_out)
		return (uint64_t)(smt_tcpchannel_silence(c->api->channel_pt) * 1000);
	if (uv_fileno(&c->h.handle, &fd) < 0)
		return 0;
	ms = smt_tcpchannel_quiet_ms(fd, c->api->channel_pt);
	return ms > 0 ? (uint64_t)ms : 0;
}

/*
 * Count the connections holding a poll with no time (SMT_HOLD_KEPT: the
 * leader's, on the TCP channel), whose keepalive then says whether the
 * leader lives (tcpchannel.h): the daemon hears when the first starts and
 * when the last ends, and whether it ended because nobody answered.
 */
static void conn_count_kept(struct conn *c)
{
	struct smt_api *api = c->api;
	int now = !c->closing && c->http && smt_httpconn_held(c->http) == SMT_HOLD_KEPT;
	uv_os_fd_t fd;
	int rc;

	if (now == c->kept)
		return;
	c->kept = now;
	if (now && !c->keepalive) {
		c->keepalive = 1;
		rc = uv_fileno(&c->h.handle, &fd);
		if (rc == 0)
			rc = smt_tcpchannel_keepalive(fd, api->channel_pt);
		if (rc < 0)
			smt_warn("control API: cannot set the channel's TCP keepalive: %s",
				 strerror(-rc));
	}
	if (now ? api->kept++ == 0 : --api->kept == 0)
		if (api->ops->leader_kept)
			api->ops->leader_kept(api->ctx, now, now ? 0 : conn_quiet_ms(c));
}

static void conn_close(struct conn *c)
{
	struct smt_api *api = c->api;

	if (c->closing)
		return;
	run_queue_remove(c);
	c->closing = 1;
	if (c->rendering) {
		c->rendering = 0;
		api->renders--;
	}
	conn_count_kept(c);
	LIST_REMOVE(c, link);
	api->stats.connections--;
	if (kind_tcp(c->kind))
		api->tcp_conns--;
	else
		api->unix_conns--;
	uv_close(&c->h.handle, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
	api_wake(api);
}

static void on_linger_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

static void on_idle_timeout(uv_timer_t *t)
{
	struct conn *c = t->data;

	c->api->stats.timeouts++;
	smt_info("control API: dropping a client that completed no request in %u ms",
		 c->api->idle_ms);
	conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;

	*buf = uv_buf_init(c->buf, sizeof c->buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void conn_drain_close(struct conn *c);
static void conn_after(struct conn *c, int r);
static void conn_schedule(struct conn *c);

/*
 * The parser's calls, which answer requests.  An answer may end the daemon
 * (a kill, the leader's result) and so call smt_api_close: it then finds
 * the connection busy and leaves it open for conn_after to send that
 * answer.
 */
static int conn_feed(struct conn *c, const char *data, size_t len)
{
	c->busy = 1;
	int r = smt_httpconn_feed(c->http, data, len);
	c->busy = 0;
	return r;
}

static int conn_next(struct conn *c)
{
	c->busy = 1;
	int r = smt_httpconn_next(c->http);
	c->busy = 0;
	return r;
}

static int conn_release(struct conn *c)
{
	c->busy = 1;
	int r = smt_httpconn_release(c->http);
	c->busy = 0;
	return r;
}

/* Read when there is room for what the client sends: no input waiting to
 * be parsed (except behind a long poll, to notice a client that leaves),
 * and its answers under their cap.  A draining connection always reads. */
static void conn_update_reading(struct conn *c)
{
	int want;

	if (c->closing)
		return;
	if (c->draining)
		want = 1;
	else if (c->eof || c->close_after_writes)
		want = 0;
	else if (smt_httpconn_held(c->http))
		want = 1;
	else
		want = !smt_httpconn_deferred(c->http) && smt_httpconn_pending(c->http) == 0 &&
		       c->queued < c->api->conn_output_max;
	if (want && !c->reading) {
		if (uv_read_start(&c->h.stream, on_alloc, on_read) < 0) {
			conn_close(c);
			return;
		}
		c->reading = 1;
	} else if (!want && c->reading) {
		uv_read_stop(&c->h.stream);
		c->reading = 0;
	}
}

/* Wake the connections that wait: for room under the output caps, or
 * for the large answer being rendered to be done. */
static void api_wake(struct smt_api *api)
{
	if (api->closing || api->queued >= api->output_max || api->renders > 0)
		return;
	struct conn *c;

	LIST_FOREACH(c, &api->conns, link)
		if (!c->closing && !c->on_run_queue && c->queued < api->conn_output_max)
			conn_schedule(c);
}

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct conn *c = w->c;
	struct smt_api *api = c->api;

	c->queued -= w->len;
	api->queued -= w->len;
	free(w->data);
	free(w);
	c->writes--;
	if (c->closing) {
		/* Its memory is free now: others may use it. */
		api_wake(api);
		return;
	}
	if (status < 0) {
		/* The client went away in the middle of an answer: nothing to do. */
		smt_debug("control API: client gone while answering: %s", uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->close_after_writes && c->writes == 0) {
		conn_drain_close(c);
		return;
	}
	conn_update_reading(c);
	conn_schedule(c);
	api_wake(api);
}

static void on_drain_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status;
}

/*
 * Close after an answer the server chose to end with (400, 413, 431,
 * "Connection: close"): half-close, then read and discard what the client
 * is still sending, so that its socket is not reset before it read the
 * answer (a client still sending a 64 KiB body would otherwise see "broken
 * pipe" instead of 413).  At the client's end, or after DRAIN_MS, close.
 * A client that already ended its side, and every client but the leader's
 * while the server closes, is closed at once.
 */
static void conn_drain_close(struct conn *c)
{
	if (c->draining || c->closing)
		return;
	if (c->eof || (c->api->closing && !c->lingering)) {
		conn_close(c);
		return;
	}
	run_queue_remove(c);
	c->draining = 1;
	if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0) {
		conn_close(c);
		return;
	}
	conn_update_reading(c);
	if (!c->closing)
		uv_timer_start(&c->timer, on_drain_timeout, DRAIN_MS, 0);
}

/* Send what the parser produced; close when it says so. */
static void conn_flush(struct conn *c)
{
	char *data;
	size_t len = smt_httpconn_take_output(c->http, &data);

	if (len > 0) {
		struct write_req *w = malloc(sizeof *w);
		if (!w) {
			free(data);
			conn_close(c);
			return;
		}
		w->c = c;
		w->data = data;
		w->len = len;
		uv_buf_t b = uv_buf_init(data, (unsigned)len);
		int r = uv_write(&w->req, &c->h.stream, &b, 1, on_write);
		if (r < 0) {
			free(data);
			free(w);
			conn_close(c);
			return;
		}
		c->writes++;
		c->queued += len;
		c->api->queued += len;
	}
	if (smt_httpconn_closing(c->http)) {
		const char *why = smt_httpconn_error(c->http);
		if (why)
			smt_info("control API: closing a client connection: %s", why);
		run_queue_remove(c);
		c->close_after_writes = 1;
		if (c->writes == 0)
			conn_drain_close(c);
		return;
	}
	if (c->eof && !smt_httpconn_held(c->http) && !smt_httpconn_deferred(c->http) &&
	    smt_httpconn_pending(c->http) == 0) {
		/* The client said all it had to say, and all of it is answered. */
		c->close_after_writes = 1;
		if (c->writes == 0)
			conn_close(c);
		return;
	}
	conn_update_reading(c);
}

/*
 * Put C on the run queue when it has work the idle handle may do now: a
 * deferred answer, within both output caps, or input to parse, within its
 * own cap.  Otherwise on_write wakes it as its answers leave.
 */
static void conn_schedule(struct conn *c)
{
	struct smt_api *api = c->api;

	if (c->closing || c->draining || c->close_after_writes || c->on_run_queue)
		return;
	if (smt_httpconn_rendering(c->http)) {
		run_queue_add(c);
		return;
	}
	if (c->queued >= api->conn_output_max)
		return;
	if (smt_httpconn_deferred(c->http)) {
		if (api->queued < api->output_max && api->renders == 0)
			run_queue_add(c);
	} else if (!smt_httpconn_held(c->http) && smt_httpconn_pending(c->http) > 0) {
		run_queue_add(c);
	}
}

static void on_pace(uv_timer_t *t)
{
	struct smt_api *api = t->data;

	api->pacing = 0;
	if (!TAILQ_EMPTY(&api->run_queue))
		uv_idle_start(&api->idle, on_idle);
}

static void conn_step(struct smt_api *api, struct conn *c);

/* This thread's CPU time, in ns (0 if the clock is missing). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * One step for the first connection in the run queue, per turn of the
 * loop: the loop polls between two steps.  A step that took long (the
 * daemon building a large answer) is followed by a pause as long, so
 * that clients of the API never take more than half of a CPU from the
 * daemon and its job.
 */
static void on_idle(uv_idle_t *idle)
{
	struct smt_api *api = idle->data;
	struct conn *c = TAILQ_FIRST(&api->run_queue);

	if (!c) {
		uv_idle_stop(idle);
		return;
	}
	/* A client that has just connected is read first: a probe's
	 * request is usually there already. */
	if (api->fresh) {
		api->fresh = 0;
		return;
	}
	uint64_t start = uv_hrtime(), cpu0 = thread_cpu_ns();
	conn_step(api, c);
	uint64_t ms = (uv_hrtime() - start) / 1000000;
	uint64_t cpu_ms = (thread_cpu_ns() - cpu0) / 1000000;
	/* Every new longest step is logged (the first one too), so that a
	 * test bounding them finds at least one and can tell a fast daemon
	 * from one that stopped saying.  Its CPU time is smtd's; its wall
	 * time also holds whatever the machine ran meanwhile. */
	if ((int64_t)cpu_ms > api->longest_step_ms) {
		api->longest_step_ms = (int64_t)cpu_ms;
		smt_debug("control API: the longest step so far took %llu ms of CPU (%llu ms)",
			  (unsigned long long)cpu_ms, (unsigned long long)ms);
	}
	if (ms >= 1 && !api->closing) {
		api->pacing = 1;
		uv_idle_stop(idle);
		uv_timer_start(&api->pace, on_pace, ms, 0);
	}
}

static void conn_step(struct smt_api *api, struct conn *c)
{
	run_queue_remove(c);
	if (smt_httpconn_rendering(c->http)) {
		conn_after(c, conn_release(c));
	} else if (smt_httpconn_deferred(c->http)) {
		if (c->queued >= api->conn_output_max || api->queued >= api->output_max ||
		    api->renders > 0)
			return;  /* on_write or the end of the rendering wakes it */
		conn_after(c, conn_release(c));
	} else {
		conn_after(c, conn_next(c));
	}
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	if (nread == 0 || c->closing)
		return;
	if (c->draining) {
		if (nread < 0)
			conn_close(c);
		return;
	}
	if (nread < 0) {
		if (nread != UV_EOF) {
			c->timed_out = nread == UV_ETIMEDOUT;
			conn_close(c);
			return;
		}
		/* A poll held with no time is the leader's, which never
		 * half-closes one: at its EOF the leader gave it up (the
		 * fetch of its lines carries the news now), and kept, it
		 * would hide the leader's silence. */
		if (smt_httpconn_held(c->http) == SMT_HOLD_KEPT) {
			conn_close(c);
			return;
		}
		/* At EOF the requests already read are still answered: the
		 * client may have half-closed after its last request. */
		c->eof = 1;
		conn_update_reading(c);
		conn_flush(c);
		return;
	}
	/* A lingering connection is still answered: the leader may send its
	 * result on an idle channel to a host that has just stopped, and an
	 * unanswered request would keep both waiting for the linger. */
	conn_after(c, conn_feed(c, buf->base, (size_t)nread));
}

static void on_hold_timeout(uv_timer_t *t)
{
	struct conn *c = t->data;

	conn_after(c, conn_release(c));
}

/* Count the connections whose answer is rendering; wake the others when
 * none is left. */
static void conn_count_rendering(struct conn *c)
{
	struct smt_api *api = c->api;
	int now = !c->closing && smt_httpconn_rendering(c->http);

	if (now == c->rendering)
		return;
	c->rendering = now;
	if (now) {
		api->renders++;
	} else {
		api->renders--;
		api_wake(api);
	}
}

/* After the parser answered R requests: time the connection, send, and
 * queue what is left to do. */
static void conn_after_step(struct conn *c, int r)
{
	conn_count_rendering(c);
	if (r < 0) {
		smt_warn("control API: closing a client connection: %s", strerror(-r));
		conn_close(c);
		return;
	}
	unsigned hold = smt_httpconn_held(c->http);
	if (c->kind == L_CHANNEL && !c->api->have_channel_leader &&
	    smt_httpconn_from_leader(c->http)) {
		c->api->channel_leader = c->addr;
		c->api->have_channel_leader = 1;
	}
	if (c->lingering) {
		/* Nothing changes any more: no poll is held, the requests
		 * behind are answered at once (the leader's, one at a time
		 * anyway), and the linger's timer stays as it is. */
		while (r >= 0) {
			if (smt_httpconn_held(c->http) || smt_httpconn_deferred(c->http)) {
				r = conn_release(c);
				continue;
			}
			if (smt_httpconn_closing(c->http) || smt_httpconn_pending(c->http) == 0)
				break;
			conn_flush(c);
			if (c->closing)
				return;
			r = conn_next(c);
		}
		if (r < 0) {
			conn_close(c);
			return;
		}
	} else if (c->api->closing) {
		/* The server closed while this request was answered: send the
		 * answer (a poll that was just held gets the status as it is)
		 * and close; nothing behind it is read. */
		if (r >= 0 && hold)
			r = conn_release(c);
		if (r < 0) {
			conn_close(c);
			return;
		}
		conn_flush(c);
		if (!c->closing && c->writes == 0)
			conn_close(c);
		return;
	} else if (hold == SMT_HOLD_KEPT) {
		uv_timer_stop(&c->timer);
	} else if (hold) {
		/* A held long poll is a complete request: its own time applies. */
		uv_timer_start(&c->timer, on_hold_timeout, hold, 0);
	} else if (smt_httpconn_from_leader(c->http)) {
		uv_timer_stop(&c->timer);
	} else if (r > 0 || smt_httpconn_deferred(c->http)) {
		/* Only a complete request buys time: trickling bytes does not.
		 * One that waits for its answer is complete. */
		uv_timer_start(&c->timer, on_idle_timeout, c->api->idle_ms, 0);
	}
	conn_flush(c);
	conn_schedule(c);
}

static void conn_after(struct conn *c, int r)
{
	conn_after_step(c, r);
	conn_count_kept(c);
}

static void on_settle(uv_timer_t *t)
{
	struct smt_api *api = t->data;
	struct conn *c, *next;

	for (c = LIST_FIRST(&api->conns); c; c = next) {
		next = LIST_NEXT(c, link);
		if (!c->closing && smt_httpconn_held_news(c->http))
			conn_after(c, conn_release(c));
	}
}

/*
 * Held long polls are answered NOTIFY_SETTLE_MS after the first change,
 * with every change made meanwhile: the last rank's end and the job's
 * final state, a moment apart, reach a client in one answer, and the
 * daemon may be gone before the client could ask again.  A closing server
 * answers them at once (smt_api_close).
 */
void smt_api_notify(struct smt_api *api)
{
	if (api->closing)
		return;
	run_queue_init(api);
	if (!uv_is_active((uv_handle_t *)&api->settle))
		uv_timer_start(&api->settle, on_settle, NOTIFY_SETTLE_MS, 0);
}

void smt_api_notify_lines(void *arg)
{
	struct smt_api *api = arg;
	struct conn *c, *next;

	for (c = LIST_FIRST(&api->conns); c; c = next) {
		next = LIST_NEXT(c, link);
		if (!c->closing && smt_httpconn_held_lines(c->http)) {
			c->busy = 1;
			int r = smt_httpconn_poke(c->http);
			c->busy = 0;
			if (r != 0)
				conn_after(c, r);
		}
	}
}

#define TOO_MANY_BODY "{\"" SMT_F_ERROR "\":\"too many connections\"}\n"
_Static_assert(sizeof TOO_MANY_BODY - 1 == 33, "fix the Content-Length below");
static const char too_many[] =
	"HTTP/1.1 503 Service Unavailable\r\n"
	"Content-Type: " SMT_CONTENT_TYPE_JSON "\r\n"
	"Content-Length: 33\r\n"
	"Connection: close\r\n"
	"\r\n"
	TOO_MANY_BODY;

/* The client's uid and PID as the kernel saw them at connect: -1 and 0
 * when unknown (TCP). */
static void peer_cred(struct conn *c, int tcp, struct smt_httpconn_peer *peer)
{
	uv_os_fd_t fd;
	struct ucred cred;
	socklen_t len = sizeof cred;

	peer->uid = -1;
	peer->pid = 0;
	if (tcp || uv_fileno(&c->h.handle, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return;
	peer->uid = (int)cred.uid;
	peer->pid = (int)cred.pid;
}

/* Over TCP, whether two clients come from the same address (any port). */
static int same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return 0;
}

/*
 * Whether C may stay, given who holds the places already (smtd(8),
 * SECURITY).  On the socket, root and smtd's user (the leader's channel
 * arrives as root's smtctl dial-stdio, an operator's smtctl kill as root)
 * may take every place; anyone else - the socket's group, read-only - only
 * MAX less an eighth, and one user at most a quarter of MAX.  Over TCP one
 * address may take at most three quarters of the places, so that probes
 * from elsewhere still get in.  Counted among the open connections, C
 * included.
 */
static unsigned kind_max(const struct smt_api *api, enum listen_kind kind)
{
	return kind == L_UNIX ? api->max_conns :
	       kind == L_HEALTH ? api->max_tcp_conns : api->max_channel_conns;
}

static int within_limits(const struct smt_api *api, const struct conn *c)
{
	unsigned max = kind_max(api, c->kind), open = 0, mine = 0, strangers = 0;
	/* On the channel, a quarter of the places stays for the address the
	 * token came from: the leader's one-shot requests (the end, the
	 * result) open a connection each, and strangers from several
	 * addresses must not leave them none. */
	int keep = c->kind == L_CHANNEL && api->have_channel_leader;
	const struct conn *o;

	LIST_FOREACH(o, &api->conns, link) {
		if (o->kind != c->kind || o->closing)
			continue;
		open++;
		if (kind_tcp(c->kind) ? same_source(&o->addr, &c->addr) : o->uid == c->uid)
			mine++;
		if (keep && !same_source(&o->addr, &api->channel_leader))
			strangers++;
	}
	if (open > max)
		return 0;
	if (keep && !same_source(&c->addr, &api->channel_leader) && strangers > max - max / 4)
		return 0;
	if (kind_tcp(c->kind))
		return mine <= (max - max / 4 ? max - max / 4 : 1);
	if (c->uid == 0 || c->uid == api->uid)
		return 1;
	unsigned others = 0;
	LIST_FOREACH(o, &api->conns, link)
		if (!kind_tcp(o->kind) && !o->closing && o->uid != 0 && o->uid != api->uid)
			others++;
	return others <= (max - max / 8 ? max - max / 8 : 1) && mine <= (max / 4 ? max / 4 : 1);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct listener *l = server->data;
	struct smt_api *api = l->api;

	if (status < 0) {
		smt_warn("control API: accepting a connection failed: %s", uv_strerror(status));
		return;
	}
	struct conn *c = calloc(1, sizeof *c);
	if (!c) {
		smt_warn("control API: out of memory accepting a connection");
		return;
	}
	c->api = api;
	c->kind = l->kind;
	int r = kind_tcp(l->kind) ? uv_tcp_init(api->loop, &c->h.tcp) :
			    uv_pipe_init(api->loop, &c->h.pipe, 0);
	if (r < 0) {
		free(c);
		return;
	}
	uv_timer_init(api->loop, &c->timer);
	c->h.handle.data = c;
	c->timer.data = c;
	c->open_handles = 2;
	api->live++;
	api->stats.connections++;
	if (kind_tcp(c->kind))
		api->tcp_conns++;
	else
		api->unix_conns++;
	LIST_INSERT_HEAD(&api->conns, c, link);

	r = uv_accept(server, &c->h.stream);
	if (r < 0) {
		conn_close(c);
		return;
	}
	api->stats.accepted++;
	api->fresh = 1;
	struct smt_httpconn_peer peer = { .daemon_uid = api->uid,
					  .read_only = l->kind == L_HEALTH };

	peer_cred(c, kind_tcp(l->kind), &peer);
	if (l->kind == L_CHANNEL) {
		/* Root's, for every request that carries the token: the
		 * others are refused before they are read (httpconn.h). */
		peer.uid = 0;
		peer.token = api->channel_token;
	}
	c->uid = peer.uid;
	if (kind_tcp(c->kind)) {
		int alen = (int)sizeof(c->addr);
		uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&c->addr, &alen);
	}
	/* Each listener has its own limit: probes over TCP never take the
	 * places of the control socket's clients and the leader's channels. */
	unsigned max = kind_max(api, c->kind);
	if (!within_limits(api, c) || api->closing) {
		uv_buf_t b = uv_buf_init((char *)too_many, sizeof too_many - 1);
		api->stats.rejected++;
		/* A storm of clients must not become a storm of log lines. */
		if (uv_now(api->loop) - api->last_refusal_log >= 1000) {
			api->last_refusal_log = uv_now(api->loop);
			char who[INET6_ADDRSTRLEN + 16] = "";
			if (kind_tcp(c->kind))
				uv_ip_name((struct sockaddr *)&c->addr, who, sizeof(who));
			else
				snprintf(who, sizeof(who), "uid %d", c->uid);
			smt_warn("control API: refusing connections %s from %s: %u places, some "
				 "kept "
				 "for root and for other %s (%lu refused so far)",
				 kind_tcp(c->kind) ? "over TCP" : "on the socket", who, max,
				 kind_tcp(c->kind) ? "addresses" : "users", api->stats.rejected);
		}
		uv_try_write(&c->h.stream, &b, 1);
		conn_close(c);
		return;
	}
	if (smt_httpconn_new(api->ops, api->ctx, &peer, &api->stats, &c->http) < 0 ||
	    uv_timer_start(&c->timer, on_idle_timeout, api->idle_ms, 0) < 0) {
		smt_warn("control API: could not set up a client connection");
		conn_close(c);
		return;
	}
	smt_httpconn_set_defer(c->http, 1);
	conn_update_reading(c);
}

/* ---- listeners ---- */

static void on_listener_closed(uv_handle_t *h)
{
	struct listener *l = h->data;
	struct smt_api *api = l->api;

	free(l);
	api_release(api);
}

static struct listener *listener_new(struct smt_api *api, enum listen_kind kind)
{
	struct listener *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->api = api;
	l->kind = kind;
	int r = kind_tcp(kind) ? uv_tcp_init(api->loop, &l->h.tcp) :
				 uv_pipe_init(api->loop, &l->h.pipe, 0);
	if (r < 0) {
		free(l);
		return NULL;
	}
	l->h.handle.data = l;
	api->live++;
	return l;
}

static void listener_close(struct listener *l)
{
	uv_close(&l->h.handle, on_listener_closed);
}

/* Create the missing directories above PATH, each with mode 0755. */
static int make_parents(const char *path)
{
	char *dir = strdup(path);
	int ret = 0;

	if (!dir)
		return -ENOMEM;
	for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(dir, 0755) == 0) {
			/* The umask must not make it unreachable for the socket group. */
			chmod(dir, 0755);
		} else if (errno != EEXIST) {
			ret = -errno;
			smt_error("control socket %s: cannot create directory %s: %s",
				  path, dir, strerror(errno));
			break;
		}
		*p = '/';
	}
	free(dir);
	return ret;
}

static int lookup_group(const char *group, gid_t *gid)
{
	struct group gr, *res = NULL;
	char buf[4096];

	int r = getgrnam_r(group, &gr, buf, sizeof buf, &res);
	if (r != 0 || !res)
		return r ? -r : -ENOENT;
	*gid = gr.gr_gid;
	return 0;
}

int smt_api_listen_unix(struct smt_api *api, const char *path, const char *group)
{
	struct listener *l = NULL;
	gid_t gid = (gid_t)-1;
	int fd = -1, r;
	struct stat st;

	if (api->unix_listener || api->closing)
		return -EBUSY;
	if (group && (r = lookup_group(group, &gid)) < 0) {
		smt_error("control socket %s: unknown group '%s'", path, group);
		return r;
	}
	if ((r = make_parents(path)) < 0)
		return r;
	fd = smt_unix_listen("control socket", path, SOCK_STREAM, 0660, gid, &st);
	if (fd < 0)
		return fd;
	l = listener_new(api, L_UNIX);
	if (!l) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = uv_pipe_open(&l->h.pipe, fd)) < 0)
		goto out;
	fd = -1;  /* the pipe owns it now */
	if ((r = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection)) < 0)
		goto out;
	if (!(api->unix_path = strdup(path))) {
		r = -ENOMEM;
		goto out;
	}
	api->unix_dev = st.st_dev;
	api->unix_ino = st.st_ino;
	api->unix_listener = l;
	return 0;
out:
	smt_error("control socket %s: cannot listen: %s", path, strerror(-r));
	if (l)
		listener_close(l);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return r;
}

int smt_api_parse_listen(const char *text, struct sockaddr_storage *ss)
{
	char host[64];
	const char *port;
	size_t hlen;

	if (text[0] == '[') {
		const char *end = strchr(text, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		hlen = (size_t)(end - text - 1);
		if (hlen >= sizeof host)
			return -EINVAL;
		memcpy(host, text + 1, hlen);
		port = end + 2;
	} else {
		const char *colon = strrchr(text, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - text);
		if (hlen >= sizeof host)
			return -EINVAL;
		memcpy(host, text, hlen);
		port = colon + 1;
	}
	host[hlen] = '\0';
	if (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port))
		return -EINVAL;
	int p = atoi(port);
	if (p > 65535)
		return -EINVAL;
	if (!host[0])
		strcpy(host, "0.0.0.0");
	if (uv_ip4_addr(host, p, (struct sockaddr_in *)ss) == 0)
		return 0;
	if (uv_ip6_addr(host, p, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	return -EINVAL;
}

int smt_api_listen_tcp(struct smt_api *api, const char *addr_port)
{
	struct sockaddr_storage ss;
	int r;

	if (api->tcp_listener || api->closing)
		return -EBUSY;
	memset(&ss, 0, sizeof ss);
	if (smt_api_parse_listen(addr_port, &ss) < 0) {
		smt_error("health listener '%s': expected ADDR:PORT, [ADDR6]:PORT or :PORT",
			  addr_port);
		return -EINVAL;
	}
	struct listener *l = listener_new(api, L_HEALTH);
	if (!l)
		return -ENOMEM;
	if ((r = uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&ss, 0)) < 0 ||
	    (r = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection)) < 0) {
		smt_error("health listener %s: cannot listen: %s", addr_port, uv_strerror(r));
		listener_close(l);
		return r;
	}
	api->tcp_listener = l;
	return 0;
}

static int listener_port(const struct listener *l)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;

	if (!l || uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &len) < 0)
		return -ENOENT;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int smt_api_tcp_port(const struct smt_api *api)
{
	return listener_port(api->tcp_listener);
}

int smt_api_listen_channel(struct smt_api *api, const struct sockaddr *addr, const char *token,
			   double pt)
{
	struct listener *l;
	int r;

	if (api->channel_listener || api->closing)
		return -EBUSY;
	if (strlen(token) != SMT_TOKEN_HEX)
		return -EINVAL;
	if (!(l = listener_new(api, L_CHANNEL)))
		return -ENOMEM;
	if ((r = uv_tcp_bind(&l->h.tcp, addr, 0)) < 0 ||
	    (r = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection)) < 0) {
		listener_close(l);
		return r;
	}
	memcpy(api->channel_token, token, SMT_TOKEN_HEX + 1);
	api->channel_pt = pt;
	api->channel_listener = l;
	return 0;
}

int smt_api_channel_port(const struct smt_api *api)
{
	return listener_port(api->channel_listener);
}

unsigned smt_api_connections(const struct smt_api *api)
{
	return (unsigned)api->stats.connections;
}

int smt_api_new(uv_loop_t *loop, const struct smt_api_ops *ops, void *ctx,
		struct smt_api **out)
{
	struct smt_api *api = calloc(1, sizeof *api);
	if (!api)
		return -ENOMEM;
	*api = (struct smt_api){
		.loop = loop,
		.ops = ops,
		.ctx = ctx,
		.longest_step_ms = -1,
		.uid = (int)getuid(),
		.idle_ms = SMT_API_IDLE_TIMEOUT_MS,
		.linger_ms = LINGER_MS,
		.max_conns = SMT_API_MAX_CONNECTIONS,
		.max_tcp_conns = SMT_API_MAX_TCP_CONNECTIONS,
		.max_channel_conns = SMT_API_MAX_CHANNEL_CONNECTIONS,
		.conn_output_max = SMT_API_CONN_OUTPUT_MAX,
		.output_max = SMT_API_OUTPUT_MAX,
	};
	LIST_INIT(&api->conns);
	TAILQ_INIT(&api->run_queue);
	*out = api;
	return 0;
}

void smt_api_set_linger(struct smt_api *api, unsigned ms)
{
	api->linger_ms = ms;
}

void smt_api_set_limits(struct smt_api *api, unsigned idle_timeout_ms,
			unsigned max_connections)
{
	if (idle_timeout_ms)
		api->idle_ms = idle_timeout_ms;
	if (max_connections)
		api->max_conns = max_connections;
}

void smt_api_set_tcp_limit(struct smt_api *api, unsigned max_connections)
{
	if (max_connections)
		api->max_tcp_conns = max_connections;
}

void smt_api_set_output_limits(struct smt_api *api, size_t per_connection, size_t total)
{
	if (per_connection)
		api->conn_output_max = per_connection;
	if (total)
		api->output_max = total;
}

static void on_idle_closed(uv_handle_t *h)
{
	api_release(h->data);
}

void smt_api_close(struct smt_api *api, void (*done)(void *), void *arg)
{
	struct stat st;

	api->closing = 1;
	api->done = done;
	api->done_arg = arg;
	/* Remove the file only while it is still ours, not a successor's. */
	if (api->unix_path && stat(api->unix_path, &st) == 0 &&
	    st.st_dev == api->unix_dev && st.st_ino == api->unix_ino)
		unlink(api->unix_path);
	if (api->unix_listener)
		listener_close(api->unix_listener);
	if (api->tcp_listener)
		listener_close(api->tcp_listener);
	if (api->channel_listener)
		listener_close(api->channel_listener);
	api->unix_listener = api->tcp_listener = api->channel_listener = NULL;
	/*
	 * Held long polls are answered now, and answers already queued or
	 * being rendered are still delivered; deferred requests not started
	 * yet are not answered.  Only the
	 * leader's connections stay until their client closes them, for at
	 * most api->linger_ms: a worker's answer to the leader's result is
	 * the last thing it says, and when it is relayed by `smtctl
	 * dial-stdio` it must not be cut off by the daemon's exit.  Every
	 * other client is closed once its answers are written (at most
	 * EXIT_FLUSH_MS): none may delay the daemon's exit.
	 */
	struct conn *c, *next;

	for (c = LIST_FIRST(&api->conns); c; c = next) {
		next = LIST_NEXT(c, link);
		if (c->closing)
			continue;
		run_queue_remove(c);
		/* What is answered from now on is answered at once, and so is
		 * the rest of an answer being rendered: a long poll released
		 * by the last change of state carries the final state. */
		smt_httpconn_set_defer(c->http, 0);
		while (smt_httpconn_rendering(c->http) && smt_httpconn_release(c->http) >= 0)
			;
		if (smt_httpconn_held(c->http))
			smt_httpconn_release(c->http);
		conn_flush(c);
		if (c->closing)
			continue;
		if (smt_httpconn_from_leader(c->http)) {
			c->lingering = 1;
			uv_timer_start(&c->timer, on_linger_timeout, api->linger_ms, 0);
		} else if ((c->writes == 0 && !c->busy) || c->draining) {
			conn_close(c);
		} else {
			c->close_after_writes = 1;
			if (c->reading) {
				uv_read_stop(&c->h.stream);
				c->reading = 0;
			}
			uv_timer_start(&c->timer, on_linger_timeout, EXIT_FLUSH_MS, 0);
		}
	}
	if (api->idle_init) {
		uv_idle_stop(&api->idle);
		uv_close((uv_handle_t *)&api->idle, on_idle_closed);
		uv_close((uv_handle_t *)&api->pace, on_idle_closed);
		uv_close((uv_handle_t *)&api->settle, on_idle_closed);
		api->idle_init = 0;
	}
	if (api->live == 0)
		api_finish(api);
}
