/*
 * test_merge.c - many sources into one sink on a real libuv loop
 * (merge.h): every record once, in order per source; in text mode a line
 * in pieces is never interleaved with another source's records; a full
 * sink refuses, and the sources it refused are resumed - from the loop,
 * in the order they waited, the lock holder first - once it has room; JSON
 * mode has no lock; a source that ends releases its lock and its wait.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "merge.h"

#define MAXREC 4096
#define MAXSRC 8

struct taken {
	int src;
	unsigned flags;
	int seq;        /* the record's number within its source */
};

struct sink_state {
	long room;      /* records it takes before it is full; -1: no limit */
	struct taken log[MAXREC];
	size_t n;
	int in_offer;   /* a source is inside smt_merge_offer */
	int resumes[MAXREC];
	size_t nresumes;
};

struct tsrc {
	struct smt_merge_src ms;    /* first: the merger hands it back */
	struct smt_merge *m;
	struct sink_state *st;
	int id;
	unsigned flags[MAXREC];     /* the records it will offer */
	int nrec;
	int avail;                  /* how many of them it has so far */
	int next;                   /* the next to offer */
	int blocked;                /* refused, waiting for a resume */
};

static int sink_room(void *arg)
{
	struct sink_state *st = arg;

	return st->room != 0;
}

static void sink_put(void *arg, const struct smt_record *r, const char *host)
{
	struct sink_state *st = arg;

	assert_true(st->room != 0);
	assert_string_equal(host, "h");
	assert_true(st->n < MAXREC);
	st->log[st->n].src = r->rank;
	st->log[st->n].flags = r->flags;
	st->log[st->n].seq = (int)r->ms;
	st->n++;
	if (st->room > 0)
		st->room--;
}

static const struct smt_merge_sink sink = { .room = sink_room, .put = sink_put };

/* Offer what the source has, until it is refused. */
static void pump(struct tsrc *s)
{
	while (s->next < s->avail) {
		struct smt_record r = { .rank = s->id, .flags = s->flags[s->next], .ms = s->next,
					.p = "x", .n = 1 };
		int rc;

		s->st->in_offer = 1;
		rc = smt_merge_offer(s->m, &s->ms, &r, "h");
		s->st->in_offer = 0;
		if (rc == -EAGAIN) {
			s->blocked = 1;
			return;
		}
		assert_int_equal(rc, 0);
		s->next++;
	}
}

static void on_resume(struct smt_merge_src *ms)
{
	struct tsrc *s = (struct tsrc *)ms;

	/* Never from inside an offer: from the loop. */
	assert_false(s->st->in_offer);
	assert_true(s->blocked);
	s->st->resumes[s->st->nresumes++] = s->id;
	s->blocked = 0;
	pump(s);
}

static void src_init(struct tsrc *s, struct smt_merge *m, struct sink_state *st, int id)
{
	memset(s, 0, sizeof(*s));
	s->ms.resume = on_resume;
	s->m = m;
	s->st = st;
	s->id = id;
}

/* Lines of LEN pieces each (1: whole lines). */
static void add_line(struct tsrc *s, int len)
{
	for (int i = 0; i < len; i++)
		s->flags[s->nrec++] = (i == 0 ? SMT_REC_FIRST : 0) | (i == len - 1 ? SMT_REC_LAST : 0);
}

/* Make records available and offer them, unless the source waits. */
static void arrive(struct tsrc *s, int n)
{
	s->avail += n;
	if (s->avail > s->nrec)
		s->avail = s->nrec;
	if (!s->blocked)
		pump(s);
}

static void run_loop(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_NOWAIT);
}

/* Every record of every source once, in order; in text mode, nothing of
 * another source inside a line in pieces. */
static void check_log(const struct sink_state *st, struct tsrc *srcs, int nsrc, int line_atomic)
{
	int seen[MAXSRC] = { 0 };
	int open = -1;   /* the source whose line is in progress */

	for (size_t i = 0; i < st->n; i++) {
		const struct taken *t = &st->log[i];

		assert_true(t->src >= 0 && t->src < nsrc);
		assert_int_equal(t->seq, seen[t->src]);
		assert_int_equal(t->flags, srcs[t->src].flags[t->seq]);
		seen[t->src]++;
		if (line_atomic) {
			if (open >= 0 && t->src != open)
				fail_msg("record %zu of source %d inside a line of source %d", i, t->src,
					 open);
			open = t->flags & SMT_REC_LAST ? -1 : t->src;
		}
	}
	for (int k = 0; k < nsrc; k++)
		assert_int_equal(seen[k], srcs[k].nrec);
}

