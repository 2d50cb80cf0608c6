/*
 * test_output.c - the output hub (output.h) on a real libuv loop with real
 * pipes: ranks written by threads, in writes of any size, come out on a
 * pipe standing for smtd's stdout (text or JSON) or in the outbox, byte for
 * byte and line by line; a consumer that stops reading stops the ranks
 * (their writes block) and nothing is lost once it reads again, with the
 * hub's memory bounded whatever the volume; workers' batches merge into the
 * same stdout; the kept lines answer /v1/logs; --rank-log-dir files are
 * the ranks' bytes; the launched command's messages are kept apart.
 */
#define _GNU_SOURCE
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "lineproto.h"
#include "output.h"
#include "smt_proto.h"
#include "textesc.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
/* From ASan's runtime (sanitizer/allocator_interface.h, not always
 * installed with gcc). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#define MAXRANK 8
#define HOST "algo-1"

/* Live heap bytes of the process (ASan's count under ASan, whose
 * quarantine makes RSS meaningless; malloc's own otherwise). */
static size_t heap_live(void)
{
#ifdef HAVE_ASAN
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#endif
}

static long vm_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* ---- the test's world: a loop, a rank table, the hub, its stdout ---- */

struct env {
	uv_loop_t loop;
	struct smt_ranks *ranks;
	struct smt_output *o;
	int out_r, out_w;              /* the hub's stdout: the test reads OUT_R */
	uv_pipe_t reader;
	int reading, reader_eof;
	struct smt_dynbuf got;         /* what came out on stdout */
	void (*verify)(struct env *e, const char *p, size_t n); /* instead of GOT */
	int ended[MAXRANK];
	int cmd_ended;
	int news;
	int flushed, closed;
	uv_timer_t tick;
	int (*until)(struct env *e);
	uint64_t deadline;
	int timed_out;
	size_t heap_base, heap_peak;
	int batches_done, batch_rc;
	json_t *final;
	void *user;
};

static void on_tick(uv_timer_t *t)
{
	struct env *e = t->data;
	size_t h = heap_live();

	if (h > e->heap_peak)
		e->heap_peak = h;
	if (e->until && e->until(e)) {
		uv_stop(&e->loop);
	} else if (uv_now(&e->loop) > e->deadline) {
		e->timed_out = 1;
		uv_stop(&e->loop);
	}
}

/* Run the loop until PRED holds (checked every 2 ms), for at most MS. */
static void run_until(struct env *e, int (*pred)(struct env *e), uint64_t ms, const char *what)
{
	e->until = pred;
	e->timed_out = 0;
	uv_update_time(&e->loop);
	e->deadline = uv_now(&e->loop) + ms;
	uv_timer_start(&e->tick, on_tick, 2, 2);
	if (!pred(e))
		uv_run(&e->loop, UV_RUN_DEFAULT);
	uv_timer_stop(&e->tick);
	e->until = NULL;
	if (e->timed_out)
		fail_msg("timed out after %llu ms waiting for %s", (unsigned long long)ms, what);
}

static uint64_t sleep_until;
static int slept(struct env *e)
{
	return uv_now(&e->loop) >= sleep_until;
}

/* Run the loop for MS, whatever happens. */
static void run_for(struct env *e, uint64_t ms)
{
	uv_update_time(&e->loop);
	sleep_until = uv_now(&e->loop) + ms;
	run_until(e, slept, ms + 10000, "time");
}

static void on_reader_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char mem[65536];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(mem, sizeof(mem));
}

static void on_reader(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct env *e = s->data;
	size_t h = heap_live();

	if (h > e->heap_peak)
		e->heap_peak = h;
	if (n < 0) {
		e->reader_eof = 1;
		uv_read_stop(s);
		e->reading = 0;
		return;
	}
	if (e->verify)
		e->verify(e, buf->base, (size_t)n);
	else
		assert_int_equal(smt_dynbuf_add(&e->got, buf->base, (size_t)n), 0);
}

static void reader_start(struct env *e)
{
	if (!e->reading && !e->reader_eof) {
		assert_int_equal(uv_read_start((uv_stream_t *)&e->reader, on_reader_alloc, on_reader), 0);
		e->reading = 1;
	}
}

static void reader_stop(struct env *e)
{
	uv_read_stop((uv_stream_t *)&e->reader);
	e->reading = 0;
}

static void on_news(void *arg)
{
	((struct env *)arg)->news++;
}

static void on_streams_ended(void *arg, int rank)
{
	struct env *e = arg;

	if (rank < 0)
		e->cmd_ended++;
	else
		e->ended[rank]++;
}

struct env_opts {
	enum smt_format format;
	unsigned line_cut_ms;   /* 0: a minute (lines are never cut unless a test asks) */
	int to_outbox;
	const char *rank_log_dir;
	int msg_fd;
};

static void env_init(struct env *e, const struct env_opts *opt)
{
	int fds[2];

	memset(e, 0, sizeof(*e));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	e->out_r = fds[0];
	e->out_w = fds[1];
	assert_int_equal(uv_loop_init(&e->loop), 0);
	assert_int_equal(smt_ranks_new(HOST, &e->ranks), 0);
	struct smt_output_config cfg = {
		.loop = &e->loop, .format = opt->format, .to_outbox = opt->to_outbox,
		.out_fd = e->out_w, .msg_fd = opt->msg_fd ? opt->msg_fd : -1, .msg_name = "mpirun",
		.line_cut_ms = opt->line_cut_ms ? opt->line_cut_ms : 60000,
		.current_host = HOST, .ranks = e->ranks, .rank_log_dir = opt->rank_log_dir,
		.outbox_news = on_news, .outbox_arg = e, .streams_ended = on_streams_ended, .arg = e,
	};
	assert_int_equal(smt_output_new(&cfg, &e->o), 0);
	assert_int_equal(uv_pipe_init(&e->loop, &e->reader, 0), 0);
	assert_int_equal(uv_pipe_open(&e->reader, e->out_r), 0);
	e->reader.data = e;
	smt_dynbuf_init(&e->got, (size_t)1 << 30);
	assert_int_equal(uv_timer_init(&e->loop, &e->tick), 0);
	e->tick.data = e;
	reader_start(e);
}

static void on_flushed(void *arg)
{
	((struct env *)arg)->flushed = 1;
}

static void on_closed(void *arg)
{
	((struct env *)arg)->closed = 1;
}

static int is_flushed(struct env *e) { return e->flushed; }
static int is_closed(struct env *e) { return e->closed; }
static int is_reader_eof(struct env *e) { return e->reader_eof; }

/* Everything written out, stdout closed and read to its end, every
 * handle closed, nothing left on the loop. */
