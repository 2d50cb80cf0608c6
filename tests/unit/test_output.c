/*
 * test_output.c - line assembly, tagging and forwarding of the ranks'
 * output: real mpirun --xml captures, byte-by-byte feeding, interleaved
 * ranks, a 10 MiB line, the hold cap, binary bytes, JSON validity, the
 * kept lines and the rank table.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "output.h"
#include "testdata.h"

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sput(struct sbuf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sputs(struct sbuf *b, const char *s)
{
	sput(b, s, strlen(s));
}

/* An output writing into two memory files. */
struct fixture {
	int out_fd, msg_fd;
	struct smt_output *o;
};

static void fx_open(struct fixture *fx, enum smt_output_format format, const char *host)
{
	struct smt_output_config cfg = { .format = format, .current_host = host };

	fx->out_fd = memfd_create("out", MFD_CLOEXEC);
	fx->msg_fd = memfd_create("msg", MFD_CLOEXEC);
	assert_true(fx->out_fd >= 0 && fx->msg_fd >= 0);
	cfg.out_fd = fx->out_fd;
	cfg.msg_fd = fx->msg_fd;
	assert_int_equal(smt_output_new(&cfg, &fx->o), 0);
}

static char *fd_contents(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *p = malloc((size_t)n + 1);

	assert_non_null(p);
	assert_int_equal(pread(fd, p, (size_t)n, 0), n);
	p[n] = '\0';
	*len = (size_t)n;
	return p;
}

static void fx_close(struct fixture *fx)
{
	smt_output_free(fx->o);
	close(fx->out_fd);
	close(fx->msg_fd);
}

static void feed_all(struct fixture *fx, enum smt_output_source src, const char *p, size_t n,
		     size_t piece)
{
	for (size_t i = 0; i < n; i += piece)
		assert_int_equal(smt_output_feed(fx->o, src, p + i, n - i < piece ? n - i : piece), 0);
}

static const char ok_out[] =
	"[1,mpirank:1,vm]<stderr>: err <&> 1 \001\377\n"
	"[1,mpirank:0,vm]<stdout>: rank 0 hello\n"
	"[1,mpirank:0,vm]<stdout>: sum 1 done\n"
	"[1,mpirank:0,vm]<stderr>: err <&> 0 \001\377\n"
	"[1,mpirank:1,vm]<stdout>: rank 1 hello\n"
	"[1,mpirank:1,vm]<stdout>: sum 1 done\n";

static const char ok_msg[] =
	" Data for JOB [18255,1] offset 0 Total slots allocated 2\n"
	"MPIR Proctable for job [18255,1]\n"
	"0: Host vm Exe /tmp/wo/./prog Pid 11189\n"
	"1: Host vm Exe /tmp/wo/./prog Pid 11190\n";

static void check_ok_capture(size_t piece)
{
	struct fixture fx;
	size_t n, on, mn;
	char *in = smt_test_data("mpirun-ok.xml", &n, 1);
	char *out, *msg;
	struct smt_output_stats st;

	fx_open(&fx, SMT_OUTPUT_TEXT, "vm");
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, in, n, piece);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_MPIRUN_STDOUT), 0);
	out = fd_contents(fx.out_fd, &on);
	msg = fd_contents(fx.msg_fd, &mn);
	assert_int_equal(on, sizeof(ok_out) - 1);
	assert_memory_equal(out, ok_out, on);
	assert_string_equal(msg, ok_msg);
	smt_output_stats(fx.o, &st);
	assert_int_equal(st.lines, 6);
	assert_int_equal(st.bytes, 12 * 2 + 10 * 2 + 12 * 2);
	assert_int_equal(st.mpirun_lines, 4);
	assert_int_equal(smt_output_rank_count(fx.o), 2);
	assert_string_equal(smt_output_rank_host(fx.o, 1), "vm");
	assert_int_equal(smt_output_rank_pid(fx.o, 0), 11189);
	assert_int_equal(smt_output_rank_pid(fx.o, 1), 11190);
	assert_null(smt_output_rank_host(fx.o, 2));
	free(out);
	free(msg);
	free(in);
	fx_close(&fx);
}

