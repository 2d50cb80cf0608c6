/*
 * test_textesc.c - UTF-8 checked to the letter of RFC 3629, cuts between
 * characters, JSON strings that jansson reads back to the exact text (or
 * its U+FFFD form), base64 against RFC 4648's vectors and a decoder, and
 * clean one-line text that never ends in half a character.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "textesc.h"
#include "testutil.h"

#define U(s) ((const unsigned char *)(s))

static void test_utf8_len(void **state)
{
	(void)state;
	assert_int_equal(smt_utf8_len(U("a"), 1), 1);
	assert_int_equal(smt_utf8_len(U("\0"), 1), 1);
	assert_int_equal(smt_utf8_len(U("\x7f"), 1), 1);
	assert_int_equal(smt_utf8_len(U("\xc3\xa9"), 2), 2);         /* é */
	assert_int_equal(smt_utf8_len(U("\xe2\x82\xac"), 3), 3);     /* € */
	assert_int_equal(smt_utf8_len(U("\xf0\x9f\x98\x80"), 4), 4); /* 😀 */
	assert_int_equal(smt_utf8_len(U("\xf4\x8f\xbf\xbf"), 4), 4); /* U+10FFFF */
	assert_int_equal(smt_utf8_len(U("\xed\x9f\xbf"), 3), 3);     /* U+D7FF */
	/* Not characters: overlong forms, surrogates, beyond U+10FFFF, lone
	 * continuation bytes, bad continuations, cut short. */
	assert_int_equal(smt_utf8_len(U("\xc0\x80"), 2), 0);
	assert_int_equal(smt_utf8_len(U("\xc1\xbf"), 2), 0);
	assert_int_equal(smt_utf8_len(U("\xe0\x80\x80"), 3), 0);
	assert_int_equal(smt_utf8_len(U("\xe0\x9f\xbf"), 3), 0);
	assert_int_equal(smt_utf8_len(U("\xf0\x80\x80\x80"), 4), 0);
	assert_int_equal(smt_utf8_len(U("\xf0\x8f\xbf\xbf"), 4), 0);
	assert_int_equal(smt_utf8_len(U("\xed\xa0\x80"), 3), 0);
	assert_int_equal(smt_utf8_len(U("\xed\xbf\xbf"), 3), 0);
	assert_int_equal(smt_utf8_len(U("\xf4\x90\x80\x80"), 4), 0);
	assert_int_equal(smt_utf8_len(U("\xf5\x80\x80\x80"), 4), 0);
	assert_int_equal(smt_utf8_len(U("\xff"), 1), 0);
	assert_int_equal(smt_utf8_len(U("\x80"), 1), 0);
	assert_int_equal(smt_utf8_len(U("\xbf"), 1), 0);
	assert_int_equal(smt_utf8_len(U("\xc3\x41"), 2), 0);
	assert_int_equal(smt_utf8_len(U("\xe2\x82\x41"), 3), 0);
	assert_int_equal(smt_utf8_len(U("\xf0\x9f\x98\xc0"), 4), 0);
	assert_int_equal(smt_utf8_len(U("\xc3\xa9"), 1), 0);
	assert_int_equal(smt_utf8_len(U("\xe2\x82\xac"), 2), 0);
	assert_int_equal(smt_utf8_len(U("\xf0\x9f\x98\x80"), 3), 0);
}

static void test_utf8_cut(void **state)
{
	/* a é € 😀 b: bytes 0 | 1-2 | 3-5 | 6-9 | 10 */
	static const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" "b";
	static const size_t want[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10 };

	(void)state;
	for (size_t max = 1; max < 11; max++)
		assert_int_equal(smt_utf8_cut(s, 11, max), want[max]);
	assert_int_equal(smt_utf8_cut(s, 11, 11), 11);
	assert_int_equal(smt_utf8_cut(s, 11, 50), 11);
	/* Where the bytes are not characters, MAX itself. */
	assert_int_equal(smt_utf8_cut("\x80\x80\x80\x80\x80\x80", 6, 5), 5);
	assert_int_equal(smt_utf8_cut("abc\xff\xff\xff", 6, 4), 4);
}