static void env_finish(struct env *e)
{
	smt_output_flush(e->o, on_flushed, e);
	run_until(e, is_flushed, 20000, "stdout flushed");
	close(e->out_w);
	reader_start(e);
	run_until(e, is_reader_eof, 20000, "the end of stdout");
	smt_output_close(e->o, on_closed, e);
	run_until(e, is_closed, 20000, "the hub's handles closed");
	smt_output_free(e->o);
	uv_close((uv_handle_t *)&e->reader, NULL);
	uv_close((uv_handle_t *)&e->tick, NULL);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
	json_decref(e->final);
	/* E->GOT and the rank table stay for the test to read; env_free
	 * frees them. */
}

static void env_free(struct env *e)
{
	smt_dynbuf_free(&e->got);
	smt_ranks_free(e->ranks);
}

/* ---- ranks: pipes written by threads ---- */

struct writer {
	pthread_t th;
	int fd;
	const char *data;
	size_t len;
	size_t max_write;
	unsigned seed;
	unsigned pause_us;
	/* generated instead of DATA: TOTAL bytes of gen_fill */
	struct gen *gen;
	size_t total;
	atomic_size_t written;
	atomic_int done;
};

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			abort();
		p += w;
		n -= (size_t)w;
	}
}

/* A stream of lines of every length (a few up to 400 KiB), any bytes but
 * the newline, the same for the same seed. */
struct gen {
	uint64_t s;
	size_t left;     /* content bytes left in the current line */
	int in_line;
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void gen_fill(struct gen *g, char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!g->in_line) {
			uint64_t r = xs(&g->s);
			unsigned k = (unsigned)(r % 1000);
			g->left = k < 900 ? (r >> 10) % 120 : k < 990 ? 1000 + (r >> 10) % 70000
				: 100000 + (r >> 10) % 300000;
			g->in_line = 1;
		}
		if (g->left == 0) {
			buf[i] = '\n';
			g->in_line = 0;
			continue;
		}
		char c = (char)(xs(&g->s) >> 24);
		buf[i] = c == '\n' ? 'N' : c;
		g->left--;
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char *buf = w->gen ? malloc(w->max_write) : NULL;
	size_t off = 0, len = w->gen ? w->total : w->len;

	while (off < len) {
		size_t n = 1 + (size_t)rand_r(&w->seed) % w->max_write;

		if (n > len - off)
			n = len - off;
		if (w->gen) {
			gen_fill(w->gen, buf, n);
			write_all(w->fd, buf, n);
		} else {
			write_all(w->fd, w->data + off, n);
		}
		off += n;
		atomic_store(&w->written, off);
		if (w->pause_us)
			usleep(w->pause_us);
	}
	free(buf);
	close(w->fd);
	atomic_store(&w->done, 1);
	return NULL;
}

static void writer_start(struct writer *w, int fd, const char *data, size_t len, size_t max_write,
			 unsigned seed)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->data = data;
	w->len = len;
	w->max_write = max_write;
	w->seed = seed;
}

static void writer_go(struct writer *w)
{
	assert_int_equal(pthread_create(&w->th, NULL, writer_main, w), 0);
}

static void writer_join(struct writer *w)
{
	assert_int_equal(pthread_join(w->th, NULL), 0);
}

/* Rank RANK on this host: its stdout and stderr write ends, and the read
 * ends handed to the hub (returned in R_OUT/R_ERR when asked). */
static void add_rank(struct env *e, int rank, int *out_w, int *err_w, int *r_out)
{
	int o[2], er[2];

	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(er, O_CLOEXEC), 0);
	assert_non_null(smt_ranks_get(e->ranks, rank, NULL, 1));
	if (r_out)
		*r_out = o[0];
	assert_int_equal(smt_output_add_rank(e->o, rank, o[0], er[0]), 0);
	*out_w = o[1];
	*err_w = er[1];
}

/* Lines of every kind: empty, short, multi-byte, invalid bytes, NULs and
 * control bytes, around 64 KiB, and longer; ending with its newline or
 * not. */
static char *make_blob(unsigned seed, size_t size, size_t *len)
{
	static const char *const chars[] = {
		"a", "b", " ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\x80",
		"\t", "\r", "\x1b", "\xe2\x82",
	};
	char *p = malloc(size + 16);
	size_t n = 0;

	assert_non_null(p);
	while (n < size) {
		unsigned k = (unsigned)rand_r(&seed) % 100;
		size_t ll = k < 10 ? 0 : k < 80 ? (size_t)rand_r(&seed) % 200
			: k < 95 ? SMT_RECORD_MAX - 8 + (size_t)rand_r(&seed) % 16
			: (size_t)rand_r(&seed) % (4 * SMT_RECORD_MAX);
		size_t start = n;

		if (n + ll + 8 > size)
			ll = n + 8 < size ? size - n - 8 : 0;
		while (n - start < ll) {
			unsigned c = (unsigned)rand_r(&seed) % 13;
			if (c == 12) {
				p[n++] = '\0';
				continue;
			}
			memcpy(p + n, chars[c], strlen(chars[c]));
			n += strlen(chars[c]);
		}
		p[n++] = '\n';
	}
	if (seed % 2 && n > 1)
		n--;  /* the last line unfinished */
	*len = n;
	return p;
}

/* ---- reading stdout back ---- */

struct streams {
	struct smt_dynbuf s[MAXRANK][2];
	char host[MAXRANK][64];
	size_t lines;
};

static void streams_init(struct streams *st)
{
	memset(st, 0, sizeof(*st));
	for (int r = 0; r < MAXRANK; r++)
		for (int k = 0; k < 2; k++)
			smt_dynbuf_init(&st->s[r][k], (size_t)1 << 30);
}

static void streams_free(struct streams *st)
{
	for (int r = 0; r < MAXRANK; r++)
		for (int k = 0; k < 2; k++)
			smt_dynbuf_free(&st->s[r][k]);
}

/* Text output: every line a tag and the rank's line; each stream's lines,
 * with their newlines, appended to ST. */
static void parse_text(const char *p, size_t n, struct streams *st)
{
	size_t off = 0;

	while (off < n) {
		const char *line = p + off, *nl = memchr(line, '\n', n - off);
		const char *q;
		char *end;
		long rank;
		size_t hl;
		int stream = 0;

		if (!nl)
			fail_msg("stdout ends without a newline at %zu", off);
		if (strncmp(line, "[1,mpirank:", 11) != 0)
			fail_msg("a line without its tag at %zu: %.40s", off, line);
		rank = strtol(line + 11, &end, 10);
		assert_true(rank >= 0 && rank < MAXRANK && *end == ',');
		q = memchr(end, ']', (size_t)(nl - end));
		assert_non_null(q);
		hl = (size_t)(q - end - 1);
		assert_true(hl < 64);
		if (!st->host[rank][0])
			memcpy(st->host[rank], end + 1, hl);
		else
			assert_true(strlen(st->host[rank]) == hl && !memcmp(st->host[rank], end + 1, hl));
		if (!strncmp(q, "]<stdout>: ", 11))
			stream = 0;
		else if (!strncmp(q, "]<stderr>: ", 11))
			stream = 1;
		else
			fail_msg("a bad tag at %zu", off);
		q += 11;
		assert_int_equal(smt_dynbuf_add(&st->s[rank][stream], q, (size_t)(nl - q) + 1), 0);
		st->lines++;
		off = (size_t)(nl - p) + 1;
	}
}

