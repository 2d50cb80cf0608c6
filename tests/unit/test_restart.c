/*
 * test_restart.c - the restart policy and the attempts' records
 * (restart.h): which kinds restart and how often, the final failure text
 * (its first line with "(attempt K of K)", one line per earlier attempt,
 * all within the 1024 bytes SageMaker shows, also with long summaries),
 * and attempts.json written under ROOT/output/data, never through a link.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "restart.h"

static void test_kinds_and_count(void **state)
{
	struct smt_restart *r;

	(void)state;
	assert_int_equal(smt_restart_new(2, 0, &r), 0);
	assert_true(smt_restart_due(r, SMT_FAIL_RANK_FAILED));
	assert_true(smt_restart_due(r, SMT_FAIL_OOM));
	assert_true(smt_restart_due(r, SMT_FAIL_STALLED));
	/* Nothing would go differently the next time. */
	assert_false(smt_restart_due(r, SMT_FAIL_CONFIG));
	assert_false(smt_restart_due(r, SMT_FAIL_NOT_FOUND));
	assert_false(smt_restart_due(r, SMT_FAIL_LOST_HOST));
	assert_false(smt_restart_due(r, SMT_FAIL_LOST_LEADER));
	assert_false(smt_restart_due(r, SMT_FAIL_STOPPED));
	assert_int_equal(smt_restart_next(r), 1);
	assert_true(smt_restart_due(r, SMT_FAIL_RANK_FAILED));
	assert_int_equal(smt_restart_next(r), 2);
	assert_false(smt_restart_due(r, SMT_FAIL_RANK_FAILED));
	smt_restart_free(r);
	assert_int_equal(smt_restart_new(0, 0, &r), 0);
	assert_false(smt_restart_due(r, SMT_FAIL_RANK_FAILED));
	assert_false(smt_restart_marked(r));
	smt_restart_free(r);
}

static void test_failure_text(void **state)
{
	struct smt_restart *r;
	char *text;

	(void)state;
	assert_int_equal(smt_restart_new(2, 0, &r), 0);
	/* One attempt: the text as it is. */
	text = smt_restart_failure(r, "RankFailed: rank 4 on algo-3 exited with code 1: E\nmore\n");
	assert_string_equal(text, "RankFailed: rank 4 on algo-3 exited with code 1: E\nmore\n");
	free(text);
	smt_restart_ended(r, 1.0, "RankFailed: one\nignored", NULL);
	smt_restart_next(r);
	smt_restart_ended(r, 2.0, "Stalled: two", "stacks/attempt-1");
	smt_restart_next(r);
	text = smt_restart_failure(r, "RankFailed: three\ntail line\n");
	assert_string_equal(text, "RankFailed: three (attempt 3 of 3)\n"
				  "attempt 1 of 3: RankFailed: one\n"
				  "attempt 2 of 3: Stalled: two\n"
				  "tail line\n");
	free(text);
	smt_restart_free(r);
}

/* Long summaries, many attempts: the first lines fit 1024 bytes. */
static void test_failure_bounded(void **state)
{
	struct smt_restart *r;
	char big[1100], *text;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "RankFailed: ", 12);
	assert_int_equal(smt_restart_new(20, 0, &r), 0);
	for (int i = 0; i < 20; i++) {
		smt_restart_ended(r, 1.0, big, NULL);
		smt_restart_next(r);
	}
	text = smt_restart_failure(r, big);
	/* The last attempt's line, then the earlier ones, all in 1024 bytes. */
	char *end = text;
	int lines = 0;
	while (lines < 21 && (end = strchr(end, '\n')))
		end++, lines++;
	assert_int_equal(lines, 21);
	assert_true((size_t)(end - text) <= 1024);
	assert_non_null(strstr(text, " (attempt 21 of 21)\n"));
	assert_non_null(strstr(text, "\nattempt 20 of 21: Rank"));
	free(text);
	smt_restart_free(r);
}

static void test_attempts_json(void **state)
{
	char dir[] = "/tmp/test_restart.XXXXXX", path[256];
	struct smt_restart *r;
	json_t *j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(smt_restart_new(1, 0, &r), 0);
	smt_restart_started(r, 10.0);
	smt_restart_ended(r, 11.0, "Stalled: no progress", "stacks/attempt-0");
	smt_restart_next(r);
	smt_restart_started(r, 12.0);
	assert_int_equal(smt_restart_write(r, dir), 0);
	snprintf(path, sizeof(path), "%s/output/data/attempts.json", dir);
	j = json_load_file(path, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "restarts")), 1);
	json_t *a0 = json_array_get(json_object_get(j, "attempts"), 0);
	assert_string_equal(json_string_value(json_object_get(a0, "failure")), "Stalled: no progress");
	assert_string_equal(json_string_value(json_object_get(a0, "stacks")), "stacks/attempt-0");
	assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "attempts"), 1),
						 "end")));
	json_decref(j);
	/* ROOT/output/data as a link: refused, nothing written through it. */
	char out[256], data[256], victim[] = "/tmp/test_restart_victim.XXXXXX";
	assert_non_null(mkdtemp(victim));
	snprintf(out, sizeof(out), "%s/output", dir);
	snprintf(data, sizeof(data), "%s/output/data", dir);
	unlink(path);
	assert_int_equal(rmdir(data), 0);
	assert_int_equal(symlink(victim, data), 0);
	assert_true(smt_restart_write(r, dir) < 0);
	snprintf(path, sizeof(path), "%s/attempts.json", victim);
	assert_int_equal(access(path, F_OK), -1);
	unlink(data);
	rmdir(out);
	rmdir(dir);
	rmdir(victim);
	smt_restart_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_count),
		cmocka_unit_test(test_failure_text),
		cmocka_unit_test(test_failure_bounded),
		cmocka_unit_test(test_attempts_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
