/*
 * stackgroup.h - every rank's stack, grouped, and the odd rank(s) named.
 *
 * Input: for each rank its number, host, stack text (any format of
 * stackparse.h) or the one-line reason it could not be read, and the
 * seconds since its last output line.  Stacks are compared by their main
 * thread only (stackparse.h says which thread that is): background threads
 * (a data loader, gloo's workers) differ between healthy ranks in count and
 * timing, and the main thread is where a training loop stops.  A frame
 * compares by function, file and line for Python frames, by symbol (without
 * address, arguments, version or clone suffix) for native ones, so that
 * addresses, thread ids, PIDs and argument values never split a group.
 *
 * The majority is the one largest group, when it is strictly larger than
 * every other.  The odd ranks are the ranks outside it with a readable
 * stack.  When there is none (all stacks agree, two groups tie, or no stack
 * could be read), the odd rank is the one that went quiet first: the
 * largest seconds since its last progress line (ranks within 1 ms of it
 * all count), if it stopped at least 1 s before every other rank whose
 * last line is known.  Otherwise no rank is odd: every rank stopped at
 * once (a job whose ranks all wait for the same thing), or it is the only
 * rank that ever wrote.  A job of one rank names that rank.
 *
 * A rank's position is its main thread's innermost meaningful frame:
 *  - Python: the innermost frame outside the interpreter's and installed
 *    packages' files (site-packages, dist-packages, lib/pythonX.Y,
 *    "<frozen ...>"), else the innermost one; named by the function it calls
 *    on that line when the source line is there ("time.sleep (train.py:88)"
 *    from "time.sleep(3600)"), else by the frame's function ("step
 *    (train.py:88)");
 *  - native: the first named frame that is not a libc/pthread/syscall wait
 *    wrapper (smt_frame_is_wait_wrapper), else the innermost named one,
 *    "func (file.c:12)" when gdb knew the line.
 *
 * Text out is valid UTF-8 (an invalid byte becomes '?', a control byte a
 * space) and bounded.  Pure logic.
 */
#ifndef SMT_STACKGROUP_H
#define SMT_STACKGROUP_H

#include <stddef.h>

#include <jansson.h>

/* SageMaker shows the failure file's first 1024 bytes; line 1 stays within. */
#define SMT_STACKGROUP_SUMMARY_MAX 1000

struct smt_rank_stack {
	int rank;
	const char *host;   /* NULL: unknown */
	const char *stack;  /* the stack text; NULL when it could not be read */
	const char *reason; /* why not, one line (stack == NULL); NULL: "unknown" */
	double quiet_s;     /* seconds since the rank's last progress line (any line
			       without --progress-pattern); < 0 unknown */
};

struct smt_stackgroup;

/* Group N ranks (copied: the caller's strings may go).  0 or -ENOMEM/-EINVAL. */
int smt_stackgroup_new(const struct smt_rank_stack *ranks, size_t n, struct smt_stackgroup **out);
void smt_stackgroup_free(struct smt_stackgroup *g);

/*
 * The failure file's first line, without newline, at most
 * SMT_STACKGROUP_SUMMARY_MAX bytes, into BUF (SIZE bytes, at least 1001 to
 * get it whole).  STALL_S >= 0 leads with "Stalled: no progress for S s; ".
 * For example:
 *   Stalled: no progress for 600 s; rank 5 on algo-3 is in time.sleep (train.py:88) while 63 ranks
 * wait in dist.all_reduce (train.py:40) Stalled: no progress for 600 s; rank 3 on algo-2 is in
 * time.sleep (train.py:88), rank 7 on algo-4 is in load (data.py:12) while 62 ranks wait in ...
 *   Stalled: no progress for 600 s; ranks 3, 7 on algo-2, algo-4 are in time.sleep (train.py:88)
 * while 62 ranks wait in ... Stalled: no progress for 600 s; rank 5 on algo-3 went quiet first (no
 * progress for 640 s); all 64 ranks are in dist.all_reduce (train.py:40) Stalled: no progress for
 * 600 s; rank 5 on algo-3 went quiet first (no progress for 640 s); no stack could be read: ptrace
 * ... At most 3 odd groups and 8 ranks and 4 hosts per list are named ("and N more").  Returns the
 * length written.
 */
size_t smt_stackgroup_summary(const struct smt_stackgroup *g, double stall_s, char *buf,
			      size_t size);

/*
 * The rest of the failure file (and the text of POST /v1/stacks): each
 * distinct stack once, odd groups first, then the majority and the others,
 * each under a line naming its ranks by host and its position, then the
 * ranks whose stack could not be read, by reason.  At most MAX bytes
 * (whole stacks are cut at a line with "[... N more lines]"; groups that do
 * not fit are counted).  *OUT is malloc'ed, NUL-terminated.  0 or -ENOMEM.
 */
int smt_stackgroup_details(const struct smt_stackgroup *g, size_t max, char **out);

/*
 * The same as JSON, for POST /v1/stacks:
 *   {"ranks": N, "odd": [5], "quiet_first": [5],
 *    "groups": [{"ranks": [5], "hosts": ["algo-3"], "position": "...",
 *                "majority": false, "odd": true, "stack": "..."}],
 *    "unreadable": [{"rank": 9, "host": "algo-3", "reason": "..."}]}
 * "stack" is the text of the group's first rank, whole.  NULL on ENOMEM.
 */
json_t *smt_stackgroup_json(const struct smt_stackgroup *g);

/* The odd ranks (rank numbers), in rank order; *N gets their count. */
const int *smt_stackgroup_odd(const struct smt_stackgroup *g, size_t *n);

/*
 * The position of a stack text as described above, into BUF; "" when the
 * text has no frame.  Exposed for smtctl and the tests.
 */
char *smt_stack_position(const char *text, size_t len, char *buf, size_t size);

#endif
