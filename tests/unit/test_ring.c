/*
 * test_ring.c - the last lines, bounded: oldest first, never more than its
 * lines or its bytes, a line across the end of its byte buffer read back
 * whole, an over-long line cut and marked, and the tail of one rank.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

struct seen {
	size_t n;
	char text[64][128];
	size_t len[64];
	int rank[64], stream[64], truncated[64];
	int64_t ms[64];
	size_t stop_at;
};

static int collect(void *arg, const struct smt_ring_entry *e, const char *line)
{
	struct seen *s = arg;

	assert_true(s->n < 64);
	assert_true(e->len < 128);
	memcpy(s->text[s->n], line, e->len);
	s->text[s->n][e->len] = '\0';
	s->len[s->n] = e->len;
	s->rank[s->n] = e->rank;
	s->stream[s->n] = e->stream;
	s->truncated[s->n] = e->truncated;
	s->ms[s->n] = e->ms;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static void test_empty(void **state)
{
	struct smt_ring r;
	struct seen s = { 0 };

	(void)state;
	smt_ring_init(&r, 4, 100);
	assert_int_equal(smt_ring_foreach(&r, 0, collect, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(smt_ring_tail_start(&r, 10, -1), 0);
	smt_ring_free(&r);
}

static void test_order_and_fields(void **state)
{
	struct smt_ring r;
	struct seen s = { 0 };

	(void)state;
	smt_ring_init(&r, 8, 1000);
	smt_ring_push(&r, "one", 3, 0, 1, 0, 100);
	smt_ring_push(&r, "", 0, 0, 2, 1, 200);
	smt_ring_push(&r, "a\0b", 3, 1, 3, 1, 300);
	assert_int_equal(smt_ring_foreach(&r, 0, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.text[0], "one");
	assert_int_equal(s.len[1], 0);
	assert_int_equal(s.len[2], 3);
	assert_memory_equal(s.text[2], "a\0b", 3);
	assert_int_equal(s.rank[0], 1);
	assert_int_equal(s.rank[2], 3);
	assert_int_equal(s.stream[1], 1);
	assert_int_equal(s.truncated[0], 0);
	assert_int_equal(s.truncated[2], 1);
	assert_int_equal(s.ms[1], 200);
	/* A callback's nonzero return stops the walk and is returned. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(smt_ring_foreach(&r, 0, collect, &s), 42);
	assert_int_equal(s.n, 2);
	/* From an index on. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(smt_ring_foreach(&r, 2, collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.rank[0], 3);
	smt_ring_free(&r);
}

/* At most MAX_LINES lines: the oldest go. */
static void test_line_bound(void **state)
{
	struct smt_ring r;
	struct seen s = { 0 };
	char line[16];

	(void)state;
	smt_ring_init(&r, 5, 10000);
	for (int i = 0; i < 23; i++) {
		int n = snprintf(line, sizeof(line), "line %d", i);
		smt_ring_push(&r, line, (size_t)n, 0, i % 3, 0, i);
	}
	assert_int_equal(r.count, 5);
	smt_ring_foreach(&r, 0, collect, &s);
	assert_int_equal(s.n, 5);
	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "line %d", 18 + i);
		assert_string_equal(s.text[i], line);
	}
	smt_ring_free(&r);
}

/* At most CAP bytes; lines that wrap around the end of the byte buffer
 * come back whole and in order, whatever the sizes. */
static void test_byte_bound_and_wrap(void **state)
{
	struct smt_ring r;
	char line[128];
	size_t pushed[500];
	unsigned seed = 7;

	(void)state;
	smt_ring_init(&r, 64, 100);
	for (int i = 0; i < 500; i++) {
		struct seen s = { 0 };
		size_t n = (size_t)(rand_r(&seed) % 40), total = 0;

		for (size_t k = 0; k < n; k++)
			line[k] = (char)('A' + (i + (int)k) % 26);
		pushed[i] = n;
		smt_ring_push(&r, line, n, 0, i, 0, i);
		assert_int_equal(smt_ring_foreach(&r, 0, collect, &s), 0);
		assert_int_equal(s.n, r.count);
		/* The newest is the one just pushed, whole. */
		assert_int_equal(s.len[s.n - 1], n);
		assert_memory_equal(s.text[s.n - 1], line, n);
		for (size_t k = 0; k < s.n; k++) {
			total += s.len[k];
			/* Each kept line is what was pushed as line RANK. */
			for (size_t c = 0; c < s.len[k]; c++)
				assert_int_equal(s.text[k][c], 'A' + (s.rank[k] + (int)c) % 26);
			if (k)
				assert_int_equal(s.rank[k], s.rank[k - 1] + 1);
		}
		assert_true(total <= 100);
		/* Nothing older was dropped that still fitted. */
		if (s.rank[0] > 0)
			assert_true(total + pushed[s.rank[0] - 1] > 100 || s.n == 64);
	}
	smt_ring_free(&r);
}

static void test_overlong_line(void **state)
{
	struct smt_ring r;
	struct seen s = { 0 };
	char big[200];

	(void)state;
	memset(big, 'z', sizeof(big));
	big[0] = 'S';
	smt_ring_init(&r, 4, 100);
	smt_ring_push(&r, "before", 6, 0, 0, 0, 0);
	smt_ring_push(&r, big, sizeof(big), 0, 1, 0, 0);
	smt_ring_foreach(&r, 0, collect, &s);
	/* It takes the whole ring, cut to its size and marked. */
	assert_int_equal(s.n, 1);
	assert_int_equal(s.len[0], 100);
	assert_int_equal(s.text[0][0], 'S');
	assert_int_equal(s.truncated[0], 1);
	smt_ring_free(&r);
}

static void test_tail_start(void **state)
{
	struct smt_ring r;
	struct seen s = { 0 };

	(void)state;
	smt_ring_init(&r, 16, 1000);
	/* ranks: 0 1 0 2 0 1 */
	smt_ring_push(&r, "a", 1, 0, 0, 0, 0);
	smt_ring_push(&r, "b", 1, 0, 1, 0, 0);
	smt_ring_push(&r, "c", 1, 0, 0, 0, 0);
	smt_ring_push(&r, "d", 1, 0, 2, 0, 0);
	smt_ring_push(&r, "e", 1, 0, 0, 0, 0);
	smt_ring_push(&r, "f", 1, 0, 1, 0, 0);
	assert_int_equal(smt_ring_tail_start(&r, 2, -1), 4);
	assert_int_equal(smt_ring_tail_start(&r, 100, -1), 0);
	assert_int_equal(smt_ring_tail_start(&r, 0, -1), 6);
	assert_int_equal(smt_ring_tail_start(&r, 2, 0), 2);
	assert_int_equal(smt_ring_tail_start(&r, 1, 2), 3);
	assert_int_equal(smt_ring_tail_start(&r, 5, 1), 0);
	assert_int_equal(smt_ring_tail_start(&r, 1, 7), 0);
	smt_ring_foreach(&r, smt_ring_tail_start(&r, 2, 0), collect, &s);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.text[0], "c");
	smt_ring_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_order_and_fields),
		cmocka_unit_test(test_line_bound),
		cmocka_unit_test(test_byte_bound_and_wrap),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_tail_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
