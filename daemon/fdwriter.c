/* fdwriter.c - queued writes through libuv's thread pool (fdwriter.h). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdwriter.h"
#include "log.h"

/*
 * The two buffers keep their memory while bytes flow and give it back once
 * the writer has had nothing to write for this long.  Given back after
 * every write, a buffer at full speed went from 256 bytes to 256 KiB and
 * back for every flight: 11 reallocs (the large ones mremap) and their
 * copies, a sixth of smtd's CPU with two ranks printing 4 KiB writes.
 */
#define TRIM_MS 1000

struct smt_fdwriter {
	uv_loop_t *loop;
	int fd;
	int own;
	char name[64];
	size_t cap;
	struct smt_dynbuf queue;     /* appended to by the producer */
	struct smt_dynbuf flight;    /* being written: bytes from off on */
	size_t off;
	uv_fs_t req;
	uv_work_t wait;              /* a descriptor made non-blocking: until writable */
	int busy;                    /* a write (or that wait) is in flight */
	uint64_t busy_since;         /* uv_now when it started */
	int full;                    /* the producer was told there is no room */
	int closing;
	uv_idle_t idle;              /* runs a drained callback from the loop */
	uv_timer_t trim;             /* gives the buffers' memory back when idle */
	int handles;                 /* of idle and trim, not closed yet */
	void (*room_cb)(void *);
	void *room_arg;
	void (*drained_cb)(void *);
	void *drained_arg;
	struct smt_fdwriter_stats st;
};

static void start_write(struct smt_fdwriter *w);

static void release(struct smt_fdwriter *w)
{
	if (w->own && w->fd >= 0)
		close(w->fd);
	smt_dynbuf_free(&w->queue);
	smt_dynbuf_free(&w->flight);
	free(w);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct smt_fdwriter *w = h->data;

	if (--w->handles > 0)
		return;
	if (!w->busy)
		release(w);
	else
		w->idle.data = NULL;  /* the write's callback frees */
}

static void on_trim(uv_timer_t *t)
{
	struct smt_fdwriter *w = t->data;

	if (w->busy || w->queue.len || w->flight.len > w->off)
		return;
	smt_dynbuf_consume(&w->flight, w->flight.len, 1);
	smt_dynbuf_consume(&w->queue, w->queue.len, 1);
	w->off = 0;
}

static void check_drained(struct smt_fdwriter *w)
{
	void (*cb)(void *) = w->drained_cb;

	if (!cb || w->busy || w->queue.len)
		return;
	w->drained_cb = NULL;
	cb(w->drained_arg);
}

static void on_idle(uv_idle_t *h)
{
	struct smt_fdwriter *w = h->data;

	uv_idle_stop(h);
	check_drained(w);
}

