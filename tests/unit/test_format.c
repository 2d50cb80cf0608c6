/*
 * test_format.c - a rank's records on the leader's stdout (format.h).
 * Text: the toolkit's tag once per line, the bytes untouched, the newline
 * by the last piece.  JSON: one object per record that jansson parses,
 * whose "line" (or "line_b64" when the bytes are not UTF-8) gives back the
 * exact bytes, "partial" on every piece but the last; nothing half-written
 * when the buffer is full; never more than SMT_FORMAT_MAX.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format.h"
#include "smt_proto.h"
#include "textesc.h"
#include "testutil.h"

static const int64_t MS = INT64_C(1714564800123); /* 2024-05-01T12:00:00.123Z */

static void test_tag(void **state)
{
	char tag[320], host[400];
	size_t n;

	(void)state;
	n = smt_format_tag(tag, 3, "algo-2", SMT_STREAM_STDERR);
	assert_int_equal(n, strlen("[1,mpirank:3,algo-2]<stderr>: "));
	assert_memory_equal(tag, "[1,mpirank:3,algo-2]<stderr>: ", n);
	n = smt_format_tag(tag, 0, "h", SMT_STREAM_STDOUT);
	assert_memory_equal(tag, "[1,mpirank:0,h]<stdout>: ", n);
	n = smt_format_tag(tag, 2147483647, "h", SMT_STREAM_STDOUT);
	assert_memory_equal(tag, "[1,mpirank:2147483647,h]<stdout>: ", n);
	/* A host name is at most 253 bytes: the tag stays within its buffer. */
	memset(host, 'a', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	n = smt_format_tag(tag, 2147483647, host, SMT_STREAM_STDOUT);
	assert_true(n < 300);
	assert_int_equal(n, strlen("[1,mpirank:2147483647,") + 253 + strlen("]<stdout>: "));
}

static void put(struct smt_dynbuf *b, enum smt_format fmt, unsigned flags, const char *p, size_t n,
		struct smt_format_clock *clk)
{
	struct smt_record r = { .rank = 5, .stream = SMT_STREAM_STDOUT, .flags = flags, .ms = MS,
				.p = p, .n = n };

	assert_int_equal(smt_format_record(b, fmt, &r, "algo-1", clk), 0);
}

static void test_text(void **state)
{
	struct smt_dynbuf b;
	struct smt_format_clock clk = { 0 };
	static const char want[] =
		"[1,mpirank:5,algo-1]<stdout>: whole \xff\0line\n"
		"[1,mpirank:5,algo-1]<stdout>: first-middle-last\n"
		"[1,mpirank:5,algo-1]<stdout>: \n";

	(void)state;
	smt_dynbuf_init(&b, 1 << 20);
	put(&b, SMT_FORMAT_TEXT, SMT_REC_WHOLE, "whole \xff\0line", 12, &clk);
	put(&b, SMT_FORMAT_TEXT, SMT_REC_FIRST, "first-", 6, &clk);
	put(&b, SMT_FORMAT_TEXT, 0, "middle-", 7, &clk);
	put(&b, SMT_FORMAT_TEXT, SMT_REC_LAST, "last", 4, &clk);
	put(&b, SMT_FORMAT_TEXT, SMT_REC_WHOLE, "", 0, &clk);
	assert_int_equal(b.len, sizeof(want) - 1);
	assert_memory_equal(b.p, want, b.len);

	/* A stderr record of another rank; a buffer without room is left
	 * as it was. */
	smt_dynbuf_free(&b);
	smt_dynbuf_init(&b, 40);
	assert_int_equal(smt_dynbuf_addstr(&b, "before"), 0);
	{
		struct smt_record r = { .rank = 12, .stream = SMT_STREAM_STDERR,
					.flags = SMT_REC_WHOLE, .p = "0123456789", .n = 10 };
		assert_int_equal(smt_format_record(&b, SMT_FORMAT_TEXT, &r, "h", &clk), -ENOBUFS);
		assert_int_equal(b.len, 6);
		r.n = 4;
		assert_int_equal(smt_format_record(&b, SMT_FORMAT_TEXT, &r, "h", &clk), 0);
		assert_string_equal(b.p, "before[1,mpirank:12,h]<stderr>: 0123\n");
	}
	smt_dynbuf_free(&b);
}

/* The objects in B: each parses, has every field, and the bytes of their
 * lines concatenate to WANT (N bytes); returns how many there were. */
static size_t check_json(const struct smt_dynbuf *b, const char *want, size_t n, size_t pieces)
{
	size_t off = 0, got = 0, objs = 0;
	unsigned char *bytes = malloc(n + 1);
	regex_t time_re;

	assert_non_null(bytes);
	assert_int_equal(regcomp(&time_re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
				 REG_EXTENDED | REG_NOSUB), 0);
	while (off < b->len) {
		const char *nl = memchr(b->p + off, '\n', b->len - off);
		json_error_t err;
		json_t *o, *line, *b64, *partial;
		size_t ol;

		assert_non_null(nl);
		ol = (size_t)(nl - (b->p + off));
		o = json_loadb(b->p + off, ol, JSON_ALLOW_NUL, &err);
		if (!o)
			fail_msg("object %zu does not parse: %s", objs, err.text);
		assert_string_equal(json_string_value(json_object_get(o, SMT_F_TIME)),
				    "2024-05-01T12:00:00.123Z");
		assert_int_equal(regexec(&time_re, json_string_value(json_object_get(o, SMT_F_TIME)),
					 0, NULL, 0), 0);
		assert_int_equal(json_integer_value(json_object_get(o, SMT_F_RANK)), 5);
		assert_string_equal(json_string_value(json_object_get(o, SMT_F_HOST)), "algo-1");
		assert_string_equal(json_string_value(json_object_get(o, SMT_F_STREAM)), "stdout");
		line = json_object_get(o, SMT_F_LINE);
		b64 = json_object_get(o, SMT_F_LINE_B64);
		partial = json_object_get(o, SMT_F_PARTIAL);
		assert_true(json_is_string(line));
		/* Every piece but the last says it is partial. */
		if (objs + 1 < pieces)
			assert_true(json_is_true(partial));
		else
			assert_null(partial);
		if (b64) {
			size_t k = smt_test_b64decode(json_string_value(b64),
						       strlen(json_string_value(b64)), bytes + got);
			int invalid = 0;
			size_t cl;
			char *clean = smt_utf8_sanitize((const char *)bytes + got, k, &cl, &invalid);
			/* Only when needed, and "line" is the same bytes made
			 * valid. */
			assert_int_equal(invalid, 1);
			assert_int_equal(json_string_length(line), cl);
			assert_memory_equal(json_string_value(line), clean, cl);
			free(clean);
			got += k;
		} else {
			size_t k = json_string_length(line);
			assert_true(got + k <= n);
			memcpy(bytes + got, json_string_value(line), k);
			got += k;
		}
		json_decref(o);
		objs++;
		off += ol + 1;
	}
	assert_int_equal(got, n);
	assert_memory_equal(bytes, want, n);
	regfree(&time_re);
	free(bytes);
	return objs;
}

static void json_one(const char *p, size_t n)
{
	struct smt_dynbuf b;
	struct smt_format_clock clk = { 0 };

	smt_dynbuf_init(&b, 1 << 20);
	put(&b, SMT_FORMAT_JSON, SMT_REC_WHOLE, p, n, &clk);
	assert_true(b.len <= SMT_FORMAT_MAX(n));
	assert_int_equal(check_json(&b, p, n, 1), 1);
	assert_int_equal(b.p[b.len - 1], '\n');
	assert_null(memchr(b.p, '\n', b.len - 1));
	smt_dynbuf_free(&b);
}

static void test_json(void **state)
{
	char all[256];

	(void)state;
	json_one("plain line", 10);
	json_one("", 0);
	json_one("quote \" backslash \\ tab \t cr \r esc \x1b[0m del \x7f", 42);
	json_one("nul \0 inside", 12);
	json_one("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 U+FFFD: \xef\xbf\xbd", 25);
	/* Not UTF-8: U+FFFD in "line", the exact bytes in "line_b64". */
	json_one("bad \xff byte", 10);
	json_one("\xc3", 1);
	json_one("\xed\xa0\x80 surrogate", 13);
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	json_one(all, sizeof(all));
	{
		struct smt_dynbuf b;
		struct smt_format_clock clk = { 0 };
		json_t *o;

		smt_dynbuf_init(&b, 1 << 20);
		put(&b, SMT_FORMAT_JSON, SMT_REC_WHOLE, "ok", 2, &clk);
		o = json_loadb(b.p, b.len, 0, NULL);
		assert_null(json_object_get(o, SMT_F_LINE_B64));
		assert_null(json_object_get(o, SMT_F_PARTIAL));
		json_decref(o);
		smt_dynbuf_free(&b);
	}
}

/* A line in pieces: an object each, partial but the last, the bytes of
 * all of them the line; a character split between pieces (the framer
 * avoids it, a worker's bytes may not) still gives the exact bytes. */
static void test_json_pieces(void **state)
{
	struct smt_dynbuf b;
	struct smt_format_clock clk = { 0 };
	static const char line[] = "head \xc3\xa9\xe2\x82\xac middle \xff tail";
	size_t n = sizeof(line) - 1;
	const size_t cuts[] = { 0, 6, 9, 20, n };

	(void)state;
	smt_dynbuf_init(&b, 1 << 20);
	for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); i++)
		put(&b, SMT_FORMAT_JSON, (i == 0 ? SMT_REC_FIRST : 0) | (i == 3 ? SMT_REC_LAST : 0),
		    line + cuts[i], cuts[i + 1] - cuts[i], &clk);
	assert_int_equal(check_json(&b, line, n, 4), 4);
	smt_dynbuf_free(&b);
}

