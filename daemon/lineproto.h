/*
 * lineproto.h - rank output records on the wire between a worker and the
 * leader (the body of GET /v1/lines, smtd(8) OUTPUT, Roles).
 *
 * Each record is an ASCII header line and its bytes:
 *
 *     RANK STREAM FLAGS MS LEN\n<LEN bytes>
 *
 * STREAM 0 stdout, 1 stderr; FLAGS the SMT_REC_* bits; MS the time the
 * worker read the bytes.  Length-prefixed, so the bytes are any bytes (no
 * escaping, no newline at the end).  RANK -1 is the worker's end of output:
 * its bytes are a JSON object with the final state of its local job.
 */
#ifndef SMT_LINEPROTO_H
#define SMT_LINEPROTO_H

#include <stddef.h>

#include "dynbuf.h"
#include "record.h"

/* The longest header. */
#define SMT_LINEPROTO_HEADER_MAX 64
/* The rank of the end-of-output record. */
#define SMT_LINEPROTO_EOF_RANK (-1)

/* Append R to B: 0 or the dynbuf error (nothing appended then). */
int smt_lineproto_encode(struct smt_dynbuf *b, const struct smt_record *r);

/*
 * Read the record at the start of P (N bytes): 1 and *R (pointing into P)
 * and *USED, 0 when the record is not complete yet, -EINVAL when the bytes
 * are not a record (the channel is corrupt: drop it).
 */
int smt_lineproto_decode(const char *p, size_t n, struct smt_record *r, size_t *used);

#endif
