/*
 * test_framer.c - a rank's bytes into records (framer.h): any bytes and any
 * write size give the same records; a line that fits is one record; a
 * longer one comes in pieces, FIRST to LAST, that concatenate to it and
 * never split a UTF-8 character of it; a refused record is not consumed,
 * and feeding the rest later gives the same records; memory per stream is
 * one piece.
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

#include "framer.h"
#include "record.h"
#include "textesc.h"

struct rec {
	unsigned flags;
	char *p;
	size_t n;
};

/* What a consumer took, and when it refuses. */
struct sink {
	struct rec *v;
	size_t n, cap;
	size_t bytes;         /* of the records taken */
	size_t lasts;         /* records taken with LAST */
	/* Refuse: every call whose number (from 1) is in REFUSE_EVERY's
	 * multiples, or with probability REFUSE_PCT. */
	unsigned calls, refuse_every, refuse_pct, seed;
	unsigned refused;
};

static int take(void *arg, unsigned flags, const char *p, size_t n)
{
	struct sink *s = arg;

	s->calls++;
	if ((s->refuse_every && s->calls % s->refuse_every == 0) ||
	    (s->refuse_pct && (unsigned)rand_r(&s->seed) % 100 < s->refuse_pct)) {
		s->refused++;
		return 1;
	}
	assert_true(flags <= SMT_REC_WHOLE);
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	s->v[s->n].flags = flags;
	s->v[s->n].n = n;
	s->v[s->n].p = malloc(n ? n : 1);
	assert_non_null(s->v[s->n].p);
	if (n)
		memcpy(s->v[s->n].p, p, n);
	s->n++;
	s->bytes += n;
	if (flags & SMT_REC_LAST)
		s->lasts++;
	return 0;
}

static void sink_free(struct sink *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].p);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void same_records(const struct sink *a, const struct sink *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].flags != b->v[i].flags || a->v[i].n != b->v[i].n)
			fail_msg("record %zu: flags %u/%u, %zu/%zu bytes", i, a->v[i].flags,
				 b->v[i].flags, a->v[i].n, b->v[i].n);
		assert_memory_equal(a->v[i].p, b->v[i].p, a->v[i].n);
	}
}

/*
 * Feed DATA to a framer of PIECE_MAX in writes of CHUNK bytes (0: sizes
 * drawn from SEED between 1 and 3 * PIECE_MAX), each write fed again from
 * where it stopped until the consumer took it all, then the end.  Checks
 * after every call that what was consumed is exactly what the records
 * taken carry (and their newlines) plus what the framer holds, and that it
 * holds at most one piece.
 */
static void run(const char *data, size_t len, size_t piece_max, size_t chunk, unsigned seed,
		struct sink *s)
{
	struct smt_framer f;
	size_t off = 0, consumed = 0;

	if (!piece_max)
		piece_max = SMT_RECORD_MAX;
	smt_framer_init(&f, piece_max);
	while (off < len) {
		size_t n = chunk ? chunk : 1 + (size_t)rand_r(&seed) % (3 * piece_max);
		size_t done = 0;

		if (n > len - off)
			n = len - off;
		while (done < n) {
			long used = smt_framer_feed(&f, data + off + done, n - done, take, s);

			assert_true(used >= 0);
			assert_true((size_t)used <= n - done);
			done += (size_t)used;
			consumed += (size_t)used;
			assert_int_equal(consumed, s->bytes + s->lasts + smt_framer_held(&f));
			assert_true(smt_framer_held(&f) <= piece_max);
			if ((size_t)used < n - done)
				assert_true(s->refused > 0);
		}
		off += n;
	}
	while (smt_framer_eof(&f, take, s) != 0)
		;
	assert_int_equal(smt_framer_held(&f), 0);
	/* Nothing more comes after the end. */
	{
		size_t before = s->n;
		assert_int_equal(smt_framer_eof(&f, take, s), 0);
		assert_int_equal(s->n, before);
	}
	smt_framer_free(&f);
}

