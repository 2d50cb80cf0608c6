/*
 * test_fdwriter.c - ordered writes that never block the loop (fdwriter.h),
 * on a real loop and real pipes: every byte in order; the soft cap and the
 * room callback once the queue drained; the drained callback from the
 * loop; a reader that is gone costs the bytes, not the job; a descriptor
 * someone made non-blocking loses nothing; closing with a write in flight
 * frees everything once it returns, and calls nothing back.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "fdwriter.h"

struct env {
	uv_loop_t loop;
	uv_pipe_t reader;
	int r, w;
	int reading, eof;
	struct smt_dynbuf got;
	int rooms, drained;
	int in_call;
	uv_timer_t timer;
};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char mem[65536];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(mem, sizeof(mem));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct env *e = s->data;

	if (n < 0) {
		e->eof = 1;
		uv_read_stop(s);
		return;
	}
	assert_int_equal(smt_dynbuf_add(&e->got, buf->base, (size_t)n), 0);
}

static void env_init(struct env *e)
{
	int fds[2];

	memset(e, 0, sizeof(*e));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	e->r = fds[0];
	e->w = fds[1];
	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(uv_pipe_init(&e->loop, &e->reader, 0), 0);
	assert_int_equal(uv_pipe_open(&e->reader, e->r), 0);
	e->reader.data = e;
	assert_int_equal(uv_timer_init(&e->loop, &e->timer), 0);
	smt_dynbuf_init(&e->got, (size_t)1 << 28);
}

static void start_reading(struct env *e)
{
	assert_int_equal(uv_read_start((uv_stream_t *)&e->reader, on_alloc, on_read), 0);
}

static void env_free(struct env *e)
{
	uv_close((uv_handle_t *)&e->reader, NULL);
	uv_close((uv_handle_t *)&e->timer, NULL);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
}

static void on_room(void *arg)
{
	struct env *e = arg;

	assert_false(e->in_call);
	e->rooms++;
}

static void on_drained(void *arg)
{
	struct env *e = arg;

	assert_false(e->in_call);
	e->drained++;
}

static void on_timer(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* Run the loop until *FLAG is set (for at most 20 s). */
static void run_until_set(struct env *e, const int *flag)
{
	for (int i = 0; i < 2000 && !*flag; i++) {
		uv_timer_start(&e->timer, on_timer, 10, 0);
		uv_run(&e->loop, UV_RUN_ONCE);
	}
	assert_true(*flag);
}

static void run_ms(struct env *e, uint64_t ms)
{
	uv_timer_start(&e->timer, on_timer, ms, 0);
	uv_run(&e->loop, UV_RUN_DEFAULT);
}

/* Append N bytes of the pattern from *OFF on. */
static void append(struct smt_fdwriter *w, size_t *off, size_t n)
{
	struct smt_dynbuf *q = smt_fdwriter_queue(w);
	char *p = smt_dynbuf_reserve(q, n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)((*off + i) * 7 + (*off + i) / 251);
	smt_dynbuf_commit(q, n);
	*off += n;
	smt_fdwriter_kick(w);
}

static void check_pattern(const struct smt_dynbuf *b, size_t n)
{
	assert_int_equal(b->len, n);
	for (size_t i = 0; i < n; i++)
		if (b->p[i] != (char)(i * 7 + i / 251))
			fail_msg("byte %zu differs", i);
}

static void finish(struct env *e, struct smt_fdwriter *w)
{
	smt_fdwriter_close(w);
	close(e->w);
	e->eof = 0;
	run_until_set(e, &e->eof);
	env_free(e);
}

/* Every byte in order, whatever the appends; the drained callback once
 * all is written, from the loop. */
static void test_order(void **state)
{
	struct env e;
	struct smt_fdwriter *w;
	struct smt_fdwriter_stats st;
	size_t off = 0;

	(void)state;
	env_init(&e);
	start_reading(&e);
	assert_int_equal(smt_fdwriter_new(&e.loop, e.w, 0, "test pipe", 100000, 5000, &w), 0);
	smt_fdwriter_on_drained(w, on_drained, &e);
	assert_int_equal(e.drained, 0);
	run_until_set(&e, &e.drained);
	for (int i = 0; i < 2000; i++) {
		/* A producer adds only while there is room. */
		while (!smt_fdwriter_room(w))
			uv_run(&e.loop, UV_RUN_ONCE);
		append(w, &off, 1 + (size_t)(i * 37) % 5000);
		if (i % 100 == 0)
			uv_run(&e.loop, UV_RUN_NOWAIT);
	}
	e.drained = 0;
	e.in_call = 1;
	smt_fdwriter_on_drained(w, on_drained, &e);
	e.in_call = 0;
	run_until_set(&e, &e.drained);
	assert_int_equal(smt_fdwriter_pending(w), 0);
	smt_fdwriter_stats(w, &st);
	assert_int_equal(st.written, off);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.error, 0);
	finish(&e, w);
	check_pattern(&e.got, off);
	smt_dynbuf_free(&e.got);
}