/* JSON output: every line an object; each stream's lines rebuilt from the
 * objects ("partial" ones continue), with their newlines. */
static void parse_json(const char *p, size_t n, struct streams *st)
{
	size_t off = 0;
	char *bytes = malloc(SMT_RECORD_MAX + 16);

	assert_non_null(bytes);
	while (off < n) {
		const char *nl = memchr(p + off, '\n', n - off);
		json_error_t err;
		json_t *o, *b64;
		int rank, stream;
		size_t k;

		assert_non_null(nl);
		o = json_loadb(p + off, (size_t)(nl - (p + off)), JSON_ALLOW_NUL, &err);
		if (!o)
			fail_msg("not JSON at %zu: %s", off, err.text);
		rank = (int)json_integer_value(json_object_get(o, SMT_F_RANK));
		assert_true(rank >= 0 && rank < MAXRANK);
		stream = !strcmp(json_string_value(json_object_get(o, SMT_F_STREAM)), "stderr");
		if (!st->host[rank][0])
			snprintf(st->host[rank], sizeof(st->host[rank]), "%s",
				 json_string_value(json_object_get(o, SMT_F_HOST)));
		b64 = json_object_get(o, SMT_F_LINE_B64);
		if (b64) {
			k = smt_test_b64decode(json_string_value(b64), strlen(json_string_value(b64)),
					       (unsigned char *)bytes);
		} else {
			k = json_string_length(json_object_get(o, SMT_F_LINE));
			memcpy(bytes, json_string_value(json_object_get(o, SMT_F_LINE)), k);
		}
		assert_true(k <= SMT_RECORD_MAX);
		assert_int_equal(smt_dynbuf_add(&st->s[rank][stream], bytes, k), 0);
		if (!json_is_true(json_object_get(o, SMT_F_PARTIAL))) {
			assert_int_equal(smt_dynbuf_add(&st->s[rank][stream], "\n", 1), 0);
			st->lines++;
		}
		json_decref(o);
		off = (size_t)(nl - p) + 1;
	}
	free(bytes);
}

/* What a rank wrote, as its lines come out: every line with its newline. */
static void same_as_written(const struct smt_dynbuf *got, const char *data, size_t len,
			    const char *what)
{
	size_t want = len + (len && data[len - 1] != '\n');

	if (got->len != want)
		fail_msg("%s: %zu bytes out for %zu written", what, got->len, len);
	if (memcmp(got->p, data, len) != 0) {
		size_t i = 0;
		while (got->p[i] == data[i])
			i++;
		fail_msg("%s: differs at byte %zu of %zu", what, i, len);
	}
	if (want > len)
		assert_int_equal(got->p[len], '\n');
}

static size_t count_lines(const char *p, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == '\n';
	return k + (n && p[n - 1] != '\n');
}

static int all_ended_2(struct env *e)
{
	return e->ended[0] && e->ended[1];
}

/* Two ranks, both streams, any bytes, writes of 1 byte to 1 MiB: stdout
 * has each line whole, tagged, and each stream's lines are exactly what
 * the rank wrote, in order. */
static void run_two_ranks(enum smt_format fmt)
{
	struct env e;
	struct env_opts opt = { .format = fmt };
	struct writer w[4];
	char *blob[4];
	size_t len[4], lines = 0, bytes = 0;
	int fds[4];
	struct streams st;
	struct smt_output_stats os;

	env_init(&e, &opt);
	add_rank(&e, 0, &fds[0], &fds[1], NULL);
	add_rank(&e, 1, &fds[2], &fds[3], NULL);
	for (int i = 0; i < 4; i++) {
		blob[i] = make_blob(11 + (unsigned)i, (size_t)(1 + i % 2) * 1024 * 1024, &len[i]);
		writer_start(&w[i], fds[i], blob[i], len[i], i == 0 ? 1024 * 1024 : 70000, 5 + (unsigned)i);
		lines += count_lines(blob[i], len[i]);
		bytes += len[i] - count_lines(blob[i], len[i]) + (len[i] && blob[i][len[i] - 1] != '\n');
		writer_go(&w[i]);
	}
	run_until(&e, all_ended_2, 60000, "both ranks' streams to end");
	assert_int_equal(smt_output_open_streams(e.o), 0);
	smt_output_stats(e.o, &os);
	assert_int_equal(os.lines, lines);
	assert_int_equal(os.bytes, bytes);
	assert_int_equal(os.stdout_dropped, 0);
	env_finish(&e);
	for (int i = 0; i < 4; i++)
		writer_join(&w[i]);
	streams_init(&st);
	if (fmt == SMT_FORMAT_TEXT)
		parse_text(e.got.p, e.got.len, &st);
	else
		parse_json(e.got.p, e.got.len, &st);
	assert_int_equal(st.lines, lines);
	for (int i = 0; i < 4; i++) {
		char what[32];
		snprintf(what, sizeof(what), "rank %d %s", i / 2, i % 2 ? "stderr" : "stdout");
		same_as_written(&st.s[i / 2][i % 2], blob[i], len[i], what);
	}
	assert_string_equal(st.host[0], HOST);
	/* The rank table counted the same, rank by rank. */
	for (int r = 0; r < 2; r++) {
		const struct smt_rank *k = smt_ranks_find(e.ranks, r);
		size_t rl = count_lines(blob[2 * r], len[2 * r]) + count_lines(blob[2 * r + 1], len[2 * r + 1]);
		assert_non_null(k);
		assert_true(k->local);
		assert_int_equal(k->lines, rl);
		assert_int_equal(k->bytes, st.s[r][0].len + st.s[r][1].len - rl);
		assert_true(k->last_line_ms > 0);
	}
	for (int i = 0; i < 4; i++)
		free(blob[i]);
	streams_free(&st);
	env_free(&e);
}

static void test_text_two_ranks(void **state)
{
	(void)state;
	run_two_ranks(SMT_FORMAT_TEXT);
}

static void test_json_two_ranks(void **state)
{
	(void)state;
	run_two_ranks(SMT_FORMAT_JSON);
}

/* ---- a stalled stdout ---- */

struct verifier {
	struct gen g;
	const char *tag;
	size_t taglen, tpos;
	int at_start;
	size_t consumed;        /* input bytes matched */
	size_t out_bytes;
	struct writer *w;
	int final_newline;
};