/* Whether a valid character of LINE spans position AT. */
static int splits_char(const char *line, size_t n, size_t at)
{
	for (size_t i = at > 3 ? at - 3 : 0; i < at; i++) {
		size_t k = smt_utf8_len((const unsigned char *)line + i, n - i);
		if (k > 1 && i + k > at)
			return 1;
	}
	return 0;
}

/* The records, line by line, against the lines of DATA: flags, sizes,
 * concatenation, and cuts between characters. */
static void check_lines(const char *data, size_t len, size_t piece_max, const struct sink *s)
{
	size_t r = 0, pos = 0;

	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (data + pos)) : len - pos, got = 0;
		const char *line = data + pos;

		assert_true(r < s->n);
		if (ll <= piece_max) {
			if (s->v[r].flags != SMT_REC_WHOLE || s->v[r].n != ll)
				fail_msg("a line of %zu bytes at %zu: record %zu has flags %u, %zu bytes",
					 ll, pos, r, s->v[r].flags, s->v[r].n);
			assert_memory_equal(s->v[r].p, line, ll);
			r++;
		} else {
			assert_int_equal(s->v[r].flags, SMT_REC_FIRST);
			for (;;) {
				const struct rec *k = &s->v[r++];

				assert_true(k->n <= piece_max);
				assert_memory_equal(k->p, line + got, k->n);
				got += k->n;
				if (k->flags & SMT_REC_LAST)
					break;
				/* A piece is as long as it can be without
				 * splitting a character... */
				assert_true(k->n + 3 >= piece_max);
				/* ...and never splits one. */
				if (splits_char(line, ll, got))
					fail_msg("a piece ends inside a character at %zu of a line", got);
				assert_true(r < s->n);
				assert_int_equal(s->v[r].flags & SMT_REC_FIRST, 0);
			}
			assert_int_equal(got, ll);
		}
		pos += ll + (nl ? 1 : 0);
	}
	assert_int_equal(r, s->n);
}

/* Lines of all kinds: empty, short, multi-byte, invalid bytes, NULs,
 * around PIECE_MAX, and much longer, some without their newline at the
 * end. */
static char *make_stream(size_t piece_max, unsigned seed, size_t *len)
{
	static const char *const chars[] = {
		"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\0", "\xff", "\x80", "\r",
		"\xe2\x82", "\x1b[0m",
	};
	size_t cap = 64 * piece_max + 4096, n = 0;
	char *p = malloc(cap);

	assert_non_null(p);
	while (n < cap - 8 * piece_max) {
		unsigned kind = (unsigned)rand_r(&seed) % 8;
		size_t ll = kind == 0 ? 0 : kind < 3 ? (size_t)rand_r(&seed) % 20
			: kind < 5 ? piece_max - 4 + (size_t)rand_r(&seed) % 9
			: kind < 7 ? (size_t)rand_r(&seed) % (5 * piece_max) : piece_max;
		int ascii_only = rand_r(&seed) % 4 == 0;
		size_t start = n;

		while (n - start < ll) {
			const char *c = ascii_only ? "x" : chars[(unsigned)rand_r(&seed) % 10];
			size_t cl = c[0] ? strlen(c) : 1;

			if (n - start + cl > ll)
				c = "y", cl = 1;
			memcpy(p + n, c, cl);
			n += cl;
		}
		p[n++] = '\n';
	}
	/* An unfinished line at the end. */
	for (size_t i = 0; i < piece_max + 5; i++)
		p[n++] = (char)(i % 3 ? 'u' : 0xc3);
	*len = n;
	return p;
}

