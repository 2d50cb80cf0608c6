/*
 * test_xmlstream.c - the mpirun --xml decoder on real captures of Open MPI
 * 4.1.4 (tests/data/mpirun-*.xml) and on synthetic streams: every cut
 * position, byte-by-byte feeding, entities, malformed input, and
 * decode(encode(x)) == x for random bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmlstream.h"
#include "testdata.h"

#define NRANKS 8

struct sbuf {
	char *p;
	size_t len, cap;
};

/* What the decoder handed over: per rank and stream, mpirun's own chunks
 * (rank -1), the outside text and the map, each concatenated. */
struct got {
	struct sbuf rank[NRANKS][2];
	struct sbuf own[2];
	struct sbuf text;
	struct sbuf map;
	size_t runs;
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

static void sfree(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void got_free(struct got *g)
{
	for (int r = 0; r < NRANKS; r++)
		for (int s = 0; s < 2; s++)
			sfree(&g->rank[r][s]);
	sfree(&g->own[0]);
	sfree(&g->own[1]);
	sfree(&g->text);
	sfree(&g->map);
}

static void on_data(void *arg, int rank, enum smt_xml_stream stream,
		    const char *buf, size_t len)
{
	struct got *g = arg;

	assert_true(len > 0);
	assert_true(len <= SMT_XML_RUN_MAX);
	g->runs++;
	if (rank < 0)
		sput(&g->own[stream], buf, len);
	else if (rank < NRANKS)
		sput(&g->rank[rank][stream], buf, len);
	else
		fail_msg("rank %d", rank);
}

static void on_text(void *arg, const char *buf, size_t len)
{
	struct got *g = arg;

	assert_true(len > 0 && len <= SMT_XML_RUN_MAX);
	sput(&g->text, buf, len);
}

static void on_map(void *arg, int rank, const char *host)
{
	struct got *g = arg;
	char line[300];

	snprintf(line, sizeof(line), "%d=%s;", rank, host);
	sput(&g->map, line, strlen(line));
}

static const struct smt_xml_handler handler = {
	.data = on_data, .text = on_text, .map = on_map,
};

/* Decode IN (N bytes) cut into pieces at the positions CUTS[] (sorted). */
static void decode_cuts(const char *in, size_t n, const size_t *cuts, size_t ncuts,
			struct got *g)
{
	struct smt_xml *x;
	size_t at = 0;

	memset(g, 0, sizeof(*g));
	assert_int_equal(smt_xml_new(&handler, g, &x), 0);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		smt_xml_feed(x, in + at, end - at);
		at = end;
	}
	smt_xml_finish(x);
	smt_xml_free(x);
}

static void decode(const char *in, size_t n, struct got *g)
{
	decode_cuts(in, n, NULL, 0, g);
}

static void assert_same(const struct got *a, const struct got *b)
{
	const struct sbuf *pa[] = { &a->own[0], &a->own[1], &a->text, &a->map };
	const struct sbuf *pb[] = { &b->own[0], &b->own[1], &b->text, &b->map };

	for (int r = 0; r < NRANKS; r++)
		for (int s = 0; s < 2; s++) {
			assert_int_equal(a->rank[r][s].len, b->rank[r][s].len);
			if (a->rank[r][s].len)
				assert_memory_equal(a->rank[r][s].p, b->rank[r][s].p, a->rank[r][s].len);
		}
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(pa[i]->len, pb[i]->len);
		if (pa[i]->len)
			assert_memory_equal(pa[i]->p, pb[i]->p, pa[i]->len);
	}
}

static void test_real_ok(void **state)
{
	size_t n;
	char *in = smt_test_data("mpirun-ok.xml", &n, 1);
	struct got g;

	(void)state;
	decode(in, n, &g);
	assert_string_equal(g.rank[0][0].p, "rank 0 hello\nsum 1 done\n");
	assert_string_equal(g.rank[1][0].p, "rank 1 hello\nsum 1 done\n");
	assert_int_equal(g.rank[0][1].len, 13);
	assert_memory_equal(g.rank[0][1].p, "err <&> 0 \001\377\n", 13);
	assert_memory_equal(g.rank[1][1].p, "err <&> 1 \001\377\n", 13);
	assert_string_equal(g.map.p, "0=vm;1=vm;");
	assert_non_null(strstr(g.text.p, " Data for JOB [18255,1] offset 0 Total slots allocated 2\n"));
	assert_non_null(strstr(g.text.p, "\nMPIR Proctable for job [18255,1]\n0: Host vm Exe /tmp/wo/./prog Pid 11189\n"));
	assert_null(strstr(g.text.p, "<"));
	assert_int_equal(g.own[1].len, 0);
	got_free(&g);
	free(in);
}