static void verify_text(struct env *e, const char *p, size_t n)
{
	struct verifier *v = e->user;

	for (size_t i = 0; i < n; i++) {
		char want;

		if (v->final_newline)
			fail_msg("bytes after the end");
		if (v->at_start) {
			if (p[i] != v->tag[v->tpos])
				fail_msg("the tag differs at output byte %zu", v->out_bytes + i);
			if (++v->tpos == v->taglen) {
				v->tpos = 0;
				v->at_start = 0;
			}
			continue;
		}
		if (atomic_load(&v->w->done) && v->consumed == v->w->total) {
			/* An unfinished last line is ended by the hub. */
			assert_int_equal(p[i], '\n');
			v->final_newline = 1;
			continue;
		}
		gen_fill(&v->g, &want, 1);
		v->consumed++;
		if (p[i] != want)
			fail_msg("output byte %zu (input byte %zu) differs", v->out_bytes + i,
				 v->consumed - 1);
		if (want == '\n')
			v->at_start = 1;
	}
	v->out_bytes += n;
}

static struct writer *stall_writer;
static int wrote_8mib(struct env *e)
{
	(void)e;
	return atomic_load(&stall_writer->written) >= 8u << 20;
}

static int rank0_ended(struct env *e)
{
	return e->ended[0] > 0;
}

/*
 * 64 MiB of one rank's lines through a stdout nobody reads for a while:
 * the rank's writes block (its pipe stays full, and so does stdout's),
 * nothing is lost once stdout is read again, and the hub's live heap
 * never grows past OUTPUT_HEAP_BOUND over what it was before the first
 * byte, whatever the volume.
 */
#define OUTPUT_HEAP_BOUND ((size_t)6 << 20)

static void test_slow_stdout(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	struct writer w;
	struct verifier v = { .g = { .s = 0x9e3779b97f4a7c15ull }, .tag = "[1,mpirank:0,algo-1]<stdout>: ",
			      .at_start = 1 };
	struct gen wg = { .s = 0x9e3779b97f4a7c15ull };
	int out_w, err_w, r_out;
	size_t w0, w1, w2, pipe_size;
	long hwm0, hwm1;
	int avail = 0;

	(void)state;
	env_init(&e, &opt);
	v.taglen = strlen(v.tag);
	v.w = &w;
	e.user = &v;
	e.verify = verify_text;
	add_rank(&e, 0, &out_w, &err_w, &r_out);
	close(err_w);
	writer_start(&w, out_w, NULL, 0, 65536, 99);
	w.gen = &wg;
	w.total = (size_t)64 << 20;
	stall_writer = &w;
	/* The writer's buffer exists before the baseline. */
	run_for(&e, 10);
	e.heap_base = e.heap_peak = heap_live();
	hwm0 = vm_hwm_kib();
	writer_go(&w);
	run_until(&e, wrote_8mib, 60000, "8 MiB through stdout");

	/* Nobody reads stdout now: the rank stops, within what the pipes and
	 * the hub's queues hold. */
	reader_stop(&e);
	w0 = atomic_load(&w.written);
	w2 = w0;
	for (int round = 0;; round++) {
		assert_true(round < 50);
		w1 = w2;
		run_for(&e, 200);
		w2 = atomic_load(&w.written);
		if (w1 == w2)
			break;
	}
	if (atomic_load(&w.done) || w2 - w0 >= OUTPUT_HEAP_BOUND)
		fail_msg("the rank went on: %zu bytes after stdout stopped (done %d)", w2 - w0,
			 atomic_load(&w.done));
	/* Both pipes are full: every page of them used but two - the first,
	 * which the reader may have read a part of (a pipe page is never
	 * refilled at its front), and the last, which may be short of a
	 * write that did not fit. */
	pipe_size = (size_t)fcntl(r_out, F_GETPIPE_SZ);
	assert_int_equal(ioctl(r_out, FIONREAD, &avail), 0);
	if ((size_t)avail <= pipe_size - 2 * 4096)
		fail_msg("the rank's pipe holds %d bytes of %zu", avail, pipe_size);
	pipe_size = (size_t)fcntl(e.out_r, F_GETPIPE_SZ);
	assert_int_equal(ioctl(e.out_r, FIONREAD, &avail), 0);
	if ((size_t)avail <= pipe_size - 2 * 4096)
		fail_msg("stdout's pipe holds %d bytes of %zu", avail, pipe_size);

	/* Read again: all of it arrives. */
	reader_start(&e);
	run_until(&e, rank0_ended, 120000, "the rank's 64 MiB");
	writer_join(&w);
	env_finish(&e);
	assert_int_equal(v.consumed, w.total);
	assert_true(v.at_start || v.final_newline);
	hwm1 = vm_hwm_kib();
	print_message("    64 MiB through a stalled stdout: the hub's live heap peaked at "
		      "%zu KiB over its start (bound %zu KiB); VmHWM grew %ld KiB%s\n",
		      (e.heap_peak - e.heap_base) / 1024, OUTPUT_HEAP_BOUND / 1024, hwm1 - hwm0,
#ifdef HAVE_ASAN
		      " (under ASan: shadow and quarantine)"
#else
		      ""
#endif
		      );
	if (e.heap_peak - e.heap_base >= OUTPUT_HEAP_BOUND)
		fail_msg("the live heap grew %zu KiB", (e.heap_peak - e.heap_base) / 1024);
#ifndef HAVE_ASAN
	assert_true(hwm1 - hwm0 < 16 * 1024);
#endif
	env_free(&e);
}

/* ---- a worker: the outbox ---- */

/* The leader's side: fetch what the outbox has from FROM, decode it into
 * ST (records of a line in pieces must follow each other), *DONE at the
 * end of output. */
struct fetcher {
	uint64_t from;
	size_t max;
	int done;
	int open_rank, open_stream;   /* a line in pieces in progress, or -1 */
	json_t *final;
	struct streams *st;
	size_t bytes;
};

static void fetch_some(struct env *e, struct fetcher *f)
{
	const char *p;
	size_t len, off = 0;
	int done = 0;

	assert_int_equal(smt_outbox_fetch(smt_output_outbox(e->o), f->from, f->max, &p, &len, &done), 0);
	while (off < len) {
		struct smt_record r;
		size_t used;

		assert_int_equal(smt_lineproto_decode(p + off, len - off, &r, &used), 1);
		off += used;
		if (r.rank == SMT_LINEPROTO_EOF_RANK) {
			f->final = json_loadb(r.p, r.n, 0, NULL);
			assert_non_null(f->final);
			continue;
		}
		assert_true(r.rank >= 0 && r.rank < MAXRANK);
		if (f->open_rank >= 0 && (r.rank != f->open_rank || (int)r.stream != f->open_stream))
			fail_msg("rank %d %s inside a line of rank %d %s in the outbox", r.rank,
				 smt_stream_name(r.stream), f->open_rank,
				 smt_stream_name((enum smt_stream)f->open_stream));
		if (r.flags & SMT_REC_LAST) {
			f->open_rank = -1;
		} else {
			f->open_rank = r.rank;
			f->open_stream = (int)r.stream;
		}
		assert_int_equal(smt_dynbuf_add(&f->st->s[r.rank][r.stream], r.p, r.n), 0);
		if (r.flags & SMT_REC_LAST)
			assert_int_equal(smt_dynbuf_add(&f->st->s[r.rank][r.stream], "\n", 1), 0);
	}
	f->from += len;
	f->bytes += len;
	if (done)
		f->done = 1;
}

