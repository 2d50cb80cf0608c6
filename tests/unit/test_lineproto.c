/*
 * test_lineproto.c - records on the wire between a worker and the leader:
 * every field and any bytes come back as they went; a record cut short
 * anywhere is "not yet" (0), never an error; bytes that are not a record
 * are -EINVAL; an encode that does not fit changes nothing.
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

static void roundtrip(const struct smt_record *in)
{
	struct smt_dynbuf b;
	struct smt_record out;
	size_t used = 0;

	smt_dynbuf_init(&b, 1 << 26);
	assert_int_equal(smt_lineproto_encode(&b, in), 0);
	assert_int_equal(smt_lineproto_decode(b.p, b.len, &out, &used), 1);
	assert_int_equal(used, b.len);
	assert_int_equal(out.rank, in->rank);
	assert_int_equal(out.stream, in->stream);
	assert_int_equal(out.flags, in->flags);
	assert_int_equal(out.ms, in->ms);
	assert_int_equal(out.n, in->n);
	assert_true(out.p >= b.p && out.p + out.n == b.p + b.len);
	assert_memory_equal(out.p, in->p, in->n);
	/* Every prefix is a record not complete yet. */
	for (size_t k = 0; k < b.len; k += 1 + (k > 200 ? k / 4 : 0)) {
		int rc = smt_lineproto_decode(b.p, k, &out, &used);
		if (rc != 0)
			fail_msg("a prefix of %zu of %zu bytes gives %d", k, b.len, rc);
	}
	smt_dynbuf_free(&b);
}

static void test_roundtrip(void **state)
{
	char *big = malloc(SMT_RECORD_MAX);
	char all[256];

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < SMT_RECORD_MAX; i++)
		big[i] = (char)(i * 7);
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	roundtrip(&(struct smt_record){ .rank = 0, .flags = SMT_REC_WHOLE, .p = "", .n = 0 });
	roundtrip(&(struct smt_record){ .rank = 3, .stream = SMT_STREAM_STDERR, .flags = SMT_REC_FIRST,
				       .ms = 1714564800123, .p = "a\nb\0c", .n = 5 });
	roundtrip(&(struct smt_record){ .rank = 999999, .flags = 0, .ms = 1, .p = all, .n = 256 });
	roundtrip(&(struct smt_record){ .rank = 0x7fffffff, .flags = SMT_REC_LAST, .ms = INT64_C(99999999999999999),
				       .p = big, .n = SMT_RECORD_MAX });
	roundtrip(&(struct smt_record){ .rank = SMT_LINEPROTO_EOF_RANK, .flags = SMT_REC_WHOLE,
				       .p = "{\"ranks\":[]}", .n = 12 });
	free(big);
}

/* Records one after the other, decoded in turn. */
static void test_stream(void **state)
{
	struct smt_dynbuf b;
	struct smt_record r;
	size_t off = 0, used;
	char text[32];

	(void)state;
	smt_dynbuf_init(&b, 1 << 20);
	for (int i = 0; i < 100; i++) {
		int n = snprintf(text, sizeof(text), "line %d\n", i);
		struct smt_record in = { .rank = i % 4, .stream = (enum smt_stream)(i % 2),
					 .flags = (unsigned)i % 4, .ms = i, .p = text, .n = (size_t)n };
		assert_int_equal(smt_lineproto_encode(&b, &in), 0);
	}
	for (int i = 0; i < 100; i++) {
		assert_int_equal(smt_lineproto_decode(b.p + off, b.len - off, &r, &used), 1);
		snprintf(text, sizeof(text), "line %d\n", i);
		assert_int_equal(r.n, strlen(text));
		assert_memory_equal(r.p, text, r.n);
		assert_int_equal(r.rank, i % 4);
		assert_int_equal(r.flags, (unsigned)i % 4);
		off += used;
	}
	assert_int_equal(off, b.len);
	assert_int_equal(smt_lineproto_decode(b.p + off, 0, &r, &used), 0);
	smt_dynbuf_free(&b);
}

static void test_corrupt(void **state)
{
	static const char *const bad[] = {
		"x 0 0 0 1\na",         /* not a number */
		"1 2 0 0 1\na",         /* no such stream */
		"1 0 4 0 1\na",         /* no such flag */
		"-2 0 0 0 1\na",        /* below the end-of-output rank */
		"2147483648 0 0 0 0\n", /* not an int */
		"1 0 0 0 16777217\n",   /* longer than any record */
		"1  0 0 0 1\na",        /* two spaces */
		"1 0 0 0 1x\na",
		"1 0 0 0\n",            /* a field short */
		"1 -1 0 0 1\na",        /* only the rank has a sign */
		"1 0 0 -5 1\na",
		"- 0 0 0 1\na",
		" 1 0 0 0 1\na",
		"1 0 0 0 1 \na",
		"1 0 0 999999999999999999999 1\na", /* too many digits */
		"1\t0 0 0 1\na",
	};
	struct smt_record r;
	size_t used;
	char longhead[200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = smt_lineproto_decode(bad[i], strlen(bad[i]), &r, &used);
		if (rc != -EINVAL)
			fail_msg("\"%s\" gives %d", bad[i], rc);
	}
	/* A header that does not end within its longest possible size. */
	memcpy(longhead, "1 0 0 ", 6);
	memset(longhead + 6, '0', sizeof(longhead) - 6);
	assert_int_equal(smt_lineproto_decode(longhead, SMT_LINEPROTO_HEADER_MAX - 1, &r, &used), 0);
	assert_int_equal(smt_lineproto_decode(longhead, SMT_LINEPROTO_HEADER_MAX, &r, &used), -EINVAL);
	assert_int_equal(smt_lineproto_decode(longhead, sizeof(longhead), &r, &used), -EINVAL);
	/* A number too large for its field is wrong at once. */
	memset(longhead, '1', sizeof(longhead));
	assert_int_equal(smt_lineproto_decode(longhead, 30, &r, &used), -EINVAL);
}

/* An encode that does not fit leaves the buffer as it was. */
static void test_encode_full(void **state)
{
	struct smt_dynbuf b;
	struct smt_record r = { .rank = 1, .flags = SMT_REC_WHOLE, .p = "0123456789", .n = 10 };

	(void)state;
	smt_dynbuf_init(&b, 30);
	assert_int_equal(smt_lineproto_encode(&b, &r), 0);
	assert_int_equal(b.len, 10 + strlen("1 0 3 0 10\n"));
	assert_int_equal(smt_lineproto_encode(&b, &r), -ENOBUFS);
	assert_int_equal(b.len, 21);
	assert_memory_equal(b.p, "1 0 3 0 10\n0123456789", 22);
	/* Only the flag bits go on the wire. */
	smt_dynbuf_reset(&b);
	r.flags = 0xf0 | SMT_REC_FIRST;
	assert_int_equal(smt_lineproto_encode(&b, &r), 0);
	assert_memory_equal(b.p, "1 0 1 0 10\n", 11);
	smt_dynbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_encode_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