static void test_real_capture(void **state)
{
	(void)state;
	check_ok_capture(1 << 20);
}

static void test_real_capture_bytewise(void **state)
{
	(void)state;
	check_ok_capture(1);
	check_ok_capture(7);
}

static void test_ranks_json(void **state)
{
	struct fixture fx;
	size_t n;
	char *in = smt_test_data("mpirun-ok.xml", &n, 1);
	json_t *a;
	char *s;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "vm");
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, in, n, n);
	a = smt_output_ranks_json(fx.o);
	s = json_dumps(a, JSON_COMPACT);
	assert_string_equal(s, "[{\"rank\":0,\"host\":\"vm\",\"pid\":11189},{\"rank\":1,\"host\":\"vm\",\"pid\":11190}]");
	free(s);
	json_decref(a);
	free(in);
	fx_close(&fx);
}

/* The map, not the current host, names each rank's host. */
static void test_multihost_map(void **state)
{
	static const char in[] =
		"<mpirun>\n<map>\n\t<host name=\"algo-1\" slots=\"2\">\n"
		"\t\t<process rank=\"0\" status=\"INITIALIZED\"/>\n\t\t<process rank=\"1\"/>\n\t</host>\n"
		"\t<host name=\"algo-2\" slots=\"2\">\n\t\t<process rank=\"2\"/>\n\t\t<process rank=\"3\"/>\n"
		"\t</host>\n</map>\n"
		"<stdout rank=\"3\">from three&#010;</stdout>\n<stdout rank=\"9\">no map&#010;</stdout>\n";
	struct fixture fx;
	size_t on;
	char *out;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "algo-1");
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, in, sizeof(in) - 1, 5);
	out = fd_contents(fx.out_fd, &on);
	assert_string_equal(out, "[1,mpirank:3,algo-2]<stdout>: from three\n"
			    "[1,mpirank:9,unknown]<stdout>: no map\n");
	free(out);
	fx_close(&fx);
}

/* Chunks of different ranks interleave inside lines: each rank's line is
 * joined from its own chunks only. */
static void test_interleaved(void **state)
{
	static const char in[] =
		"<stdout rank=\"0\">AAA</stdout><stdout rank=\"1\">BBB&#010;bb</stdout>"
		"<stderr rank=\"0\">E0</stderr><stdout rank=\"0\">aaa&#010;</stdout>"
		"<stdout rank=\"1\">b&#010;</stdout><stderr rank=\"0\">e0&#010;</stderr>"
		"<stdout rank=\"2\">unfinished</stdout>";
	struct fixture fx;
	size_t on;
	char *out;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, in, sizeof(in) - 1, 3);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_MPIRUN_STDOUT), 0);
	out = fd_contents(fx.out_fd, &on);
	assert_string_equal(out,
			    "[1,mpirank:1,unknown]<stdout>: BBB\n"
			    "[1,mpirank:0,unknown]<stdout>: AAAaaa\n"
			    "[1,mpirank:1,unknown]<stdout>: bbb\n"
			    "[1,mpirank:0,unknown]<stderr>: E0e0\n"
			    "[1,mpirank:2,unknown]<stdout>: unfinished\n");
	free(out);
	fx_close(&fx);
}