/* The worst inputs stay within SMT_FORMAT_MAX, and a buffer that is too
 * small for an object is left exactly as it was. */
static void test_json_bounds(void **state)
{
	size_t n = SMT_RECORD_MAX;
	char *p = malloc(n);
	struct smt_format_clock clk = { 0 };
	struct smt_dynbuf b;
	size_t need;

	(void)state;
	assert_non_null(p);
	for (int kind = 0; kind < 3; kind++) {
		for (size_t i = 0; i < n; i++)
			p[i] = kind == 0 ? '\x01' : kind == 1 ? '\xff' : (char)(i % 2 ? 0xff : 0x02);
		smt_dynbuf_init(&b, SMT_FORMAT_MAX(n));
		put(&b, SMT_FORMAT_JSON, SMT_REC_FIRST, p, n, &clk);
		assert_true(b.len <= SMT_FORMAT_MAX(n));
		check_json(&b, p, n, 2);
		smt_dynbuf_free(&b);
	}
	/* Too small, at every size below what the object needs. */
	memcpy(p, "x\xff\x01y", 4);
	smt_dynbuf_init(&b, 1 << 20);
	put(&b, SMT_FORMAT_JSON, SMT_REC_FIRST, p, 4, &clk);
	need = b.len;
	smt_dynbuf_free(&b);
	for (size_t cap = 3; cap <= 3 + need; cap++) {
		struct smt_record r = { .rank = 5, .flags = SMT_REC_FIRST, .ms = MS, .p = p, .n = 4 };
		int rc;

		smt_dynbuf_init(&b, cap);
		assert_int_equal(smt_dynbuf_addstr(&b, "old"), 0);
		rc = smt_format_record(&b, SMT_FORMAT_JSON, &r, "algo-1", &clk);
		if (cap == 3 + need) {
			assert_int_equal(rc, 0);
			assert_int_equal(b.len, 3 + need);
		} else {
			assert_true(rc < 0);
			assert_int_equal(b.len, 3);
			assert_string_equal(b.p, "old");
		}
		smt_dynbuf_free(&b);
	}
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_pieces),
		cmocka_unit_test(test_json_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