static struct fetcher *the_fetcher;
static int fetch_until_ended(struct env *e)
{
	fetch_some(e, the_fetcher);
	return all_ended_2(e);
}

static int fetch_until_done(struct env *e)
{
	fetch_some(e, the_fetcher);
	return the_fetcher->done;
}

static int outbox_full(struct env *e)
{
	return !smt_outbox_room(smt_output_outbox(e->o));
}

static void run_outbox(enum smt_format fmt)
{
	struct env e;
	struct env_opts opt = { .format = fmt, .to_outbox = 1 };
	struct writer w[4];
	char *blob[4];
	size_t len[4], before;
	int fds[4];
	struct streams st;
	struct fetcher f = { .max = 256 * 1024, .open_rank = -1, .st = &st };
	json_t *final;

	env_init(&e, &opt);
	streams_init(&st);
	add_rank(&e, 0, &fds[0], &fds[1], NULL);
	add_rank(&e, 1, &fds[2], &fds[3], NULL);
	for (int i = 0; i < 4; i++) {
		blob[i] = make_blob(21 + (unsigned)i, 3 * 1024 * 1024, &len[i]);
		writer_start(&w[i], fds[i], blob[i], len[i], 200000, 7 + (unsigned)i);
		writer_go(&w[i]);
	}
	/* Nobody fetches: the outbox fills up to its cap, and stays so. */
	run_until(&e, outbox_full, 20000, "the outbox full");
	assert_true(e.news > 0);
	before = smt_outbox_written(smt_output_outbox(e.o));
	assert_true(before >= SMT_OUTPUT_OUTBOX_CAP);
	assert_true(before < SMT_OUTPUT_OUTBOX_CAP + 2 * (SMT_RECORD_MAX + SMT_LINEPROTO_HEADER_MAX));
	run_for(&e, 200);
	assert_int_equal(smt_outbox_written(smt_output_outbox(e.o)), before);
	for (int i = 0; i < 4; i++)
		assert_false(atomic_load(&w[i].done));

	/* The leader fetches: everything comes, then the end of output. */
	the_fetcher = &f;
	run_until(&e, fetch_until_ended, 60000, "the ranks' output through the outbox");
	final = json_pack("{s:[]}", SMT_F_RANKS);
	assert_int_equal(smt_output_end(e.o, final), 0);
	json_decref(final);
	run_until(&e, fetch_until_done, 20000, "the end of output");
	assert_non_null(f.final);
	assert_true(json_is_array(json_object_get(f.final, SMT_F_RANKS)));
	json_decref(f.final);
	/* The fetch past the end acknowledges it. */
	assert_false(smt_outbox_acked(smt_output_outbox(e.o)));
	fetch_some(&e, &f);
	assert_true(smt_outbox_acked(smt_output_outbox(e.o)));
	for (int i = 0; i < 4; i++) {
		char what[32];
		writer_join(&w[i]);
		snprintf(what, sizeof(what), "rank %d %s", i / 2, i % 2 ? "stderr" : "stdout");
		same_as_written(&st.s[i / 2][i % 2], blob[i], len[i], what);
		free(blob[i]);
	}
	env_finish(&e);
	/* Nothing went to stdout. */
	assert_int_equal(e.got.len, 0);
	streams_free(&st);
	env_free(&e);
}

static void test_outbox_text(void **state)
{
	(void)state;
	run_outbox(SMT_FORMAT_TEXT);
}

/* A worker whose own --log-format is json still hands the leader whole
 * lines: the leader may print text. */
static void test_outbox_json_worker(void **state)
{
	(void)state;
	run_outbox(SMT_FORMAT_JSON);
}

/* ---- the leader: workers' batches ---- */

static void on_batch(void *arg, int rc, json_t *final)
{
	struct env *e = arg;

	e->batches_done++;
	e->batch_rc = rc;
	if (final) {
		json_decref(e->final);
		e->final = json_incref(final);
	}
}

static char *batch(size_t *len, const struct smt_record *recs, size_t n)
{
	struct smt_dynbuf b;

	smt_dynbuf_init(&b, (size_t)1 << 26);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(smt_lineproto_encode(&b, &recs[i]), 0);
	return smt_dynbuf_take(&b, len);
}

static int one_batch(struct env *e) { return e->batches_done >= 1; }
static int two_batches(struct env *e) { return e->batches_done >= 2; }
static int three_batches(struct env *e) { return e->batches_done >= 3; }

static void test_remote_batches(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	struct smt_record recs[] = {
		{ .rank = 2, .flags = SMT_REC_WHOLE, .ms = 1, .p = "from algo-2", .n = 11 },
		{ .rank = 3, .stream = SMT_STREAM_STDERR, .flags = SMT_REC_WHOLE, .ms = 2,
		  .p = "bad \xff byte", .n = 10 },
		{ .rank = SMT_LINEPROTO_EOF_RANK, .flags = SMT_REC_WHOLE, .p = "{\"ranks\":[]}", .n = 12 },
	};
	char *body;
	size_t len;
	const struct smt_rank *k;

	(void)state;
	env_init(&e, &opt);
	body = batch(&len, recs, 3);
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	/* DONE runs from the loop, never from inside the call. */
	assert_int_equal(e.batches_done, 0);
	run_until(&e, one_batch, 5000, "the batch");
	assert_int_equal(e.batch_rc, 0);
	assert_non_null(e.final);
	assert_true(json_is_array(json_object_get(e.final, SMT_F_RANKS)));
	k = smt_ranks_find(e.ranks, 3);
	assert_non_null(k);
	assert_string_equal(k->host, "algo-2");
	assert_false(k->local);
	assert_int_equal(k->lines, 1);
	assert_string_equal(smt_ranks_host(e.ranks, 2), "algo-2");

	/* A batch that goes bad: what came before is taken, then -EINVAL. */
	{
		struct smt_dynbuf b;
		smt_dynbuf_init(&b, 4096);
		assert_int_equal(smt_lineproto_encode(&b, &recs[0]), 0);
		assert_int_equal(smt_dynbuf_addstr(&b, "garbage that is no record\n"), 0);
		body = smt_dynbuf_take(&b, &len);
	}
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, two_batches, 5000, "the bad batch");
	assert_int_equal(e.batch_rc, -EINVAL);

	/* A batch cancelled before it was taken: no DONE. */
	body = batch(&len, recs, 1);
	assert_int_equal(smt_output_remote(e.o, 1, "algo-3", body, len, on_batch, &e), 0);
	smt_output_remote_cancel(e.o, on_batch, &e);
	run_for(&e, 50);
	assert_int_equal(e.batches_done, 2);
	env_finish(&e);
	assert_int_equal(e.got.len, strlen("[1,mpirank:2,algo-2]<stdout>: from algo-2\n"
					   "[1,mpirank:3,algo-2]<stderr>: bad \xff byte\n"
					   "[1,mpirank:2,algo-2]<stdout>: from algo-2\n"));
	assert_memory_equal(e.got.p, "[1,mpirank:2,algo-2]<stdout>: from algo-2\n"
			    "[1,mpirank:3,algo-2]<stderr>: bad \xff byte\n"
			    "[1,mpirank:2,algo-2]<stdout>: from algo-2\n", e.got.len);
	env_free(&e);
}