/* Open MPI's escaping, chunked at most CHUNK bytes as orted does. */
static void encode(struct sbuf *out, int rank, int stream, const unsigned char *p, size_t n,
		   size_t chunk)
{
	for (size_t at = 0; at < n || (n == 0 && at == 0); at += chunk) {
		size_t end = at + chunk < n ? at + chunk : n;
		char tag[64];

		snprintf(tag, sizeof(tag), "<%s rank=\"%d\">", stream ? "stderr" : "stdout", rank);
		sputs(out, tag);
		for (size_t i = at; i < end; i++) {
			char e[8];

			if (p[i] == '<')
				sputs(out, "&lt;");
			else if (p[i] == '>')
				sputs(out, "&gt;");
			else if (p[i] == '&')
				sputs(out, "&amp;");
			else if (p[i] < 0x20 || p[i] > 0x7f) {
				snprintf(e, sizeof(e), "&#%03d;", p[i]);
				sputs(out, e);
			} else {
				sput(out, p + i, 1);
			}
		}
		sputs(out, stream ? "</stderr>\n" : "</stdout>\n");
		if (n == 0)
			break;
	}
}

/* Split OUT into lines and check that each starts with a tag; return the
 * concatenation of rank R stream S's lines' bodies, each followed by
 * '\n'. */
static void lines_of(const char *out, size_t on, int r, int s, struct sbuf *body, size_t *count)
{
	char tag[64];
	size_t tl;
	const char *p = out, *end = out + on;

	snprintf(tag, sizeof(tag), "[1,mpirank:%d,", r);
	tl = strlen(tag);
	*count = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *b;

		assert_non_null(nl);
		assert_true(p[0] == '[' && !memcmp(p, "[1,mpirank:", 11));
		b = memchr(p, '>', (size_t)(nl - p));
		assert_non_null(b);
		assert_true(b[1] == ':' && b[2] == ' ');
		if (!memcmp(p, tag, tl) && !memcmp(b - 6, s ? "stderr" : "stdout", 6)) {
			sput(body, b + 3, (size_t)(nl - b - 3));
			sput(body, "\n", 1);
			(*count)++;
		}
		p = nl + 1;
	}
}

/* A 10 MiB line of rank 0, chunked as mpirun does, while rank 1 writes
 * short lines: the long line arrives whole, as one line. */
static void test_10mib_line(void **state)
{
	size_t n = 10 * 1024 * 1024;
	unsigned char *line = malloc(n + 1);
	struct sbuf enc = { 0 }, body0 = { 0 }, body1 = { 0 };
	struct fixture fx;
	size_t on, c0, c1;
	char *out;
	struct smt_output_stats st;

	(void)state;
	for (size_t i = 0; i < n; i++)
		line[i] = (unsigned char)('A' + i % 50);
	line[n] = '\n';
	for (size_t at = 0; at <= n; at += 1024 * 1024) {
		size_t k = at + 1024 * 1024 <= n + 1 ? 1024 * 1024 : n + 1 - at;
		char l1[64];

		encode(&enc, 0, 0, line + at, k, 4096);
		snprintf(l1, sizeof(l1), "short %zu\n", at);
		encode(&enc, 1, 0, (const unsigned char *)l1, strlen(l1), 4096);
	}
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, enc.p, enc.len, 65536);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_MPIRUN_STDOUT), 0);
	out = fd_contents(fx.out_fd, &on);
	lines_of(out, on, 0, 0, &body0, &c0);
	lines_of(out, on, 1, 0, &body1, &c1);
	assert_int_equal(c0, 1);
	assert_int_equal(body0.len, n + 1);
	assert_memory_equal(body0.p, line, n + 1);
	assert_int_equal(c1, 11);
	assert_true(!strncmp(body1.p, "short 0\nshort 1048576\n", 22));
	smt_output_stats(fx.o, &st);
	assert_int_equal(st.lines, 12);
	assert_int_equal(st.split_lines, 0);
	/* The log ring keeps the head of the long line only. */
	{
		json_t *a = smt_output_logs_json(fx.o, 100, 0);

		assert_int_equal(json_array_size(a), 1);
		assert_true(json_is_true(json_object_get(json_array_get(a, 0), "truncated")));
		assert_int_equal(json_string_length(json_object_get(json_array_get(a, 0), "line")),
				 SMT_OUTPUT_KEEP_LINE_MAX);
		json_decref(a);
	}
	free(out);
	free(body0.p);
	free(body1.p);
	free(enc.p);
	free(line);
	fx_close(&fx);
}

