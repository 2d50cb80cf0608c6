/* test_stackgroup.c - naming the odd rank(s) out of 64 real-looking stacks
 * (tests/data/stacks, captured from the fixtures), each rank's copy with
 * its own addresses, thread ids and PIDs. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textesc.h"
#include "stackgroup.h"
#include "stacks.h"
#include "textesc.h"
#include "testdata.h"
#include "textesc.h"
#include "testutil.h"

static char *data(const char *name)
{
	size_t len;

	return smt_test_data(name, &len, 1);
}

#define NRANKS 64

static char *texts[NRANKS];
static char hosts[NRANKS][16];
static struct smt_rank_stack ranks[NRANKS];

/* TEXT as another process would print it: every hex digit of an address
 * and every number after "LWP "/"PID "/"TID "/"process " changed. */
static char *vary(const char *text, int seed)
{
	char *s = strdup(text);

	assert_non_null(s);
	for (char *p = s; *p; p++) {
		if (p[0] == '0' && p[1] == 'x') {
			for (p += 2; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
				*p = "0123456789abcdef"[(*p + seed) % 16];
			p--;
		} else if (!strncmp(p, "LWP ", 4) || !strncmp(p, "PID ", 4) || !strncmp(p, "TID ", 4)) {
			for (p += 4; *p >= '0' && *p <= '9'; p++)
				*p = (char)('0' + (*p - '0' + seed) % 10);
			p--;
		}
	}
	return s;
}

static void set_rank(int i, const char *file, double quiet)
{
	char *t = data(file), *c;

	/* as smt_stacks delivers it */
	assert_int_equal(smt_stacks_clean(t, strlen(t), &c), 0);
	free(texts[i]);
	texts[i] = vary(c, i + 1);
	free(t);
	free(c);
	ranks[i].stack = texts[i];
	ranks[i].reason = NULL;
	ranks[i].quiet_s = quiet;
}

static void set_text(int i, const char *text, double quiet)
{
	free(texts[i]);
	texts[i] = strdup(text);
	ranks[i].stack = texts[i];
	ranks[i].reason = NULL;
	ranks[i].quiet_s = quiet;
}

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < NRANKS; i++) {
		snprintf(hosts[i], sizeof(hosts[i]), "algo-%d", i / 8 + 1);
		ranks[i].rank = i;
		ranks[i].host = hosts[i];
		set_rank(i, "stacks/ddp-allreduce.pybt", 600.0 + (i % 7) * 0.01);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NRANKS; i++) {
		free(texts[i]);
		texts[i] = NULL;
	}
	return 0;
}

static void summary(size_t n, double stall, char *buf, size_t size)
{
	struct smt_stackgroup *g;

	assert_int_equal(smt_stackgroup_new(ranks, n, &g), 0);
	size_t len = smt_stackgroup_summary(g, stall, buf, size);
	assert_int_equal(len, strlen(buf));
	assert_true(len <= SMT_STACKGROUP_SUMMARY_MAX);
	assert_true(smt_test_valid_utf8(buf, strlen(buf), 0));
	smt_stackgroup_free(g);
}

static void test_one_odd(void **state)
{
	(void)state;
	char buf[1024], *details;
	struct smt_stackgroup *g;
	size_t n;

	set_rank(5, "stacks/ddp-sleep.pybt", 600.0);
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 5 on algo-1 is in "
			    "time.sleep (ddp_stall.py:44) while 63 ranks wait in "
			    "dist.all_reduce (ddp_stall.py:66)");

	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	const int *odd = smt_stackgroup_odd(g, &n);
	assert_int_equal(n, 1);
	assert_int_equal(odd[0], 5);
	assert_int_equal(smt_stackgroup_details(g, 64 * 1024, &details), 0);
	/* each distinct stack once, the odd one first */
	const char *a = strstr(details, "--- rank 5 on algo-1: time.sleep (ddp_stall.py:44) [odd]\n");
	const char *b = strstr(details, "--- 63 ranks (algo-1: 0-4, 6, 7; algo-2: 8-15; algo-3: 16-23;");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_non_null(strstr(b, "): dist.all_reduce (ddp_stall.py:66) [majority]\n"));
	assert_non_null(strstr(a, "    time.sleep(3600)\n"));
	assert_null(strstr(b + 1, "--- "));
	assert_true(strncmp(details, "Stacks of 64 ranks: 2 distinct\n", 31) == 0);
	assert_true(smt_test_valid_utf8(details, strlen(details), 0) || strchr(details, '\n'));
	free(details);
	smt_stackgroup_free(g);
}

