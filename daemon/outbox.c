/* outbox.c - a worker's output for the leader's fetch (outbox.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "lineproto.h"
#include "outbox.h"

struct smt_outbox {
	struct smt_dynbuf data;  /* bytes from base on */
	uint64_t base;
	size_t cap;
	int ended;
	void (*room_cb)(void *);
	void *room_arg;
};

int smt_outbox_new(size_t cap, struct smt_outbox **out)
{
	struct smt_outbox *ob = calloc(1, sizeof(*ob));

	if (!ob)
		return -ENOMEM;
	ob->cap = cap;
	/* One record beyond the cap, and the end of output. */
	smt_dynbuf_init(&ob->data,
			cap + 2 * (SMT_RECORD_MAX + SMT_LINEPROTO_HEADER_MAX) + 1024 * 1024);
	*out = ob;
	return 0;
}

void smt_outbox_free(struct smt_outbox *ob)
{
	if (!ob)
		return;
	smt_dynbuf_free(&ob->data);
	free(ob);
}

int smt_outbox_room(const struct smt_outbox *ob)
{
	return !ob->ended && ob->data.len < ob->cap;
}

void smt_outbox_on_room(struct smt_outbox *ob, void (*cb)(void *), void *arg)
{
	ob->room_cb = cb;
	ob->room_arg = arg;
}

int smt_outbox_put(struct smt_outbox *ob, const struct smt_record *r)
{
	if (ob->ended)
		return -EPIPE;
	return smt_lineproto_encode(&ob->data, r);
}

int smt_outbox_end(struct smt_outbox *ob, const char *final, size_t len)
{
	struct smt_record r = {
		.rank = SMT_LINEPROTO_EOF_RANK, .flags = SMT_REC_WHOLE, .p = final, .n = len,
	};
	int rc;

	if (ob->ended)
		return 0;
	rc = smt_lineproto_encode(&ob->data, &r);
	if (rc == 0)
		ob->ended = 1;
	return rc;
}

int smt_outbox_ended(const struct smt_outbox *ob)
{
	return ob->ended;
}

void smt_outbox_reopen(struct smt_outbox *ob)
{
	ob->ended = 0;
}

int smt_outbox_fetch(struct smt_outbox *ob, uint64_t from, size_t max, const char **p,
		     size_t *len, int *done)
{
	size_t off, take = 0;
	int was_full = !smt_outbox_room(ob);

	if (from < ob->base || from > ob->base + ob->data.len)
		return -ERANGE;
	smt_dynbuf_consume(&ob->data, (size_t)(from - ob->base), 1);
	ob->base = from;
	/* The producer stopped when it was full: tell it to go on. */
	if (was_full && smt_outbox_room(ob) && ob->room_cb)
		ob->room_cb(ob->room_arg);
	off = 0;
	*done = 0;
	/* Whole records, at least one when there is one, within MAX. */
	while (off < ob->data.len) {
		struct smt_record r;
		size_t used;

		if (smt_lineproto_decode(ob->data.p + off, ob->data.len - off, &r, &used) != 1)
			break;
		if (take && take + used > max)
			break;
		take += used;
		off += used;
		if (r.rank == SMT_LINEPROTO_EOF_RANK) {
			*done = 1;
			break;
		}
	}
	*p = ob->data.p;
	*len = take;
	return 0;
}

int smt_outbox_ready(const struct smt_outbox *ob, uint64_t from)
{
	return from < ob->base + ob->data.len;
}

int smt_outbox_acked(const struct smt_outbox *ob)
{
	return ob->ended && ob->data.len == 0;
}

uint64_t smt_outbox_written(const struct smt_outbox *ob)
{
	return ob->base + ob->data.len;
}

uint64_t smt_outbox_base(const struct smt_outbox *ob)
{
	return ob->base;
}