/* Raw mode with one 10 MiB line in a single feed. */
static void test_10mib_line_raw(void **state)
{
	size_t n = 10 * 1024 * 1024, on;
	char *line = malloc(n + 1);
	struct fixture fx;
	char *out;
	const char *tag = "[1,mpirank:0,algo-1]<stdout>: ";

	(void)state;
	memset(line, 'x', n);
	line[n] = '\n';
	fx_open(&fx, SMT_OUTPUT_TEXT, "algo-1");
	assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDOUT, line, n + 1), 0);
	out = fd_contents(fx.out_fd, &on);
	assert_int_equal(on, strlen(tag) + n + 1);
	assert_memory_equal(out, tag, strlen(tag));
	assert_memory_equal(out + strlen(tag), line, n + 1);
	free(out);
	free(line);
	fx_close(&fx);
}

/* While rank 0's endless line streams, rank 1's lines wait; past the hold
 * cap rank 0's line is cut with the mark, and nothing is lost. */
static void test_hold_cap(void **state)
{
	struct fixture fx;
	struct sbuf enc = { 0 }, body0 = { 0 }, body1 = { 0 }, want0 = { 0 };
	char chunk[4096];
	size_t total1 = 0, on, c0, c1, lines1 = 0;
	char *out, *p;
	struct smt_output_stats st;

	(void)state;
	memset(chunk, 'z', sizeof(chunk));
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	/* Rank 0 starts streaming. */
	for (int i = 0; i < 20; i++) {
		enc.len = 0;
		encode(&enc, 0, 0, (unsigned char *)chunk, sizeof(chunk), 4096);
		sput(&want0, chunk, sizeof(chunk));
		feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, enc.p, enc.len, enc.len);
	}
	/* Rank 1 writes more than the hold cap in short lines. */
	while (total1 < SMT_OUTPUT_HOLD_CAP + SMT_OUTPUT_HOLD_CAP / 4) {
		char l[128];
		int k = snprintf(l, sizeof(l), "line %zu of rank one, padded to be a bit longer\n", lines1++);

		enc.len = 0;
		encode(&enc, 1, 0, (unsigned char *)l, (size_t)k, 4096);
		feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, enc.p, enc.len, enc.len);
		total1 += (size_t)k;
	}
	enc.len = 0;
	encode(&enc, 0, 0, (const unsigned char *)"END\n", 4, 4096);
	sput(&want0, "END\n", 4);
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, enc.p, enc.len, enc.len);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_MPIRUN_STDOUT), 0);
	smt_output_stats(fx.o, &st);
	assert_int_equal(st.split_lines, 1);
	out = fd_contents(fx.out_fd, &on);
	lines_of(out, on, 0, 0, &body0, &c0);
	lines_of(out, on, 1, 0, &body1, &c1);
	assert_int_equal(c1, lines1);
	assert_int_equal(body1.len, total1);
	assert_int_equal(c0, 2);
	/* Without the mark and the cut, rank 0's bytes are all there. */
	p = strstr(body0.p, SMT_OUTPUT_SPLIT_MARK "\n");
	assert_non_null(p);
	memmove(p, p + strlen(SMT_OUTPUT_SPLIT_MARK "\n"), body0.len - (size_t)(p - body0.p) - strlen(SMT_OUTPUT_SPLIT_MARK "\n") + 1);
	assert_string_equal(body0.p, want0.p);
	free(out);
	free(body0.p);
	free(body1.p);
	free(want0.p);
	free(enc.p);
	fx_close(&fx);
}

