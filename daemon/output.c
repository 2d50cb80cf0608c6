/*
 * output.c - rank lines: assembly, tagging, forwarding, keeping (output.h).
 *
 * Data path: mpirun's stdout goes through the xmlstream decoder, whose
 * callbacks hand each rank's bytes to rank_data(); a standalone program's
 * bytes go to rank_data() for rank 0 directly.  rank_data() cuts lines; a
 * finished line is written, tagged, to the output buffer (or, while another
 * line streams, to the hold buffer) and remembered in the rings.  Each feed
 * ends with one write() of the output buffer.
 *
 * Streaming (text mode only): a line that outgrows SMT_OUTPUT_LINE_CAP
 * takes the output over, its tag and bytes written as they come, until its
 * newline.  Only one line can own the output, so others' finished lines
 * queue in the hold buffer meanwhile.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "output.h"
#include "report.h"
#include "smt_proto.h"
#include "xmlstream.h"

/* Room in the output buffer beyond SMT_OUTPUT_BUF_CAP, so that escaping a
 * block or writing a tag never needs a flush in the middle. */
#define OUT_SLACK (64 * 1024)
/* JSON escaping works in input blocks of this size (6 bytes out per byte). */
#define ESC_BLOCK 4096
/* An idle partial-line buffer larger than this is given back. */
#define PART_KEEP 4096
/* mpirun's own lines longer than this are forwarded in pieces. */
#define MSG_LINE_MAX 4096
#define UNKNOWN_HOST "unknown"

enum msg_src { MSG_XML_TEXT, MSG_XML_STDOUT, MSG_XML_STDERR, MSG_STDERR_FD, MSG_COUNT };

struct buf {
	char *p;
	size_t len, cap;
};

struct ring_entry {
	uint64_t pos;
	uint32_t len;
	int32_t rank;
	uint8_t stream;
	uint8_t truncated;
	int64_t ms;
};

/* Last lines: entries in a circular array, their bytes in a circular byte
 * buffer; both allocated at the first push. */
struct ring {
	size_t max_lines, cap;
	size_t head, count;
	uint64_t wpos;
	struct ring_entry *e;
	char *bytes;
};

struct part {
	struct buf b;
};

struct rank {
	int seen;
	const char *host;        /* interned, or NULL */
	int pid;
	struct part part[2];
	char *tag[2];            /* text: "[1,mpirank:R,H]<stdout>: "; json: fields */
	size_t taglen[2];
	struct ring tail;        /* stderr */
	char *first_error;
	size_t first_error_len;
};

struct msgline {
	size_t len;
	char buf[MSG_LINE_MAX];
};

struct smt_output {
	int out_fd, msg_fd;
	enum smt_output_format format;
	char *current_host;
	struct smt_xml *xml;

	struct rank **ranks;
	int nslots;              /* allocated entries of ranks */
	int count;               /* highest rank seen + 1 */
	char **hosts;            /* interned host names */
	size_t nhosts;

	struct buf out;
	struct buf held;
	struct buf msg;
	size_t partial_bytes;    /* sum of every part's len */

	/* The streaming line (text mode), or stream_rank -1. */
	int stream_rank;
	int stream_stream;
	size_t stream_keep_len;
	uint64_t stream_total;
	char stream_keep[SMT_OUTPUT_KEEP_LINE_MAX];

	struct msgline msgs[MSG_COUNT];
	struct ring log;
	struct ring msgring;

	int64_t now_ms;
	char now_str[64];
	int64_t now_str_ms;

	struct smt_output_stats st;
	int error_pending;
};

/* ---- small helpers ---------------------------------------------------- */

