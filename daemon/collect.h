/*
 * collect.h - the stacks of this host's ranks, collected now (smtd(8) Stalls).
 *
 * Two ways, one per purpose:
 *   LIVE  (POST /v1/stacks, smtctl stacks): the job goes on, so only a tool
 *         that reads a live process and lets it go may look (stacks.h: gdb
 *         with CPython's extension, eu-stack, gdb); a rank no installed tool
 *         can read is named with the reason.
 *   ABORT (a stalled job, which ends anyway): a Python rank started with
 *         PYTHONFAULTHANDLER=1 gets SIGABRT and writes every thread's
 *         traceback to its own stderr as it dies (pystack.h picks it out of
 *         the lines smtd reads); any other rank is read live, as above.
 *         With freeze_ms, those Python ranks are first stopped (SIGSTOP)
 *         and get their SIGABRT, then SIGCONT, only freeze_ms later: a
 *         job-wide collection reaches the hosts one after the other, and a
 *         rank that saw a peer on another host die would leave the place
 *         it was stuck in (an exception out of its all-reduce) before its
 *         own host began.  Stopped, it cannot see anything; the signal
 *         pending when it goes on is handled before any of its code runs.
 * Every stack gets its frames' source lines read here, on the rank's host
 * (the leader may not have the files), and, in ABORT mode, is written to
 * ROOT/output/data/stacks/rank-N.txt - never through a link.
 *
 * The result is one JSON array, once, within the time limit: {"rank",
 * "host", "stack" (or null), "reason" (when null), "tool", "quiet_s"} per
 * rank, what could not be read by then with the reason why.
 */
#ifndef SMT_COLLECT_H
#define SMT_COLLECT_H

#include <jansson.h>
#include <sys/types.h>
#include <uv.h>

#include "reaper.h"

enum smt_collect_mode { SMT_COLLECT_LIVE = 0, SMT_COLLECT_ABORT };

/* One rank to look at. */
struct smt_collect_target {
	int rank;
	pid_t pid;              /* its program; 0: it never ran */
	int pidfd;              /* to signal it safely; -1: none */
	int faulthandler;       /* started with PYTHONFAULTHANDLER=1 */
	double quiet_s;         /* seconds since its last line; < 0 none */
	int ended;              /* it has ended already */
};

struct smt_collect;

/* The result: an array (borrowed during the call). */
typedef void (*smt_collect_cb)(void *arg, json_t *ranks);

struct smt_collect_config {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	const char *host;
	const char *root;       /* ROOT (ABORT: where stacks/ go); NULL: not written */
	const char *subdir;     /* under stacks/ (one name: "attempt-1"); NULL: none */
	enum smt_collect_mode mode;
	unsigned timeout_ms;    /* after the freeze */
	unsigned freeze_ms;     /* ABORT: stopped this long first; 0: none */
	char *const *envp;      /* the tools' environment (PATH); NULL: smtd's */
};

/* Start for N targets (copied).  CB runs once, from the loop.  0 or -errno
 * (no callback then). */
int smt_collect_start(const struct smt_collect_config *cfg, const struct smt_collect_target *t,
		      size_t n, smt_collect_cb cb, void *arg, struct smt_collect **out);

/* ABORT: a line of RANK's stderr, and the end of its output (the dump is
 * whole then). */
void smt_collect_line(struct smt_collect *c, int rank, const char *line, size_t len);
void smt_collect_output_ended(struct smt_collect *c, int rank);

/* Free: after the callback, or before it to stop (no callback then).
 * NULL is fine. */
void smt_collect_cancel(struct smt_collect *c);

/* Whether PID runs a Python interpreter (its executable's name). */
int smt_collect_is_python(pid_t pid);

#endif