/* Random binary bytes of a standalone program pass through exactly. */
static void test_raw_binary(void **state)
{
	struct fixture fx;
	struct sbuf want = { 0 }, body = { 0 };
	unsigned char *in = malloc(1 << 20);
	size_t on, count, nl = 0;
	char *out;

	(void)state;
	srand(7);
	for (size_t i = 0; i < (1 << 20); i++) {
		in[i] = (unsigned char)(rand() % 256);
		nl += in[i] == '\n';
	}
	fx_open(&fx, SMT_OUTPUT_TEXT, "host-a");
	for (size_t i = 0; i < (1 << 20);) {
		size_t k = (size_t)(rand() % 5000) + 1;

		if (k > (1 << 20) - i)
			k = (1 << 20) - i;
		assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDERR, in + i, k), 0);
		i += k;
	}
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_CHILD_STDERR), 0);
	out = fd_contents(fx.out_fd, &on);
	lines_of(out, on, 0, 1, &body, &count);
	sput(&want, in, 1 << 20);
	if (in[(1 << 20) - 1] != '\n') {
		sput(&want, "\n", 1);
		nl++;
	}
	assert_int_equal(count, nl);
	assert_int_equal(body.len, want.len);
	assert_memory_equal(body.p, want.p, want.len);
	assert_true(!memcmp(out, "[1,mpirank:0,host-a]<stderr>: ", 30));
	free(out);
	free(body.p);
	free(want.p);
	free(in);
	fx_close(&fx);
}

static const signed char b64v[256] = {
	['A'] = 0, ['B'] = 1, ['C'] = 2, ['D'] = 3, ['E'] = 4, ['F'] = 5, ['G'] = 6,
	['H'] = 7, ['I'] = 8, ['J'] = 9, ['K'] = 10, ['L'] = 11, ['M'] = 12, ['N'] = 13,
	['O'] = 14, ['P'] = 15, ['Q'] = 16, ['R'] = 17, ['S'] = 18, ['T'] = 19, ['U'] = 20,
	['V'] = 21, ['W'] = 22, ['X'] = 23, ['Y'] = 24, ['Z'] = 25, ['a'] = 26, ['b'] = 27,
	['c'] = 28, ['d'] = 29, ['e'] = 30, ['f'] = 31, ['g'] = 32, ['h'] = 33, ['i'] = 34,
	['j'] = 35, ['k'] = 36, ['l'] = 37, ['m'] = 38, ['n'] = 39, ['o'] = 40, ['p'] = 41,
	['q'] = 42, ['r'] = 43, ['s'] = 44, ['t'] = 45, ['u'] = 46, ['v'] = 47, ['w'] = 48,
	['x'] = 49, ['y'] = 50, ['z'] = 51, ['0'] = 52, ['1'] = 53, ['2'] = 54, ['3'] = 55,
	['4'] = 56, ['5'] = 57, ['6'] = 58, ['7'] = 59, ['8'] = 60, ['9'] = 61, ['+'] = 62,
	['/'] = 63,
};

static void unbase64(const char *s, struct sbuf *out)
{
	size_t n = strlen(s);

	assert_int_equal(n % 4, 0);
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = (uint32_t)b64v[(unsigned char)s[i]] << 18 |
			(uint32_t)b64v[(unsigned char)s[i + 1]] << 12;
		unsigned char b[3];
		size_t k = 1;

		if (s[i + 2] != '=') {
			v |= (uint32_t)b64v[(unsigned char)s[i + 2]] << 6;
			k = 2;
		}
		if (s[i + 3] != '=') {
			v |= (uint32_t)b64v[(unsigned char)s[i + 3]];
			k = 3;
		}
		b[0] = (unsigned char)(v >> 16);
		b[1] = (unsigned char)(v >> 8);
		b[2] = (unsigned char)v;
		sput(out, b, k);
	}
}

/* Parse JSON-mode output: every line one valid object; the bytes of rank
 * R's stream S rebuilt from "line" / "line_b64" and "partial". */