/* In the thread pool: block until FD takes bytes again (or fails). */
static void wait_writable(uv_work_t *req)
{
	struct smt_fdwriter *w = req->data;
	struct pollfd p = { .fd = w->fd, .events = POLLOUT };

	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

static void after_wait(uv_work_t *req, int status)
{
	struct smt_fdwriter *w = req->data;

	(void)status;
	w->busy = 0;
	if (w->closing) {
		if (w->idle.data == NULL)
			release(w);
		return;
	}
	start_write(w);
	check_drained(w);
}

static void on_written(uv_fs_t *req)
{
	struct smt_fdwriter *w = req->data;
	ssize_t n = req->result;

	uv_fs_req_cleanup(req);
	w->busy = 0;
	if (w->closing) {
		if (w->idle.data == NULL)
			release(w);
		return;
	}
	if (n == UV_EAGAIN) {
		/* Whoever shares the descriptor made it non-blocking: a full
		 * pipe, not an error.  Wait for room off the loop, then write
		 * the same bytes again. */
		w->wait.data = w;
		if (uv_queue_work(w->loop, &w->wait, wait_writable, after_wait) == 0) {
			w->busy = 1;
			return;
		}
	}
	if (n < 0) {
		if (!w->st.error) {
			w->st.error = (int)n;
			smt_error("writing to %s: %s; its further output is dropped", w->name,
				  uv_strerror((int)n));
		}
		w->st.dropped += w->flight.len - w->off + w->queue.len;
		smt_dynbuf_reset(&w->flight);
		smt_dynbuf_reset(&w->queue);
		w->off = 0;
	} else {
		w->st.written += (uint64_t)n;
		w->off += (size_t)n;
		if (w->off >= w->flight.len) {
			smt_dynbuf_consume(&w->flight, w->flight.len, 0);
			w->off = 0;
		}
	}
	start_write(w);
	if (!w->busy)
		uv_timer_start(&w->trim, on_trim, TRIM_MS, 0);
	if (w->full && w->queue.len < w->cap / 2) {
		w->full = 0;
		if (w->room_cb)
			w->room_cb(w->room_arg);
	}
	check_drained(w);
}

static void start_write(struct smt_fdwriter *w)
{
	uv_buf_t b;
	int rc;

	if (w->busy || w->closing)
		return;
	if (w->off >= w->flight.len) {
		struct smt_dynbuf t;

		if (w->queue.len == 0)
			return;
		/* Swap: what was queued is now in flight, the old flight buffer
		 * (empty) takes new bytes. */
		t = w->flight;
		w->flight = w->queue;
		w->queue = t;
		w->queue.cap = w->flight.cap;
		w->off = 0;
	}
	b = uv_buf_init(w->flight.p + w->off, (unsigned)(w->flight.len - w->off));
	w->req.data = w;
	rc = uv_fs_write(w->loop, &w->req, w->fd, &b, 1, -1, on_written);
	if (rc < 0) {
		if (!w->st.error) {
			w->st.error = rc;
			smt_error("writing to %s: %s; its further output is dropped", w->name,
				  uv_strerror(rc));
		}
		w->st.dropped += w->flight.len - w->off;
		smt_dynbuf_reset(&w->flight);
		w->off = 0;
		return;
	}
	w->busy = 1;
	w->busy_since = uv_now(w->loop);
}

int smt_fdwriter_new(uv_loop_t *loop, int fd, int own, const char *name, size_t cap, size_t slack,
		     struct smt_fdwriter **out)
{
	struct smt_fdwriter *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->fd = fd;
	w->own = own;
	w->cap = cap;
	snprintf(w->name, sizeof(w->name), "%s", name);
	smt_dynbuf_init(&w->queue, cap + slack);
	smt_dynbuf_init(&w->flight, cap + slack);
	uv_idle_init(loop, &w->idle);
	w->idle.data = w;
	uv_timer_init(loop, &w->trim);
	w->trim.data = w;
	/* Giving memory back never keeps the loop alive. */
	uv_unref((uv_handle_t *)&w->trim);
	w->handles = 2;
	*out = w;
	return 0;
}

struct smt_dynbuf *smt_fdwriter_queue(struct smt_fdwriter *w)
{
	return &w->queue;
}

void smt_fdwriter_kick(struct smt_fdwriter *w)
{
	if (w->st.error) {
		w->st.dropped += w->queue.len;
		smt_dynbuf_reset(&w->queue);
		return;
	}
	if (w->queue.len >= w->cap)
		w->full = 1;
	start_write(w);
}

int smt_fdwriter_room(const struct smt_fdwriter *w)
{
	return w->queue.len < w->cap;
}

size_t smt_fdwriter_pending(const struct smt_fdwriter *w)
{
	return w->queue.len + (w->flight.len - w->off);
}

void smt_fdwriter_on_room(struct smt_fdwriter *w, void (*cb)(void *), void *arg)
{
	w->room_cb = cb;
	w->room_arg = arg;
}

void smt_fdwriter_on_drained(struct smt_fdwriter *w, void (*cb)(void *), void *arg)
{
	w->drained_cb = cb;
	w->drained_arg = arg;
	if (!w->busy && w->queue.len == 0)
		uv_idle_start(&w->idle, on_idle);
}

void smt_fdwriter_stats(const struct smt_fdwriter *w, struct smt_fdwriter_stats *st)
{
	*st = w->st;
}

uint64_t smt_fdwriter_blocked_ms(const struct smt_fdwriter *w)
{
	uv_update_time(w->loop);
	return w->busy ? uv_now(w->loop) - w->busy_since : 0;
}

void smt_fdwriter_close(struct smt_fdwriter *w)
{
	if (!w)
		return;
	w->closing = 1;
	w->room_cb = NULL;
	w->drained_cb = NULL;
	uv_close((uv_handle_t *)&w->idle, on_handle_closed);
	uv_close((uv_handle_t *)&w->trim, on_handle_closed);
}