static void test_basic(void **state)
{
	static const char in[] = "a\nbc\n\n\xff\0z\nd";
	struct sink s = { 0 };

	(void)state;
	run(in, sizeof(in) - 1, 0, sizeof(in) - 1, 0, &s);
	assert_int_equal(s.n, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(s.v[i].flags, SMT_REC_WHOLE);
	assert_int_equal(s.v[0].n, 1);
	assert_int_equal(s.v[2].n, 0);
	assert_int_equal(s.v[3].n, 3);
	assert_memory_equal(s.v[3].p, "\xff\0z", 3);
	assert_memory_equal(s.v[4].p, "d", 1);
	sink_free(&s);
}

/* Byte by byte, in one buffer, in random writes: the same records, and
 * the records are the lines. */
static void test_any_write_size(void **state)
{
	static const size_t piece_maxes[] = { 4, 5, 16, 17, 64 };

	(void)state;
	for (size_t k = 0; k < sizeof(piece_maxes) / sizeof(piece_maxes[0]); k++) {
		for (unsigned seed = 1; seed <= 8; seed++) {
			size_t pm = piece_maxes[k], len;
			char *data = make_stream(pm, seed, &len);
			struct sink whole = { 0 }, bytes = { 0 }, random_sizes = { 0 };

			run(data, len, pm, len, 0, &whole);
			check_lines(data, len, pm, &whole);
			run(data, len, pm, 1, 0, &bytes);
			same_records(&whole, &bytes);
			run(data, len, pm, 0, seed, &random_sizes);
			same_records(&whole, &random_sizes);
			sink_free(&whole);
			sink_free(&bytes);
			sink_free(&random_sizes);
			free(data);
		}
	}
}

/* A line of exactly SMT_RECORD_MAX bytes is one record, however it was
 * written; one byte more makes two pieces. */
static void test_record_max(void **state)
{
	size_t n = SMT_RECORD_MAX;
	char *line = malloc(n + 2);
	static const size_t chunks[] = { 0, 1, 4096, SMT_RECORD_MAX, SMT_RECORD_MAX - 1,
					 SMT_RECORD_MAX + 1 };

	(void)state;
	assert_non_null(line);
	memset(line, 'm', n + 1);
	line[n] = '\n';
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct sink s = { 0 };

		run(line, n + 1, 0, chunks[i] ? chunks[i] : n + 1, 0, &s);
		if (s.n != 1)
			fail_msg("writes of %zu: %zu records", chunks[i], s.n);
		assert_int_equal(s.v[0].flags, SMT_REC_WHOLE);
		assert_int_equal(s.v[0].n, n);
		sink_free(&s);
		/* Without its newline: the same record at the end. */
		run(line, n, 0, chunks[i] ? chunks[i] : n, 0, &s);
		assert_int_equal(s.n, 1);
		assert_int_equal(s.v[0].flags, SMT_REC_WHOLE);
		assert_int_equal(s.v[0].n, n);
		sink_free(&s);
	}
	line[n] = 'm';
	line[n + 1] = '\n';
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct sink s = { 0 };

		run(line, n + 2, 0, chunks[i] ? chunks[i] : n + 2, 0, &s);
		assert_int_equal(s.n, 2);
		assert_int_equal(s.v[0].flags, SMT_REC_FIRST);
		assert_int_equal(s.v[0].n, n);
		assert_int_equal(s.v[1].flags, SMT_REC_LAST);
		assert_int_equal(s.v[1].n, 1);
		sink_free(&s);
	}
	free(line);
}

/* 10 MiB in one line of multi-byte characters, written 1 MiB at a time
 * and in odd sizes: pieces that are the line, cut between characters. */
static void test_ten_mib_line(void **state)
{
	static const char *const chars[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "a" };
	size_t cap = 10 * 1024 * 1024, n = 0;
	char *line = malloc(cap + 1);
	unsigned seed = 3;

	(void)state;
	assert_non_null(line);
	while (n + 4 <= cap) {
		const char *c = chars[(unsigned)rand_r(&seed) % 4];
		memcpy(line + n, c, strlen(c));
		n += strlen(c);
	}
	line[n++] = '\n';
	{
		struct sink a = { 0 }, b = { 0 };

		run(line, n, 0, 1024 * 1024, 0, &a);
		check_lines(line, n, SMT_RECORD_MAX, &a);
		assert_true(a.n >= (n - 1) / SMT_RECORD_MAX + 1);
		assert_int_equal(a.bytes, n - 1);
		run(line, n, 0, 4093, 0, &b);
		same_records(&a, &b);
		sink_free(&a);
		sink_free(&b);
	}
	free(line);
}

