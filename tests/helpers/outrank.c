/*
 * outrank - a rank that writes awkward output, the same bytes every time.
 *
 *   outrank [--seed S] [--bytes N] [--rank R]
 *
 * Writes exactly N bytes (default 10 MiB) to stdout, a pseudo-random
 * sequence fixed by S and the rank (R, else OMPI_COMM_WORLD_RANK, else 0),
 * so that a test can run it again outside the job and compare checksums.
 * The bytes mix what a framer of lines finds hard:
 *   - short lines of multi-byte UTF-8 (2, 3 and 4 bytes: é, 数据, 🙂, ─┼─),
 *     written in writes of random sizes that cut lines and characters
 *     anywhere;
 *   - single write() calls of 1 MiB of multi-byte UTF-8 with no newline
 *     (the line goes on in the next writes);
 *   - lines of several MiB, written in pieces of up to 512 KiB;
 *   - control bytes (NUL, ESC sequences, CR, BEL, DEL, tabs);
 *   - invalid UTF-8 (stray continuation bytes, 0xfe 0xff, overlong forms,
 *     surrogates, a sequence cut short by the end of its line);
 *   - lines holding what looks like smtd's tags, "[1,mpirank:7,algo-9]<stdout>: "
 *     at their start and "]<stdout>: " inside;
 *   - empty lines.
 * The last byte is a newline.  Writes only through write(2): no stdio
 * buffer decides where writes end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define PEND_MAX (64 * 1024)

static uint64_t state;
static size_t limit, produced;
static char pend[PEND_MAX];
static size_t plen, cut_at;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(1, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			perror("outrank: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Small output is gathered and written in writes of random sizes (1 byte
 * to 16 KiB), cut wherever the size falls: in a line, in a character. */
static void new_cut(void)
{
	cut_at = 1 + below(below(4) == 0 ? 16384 : 600);
}

static void put(const char *p, size_t n)
{
	produced += n;
	while (n) {
		size_t take = cut_at - plen < n ? cut_at - plen : n;
		memcpy(pend + plen, p, take);
		plen += take;
		p += take;
		n -= take;
		if (plen == cut_at) {
			write_all(pend, plen);
			plen = 0;
			new_cut();
		}
	}
}

static void put_str(const char *s)
{
	put(s, strlen(s));
}

static void flush_pending(void)
{
	write_all(pend, plen);
	plen = 0;
	new_cut();
}

static const char *const words[] = {
	"loss", "epoch", "0.25", "step", "é", "naïve", "数据", "训练", "🙂", "🚀",
	"─┼─", "│", "╔═╗", "Ωμέγα", "привет", "→", "≈", "ß", "\t", " ", "Ä", "日本語",
	"tqdm", "100%|██████████|", "€", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
};

/* UTF-8 text of about LEN bytes into B (whole characters), no newline. */
static size_t text(char *b, size_t len)
{
	size_t n = 0;

	while (n < len) {
		const char *w = words[below(sizeof(words) / sizeof(words[0]))];
		size_t wl = strlen(w);
		if (n + wl + 1 > len)
			break;
		memcpy(b + n, w, wl);
		n += wl;
		b[n++] = ' ';
	}
	return n;
}

static void line_text(void)
{
	char b[512];
	size_t n = text(b, below(300));
	b[n++] = '\n';
	put(b, n);
}

static void line_control(void)
{
	static const char *const bits[] = {
		"\x1b[31mred\x1b[0m", "\r", "\a", "\x7f", "\t", "\x0c", "\x0b", "\x1b]0;title\x07",
		"carriage\rreturn", "\x01\x02\x03", "back\bspace",
	};
	char b[256];
	size_t n = 0;

	for (int i = 0, k = 1 + (int)below(8); i < k; i++) {
		const char *s = bits[below(sizeof(bits) / sizeof(bits[0]))];
		memcpy(b + n, s, strlen(s));
		n += strlen(s);
	}
	/* NUL bytes too: nothing may treat a line as a C string. */
	b[n++] = '\0';
	b[n++] = 'z';
	b[n++] = '\0';
	b[n++] = '\n';
	put(b, n);
}

static void line_invalid(void)
{
	static const char *const bad[] = {
		"\x80", "\xbf\xbf", "\xfe", "\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xc3", "\xe4\xb8", "\xf0\x9f\x98", "caf\xe9",
	};
	char b[256];
	size_t n = text(b, below(60));

	for (int i = 0, k = 1 + (int)below(6); i < k; i++) {
		const char *s = bad[below(sizeof(bad) / sizeof(bad[0]))];
		memcpy(b + n, s, strlen(s));
		n += strlen(s);
		n += text(b + n, below(20));
	}
	/* Sometimes a sequence cut short by the end of the line. */
	if (below(2)) {
		b[n++] = '\xe6';
		b[n++] = '\x95';
	}
	b[n++] = '\n';
	put(b, n);
}

