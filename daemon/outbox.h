/*
 * outbox.h - a worker's rank output waiting for the leader (smtd(8) OUTPUT, Roles).
 *
 * The worker's merged records, encoded as lineproto.h says, in one byte
 * stream numbered from 0.  The leader fetches from an offset (GET
 * /v1/lines?from=N): what lies before N is acknowledged and dropped, the
 * answer is whole records from N on.  A fetch that fails is simply made
 * again from the same offset, so nothing is lost when a channel breaks.
 * The outbox holds at most CAP bytes (plus one record): while it is full
 * the worker stops reading its ranks, which then wait in write().  Its last
 * record, once the local job has ended, is the end of output.
 */
#ifndef SMT_OUTBOX_H
#define SMT_OUTBOX_H

#include <stdint.h>

#include "dynbuf.h"
#include "record.h"

struct smt_outbox;

int smt_outbox_new(size_t cap, struct smt_outbox **out);
void smt_outbox_free(struct smt_outbox *ob);

/* Nonzero while there is room for another record. */
int smt_outbox_room(const struct smt_outbox *ob);
/* CB(ARG) when a fetch made room again in a full outbox (from inside
 * smt_outbox_fetch: CB must not touch the outbox). */
void smt_outbox_on_room(struct smt_outbox *ob, void (*cb)(void *), void *arg);
/* Append R: 0 or -ENOBUFS/-ENOMEM. */
int smt_outbox_put(struct smt_outbox *ob, const struct smt_record *r);
/* Append the end of output, with FINAL (a JSON text) as its bytes. */
int smt_outbox_end(struct smt_outbox *ob, const char *final, size_t len);
int smt_outbox_ended(const struct smt_outbox *ob);
/* Records may follow the end again (the job's next attempt): the offsets
 * go on from where they are, so a fetch past the end stays valid. */
void smt_outbox_reopen(struct smt_outbox *ob);

/*
 * The leader asks from offset FROM for at most MAX bytes.  Returns 0 with
 * *P, *LEN (whole records, possibly none yet), -ERANGE when FROM is not
 * between what was acknowledged and what was written.  Bytes before FROM
 * are dropped.  *DONE is set when the answer reaches the end of output.
 */
int smt_outbox_fetch(struct smt_outbox *ob, uint64_t from, size_t max, const char **p,
		     size_t *len, int *done);

/* Whether a fetch from FROM would answer at once (data or the end). */
int smt_outbox_ready(const struct smt_outbox *ob, uint64_t from);

/* Every byte was acknowledged (the end included). */
int smt_outbox_acked(const struct smt_outbox *ob);

/* The offset of the next byte written, and of the first not acknowledged. */
uint64_t smt_outbox_written(const struct smt_outbox *ob);
uint64_t smt_outbox_base(const struct smt_outbox *ob);

#endif
