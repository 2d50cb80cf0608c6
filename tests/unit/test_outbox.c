/*
 * test_outbox.c - a worker's output waiting for the leader: fetches answer
 * whole records within MAX (at least one), a fetch from further on
 * acknowledges and drops what lies before, offsets outside what is kept
 * are -ERANGE, a failed fetch is made again from the same offset with the
 * same answer, the room follows the cap, and the end of output is
 * reported, then acknowledged.
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

#include "lineproto.h"
#include "outbox.h"

static size_t put_line(struct smt_outbox *ob, int i, size_t n)
{
	char *text = malloc(n);
	struct smt_record r = { .rank = i % 3, .stream = (enum smt_stream)(i % 2),
				.flags = SMT_REC_WHOLE, .ms = 1000 + i, .p = text, .n = n };

	assert_non_null(text);
	for (size_t k = 0; k < n; k++)
		text[k] = (char)(i + (int)k);
	assert_int_equal(smt_outbox_put(ob, &r), 0);
	free(text);
	return n;
}

/* The records of an answer: each whole, numbered from FIRST on. */
static int check_answer(const char *p, size_t len, int first, size_t each)
{
	size_t off = 0, used;
	int i = first;
	struct smt_record r;

	while (off < len) {
		assert_int_equal(smt_lineproto_decode(p + off, len - off, &r, &used), 1);
		if (r.rank == SMT_LINEPROTO_EOF_RANK) {
			off += used;
			assert_int_equal(off, len);
			break;
		}
		assert_int_equal(r.rank, i % 3);
		assert_int_equal(r.ms, 1000 + i);
		assert_int_equal(r.n, each);
		for (size_t k = 0; k < r.n; k++)
			assert_int_equal(r.p[k], (char)(i + (int)k));
		off += used;
		i++;
	}
	assert_int_equal(off, len);
	return i - first;
}

static void test_fetch_whole_records(void **state)
{
	struct smt_outbox *ob;
	const char *p;
	size_t len, first_len;
	int done;

	(void)state;
	assert_int_equal(smt_outbox_new(1 << 20, &ob), 0);
	/* Nothing yet: an empty answer, not the end. */
	assert_int_equal(smt_outbox_fetch(ob, 0, 1000, &p, &len, &done), 0);
	assert_int_equal(len, 0);
	assert_int_equal(done, 0);
	assert_false(smt_outbox_ready(ob, 0));
	for (int i = 0; i < 10; i++)
		put_line(ob, i, 100);
	assert_true(smt_outbox_ready(ob, 0));
	/* All of it. */
	assert_int_equal(smt_outbox_fetch(ob, 0, 1 << 20, &p, &len, &done), 0);
	assert_int_equal(len, smt_outbox_written(ob));
	assert_int_equal(check_answer(p, len, 0, 100), 10);
	/* MAX smaller than one record: that one record all the same. */
	assert_int_equal(smt_outbox_fetch(ob, 0, 1, &p, &len, &done), 0);
	assert_int_equal(check_answer(p, len, 0, 100), 1);
	first_len = len;
	assert_int_equal(smt_outbox_fetch(ob, 0, 0, &p, &len, &done), 0);
	assert_int_equal(len, first_len);
	/* MAX between records: the whole records that fit. */
	assert_int_equal(smt_outbox_fetch(ob, 0, 3 * first_len + first_len / 2, &p, &len, &done), 0);
	assert_int_equal(check_answer(p, len, 0, 100), 3);
	assert_true(len <= 3 * first_len + first_len / 2);
	/* Fetching again from the same offset gives the same answer. */
	{
		char *copy = malloc(len);
		size_t len2;
		assert_non_null(copy);
		memcpy(copy, p, len);
		assert_int_equal(smt_outbox_fetch(ob, 0, 3 * first_len + first_len / 2, &p, &len2,
						  &done), 0);
		assert_int_equal(len2, len);
		assert_memory_equal(p, copy, len);
		free(copy);
	}
	assert_int_equal(done, 0);
	smt_outbox_free(ob);
}

/* Fetching from further on acknowledges what lies before: it is dropped,
 * and offsets before it or past what was written are -ERANGE. */
