/* textesc.c - UTF-8, JSON strings, base64, clean one-line text, one-line messages (textesc.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textesc.h"

size_t smt_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < need + 1 || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i <= need; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return need + 1;
}

size_t smt_utf8_cut(const char *p, size_t n, size_t max)
{
	size_t c = max;

	if (max >= n)
		return n;
	/* Back up over at most three continuation bytes to a lead byte. */
	for (int i = 0; i < 3 && c > 0; i++) {
		if (((unsigned char)p[c] & 0xc0) != 0x80)
			break;
		c--;
	}
	if (c == 0 || ((unsigned char)p[c] & 0xc0) == 0x80)
		return max;
	return c;
}

size_t smt_json_escape(const char *p, size_t n, char *out, int *invalid)
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
		k = smt_utf8_len(u + i, n - i);
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

/* Input blocks end between characters, so a character is never counted
 * as two invalid halves. */
#define ESC_BLOCK 4096

int smt_json_escape_add(struct smt_dynbuf *b, const char *p, size_t n, int *invalid)
{
	for (size_t i = 0, k; i < n; i += k) {
		char *w;

		k = n - i;
		if (k > ESC_BLOCK)
			k = smt_utf8_cut(p + i, k, ESC_BLOCK);
		w = smt_dynbuf_reserve(b, SMT_JSON_ESCAPE_MAX(k));
		if (!w)
			return smt_dynbuf_room(b) < SMT_JSON_ESCAPE_MAX(k) ? -ENOBUFS : -ENOMEM;
		smt_dynbuf_commit(b, smt_json_escape(p + i, k, w, invalid));
	}
	return 0;
}

char *smt_utf8_sanitize(const char *p, size_t n, size_t *outlen, int *invalid)
{
	char *s = malloc(3 * n + 1);
	size_t o = 0, i = 0;

	if (!s)
		return NULL;
	while (i < n) {
		size_t k = smt_utf8_len((const unsigned char *)p + i, n - i);

		if (k == 0) {
			if (invalid)
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
	if (outlen)
		*outlen = o;
	return s;
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t smt_base64(const unsigned char *p, size_t n, char *out)
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

int smt_text_clean(char *dst, size_t *len, size_t cap, const char *src, size_t n)
{
	const unsigned char *u = (const unsigned char *)src;
	size_t i = 0;
	int cut = 0;

	while (i < n) {
		size_t k = smt_utf8_len(u + i, n - i);

		if (*len + (k ? k : 1) > cap) {
			cut = 1;
			break;
		}
		if (k == 0) {
			dst[(*len)++] = '?';
			i++;
		} else if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			dst[(*len)++] = ' ';
			i++;
		} else {
			memcpy(dst + *len, src + i, k);
			*len += k;
			i += k;
		}
	}
	dst[*len] = '\0';
	return cut;
}

void smt_errorf(char *err, size_t errlen, const char *fmt, ...)
{
	char raw[4096];
	va_list ap;
	size_t o = 0;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	for (const char *p = raw; *p && o + 1 < errlen; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[8];
		size_t n;

		if (c >= 0x20 && c != 0x7f) {
			err[o++] = (char)c;
			continue;
		}
		n = (size_t)snprintf(esc, sizeof(esc), c == '\n' ? "\\n" : c == '\r' ? "\\r" :
				     c == '\t' ? "\\t" : "\\x%02x", c);
		if (o + n + 1 > errlen)
			break;
		memcpy(err + o, esc, n);
		o += n;
	}
	err[o] = '\0';
}

char *smt_text_escape_controls(const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t more = 0, o = 0;
	char *out;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		more += (ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? 3 : 0;
	}
	out = malloc(n + more + 1);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = '\0';
	return out;
}
