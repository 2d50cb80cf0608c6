/*
 * record.h - one piece of a rank's output as it travels through smtd.
 *
 * A rank's bytes are cut into records by the framer (framer.h): a whole
 * line, or a piece of a line too long to hold.  A record carries no
 * newline; FIRST marks the record that starts a line and LAST the one that
 * ends it, so a short line is one record with both and a 10 MiB line is
 * many records, the first with FIRST, the last with LAST.  Every consumer
 * (the leader's stdout, the worker's outbox for the leader, the rank log
 * files, the kept lines) sees the records of one rank and stream in order.
 */
#ifndef SMT_RECORD_H
#define SMT_RECORD_H

#include <stddef.h>
#include <stdint.h>

enum smt_stream { SMT_STREAM_STDOUT = 0, SMT_STREAM_STDERR = 1 };

#define SMT_REC_FIRST 1u
#define SMT_REC_LAST  2u
#define SMT_REC_WHOLE (SMT_REC_FIRST | SMT_REC_LAST)
/* With LAST and no bytes: the merger ended the line early (merge.h); the
 * rank's own log file keeps the line whole, and the wire does not carry
 * the bit (the leader sees an empty last piece). */
#define SMT_REC_CUT 4u

/* The most bytes one record carries (pieces of longer lines are cut
 * between UTF-8 characters where the line has them). */
#define SMT_RECORD_MAX (64 * 1024)

struct smt_record {
	int rank;
	enum smt_stream stream;
	unsigned flags;
	int64_t ms;          /* when the bytes were read, ms since the epoch */
	const char *p;
	size_t n;
};

/* "stdout" or "stderr". */
static inline const char *smt_stream_name(enum smt_stream s)
{
	return s == SMT_STREAM_STDERR ? "stderr" : "stdout";
}

#endif
