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
 * A line in progress holds the others back only while it goes on: when
 * its source has offered nothing for SMT_MERGE_STALL_MS while others wait
 * (its writer paused in the middle of a long line - a progress bar, or a
 * rank that went on to wait for the very ranks held back), the line is
 * cut: the sink's CUT ends it where it is, and the source's next record
 * starts a line of its own (it is passed on with SMT_REC_FIRST).  Without
 * the cut a rank waiting in a collective with an unfinished line would
 * hang the whole job.
 *
 * Resumes run from the loop (an idle handle), never from inside an offer.
 */
#ifndef SMT_MERGE_H
#define SMT_MERGE_H

#include <uv.h>

#include "record.h"

struct smt_merge;

/* How long an unfinished line may hold the others back with nothing new. */
#define SMT_MERGE_STALL_MS 5000

/* Embedded in the source's own struct; only RESUME is the source's to set. */
struct smt_merge_src {
	void (*resume)(struct smt_merge_src *src);
	struct smt_merge_src *next_waiting;
	int waiting;
	int cut;                 /* its line was cut: the next record starts one */
};

struct smt_merge_sink {
	/* Nonzero while PUT may be called. */
	int (*room)(void *arg);
	/* Take R (HOST is the rank's host name). */
	void (*put)(void *arg, const struct smt_record *r, const char *host);
	/* End the unfinished line of RANK's STREAM (on HOST) where it is: the
	 * merger cut it.  Called only when PUT may be called.  NULL: lines are
	 * never cut. */
	void (*cut)(void *arg, int rank, enum smt_stream stream, const char *host);
};

int smt_merge_new(uv_loop_t *loop, int line_atomic, const struct smt_merge_sink *sink,
		  void *arg, struct smt_merge **out);

/* Offer R of SRC: 0 taken, -EAGAIN refused (SRC->resume runs later). */
int smt_merge_offer(struct smt_merge *m, struct smt_merge_src *src, const struct smt_record *r,
		    const char *host);

/* Whether an offer from SRC would be taken now. */
int smt_merge_can_take(const struct smt_merge *m, const struct smt_merge_src *src);

/* The sink has room again: resume the sources that wait. */
void smt_merge_wake(struct smt_merge *m);

/* SRC ends (it will offer nothing more): its lock and its wait go.  A line
 * it left unfinished stays so; the sink's caller ends it if it must. */
void smt_merge_forget(struct smt_merge *m, struct smt_merge_src *src);

/* The source holding the line lock, or NULL. */
struct smt_merge_src *smt_merge_locked_by(const struct smt_merge *m);

void smt_merge_free(struct smt_merge *m);

#endif