static void test_two_odd_places(void **state)
{
	(void)state;
	char buf[1024];

	set_rank(3, "stacks/ddp-sleep.pybt", 600.0);
	set_text(7, "Current thread 0x00007f00 (most recent call first):\n"
		    "  File \"/opt/ml/code/data.py\", line 12 in load\n"
		    "    batch = queue.get()\n"
		    "  File \"/opt/ml/code/train.py\", line 30 in main\n", 600.0);
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 3 on algo-1 is in "
			    "time.sleep (ddp_stall.py:44), rank 7 on algo-1 is in "
			    "queue.get (data.py:12) while 62 ranks wait in "
			    "dist.all_reduce (ddp_stall.py:66)");
	/* the same place on two hosts: one group, listed compactly */
	set_rank(7, "stacks/ddp-sleep.pybt", 600.0);
	set_rank(27, "stacks/ddp-sleep.pybt", 600.0);
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; ranks 3, 7, 27 on algo-1, algo-4 "
			    "are in time.sleep (ddp_stall.py:44) while 61 ranks wait in "
			    "dist.all_reduce (ddp_stall.py:66)");
}

static void test_all_same_one_quiet(void **state)
{
	(void)state;
	char buf[1024];
	struct smt_stackgroup *g;
	size_t n;

	ranks[9].quiet_s = 640.2;
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 9 on algo-2 went quiet first "
			    "(no progress for 640 s); all 64 ranks are in dist.all_reduce (ddp_stall.py:66)");
	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	assert_int_equal(smt_stackgroup_odd(g, &n)[0], 9);
	assert_int_equal(n, 1);
	smt_stackgroup_free(g);
	/* without the stall (POST /v1/stacks) the lead is left out */
	summary(NRANKS, -1, buf, sizeof(buf));
	assert_true(strncmp(buf, "rank 9 on algo-2 went quiet first", 33) == 0);
}

/* Every rank stopped at once (a heartbeat job, a healthy job read live), or
 * only one rank ever wrote: nobody went quiet first, nobody is odd. */
static void test_all_same_together(void **state)
{
	(void)state;
	char buf[1024], *details;
	struct smt_stackgroup *g;
	size_t n;

	/* setup: every rank's last line 600.00-600.06 s ago */
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; all 64 ranks are in "
			    "dist.all_reduce (ddp_stall.py:66)");
	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	smt_stackgroup_odd(g, &n);
	assert_int_equal(n, 0);
	assert_int_equal(smt_stackgroup_details(g, 64 * 1024, &details), 0);
	assert_null(strstr(details, "[odd]"));
	free(details);
	smt_stackgroup_free(g);
	/* 0.9 s ahead is still together */
	ranks[9].quiet_s = 600.96;
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; all 64 ranks are in "
			    "dist.all_reduce (ddp_stall.py:66)");
	/* only rank 0 writes */
	for (int i = 0; i < NRANKS; i++)
		ranks[i].quiet_s = i == 0 ? 700 : -1;
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; all 64 ranks are in "
			    "dist.all_reduce (ddp_stall.py:66)");
	/* one rank alone is named */
	summary(1, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 0 on algo-1 went quiet "
			    "(no progress for 700 s); it is in dist.all_reduce (ddp_stall.py:66)");
}

static void test_none_readable(void **state)
{
	(void)state;
	char buf[1024], *details;
	struct smt_stackgroup *g;

	for (int i = 0; i < NRANKS; i++) {
		ranks[i].stack = NULL;
		ranks[i].reason = i == 40 ? "process 1234 is gone" :
			"ptrace not permitted: kernel.yama.ptrace_scope is 1 (only ancestors may "
			"attach) and smtd lacks CAP_SYS_PTRACE";
	}
	ranks[33].quiet_s = 700;
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 33 on algo-5 went quiet first "
			    "(no progress for 700 s); no stack could be read: ptrace not permitted: "
			    "kernel.yama.ptrace_scope is 1 (only ancestors may attach) and smtd "
			    "lacks CAP_SYS_PTRACE");
	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	assert_int_equal(smt_stackgroup_details(g, 8192, &details), 0);
	assert_non_null(strstr(details, "--- no stack for 63 ranks (algo-1: 0-7; algo-2: 8-15; "
				"algo-3: 16-23; algo-4: 24-31; algo-5: 32-39; algo-6: 41-47; "
				"algo-7: 48-55; algo-8: 56-63): ptrace not permitted"));
	assert_non_null(strstr(details, "--- no stack for 1 rank (algo-6: 40): process 1234 is gone\n"));
	free(details);
	smt_stackgroup_free(g);
}

static void test_mixed_formats(void **state)
{
	(void)state;
	char buf[1024];

	/* 6 ranks: 4 Python stacks agree, one read natively by eu-stack (an
	 * MPI barrier), one by gdb (a torch collective). */
	set_rank(4, "stacks/mpi-barrier.eustack", 600);
	set_rank(5, "stacks/ddp-allreduce.gdb", 600);
	summary(6, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 4 on algo-1 is in "
			    "ompi_sync_wait_mt, rank 5 on algo-1 is in c10d::Work::wait while 4 ranks "
			    "wait in dist.all_reduce (ddp_stall.py:66)");
	/* a rank that could not be read is mentioned after the rest */
	ranks[2].stack = NULL;
	ranks[2].reason = "process 99 is gone";
	summary(6, 600, buf, sizeof(buf));
	assert_non_null(strstr(buf, "while 3 ranks wait in dist.all_reduce (ddp_stall.py:66); "
			       "no stack for rank 2 on algo-1: process 99 is gone"));
}