static void loop_close(uv_loop_t *loop, struct smt_merge *m)
{
	smt_merge_free(m);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

/* Text mode: B's lines wait while A's long line is in progress, and go
 * as soon as it ends (resumed from the loop). */
static void test_line_atomic(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = -1 };
	struct smt_merge *m;
	struct tsrc a, b;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 60000, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 5);
	add_line(&a, 1);
	for (int i = 0; i < 4; i++)
		add_line(&b, 1);
	arrive(&a, 1);
	assert_ptr_equal(smt_merge_locked_by(m), &a.ms);
	assert_false(smt_merge_can_take(m, &b.ms));
	assert_true(smt_merge_can_take(m, &a.ms));
	arrive(&b, 4);
	assert_true(b.blocked);
	assert_int_equal(b.next, 0);
	for (int i = 0; i < 3; i++) {
		arrive(&a, 1);
		run_loop(&loop);
		assert_int_equal(b.next, 0);
	}
	/* The last piece: the lock goes, B is resumed from the loop. */
	arrive(&a, 1);
	assert_null(smt_merge_locked_by(m));
	assert_int_equal(b.next, 0);
	run_loop(&loop);
	assert_int_equal(b.next, 4);
	assert_int_equal(st.nresumes, 1);
	arrive(&a, 1);
	check_log(&st, (struct tsrc[]){ a, b }, 2, 1);
	loop_close(&loop, m);
}

/* JSON mode: no lock, every record is an object of its own. */
static void test_json_no_lock(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = -1 };
	struct smt_merge *m;
	struct tsrc a, b;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 0, 0, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 3);
	add_line(&b, 1);
	add_line(&b, 2);
	arrive(&a, 1);
	assert_null(smt_merge_locked_by(m));
	arrive(&b, 3);
	assert_int_equal(b.next, 3);
	arrive(&a, 2);
	assert_int_equal(st.n, 6);
	assert_int_equal(st.log[1].src, 1);
	assert_int_equal(st.nresumes, 0);
	check_log(&st, (struct tsrc[]){ a, b }, 2, 0);
	loop_close(&loop, m);
}

/* A full sink: sources are refused and resumed, once it has room, in the
 * order they waited; one refused again waits at the end. */
static void test_room_and_resume_order(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = 0 };
	struct smt_merge *m;
	struct tsrc s[4];

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 60000, &sink, &st, &m), 0);
	for (int i = 0; i < 4; i++) {
		src_init(&s[i], m, &st, i);
		add_line(&s[i], 1);
		add_line(&s[i], 1);
	}
	/* They wait in the order 2, 0, 3, 1. */
	arrive(&s[2], 2);
	arrive(&s[0], 2);
	arrive(&s[3], 2);
	arrive(&s[1], 2);
	for (int i = 0; i < 4; i++)
		assert_true(s[i].blocked);
	/* Nothing is resumed while there is no room. */
	run_loop(&loop);
	assert_int_equal(st.nresumes, 0);
	/* Room for three records: 2 takes two, 0 one and waits again. */
	st.room = 3;
	smt_merge_wake(m);
	assert_int_equal(st.nresumes, 0);
	run_loop(&loop);
	assert_int_equal(st.nresumes, 2);
	assert_int_equal(st.resumes[0], 2);
	assert_int_equal(st.resumes[1], 0);
	assert_int_equal(s[2].next, 2);
	assert_int_equal(s[0].next, 1);
	assert_true(s[0].blocked);
	/* Then 3, 1 and 0 again, in that order. */
	st.room = -1;
	smt_merge_wake(m);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(st.nresumes, 5);
	assert_int_equal(st.resumes[2], 3);
	assert_int_equal(st.resumes[3], 1);
	assert_int_equal(st.resumes[4], 0);
	check_log(&st, s, 4, 1);
	loop_close(&loop, m);
}

/* A line in progress and a full sink: when room comes back the lock
 * holder goes first, even if others waited before it. */
