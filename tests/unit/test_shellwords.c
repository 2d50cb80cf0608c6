/* test_shellwords.c - POSIX word splitting without evaluation. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* What mpirun 4.1.4 does to orte_launch_agent before ssh: split on single
 * spaces, drop the empty pieces, join with one space. */
static char *mpirun_resplit(const char *value)
{
	char *copy = strdup(value), *save = NULL, *out = calloc(1, strlen(value) + 1);
	size_t len = 0;

	assert_non_null(copy);
	assert_non_null(out);
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		len += (size_t)sprintf(out + len, "%s%s", len ? " " : "", t);
	free(copy);
	return out;
}

/* QUOTED survives both places mpirun puts it: as words of the command the
 * remote shell runs, and as one double-quoted -mca value. */
static void check_quoted(const char *word)
{
	char *q = NULL, bad = 0, err[128], **w = NULL, *line, *joined;
	size_t n = 0;

	assert_int_equal(smt_shellwords_quote(word, &q, &bad), 0);
	assert_int_equal(asprintf(&line, "/bin/smtctl --socket %s exec-orted orted", q) > 0, 1);
	joined = mpirun_resplit(line);
	assert_int_equal(smt_shellwords_split(joined, &w, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_string_equal(w[2], word);
	assert_string_equal(w[3], "exec-orted");
	smt_strv_free(w);
	free(joined);
	free(line);
	/* Inside mpirun's double quotes: one word, the quote never closed early. */
	assert_int_equal(asprintf(&line, "-mca orte_launch_agent \"%s\" next", q) > 0, 1);
	assert_int_equal(smt_shellwords_split(line, &w, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 4);
	assert_string_equal(w[3], "next");
	smt_strv_free(w);
	free(line);
	free(q);
}

static void test_quote(void **state)
{
	static const char *const words[] = {
		"/usr/local/bin/smtctl", "/run/smtd/smtd.sock", "/opt/my tools/smtctl",
		"/a  b   c", " leading", "trailing ", "two  ", "", "/x;touch /tmp/pwned;",
		"/it's", "/a&b|c<d>e(f)g", "/*?[x]", "#hash", "~user", "{a,b}", "A=b/smtctl",
		"/caf\xc3\xa9/s.sock", "orted", "!bang", "^caret",
	};
	char *q = NULL, bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		check_quoted(words[i]);
	/* Plain paths stay as they are. */
	assert_int_equal(smt_shellwords_quote("/usr/bin/smtctl", &q, &bad), 0);
	assert_string_equal(q, "/usr/bin/smtctl");
	free(q);
	assert_int_equal(smt_shellwords_quote("/a b/it's", &q, &bad), 0);
	assert_string_equal(q, "/a\\ b/it\\'s");
	free(q);
	assert_int_equal(smt_shellwords_quote("x ", &q, &bad), 0);
	assert_string_equal(q, "x\\ ''");
	free(q);
	/* What the double-quoted copy would expand or end is refused. */
	static const struct { const char *word; char bad; } refused[] = {
		{ "/tmp/$(id)/s.sock", '$' }, { "/tmp/`id`", '`' }, { "/tmp/a\"b", '"' },
		{ "/tmp/a\\b", '\\' }, { "/tmp/a\nb", '\n' }, { "/tmp/a\tb", '\t' },
		{ "/tmp/\x7f", '\x7f' },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		q = NULL;
		assert_int_equal(smt_shellwords_quote(refused[i].word, &q, &bad), -EINVAL);
		assert_null(q);
		assert_int_equal(bad, refused[i].bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_no_evaluation),
		cmocka_unit_test(test_backslash),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_quote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