/* ESCAPED as the inside of a JSON string, read back by jansson. */
static char *json_read(const char *escaped, size_t n, size_t *len)
{
	char *doc = malloc(n + 3);
	json_error_t err;
	json_t *j;
	char *out;

	assert_non_null(doc);
	doc[0] = '"';
	memcpy(doc + 1, escaped, n);
	doc[n + 1] = '"';
	j = json_loadb(doc, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!j)
		fail_msg("not a JSON string: %s (%.*s)", err.text, (int)n, escaped);
	assert_true(json_is_string(j));
	*len = json_string_length(j);
	out = malloc(*len + 1);
	assert_non_null(out);
	memcpy(out, json_string_value(j), *len + 1);
	json_decref(j);
	free(doc);
	return out;
}

/* Escape P; what jansson reads back is P when it is valid UTF-8, its
 * sanitized form otherwise, and the escape stays within its bound. */
static void check_escape(const char *p, size_t n)
{
	char *out = malloc(SMT_JSON_ESCAPE_MAX(n) + 1), *back, *clean;
	int invalid = 0, invalid2 = 0;
	size_t o, blen, clen;

	assert_non_null(out);
	o = smt_json_escape(p, n, out, &invalid);
	assert_true(o <= SMT_JSON_ESCAPE_MAX(n));
	back = json_read(out, o, &blen);
	clean = smt_utf8_sanitize(p, n, &clen, &invalid2);
	assert_non_null(clean);
	assert_int_equal(invalid, invalid2);
	assert_int_equal(blen, clen);
	assert_memory_equal(back, clean, clen);
	if (!invalid) {
		assert_int_equal(blen, n);
		assert_memory_equal(back, p, n);
	}
	free(out);
	free(back);
	free(clean);
}

static void test_json_escape(void **state)
{
	char out[64];
	int invalid = 0;
	size_t n;

	(void)state;
	n = smt_json_escape("a\"b\\c\n\t\r\x01\x1f\x7f", 11, out, &invalid);
	assert_int_equal(invalid, 0);
	assert_int_equal(n, strlen("a\\\"b\\\\c\\n\\t\\r\\u0001\\u001f\x7f"));
	assert_memory_equal(out, "a\\\"b\\\\c\\n\\t\\r\\u0001\\u001f\x7f", n);
	n = smt_json_escape("\0", 1, out, &invalid);
	assert_memory_equal(out, "\\u0000", n);
	n = smt_json_escape("\xc3\xa9\xff", 3, out, &invalid);
	assert_int_equal(invalid, 1);
	assert_memory_equal(out, "\xc3\xa9\xef\xbf\xbd", n);
	/* The worst case: every byte a control byte. */
	memset(out, 0, sizeof(out));
	assert_int_equal(smt_json_escape("\x02\x03", 2, out, &invalid), SMT_JSON_ESCAPE_MAX(2));

	/* Every byte value alone, and in the middle of text. */
	for (int c = 0; c < 256; c++) {
		char one[3] = { 'x', (char)c, 'y' };
		check_escape(one + 1, 1);
		check_escape(one, 3);
	}
	/* Cut-short and overlong characters among valid ones. */
	check_escape("\xe2\x82", 2);
	check_escape("\xe2\x82\xac\xe2\x82", 5);
	check_escape("\xf0\x9f\x98\x80\xf0\x9f\x98", 7);
	check_escape("\xc0\xaf\xed\xa0\x80 ok", 8);
	/* Random bytes, weighted to the interesting ranges. */
	srandom(14);
	for (int round = 0; round < 2000; round++) {
		char buf[40];
		size_t len = (size_t)(random() % (long)sizeof(buf));
		for (size_t i = 0; i < len; i++) {
			long r = random() % 8;
			buf[i] = (char)(r < 3 ? 0x80 + random() % 64 : r < 5 ? 0xc2 + random() % 51
					: r < 6 ? random() % 32 : random() % 256);
		}
		check_escape(buf, len);
	}
}