static void test_tie_quiet_first(void **state)
{
	(void)state;
	char buf[1024];

	set_rank(1, "stacks/ddp-sleep.pybt", 612);
	summary(2, 600, buf, sizeof(buf));
	assert_string_equal(buf, "Stalled: no progress for 600 s; rank 1 on algo-1 went quiet first "
			    "(no progress for 612 s) and is in time.sleep (ddp_stall.py:44); no majority "
			    "among 2 distinct stacks");
}

/* 32 distinct 2000-frame stacks and odd ranks everywhere: everything stays bounded. */
static void test_long_stacks(void **state)
{
	(void)state;
	char buf[2048], *details, line[128];
	struct smt_stackgroup *g;
	size_t cap = 2000 * 80;

	for (int i = 0; i < NRANKS; i++) {
		char *t = malloc(cap), *p = t;
		p += sprintf(p, "Current thread 0x00007f00 (most recent call first):\n");
		for (int f = 0; f < 2000; f++) {
			snprintf(line, sizeof(line), "  File \"/opt/ml/code/very/long/path/module_%d.py\", "
				 "line %d in func_%d\n", f, f + 1 + (i < 32 ? i : 0), f);
			p += sprintf(p, "%s", line);
		}
		set_text(i, t, 600 + i);
		free(t);
	}
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_true(strstr(buf, " and ") != NULL);
	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	assert_int_equal(smt_stackgroup_details(g, 64 * 1024, &details), 0);
	assert_true(strlen(details) <= 64 * 1024);
	assert_non_null(strstr(details, "more lines]\n"));
	/* 32 distinct stacks, every one shown, cut */
	size_t headers = 0;
	for (const char *p = details; (p = strstr(p, "\n--- ")); p++)
		headers++;
	assert_int_equal(headers, 32);
	free(details);
	/* with less room, the first stacks and a count of the rest */
	assert_int_equal(smt_stackgroup_details(g, 8192, &details), 0);
	assert_true(strlen(details) <= 8192);
	assert_non_null(strstr(details, "more distinct stacks not shown]\n"));
	free(details);
	/* a tiny bound still gives the overview */
	assert_int_equal(smt_stackgroup_details(g, 300, &details), 0);
	assert_true(strlen(details) <= 400);
	free(details);
	smt_stackgroup_free(g);
}

static void test_utf8_and_json(void **state)
{
	(void)state;
	char buf[1024];
	struct smt_stackgroup *g;

	strcpy(hosts[5], "h\xff\x01st");
	set_text(5, "Current thread 0x00007f00 (most recent call first):\n"
		    "  File \"/opt/\xc3\xa9t\xe9/x.py\", line 1 in f\n", 600);
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_non_null(strstr(buf, "rank 5 on h? st is in f (x.py:1)"));
	assert_int_equal(smt_stackgroup_new(ranks, NRANKS, &g), 0);
	json_t *j = smt_stackgroup_json(g);
	assert_non_null(j);
	char *dump = json_dumps(j, JSON_COMPACT);
	assert_non_null(dump);
	assert_non_null(strstr(dump, "\"odd\":[5]"));
	assert_non_null(strstr(dump, "\"position\":\"f (x.py:1)\""));
	assert_non_null(strstr(dump, "\"position\":\"dist.all_reduce (ddp_stall.py:66)\",\"majority\":true"));
	free(dump);
	json_decref(j);
	smt_stackgroup_free(g);
	strcpy(hosts[5], "algo-1");
}

static void test_summary_bound(void **state)
{
	(void)state;
	char buf[1024], big[4000];

	/* every rank different, with huge function names */
	for (int i = 0; i < NRANKS; i++) {
		memset(big, 'a' + i % 26, sizeof(big));
		int n = snprintf(big, sizeof(big), "Stack (most recent call first):\n  File \"x.py\", line %d in ", i);
		big[n] = (char)('a' + i % 26);
		big[n + 2000] = '\n';
		big[n + 2001] = '\0';
		set_text(i, big, 600);
	}
	set_text(0, texts[1], 600);
	set_text(2, texts[1], 600);
	summary(NRANKS, 600, buf, sizeof(buf));
	assert_int_equal(strlen(buf), SMT_STACKGROUP_SUMMARY_MAX);
	assert_string_equal(buf + strlen(buf) - 3, "...");
	/* a small buffer gets a shorter line, still cut cleanly */
	summary(NRANKS, 600, buf, 40);
	assert_int_equal(strlen(buf), 39);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_odd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_odd_places, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_same_one_quiet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_same_together, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_readable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_formats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tie_quiet_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_utf8_and_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary_bound, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