static int local_line_read(struct env *e)
{
	const struct smt_rank *k = smt_ranks_find(e->ranks, 0);

	return k && k->bytes > 0;
}

/* A worker's long line arrives in two batches (a fetch has a size limit);
 * a local rank's line written in between waits for its end. */
static void test_remote_line_across_batches(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	struct smt_record first = { .rank = 2, .flags = SMT_REC_FIRST, .p = "AAAA", .n = 4 };
	struct smt_record middle = { .rank = 2, .flags = 0, .p = "BBBB", .n = 4 };
	struct smt_record last = { .rank = 2, .flags = SMT_REC_LAST, .p = "CCCC", .n = 4 };
	char *body;
	size_t len;
	int out_w, err_w;
	static const char want[] = "[1,mpirank:2,algo-2]<stdout>: AAAABBBBCCCC\n"
				   "[1,mpirank:0,algo-1]<stdout>: local line\n";

	(void)state;
	env_init(&e, &opt);
	add_rank(&e, 0, &out_w, &err_w, NULL);
	body = batch(&len, &first, 1);
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, one_batch, 5000, "the first batch");
	/* Read by the hub at once, but not taken while the line is open. */
	write_all(out_w, "local line\n", 11);
	run_for(&e, 100);
	assert_null(smt_ranks_find(e.ranks, 0)->last_line_ms ? "taken" : NULL);
	body = batch(&len, &middle, 1);
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, two_batches, 5000, "the second batch");
	run_for(&e, 50);
	body = batch(&len, &last, 1);
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, three_batches, 5000, "the third batch");
	close(out_w);
	close(err_w);
	run_until(&e, rank0_ended, 5000, "rank 0's end");
	env_finish(&e);
	if (e.got.len != sizeof(want) - 1 || memcmp(e.got.p, want, e.got.len))
		fail_msg("stdout is:\n%.*s", (int)e.got.len, e.got.p);
	env_free(&e);
}

/* A worker lost in the middle of a long line: once the leader says so,
 * the local lines go on. */
static void test_remote_lost_mid_line(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	struct smt_record first = { .rank = 2, .flags = SMT_REC_FIRST, .p = "AAAA", .n = 4 };
	char *body;
	size_t len;
	int out_w, err_w;
	static const char want[] = "[1,mpirank:2,algo-2]<stdout>: AAAA"
				   "[1,mpirank:0,algo-1]<stdout>: local line\n";

	(void)state;
	env_init(&e, &opt);
	add_rank(&e, 0, &out_w, &err_w, NULL);
	body = batch(&len, &first, 1);
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, one_batch, 5000, "the first batch");
	write_all(out_w, "local line\n", 11);
	run_for(&e, 100);
	assert_int_equal(smt_ranks_find(e.ranks, 0)->lines, 0);
	/* Another host's loss changes nothing. */
	smt_output_remote_lost(e.o, "algo-3");
	run_for(&e, 50);
	assert_int_equal(smt_ranks_find(e.ranks, 0)->lines, 0);
	smt_output_remote_lost(e.o, "algo-2");
	run_until(&e, local_line_read, 5000, "the local line");
	close(out_w);
	close(err_w);
	run_until(&e, rank0_ended, 5000, "rank 0's end");
	env_finish(&e);
	if (e.got.len != sizeof(want) - 1 || memcmp(e.got.p, want, e.got.len))
		fail_msg("stdout is:\n%.*s", (int)e.got.len, e.got.p);
	env_free(&e);
}

/* ---- /v1/logs ---- */

static int three_lines_taken(struct env *e)
{
	struct smt_output_stats os;

	smt_output_stats(e->o, &os);
	return os.lines >= 3;
}

static int four_lines_taken(struct env *e)
{
	struct smt_output_stats os;

	smt_output_stats(e->o, &os);
	return os.lines >= 4;
}

static void test_logs(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	int out0, err0, out1, err1;
	char *longline = malloc(5001), *text;
	size_t len;
	json_t *a, *o;
	struct smt_record rec = { .rank = 5, .flags = SMT_REC_WHOLE, .ms = 1, .p = "far away", .n = 8 };
	char *body;

	(void)state;
	assert_non_null(longline);
	memset(longline, 'L', 5000);
	longline[5000] = '\n';
	env_init(&e, &opt);
	add_rank(&e, 0, &out0, &err0, NULL);
	add_rank(&e, 1, &out1, &err1, NULL);
	write_all(out0, "alpha\n", 6);
	run_until(&e, local_line_read, 5000, "alpha");
	write_all(err1, "beta \xff\n", 7);
	write_all(out0, longline, 5001);
	body = batch(&len, &rec, 1);
	run_until(&e, three_lines_taken, 5000, "three local lines");
	assert_int_equal(smt_output_remote(e.o, 0, "algo-2", body, len, on_batch, &e), 0);
	run_until(&e, four_lines_taken, 5000, "four lines");

	/* The last two, whatever the rank. */
	a = smt_output_logs_json(e.o, 2, -1);
	assert_int_equal(json_array_size(a), 2);
	o = json_array_get(a, 1);
	assert_int_equal(json_integer_value(json_object_get(o, SMT_F_RANK)), 5);
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_HOST)), "algo-2");
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_LINE)), "far away");
	json_decref(a);

	/* Rank 1's: its invalid byte as U+FFFD, and the exact bytes. */
	a = smt_output_logs_json(e.o, 10, 1);
	assert_int_equal(json_array_size(a), 1);
	o = json_array_get(a, 0);
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_STREAM)), "stderr");
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_HOST)), HOST);
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_LINE)), "beta \xef\xbf\xbd");
	assert_string_equal(json_string_value(json_object_get(o, SMT_F_LINE_B64)), "YmV0YSD/");
	assert_null(json_object_get(o, SMT_F_TRUNCATED));
	json_decref(a);

	/* Rank 0's: the long line kept by its head, marked. */
	a = smt_output_logs_json(e.o, 10, 0);
	assert_int_equal(json_array_size(a), 2);
	o = json_array_get(a, 1);
	assert_int_equal(json_string_length(json_object_get(o, SMT_F_LINE)), SMT_KEEP_LINE_MAX);
	assert_true(json_is_true(json_object_get(o, SMT_F_TRUNCATED)));
	json_decref(a);
	a = smt_output_logs_json(e.o, 0, -1);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);

	/* Tagged text. */
	assert_int_equal(smt_output_logs_text(e.o, 1, 1, &text, &len), 0);
	assert_int_equal(len, strlen("[1,mpirank:1,algo-1]<stderr>: beta \xff\n"));
	assert_memory_equal(text, "[1,mpirank:1,algo-1]<stderr>: beta \xff\n", len);
	free(text);
	assert_int_equal(smt_output_logs_text(e.o, 2, 0, &text, &len), 0);
	assert_int_equal(len, 2 * strlen("[1,mpirank:0,algo-1]<stdout>: ") + 6 + SMT_KEEP_LINE_MAX + 1);
	assert_memory_equal(text, "[1,mpirank:0,algo-1]<stdout>: alpha\n[1,mpirank:0,algo-1]<stdout>: LLL", 69);
	free(text);
	assert_int_equal(smt_output_logs_text(e.o, 5, 7, &text, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(text, "");
	free(text);

	close(out0);
	close(err0);
	close(out1);
	close(err1);
	run_until(&e, all_ended_2, 5000, "the ranks' ends");
	env_finish(&e);
	env_free(&e);
	free(longline);
}

/* ---- --rank-log-dir ---- */

static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	char *p;

	if (fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fstat(fd, &sb), 0);
	p = malloc((size_t)sb.st_size + 1);
	assert_non_null(p);
	assert_int_equal(read(fd, p, (size_t)sb.st_size), sb.st_size);
	close(fd);
	*len = (size_t)sb.st_size;
	return p;
}

