/*
 * framer.h - cut one stream of a rank's bytes into records (record.h).
 *
 * Any bytes, any write size, any line length: a line is handed over as one
 * record when it ends within SMT_RECORD_MAX bytes, else as pieces of at
 * most that size (cut between UTF-8 characters where possible), so memory
 * per stream is one piece at most.  Nothing is lost or merged: the bytes of
 * the records of a line, concatenated, are the line.
 *
 * Back-pressure: the consumer may refuse a record (EMIT returns nonzero);
 * the framer then stops, consuming nothing of that record, and
 * smt_framer_feed returns how many input bytes it did consume.  The caller
 * keeps the rest and feeds it again later, unchanged and in order.
 */
#ifndef SMT_FRAMER_H
#define SMT_FRAMER_H

#include <stddef.h>

#include "dynbuf.h"

/* A record's bytes and flags (SMT_REC_*): 0 taken, nonzero refused. */
typedef int (*smt_framer_emit)(void *arg, unsigned flags, const char *p, size_t n);

struct smt_framer {
	struct smt_dynbuf part;  /* the start of an unfinished line */
	size_t piece_max;
	int started;             /* a piece of the current line went out */
};

/* PIECE_MAX 0 means SMT_RECORD_MAX. */
void smt_framer_init(struct smt_framer *f, size_t piece_max);
void smt_framer_free(struct smt_framer *f);

/* Feed N bytes; returns how many were consumed (N unless a record was
 * refused), or -ENOMEM. */
long smt_framer_feed(struct smt_framer *f, const char *p, size_t n, smt_framer_emit emit,
		     void *arg);

/* The stream ended: an unfinished line goes out as its last record.
 * Returns 0, or 1 when that record was refused (call again later). */
int smt_framer_eof(struct smt_framer *f, smt_framer_emit emit, void *arg);

/* Bytes held for an unfinished line. */
static inline size_t smt_framer_held(const struct smt_framer *f) { return f->part.len; }

#endif