static void json_lines(const char *out, size_t on, int r, const char *s, struct sbuf *bytes,
		       size_t *objects, size_t *b64s)
{
	const char *p = out, *end = out + on;

	*objects = *b64s = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		json_error_t err;
		json_t *o, *b64;

		assert_non_null(nl);
		o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
		if (!o)
			fail_msg("invalid JSON line: %s: %.100s", err.text, p);
		assert_true(json_is_string(json_object_get(o, "time")));
		assert_int_equal(strlen(json_string_value(json_object_get(o, "time"))), 24);
		assert_true(json_is_string(json_object_get(o, "host")));
		if (json_integer_value(json_object_get(o, "rank")) == r &&
		    !strcmp(json_string_value(json_object_get(o, "stream")), s)) {
			b64 = json_object_get(o, "line_b64");
			if (b64) {
				unbase64(json_string_value(b64), bytes);
				(*b64s)++;
			} else {
				json_t *l = json_object_get(o, "line");

				sput(bytes, json_string_value(l), json_string_length(l));
			}
			if (!json_is_true(json_object_get(o, "partial")))
				sput(bytes, "\n", 1);
			(*objects)++;
		}
		json_decref(o);
		p = nl + 1;
	}
}

static void test_json_mode(void **state)
{
	struct fixture fx;
	struct sbuf enc = { 0 }, want = { 0 }, got = { 0 };
	size_t on, objects, b64s;
	char *out;
	unsigned char line[600];
	static const char *const texts[] = {
		"plain ascii", "quote \" backslash \\ tab \t nul", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		"", "\x7f del",
	};

	(void)state;
	fx_open(&fx, SMT_OUTPUT_JSON, "h");
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		sputs(&want, texts[i]);
		sputs(&want, "\n");
	}
	sput(&want, "nul\0byte\n", 9);
	encode(&enc, 2, 1, (const unsigned char *)want.p, want.len, 7);
	srand(99);
	for (int k = 0; k < 200; k++) {
		for (size_t i = 0; i < sizeof(line) - 1; i++) {
			line[i] = (unsigned char)(rand() % 256);
			if (line[i] == '\n')
				line[i] = 'n';
		}
		line[sizeof(line) - 1] = '\n';
		sput(&want, line, sizeof(line));
		encode(&enc, 2, 1, line, sizeof(line), 50);
	}
	feed_all(&fx, SMT_SRC_MPIRUN_STDOUT, enc.p, enc.len, 1000);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_MPIRUN_STDOUT), 0);
	out = fd_contents(fx.out_fd, &on);
	json_lines(out, on, 2, "stderr", &got, &objects, &b64s);
	assert_int_equal(objects, 206);
	assert_true(b64s >= 190);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.p, want.p, want.len);
	/* Valid UTF-8 stays readable in "line", with no base64. */
	assert_non_null(strstr(out, "\"line\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}"));
	assert_non_null(strstr(out, "\"line\":\"quote \\\" backslash \\\\ tab \\t nul\"}"));
	assert_non_null(strstr(out, "\"line\":\"nul\\u0000byte\"}"));
	free(out);
	free(enc.p);
	free(want.p);
	free(got.p);
	fx_close(&fx);
}

/* In JSON mode a long line comes in pieces marked "partial", cut between
 * UTF-8 characters. */
static void test_json_long_line(void **state)
{
	struct fixture fx;
	struct sbuf want = { 0 }, got = { 0 };
	size_t on, objects, b64s, n = 3 * SMT_OUTPUT_LINE_CAP + 100;
	char *out;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_JSON, "h");
	for (size_t i = 0; i + 3 <= n; i += 3)
		sput(&want, "\xe2\x82\xac", 3);      /* no cut lands on a character boundary by chance */
	sput(&want, "x\n", 2);
	feed_all(&fx, SMT_SRC_CHILD_STDOUT, want.p, want.len, 10000);
	out = fd_contents(fx.out_fd, &on);
	json_lines(out, on, 0, "stdout", &got, &objects, &b64s);
	assert_int_equal(objects, 4);
	assert_int_equal(b64s, 0);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.p, want.p, want.len);
	free(out);
	free(want.p);
	free(got.p);
	fx_close(&fx);
}