static void line_tags(void)
{
	char b[512];
	size_t n = 0;

	if (below(2))
		n += (size_t)sprintf(b, "[1,mpirank:%d,algo-9]<stdout>: ", (int)below(100));
	n += text(b + n, below(40));
	n += (size_t)sprintf(b + n, "]<stdout>: ");
	n += text(b + n, below(40));
	n += (size_t)sprintf(b + n, "[1,mpirank:3,x]<stderr>: ]<stdout>: ");
	b[n++] = '\n';
	put(b, n);
}

/* One write() of N bytes of multi-byte UTF-8 and no newline. */
static void big_write(size_t n)
{
	static const char *const chars[] = { "é", "数", "🙂", "─", "a", "Ω" };
	char *b = malloc(n);
	size_t k = 0;

	if (!b) {
		perror("outrank: malloc");
		exit(1);
	}
	while (k < n) {
		const char *c = chars[below(sizeof(chars) / sizeof(chars[0]))];
		size_t cl = strlen(c);
		if (k + cl > n)
			c = "x", cl = 1;
		memcpy(b + k, c, cl);
		k += cl;
	}
	flush_pending();
	write_all(b, n);
	produced += n;
	free(b);
}

/* A line of N bytes (with its newline) in writes of up to 512 KiB: text,
 * control and invalid bytes, and now and then a tag lookalike. */
static void long_line(size_t n)
{
	char *b = malloc(n);
	size_t k = 0;

	if (!b) {
		perror("outrank: malloc");
		exit(1);
	}
	while (k + 600 < n) {
		switch (below(8)) {
		case 0:
			b[k++] = (char)(0x80 + below(0x80));
			break;
		case 1: {
			char c = (char)below(0x20);
			b[k++] = c == '\n' ? ' ' : c;
			break;
		}
		case 2:
			k += (size_t)sprintf(b + k, "]<stdout>: ");
			break;
		default:
			k += text(b + k, 1 + below(500));
		}
	}
	while (k < n - 1)
		b[k++] = 'y';
	b[k++] = '\n';
	flush_pending();
	for (size_t off = 0; off < n;) {
		size_t w = 1 + below(512 * 1024);
		if (w > n - off)
			w = n - off;
		write_all(b + off, w);
		off += w;
	}
	produced += n;
	free(b);
}

int main(int argc, char **argv)
{
	unsigned long long seed = 1;
	long rank = -1;
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	size_t big, lng;
	/* Big pieces at these fractions of the output. */
	struct { double at; int kind; double size; int done; } ev[] = {
		{ 0.10, 'B', 0, 0 }, { 0.25, 'L', 0.30, 0 }, { 0.60, 'B', 0, 0 },
		{ 0.75, 'B', 0, 0 }, { 0.85, 'L', 0.10, 0 },
	};

	limit = 10 * MIB;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			limit = (size_t)strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
			rank = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: outrank [--seed S] [--bytes N] [--rank R]\n");
			return 2;
		}
	}
	if (rank < 0)
		rank = r ? atol(r) : 0;
	if (limit < 1024) {
		fprintf(stderr, "outrank: --bytes must be at least 1024\n");
		return 2;
	}
	state = seed * 1000003ull + (uint64_t)rank;
	new_cut();
	big = limit / 10 < MIB ? limit / 10 : MIB;
	while (produced + 1024 < limit) {
		size_t left = limit - produced - 1;
		int fired = 0;

		for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
			if (ev[i].done || produced < (size_t)(ev[i].at * (double)limit))
				continue;
			ev[i].done = fired = 1;
			if (ev[i].kind == 'B' && big < left) {
				big_write(big);
			} else if (ev[i].kind == 'L') {
				lng = (size_t)(ev[i].size * (double)limit);
				if (lng < left)
					long_line(lng);
			}
			break;
		}
		if (fired)
			continue;
		switch (below(20)) {
		case 0: case 1:
			line_control();
			break;
		case 2: case 3:
			line_invalid();
			break;
		case 4: case 5:
			line_tags();
			break;
		case 6:
			put_str("\n");
			break;
		default:
			line_text();
		}
	}
	/* The rest: one line of ASCII up to the exact size. */
	while (produced < limit - 1)
		put("z", 1);
	put("\n", 1);
	flush_pending();
	return 0;
}