/* The soft cap: no room once CAP bytes wait; the room callback once the
 * slow reader took enough. */
static void test_room(void **state)
{
	struct env e;
	struct smt_fdwriter *w;
	size_t off = 0;

	(void)state;
	env_init(&e);
	assert_int_equal(smt_fdwriter_new(&e.loop, e.w, 0, "test pipe", 200000, 70000, &w), 0);
	smt_fdwriter_on_room(w, on_room, &e);
	/* Nobody reads: the first write fills the pipe and waits there. */
	while (smt_fdwriter_room(w)) {
		append(w, &off, 65536);
		run_ms(&e, 5);
	}
	assert_true(smt_fdwriter_pending(w) >= 200000);
	assert_true(smt_dynbuf_len(smt_fdwriter_queue(w)) < 200000 + 70000);
	run_ms(&e, 100);
	assert_false(smt_fdwriter_room(w));
	assert_int_equal(e.rooms, 0);
	start_reading(&e);
	run_until_set(&e, &e.rooms);
	assert_true(smt_fdwriter_room(w));
	e.drained = 0;
	smt_fdwriter_on_drained(w, on_drained, &e);
	run_until_set(&e, &e.drained);
	finish(&e, w);
	check_pattern(&e.got, off);
	smt_dynbuf_free(&e.got);
}

/* Someone else made the descriptor non-blocking: a full pipe is waited
 * for, not an error. */
static void test_nonblocking(void **state)
{
	struct env e;
	struct smt_fdwriter *w;
	struct smt_fdwriter_stats st;
	size_t off = 0;

	(void)state;
	env_init(&e);
	assert_int_equal(fcntl(e.w, F_SETFL, fcntl(e.w, F_GETFL) | O_NONBLOCK), 0);
	assert_int_equal(smt_fdwriter_new(&e.loop, e.w, 0, "test pipe", 1 << 20, 1 << 16, &w), 0);
	for (int i = 0; i < 8; i++)
		append(w, &off, 100000);
	run_ms(&e, 100);
	start_reading(&e);
	smt_fdwriter_on_drained(w, on_drained, &e);
	run_until_set(&e, &e.drained);
	smt_fdwriter_stats(w, &st);
	assert_int_equal(st.error, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.written, off);
	finish(&e, w);
	check_pattern(&e.got, off);
	smt_dynbuf_free(&e.got);
}

/* The reader is gone: the error once, the bytes counted as dropped, the
 * writer goes on taking (and dropping) what comes. */
static void test_dead_reader(void **state)
{
	struct env e;
	struct smt_fdwriter *w;
	struct smt_fdwriter_stats st;
	size_t off = 0;

	(void)state;
	env_init(&e);
	uv_close((uv_handle_t *)&e.reader, NULL);
	uv_run(&e.loop, UV_RUN_NOWAIT);
	assert_int_equal(smt_fdwriter_new(&e.loop, e.w, 1, "dead pipe", 1 << 16, 1 << 16, &w), 0);
	append(w, &off, 1000);
	smt_fdwriter_on_drained(w, on_drained, &e);
	run_until_set(&e, &e.drained);
	smt_fdwriter_stats(w, &st);
	assert_int_equal(st.error, UV_EPIPE);
	assert_int_equal(st.written + st.dropped, 1000);
	append(w, &off, 500);
	smt_fdwriter_stats(w, &st);
	assert_int_equal(st.written + st.dropped, 1500);
	assert_true(smt_fdwriter_room(w));
	/* OWN: closed with the writer. */
	smt_fdwriter_close(w);
	uv_close((uv_handle_t *)&e.timer, NULL);
	uv_run(&e.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e.loop), 0);
	assert_int_equal(fcntl(e.w, F_GETFD), -1);
	smt_dynbuf_free(&e.got);
}

/* Closed with a write blocked in the thread pool: nothing is called back,
 * and the writer is freed once the write returns. */
static void test_close_in_flight(void **state)
{
	struct env e;
	struct smt_fdwriter *w;
	size_t off = 0;

	(void)state;
	env_init(&e);
	assert_int_equal(smt_fdwriter_new(&e.loop, e.w, 0, "test pipe", 1 << 18, 1 << 16, &w), 0);
	smt_fdwriter_on_room(w, on_room, &e);
	append(w, &off, 200000);
	run_ms(&e, 50);
	assert_true(smt_fdwriter_pending(w) > 0);
	smt_fdwriter_on_drained(w, on_drained, &e);
	smt_fdwriter_close(w);
	/* The reader goes: the blocked write returns (EPIPE). */
	uv_close((uv_handle_t *)&e.reader, NULL);
	uv_close((uv_handle_t *)&e.timer, NULL);
	uv_run(&e.loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e.loop), 0);
	assert_int_equal(e.rooms, 0);
	assert_int_equal(e.drained, 0);
	close(e.w);
	smt_dynbuf_free(&e.got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_nonblocking),
		cmocka_unit_test(test_dead_reader),
		cmocka_unit_test(test_close_in_flight),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