static void test_real_own_messages(void **state)
{
	size_t n;
	char *in = smt_test_data("mpirun-exit3.xml", &n, 1);
	struct got g;

	(void)state;
	decode(in, n, &g);
	assert_non_null(strstr(g.own[1].p, "\n  Process name: [[18242,1],1]\n  Exit code:    3\n"));
	assert_string_equal(g.rank[1][1].p, "err <&> 1 \001\377\nrank 1 giving up\n");
	got_free(&g);
	free(in);
}

static void test_real_chunks_join(void **state)
{
	size_t n;
	char *in = smt_test_data("mpirun-python-valueerror.xml", &n, 1);
	struct got g;
	const char *tail;

	(void)state;
	decode(in, n, &g);
	/* The last line comes as two chunks: "ValueError" and ": shapes...". */
	tail = g.rank[1][1].p + g.rank[1][1].len - strlen("ValueError: shapes do not match\n");
	assert_string_equal(tail, "ValueError: shapes do not match\n");
	assert_non_null(strstr(g.rank[1][1].p, "  File \"<frozen runpy>\", line 198, in _run_module_as_main\n"));
	assert_non_null(strstr(g.own[1].p, "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n"));
	got_free(&g);
	free(in);
}

static void test_real_all_bytes(void **state)
{
	size_t n;
	char *in = smt_test_data("mpirun-bytes.xml", &n, 1);
	struct got g;
	unsigned char want[262];

	(void)state;
	for (int i = 0; i < 256; i++)
		want[i] = (unsigned char)i;
	memcpy(want + 256, "\n\"'x\t\n", 6);
	decode(in, n, &g);
	assert_int_equal(g.rank[0][0].len, sizeof(want));
	assert_memory_equal(g.rank[0][0].p, want, sizeof(want));
	assert_int_equal(g.rank[0][1].len, 70001);
	for (size_t i = 0; i < 70000; i++)
		if (g.rank[0][1].p[i] != 'a' + (char)(i % 26))
			fail_msg("byte %zu", i);
	assert_int_equal(g.rank[0][1].p[70000], '\n');
	got_free(&g);
	free(in);
}

/* Every real capture, cut at every position, decodes as a whole. */
static void test_every_cut(void **state)
{
	static const char *const files[] = {
		"mpirun-ok.xml", "mpirun-python-valueerror.xml", "mpirun-segv.xml",
		"mpirun-missing.xml", "mpirun-bytes.xml",
	};

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t n;
		char *in = smt_test_data(files[f], &n, 1);
		struct got whole, cut;
		size_t step = n > 20000 ? 97 : 1;

		decode(in, n, &whole);
		for (size_t i = 0; i <= n; i += step) {
			decode_cuts(in, n, &i, 1, &cut);
			assert_same(&whole, &cut);
			got_free(&cut);
		}
		got_free(&whole);
		free(in);
	}
}

static void test_byte_by_byte(void **state)
{
	static const char *const files[] = {
		"mpirun-ok.xml", "mpirun-python-valueerror.xml", "mpirun-segv.xml",
		"mpirun-bytes.xml", "mpirun-noslots.xml",
	};

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t n;
		char *in = smt_test_data(files[f], &n, 1);
		struct got whole, bytes;
		struct smt_xml *x;

		decode(in, n, &whole);
		memset(&bytes, 0, sizeof(bytes));
		assert_int_equal(smt_xml_new(&handler, &bytes, &x), 0);
		for (size_t i = 0; i < n; i++)
			smt_xml_feed(x, in + i, 1);
		smt_xml_finish(x);
		smt_xml_free(x);
		assert_same(&whole, &bytes);
		got_free(&whole);
		got_free(&bytes);
		free(in);
	}
}

static void test_entities(void **state)
{
	static const char in[] =
		"<stdout rank=\"2\">&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#X43;&#0000010;"
		"&#8364;&#000;&#255;|&foo;|& x|&#;|&#xZZ;|&#1114112;|&#xD800;|&#12345678901;|"
		"&averyveryverylongname;</stdout>";
	static const char want[] =
		"<>&\"'ABC\n\xe2\x82\xac\0\xff|&foo;|& x|&#;|&#xZZ;|&#1114112;|&#xD800;|&#12345678901;|"
		"&averyveryverylongname;";
	struct got g;

	(void)state;
	decode(in, sizeof(in) - 1, &g);
	assert_int_equal(g.rank[2][0].len, sizeof(want) - 1);
	assert_memory_equal(g.rank[2][0].p, want, sizeof(want) - 1);
	got_free(&g);
}

static void test_unfinished_at_eof(void **state)
{
	struct got g;

	(void)state;
	decode("<stdout rank=\"0\">abc&#01", 24, &g);
	assert_string_equal(g.rank[0][0].p, "abc&#01");
	got_free(&g);
	decode("<stdout rank=\"0\">abc</std", 25, &g);
	assert_string_equal(g.rank[0][0].p, "abc</std");
	got_free(&g);
}

