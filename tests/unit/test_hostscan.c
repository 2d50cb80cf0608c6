/* test_hostscan.c - the preload library's current_host scanner. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hostscan.h"

/* Scans a private copy of exactly LEN bytes, so ASan sees any overread. */
static ssize_t scan_n(const char *json, size_t len, char *out)
{
	char *copy = malloc(len ? len : 1);
	ssize_t r;

	assert_non_null(copy);
	memcpy(copy, json, len);
	memset(out, 'X', SMT_HOSTSCAN_MAX + 1);
	r = smt_hostscan(copy, len, out);
	free(copy);
	if (r < 0)
		assert_string_equal(out, "");
	else
		assert_int_equal(strlen(out), (size_t)r);
	return r;
}

static ssize_t scan(const char *json, char *out)
{
	return scan_n(json, strlen(json), out);
}

static void expect_host(const char *json, const char *host)
{
	char out[SMT_HOSTSCAN_MAX + 1];

	assert_int_equal(scan(json, out), (ssize_t)strlen(host));
	assert_string_equal(out, host);
}

static void expect_err(const char *json, ssize_t err)
{
	char out[SMT_HOSTSCAN_MAX + 1];

	assert_int_equal(scan(json, out), err);
}

static void test_plain(void **state)
{
	(void)state;
	expect_host("{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\",\"algo-2\"]}",
		    "algo-1");
	expect_host(" \r\n\t{ \"hosts\" : [ \"a\" ] ,\n\t\"current_host\"\t:\r\n"
		    "  \"algo-2\"  }  \n", "algo-2");
	expect_host("{\"current_host\":\"A.b-C.9\"}", "A.b-C.9");
	expect_host("{\"a\":{},\"b\":[],\"c\":[[],{}],\"current_host\":\"h\"}", "h");
}

static void test_escapes(void **state)
{
	(void)state;
	expect_host("{\"current_host\":\"alg\\u006f-1\"}", "algo-1");
	expect_host("{\"current\\u005Fhost\":\"algo-1\"}", "algo-1");
	expect_host("{\"x\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00\","
		    "\"current_host\":\"algo-3\"}", "algo-3");
	/* Escapes that decode to characters no host name has. */
	expect_err("{\"current_host\":\"algo\\/1\"}", -EINVAL);
	expect_err("{\"current_host\":\"al\\\"go\"}", -EINVAL);
	expect_err("{\"current_host\":\"algo\\n\"}", -EINVAL);
	expect_err("{\"current_host\":\"alg\\u00e9\"}", -EINVAL);
	expect_err("{\"current_host\":\"alg\xc3\xa9\"}", -EINVAL);
	expect_err("{\"current\\u00e9host\":\"a\"}", -ENOENT);
}

static void test_decoys(void **state)
{
	(void)state;
	expect_host("{\"x\":{\"current_host\":\"evil\"},\"current_host\":\"good\"}",
		    "good");
	expect_host("{\"current_host\":\"good\",\"x\":[{\"current_host\":\"evil\"}]}",
		    "good");
	expect_err("{\"x\":{\"current_host\":\"evil\"}}", -ENOENT);
	expect_err("{\"x\":[\"current_host\",\"evil\"]}", -ENOENT);
	expect_err("{\"x\":\"{\\\"current_host\\\":\\\"evil\\\"}\"}", -ENOENT);
	expect_err("{\"current_host_\":\"a\",\"current_hos\":\"b\","
		   "\"Current_host\":\"c\",\"current_host_and_more_text\":\"d\"}",
		   -ENOENT);
	expect_err("{}", -ENOENT);
	expect_err("[{\"current_host\":\"a\"}]", -EBADMSG);
	/* Two values: which one the daemon used is unknowable. */
	expect_err("{\"current_host\":\"a\",\"current_host\":\"b\"}", -EINVAL);
	expect_err("{\"current_host\":\"a\",\"current\\u005fhost\":\"a\"}", -EINVAL);
}

static void test_not_a_string(void **state)
{
	(void)state;
	expect_err("{\"current_host\":1}", -EINVAL);
	expect_err("{\"current_host\":null}", -EINVAL);
	expect_err("{\"current_host\":true}", -EINVAL);
	expect_err("{\"current_host\":[\"algo-1\"]}", -EINVAL);
	expect_err("{\"current_host\":{\"name\":\"algo-1\"}}", -EINVAL);
	/* Still a malformed document first. */
	expect_err("{\"current_host\":1,}", -EBADMSG);
}

