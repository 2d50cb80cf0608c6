/* ring.c - the last lines, bounded (ring.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

void smt_ring_init(struct smt_ring *r, size_t max_lines, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->max_lines = max_lines;
	r->cap = cap;
}

void smt_ring_free(struct smt_ring *r)
{
	free(r->e);
	free(r->bytes);
	r->e = NULL;
	r->bytes = NULL;
	r->count = r->head = 0;
}

void smt_ring_push(struct smt_ring *r, const char *p, size_t n, int truncated, int rank,
		   int stream, int64_t ms)
{
	struct smt_ring_entry *e;
	size_t off, first;

	if (!r->e) {
		r->e = calloc(r->max_lines, sizeof(*r->e));
		r->bytes = malloc(r->cap);
		if (!r->e || !r->bytes) {
			smt_ring_free(r);
			return;
		}
	}
	if (n > r->cap) {
		n = r->cap;
		truncated = 1;
	}
	while (r->count && (r->count == r->max_lines || r->wpos + n - r->e[r->head].pos > r->cap)) {
		r->head = (r->head + 1) % r->max_lines;
		r->count--;
	}
	e = &r->e[(r->head + r->count) % r->max_lines];
	e->pos = r->wpos;
	e->len = (uint32_t)n;
	e->rank = rank;
	e->stream = (uint8_t)stream;
	e->truncated = (uint8_t)truncated;
	e->ms = ms;
	r->count++;
	off = (size_t)(r->wpos % r->cap);
	first = r->cap - off < n ? r->cap - off : n;
	memcpy(r->bytes + off, p, first);
	memcpy(r->bytes, p + first, n - first);
	r->wpos += n;
}

int smt_ring_foreach(const struct smt_ring *r, size_t first, smt_ring_cb cb, void *arg)
{
	char *tmp = NULL;
	int ret = 0;

	for (size_t i = first; i < r->count && !ret; i++) {
		const struct smt_ring_entry *e = &r->e[(r->head + i) % r->max_lines];
		size_t off = (size_t)(e->pos % r->cap);
		const char *line;

		if (off + e->len <= r->cap) {
			line = r->bytes + off;
		} else {
			size_t part = r->cap - off;
			if (!tmp && !(tmp = malloc(r->cap)))
				return -ENOMEM;
			memcpy(tmp, r->bytes + off, part);
			memcpy(tmp + part, r->bytes, e->len - part);
			line = tmp;
		}
		ret = cb(arg, e, line);
	}
	free(tmp);
	return ret;
}

size_t smt_ring_tail_start(const struct smt_ring *r, size_t tail, int rank)
{
	size_t i = r->count, found = 0;

	while (i > 0 && found < tail) {
		const struct smt_ring_entry *e = &r->e[(r->head + i - 1) % r->max_lines];

		if (rank < 0 || e->rank == rank)
			found++;
		i--;
	}
	return i;
}
