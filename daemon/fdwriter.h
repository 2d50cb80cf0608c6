/*
 * fdwriter.h - ordered writes to one descriptor that never block the loop.
 *
 * smtd's stdout may be a pipe nobody reads fast enough, a terminal, a file
 * or a socket; whatever it is, a slow reader must slow the ranks down
 * (back-pressure), never stall the loop that also serves signals, the
 * control API and the other hosts.  Bytes are appended to a queue and
 * written by libuv's thread pool (uv_fs_write), one write at a time, so the
 * descriptor's flags (shared with whoever else holds it) are never
 * changed; when someone else made it non-blocking, a full pipe is waited
 * for there too (poll), never taken for an error.  The queue has a soft cap: smt_fdwriter_room()
 * says whether the producer may add more; once the queue drained below half of it the ROOM callback
 * runs.  A write error (EPIPE, ENOSPC...) is logged once and later bytes are counted as dropped: a
 * dead stdout never stops the job.
 */
#ifndef SMT_FDWRITER_H
#define SMT_FDWRITER_H

#include <stdint.h>
#include <uv.h>

#include "dynbuf.h"

struct smt_fdwriter;

struct smt_fdwriter_stats {
	uint64_t written;    /* bytes written */
	uint64_t dropped;    /* bytes lost after a write error */
	int error;           /* the first write error (-errno) or 0 */
};

/*
 * A writer of FD on LOOP with a soft cap of CAP queued bytes (the queue may
 * pass it by what one producer step adds: at most CAP + SLACK).  NAME says
 * what FD is, for messages.  OWN: close FD when the writer is freed.
 */
int smt_fdwriter_new(uv_loop_t *loop, int fd, int own, const char *name, size_t cap, size_t slack,
		     struct smt_fdwriter **out);

/* The queue to append to; call smt_fdwriter_kick after appending. */
struct smt_dynbuf *smt_fdwriter_queue(struct smt_fdwriter *w);
void smt_fdwriter_kick(struct smt_fdwriter *w);

/* Nonzero while the queue is under its cap. */
int smt_fdwriter_room(const struct smt_fdwriter *w);
/* Bytes queued or in flight. */
size_t smt_fdwriter_pending(const struct smt_fdwriter *w);

/* CB(ARG) whenever room comes back after the queue was full. */
void smt_fdwriter_on_room(struct smt_fdwriter *w, void (*cb)(void *), void *arg);

/* CB(ARG) once every queued byte is written (or dropped); at once (from the
 * loop) when nothing is pending. */
void smt_fdwriter_on_drained(struct smt_fdwriter *w, void (*cb)(void *), void *arg);

void smt_fdwriter_stats(const struct smt_fdwriter *w, struct smt_fdwriter_stats *st);

/* How long the write in flight has been waiting, in ms (0: none): a reader
 * that does not read shows here. */
uint64_t smt_fdwriter_blocked_ms(const struct smt_fdwriter *w);

/* Free the writer once the write in flight (if any) returns; what is still
 * queued is dropped.  Nothing is called back after this. */
void smt_fdwriter_close(struct smt_fdwriter *w);

#endif
