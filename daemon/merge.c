/* merge.c - many sources into one sink, line by line (merge.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "merge.h"

struct smt_merge {
	uv_idle_t idle;
	uv_timer_t stall;        /* the line in progress, held up too long */
	uv_loop_t *loop;
	int line_atomic;
	struct smt_merge_sink sink;
	void *arg;
	struct smt_merge_src *lock;
	/* The locked line: whose it is, and when its source last went on. */
	int lock_rank;
	enum smt_stream lock_stream;
	const char *lock_host;
	uint64_t lock_ms;
	struct smt_merge_src *head, *tail;   /* sources waiting, in order */
	int closing;
	int handles;
};

static void wait_for(struct smt_merge *m, struct smt_merge_src *src)
{
	if (src->waiting)
		return;
	src->waiting = 1;
	src->next_waiting = NULL;
	if (m->tail)
		m->tail->next_waiting = src;
	else
		m->head = src;
	m->tail = src;
}

static void unlink_waiting(struct smt_merge *m, struct smt_merge_src *src)
{
	struct smt_merge_src **pp = &m->head, *prev = NULL;

	if (!src->waiting)
		return;
	while (*pp && *pp != src) {
		prev = *pp;
		pp = &(*pp)->next_waiting;
	}
	if (*pp)
		*pp = src->next_waiting;
	if (m->tail == src)
		m->tail = prev;
	src->waiting = 0;
	src->next_waiting = NULL;
}

int smt_merge_can_take(const struct smt_merge *m, const struct smt_merge_src *src)
{
	if (m->lock && m->lock != src)
		return 0;
	return m->sink.room(m->arg) != 0;
}

static void on_stall(uv_timer_t *t);

/* Someone waits behind the line in progress: watch that it goes on. */
static void watch_lock(struct smt_merge *m)
{
	if (m->lock && m->sink.cut && !m->closing && !uv_is_active((uv_handle_t *)&m->stall))
		uv_timer_start(&m->stall, on_stall, SMT_MERGE_STALL_MS, 0);
}

int smt_merge_offer(struct smt_merge *m, struct smt_merge_src *src, const struct smt_record *r,
		    const char *host)
{
	struct smt_record first;

	if (!smt_merge_can_take(m, src)) {
		wait_for(m, src);
		if (m->lock && m->lock != src)
			watch_lock(m);
		return -EAGAIN;
	}
	if (src->cut) {
		/* The rest of a line that was cut: a line of its own. */
		src->cut = 0;
		first = *r;
		first.flags |= SMT_REC_FIRST;
		r = &first;
	}
	m->sink.put(m->arg, r, host);
	if (m->line_atomic) {
		if (!(r->flags & SMT_REC_LAST)) {
			m->lock = src;
			m->lock_rank = r->rank;
			m->lock_stream = r->stream;
			m->lock_host = host;
			m->lock_ms = uv_now(m->loop);
		} else if (m->lock == src) {
			m->lock = NULL;
			uv_timer_stop(&m->stall);
			smt_merge_wake(m);
		}
	}
	return 0;
}

/* The line in progress has not gone on for SMT_MERGE_STALL_MS while others
 * wait: cut it, unless its source is only waiting for room like them. */
static void on_stall(uv_timer_t *t)
{
	struct smt_merge *m = t->data;
	struct smt_merge_src *holder = m->lock;
	uint64_t idle;

	if (!holder || !m->head || m->closing)
		return;
	idle = uv_now(m->loop) - m->lock_ms;
	if (holder->waiting || idle < SMT_MERGE_STALL_MS || !m->sink.room(m->arg)) {
		uv_timer_start(&m->stall, on_stall,
			       idle < SMT_MERGE_STALL_MS ? SMT_MERGE_STALL_MS - idle : SMT_MERGE_STALL_MS, 0);
		return;
	}
	m->sink.cut(m->arg, m->lock_rank, m->lock_stream, m->lock_host);
	holder->cut = 1;
	m->lock = NULL;
	smt_merge_wake(m);
}

/* Resume, in order, the waiting sources that can go on now.  A resumed
 * source that is refused again queues itself at the end. */
static void on_idle(uv_idle_t *h)
{
	struct smt_merge *m = h->data;
	struct smt_merge_src *stop = m->tail;

	uv_idle_stop(h);
	while (m->head && m->sink.room(m->arg)) {
		struct smt_merge_src *src = m->head;
		int last = src == stop;

		if (m->lock && m->lock != src) {
			/* It must wait for the line in progress: move the lock
			 * holder, if it waits, to the front. */
			struct smt_merge_src *holder = m->lock;
			if (!holder->waiting)
				break;
			unlink_waiting(m, holder);
			holder->resume(holder);
			break;
		}
		unlink_waiting(m, src);
		src->resume(src);
		if (last)
			break;
	}
}

void smt_merge_wake(struct smt_merge *m)
{
	if (m->head && !m->closing)
		uv_idle_start(&m->idle, on_idle);
}

void smt_merge_forget(struct smt_merge *m, struct smt_merge_src *src)
{
	unlink_waiting(m, src);
	src->cut = 0;
	if (m->lock == src) {
		m->lock = NULL;
		uv_timer_stop(&m->stall);
		smt_merge_wake(m);
	}
}

struct smt_merge_src *smt_merge_locked_by(const struct smt_merge *m)
{
	return m->lock;
}

int smt_merge_new(uv_loop_t *loop, int line_atomic, const struct smt_merge_sink *sink,
		  void *arg, struct smt_merge **out)
{
	struct smt_merge *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->line_atomic = line_atomic;
	m->sink = *sink;
	m->arg = arg;
	uv_idle_init(loop, &m->idle);
	m->idle.data = m;
	uv_timer_init(loop, &m->stall);
	m->stall.data = m;
	m->handles = 2;
	*out = m;
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct smt_merge *m = h->data;

	if (--m->handles == 0)
		free(m);
}

void smt_merge_free(struct smt_merge *m)
{
	if (!m)
		return;
	m->closing = 1;
	uv_close((uv_handle_t *)&m->idle, on_closed);
	uv_close((uv_handle_t *)&m->stall, on_closed);
}