/* MARK in front of every line of *P. */
static void mark_lines(char **p, size_t *len, char mark)
{
	char *q = malloc(2 * *len + 2);
	size_t o = 0;
	int start = 1;

	assert_non_null(q);
	for (size_t i = 0; i < *len; i++) {
		if (start)
			q[o++] = mark;
		q[o++] = (*p)[i];
		start = (*p)[i] == '\n';
	}
	free(*p);
	*p = q;
	*len = o;
}

/* The lines of FILE, in the order of each stream, are the lines of A and
 * B (each ending with its newline, whole; A's lines start with 'O', B's
 * with 'E'). */
static void check_interleaved(const char *file, size_t flen, const char *a, size_t alen,
			      const char *b, size_t blen)
{
	size_t fo = 0, ao = 0, bo = 0;

	while (fo < flen) {
		const char *nl = memchr(file + fo, '\n', flen - fo);
		size_t ll;

		assert_non_null(nl);
		ll = (size_t)(nl - (file + fo)) + 1;
		if (file[fo] == 'O' && ao < alen && ll <= alen - ao + 1 &&
		    !memcmp(file + fo, a + ao, ll - 1) && (ao + ll - 1 == alen || a[ao + ll - 1] == '\n'))
			ao += ll;
		else if (file[fo] == 'E' && bo < blen && ll <= blen - bo + 1 &&
			 !memcmp(file + fo, b + bo, ll - 1) && (bo + ll - 1 == blen || b[bo + ll - 1] == '\n'))
			bo += ll;
		else
			fail_msg("line at %zu of the rank's log is neither stream's next line "
				 "(%zu of %zu, %zu of %zu)", fo, ao, alen, bo, blen);
		fo += ll;
	}
	assert_true(ao >= alen && bo >= blen);
}

static int rank2_ended(struct env *e)
{
	return e->ended[2] > 0;
}