static void test_ack(void **state)
{
	struct smt_outbox *ob;
	const char *p;
	size_t len, off;
	int done, n = 0;

	(void)state;
	assert_int_equal(smt_outbox_new(1 << 20, &ob), 0);
	for (int i = 0; i < 50; i++)
		put_line(ob, i, 1000);
	off = 0;
	while (off < smt_outbox_written(ob)) {
		assert_int_equal(smt_outbox_fetch(ob, off, 4000, &p, &len, &done), 0);
		assert_int_equal(smt_outbox_base(ob), off);
		assert_true(len > 0);
		n += check_answer(p, len, n, 1000);
		off += len;
		/* What was acknowledged cannot be asked for again. */
		if (off > 1)
			assert_int_equal(smt_outbox_fetch(ob, 0, 4000, &p, &len, &done),
					 off > len ? -ERANGE : 0);
	}
	assert_int_equal(n, 50);
	assert_int_equal(smt_outbox_fetch(ob, off + 1, 4000, &p, &len, &done), -ERANGE);
	assert_int_equal(smt_outbox_fetch(ob, off, 4000, &p, &len, &done), 0);
	assert_int_equal(len, 0);
	assert_int_equal(smt_outbox_base(ob), smt_outbox_written(ob));
	assert_int_equal(smt_outbox_fetch(ob, off - 1, 4000, &p, &len, &done), -ERANGE);
	assert_false(smt_outbox_ready(ob, off));
	/* Not acknowledged: not ended yet. */
	assert_false(smt_outbox_acked(ob));
	/* Offsets go on across acknowledgements. */
	put_line(ob, 50, 10);
	assert_true(smt_outbox_ready(ob, off));
	assert_int_equal(smt_outbox_fetch(ob, off, 4000, &p, &len, &done), 0);
	assert_int_equal(check_answer(p, len, 50, 10), 1);
	smt_outbox_free(ob);
}

/* The room follows the cap: full once CAP bytes wait, room again once the
 * leader acknowledged them. */
static void test_room(void **state)
{
	struct smt_outbox *ob;
	const char *p;
	size_t len;
	int done, i = 0;

	(void)state;
	assert_int_equal(smt_outbox_new(10000, &ob), 0);
	while (smt_outbox_room(ob))
		put_line(ob, i++, 999);
	assert_true(smt_outbox_written(ob) >= 10000);
	assert_true(smt_outbox_written(ob) < 10000 + 999 + SMT_LINEPROTO_HEADER_MAX);
	/* Beyond the room, a record of the largest size still fits (the
	 * producer's step that passed the cap). */
	put_line(ob, i++, SMT_RECORD_MAX);
	assert_int_equal(smt_outbox_fetch(ob, 0, 1 << 20, &p, &len, &done), 0);
	assert_false(smt_outbox_room(ob));
	assert_int_equal(smt_outbox_fetch(ob, len, 1 << 20, &p, &len, &done), 0);
	assert_true(smt_outbox_room(ob));
	smt_outbox_free(ob);
}

/* The end of output: the last record, reported as DONE by the fetch that
 * reaches it, acknowledged by the one after. */
static void test_end(void **state)
{
	struct smt_outbox *ob;
	struct smt_record r = { .rank = 0, .flags = SMT_REC_WHOLE, .p = "x", .n = 1 };
	const char *p;
	size_t len, rec, off;
	int done;
	static const char final[] = "{\"ranks\":[{\"rank\":0}]}";

	(void)state;
	assert_int_equal(smt_outbox_new(1 << 20, &ob), 0);
	put_line(ob, 0, 100);
	rec = smt_outbox_written(ob);
	assert_false(smt_outbox_ended(ob));
	assert_int_equal(smt_outbox_end(ob, final, strlen(final)), 0);
	assert_true(smt_outbox_ended(ob));
	assert_false(smt_outbox_room(ob));
	assert_int_equal(smt_outbox_put(ob, &r), -EPIPE);
	/* A second end adds nothing. */
	off = smt_outbox_written(ob);
	assert_int_equal(smt_outbox_end(ob, "{}", 2), 0);
	assert_int_equal(smt_outbox_written(ob), off);
	/* A fetch that stops before the end is not done. */
	assert_int_equal(smt_outbox_fetch(ob, 0, 1, &p, &len, &done), 0);
	assert_int_equal(len, rec);
	assert_int_equal(done, 0);
	assert_true(smt_outbox_ready(ob, rec));
	assert_int_equal(smt_outbox_fetch(ob, rec, 1, &p, &len, &done), 0);
	assert_int_equal(done, 1);
	assert_int_equal(rec + len, off);
	{
		struct smt_record e;
		size_t used;
		assert_int_equal(smt_lineproto_decode(p, len, &e, &used), 1);
		assert_int_equal(e.rank, SMT_LINEPROTO_EOF_RANK);
		assert_int_equal(e.n, strlen(final));
		assert_memory_equal(e.p, final, e.n);
	}
	assert_false(smt_outbox_acked(ob));
	/* The leader's fetch from past the end: all of it arrived. */
	assert_false(smt_outbox_ready(ob, off));
	assert_int_equal(smt_outbox_fetch(ob, off, 0, &p, &len, &done), 0);
	assert_int_equal(len, 0);
	assert_true(smt_outbox_acked(ob));
	smt_outbox_free(ob);

	/* All in one fetch. */
	assert_int_equal(smt_outbox_new(1 << 20, &ob), 0);
	put_line(ob, 0, 10);
	assert_int_equal(smt_outbox_end(ob, "{}", 2), 0);
	assert_int_equal(smt_outbox_fetch(ob, 0, 1 << 20, &p, &len, &done), 0);
	assert_int_equal(done, 1);
	assert_int_equal(len, smt_outbox_written(ob));
	smt_outbox_free(ob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fetch_whole_records),
		cmocka_unit_test(test_ack),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