static void test_names(void **state)
{
	char name[300], json[400];

	(void)state;
	memset(name, 0, sizeof(name));
	memset(name, 'a', 63);
	name[63] = '.';
	memset(name + 64, 'b', 63);
	name[127] = '.';
	memset(name + 128, 'c', 63);
	name[191] = '.';
	memset(name + 192, 'd', 61);
	assert_int_equal(strlen(name), 253);
	snprintf(json, sizeof(json), "{\"current_host\":\"%s\"}", name);
	expect_host(json, name);

	strcat(name, "d");	/* 254 characters */
	snprintf(json, sizeof(json), "{\"current_host\":\"%s\"}", name);
	expect_err(json, -EINVAL);

	memset(name, 0, sizeof(name));
	memset(name, 'x', 64);	/* one label of 64 */
	snprintf(json, sizeof(json), "{\"current_host\":\"%s\"}", name);
	expect_err(json, -EINVAL);
	name[63] = '\0';
	snprintf(json, sizeof(json), "{\"current_host\":\"%s\"}", name);
	expect_host(json, name);

	static const char *const bad[] = {
		"", "a b", "algo-1,algo-2", "a:1", "$(reboot)", "-a", "a-",
		"a.-b", "a-.b", "a..b", ".a", "a.", "a_b", "a\\tb",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "{\"current_host\":\"%s\"}", bad[i]);
		expect_err(json, -EINVAL);
	}
	assert_true(smt_hostscan_valid_name("1.2.3.4", 7));
	assert_false(smt_hostscan_valid_name("ab\0cd", 5));
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"", " ", "{", "}", "[]", "null", "\"current_host\"", "{\"a\"}",
		"{\"a\":}", "{\"a\" 1}", "{\"a\":1,}", "{,\"a\":1}", "{'a':1}",
		"{a:1}", "{\"current_host\":\"a\"", "{\"current_host\":\"a\"}}",
		"{\"current_host\":\"a\"} x", "{} {}", "\xef\xbb\xbf{}",
		"{\"a\":[1,]}", "{\"a\":[,1]}", "{\"a\":[1 2]}", "{\"a\":{\"b\"}}",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":1e}",
		"{\"a\":+1}", "{\"a\":0x10}", "{\"a\":tru}", "{\"a\":nul}",
		"{\"a\":True}", "{\"a\":NaN}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
		"{\"a\":\"\\u12g4\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}",
		"{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\\u0000\"}",
		"{\"a\":\"tab\there\"}", "{\"a\":\"nl\nhere\"}",
		"{\"a\":\"\xff\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}",
		"{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}", "{\"a\":\"\x80\"}",
		"{\"current_host\":\"algo-1\\",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_err(bad[i], -EBADMSG);

	expect_err("{\"a\":-0.5e+10,\"b\":[0,1E3,2.25,-7,true,false,null],"
		   "\"c\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", -ENOENT);

	/* A NUL byte inside the document, in and out of a string. */
	char out[SMT_HOSTSCAN_MAX + 1];
	static const char nul_in_str[] = "{\"current_host\":\"al\0go\"}";
	static const char nul_after[] = "{\"current_host\":\"algo\"}\0";
	assert_int_equal(scan_n(nul_in_str, sizeof(nul_in_str) - 1, out), -EBADMSG);
	assert_int_equal(scan_n(nul_after, sizeof(nul_after) - 1, out), -EBADMSG);
}

static void test_depth(void **state)
{
	enum { DEEP = 10000 };
	char *json = malloc(6 * DEEP + 64);
	char out[SMT_HOSTSCAN_MAX + 1];
	size_t n;

	(void)state;
	assert_non_null(json);
	/* The top-level object counts as 1, so 31 arrays are allowed. */
	for (int levels = 31; levels <= 32; levels++) {
		n = (size_t)sprintf(json, "{\"current_host\":\"h\",\"x\":");
		memset(json + n, '[', (size_t)levels);
		memset(json + n + levels, ']', (size_t)levels);
		strcpy(json + n + 2 * levels, "}");
		assert_int_equal(scan(json, out), levels == 31 ? 1 : -EBADMSG);
	}
	n = (size_t)sprintf(json, "{\"x\":");
	for (int i = 0; i < DEEP; i++) {
		if (i % 2) {
			json[n++] = '[';
		} else {
			memcpy(json + n, "{\"k\":", 5);
			n += 5;
		}
	}
	json[n] = '\0';
	assert_int_equal(scan(json, out), -EBADMSG);
	free(json);
}

/* Every proper prefix of a document is malformed, and never overread. */
static void test_prefixes(void **state)
{
	static const char doc[] =
		"{\"hosts\":[\"algo-1\",\"algo-2\"],\"x\":{\"y\":[1,-2.5e3,true,null]},"
		"\"current_host\":\"algo-2\",\"s\":\"\\u00e9\\ud83d\\ude00\xc3\xa9\"}";
	char out[SMT_HOSTSCAN_MAX + 1];

	(void)state;
	for (size_t len = 0; len < sizeof(doc) - 1; len++)
		assert_int_equal(scan_n(doc, len, out), -EBADMSG);
	assert_int_equal(scan_n(doc, sizeof(doc) - 1, out), 6);
}

/*
 * Random mutations of a valid document: whatever comes back is either a
 * valid host name or an error, and ASan sees every byte touched.
 */
static void test_mutations(void **state)
{
	static const char doc[] =
		"{\"hosts\":[\"algo-1\"],\"current_host\":\"algo-1\","
		"\"n\":{\"a\":[1,2.5,\"\\u0041\\\"\"],\"current_host\":\"x\"}}";
	static const char alphabet[] = "{}[]\",:\\u0aX -.e1tfn\x80\xc3\xff";
	char buf[sizeof(doc)], out[SMT_HOSTSCAN_MAX + 1];
	uint32_t seed = 12345;
	ssize_t r;

	(void)state;
	for (int iter = 0; iter < 50000; iter++) {
		memcpy(buf, doc, sizeof(doc));
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % (sizeof(doc) - 1);
			seed = seed * 1103515245u + 12345u;
			buf[at] = alphabet[(seed >> 8) % (sizeof(alphabet) - 1)];
		}
		r = scan_n(buf, sizeof(doc) - 1 - (size_t)(iter % 3), out);
		if (r > 0)
			assert_true(smt_hostscan_valid_name(out, (size_t)r));
		else
			assert_true(r == -EBADMSG || r == -ENOENT || r == -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_decoys),
		cmocka_unit_test(test_not_a_string),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