static void run_rank_logs(enum smt_format fmt)
{
	char dir[] = "/tmp/smt-ranklog.XXXXXX", path[128], target[128];
	struct env e;
	struct env_opts opt = { .format = fmt, .rank_log_dir = dir };
	struct writer w[3];
	char *blob[3], *file;
	size_t len[3], flen;
	int out0, err0, out1, err1, out2, err2;

	assert_non_null(mkdtemp(dir));
	/* A link planted where rank 2's file goes is not followed. */
	snprintf(target, sizeof(target), "%s.target", dir);
	close(open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	snprintf(path, sizeof(path), "%s/rank-2.log", dir);
	assert_int_equal(symlink(target, path), 0);
	env_init(&e, &opt);
	add_rank(&e, 0, &out0, &err0, NULL);
	add_rank(&e, 1, &out1, &err1, NULL);
	close(err0);
	for (int i = 0; i < 3; i++)
		blob[i] = make_blob(31 + (unsigned)i, 2 * 1024 * 1024, &len[i]);
	/* Rank 1's stdout and stderr lines told apart by their first byte. */
	mark_lines(&blob[1], &len[1], 'O');
	mark_lines(&blob[2], &len[2], 'E');
	writer_start(&w[0], out0, blob[0], len[0], 100000, 1);
	writer_start(&w[1], out1, blob[1], len[1], 30000, 2);
	writer_start(&w[2], err1, blob[2], len[2], 50000, 3);
	w[1].pause_us = w[2].pause_us = 200;
	for (int i = 0; i < 3; i++)
		writer_go(&w[i]);
	run_until(&e, all_ended_2, 60000, "the ranks' ends");
	{
		int rank2_out, rank2_err;
		add_rank(&e, 2, &rank2_out, &rank2_err, NULL);
		write_all(rank2_out, "two\n", 4);
		close(rank2_out);
		close(rank2_err);
		out2 = err2 = -1;
	}
	run_until(&e, rank2_ended, 5000, "rank 2");
	run_for(&e, 100);
	env_finish(&e);
	for (int i = 0; i < 3; i++)
		writer_join(&w[i]);
	(void)out2;
	(void)err2;

	/* Rank 0 wrote only stdout: its file is those bytes. */
	snprintf(path, sizeof(path), "%s/rank-0.log", dir);
	file = read_file(path, &flen);
	{
		struct smt_dynbuf got = { .p = file, .len = flen };
		same_as_written(&got, blob[0], len[0], "rank-0.log");
	}
	free(file);
	/* Rank 1 wrote both: every line whole, each stream in order. */
	snprintf(path, sizeof(path), "%s/rank-1.log", dir);
	file = read_file(path, &flen);
	check_interleaved(file, flen, blob[1], len[1], blob[2], len[2]);
	free(file);
	/* The planted link was left alone, and nothing was written through it. */
	file = read_file(target, &flen);
	assert_int_equal(flen, 0);
	free(file);
	for (int i = 0; i < 3; i++)
		free(blob[i]);
	snprintf(path, sizeof(path), "%s/rank-0.log", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/rank-1.log", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/rank-2.log", dir);
	unlink(path);
	unlink(target);
	assert_int_equal(rmdir(dir), 0);
	env_free(&e);
}

static void test_rank_logs_text(void **state)
{
	(void)state;
	run_rank_logs(SMT_FORMAT_TEXT);
}

static void test_rank_logs_json(void **state)
{
	(void)state;
	run_rank_logs(SMT_FORMAT_JSON);
}

/* ---- the launched command's own messages ---- */

static int cmd_done(struct env *e)
{
	return e->cmd_ended > 0;
}

struct kept {
	size_t n;
	char lines[8][4200];
	size_t len[8];
};

static int keep_line(void *arg, const struct smt_ring_entry *en, const char *line)
{
	struct kept *k = arg;

	assert_true(k->n < 8 && en->len <= 4200);
	memcpy(k->lines[k->n], line, en->len);
	k->len[k->n++] = en->len;
	return 0;
}

static size_t msg_lines_seen;
static int msg_lines_reached(struct env *e)
{
	struct smt_output_stats os;

	smt_output_stats(e->o, &os);
	return os.msg_lines >= msg_lines_seen;
}

static void run_command(enum smt_format fmt)
{
	int msg[2], out[2], err[2];
	struct env e;
	struct env_opts opt = { .format = fmt };
	char *big = malloc(5000), got[20000];
	const struct smt_ring *ring;
	struct kept *seen = calloc(1, sizeof(*seen));
	ssize_t n;
	size_t total = 0;

	assert_non_null(big);
	assert_non_null(seen);
	memset(big, 'M', 5000);
	assert_int_equal(pipe2(msg, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	opt.msg_fd = msg[1];
	env_init(&e, &opt);
	assert_int_equal(smt_output_add_command(e.o, out[0], err[0]), 0);
	write_all(out[1], " Data for JOB [1,1] offset 0\r\n\n   \nsecond", 41);
	msg_lines_seen = 1;
	run_until(&e, msg_lines_reached, 5000, "mpirun's first line");
	write_all(err[1], "ssh: Could not resolve hostname x\n", 34);
	msg_lines_seen = 2;
	run_until(&e, msg_lines_reached, 5000, "mpirun's second line");
	write_all(out[1], " line\n", 6);
	write_all(out[1], big, 5000);
	close(out[1]);
	close(err[1]);
	run_until(&e, cmd_done, 5000, "the command's streams");
	assert_int_equal(e.cmd_ended, 1);
	ring = smt_output_msgs(e.o);
	assert_int_equal(smt_ring_foreach(ring, 0, keep_line, seen), 0);
	env_finish(&e);
	close(msg[1]);
	while ((n = read(msg[0], got + total, sizeof(got) - total)) > 0)
		total += (size_t)n;
	close(msg[0]);
	/* Kept: without \r and blank lines; a line longer than 4096 in two. */
	assert_int_equal(seen->n, 5);
	assert_int_equal(seen->len[0], 28);
	assert_memory_equal(seen->lines[0], " Data for JOB [1,1] offset 0", 28);
	assert_memory_equal(seen->lines[1], "ssh: Could not resolve hostname x", 33);
	assert_memory_equal(seen->lines[2], "second line", 11);
	assert_int_equal(seen->len[3], 4096);
	assert_int_equal(seen->len[4], 904);
	/* Passed on: as they are in text, JSON objects of stream "mpirun". */
	if (fmt == SMT_FORMAT_TEXT) {
		static const char head[] = " Data for JOB [1,1] offset 0\n"
					   "ssh: Could not resolve hostname x\nsecond line\nMMM";
		assert_int_equal(total, 28 + 1 + 33 + 1 + 11 + 1 + 4096 + 1 + 904 + 1);
		assert_memory_equal(got, head, sizeof(head) - 1);
	} else {
		size_t off = 0, objs = 0;
		while (off < total) {
			char *nl = memchr(got + off, '\n', total - off);
			json_t *o;
			assert_non_null(nl);
			o = json_loadb(got + off, (size_t)(nl - got - off), 0, NULL);
			assert_non_null(o);
			assert_string_equal(json_string_value(json_object_get(o, SMT_F_STREAM)), "mpirun");
			assert_string_equal(json_string_value(json_object_get(o, SMT_F_HOST)), HOST);
			assert_int_equal(json_string_length(json_object_get(o, SMT_F_LINE)), seen->len[objs]);
			json_decref(o);
			objs++;
			off = (size_t)(nl - got) + 1;
		}
		assert_int_equal(objs, 5);
	}
	/* No rank output on stdout. */
	assert_int_equal(e.got.len, 0);
	free(seen);
	free(big);
	env_free(&e);
}

static void test_command_text(void **state)
{
	(void)state;
	run_command(SMT_FORMAT_TEXT);
}

static void test_command_json(void **state)
{
	(void)state;
	run_command(SMT_FORMAT_JSON);
}

/* ---- streams still held open ---- */

static int drained_fd;
static int pipe_drained(struct env *e)
{
	int avail = -1;

	(void)e;
	return ioctl(drained_fd, FIONREAD, &avail) == 0 && avail == 0;
}

static void test_close_streams(void **state)
{
	struct env e;
	struct env_opts opt = { .format = SMT_FORMAT_TEXT };
	int out0, err0;

	(void)state;
	env_init(&e, &opt);
	add_rank(&e, 0, &out0, &err0, &drained_fd);
	/* A process outside the job keeps the pipe: the hub is told to give
	 * up on it, and what was read is taken, the unfinished line ended. */
	write_all(out0, "read\nunfinished", 15);
	run_until(&e, local_line_read, 5000, "the bytes");
	run_until(&e, pipe_drained, 5000, "the pipe read");
	assert_int_equal(smt_output_open_streams(e.o), 2);
	smt_output_close_streams(e.o);
	run_until(&e, rank0_ended, 5000, "the streams given up");
	assert_int_equal(smt_output_open_streams(e.o), 0);
	env_finish(&e);
	close(out0);
	close(err0);
	{
		static const char want[] = "[1,mpirank:0,algo-1]<stdout>: read\n"
					   "[1,mpirank:0,algo-1]<stdout>: unfinished\n";
		assert_int_equal(e.got.len, sizeof(want) - 1);
		assert_memory_equal(e.got.p, want, sizeof(want) - 1);
	}
	env_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, so that VmHWM is the process's own so far. */
		cmocka_unit_test(test_slow_stdout),
		cmocka_unit_test(test_text_two_ranks),
		cmocka_unit_test(test_json_two_ranks),
		cmocka_unit_test(test_outbox_text),
		cmocka_unit_test(test_outbox_json_worker),
		cmocka_unit_test(test_remote_batches),
		cmocka_unit_test(test_remote_line_across_batches),
		cmocka_unit_test(test_remote_lost_mid_line),
		cmocka_unit_test(test_logs),
		cmocka_unit_test(test_rank_logs_text),
		cmocka_unit_test(test_rank_logs_json),
		cmocka_unit_test(test_command_text),
		cmocka_unit_test(test_command_json),
		cmocka_unit_test(test_close_streams),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
