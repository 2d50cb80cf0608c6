/*
 * test_ranks.c - the rank table (ranks.h): local and remote ranks, what is
 * counted and kept of their lines (a long line by its head, once it ends),
 * how they ended, the first rank that failed on its own (not a victim of
 * smtd's own stop), and a worker's report carried to the leader through
 * JSON (smt_ranks_json -> text -> smt_ranks_merge_remote).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "ranks.h"
#include "smt_proto.h"

static const int64_t T0 = INT64_C(1714564800000);

/* A record of RANK's STREAM: its bytes, flags, time. */
static void line(struct smt_ranks *t, int rank, int stream, unsigned flags, const char *p,
		 size_t n, int64_t ms, const char **kept, size_t *kept_len, int *truncated)
{
	struct smt_record r = { .rank = rank, .stream = (enum smt_stream)stream, .flags = flags,
				.ms = ms, .p = p, .n = n };
	const char *k;
	size_t kl = 0;
	int tr = -1;

	smt_ranks_account(t, &r, &k, &kl, &tr);
	if (kept)
		*kept = k;
	if (kept_len)
		*kept_len = kl;
	if (truncated)
		*truncated = tr;
}

static void err_line(struct smt_ranks *t, int rank, const char *s, int64_t ms)
{
	line(t, rank, 1, SMT_REC_WHOLE, s, strlen(s), ms, NULL, NULL, NULL);
}

static void test_table(void **state)
{
	struct smt_ranks *t;
	struct smt_rank *a, *b;

	(void)state;
	assert_int_equal(smt_ranks_new("algo-1", &t), 0);
	assert_int_equal(smt_ranks_count(t), 0);
	assert_null(smt_ranks_get(t, 3, NULL, 0));
	a = smt_ranks_get(t, 3, NULL, 1);
	assert_non_null(a);
	assert_int_equal(a->rank, 3);
	assert_true(a->local);
	assert_string_equal(a->host, "algo-1");
	assert_int_equal(a->exit_code, -1);
	assert_int_equal(a->state, SMT_RANK_STARTING);
	assert_ptr_equal(smt_ranks_get(t, 3, "elsewhere", 1), a);
	b = smt_ranks_get(t, 40, "algo-2", 1);
	assert_non_null(b);
	assert_false(b->local);
	assert_string_equal(smt_ranks_host(t, 40), "algo-2");
	/* Host names are interned: one copy each. */
	assert_ptr_equal(smt_ranks_get(t, 41, "algo-2", 1)->host, b->host);
	assert_int_equal(smt_ranks_count(t), 42);
	assert_int_equal(smt_ranks_local(t), 1);
	assert_null(smt_ranks_find(t, 5));
	assert_null(smt_ranks_host(t, 5));
	assert_null(smt_ranks_get(t, -1, NULL, 1));
	assert_null(smt_ranks_get(t, SMT_RANK_MAX + 1, NULL, 1));
	assert_non_null(smt_ranks_get(t, SMT_RANK_MAX, "algo-9", 1));
	assert_int_equal(smt_ranks_count(t), SMT_RANK_MAX + 1);
	/* Ends: once, with its code, its signal, or unknown. */
	smt_ranks_ended(t, a, W_EXITCODE(3, 0), 10.5);
	assert_int_equal(a->state, SMT_RANK_EXITED);
	assert_int_equal(a->exit_code, 3);
	assert_int_equal(a->signo, 0);
	assert_true(a->end_time == 10.5);
	smt_ranks_ended(t, a, SIGKILL, 11.0);
	assert_int_equal(a->exit_code, 3);
	assert_true(a->end_time == 10.5);
	a = smt_ranks_get(t, 4, NULL, 1);
	smt_ranks_ended(t, a, SIGSEGV, 1);
	assert_int_equal(a->signo, SIGSEGV);
	assert_int_equal(a->exit_code, -1);
	a = smt_ranks_get(t, 5, NULL, 1);
	smt_ranks_ended(t, a, -1, 1);
	assert_int_equal(a->signo, 0);
	assert_int_equal(a->exit_code, -1);
	assert_int_equal(a->state, SMT_RANK_EXITED);
	smt_ranks_free(t);
}

/* Lines and bytes counted, whole lines kept as they are, a line in
 * pieces kept by its head once its last piece came. */
