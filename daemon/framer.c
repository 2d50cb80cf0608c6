/* framer.c - a rank's byte stream into records (framer.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "framer.h"
#include "record.h"
#include "textesc.h"

void smt_framer_init(struct smt_framer *f, size_t piece_max)
{
	f->piece_max = piece_max ? piece_max : SMT_RECORD_MAX;
	/* A piece, and the byte after it that says where it can be cut. */
	smt_dynbuf_init(&f->part, f->piece_max + 1);
	f->started = 0;
}

void smt_framer_free(struct smt_framer *f)
{
	smt_dynbuf_free(&f->part);
}

static unsigned first_flag(const struct smt_framer *f)
{
	return f->started ? 0 : SMT_REC_FIRST;
}

long smt_framer_feed(struct smt_framer *f, const char *p, size_t n, smt_framer_emit emit,
		     void *arg)
{
	size_t used = 0;

	while (used < n) {
		const char *s = p + used;
		size_t left = n - used;
		const char *nl = memchr(s, '\n', left);
		size_t len = nl ? (size_t)(nl - s) : left;

		if (f->part.len == 0) {
			if (nl && len <= f->piece_max) {
				/* The common case: a whole line, no copy. */
				if (emit(arg, first_flag(f) | SMT_REC_LAST, s, len))
					break;
				f->started = 0;
				used += len + 1;
				continue;
			}
			if (len > f->piece_max) {
				size_t cut = smt_utf8_cut(s, len, f->piece_max);
				if (emit(arg, first_flag(f), s, cut))
					break;
				f->started = 1;
				used += cut;
				continue;
			}
			/* At most a piece and no newline yet: hold it. */
			if (smt_dynbuf_add(&f->part, s, len) < 0)
				return -ENOMEM;
			used += len;
			continue;
		}
		/* Bytes are held: the line goes on from there. */
		if (f->part.len + len > f->piece_max) {
			/* Fill the piece and one byte more, cut it as the bytes
			 * would be cut had they come in one write, and keep what
			 * follows the cut (the start of the next piece). */
			size_t take = f->piece_max + 1 - f->part.len, cut;

			if (smt_dynbuf_add(&f->part, s, take) < 0)
				return -ENOMEM;
			cut = smt_utf8_cut(f->part.p, f->part.len, f->piece_max);
			if (emit(arg, first_flag(f), f->part.p, cut)) {
				/* Not consumed after all. */
				f->part.len -= take;
				f->part.p[f->part.len] = '\0';
				break;
			}
			f->started = 1;
			smt_dynbuf_consume(&f->part, cut, 0);
			used += take;
			continue;
		}
		if (smt_dynbuf_add(&f->part, s, len) < 0)
			return -ENOMEM;
		if (!nl) {
			used += len;
			continue;
		}
		if (emit(arg, first_flag(f) | SMT_REC_LAST, f->part.p, f->part.len)) {
			f->part.len -= len;
			f->part.p[f->part.len] = '\0';
			break;
		}
		f->started = 0;
		smt_dynbuf_consume(&f->part, f->part.len, 1);
		used += len + 1;
	}
	return (long)used;
}

int smt_framer_eof(struct smt_framer *f, smt_framer_emit emit, void *arg)
{
	if (f->part.len == 0 && !f->started)
		return 0;
	if (emit(arg, first_flag(f) | SMT_REC_LAST, f->part.len ? f->part.p : "", f->part.len))
		return 1;
	f->started = 0;
	smt_dynbuf_consume(&f->part, f->part.len, 1);
	return 0;
}
