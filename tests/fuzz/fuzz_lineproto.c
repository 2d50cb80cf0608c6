/*
 * fuzz_lineproto.c - the leader reads whatever a worker's channel carried
 * (smt_lineproto_decode), and a worker's outbox answers whatever offsets
 * and sizes a leader asks for (smt_outbox_fetch).
 *
 * The first byte chooses the half.  Decoding: the rest is one body of
 * GET /v1/lines, decoded record by record as the leader does; every record
 * lies inside the body, and encoding it again gives a record that decodes
 * to the same fields.  The outbox: the rest is a script of puts, ends and
 * fetches from offsets near and far; every answer is -ERANGE exactly when
 * the offset is outside what is kept, and otherwise whole records (at
 * least one when there is one), the end of output only as the last.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lineproto.h"
#include "outbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) abort(); } while (0)

static void decode_body(const char *p, size_t n)
{
	size_t off = 0;
	struct smt_dynbuf b;

	smt_dynbuf_init(&b, (size_t)1 << 25);
	while (off < n) {
		struct smt_record r, again;
		size_t used = 0, used2 = 0;
		int rc = smt_lineproto_decode(p + off, n - off, &r, &used);

		CHECK(rc == 1 || rc == 0 || rc == -EINVAL);
		if (rc != 1)
			break;
		CHECK(used > 0 && used <= n - off);
		CHECK(r.p >= p + off && r.p + r.n == p + off + used);
		CHECK(r.rank >= -1 && (unsigned)r.stream <= 1 && r.flags <= SMT_REC_WHOLE);
		/* Touch every byte: an over-read shows here. */
		for (size_t i = 0; i < r.n; i++)
			CHECK(r.p[i] == p[off + used - r.n + i]);
		smt_dynbuf_reset(&b);
		CHECK(smt_lineproto_encode(&b, &r) == 0);
		CHECK(smt_lineproto_decode(b.p, b.len, &again, &used2) == 1);
		CHECK(used2 == b.len && again.rank == r.rank && again.stream == r.stream &&
		      again.flags == r.flags && again.ms == r.ms && again.n == r.n);
		CHECK(!r.n || memcmp(again.p, r.p, r.n) == 0);
		/* A record cut short is never an error. */
		CHECK(smt_lineproto_decode(b.p, b.len - 1, &again, &used2) == 0);
		off += used;
	}
	smt_dynbuf_free(&b);
}

/* One answer: whole records, the end of output only last. */
static void check_answer(const char *p, size_t len, int done)
{
	size_t off = 0;
	int saw_end = 0;

	while (off < len) {
		struct smt_record r;
		size_t used;

		CHECK(!saw_end);
		CHECK(smt_lineproto_decode(p + off, len - off, &r, &used) == 1);
		saw_end = r.rank == SMT_LINEPROTO_EOF_RANK;
		off += used;
	}
	CHECK(off == len);
	CHECK(saw_end == done);
}

static void outbox_script(const uint8_t *d, size_t n)
{
	struct smt_outbox *ob;
	size_t i = 0;
	uint64_t next = 0;     /* where the leader would fetch next */
	int synced = 1;        /* NEXT is a record boundary */

	CHECK(smt_outbox_new(4096, &ob) == 0);
	while (i < n) {
		uint8_t op = d[i++];
		size_t k = i < n ? d[i++] : 0;

		switch (op % 4) {
		case 0: case 1: {
			/* Put K bytes of the script (rank, stream, flags from OP). */
			struct smt_record r = {
				.rank = op >> 4, .stream = (enum smt_stream)((op >> 2) & 1),
				.flags = (op >> 3) & 1 ? SMT_REC_WHOLE : SMT_REC_FIRST,
				.ms = (int64_t)i, .p = (const char *)d + i,
				.n = k * 17 < n - i ? k * 17 : n - i,
			};
			int room = smt_outbox_room(ob), rc;

			if (!room && !smt_outbox_ended(ob))
				break;  /* the merger would not put it */
			rc = smt_outbox_put(ob, &r);
			CHECK(rc == 0 || (rc == -EPIPE && smt_outbox_ended(ob)));
			i += r.n;
			break;
		}
		case 2: {
			/* Fetch from the next offset, or from one K bytes off it,
			 * for at most K * 64 bytes. */
			uint64_t base = smt_outbox_base(ob), written = smt_outbox_written(ob);
			uint64_t from = op & 4 ? next : (op & 8 ? next + k : next - k);
			const char *p;
			size_t len;
			int done = 0, rc;

			if (op & 0x80)
				from = ((uint64_t)k << 56) | (uint64_t)op << 8 | k;
			rc = smt_outbox_fetch(ob, from, k * 64, &p, &len, &done);
			if (from < base || from > written) {
				CHECK(rc == -ERANGE);
				CHECK(smt_outbox_base(ob) == base);
				break;
			}
			CHECK(rc == 0);
			CHECK(smt_outbox_base(ob) == from);
			CHECK(len <= written - from);
			CHECK(smt_outbox_ready(ob, from) == (from < written));
			/* Only the leader's own offsets are record boundaries;
			 * past any other, the answers are only bounded. */
			if (from != next)
				synced = 0;
			if (synced) {
				check_answer(p, len, done);
				CHECK(len > 0 || from == written);
			}
			next = from + len;
			break;
		}
		case 3:
			CHECK(smt_outbox_end(ob, (const char *)d + i, k < n - i ? k : n - i) == 0);
			CHECK(smt_outbox_ended(ob) && !smt_outbox_room(ob));
			break;
		}
		CHECK(smt_outbox_acked(ob) == (smt_outbox_ended(ob) &&
					      smt_outbox_base(ob) == smt_outbox_written(ob)));
	}
	smt_outbox_free(ob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy;

	if (size < 1)
		return 0;
	/* An exact copy, so that reading past the input is caught. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (data[0] & 1)
		decode_body(copy, size - 1);
	else
		outbox_script((const uint8_t *)copy, size - 1);
	free(copy);
	return 0;
}