static void test_json_messages(void **state)
{
	struct fixture fx;
	size_t on;
	char *msg;
	json_t *o;
	static const char in[] = "ssh: Could not resolve hostname x: \"bad\"\n";

	(void)state;
	fx_open(&fx, SMT_OUTPUT_JSON, "algo-1");
	assert_int_equal(smt_output_feed(fx.o, SMT_SRC_MPIRUN_STDERR, in, sizeof(in) - 1), 0);
	msg = fd_contents(fx.msg_fd, &on);
	o = json_loads(msg, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "stream")), "mpirun");
	assert_string_equal(json_string_value(json_object_get(o, "host")), "algo-1");
	assert_string_equal(json_string_value(json_object_get(o, "line")),
			    "ssh: Could not resolve hostname x: \"bad\"");
	json_decref(o);
	free(msg);
	fx_close(&fx);
}

static void test_unterminated_at_eof(void **state)
{
	struct fixture fx;
	size_t on;
	char *out;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDOUT, "a\nb", 3), 0);
	assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDERR, "e", 1), 0);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_CHILD_STDOUT), 0);
	out = fd_contents(fx.out_fd, &on);
	assert_string_equal(out, "[1,mpirank:0,h]<stdout>: a\n[1,mpirank:0,h]<stdout>: b\n");
	free(out);
	assert_int_equal(smt_output_eof(fx.o, SMT_SRC_CHILD_STDERR), 0);
	out = fd_contents(fx.out_fd, &on);
	assert_string_equal(out + 54, "[1,mpirank:0,h]<stderr>: e\n");
	free(out);
	fx_close(&fx);
}

struct collect {
	struct sbuf s;
	size_t n;
};

static int collect(void *arg, const char *line, size_t len, int truncated)
{
	struct collect *c = arg;

	(void)truncated;
	sput(&c->s, line, len);
	sput(&c->s, "|", 1);
	c->n++;
	return 0;
}

static void test_tails_and_logs(void **state)
{
	struct fixture fx;
	struct collect c = { 0 };
	char line[64], *text;
	size_t len, n;
	const char *fe;
	json_t *a;

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	for (int i = 0; i < 100; i++) {
		int k = snprintf(line, sizeof(line), "err %d\n", i);

		assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDERR, line, (size_t)k), 0);
		k = snprintf(line, sizeof(line), "out %d\n", i);
		assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDOUT, line, (size_t)k), 0);
		if (i == 50)
			assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDERR,
							 "RuntimeError: boom\n", 19), 0);
	}
	smt_output_rank_tail(fx.o, 0, collect, &c);
	assert_int_equal(c.n, SMT_OUTPUT_RANK_TAIL_LINES);
	assert_true(!strncmp(c.s.p + c.s.len - 14, "err 98|err 99|", 14));
	assert_null(strstr(c.s.p, "out"));
	fe = smt_output_rank_first_error(fx.o, 0, &n);
	assert_non_null(fe);
	assert_string_equal(fe, "RuntimeError: boom");
	assert_null(smt_output_rank_first_error(fx.o, 1, &n));
	assert_int_equal(smt_output_logs_text(fx.o, 3, -1, &text, &len), 0);
	assert_string_equal(text, "[1,mpirank:0,h]<stdout>: out 98\n[1,mpirank:0,h]<stderr>: err 99\n"
			    "[1,mpirank:0,h]<stdout>: out 99\n");
	assert_int_equal(len, strlen(text));
	free(text);
	assert_int_equal(smt_output_logs_text(fx.o, 5, 3, &text, &len), 0);
	assert_string_equal(text, "");
	free(text);
	a = smt_output_logs_json(fx.o, 2, 0);
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "line")), "out 99");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "stream")), "stdout");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 1), "rank")), 0);
	json_decref(a);
	free(c.s.p);
	fx_close(&fx);
}

