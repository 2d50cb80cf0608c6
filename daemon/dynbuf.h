/*
 * dynbuf.h - a growable byte buffer with a cap, after curl's dynbuf.
 *
 * The one growable buffer of smtd: every place that accumulates bytes
 * (output queues, request bodies, rendered answers) takes one of these, and
 * the cap it is given is the most that buffer will ever hold.  A failed add
 * (the cap, or out of memory) leaves the buffer as it was, so the caller
 * decides what a full buffer means: wait (back-pressure), refuse (413), or
 * cut.  The contents are always NUL-terminated, so text can be read in
 * place; the NUL does not count in the length.
 */
#ifndef SMT_DYNBUF_H
#define SMT_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>

struct smt_dynbuf {
	char *p;
	size_t len;
	size_t alloc;
	size_t cap;
};

/* An empty buffer that will never hold more than CAP bytes.  Nothing is
 * allocated until the first add. */
void smt_dynbuf_init(struct smt_dynbuf *b, size_t cap);
void smt_dynbuf_free(struct smt_dynbuf *b);

/* Append; 0, -ENOBUFS when the cap would be passed, -ENOMEM.  The result
 * must be looked at: a dropped piece is a line cut short or a body half
 * sent. */
int smt_dynbuf_add(struct smt_dynbuf *b, const void *p, size_t n)
	__attribute__((warn_unused_result));
int smt_dynbuf_addstr(struct smt_dynbuf *b, const char *s)
	__attribute__((warn_unused_result));
int smt_dynbuf_addf(struct smt_dynbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), warn_unused_result));
int smt_dynbuf_vaddf(struct smt_dynbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0), warn_unused_result));

/* Room for N more bytes at the end (returned, or NULL as add fails); the
 * caller writes at most N and then calls smt_dynbuf_commit with how many. */
char *smt_dynbuf_reserve(struct smt_dynbuf *b, size_t n) __attribute__((warn_unused_result));
void smt_dynbuf_commit(struct smt_dynbuf *b, size_t n);

/* Drop the first N bytes (all when N >= len).  The allocation is kept, or
 * given back when SHRINK and it is larger than a small default. */
void smt_dynbuf_consume(struct smt_dynbuf *b, size_t n, int shrink);
void smt_dynbuf_reset(struct smt_dynbuf *b);

/* Hand the bytes over (malloc'ed, NUL-terminated; the caller frees them) and
 * leave the buffer empty.  NULL when the buffer is empty. */
char *smt_dynbuf_take(struct smt_dynbuf *b, size_t *len);

static inline size_t smt_dynbuf_len(const struct smt_dynbuf *b) { return b->len; }
static inline const char *smt_dynbuf_ptr(const struct smt_dynbuf *b) { return b->len ? b->p : ""; }
/* Bytes that can still be added before the cap. */
static inline size_t smt_dynbuf_room(const struct smt_dynbuf *b) { return b->cap - b->len; }

#endif
