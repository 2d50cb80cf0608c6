/*
 * stacks_read.c - smt_stacks (daemon/stacks.h) on a real libuv loop, for
 * tests/integration/stacks_read.sh and for measuring.
 *
 *   stacks_read [--timeout MS] [--parallel N] [--path DIR] [--no-python]
 *               [--kill-after MS] [--group] [--close-last] PID...
 *
 * Reads every PID's stack at once (the module queues beyond --parallel) and
 * prints, per PID in the order results came:
 *   === PID tool=TOOL python=0|1 seconds=S
 *   note: NOTE                      (when there is one)
 *   TEXT                            (the stack)
 * or
 *   === PID reason: REASON
 * then "all N reads done in S s".  --group then names the odd one out
 * (stackgroup.h), the PIDs taken as ranks 0, 1, ... on host "local":
 *   summary: rank 2 on local is in time.sleep (x.py:3) while 2 ranks wait in ...
 * --path DIR gives the tools PATH=DIR
 * only (to hide gdb or eu-stack); --kill-after MS sends SIGKILL to every
 * PID that long after the reads started (a process that exits mid-read);
 * --close-last closes the reader from the last result's callback, as
 * smtd's collections do.
 * Exits 0 when every read ended (whatever its outcome) and the loop closed
 * with no handle left, 1 otherwise, 2 on usage errors.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "reaper.h"
#include "stackgroup.h"
#include "stacks.h"

static unsigned done, total;
static struct smt_rank_stack *ranks;
static uv_timer_t kill_timer;
static pid_t *pids;
static struct smt_stacks *reader;
static int close_last;

static void on_stack(void *arg, const struct smt_stack_result *res)
{
	struct smt_rank_stack *r = arg;

	r->stack = res->text ? strndup(res->text, res->len) : NULL;
	r->reason = res->text ? NULL : strdup(res->reason);
	if (res->text) {
		printf("=== %d tool=%s python=%d seconds=%.3f\n", (int)res->pid, res->tool,
		       res->python, res->seconds);
		if (res->note)
			printf("note: %s\n", res->note);
		fwrite(res->text, 1, res->len, stdout);
	} else {
		printf("=== %d reason: %s\n", (int)res->pid, res->reason);
	}
	fflush(stdout);
	done++;
	if (close_last && done == total) {
		smt_stacks_close(reader);
		reader = NULL;
	}
}

static void on_kill(uv_timer_t *t)
{
	for (unsigned i = 0; i < total; i++)
		kill(pids[i], SIGKILL);
	uv_close((uv_handle_t *)t, NULL);
}

static int usage(void)
{
	fprintf(stderr, "usage: stacks_read [--timeout MS] [--parallel N] [--path DIR] "
		"[--no-python] [--kill-after MS] [--group] [--close-last] PID...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct smt_stacks_config cfg = { 0 };
	struct smt_reaper *reaper;
	struct smt_stacks *s;
	unsigned timeout = 10000;
	long kill_after = -1;
	int group = 0;
	char *env[2] = { NULL, NULL }, pathvar[4096];
	uv_loop_t loop;
	int i, rc = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--parallel") && i + 1 < argc)
			cfg.max_parallel = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--kill-after") && i + 1 < argc)
			kill_after = atol(argv[++i]);
		else if (!strcmp(argv[i], "--group"))
			group = 1;
		else if (!strcmp(argv[i], "--close-last"))
			close_last = 1;
		else if (!strcmp(argv[i], "--no-python"))
			cfg.no_python = 1;
		else if (!strcmp(argv[i], "--path") && i + 1 < argc) {
			snprintf(pathvar, sizeof(pathvar), "PATH=%s", argv[++i]);
			env[0] = pathvar;
			cfg.envp = env;
		} else
			return usage();
	}
	if (i == argc)
		return usage();
	total = (unsigned)(argc - i);
	pids = calloc(total, sizeof(*pids));
	ranks = calloc(total, sizeof(*ranks));
	uv_loop_init(&loop);
	if (smt_reaper_new(&loop, &reaper) < 0 || smt_stacks_new(&loop, reaper, &cfg, &s) < 0)
		return 1;
	reader = s;
	uint64_t start = uv_hrtime();
	for (unsigned k = 0; k < total; k++) {
		pids[k] = (pid_t)atoi(argv[i + (int)k]);
		ranks[k] = (struct smt_rank_stack){ .rank = (int)k, .host = "local", .quiet_s = -1 };
		if (smt_stacks_read(s, pids[k], timeout, on_stack, &ranks[k]) < 0)
			return usage();
	}
	if (kill_after >= 0) {
		uv_timer_init(&loop, &kill_timer);
		uv_timer_start(&kill_timer, on_kill, (uint64_t)kill_after, 0);
	}
	while (done < total && uv_run(&loop, UV_RUN_ONCE))
		;
	printf("all %u reads done in %.3f s\n", done, (double)(uv_hrtime() - start) / 1e9);
	if (group) {
		struct smt_stackgroup *g;
		char line[SMT_STACKGROUP_SUMMARY_MAX + 1];
		if (smt_stackgroup_new(ranks, total, &g) < 0)
			return 1;
		smt_stackgroup_summary(g, -1, line, sizeof(line));
		printf("summary: %s\n", line);
		smt_stackgroup_free(g);
	}
	for (unsigned k = 0; k < total; k++) {
		free((char *)ranks[k].stack);
		free((char *)ranks[k].reason);
	}
	free(ranks);
	smt_stacks_close(reader);
	smt_reaper_close(reaper);
	if (kill_after >= 0 && !uv_is_closing((uv_handle_t *)&kill_timer))
		uv_close((uv_handle_t *)&kill_timer, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&loop) != 0) {
		fprintf(stderr, "stacks_read: handles left open on the loop\n");
		rc = 1;
	}
	free(pids);
	return done == total ? rc : 1;
}
