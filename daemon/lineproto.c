/* lineproto.c - records on the wire (lineproto.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lineproto.h"

int smt_lineproto_encode(struct smt_dynbuf *b, const struct smt_record *r)
{
	char head[SMT_LINEPROTO_HEADER_MAX];
	int hl = snprintf(head, sizeof(head), "%d %d %u %" PRId64 " %zu\n", r->rank, (int)r->stream,
			  r->flags & SMT_REC_WHOLE, r->ms, r->n);
	char *w;

	if (hl < 0 || (size_t)hl >= sizeof(head))
		return -EINVAL;
	w = smt_dynbuf_reserve(b, (size_t)hl + r->n);
	if (!w)
		return smt_dynbuf_room(b) < (size_t)hl + r->n ? -ENOBUFS : -ENOMEM;
	memcpy(w, head, (size_t)hl);
	if (r->n)
		memcpy(w + hl, r->p, r->n);
	smt_dynbuf_commit(b, (size_t)hl + r->n);
	return 0;
}

/* A decimal number (an optional '-' first when NEG) ending at a space or,
 * for the last field, at the newline. */
static int field(const char **pp, const char *end, char stop, int neg, long long *out)
{
	const char *p = *pp;
	int minus = 0, digits = 0;
	long long v = 0;

	if (neg && p < end && *p == '-') {
		minus = 1;
		p++;
	}
	while (p < end && *p >= '0' && *p <= '9') {
		if (v > (long long)1e17)
			return -EINVAL;
		v = v * 10 + (*p - '0');
		p++;
		digits++;
	}
	if (p == end)
		return 0;
	if (!digits || *p != stop)
		return -EINVAL;
	*out = minus ? -v : v;
	*pp = p + 1;
	return 1;
}

int smt_lineproto_decode(const char *p, size_t n, struct smt_record *r, size_t *used)
{
	const char *end = p + (n < SMT_LINEPROTO_HEADER_MAX ? n : SMT_LINEPROTO_HEADER_MAX);
	const char *q = p;
	long long rank, stream, flags, ms, len;
	int rc;

	if ((rc = field(&q, end, ' ', 1, &rank)) <= 0 ||
	    (rc = field(&q, end, ' ', 0, &stream)) <= 0 ||
	    (rc = field(&q, end, ' ', 0, &flags)) <= 0 || (rc = field(&q, end, ' ', 0, &ms)) <= 0 ||
	    (rc = field(&q, end, '\n', 0, &len)) <= 0) {
		if (rc == 0 && n >= SMT_LINEPROTO_HEADER_MAX)
			return -EINVAL;
		return rc;
	}
	if (rank < -1 || rank > 0x7fffffff || stream > 1 || flags > SMT_REC_WHOLE ||
	    len > 16 * 1024 * 1024)
		return -EINVAL;
	if ((size_t)(q - p) + (size_t)len > n)
		return 0;
	r->rank = (int)rank;
	r->stream = (enum smt_stream)stream;
	r->flags = (unsigned)flags;
	r->ms = ms;
	r->p = q;
	r->n = (size_t)len;
	*used = (size_t)(q - p) + (size_t)len;
	return 1;
}
