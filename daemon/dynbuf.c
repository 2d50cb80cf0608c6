/* dynbuf.c - a growable byte buffer with a cap (dynbuf.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"

/* The first allocation, and what a shrinking consume gives back down to. */
#define SMALL 256

void smt_dynbuf_init(struct smt_dynbuf *b, size_t cap)
{
	b->p = NULL;
	b->len = b->alloc = 0;
	b->cap = cap;
}

void smt_dynbuf_free(struct smt_dynbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->alloc = 0;
}

/* Make room for N more bytes and the NUL. */
static int grow(struct smt_dynbuf *b, size_t n)
{
	size_t need, a;
	char *p;

	if (n > b->cap - b->len)
		return -ENOBUFS;
	need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	a = b->alloc ? b->alloc : SMALL;
	while (a < need)
		a = a > ((size_t)-1) / 2 ? need : a * 2;
	/* The cap bounds the allocation too (written so that a cap of
	 * SIZE_MAX, no cap, does not wrap around to 0). */
	if (a - 1 > b->cap)
		a = b->cap + 1;
	p = realloc(b->p, a);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->alloc = a;
	return 0;
}

int smt_dynbuf_add(struct smt_dynbuf *b, const void *p, size_t n)
{
	int rc = grow(b, n);

	if (rc < 0)
		return rc;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int smt_dynbuf_addstr(struct smt_dynbuf *b, const char *s)
{
	return smt_dynbuf_add(b, s, strlen(s));
}

int smt_dynbuf_vaddf(struct smt_dynbuf *b, const char *fmt, va_list ap)
{
	char small[256];
	va_list copy;
	int n, rc;

	va_copy(copy, ap);
	n = vsnprintf(small, sizeof(small), fmt, copy);
	va_end(copy);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return smt_dynbuf_add(b, small, (size_t)n);
	rc = grow(b, (size_t)n);
	if (rc < 0)
		return rc;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int smt_dynbuf_addf(struct smt_dynbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = smt_dynbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *smt_dynbuf_reserve(struct smt_dynbuf *b, size_t n)
{
	if (grow(b, n) < 0)
		return NULL;
	return b->p + b->len;
}

void smt_dynbuf_commit(struct smt_dynbuf *b, size_t n)
{
	b->len += n;
	b->p[b->len] = '\0';
}

void smt_dynbuf_consume(struct smt_dynbuf *b, size_t n, int shrink)
{
	if (n >= b->len) {
		b->len = 0;
	} else if (n) {
		memmove(b->p, b->p + n, b->len - n);
		b->len -= n;
	}
	if (b->p)
		b->p[b->len] = '\0';
	if (shrink && b->alloc > SMALL && b->len < SMALL) {
		char *p = realloc(b->p, SMALL);
		if (p) {
			b->p = p;
			b->alloc = SMALL;
		}
	}
}

void smt_dynbuf_reset(struct smt_dynbuf *b)
{
	smt_dynbuf_consume(b, b->len, 0);
}

char *smt_dynbuf_take(struct smt_dynbuf *b, size_t *len)
{
	char *p = b->len ? b->p : NULL;

	if (len)
		*len = b->len;
	if (!p)
		return NULL;
	b->p = NULL;
	b->len = b->alloc = 0;
	return p;
}
