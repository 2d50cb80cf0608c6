/*
 * xmlstream.c - the `mpirun --xml` dialect decoder (see xmlstream.h).
 *
 * A three-state machine (data, tag, entity).  Data bytes are gathered into
 * a fixed run buffer, or handed over straight from the caller's buffer when
 * nothing is pending, so a long chunk costs one callback per
 * SMT_XML_RUN_MAX bytes and no copy.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "xmlstream.h"

/* "#x10FFFF" is the longest entity body we decode; a little slack for
 * leading zeros ("#0000010"). */
#define ENT_MAX 12
/* Below this a data span is copied into the run rather than handed over
 * directly: it saves callbacks for the common short chunk. */
#define DIRECT_MIN 512

enum state { S_DATA, S_TAG, S_ENT };

struct smt_xml {
	struct smt_xml_handler h;
	void *arg;
	enum state st;
	/* The context data belongs to: a chunk (with rank and stream) or
	 * mpirun's text outside chunks. */
	int in_chunk;
	int rank;
	enum smt_xml_stream stream;
	/* Name of the enclosing <host>, for <process> entries of the map. */
	int have_host;
	char host[SMT_XML_TAG_MAX + 1];
	size_t taglen;
	char tag[SMT_XML_TAG_MAX];
	size_t entlen;
	char ent[ENT_MAX];
	size_t runlen;
	char run[SMT_XML_RUN_MAX];
};

static void deliver(struct smt_xml *x, const char *p, size_t n)
{
	if (x->in_chunk) {
		if (x->h.data)
			x->h.data(x->arg, x->rank, x->stream, p, n);
	} else if (x->h.text) {
		x->h.text(x->arg, p, n);
	}
}

static void flush(struct smt_xml *x)
{
	if (x->runlen) {
		deliver(x, x->run, x->runlen);
		x->runlen = 0;
	}
}

static void put(struct smt_xml *x, const char *p, size_t n)
{
	if (x->runlen == 0 && n >= DIRECT_MIN) {
		while (n) {
			size_t k = n < SMT_XML_RUN_MAX ? n : SMT_XML_RUN_MAX;
			deliver(x, p, k);
			p += k;
			n -= k;
		}
		return;
	}
	while (n) {
		size_t room = SMT_XML_RUN_MAX - x->runlen;
		size_t k;

		if (!room) {
			flush(x);
			room = SMT_XML_RUN_MAX;
		}
		k = n < room ? n : room;
		memcpy(x->run + x->runlen, p, k);
		x->runlen += k;
		p += k;
		n -= k;
	}
}

static void put_byte(struct smt_xml *x, char c)
{
	put(x, &c, 1);
}