static void test_lock_holder_first(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = 1 };
	struct smt_merge *m;
	struct tsrc a, b;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 60000, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 4);
	add_line(&b, 1);
	arrive(&a, 1);          /* takes the only room, holds the lock */
	arrive(&b, 1);          /* waits first */
	arrive(&a, 3);          /* waits behind B */
	assert_true(a.blocked && b.blocked);
	/* One record at a time, as a slow stdout drains. */
	for (int round = 0; a.next < a.nrec || b.next < b.nrec; round++) {
		assert_true(round < 20);
		st.room = 1;
		smt_merge_wake(m);
		run_loop(&loop);
		if (a.next < a.nrec)
			assert_int_equal(b.next, 0);
	}
	check_log(&st, (struct tsrc[]){ a, b }, 2, 1);
	assert_int_equal(st.log[4].src, 1);
	loop_close(&loop, m);
}

/* A source that ends mid-line releases its lock; one that ends while
 * waiting is never resumed. */
static void test_forget(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = -1 };
	struct smt_merge *m;
	struct tsrc a, b, c;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 60000, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	src_init(&c, m, &st, 2);
	add_line(&a, 3);
	add_line(&b, 1);
	add_line(&c, 1);
	arrive(&a, 1);
	arrive(&b, 1);
	arrive(&c, 1);
	assert_true(b.blocked && c.blocked);
	smt_merge_forget(m, &c.ms);
	smt_merge_forget(m, &a.ms);
	assert_null(smt_merge_locked_by(m));
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(b.next, 1);
	assert_int_equal(c.next, 0);
	assert_int_equal(st.nresumes, 1);
	assert_int_equal(st.resumes[0], 1);
	/* Forgetting a source that neither waits nor holds is harmless. */
	smt_merge_forget(m, &b.ms);
	loop_close(&loop, m);
}

/* A source deferred is resumed from the loop, never from the call, after
 * the sources that waited before it, and only once there is room. */
static void test_defer(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = 0 };
	struct smt_merge *m;
	struct tsrc a, b;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 60000, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 1);
	add_line(&b, 1);
	arrive(&a, 1);
	assert_true(a.blocked);
	b.avail = 1;
	b.blocked = 1;
	smt_merge_defer(m, &b.ms);
	assert_int_equal(st.nresumes, 0);
	run_loop(&loop);
	assert_int_equal(st.nresumes, 0);
	st.room = -1;
	smt_merge_wake(m);
	assert_int_equal(st.nresumes, 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(st.nresumes, 2);
	assert_int_equal(st.resumes[0], 0);
	assert_int_equal(st.resumes[1], 1);
	/* With room at once: still from the loop. */
	add_line(&b, 1);
	b.avail = 2;
	b.blocked = 1;
	smt_merge_defer(m, &b.ms);
	assert_int_equal(b.next, 1);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(b.next, 2);
	check_log(&st, (struct tsrc[]){ a, b }, 2, 1);
	loop_close(&loop, m);
}

/* Many sources, lines of any length, records arriving and the sink's room
 * changing at random: every record once, in order, lines whole. */
static void test_random(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 30; seed++) {
		uv_loop_t loop;
		struct sink_state *st = calloc(1, sizeof(*st));
		struct smt_merge *m;
		struct tsrc *s = calloc(MAXSRC, sizeof(*s));
		int nsrc = 2 + (int)(seed % (MAXSRC - 1)), line_atomic = seed % 3 != 0;
		unsigned r = seed;

		assert_non_null(st);
		assert_non_null(s);
		assert_int_equal(uv_loop_init(&loop), 0);
		assert_int_equal(smt_merge_new(&loop, line_atomic, 60000, &sink, st, &m), 0);
		for (int i = 0; i < nsrc; i++) {
			src_init(&s[i], m, st, i);
			while (s[i].nrec < MAXREC / MAXSRC - 12)
				add_line(&s[i], 1 + (rand_r(&r) % 4 == 0 ? (int)(rand_r(&r) % 10) : 0));
		}
		for (int step = 0; step < 3000; step++) {
			int k = (int)(rand_r(&r) % 10);
			if (k < 6) {
				arrive(&s[rand_r(&r) % (unsigned)nsrc], 1 + (int)(rand_r(&r) % 3));
			} else if (k < 8) {
				st->room = (long)(rand_r(&r) % 6);
				smt_merge_wake(m);
			} else {
				run_loop(&loop);
			}
		}
		/* Then everything arrives, and the sink takes all. */
		st->room = -1;
		smt_merge_wake(m);
		for (int i = 0; i < nsrc; i++)
			arrive(&s[i], MAXREC);
		uv_run(&loop, UV_RUN_DEFAULT);
		for (int i = 0; i < nsrc; i++)
			if (s[i].next != s[i].nrec)
				fail_msg("seed %u: source %d stuck at %d of %d (%s)", seed, i, s[i].next,
					 s[i].nrec, s[i].blocked ? "waiting" : "not waiting");
		check_log(st, s, nsrc, line_atomic);
		loop_close(&loop, m);
		free(s);
		free(st);
	}
}

