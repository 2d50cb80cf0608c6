/* merge.c - many sources into one sink, line by line (merge.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "merge.h"

struct smt_merge {
	uv_idle_t idle;
	uv_timer_t cut_timer;      /* the lock holder idle too long */
	int line_atomic;
	unsigned cut_ms;
	struct smt_merge_sink sink;
	void *arg;
	struct smt_merge_src *lock;
	uint64_t lock_active;      /* uv_now of the holder's last piece */
	int sink_full;             /* the sink refused since then */
	struct smt_record lock_rec; /* its rank and stream, to end its line */
	const char *lock_host;
	TAILQ_HEAD(srcq, smt_merge_src) queue; /* sources waiting, in order */
	int handles;
	int closing;
};

static void arm_cut(struct smt_merge *m);

static void wait_for(struct smt_merge *m, struct smt_merge_src *src)
{
	if (m->lock && m->lock != src)
		arm_cut(m);
	if (src->waiting)
		return;
	src->waiting = 1;
	TAILQ_INSERT_TAIL(&m->queue, src, wait_link);
}

static void unlink_waiting(struct smt_merge *m, struct smt_merge_src *src)
{
	if (!src->waiting)
		return;
	TAILQ_REMOVE(&m->queue, src, wait_link);
	src->waiting = 0;
}

int smt_merge_can_take(const struct smt_merge *m, const struct smt_merge_src *src)
{
	if (m->lock && m->lock != src)
		return 0;
	return m->sink.room(m->arg) != 0;
}

int smt_merge_offer(struct smt_merge *m, struct smt_merge_src *src, const struct smt_record *r,
		    const char *host)
{
	if (!smt_merge_can_take(m, src)) {
		if (!m->lock || m->lock == src)
			m->sink_full = 1;
		wait_for(m, src);
		return -EAGAIN;
	}
	struct smt_record cont;

	if (src->cut && m->line_atomic) {
		/* The rest of a line that was ended for it: tagged again. */
		cont = *r;
		cont.flags |= SMT_REC_FIRST;
		r = &cont;
		src->cut = 0;
	}
	m->sink.put(m->arg, r, host);
	if (m->line_atomic) {
		if (!(r->flags & SMT_REC_LAST)) {
			m->lock = src;
			m->lock_active = uv_now(m->idle.loop);
			m->lock_rec = *r;
			m->lock_rec.p = "";
			m->lock_rec.n = 0;
			m->lock_host = host;
		} else if (m->lock == src) {
			m->lock = NULL;
			uv_timer_stop(&m->cut_timer);
			smt_merge_wake(m);
		}
	}
	return 0;
}

/*
 * The line in progress has had no piece for CUT_MS while others
 * wait: its source may be waiting for them (a rank in a collective, its
 * progress bar drawn with \r and no newline), and they for the line's end.
 * The line is ended here and its rest, when it comes, is tagged again.
 */
static void on_cut(uv_timer_t *t)
{
	struct smt_merge *m = t->data;
	struct smt_merge_src *holder = m->lock;
	uint64_t idle;

	if (!holder || TAILQ_EMPTY(&m->queue))
		return;
	idle = uv_now(m->idle.loop) - m->lock_active;
	if (idle < m->cut_ms) {
		uv_timer_start(&m->cut_timer, on_cut, m->cut_ms - idle, 0);
		return;
	}
	if (!m->sink.room(m->arg)) {
		m->sink_full = 1;
		return;  /* nothing moves anyway; smt_merge_wake re-arms */
	}
	m->lock_rec.flags = SMT_REC_LAST | SMT_REC_CUT;
	m->sink.put(m->arg, &m->lock_rec, m->lock_host);
	holder->cut = 1;
	m->lock = NULL;
	smt_merge_wake(m);
}

static void arm_cut(struct smt_merge *m)
{
	uint64_t idle = uv_now(m->idle.loop) - m->lock_active;

	if (m->closing || uv_is_active((uv_handle_t *)&m->cut_timer))
		return;
	uv_timer_start(&m->cut_timer, on_cut, idle < m->cut_ms ? m->cut_ms - idle : 0, 0);
}

/* Resume, in order, the waiting sources that can go on now.  A resumed
 * source that is refused again queues itself at the end. */
static void on_idle(uv_idle_t *h)
{
	struct smt_merge *m = h->data;
	struct smt_merge_src *stop = TAILQ_LAST(&m->queue, srcq);

	uv_idle_stop(h);
	if (!TAILQ_EMPTY(&m->queue) && !m->sink.room(m->arg))
		m->sink_full = 1;
	while (!TAILQ_EMPTY(&m->queue) && m->sink.room(m->arg)) {
		struct smt_merge_src *src = TAILQ_FIRST(&m->queue);
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
	if (m->sink_full && m->sink.room(m->arg)) {
		/* While the sink was full the holder's next piece could not
		 * be taken, and upstream of a slow reader its rank was not
		 * even read: that time is not the line's idleness.  Only an
		 * idle holder keeps the sink roomy, so this cannot put a cut
		 * off for ever. */
		m->sink_full = 0;
		m->lock_active = uv_now(m->idle.loop);
	}
	if (!TAILQ_EMPTY(&m->queue) && !m->closing) {
		uv_idle_start(&m->idle, on_idle);
		if (m->lock)
			arm_cut(m);
	}
}

void smt_merge_defer(struct smt_merge *m, struct smt_merge_src *src)
{
	wait_for(m, src);
	smt_merge_wake(m);
}

void smt_merge_forget(struct smt_merge *m, struct smt_merge_src *src)
{
	unlink_waiting(m, src);
	if (m->lock == src) {
		m->lock = NULL;
		uv_timer_stop(&m->cut_timer);
		smt_merge_wake(m);
	}
}

struct smt_merge_src *smt_merge_locked_by(const struct smt_merge *m)
{
	return m->lock;
}

int smt_merge_new(uv_loop_t *loop, int line_atomic, unsigned cut_ms,
		  const struct smt_merge_sink *sink, void *arg, struct smt_merge **out)
{
	struct smt_merge *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	TAILQ_INIT(&m->queue);
	m->line_atomic = line_atomic;
	m->cut_ms = cut_ms ? cut_ms : SMT_MERGE_CUT_MS;
	m->sink = *sink;
	m->arg = arg;
	uv_idle_init(loop, &m->idle);
	uv_timer_init(loop, &m->cut_timer);
	m->idle.data = m->cut_timer.data = m;
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
	uv_close((uv_handle_t *)&m->cut_timer, on_closed);
}