/* Encode code point CP as UTF-8 into OUT (4 bytes); returns the length. */
static size_t utf8_encode(unsigned long cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decode entity body E (without & and ;) into OUT (4 bytes).  Returns the
 * number of bytes, or 0 when E is not an entity we know. */
static size_t entity_decode(const char *e, size_t n, char *out)
{
	static const struct { const char *name; char c; } named[] = {
		{ "lt", '<' }, { "gt", '>' }, { "amp", '&' },
		{ "quot", '"' }, { "apos", '\'' },
	};
	unsigned long cp = 0;
	size_t i = 1;
	int base = 10;

	if (n == 0)
		return 0;
	if (e[0] != '#') {
		for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
			if (strlen(named[k].name) == n && !memcmp(named[k].name, e, n)) {
				out[0] = named[k].c;
				return 1;
			}
		}
		return 0;
	}
	if (n > 1 && (e[1] == 'x' || e[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i >= n)
		return 0;
	for (; i < n; i++) {
		int d;
		char c = e[i];

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return 0;
		cp = cp * (unsigned long)base + (unsigned long)d;
		if (cp > 0x10ffff)
			return 0;
	}
	/* mpirun writes raw bytes as &#NNN;: a value below 256 is that byte,
	 * not the Latin-1 character. */
	if (cp < 256) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	return utf8_encode(cp, out);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The value of attribute NAME in tag body T (N bytes), entities decoded,
 * NUL-terminated into OUT (SMT_XML_TAG_MAX + 1 bytes).  Returns 0 or -1. */
static int tag_attr(const char *t, size_t n, const char *name, char *out)
{
	size_t nlen = strlen(name);
	size_t i = 0;

	/* Skip the element name. */
	while (i < n && !is_space(t[i]) && t[i] != '/')
		i++;
	while (i < n) {
		size_t a0, a1;
		char q;

		while (i < n && (is_space(t[i]) || t[i] == '/'))
			i++;
		a0 = i;
		while (i < n && t[i] != '=' && !is_space(t[i]) && t[i] != '/')
			i++;
		a1 = i;
		while (i < n && is_space(t[i]))
			i++;
		if (i >= n || t[i] != '=')
			continue;
		i++;
		while (i < n && is_space(t[i]))
			i++;
		if (i >= n || (t[i] != '"' && t[i] != '\''))
			return -1;
		q = t[i++];
		if (a1 - a0 == nlen && !memcmp(t + a0, name, nlen)) {
			size_t o = 0;

			while (i < n && t[i] != q) {
				if (t[i] == '&') {
					size_t e = i + 1, k;
					char buf[4];

					while (e < n && t[e] != ';' && e - i <= ENT_MAX)
						e++;
					if (e < n && t[e] == ';' &&
					    (k = entity_decode(t + i + 1, e - i - 1, buf)) > 0) {
						memcpy(out + o, buf, k);
						o += k;
						i = e + 1;
						continue;
					}
				}
				out[o++] = t[i++];
			}
			if (i >= n)
				return -1;
			out[o] = '\0';
			return 0;
		}
		while (i < n && t[i] != q)
			i++;
		if (i < n)
			i++;
	}
	return -1;
}

static int parse_rank(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > SMT_XML_RANK_MAX)
			return -1;
	}
	return (int)v;
}

static int name_is(const char *t, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n >= k && !memcmp(t, name, k) &&
		(n == k || is_space(t[k]) || t[k] == '/');
}

static void handle_tag(struct smt_xml *x)
{
	const char *t = x->tag;
	size_t n = x->taglen;
	int self_closing = n > 0 && t[n - 1] == '/';
	char val[SMT_XML_TAG_MAX + 1];

	if (n > 0 && t[0] == '/') {
		t++;
		n--;
		if (name_is(t, n, "stdout") || name_is(t, n, "stderr") ||
		    name_is(t, n, "stddiag")) {
			flush(x);
			x->in_chunk = 0;
		} else if (name_is(t, n, "host")) {
			x->have_host = 0;
		}
		return;
	}
	if (name_is(t, n, "stdout") || name_is(t, n, "stderr") ||
	    name_is(t, n, "stddiag")) {
		flush(x);
		x->in_chunk = !self_closing;
		x->stream = t[3] == 'o' ? SMT_XML_STDOUT : SMT_XML_STDERR;
		x->rank = tag_attr(t, n, "rank", val) == 0 ? parse_rank(val) : -1;
	} else if (name_is(t, n, "host")) {
		x->have_host = !self_closing && tag_attr(t, n, "name", x->host) == 0;
	} else if (name_is(t, n, "process")) {
		int rank;

		if (!x->have_host || tag_attr(t, n, "rank", val) < 0)
			return;
		rank = parse_rank(val);
		if (rank >= 0 && x->h.map) {
			flush(x);
			x->h.map(x->arg, rank, x->host);
		}
	}
}

int smt_xml_new(const struct smt_xml_handler *h, void *arg, struct smt_xml **out)
{
	struct smt_xml *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->h = *h;
	x->arg = arg;
	x->rank = -1;
	*out = x;
	return 0;
}

/* Position of the first C at or after FROM in BUF, or LEN. */
static size_t find(const char *buf, size_t from, size_t len, char c)
{
	const char *p = memchr(buf + from, c, len - from);

	return p ? (size_t)(p - buf) : len;
}

void smt_xml_feed(struct smt_xml *x, const char *buf, size_t len)
{
	/* The next '<' and '&', found with memchr and kept until passed: a
	 * byte loop here was half the cost of forwarding. */
	size_t lt = 0, amp = 0;
	int have_lt = 0, have_amp = 0;
	size_t i = 0;

	while (i < len) {
		char c = buf[i];

		switch (x->st) {
		case S_DATA: {
			size_t j;

			if (!have_lt || lt < i) {
				lt = find(buf, i, len, '<');
				have_lt = 1;
			}
			if (!have_amp || amp < i) {
				amp = find(buf, i, len, '&');
				have_amp = 1;
			}
			j = lt < amp ? lt : amp;
			if (j > i)
				put(x, buf + i, j - i);
			if (j < len) {
				x->st = buf[j] == '<' ? S_TAG : S_ENT;
				x->taglen = 0;
				x->entlen = 0;
				j++;
			}
			i = j;
			continue;
		}
		case S_TAG: {
			/* Copy the tag's bytes up to what ends it in one go. */
			size_t stop = find(buf, i, len, '>');
			const char *l = memchr(buf + i, '<', stop - i);
			size_t k;

			if (l)
				stop = (size_t)(l - buf);
			k = stop - i;
			if (k > SMT_XML_TAG_MAX - x->taglen)
				k = SMT_XML_TAG_MAX - x->taglen;
			memcpy(x->tag + x->taglen, buf + i, k);
			x->taglen += k;
			i += k;
			if (i == len)
				continue;
			c = buf[i];
			if (c == '>') {
				handle_tag(x);
				x->st = S_DATA;
			} else if (c == '<' || x->taglen == SMT_XML_TAG_MAX) {
				/* Not a tag after all: give it back as text and
				 * look at this byte again from the data state. */
				put_byte(x, '<');
				put(x, x->tag, x->taglen);
				x->st = S_DATA;
				continue;
			} else {
				x->tag[x->taglen++] = c;
			}
			break;
		}
		case S_ENT:
			if (c == ';') {
				char out[4];
				size_t k = entity_decode(x->ent, x->entlen, out);

				if (k) {
					put(x, out, k);
				} else {
					put_byte(x, '&');
					put(x, x->ent, x->entlen);
					put_byte(x, ';');
				}
				x->st = S_DATA;
			} else if (x->entlen < ENT_MAX &&
				   ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
				    (c >= 'A' && c <= 'Z') || c == '#')) {
				x->ent[x->entlen++] = c;
			} else {
				put_byte(x, '&');
				put(x, x->ent, x->entlen);
				x->st = S_DATA;
				continue;
			}
			break;
		}
		i++;
	}
	flush(x);
}

void smt_xml_finish(struct smt_xml *x)
{
	if (x->st == S_TAG) {
		put_byte(x, '<');
		put(x, x->tag, x->taglen);
	} else if (x->st == S_ENT) {
		put_byte(x, '&');
		put(x, x->ent, x->entlen);
	}
	flush(x);
	x->st = S_DATA;
	x->in_chunk = 0;
	x->rank = -1;
	x->have_host = 0;
	x->taglen = 0;
	x->entlen = 0;
}

void smt_xml_free(struct smt_xml *x)
{
	free(x);
}
