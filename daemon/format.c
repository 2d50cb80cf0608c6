/* format.c - a rank's line on the leader's stdout (format.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "format.h"
#include "log.h"
#include "smt_proto.h"
#include "textesc.h"

static size_t put_int(char *out, int v)
{
	char tmp[16];
	size_t n = 0, o = 0;
	unsigned u = v < 0 ? (unsigned)-(long)v : (unsigned)v;

	if (v < 0)
		out[o++] = '-';
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (n)
		out[o++] = tmp[--n];
	return o;
}

size_t smt_format_tag(char *out, int rank, const char *host, enum smt_stream s)
{
	static const char head[] = "[1,mpirank:";
	size_t o = sizeof(head) - 1, hl = strnlen(host, 253);
	const char *tail = s == SMT_STREAM_STDERR ? "]<stderr>: " : "]<stdout>: ";

	memcpy(out, head, o);
	o += put_int(out + o, rank);
	out[o++] = ',';
	memcpy(out + o, host, hl);
	o += hl;
	memcpy(out + o, tail, 11);
	return o + 11;
}

static int text(struct smt_dynbuf *b, const struct smt_record *r, const char *host)
{
	char tag[320];
	size_t tl = (r->flags & SMT_REC_FIRST) ? smt_format_tag(tag, r->rank, host, r->stream) : 0;
	size_t nl = (r->flags & SMT_REC_LAST) ? 1 : 0;
	char *w = smt_dynbuf_reserve(b, tl + r->n + nl);

	if (!w)
		return -ENOBUFS;
	memcpy(w, tag, tl);
	if (r->n)
		memcpy(w + tl, r->p, r->n);
	if (nl)
		w[tl + r->n] = '\n';
	smt_dynbuf_commit(b, tl + r->n + nl);
	return 0;
}

static int json(struct smt_dynbuf *b, const struct smt_record *r, const char *host,
		struct smt_format_clock *clk)
{
	size_t start = b->len;
	int invalid = 0, rc;
	char eh[SMT_JSON_ESCAPE_MAX(253) + 1];
	size_t hl = strnlen(host, 253);

	if (clk->ms != r->ms || !clk->text[0]) {
		smt_log_time((long long)r->ms, clk->text, sizeof(clk->text));
		clk->ms = r->ms;
	}
	eh[smt_json_escape(host, hl, eh, &invalid)] = '\0';
	invalid = 0;
	rc = smt_dynbuf_addf(b, "{\"" SMT_F_TIME "\":\"%s\",\"" SMT_F_RANK "\":%d,\"" SMT_F_HOST
			     "\":\"%s\",\"" SMT_F_STREAM "\":\"%s\",\"" SMT_F_LINE "\":\"",
			     clk->text, r->rank, eh, smt_stream_name(r->stream));
	if (rc == 0)
		rc = smt_json_escape_add(b, r->p, r->n, &invalid);
	if (rc == 0)
		rc = smt_dynbuf_add(b, "\"", 1);
	if (rc == 0 && invalid) {
		char *w;

		rc = smt_dynbuf_addstr(b, ",\"" SMT_F_LINE_B64 "\":\"");
		if (rc == 0 && !(w = smt_dynbuf_reserve(b, SMT_BASE64_LEN(r->n))))
			rc = -ENOBUFS;
		if (rc == 0) {
			smt_dynbuf_commit(b, smt_base64((const unsigned char *)r->p, r->n, w));
			rc = smt_dynbuf_add(b, "\"", 1);
		}
	}
	if (rc == 0 && !(r->flags & SMT_REC_LAST))
		rc = smt_dynbuf_addstr(b, ",\"" SMT_F_PARTIAL "\":true");
	if (rc == 0)
		rc = smt_dynbuf_add(b, "}\n", 2);
	if (rc < 0) {
		/* Nothing half-written stays behind. */
		b->len = start;
		if (b->p)
			b->p[start] = '\0';
	}
	return rc;
}

int smt_format_record(struct smt_dynbuf *b, enum smt_format fmt, const struct smt_record *r,
		      const char *host, struct smt_format_clock *clk)
{
	return fmt == SMT_FORMAT_JSON ? json(b, r, host, clk) : text(b, r, host);
}
