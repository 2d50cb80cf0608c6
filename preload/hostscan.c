/* hostscan.c - a validating JSON scanner for the top-level "current_host". */
#include "hostscan.h"

#include <errno.h>
#include <string.h>

#define KEY "current_host"

struct cursor {
	const unsigned char *p;
	const unsigned char *end;
};

/*
 * Where a decoded string goes.  The key and every valid host name are
 * ASCII, so a non-ASCII character or an overflow only needs to be noted
 * (the string then matches nothing), never stored.
 */
struct sink {
	char *buf;
	size_t cap;	/* bytes available before the NUL */
	size_t len;
	int foreign;
};

static int peek(const struct cursor *c)
{
	return c->p < c->end ? *c->p : -1;
}

static int is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static void skip_ws(struct cursor *c)
{
	while (c->p < c->end &&
	       (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static void sink_put(struct sink *s, unsigned int cp)
{
	if (!s)
		return;
	if (cp >= 0x80 || s->len >= s->cap) {
		s->foreign = 1;
		return;
	}
	s->buf[s->len++] = (char)cp;
}

static int hex4(struct cursor *c, unsigned int *out)
{
	unsigned int v = 0;

	if (c->end - c->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned int ch = c->p[i];

		if (ch >= '0' && ch <= '9')
			v = v << 4 | (ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (ch - 'a' + 10);
		else if (ch >= 'A' && ch <= 'F')
			v = v << 4 | (ch - 'A' + 10);
		else
			return -1;
	}
	c->p += 4;
	*out = v;
	return 0;
}

/*
 * Length of the well-formed UTF-8 sequence at P, whose first byte is at
 * least 0x80, or 0.  Overlong forms, surrogates and code points above
 * U+10FFFF are ill-formed (RFC 3629), as jansson holds them to be.
 */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Scans the string starting at the opening quote, decoding it into S. */
static int scan_string(struct cursor *c, struct sink *s)
{
	unsigned int cp, low;

	c->p++;
	for (;;) {
		if (c->p >= c->end)
			return -1;
		cp = *c->p;
		if (cp == '"')
			break;
		if (cp < 0x20)
			return -1;
		if (cp >= 0x80) {
			size_t n = utf8_len(c->p, c->end);

			if (!n)
				return -1;
			c->p += n;
			sink_put(s, 0x80);
			continue;
		}
		c->p++;
		if (cp != '\\') {
			sink_put(s, cp);
			continue;
		}
		if (c->p >= c->end)
			return -1;
		cp = *c->p++;
		switch (cp) {
		case '"': case '\\': case '/':
			break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (hex4(c, &cp))
				return -1;
			/* A lone or reversed surrogate is not a character. */
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (c->end - c->p < 2 || c->p[0] != '\\' ||
				    c->p[1] != 'u')
					return -1;
				c->p += 2;
				if (hex4(c, &low) || low < 0xdc00 || low > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
			}
			/* The daemon's reader refuses NUL in strings. */
			if (cp == 0)
				return -1;
			break;
		default:
			return -1;
		}
		sink_put(s, cp);
	}
	c->p++;
	if (s)
		s->buf[s->len] = '\0';
	return 0;
}

/* Scans an object key and the colon after it. */
static int scan_key(struct cursor *c, struct sink *s)
{
	skip_ws(c);
	if (peek(c) != '"' || scan_string(c, s))
		return -1;
	skip_ws(c);
	if (peek(c) != ':')
		return -1;
	c->p++;
	return 0;
}

static int scan_digits(struct cursor *c)
{
	if (!is_digit(peek(c)))
		return -1;
	while (is_digit(peek(c)))
		c->p++;
	return 0;
}

static int scan_number(struct cursor *c)
{
	if (peek(c) == '-')
		c->p++;
	if (peek(c) == '0')
		c->p++;
	else if (scan_digits(c))
		return -1;
	if (peek(c) == '.') {
		c->p++;
		if (scan_digits(c))
			return -1;
	}
	if (peek(c) == 'e' || peek(c) == 'E') {
		c->p++;
		if (peek(c) == '+' || peek(c) == '-')
			c->p++;
		if (scan_digits(c))
			return -1;
	}
	return 0;
}

static int scan_word(struct cursor *c, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

static int scan_scalar(struct cursor *c)
{
	switch (peek(c)) {
	case '"':
		return scan_string(c, NULL);
	case 't':
		return scan_word(c, "true");
	case 'f':
		return scan_word(c, "false");
	case 'n':
		return scan_word(c, "null");
	default:
		return scan_number(c);
	}
}

/*
 * Skips one value of any kind that DEPTH containers already enclose.  It
 * keeps its own stack instead of recursing, so no document can exhaust the
 * caller's stack, which in a rank may be a small thread stack.
 */
static int skip_value(struct cursor *c, unsigned int depth)
{
	unsigned char is_obj[SMT_HOSTSCAN_MAX_DEPTH];
	unsigned int n = 0;
	int ch, close;

	for (;;) {
		skip_ws(c);
		ch = peek(c);
		if (ch == '{' || ch == '[') {
			if (depth + n >= SMT_HOSTSCAN_MAX_DEPTH)
				return -1;
			c->p++;
			is_obj[n++] = ch == '{';
			close = ch == '{' ? '}' : ']';
			skip_ws(c);
			if (peek(c) != close) {
				if (ch == '{' && scan_key(c, NULL))
					return -1;
				continue;
			}
			c->p++;
			n--;
		} else if (scan_scalar(c)) {
			return -1;
		}
		/* A value ended: close containers until the next element. */
		for (;;) {
			if (n == 0)
				return 0;
			skip_ws(c);
			ch = peek(c);
			if (ch == ',') {
				c->p++;
				if (is_obj[n - 1] && scan_key(c, NULL))
					return -1;
				break;
			}
			if (ch != (is_obj[n - 1] ? '}' : ']'))
				return -1;
			c->p++;
			n--;
		}
	}
}

static int is_current_host(const struct sink *key)
{
	return !key->foreign && key->len == strlen(KEY) &&
	       memcmp(key->buf, KEY, key->len) == 0;
}

ssize_t smt_hostscan(const char *json, size_t len,
		     char out[SMT_HOSTSCAN_MAX + 1])
{
	struct cursor c = {
		(const unsigned char *)json, (const unsigned char *)json + len
	};
	char key[sizeof(KEY)];
	ssize_t found = -ENOENT;
	int seen = 0;

	out[0] = '\0';
	skip_ws(&c);
	if (peek(&c) != '{')
		goto malformed;
	c.p++;
	skip_ws(&c);
	if (peek(&c) == '}')
		c.p++;
	else
		for (;;) {
			struct sink ks = { key, sizeof(key) - 1, 0, 0 };

			if (scan_key(&c, &ks))
				goto malformed;
			skip_ws(&c);
			if (!is_current_host(&ks)) {
				if (skip_value(&c, 1))
					goto malformed;
			} else if (peek(&c) == '"') {
				struct sink hs = { out, SMT_HOSTSCAN_MAX, 0, 0 };

				if (scan_string(&c, &hs))
					goto malformed;
				seen++;
				found = !hs.foreign &&
					smt_hostscan_valid_name(out, hs.len) ?
					(ssize_t)hs.len : -EINVAL;
			} else {
				if (skip_value(&c, 1))
					goto malformed;
				seen++;
				found = -EINVAL;
			}
			skip_ws(&c);
			if (peek(&c) == ',') {
				c.p++;
				continue;
			}
			if (peek(&c) != '}')
				goto malformed;
			c.p++;
			break;
		}
	skip_ws(&c);
	if (c.p != c.end)
		goto malformed;
	/* Which of two values the daemon used is not ours to guess. */
	if (seen > 1)
		found = -EINVAL;
	if (found < 0)
		out[0] = '\0';
	return found;

malformed:
	out[0] = '\0';
	return -EBADMSG;
}

int smt_hostscan_valid_name(const char *name, size_t len)
{
	size_t label = 0;

	if (len == 0 || len > SMT_HOSTSCAN_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (ch == '.') {
			if (label == 0 || name[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-'))
			return 0;
		if (ch == '-' && label == 0)
			return 0;
		if (++label > SMT_HOSTSCAN_LABEL_MAX)
			return 0;
	}
	return label > 0 && name[len - 1] != '-';
}