static int buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_put(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static void buf_release(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void format_time(int64_t ms, char *out, size_t size)
{
	smt_log_time((long long)ms, out, size);
}

static const char *time_str(struct smt_output *o)
{
	if (o->now_str_ms != o->now_ms) {
		format_time(o->now_ms, o->now_str, sizeof(o->now_str));
		o->now_str_ms = o->now_ms;
	}
	return o->now_str;
}

/* Where to cut P (N > MAX bytes) at or before MAX without splitting a UTF-8
 * character; MAX when the bytes there are no valid character anyway. */
static size_t utf8_cut(const char *p, size_t n, size_t max)
{
	size_t c = max;

	(void)n;
	for (int i = 0; i < 3 && c > 0; i++) {
		if (((unsigned char)p[c] & 0xc0) != 0x80)
			break;
		c--;
	}
	if (c == 0 || ((unsigned char)p[c] & 0xc0) == 0x80)
		return max;
	return c;
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of P into OUT, which has room for 4 * ((N + 2) / 3) bytes. */
static size_t base64(const unsigned char *p, size_t n, char *out)
{
	size_t o = 0, i = 0;

	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = b64chars[(v >> 6) & 63];
		out[o++] = b64chars[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

/* JSON-escape P into OUT (room for 6 * N bytes).  Invalid UTF-8 bytes
 * become U+FFFD; *INVALID is set when there was one.  Returns the length. */
static size_t json_escape(const char *p, size_t n, char *out, int *invalid)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)p;
	size_t o = 0, i = 0;

	while (i < n) {
		unsigned char c = u[i];
		size_t k;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			out[o++] = (char)c;
			i++;
			continue;
		}
		if (c < 0x80) {
			out[o++] = '\\';
			switch (c) {
			case '"': out[o++] = '"'; break;
			case '\\': out[o++] = '\\'; break;
			case '\n': out[o++] = 'n'; break;
			case '\t': out[o++] = 't'; break;
			case '\r': out[o++] = 'r'; break;
			default:
				out[o++] = 'u';
				out[o++] = '0';
				out[o++] = '0';
				out[o++] = hex[c >> 4];
				out[o++] = hex[c & 15];
			}
			i++;
			continue;
		}
		k = smt_report_utf8_len(u + i, n - i);
		if (k == 0) {
			*invalid = 1;
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, u + i, k);
		o += k;
		i += k;
	}
	return o;
}

/* A valid UTF-8 copy of P (invalid bytes as U+FFFD), NUL-terminated. */
static char *utf8_sanitize(const char *p, size_t n, size_t *outlen, int *invalid)
{
	char *s = malloc(3 * n + 1);
	size_t o = 0, i = 0;

	if (!s)
		return NULL;
	while (i < n) {
		size_t k = smt_report_utf8_len((const unsigned char *)p + i, n - i);

		if (k == 0) {
			*invalid = 1;
			memcpy(s + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(s + o, p + i, k);
			o += k;
			i += k;
		}
	}
	s[o] = '\0';
	*outlen = o;
	return s;
}

/* ---- rings of kept lines -------------------------------------------- */

static void ring_init(struct ring *r, size_t max_lines, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->max_lines = max_lines;
	r->cap = cap;
}

static void ring_free(struct ring *r)
{
	free(r->e);
	free(r->bytes);
	r->e = NULL;
	r->bytes = NULL;
	r->count = 0;
}

static void ring_push(struct ring *r, const char *p, size_t n, int truncated,
		      int rank, int stream, int64_t ms)
{
	struct ring_entry *e;
	size_t off, first;

	if (!r->e) {
		r->e = calloc(r->max_lines, sizeof(*r->e));
		r->bytes = malloc(r->cap);
		if (!r->e || !r->bytes) {
			ring_free(r);
			return;
		}
	}
	if (n > r->cap) {
		n = r->cap;
		truncated = 1;
	}
	while (r->count && (r->count == r->max_lines ||
			    r->wpos + n - r->e[r->head].pos > r->cap)) {
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

/* Entry I (0 = oldest); its bytes contiguous, copied into TMP (room for the
 * ring's cap) when they wrap. */
static const struct ring_entry *ring_get(const struct ring *r, size_t i,
					 char *tmp, const char **bytes)
{
	const struct ring_entry *e = &r->e[(r->head + i) % r->max_lines];
	size_t off = (size_t)(e->pos % r->cap);

	if (off + e->len <= r->cap) {
		*bytes = r->bytes + off;
	} else {
		size_t first = r->cap - off;

		memcpy(tmp, r->bytes + off, first);
		memcpy(tmp + first, r->bytes, e->len - first);
		*bytes = tmp;
	}
	return e;
}

static int ring_foreach(const struct ring *r, smt_output_line_cb cb, void *arg)
{
	char *tmp;
	int ret = 0;

	if (!r->count)
		return 0;
	tmp = malloc(r->cap);
	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < r->count && !ret; i++) {
		const char *bytes;
		const struct ring_entry *e = ring_get(r, i, tmp, &bytes);

		ret = cb(arg, bytes, e->len, e->truncated);
	}
	free(tmp);
	return ret;
}

/* ---- writing ---------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* The descriptor was made non-blocking by someone
				 * else; the contract is a blocking write. */
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void out_write(struct smt_output *o, const char *p, size_t n)
{
	int err;

	if (!n)
		return;
	if (o->st.write_error) {
		o->st.dropped_bytes += n;
		return;
	}
	err = write_all(o->out_fd, p, n);
	if (err < 0) {
		o->st.write_error = err;
		o->error_pending = 1;
		o->st.dropped_bytes += n;
	}
}

static void out_flush(struct smt_output *o)
{
	out_write(o, o->out.p, o->out.len);
	o->out.len = 0;
}

/* Make room for N more bytes in the output buffer (N <= OUT_SLACK). */
static char *out_room(struct smt_output *o, size_t n)
{
	if (o->out.len + n > o->out.cap)
		out_flush(o);
	return o->out.p + o->out.len;
}

static void out_put(struct smt_output *o, const char *p, size_t n)
{
	if (!n)
		return;
	if (o->out.len + n > SMT_OUTPUT_BUF_CAP)
		out_flush(o);
	if (n >= SMT_OUTPUT_BUF_CAP) {
		out_write(o, p, n);
		return;
	}
	memcpy(o->out.p + o->out.len, p, n);
	o->out.len += n;
}

/* Text-mode bytes go to the output, or to the hold buffer while a line
 * streams.  A failed hold allocation writes through: order suffers, no
 * byte is lost. */
static void text_put(struct smt_output *o, int held, const char *p, size_t n)
{
	if (held && buf_put(&o->held, p, n) == 0)
		return;
	out_put(o, p, n);
}

static void msg_write(struct smt_output *o)
{
	if (o->msg_fd >= 0 && o->msg.len)
		(void)write_all(o->msg_fd, o->msg.p, o->msg.len);
	o->msg.len = 0;
}

/* ---- ranks and hosts ------------------------------------------------- */

static const char *intern_host(struct smt_output *o, const char *host)
{
	char **hosts;
	char *copy;

	for (size_t i = o->nhosts; i-- > 0;)
		if (!strcmp(o->hosts[i], host))
			return o->hosts[i];
	hosts = realloc(o->hosts, (o->nhosts + 1) * sizeof(*hosts));
	if (!hosts)
		return NULL;
	o->hosts = hosts;
	copy = strdup(host);
	if (!copy)
		return NULL;
	o->hosts[o->nhosts++] = copy;
	return copy;
}

static struct rank *rank_get(struct smt_output *o, int r)
{
	if (r < 0 || r > SMT_OUTPUT_MAX_RANK)
		return NULL;
	if (r >= o->nslots) {
		int n = o->nslots ? o->nslots : 16;
		struct rank **ranks;

		while (n <= r)
			n *= 2;
		ranks = realloc(o->ranks, (size_t)n * sizeof(*ranks));
		if (!ranks)
			return NULL;
		memset(ranks + o->nslots, 0, (size_t)(n - o->nslots) * sizeof(*ranks));
		o->ranks = ranks;
		o->nslots = n;
	}
	if (!o->ranks[r]) {
		struct rank *k = calloc(1, sizeof(*k));

		if (!k)
			return NULL;
		ring_init(&k->tail, SMT_OUTPUT_RANK_TAIL_LINES, SMT_OUTPUT_RANK_TAIL_BYTES);
		o->ranks[r] = k;
	}
	if (r >= o->count)
		o->count = r + 1;
	return o->ranks[r];
}

static const struct rank *rank_find(const struct smt_output *o, int r)
{
	if (r < 0 || r >= o->nslots)
		return NULL;
	return o->ranks[r];
}

static void rank_set_host(struct smt_output *o, struct rank *k, const char *host)
{
	const char *h = intern_host(o, host);

	if (!h || h == k->host)
		return;
	k->host = h;
	for (int s = 0; s < 2; s++) {
		free(k->tag[s]);
		k->tag[s] = NULL;
	}
}

static const char *stream_name(int s)
{
	return s == SMT_OUTPUT_STDERR ? "stderr" : "stdout";
}

/* The tag of rank R's stream S: the text prefix, or in JSON the fields
 * between the time and the line. */
static int rank_tag(struct smt_output *o, int r, struct rank *k, int s)
{
	const char *host = k->host ? k->host : UNKNOWN_HOST;
	char *t;
	int n;

	if (k->tag[s])
		return 0;
	if (o->format == SMT_OUTPUT_TEXT) {
		n = asprintf(&t, "[1,mpirank:%d,%s]<%s>: ", r, host, stream_name(s));
	} else {
		size_t hl = strlen(host);
		char *eh = malloc(6 * hl + 1);
		int inv = 0;

		if (!eh)
			return -ENOMEM;
		eh[json_escape(host, hl, eh, &inv)] = '\0';
		n = asprintf(&t, "\",\"%s\":%d,\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":\"",
			     SMT_F_RANK, r, SMT_F_HOST, eh, SMT_F_STREAM,
			     stream_name(s), SMT_F_LINE);
		free(eh);
	}
	if (n < 0)
		return -ENOMEM;
	k->tag[s] = t;
	k->taglen[s] = (size_t)n;
	return 0;
}

/* ---- finished lines ----------------------------------------------- */

/* Remember a line (its first bytes) in the rings.  TOTAL is its length. */
static void record(struct smt_output *o, int r, struct rank *k, int s,
		   const char *p, size_t n, uint64_t total)
{
	int truncated = total > SMT_OUTPUT_KEEP_LINE_MAX;
	size_t keep = n < SMT_OUTPUT_KEEP_LINE_MAX ? n : SMT_OUTPUT_KEEP_LINE_MAX;

	o->st.lines++;
	ring_push(&o->log, p, keep, truncated, r, s, o->now_ms);
	if (s != SMT_OUTPUT_STDERR)
		return;
	ring_push(&k->tail, p, keep, truncated, r, s, o->now_ms);
	if (!k->first_error && smt_report_error_score(p, keep) >= 2) {
		size_t fl = keep < SMT_OUTPUT_FIRST_ERROR_MAX ? keep : SMT_OUTPUT_FIRST_ERROR_MAX;

		k->first_error = malloc(fl + 1);
		if (k->first_error) {
			memcpy(k->first_error, p, fl);
			k->first_error[fl] = '\0';
			k->first_error_len = fl;
		}
	}
}

/* One JSON object: a line, or a piece of one when PARTIAL. */
static void json_line(struct smt_output *o, struct rank *k, int s,
			const char *p, size_t n, int partial)
{
	const char *ts = time_str(o);
	size_t tl = strlen(ts);
	int invalid = 0;
	char *w;

	static const char head[] = "{\"" SMT_F_TIME "\":\"";
	const size_t ol = sizeof(head) - 1;

	w = out_room(o, ol + tl + k->taglen[s]);
	memcpy(w, head, ol);
	memcpy(w + ol, ts, tl);
	memcpy(w + ol + tl, k->tag[s], k->taglen[s]);
	o->out.len += ol + tl + k->taglen[s];
	for (size_t i = 0, b; i < n; i += b) {
		/* Blocks end between characters, or a character cut in two
		 * would count as invalid bytes. */
		b = n - i;
		if (b > ESC_BLOCK)
			b = utf8_cut(p + i, b, ESC_BLOCK);
		w = out_room(o, 6 * ESC_BLOCK);
		o->out.len += json_escape(p + i, b, w, &invalid);
	}
	w = out_room(o, 1);
	*w = '"';
	o->out.len++;
	if (invalid) {
		static const char f[] = ",\"" SMT_F_LINE_B64 "\":\"";

		w = out_room(o, sizeof(f));
		memcpy(w, f, sizeof(f) - 1);
		o->out.len += sizeof(f) - 1;
		/* Multiples of 3 bytes, so the pieces concatenate. */
		for (size_t i = 0; i < n; i += 3 * ESC_BLOCK) {
			size_t b = n - i < 3 * ESC_BLOCK ? n - i : 3 * ESC_BLOCK;

			w = out_room(o, 4 * ESC_BLOCK + 4);
			o->out.len += base64((const unsigned char *)p + i, b, w);
		}
		w = out_room(o, 1);
		*w = '"';
		o->out.len++;
	}
	if (partial) {
		static const char f[] = ",\"" SMT_F_PARTIAL "\":true";

		w = out_room(o, sizeof(f));
		memcpy(w, f, sizeof(f) - 1);
		o->out.len += sizeof(f) - 1;
	}
	w = out_room(o, 2);
	memcpy(w, "}\n", 2);
	o->out.len += 2;
}

/* A finished line of rank R (or, in JSON mode, a finished piece). */
static void line_done(struct smt_output *o, int r, struct rank *k, int s,
		      const char *p, size_t n, int partial)
{
	if (rank_tag(o, r, k, s) < 0)
		return;
	o->st.bytes += n;
	if (o->format == SMT_OUTPUT_JSON) {
		while (n > SMT_OUTPUT_LINE_CAP) {
			size_t cut = utf8_cut(p, n, SMT_OUTPUT_LINE_CAP);

			json_line(o, k, s, p, cut, 1);
			record(o, r, k, s, p, cut, cut);
			p += cut;
			n -= cut;
		}
		json_line(o, k, s, p, n, partial);
		record(o, r, k, s, p, n, n);
		return;
	}
	{
		int held = o->stream_rank >= 0;

		text_put(o, held, k->tag[s], k->taglen[s]);
		text_put(o, held, p, n);
		text_put(o, held, "\n", 1);
	}
	record(o, r, k, s, p, n, n);
}

static void part_clear(struct smt_output *o, struct part *pt)
{
	o->partial_bytes -= pt->b.len;
	pt->b.len = 0;
	if (pt->b.cap > PART_KEEP)
		buf_release(&pt->b);
}

/* Text mode: rank R's stream S takes the output over. */
static void stream_start(struct smt_output *o, int r, struct rank *k, int s)
{
	struct part *pt = &k->part[s];
	size_t keep = pt->b.len < SMT_OUTPUT_KEEP_LINE_MAX ? pt->b.len : SMT_OUTPUT_KEEP_LINE_MAX;

	if (rank_tag(o, r, k, s) < 0)
		return;
	out_put(o, k->tag[s], k->taglen[s]);
	out_put(o, pt->b.p, pt->b.len);
	memcpy(o->stream_keep, pt->b.p, keep);
	o->stream_keep_len = keep;
	o->stream_total = pt->b.len;
	o->st.bytes += pt->b.len;
	o->stream_rank = r;
	o->stream_stream = s;
	part_clear(o, pt);
}

static void stream_bytes(struct smt_output *o, const char *p, size_t n)
{
	if (o->stream_keep_len < SMT_OUTPUT_KEEP_LINE_MAX) {
		size_t room = SMT_OUTPUT_KEEP_LINE_MAX - o->stream_keep_len;
		size_t k = n < room ? n : room;

		memcpy(o->stream_keep + o->stream_keep_len, p, k);
		o->stream_keep_len += k;
	}
	o->stream_total += n;
	o->st.bytes += n;
	out_put(o, p, n);
}

/* The streaming line ends (SPLIT: cut short by the hold cap); the lines
 * that waited for it follow. */
static void stream_end(struct smt_output *o, int split)
{
	int r = o->stream_rank;
	struct rank *k = o->ranks[r];

	if (split) {
		out_put(o, SMT_OUTPUT_SPLIT_MARK, sizeof(SMT_OUTPUT_SPLIT_MARK) - 1);
		o->st.split_lines++;
	}
	out_put(o, "\n", 1);
	record(o, r, k, o->stream_stream, o->stream_keep, o->stream_keep_len,
	       o->stream_total);
	o->stream_rank = -1;
	out_put(o, o->held.p, o->held.len);
	o->held.len = 0;
	if (o->held.cap > SMT_OUTPUT_BUF_CAP)
		buf_release(&o->held);
}

/* A rank's unfinished line outgrew SMT_OUTPUT_LINE_CAP, or must leave
 * memory because of the hold cap (FORCE). */
static void part_overflow(struct smt_output *o, int r, struct rank *k, int s, int force)
{
	struct part *pt = &k->part[s];

	if (o->format == SMT_OUTPUT_TEXT) {
		if (o->stream_rank < 0)
			stream_start(o, r, k, s);
		return;
	}
	while (pt->b.len > SMT_OUTPUT_LINE_CAP || (force && pt->b.len)) {
		size_t cut = pt->b.len;

		if (cut > SMT_OUTPUT_LINE_CAP)
			cut = utf8_cut(pt->b.p, pt->b.len, SMT_OUTPUT_LINE_CAP);
		line_done(o, r, k, s, pt->b.p, cut, 1);
		memmove(pt->b.p, pt->b.p + cut, pt->b.len - cut);
		pt->b.len -= cut;
		o->partial_bytes -= cut;
		force = 0;
	}
}

static void enforce_hold_cap(struct smt_output *o)
{
	while (o->partial_bytes + o->held.len > SMT_OUTPUT_HOLD_CAP) {
		int br = -1, bs = 0;
		size_t best = 0;

		if (o->stream_rank >= 0) {
			stream_end(o, 1);
			continue;
		}
		for (int r = 0; r < o->count; r++) {
			struct rank *k = o->ranks[r];

			for (int s = 0; k && s < 2; s++) {
				if (k->part[s].b.len > best) {
					best = k->part[s].b.len;
					br = r;
					bs = s;
				}
			}
		}
		if (br < 0)
			break;
		part_overflow(o, br, o->ranks[br], bs, 1);
	}
}

static void rank_data(struct smt_output *o, int r, int s, const char *p, size_t n)
{
	struct rank *k = rank_get(o, r);

	if (!k)
		return;
	k->seen = 1;
	while (n) {
		const char *nl;
		size_t len;
		struct part *pt = &k->part[s];

		if (o->stream_rank == r && o->stream_stream == s) {
			nl = memchr(p, '\n', n);
			len = nl ? (size_t)(nl - p) : n;
			stream_bytes(o, p, len);
			if (!nl)
				return;
			stream_end(o, 0);
			p += len + 1;
			n -= len + 1;
			continue;
		}
		nl = memchr(p, '\n', n);
		len = nl ? (size_t)(nl - p) : n;
		if (nl && len <= SMT_OUTPUT_LINE_CAP) {
			if (pt->b.len == 0) {
				line_done(o, r, k, s, p, len, 0);
			} else if (buf_put(&pt->b, p, len) == 0) {
				o->partial_bytes += len;
				line_done(o, r, k, s, pt->b.p, pt->b.len, 0);
				part_clear(o, pt);
			} else {
				/* Out of memory: what we have, then the rest. */
				line_done(o, r, k, s, pt->b.p, pt->b.len, 1);
				part_clear(o, pt);
				line_done(o, r, k, s, p, len, 0);
			}
			p += len + 1;
			n -= len + 1;
			if (o->partial_bytes + o->held.len > SMT_OUTPUT_HOLD_CAP)
				enforce_hold_cap(o);
			continue;
		}
		/* An unfinished line: take at most LINE_CAP at a time, so that
		 * memory never holds more than that beyond the caps. */
		if (len > SMT_OUTPUT_LINE_CAP)
			len = SMT_OUTPUT_LINE_CAP;
		if (buf_put(&pt->b, p, len) < 0) {
			line_done(o, r, k, s, p, len, 1);
		} else {
			o->partial_bytes += len;
			if (pt->b.len > SMT_OUTPUT_LINE_CAP)
				part_overflow(o, r, k, s, 0);
			enforce_hold_cap(o);
		}
		p += len;
		n -= len;
	}
}

static void rank_eof(struct smt_output *o, int r, int s)
{
	struct rank *k = r < o->nslots ? o->ranks[r] : NULL;

	if (!k)
		return;
	if (o->stream_rank == r && o->stream_stream == s) {
		stream_end(o, 0);
		return;
	}
	if (k->part[s].b.len) {
		line_done(o, r, k, s, k->part[s].b.p, k->part[s].b.len, 0);
		part_clear(o, &k->part[s]);
	}
}

/* ---- mpirun's own lines ------------------------------------------------ */

/* "R: Host H Exe PATH Pid P" of the MPIR proctable. */
static void proctable_line(struct smt_output *o, const char *line)
{
	char host[256];
	const char *pid;
	int rank, n = 0;
	struct rank *k;

	if (sscanf(line, " %d: Host %255s Exe %n", &rank, host, &n) != 2 || n == 0)
		return;
	pid = strstr(line + n, " Pid ");
	if (!pid)
		return;
	for (const char *q; (q = strstr(pid + 1, " Pid "));)
		pid = q;
	k = rank_get(o, rank);
	if (!k)
		return;
	k->pid = atoi(pid + 5);
	if (!k->host)
		rank_set_host(o, k, host);
}

static void msg_line(struct smt_output *o, enum msg_src src, const char *p, size_t n)
{
	char line[MSG_LINE_MAX + 1];
	size_t i;

	while (n && (p[n - 1] == '\r'))
		n--;
	for (i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			break;
	if (i == n)
		return;
	o->st.mpirun_lines++;
	ring_push(&o->msgring, p, n, 0, -1, 0, o->now_ms);
	if (src == MSG_XML_TEXT) {
		memcpy(line, p, n);
		line[n] = '\0';
		proctable_line(o, line);
	}
	if (o->msg_fd < 0)
		return;
	if (o->format == SMT_OUTPUT_TEXT) {
		if (buf_put(&o->msg, p, n) == 0)
			buf_put(&o->msg, "\n", 1);
		return;
	}
	{
		char *esc = malloc(6 * n + 1);
		size_t hl = strlen(o->current_host);
		char *eh = malloc(6 * hl + 1);
		int inv = 0;
		char *obj;
		int len;

		if (esc && eh) {
			esc[json_escape(p, n, esc, &inv)] = '\0';
			eh[json_escape(o->current_host, hl, eh, &inv)] = '\0';
			len = asprintf(&obj, "{\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":\"mpirun\",\"%s\":\"%s\"}\n",
				       SMT_F_TIME, time_str(o), SMT_F_HOST, eh,
				       SMT_F_STREAM, SMT_F_LINE, esc);
			if (len > 0) {
				buf_put(&o->msg, obj, (size_t)len);
				free(obj);
			}
		}
		free(esc);
		free(eh);
	}
}

static void msg_data(struct smt_output *o, enum msg_src src, const char *p, size_t n)
{
	struct msgline *m = &o->msgs[src];

	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) : n;
		size_t room = MSG_LINE_MAX - m->len;

		if (len > room)
			len = room;
		memcpy(m->buf + m->len, p, len);
		m->len += len;
		p += len;
		n -= len;
		if (m->len == MSG_LINE_MAX || (n && *p == '\n')) {
			msg_line(o, src, m->buf, m->len);
			m->len = 0;
			if (n && *p == '\n') {
				p++;
				n--;
			}
		}
	}
}

static void msg_eof(struct smt_output *o, enum msg_src src)
{
	struct msgline *m = &o->msgs[src];

	if (m->len)
		msg_line(o, src, m->buf, m->len);
	m->len = 0;
}

/* ---- decoder callbacks ---------------------------------------------- */

static void xml_data(void *arg, int rank, enum smt_xml_stream stream,
		     const char *buf, size_t len)
{
	struct smt_output *o = arg;

	if (rank < 0 || rank > SMT_OUTPUT_MAX_RANK)
		msg_data(o, stream == SMT_XML_STDERR ? MSG_XML_STDERR : MSG_XML_STDOUT,
			 buf, len);
	else
		rank_data(o, rank, stream == SMT_XML_STDERR ? SMT_OUTPUT_STDERR : SMT_OUTPUT_STDOUT,
			  buf, len);
}

static void xml_text(void *arg, const char *buf, size_t len)
{
	msg_data(arg, MSG_XML_TEXT, buf, len);
}

static void xml_map(void *arg, int rank, const char *host)
{
	struct smt_output *o = arg;
	struct rank *k = rank_get(o, rank);

	if (k)
		rank_set_host(o, k, host);
}

/* ---- public ----------------------------------------------------------- */

int smt_output_new(const struct smt_output_config *cfg, struct smt_output **out)
{
	static const struct smt_xml_handler h = {
		.data = xml_data, .text = xml_text, .map = xml_map,
	};
	struct smt_output *o;
	int err = -ENOMEM;

	if (!cfg || (cfg->format != SMT_OUTPUT_TEXT && cfg->format != SMT_OUTPUT_JSON))
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->out_fd = cfg->out_fd;
	o->msg_fd = cfg->msg_fd;
	o->format = cfg->format;
	o->stream_rank = -1;
	o->now_str_ms = -1;
	ring_init(&o->log, SMT_OUTPUT_LOG_LINES, SMT_OUTPUT_LOG_BYTES);
	ring_init(&o->msgring, SMT_OUTPUT_MSG_LINES, SMT_OUTPUT_MSG_BYTES);
	o->current_host = strdup(cfg->current_host ? cfg->current_host : UNKNOWN_HOST);
	if (!o->current_host)
		goto out;
	o->out.cap = SMT_OUTPUT_BUF_CAP + OUT_SLACK;
	o->out.p = malloc(o->out.cap);
	if (!o->out.p)
		goto out;
	err = smt_xml_new(&h, o, &o->xml);
	if (err < 0)
		goto out;
	*out = o;
	return 0;
out:
	smt_output_free(o);
	return err;
}

void smt_output_free(struct smt_output *o)
{
	if (!o)
		return;
	for (int r = 0; r < o->nslots; r++) {
		struct rank *k = o->ranks[r];

		if (!k)
			continue;
		for (int s = 0; s < 2; s++) {
			buf_release(&k->part[s].b);
			free(k->tag[s]);
		}
		ring_free(&k->tail);
		free(k->first_error);
		free(k);
	}
	free(o->ranks);
	for (size_t i = 0; i < o->nhosts; i++)
		free(o->hosts[i]);
	free(o->hosts);
	buf_release(&o->out);
	buf_release(&o->held);
	buf_release(&o->msg);
	ring_free(&o->log);
	ring_free(&o->msgring);
	smt_xml_free(o->xml);
	free(o->current_host);
	free(o);
}

static int finish_call(struct smt_output *o)
{
	out_flush(o);
	msg_write(o);
	if (o->error_pending) {
		o->error_pending = 0;
		return o->st.write_error;
	}
	return 0;
}

static void standalone_rank0(struct smt_output *o)
{
	struct rank *k = rank_get(o, 0);

	if (k && !k->host)
		rank_set_host(o, k, o->current_host);
}

int smt_output_feed(struct smt_output *o, enum smt_output_source src,
		    const void *buf, size_t len)
{
	o->now_ms = now_ms();
	switch (src) {
	case SMT_SRC_MPIRUN_STDOUT:
		smt_xml_feed(o->xml, buf, len);
		break;
	case SMT_SRC_MPIRUN_STDERR:
		msg_data(o, MSG_STDERR_FD, buf, len);
		break;
	case SMT_SRC_CHILD_STDOUT:
	case SMT_SRC_CHILD_STDERR:
		standalone_rank0(o);
		rank_data(o, 0, src == SMT_SRC_CHILD_STDERR ? SMT_OUTPUT_STDERR : SMT_OUTPUT_STDOUT,
			  buf, len);
		break;
	default:
		return -EINVAL;
	}
	return finish_call(o);
}

int smt_output_eof(struct smt_output *o, enum smt_output_source src)
{
	o->now_ms = now_ms();
	switch (src) {
	case SMT_SRC_MPIRUN_STDOUT:
		smt_xml_finish(o->xml);
		/* The streaming line first: the others may be waiting for it. */
		if (o->stream_rank >= 0)
			stream_end(o, 0);
		for (int r = 0; r < o->count; r++)
			for (int s = 0; s < 2; s++)
				rank_eof(o, r, s);
		msg_eof(o, MSG_XML_TEXT);
		msg_eof(o, MSG_XML_STDOUT);
		msg_eof(o, MSG_XML_STDERR);
		break;
	case SMT_SRC_MPIRUN_STDERR:
		msg_eof(o, MSG_STDERR_FD);
		break;
	case SMT_SRC_CHILD_STDOUT:
	case SMT_SRC_CHILD_STDERR:
		rank_eof(o, 0, src == SMT_SRC_CHILD_STDERR ? SMT_OUTPUT_STDERR : SMT_OUTPUT_STDOUT);
		break;
	default:
		return -EINVAL;
	}
	return finish_call(o);
}

void smt_output_stats(const struct smt_output *o, struct smt_output_stats *st)
{
	*st = o->st;
}

int smt_output_rank_count(const struct smt_output *o)
{
	return o->count;
}

const char *smt_output_rank_host(const struct smt_output *o, int rank)
{
	const struct rank *k = rank_find(o, rank);

	return k ? k->host : NULL;
}

int smt_output_rank_pid(const struct smt_output *o, int rank)
{
	const struct rank *k = rank_find(o, rank);

	return k ? k->pid : 0;
}

json_t *smt_output_ranks_json(const struct smt_output *o)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (int r = 0; r < o->count; r++) {
		const struct rank *k = o->ranks[r];
		json_t *e;

		if (!k)
			continue;
		e = json_pack("{s:i, s:s?}", SMT_F_RANK, r, SMT_F_HOST, k->host);
		if (!e || (k->pid && json_object_set_new(e, SMT_F_PID, json_integer(k->pid)) < 0) ||
		    json_array_append_new(a, e) < 0) {
			json_decref(e);
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int smt_output_rank_tail(const struct smt_output *o, int rank,
			 smt_output_line_cb cb, void *arg)
{
	const struct rank *k = rank_find(o, rank);

	return k ? ring_foreach(&k->tail, cb, arg) : 0;
}

int smt_output_mpirun_lines(const struct smt_output *o,
			    smt_output_line_cb cb, void *arg)
{
	return ring_foreach(&o->msgring, cb, arg);
}

const char *smt_output_rank_first_error(const struct smt_output *o, int rank,
					size_t *len)
{
	const struct rank *k = rank_find(o, rank);

	if (!k || !k->first_error)
		return NULL;
	*len = k->first_error_len;
	return k->first_error;
}

/* Index of the first log entry to show: the TAIL last ones of RANK. */
static size_t logs_start(const struct smt_output *o, size_t tail, int rank)
{
	size_t i = o->log.count, found = 0;

	while (i > 0 && found < tail) {
		const struct ring_entry *e = &o->log.e[(o->log.head + i - 1) % o->log.max_lines];

		if (rank < 0 || e->rank == rank)
			found++;
		i--;
	}
	return i;
}

static const char *host_of(const struct smt_output *o, int rank)
{
	const char *h = smt_output_rank_host(o, rank);

	return h ? h : UNKNOWN_HOST;
}

json_t *smt_output_logs_json(const struct smt_output *o, size_t tail, int rank)
{
	json_t *a = json_array();
	char *tmp = NULL;

	if (!a)
		return NULL;
	if (!o->log.count || !tail)
		return a;
	tmp = malloc(o->log.cap);
	if (!tmp)
		goto fail;
	for (size_t i = logs_start(o, tail, rank); i < o->log.count; i++) {
		const char *bytes;
		const struct ring_entry *e = ring_get(&o->log, i, tmp, &bytes);
		char ts[64], *line, *b64 = NULL;
		size_t ll;
		int invalid = 0;
		json_t *obj;

		if (rank >= 0 && e->rank != rank)
			continue;
		line = utf8_sanitize(bytes, e->len, &ll, &invalid);
		if (!line)
			goto fail;
		if (invalid) {
			b64 = malloc(4 * ((e->len + 2) / 3) + 1);
			if (!b64) {
				free(line);
				goto fail;
			}
			b64[base64((const unsigned char *)bytes, e->len, b64)] = '\0';
		}
		format_time(e->ms, ts, sizeof(ts));
		obj = json_pack("{s:s, s:i, s:s, s:s, s:s%}", SMT_F_TIME, ts,
				SMT_F_RANK, (int)e->rank, SMT_F_HOST, host_of(o, e->rank),
				SMT_F_STREAM, stream_name(e->stream), SMT_F_LINE, line, ll);
		free(line);
		if (obj && b64)
			json_object_set_new(obj, SMT_F_LINE_B64, json_string(b64));
		free(b64);
		if (obj && e->truncated)
			json_object_set_new(obj, SMT_F_TRUNCATED, json_true());
		if (!obj || json_array_append_new(a, obj) < 0)
			goto fail;
	}
	free(tmp);
	return a;
fail:
	free(tmp);
	json_decref(a);
	return NULL;
}

int smt_output_logs_text(const struct smt_output *o, size_t tail, int rank,
			 char **text, size_t *len)
{
	struct buf b = { 0 };
	char *tmp = NULL;
	int err = -ENOMEM;

	if (buf_reserve(&b, 1) < 0)
		goto out;
	if (o->log.count && tail) {
		tmp = malloc(o->log.cap);
		if (!tmp)
			goto out;
		for (size_t i = logs_start(o, tail, rank); i < o->log.count; i++) {
			const char *bytes;
			const struct ring_entry *e = ring_get(&o->log, i, tmp, &bytes);
			char tag[320];
			int n;

			if (rank >= 0 && e->rank != rank)
				continue;
			n = snprintf(tag, sizeof(tag), "[1,mpirank:%d,%s]<%s>: ", (int)e->rank,
				     host_of(o, e->rank), stream_name(e->stream));
			if (n < 0 || (size_t)n >= sizeof(tag))
				n = (int)strlen(tag);
			if (buf_put(&b, tag, (size_t)n) < 0 || buf_put(&b, bytes, e->len) < 0 ||
			    buf_put(&b, "\n", 1) < 0)
				goto out;
		}
	}
	if (buf_reserve(&b, 1) < 0)
		goto out;
	b.p[b.len] = '\0';
	*text = b.p;
	*len = b.len;
	b.p = NULL;
	err = 0;
out:
	free(tmp);
	buf_release(&b);
	return err;
}
