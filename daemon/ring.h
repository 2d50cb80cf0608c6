/*
 * ring.h - the last lines of something, bounded in lines and in bytes.
 *
 * Kept lines serve GET /v1/logs, the failure report (a rank's last error
 * lines) and mpirun's messages.  A ring holds at most MAX_LINES lines and
 * CAP bytes; the oldest lines go first.  A line longer than KEEP_MAX is kept
 * by its first KEEP_MAX bytes and marked truncated.  Memory is allocated at
 * the first push, at most MAX_LINES entries and CAP bytes.
 */
#ifndef SMT_RING_H
#define SMT_RING_H

#include <stddef.h>
#include <stdint.h>

struct smt_ring_entry {
	uint64_t pos;
	uint32_t len;
	int32_t rank;
	uint8_t stream;
	uint8_t truncated;
	int64_t ms;
};

struct smt_ring {
	size_t max_lines, cap;
	size_t head, count;
	uint64_t wpos;
	struct smt_ring_entry *e;
	char *bytes;
};

void smt_ring_init(struct smt_ring *r, size_t max_lines, size_t cap);
void smt_ring_free(struct smt_ring *r);
void smt_ring_push(struct smt_ring *r, const char *p, size_t n, int truncated, int rank,
		   int stream, int64_t ms);

/* Visit lines oldest first; a nonzero return of CB stops and is returned.
 * LINE is valid only during the call.  -ENOMEM when a wrapped line could not
 * be copied. */
typedef int (*smt_ring_cb)(void *arg, const struct smt_ring_entry *e, const char *line);
int smt_ring_foreach(const struct smt_ring *r, size_t first, smt_ring_cb cb, void *arg);

/* The index (0 = oldest) from which the last TAIL lines of RANK (-1: any)
 * begin. */
size_t smt_ring_tail_start(const struct smt_ring *r, size_t tail, int rank);

#endif