/* The dynbuf form: a character across its internal blocks is not broken. */
static void test_json_escape_add(void **state)
{
	struct smt_dynbuf b;
	size_t n = 20000, blen;
	char *text = malloc(n), *back;
	int invalid = 0;

	(void)state;
	assert_non_null(text);
	/* 'a' then 😀 repeated: every block boundary falls inside one. */
	text[0] = 'a';
	for (size_t i = 1; i + 4 <= n; i += 4)
		memcpy(text + i, "\xf0\x9f\x98\x80", 4);
	n = 1 + 4 * ((n - 1) / 4);
	smt_dynbuf_init(&b, SMT_JSON_ESCAPE_MAX(n));
	assert_int_equal(smt_json_escape_add(&b, text, n, &invalid), 0);
	assert_int_equal(invalid, 0);
	assert_int_equal(b.len, n);
	back = json_read(b.p, b.len, &blen);
	assert_int_equal(blen, n);
	assert_memory_equal(back, text, n);
	free(back);
	smt_dynbuf_free(&b);

	/* No room: refused. */
	smt_dynbuf_init(&b, 10);
	assert_int_equal(smt_json_escape_add(&b, text, 100, &invalid), -ENOBUFS);
	smt_dynbuf_free(&b);
	free(text);
}

static void test_sanitize(void **state)
{
	size_t len = 0;
	int invalid = 0;
	char *s;

	(void)state;
	s = smt_utf8_sanitize("ok \xc3\xa9", 5, &len, &invalid);
	assert_int_equal(len, 5);
	assert_int_equal(invalid, 0);
	assert_string_equal(s, "ok \xc3\xa9");
	free(s);
	s = smt_utf8_sanitize("\xff\xc3", 2, &len, NULL);
	assert_int_equal(len, 6);
	assert_string_equal(s, "\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	s = smt_utf8_sanitize("a\0b", 3, &len, &invalid);
	assert_int_equal(len, 3);
	assert_memory_equal(s, "a\0b", 4);
	free(s);
	s = smt_utf8_sanitize("", 0, NULL, NULL);
	assert_string_equal(s, "");
	free(s);
}

static void test_base64(void **state)
{
	static const char *const vec[][2] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	char out[700];
	unsigned char all[256], back[256];

	(void)state;
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		size_t n = smt_base64(U(vec[i][0]), strlen(vec[i][0]), out);
		assert_int_equal(n, strlen(vec[i][1]));
		assert_int_equal(n, SMT_BASE64_LEN(strlen(vec[i][0])));
		assert_memory_equal(out, vec[i][1], n);
	}
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= 256; len += 1 + len / 8) {
		size_t n = smt_base64(all, len, out);
		assert_int_equal(n, SMT_BASE64_LEN(len));
		assert_int_equal(smt_test_b64decode(out, n, back), len);
		assert_memory_equal(back, all, len);
	}
}

static void test_text_clean(void **state)
{
	char dst[32];
	size_t len = 0;

	(void)state;
	assert_int_equal(smt_text_clean(dst, &len, 31, "a\nb\tc\x7f\x01\xff" "d", 9), 0);
	assert_string_equal(dst, "a b c  ?d");
	assert_int_equal(len, 9);
	/* Appends to what is there. */
	assert_int_equal(smt_text_clean(dst, &len, 31, " \xc3\xa9", 3), 0);
	assert_string_equal(dst, "a b c  ?d \xc3\xa9");
	/* Stops before a character that would not fit whole. */
	len = 0;
	assert_int_equal(smt_text_clean(dst, &len, 5, "abcd\xe2\x82\xac", 7), 1);
	assert_int_equal(len, 4);
	assert_string_equal(dst, "abcd");
	len = 0;
	assert_int_equal(smt_text_clean(dst, &len, 7, "abcd\xe2\x82\xac", 7), 0);
	assert_string_equal(dst, "abcd\xe2\x82\xac");
	/* Full already. */
	assert_int_equal(smt_text_clean(dst, &len, 7, "x", 1), 1);
	assert_int_equal(len, 7);
	/* A NUL byte in the source is a control byte like any other. */
	len = 0;
	assert_int_equal(smt_text_clean(dst, &len, 31, "a\0b", 3), 0);
	assert_int_equal(len, 3);
	assert_string_equal(dst, "a b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_len),
		cmocka_unit_test(test_utf8_cut),
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_json_escape_add),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_text_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