/* A line whose source went quiet while others wait is ended after CUT_MS
 * (an empty last piece), the others go, and the rest of the line comes
 * tagged again (its first piece marked FIRST): the rule never deadlocks a
 * rank that waits, mid-line, for ranks that wait for its newline. */
static void test_cut_idle_line(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = -1 };
	struct smt_merge *m;
	struct tsrc a, b;
	uint64_t t0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 30, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 3);
	add_line(&b, 1);
	arrive(&a, 1);
	arrive(&b, 1);
	assert_true(b.blocked);
	/* Within CUT_MS nothing moves. */
	uv_update_time(&loop);
	t0 = uv_now(&loop);
	while (uv_now(&loop) - t0 < 10) {
		uv_run(&loop, UV_RUN_NOWAIT);
		uv_update_time(&loop);
	}
	assert_int_equal(b.next, 0);
	assert_int_equal(st.n, 1);
	/* Then A's line is ended for it and B goes. */
	while (b.next == 0 && uv_now(&loop) - t0 < 5000) {
		uv_run(&loop, UV_RUN_ONCE);
		uv_update_time(&loop);
	}
	assert_int_equal(b.next, 1);
	assert_true(uv_now(&loop) - t0 >= 25);
	assert_null(smt_merge_locked_by(m));
	assert_int_equal(st.n, 3);
	assert_int_equal(st.log[1].src, 0);
	assert_int_equal(st.log[1].flags, SMT_REC_LAST | SMT_REC_CUT);   /* A's line ended */
	assert_int_equal(st.log[2].src, 1);
	assert_int_equal(st.log[2].flags, SMT_REC_WHOLE);
	/* A's rest starts a line of its own. */
	arrive(&a, 2);
	assert_int_equal(st.n, 5);
	assert_int_equal(st.log[3].flags, SMT_REC_FIRST);
	assert_int_equal(st.log[4].flags, SMT_REC_LAST);
	loop_close(&loop, m);
}

/* Time the sink was full is not a line's idleness: its source could not
 * have handed over the rest (upstream of a slow reader, its rank was not
 * even read).  A line held up by a full sink for longer than CUT_MS is
 * not cut; its rest goes first once there is room, whole. */
static void test_full_sink_no_cut(void **state)
{
	uv_loop_t loop;
	struct sink_state st = { .room = 1 };
	struct smt_merge *m;
	struct tsrc a, b;
	uint64_t t0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(smt_merge_new(&loop, 1, 30, &sink, &st, &m), 0);
	src_init(&a, m, &st, 0);
	src_init(&b, m, &st, 1);
	add_line(&a, 3);
	add_line(&b, 1);
	arrive(&a, 3);          /* A has its whole line; the sink takes one piece */
	arrive(&b, 1);
	assert_true(a.blocked);
	assert_true(b.blocked);
	assert_int_equal(st.n, 1);
	/* The sink stays full for 3 x CUT_MS. */
	uv_update_time(&loop);
	t0 = uv_now(&loop);
	while (uv_now(&loop) - t0 < 90) {
		uv_run(&loop, UV_RUN_NOWAIT);
		uv_update_time(&loop);
	}
	assert_int_equal(st.n, 1);
	/* Room again: A's line goes on, whole and first. */
	st.room = -1;
	smt_merge_wake(m);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(st.n, 4);
	assert_int_equal(st.log[1].src, 0);
	assert_int_equal(st.log[1].flags, 0);               /* A's middle piece, no cut */
	assert_int_equal(st.log[2].src, 0);
	assert_int_equal(st.log[2].flags, SMT_REC_LAST);
	assert_int_equal(st.log[3].src, 1);
	assert_int_equal(st.log[3].flags, SMT_REC_WHOLE);
	loop_close(&loop, m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_atomic),
		cmocka_unit_test(test_cut_idle_line),
		cmocka_unit_test(test_full_sink_no_cut),
		cmocka_unit_test(test_json_no_lock),
		cmocka_unit_test(test_room_and_resume_order),
		cmocka_unit_test(test_lock_holder_first),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_defer),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