static void test_malformed(void **state)
{
	static const char in[] =
		"a < b <<x>"                                  /* '<' that are no tags */
		"<stdout rank=\"abc\">own</stdout>"           /* bad rank: mpirun's own */
		"<stderr rank=\"99999999999\">big</stderr>"
		"<stdout rank='3'>single</stdout>"
		"<stddiag rank=\"4\">diag</stddiag>"
		"<stdout/>"
		"<unknown attr=\"1\">u</unknown>"
		"<host name=\"a&amp;b\"><process rank=\"5\"/></host><process rank=\"6\"/>"
		"<host name=\"unterminated><process rank=\"7\"/></host>"
		"<!-- comment --><?xml version=\"1.0\"?>end";
	struct got g;
	char longtag[SMT_XML_TAG_MAX + 40];

	(void)state;
	decode(in, sizeof(in) - 1, &g);
	assert_string_equal(g.text.p, "a < b <uend");
	assert_string_equal(g.own[0].p, "own");
	assert_string_equal(g.own[1].p, "big");
	assert_string_equal(g.rank[3][0].p, "single");
	assert_string_equal(g.rank[4][1].p, "diag");
	assert_string_equal(g.map.p, "5=a&b;");
	got_free(&g);

	/* A '<' followed by more than SMT_XML_TAG_MAX bytes is text. */
	memset(longtag, 'x', sizeof(longtag));
	longtag[0] = '<';
	decode(longtag, sizeof(longtag), &g);
	assert_int_equal(g.text.len, sizeof(longtag));
	assert_memory_equal(g.text.p, longtag, sizeof(longtag));
	got_free(&g);
}

/* Open MPI's escaping: <, >, & as named entities, every control or
 * non-ASCII byte except DEL as &#NNN;. */
static void encode(struct sbuf *out, int rank, int stream, const unsigned char *p, size_t n)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "<%s rank=\"%d\">", stream ? "stderr" : "stdout", rank);
	sput(out, tag, strlen(tag));
	for (size_t i = 0; i < n; i++) {
		char e[8];

		if (p[i] == '<')
			sput(out, "&lt;", 4);
		else if (p[i] == '>')
			sput(out, "&gt;", 4);
		else if (p[i] == '&')
			sput(out, "&amp;", 5);
		else if (p[i] < 0x20 || p[i] > 0x7f) {
			snprintf(e, sizeof(e), "&#%03d;", p[i]);
			sput(out, e, strlen(e));
		} else {
			sput(out, p + i, 1);
		}
	}
	sput(out, stream ? "</stderr>\n" : "</stdout>\n", 10);
}

static void test_roundtrip_random(void **state)
{
	struct sbuf want[4][2] = { { { 0 } } };
	struct sbuf enc = { 0 };
	struct got g;
	size_t cuts[200];
	unsigned seed = 12345;

	(void)state;
	srand(seed);
	sput(&enc, "<mpirun>\n", 9);
	for (int c = 0; c < 2000; c++) {
		int rank = rand() % 4, stream = rand() % 2;
		size_t n = (size_t)(rand() % 300);
		unsigned char chunk[300];

		for (size_t i = 0; i < n; i++)
			chunk[i] = (unsigned char)(rand() % 3 ? rand() % 256 : "<>&\n\0;#"[rand() % 7]);
		sput(&want[rank][stream], chunk, n);
		encode(&enc, rank, stream, chunk, n);
	}
	sput(&enc, "</mpirun>\n", 10);
	for (size_t i = 0; i < 200; i++)
		cuts[i] = (enc.len / 200) * i + (size_t)(rand() % 7);
	decode_cuts(enc.p, enc.len, cuts, 200, &g);
	for (int r = 0; r < 4; r++)
		for (int s = 0; s < 2; s++) {
			assert_int_equal(g.rank[r][s].len, want[r][s].len);
			if (want[r][s].len)
				assert_memory_equal(g.rank[r][s].p, want[r][s].p, want[r][s].len);
			sfree(&want[r][s]);
		}
	got_free(&g);
	sfree(&enc);
}

static void test_long_chunk_runs(void **state)
{
	struct sbuf enc = { 0 };
	struct got g;
	size_t n = 3 * SMT_XML_RUN_MAX + 17;
	unsigned char *big = malloc(n);

	(void)state;
	for (size_t i = 0; i < n; i++)
		big[i] = (unsigned char)('a' + i % 26);
	big[5] = '&';
	encode(&enc, 1, 0, big, n);
	decode(enc.p, enc.len, &g);
	assert_int_equal(g.rank[1][0].len, n);
	assert_memory_equal(g.rank[1][0].p, big, n);
	/* Runs are bounded, and few: not one per byte. */
	assert_true(g.runs <= 8);
	got_free(&g);
	sfree(&enc);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_ok),
		cmocka_unit_test(test_real_own_messages),
		cmocka_unit_test(test_real_chunks_join),
		cmocka_unit_test(test_real_all_bytes),
		cmocka_unit_test(test_every_cut),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_entities),
		cmocka_unit_test(test_unfinished_at_eof),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_long_chunk_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