/* A piece that is refused: nothing of it is consumed (what was held stays
 * held), and feeding the rest again gives the same records as without
 * refusals. */
static void test_refusal(void **state)
{
	struct smt_framer f;
	struct sink s = { 0 };

	(void)state;
	/* Refused on the second line: "aa\n" consumed, exactly. */
	smt_framer_init(&f, 16);
	s.refuse_every = 2;
	assert_int_equal(smt_framer_feed(&f, "aa\nbb\ncc\n", 9, take, &s), 3);
	assert_int_equal(s.n, 1);
	assert_int_equal(smt_framer_feed(&f, "bb\ncc\n", 6, take, &s), 3);
	assert_int_equal(smt_framer_feed(&f, "cc\n", 3, take, &s), 3);
	assert_int_equal(s.n, 3);
	assert_memory_equal(s.v[2].p, "cc", 2);
	sink_free(&s);

	/* Held bytes: a refused end of line leaves them held, unchanged. */
	assert_int_equal(smt_framer_feed(&f, "abc", 3, take, &s), 3);
	assert_int_equal(smt_framer_held(&f), 3);
	s.refuse_every = 1;
	assert_int_equal(smt_framer_feed(&f, "def\n", 4, take, &s), 0);
	assert_int_equal(smt_framer_held(&f), 3);
	/* Held bytes and a piece that fills up: refused, still held. */
	assert_int_equal(smt_framer_feed(&f, "0123456789abcdefghij", 20, take, &s), 0);
	assert_int_equal(smt_framer_held(&f), 3);
	assert_int_equal(smt_framer_eof(&f, take, &s), 1);
	s.refuse_every = 0;
	assert_int_equal(smt_framer_feed(&f, "def\n", 4, take, &s), 4);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].flags, SMT_REC_WHOLE);
	assert_memory_equal(s.v[0].p, "abcdef", 6);
	sink_free(&s);
	smt_framer_free(&f);

	/* Random refusals on the random stream. */
	for (unsigned seed = 1; seed <= 6; seed++) {
		size_t len;
		char *data = make_stream(16, seed, &len);
		struct sink ref = { 0 }, refused = { 0 };

		run(data, len, 16, len, 0, &ref);
		refused.refuse_pct = 30;
		refused.seed = seed;
		run(data, len, 16, 0, seed, &refused);
		assert_true(refused.refused > 0);
		same_records(&ref, &refused);
		sink_free(&ref);
		sink_free(&refused);
		free(data);
	}
}

/* The end of the stream: an unfinished line is its own last record; one
 * already in pieces ends with a LAST record. */
static void test_eof(void **state)
{
	struct smt_framer f;
	struct sink s = { 0 };
	char big[40];

	(void)state;
	smt_framer_init(&f, 16);
	assert_int_equal(smt_framer_eof(&f, take, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(smt_framer_feed(&f, "tail", 4, take, &s), 4);
	assert_int_equal(s.n, 0);
	s.refuse_every = 1;
	assert_int_equal(smt_framer_eof(&f, take, &s), 1);
	assert_int_equal(smt_framer_held(&f), 4);
	s.refuse_every = 0;
	assert_int_equal(smt_framer_eof(&f, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].flags, SMT_REC_WHOLE);
	assert_memory_equal(s.v[0].p, "tail", 4);
	sink_free(&s);

	memset(big, 'b', sizeof(big));
	assert_int_equal(smt_framer_feed(&f, big, sizeof(big), take, &s), sizeof(big));
	assert_int_equal(smt_framer_eof(&f, take, &s), 0);
	assert_true(s.n >= 2);
	assert_int_equal(s.v[0].flags, SMT_REC_FIRST);
	assert_int_equal(s.v[s.n - 1].flags, SMT_REC_LAST);
	assert_int_equal(s.bytes, sizeof(big));
	sink_free(&s);
	smt_framer_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_any_write_size),
		cmocka_unit_test(test_record_max),
		cmocka_unit_test(test_ten_mib_line),
		cmocka_unit_test(test_refusal),
		cmocka_unit_test(test_eof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