static void test_log_ring_bounded(void **state)
{
	struct fixture fx;
	char *text;
	size_t len;
	json_t *a;
	char line[300];

	(void)state;
	fx_open(&fx, SMT_OUTPUT_TEXT, "h");
	memset(line, 'q', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 20000; i++)
		assert_int_equal(smt_output_feed(fx.o, SMT_SRC_CHILD_STDOUT, line, sizeof(line)), 0);
	a = smt_output_logs_json(fx.o, 1000000, -1);
	/* Bounded by bytes: 2 MiB / 299 bytes. */
	assert_int_equal(json_array_size(a), SMT_OUTPUT_LOG_BYTES / 299);
	json_decref(a);
	assert_int_equal(smt_output_logs_text(fx.o, 1000000, -1, &text, &len), 0);
	assert_int_equal(len, (SMT_OUTPUT_LOG_BYTES / 299) * (299 + 26));
	free(text);
	fx_close(&fx);
}

static void test_write_error(void **state)
{
	struct smt_output_config cfg = { .format = SMT_OUTPUT_TEXT, .current_host = "h", .msg_fd = -1 };
	struct smt_output *o;
	struct smt_output_stats st;
	int p[2];

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	cfg.out_fd = p[1];
	assert_int_equal(smt_output_new(&cfg, &o), 0);
	assert_int_equal(smt_output_feed(o, SMT_SRC_CHILD_STDOUT, "x\n", 2), -EPIPE);
	assert_int_equal(smt_output_feed(o, SMT_SRC_CHILD_STDERR, "Error: y\n", 9), 0);
	smt_output_stats(o, &st);
	assert_int_equal(st.write_error, -EPIPE);
	assert_int_equal(st.lines, 2);
	assert_true(st.dropped_bytes > 0);
	/* Kept all the same, for the report. */
	{
		json_t *a = smt_output_logs_json(o, 5, 0);

		assert_int_equal(json_array_size(a), 2);
		json_decref(a);
	}
	smt_output_free(o);
	close(p[1]);
}

/* Not an assertion on speed (the machine is shared): prints how fast the
 * decoder and forwarding go, for the record. */
static void test_throughput(void **state)
{
	struct smt_output_config cfg = { .format = SMT_OUTPUT_TEXT, .current_host = "h", .msg_fd = -1 };
	struct smt_output *o;
	struct sbuf enc = { 0 };
	struct timespec t0, t1;
	size_t total = 0;
	double s;
	char line[100];

	(void)state;
	cfg.out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(cfg.out_fd >= 0);
	memset(line, 'x', sizeof(line));
	line[99] = '\n';
	for (int i = 0; i < 600; i++)
		encode(&enc, i % 4, 0, (unsigned char *)line, sizeof(line), 4096);
	assert_int_equal(smt_output_new(&cfg, &o), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (total < (size_t)256 << 20) {
		for (size_t i = 0; i < enc.len; i += 65536)
			smt_output_feed(o, SMT_SRC_MPIRUN_STDOUT, enc.p + i,
					enc.len - i < 65536 ? enc.len - i : 65536);
		total += enc.len;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("output: %.0f MiB/s of mpirun --xml (100-byte lines)\n",
		      (double)total / (1 << 20) / s);
	smt_output_free(o);
	close(cfg.out_fd);
	free(enc.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_capture),
		cmocka_unit_test(test_real_capture_bytewise),
		cmocka_unit_test(test_ranks_json),
		cmocka_unit_test(test_multihost_map),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_10mib_line),
		cmocka_unit_test(test_10mib_line_raw),
		cmocka_unit_test(test_hold_cap),
		cmocka_unit_test(test_raw_binary),
		cmocka_unit_test(test_json_mode),
		cmocka_unit_test(test_json_long_line),
		cmocka_unit_test(test_json_messages),
		cmocka_unit_test(test_unterminated_at_eof),
		cmocka_unit_test(test_tails_and_logs),
		cmocka_unit_test(test_log_ring_bounded),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_throughput),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
