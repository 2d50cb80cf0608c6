/* test_shellwords.c - POSIX word splitting without evaluation. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shellwords.h"
#include "strv.h"

static void check(const char *text, const char *const *expected)
{
	char err[128] = "", **w = NULL;
	size_t n = 0, i;

	assert_int_equal(smt_shellwords_split(text, &w, &n, err, sizeof(err)), 0);
	for (i = 0; expected[i]; i++) {
		assert_true(i < n);
		assert_string_equal(w[i], expected[i]);
	}
	assert_int_equal(n, i);
	assert_null(w[n]);
	smt_strv_free(w);
}

static void check_error(const char *text, const char *msg)
{
	char err[128] = "", **w = NULL;
	size_t n = 0;

	assert_int_equal(smt_shellwords_split(text, &w, &n, err, sizeof(err)), -EINVAL);
	assert_null(w);
	assert_string_equal(err, msg);
}

static void test_plain(void **state)
{
	(void)state;
	check("", (const char *const[]){ NULL });
	check("  \t\n ", (const char *const[]){ NULL });
	check("-x FOO  --mca\tbtl  tcp", (const char *const[]){ "-x", "FOO", "--mca", "btl", "tcp", NULL });
}

static void test_quotes(void **state)
{
	(void)state;
	check("-x FOO=\"a b\"", (const char *const[]){ "-x", "FOO=a b", NULL });
	check("'a \"b\" \\c'", (const char *const[]){ "a \"b\" \\c", NULL });
	check("\"a \\\"b\\\" \\$x \\c\"", (const char *const[]){ "a \"b\" $x \\c", NULL });
	check("'' \"\"", (const char *const[]){ "", "", NULL });
	check("a'b'\"c\"d", (const char *const[]){ "abcd", NULL });
}

static void test_no_evaluation(void **state)
{
	(void)state;
	check("$(reboot) `id` * ~ $HOME ;|&", (const char *const[]){ "$(reboot)", "`id`", "*", "~", "$HOME", ";|&", NULL });
}

static void test_backslash(void **state)
{
	(void)state;
	check("a\\ b c\\\\d", (const char *const[]){ "a b", "c\\d", NULL });
	check("a\\\nb \\\n c", (const char *const[]){ "ab", "c", NULL });
}

static void test_errors(void **state)
{
	(void)state;
	check_error("-x FOO=\"a b", "unbalanced double quote at byte 8");
	check_error("a 'b", "unbalanced single quote at byte 3");
	check_error("abc\\", "trailing backslash at byte 4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_no_evaluation),
		cmocka_unit_test(test_backslash),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