static void test_account(void **state)
{
	struct smt_ranks *t;
	struct smt_rank *k;
	const char *kept;
	size_t kl;
	int tr;
	char *big = malloc(5000);

	(void)state;
	assert_non_null(big);
	for (int i = 0; i < 5000; i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(smt_ranks_new("h", &t), 0);
	k = smt_ranks_get(t, 0, NULL, 1);
	line(t, 0, 0, SMT_REC_WHOLE, "hello", 5, T0, &kept, &kl, &tr);
	assert_int_equal(kl, 5);
	assert_memory_equal(kept, "hello", 5);
	assert_int_equal(tr, 0);
	assert_int_equal(k->lines, 1);
	assert_int_equal(k->bytes, 5);
	assert_int_equal(k->last_line_ms, T0);
	/* A whole line longer than what is kept: its head, truncated. */
	line(t, 0, 0, SMT_REC_WHOLE, big, 5000, T0 + 1, &kept, &kl, &tr);
	assert_int_equal(kl, SMT_KEEP_LINE_MAX);
	assert_memory_equal(kept, big, SMT_KEEP_LINE_MAX);
	assert_int_equal(tr, 1);
	/* In pieces, stdout and stderr interleaved: nothing kept until the
	 * last piece, then the line's head; counted once. */
	line(t, 0, 0, SMT_REC_FIRST, big, 1000, T0 + 2, &kept, &kl, &tr);
	assert_null(kept);
	line(t, 0, 1, SMT_REC_FIRST, "err-", 4, T0 + 2, &kept, &kl, &tr);
	assert_null(kept);
	line(t, 0, 0, 0, big + 1000, 1000, T0 + 3, &kept, &kl, &tr);
	assert_null(kept);
	line(t, 0, 1, SMT_REC_LAST, "end", 3, T0 + 3, &kept, &kl, &tr);
	assert_int_equal(kl, 7);
	assert_memory_equal(kept, "err-end", 7);
	assert_int_equal(tr, 0);
	line(t, 0, 0, SMT_REC_LAST, big + 2000, 3000, T0 + 4, &kept, &kl, &tr);
	assert_int_equal(kl, SMT_KEEP_LINE_MAX);
	assert_memory_equal(kept, big, SMT_KEEP_LINE_MAX);
	assert_int_equal(tr, 1);
	assert_int_equal(k->lines, 4);
	assert_int_equal(k->bytes, 5 + 5000 + 1000 + 4 + 1000 + 3 + 3000);
	assert_int_equal(k->last_line_ms, T0 + 4);
	/* A line in pieces that fits: kept whole, not truncated. */
	line(t, 0, 0, SMT_REC_FIRST, "ab", 2, T0 + 5, NULL, NULL, NULL);
	line(t, 0, 0, SMT_REC_LAST, "cd", 2, T0 + 5, &kept, &kl, &tr);
	assert_int_equal(kl, 4);
	assert_memory_equal(kept, "abcd", 4);
	assert_int_equal(tr, 0);
	/* A rank not in the table: nothing. */
	line(t, 9, 0, SMT_REC_WHOLE, "x", 1, T0, &kept, &kl, &tr);
	assert_null(kept);
	smt_ranks_free(t);
	free(big);
}

/* A local rank's stderr: its last lines kept, and its first line that
 * surely says an error. */
static void test_stderr_tail(void **state)
{
	struct smt_ranks *t;
	struct smt_rank *k, *r;
	size_t n = 0;

	(void)state;
	assert_int_equal(smt_ranks_new("h", &t), 0);
	k = smt_ranks_get(t, 0, NULL, 1);
	r = smt_ranks_get(t, 1, "other", 1);
	line(t, 0, 0, SMT_REC_WHOLE, "stdout: RuntimeError: not stderr", 32, T0, NULL, NULL, NULL);
	err_line(t, 0, "loading", T0);
	err_line(t, 0, "an error maybe", T0);
	err_line(t, 0, "RuntimeError: CUDA error: out of memory", T0);
	err_line(t, 0, "ValueError: later", T0);
	assert_string_equal(k->error_line, "RuntimeError: CUDA error: out of memory");
	for (int i = 0; i < 100; i++)
		err_line(t, 0, "filler line of stderr", T0);
	n = k->stderr_tail.count;
	assert_true(n <= SMT_RANK_TAIL_LINES);
	assert_true(n > 0);
	/* A remote rank's lines are counted, not kept here. */
	err_line(t, 1, "ValueError: remote", T0);
	assert_null(r->error_line);
	assert_int_equal(r->stderr_tail.count, 0);
	assert_int_equal(r->lines, 1);
	smt_ranks_free(t);
}

static struct smt_rank *ended(struct smt_ranks *t, int rank, const char *host, int wstatus,
			      int64_t end_ms, int64_t signaled_ms)
{
	struct smt_rank *k = smt_ranks_get(t, rank, host, 1);

	assert_non_null(k);
	k->signaled_ms = signaled_ms;
	smt_ranks_ended(t, k, wstatus, (double)end_ms / 1000.0);
	return k;
}

/* The first failure: the earliest end among ranks that failed on their
 * own; a rank that ended once smtd had signalled it is a victim. */
static void test_first_failure(void **state)
{
	struct smt_ranks *t;

	(void)state;
	assert_int_equal(smt_ranks_new("h", &t), 0);
	assert_null(smt_ranks_first_failure(t, 0));
	ended(t, 0, NULL, 0, T0 + 100, 0);
	assert_null(smt_ranks_first_failure(t, 0));
	/* Rank 1 killed by smtd's own SIGTERM: a victim. */
	ended(t, 1, NULL, SIGTERM, T0 + 600, T0 + 500);
	assert_null(smt_ranks_first_failure(t, 0));
	/* Rank 2 exited 1 before smtd signalled anyone: the failure. */
	ended(t, 2, NULL, W_EXITCODE(1, 0), T0 + 400, T0 + 500);
	assert_int_equal(smt_ranks_first_failure(t, 0)->rank, 2);
	/* Rank 3, on another host, failed earlier still. */
	ended(t, 3, "algo-2", SIGSEGV, T0 + 300, 0);
	assert_int_equal(smt_ranks_first_failure(t, 0)->rank, 3);
	assert_int_equal(smt_ranks_first_failure(t, 1)->rank, 2);
	/* Exactly when it was signalled: a victim; a millisecond before: not. */
	ended(t, 4, NULL, SIGKILL, T0 + 200, T0 + 200);
	assert_int_equal(smt_ranks_first_failure(t, 0)->rank, 3);
	ended(t, 5, NULL, SIGKILL, T0 + 199, T0 + 200);
	assert_int_equal(smt_ranks_first_failure(t, 0)->rank, 5);
	/* A program that could not be executed failed. */
	{
		struct smt_rank *k = smt_ranks_get(t, 6, NULL, 1);
		k->exec_errno = ENOENT;
		smt_ranks_ended(t, k, W_EXITCODE(127, 0), (double)(T0 + 50) / 1000.0);
	}
	assert_int_equal(smt_ranks_first_failure(t, 1)->rank, 6);
	/* Running ranks never count. */
	smt_ranks_get(t, 7, NULL, 1)->exit_code = 9;
	assert_int_equal(smt_ranks_first_failure(t, 1)->rank, 6);
	smt_ranks_free(t);
}

/* A worker's table, through JSON text, into the leader's. */
static void test_json_roundtrip(void **state)
{
	struct smt_ranks *w, *l;
	struct smt_rank *k;
	const struct smt_rank *m;
	json_t *a, *back, *o;
	char *text;

	(void)state;
	assert_int_equal(smt_ranks_new("algo-2", &w), 0);
	k = smt_ranks_get(w, 4, NULL, 1);
	k->pid = 4242;
	k->start_time = 1714564700.25;
	k->state = SMT_RANK_RUNNING;
	k->cpu_s = 12.5;
	err_line(w, 4, "Traceback (most recent call last):", T0 + 10);
	err_line(w, 4, "  File \"train.py\", line 3, in <module>", T0 + 11);
	err_line(w, 4, "ValueError: shapes do not match \xff", T0 + 12);
	k->last_progress_ms = T0 + 11;
	ended(w, 4, NULL, W_EXITCODE(3, 0), T0 + 300, 0);
	k = smt_ranks_get(w, 5, NULL, 1);
	k->pid = 4243;
	ended(w, 5, NULL, SIGKILL, T0 + 900, T0 + 800);
	k = smt_ranks_get(w, 6, NULL, 1);
	k->pid = 4244;
	k->state = SMT_RANK_RUNNING;
	k = smt_ranks_get(w, 7, NULL, 1);
	k->exec_errno = EACCES;
	ended(w, 7, NULL, W_EXITCODE(126, 0), T0 + 350, 0);
	/* A rank it knows from elsewhere is not its to report. */
	smt_ranks_get(w, 9, "algo-3", 1);
	a = smt_ranks_json(w, 1, (double)(T0 + 1000) / 1000.0);
	assert_int_equal(json_array_size(a), 4);
	text = json_dumps(a, JSON_COMPACT);
	assert_non_null(text);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	o = json_array_get(back, 0);
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_ERROR_LINE)),
			    "ValueError: shapes do not match ?");
	assert_true(json_is_array(json_object_get(o, SMT_F_TAIL)));
	assert_null(json_object_get(json_array_get(back, 2), SMT_F_TAIL));

	assert_int_equal(smt_ranks_new("algo-1", &l), 0);
	smt_ranks_get(l, 0, NULL, 1)->pid = 100;
	/* A report claiming a rank of this host is ignored for it. */
	json_array_append_new(back, json_pack("{s:i, s:s, s:i}", SMT_F_RANK, 0, SMT_F_STATE, "exited",
					      SMT_F_PID, 1));
	/* Entries that are not ranks are skipped. */
	json_array_append_new(back, json_string("nonsense"));
	json_array_append_new(back, json_pack("{s:s}", SMT_F_RANK, "4"));
	json_array_append_new(back, json_pack("{s:i}", SMT_F_RANK, -1));
	json_array_append_new(back, json_pack("{s:I}", SMT_F_RANK, (json_int_t)SMT_RANK_MAX + 1));
	assert_int_equal(smt_ranks_merge_remote(l, "algo-2", back), 4);
	assert_int_equal(smt_ranks_find(l, 0)->pid, 100);
	assert_true(smt_ranks_find(l, 0)->local);

	m = smt_ranks_find(l, 4);
	assert_non_null(m);
	assert_false(m->local);
	assert_string_equal(m->host, "algo-2");
	assert_int_equal(m->pid, 4242);
	assert_true(m->start_time == 1714564700.25);
	assert_int_equal(m->state, SMT_RANK_EXITED);
	assert_int_equal(m->exit_code, 3);
	assert_int_equal(m->signo, 0);
	assert_true(m->end_time == (double)(T0 + 300) / 1000.0);
	assert_int_equal(m->last_line_ms, T0 + 12);
	assert_int_equal(m->last_progress_ms, T0 + 11);
	assert_true(m->cpu_s == 12.5);
	assert_string_equal(m->error_line, "ValueError: shapes do not match ?");
	assert_non_null(m->tail);
	assert_string_equal(m->tail[0], "Traceback (most recent call last):");
	assert_string_equal(m->tail[2], "ValueError: shapes do not match \xef\xbf\xbd");
	assert_null(m->tail[3]);
	/* Lines and bytes are the leader's own count. */
	assert_int_equal(m->lines, 0);

	m = smt_ranks_find(l, 5);
	assert_int_equal(m->signo, SIGKILL);
	assert_int_equal(m->exit_code, -1);
	assert_int_equal(m->signaled_ms, T0 + 800);
	m = smt_ranks_find(l, 6);
	assert_int_equal(m->state, SMT_RANK_RUNNING);
	assert_int_equal(m->pid, 4244);
	assert_int_equal(m->exit_code, -1);
	m = smt_ranks_find(l, 7);
	assert_int_equal(m->exec_errno, EACCES);
	assert_int_equal(m->exit_code, 126);

	/* The leader names the worker's failure as the worker would. */
	assert_int_equal(smt_ranks_first_failure(l, 0)->rank, 4);
	assert_int_equal(smt_ranks_first_failure(w, 1)->rank, 4);
	assert_null(smt_ranks_first_failure(l, 1));

	/* A later report moves the rank to the host that reports it. */
	json_decref(back);
	back = json_pack("[{s:i, s:s}]", SMT_F_RANK, 4, SMT_F_STATE, "running");
	assert_int_equal(smt_ranks_merge_remote(l, "algo-3", back), 1);
	assert_string_equal(smt_ranks_host(l, 4), "algo-3");

	/* The leader's whole table: every rank, each host's. */
	json_decref(a);
	a = smt_ranks_json(l, 0, (double)(T0 + 1000) / 1000.0);
	assert_int_equal(json_array_size(a), 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), SMT_F_HOST)),
			    "algo-1");
	json_decref(a);
	json_decref(back);
	free(text);
	smt_ranks_free(w);
	smt_ranks_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_account),
		cmocka_unit_test(test_stderr_tail),
		cmocka_unit_test(test_first_failure),
		cmocka_unit_test(test_json_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
