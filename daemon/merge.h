/*
 * merge.h - the records of many sources into one output, in order per
 * source and, in text mode, line by line.
 *
 * A source is one stream of one rank read on this host, or one worker's
 * batch of records on the leader.  Sources offer records one at a time;
 * the merger passes a record to the sink (the leader's stdout, a worker's
 * outbox for the leader) or refuses it, and then resumes the source once it
 * can take more: that is the back-pressure that slows a rank down instead
 * of growing memory.
 *
 * Line-atomic (text mode): once a source has handed over the first piece
 * of a line that is not finished (SMT_REC_FIRST without SMT_REC_LAST), only
 * that source is taken until the line's last piece, so a line is never
 * interleaved with another, whatever its length.  A worker's outbox is
 * written the same way, so the records of one worker's batch that follow
 * such a piece are the rest of that line.  JSON mode needs no such rule:
 * every record is an object of its own.
 *
 * The one exception, so that the rule can never deadlock a job: a line
 * whose source gave no piece for CUT_MS while other sources wait (time
 * the sink was full does not count: the piece could not have been taken)
 * is ended there (an empty last piece goes to the sink), and the rest of
 * it, when it comes, starts a line of its own (its first piece is marked
 * SMT_REC_FIRST, so the text format tags it again).  A rank in a
 * collective with half a line written (a progress bar drawn with \r) would
 * otherwise wait for ranks that wait, in write(), for its newline.
 *
 * Resumes run from the loop (an idle handle), never from inside an offer.
 */
#ifndef SMT_MERGE_H
#define SMT_MERGE_H

#include <sys/queue.h>
#include <uv.h>

#include "record.h"

struct smt_merge;

/* Embedded in the source's own struct; only RESUME is the source's to set. */
struct smt_merge_src {
	void (*resume)(struct smt_merge_src *src);
	TAILQ_ENTRY(smt_merge_src) wait_link;
	int waiting;
	int cut;      /* its line was ended for it: the next piece is tagged */
};

/* By default, a line in progress may keep others waiting this long
 * without a piece. */
#define SMT_MERGE_CUT_MS 5000

struct smt_merge_sink {
	/* Nonzero while PUT may be called. */
	int (*room)(void *arg);
	/* Take R (HOST is the rank's host name). */
	void (*put)(void *arg, const struct smt_record *r, const char *host);
};

/* LINE_ATOMIC: the text rule above, with CUT_MS (0: SMT_MERGE_CUT_MS). */
int smt_merge_new(uv_loop_t *loop, int line_atomic, unsigned cut_ms,
		  const struct smt_merge_sink *sink, void *arg, struct smt_merge **out);

/* Offer R of SRC: 0 taken, -EAGAIN refused (SRC->resume runs later). */
int smt_merge_offer(struct smt_merge *m, struct smt_merge_src *src, const struct smt_record *r,
		    const char *host);

/* Whether an offer from SRC would be taken now. */
int smt_merge_can_take(const struct smt_merge *m, const struct smt_merge_src *src);

/* The sink has room again: resume the sources that wait. */
void smt_merge_wake(struct smt_merge *m);

/* Resume SRC from the loop, after the sources that wait already, as if it
 * had been refused: for a source that has something new to offer but must
 * not offer it from where it is (its caller expects no callback). */
void smt_merge_defer(struct smt_merge *m, struct smt_merge_src *src);

/* SRC ends (it will offer nothing more): its lock and its wait go.  A line
 * it left unfinished stays so; the sink's caller ends it if it must. */
void smt_merge_forget(struct smt_merge *m, struct smt_merge_src *src);

/* The source holding the line lock, or NULL. */
struct smt_merge_src *smt_merge_locked_by(const struct smt_merge *m);

void smt_merge_free(struct smt_merge *m);

#endif
