/*
 * output.c - the ranks' output on this host (output.h).
 *
 * Three kinds of input share one merger: local streams (a pipe, a framer,
 * the bytes read but not yet taken), the leader's batches from workers
 * (records decoded from a fetched body), and - outside the merger - the
 * launched command's own messages.  A refused record leaves its input
 * waiting; the merger, or a rank log file that drained, resumes it.
 *
 * Why one file of this size: the three inputs share the merger's resume
 * protocol and the accounting of every record taken (the rank table, the
 * kept lines, the rank log files); apart, each would repeat both.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include "fdwriter.h"
#include "framer.h"
#include "lineproto.h"
#include "log.h"
#include "merge.h"
#include "output.h"
#include "safefile.h"
#include "smt_proto.h"
#include "textesc.h"
#include "vec.h"

#define READ_BUF (64 * 1024)
#define MSG_LINE_MAX 4096

struct ranklog;

/* One local stream of one rank. */
struct source {
	struct smt_merge_src ms;     /* first: the merger hands it back */
	struct smt_output *o;
	uv_pipe_t pipe;              /* a pipe: libuv reads it */
	uv_poll_t poll;              /* a pty's master: on_pty reads it */
	int fd;                      /* the pty's master */
	int rank;
	enum smt_stream stream;
	struct smt_framer framer;
	struct smt_dynbuf pending;   /* read, not yet taken */
	int64_t ms_read;             /* when PENDING was read */
	struct ranklog *log;
	int reading;
	int eof_seen;                /* the pipe ended (or was given up) */
	int pty;                     /* a pty's master (EIO is its end) */
	int done;                    /* every byte taken: the stream is over */
	int log_waiting;
	SLIST_ENTRY(source) link;
};

/* A rank's --rank-log-dir file. */
struct ranklog {
	int rank;
	int mark_gen;                /* the attempt's mark it has */
	struct smt_fdwriter *w;
	struct smt_output *o;
	SLIST_ENTRY(ranklog) link;
};

/* A worker on the leader: its batches, taken in turn by one source of the
 * merger, so that a line it left unfinished at the end of a batch (a fetch
 * has a size limit) keeps the line lock until a later batch ends it. */
struct rhost {
	struct smt_merge_src ms;     /* first: the merger hands it back */
	struct smt_output *o;
	char *host;
	TAILQ_HEAD(, remote) batches; /* in arrival order; the first is being taken */
	SLIST_ENTRY(rhost) link;
};

/* A worker's batch on the leader. */
struct remote {
	char *body;
	size_t len, off;
	smt_output_batch_cb done;
	void *arg;
	json_t *final;
	TAILQ_ENTRY(remote) link;
};

/* The launched command's own stdout or stderr. */
struct msgsrc {
	uv_pipe_t pipe;
	struct smt_output *o;
	int open;
	size_t len;
	char line[MSG_LINE_MAX];
};

struct smt_output {
	struct smt_output_config cfg;
	struct smt_merge *merge;
	struct smt_fdwriter *stdout_w;
	struct smt_outbox *outbox;
	SLIST_HEAD(, source) sources;
	SLIST_HEAD(, rhost) rhosts;
	/* The same by the worker's index: a batch finds its host at once,
	 * not by a walk of 1000 names. */
	struct rhost **rhost_at;
	size_t rhost_cap;
	SLIST_HEAD(, ranklog) ranklogs;
	int ranklog_dirfd;
	struct msgsrc msg[2];
	struct smt_ring log;
	struct smt_ring msgring;
	struct smt_format_clock clock;
	struct smt_output_stats st;
	char *mark;                  /* the current attempt's marked line */
	int mark_gen;
	int open_streams;
	int handles;
	int closing;
	void (*closed_cb)(void *);
	void *closed_arg;
	char readbuf[READ_BUF];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void output_released(struct smt_output *o)
{
	if (--o->handles == 0 && o->closing && o->closed_cb) {
		void (*cb)(void *) = o->closed_cb;
		o->closed_cb = NULL;
		cb(o->closed_arg);
	}
}

static void source_closed(uv_handle_t *h)
{
	struct source *s = h->data;

	/* uv_poll_t leaves the descriptor to its owner. */
	if (s->pty && s->fd >= 0)
		close(s->fd);
	output_released(s->o);
}

static void msg_closed(uv_handle_t *h)
{
	output_released(((struct msgsrc *)h->data)->o);
}

/* ---- the sink ---- */

static int sink_room(void *arg)
{
	struct smt_output *o = arg;

	return o->outbox ? smt_outbox_room(o->outbox) : smt_fdwriter_room(o->stdout_w);
}

static int is_local(const struct smt_output *o, const char *host)
{
	return host == o->cfg.current_host || strcmp(host, o->cfg.current_host) == 0;
}

/* A record is taken: count it, keep it, log it. */
static void account(struct smt_output *o, const struct smt_record *r, const char *host, int local)
{
	const char *kept;
	size_t kept_len;
	int truncated = 0;
	struct smt_rank *k;

	if (!local)
		smt_ranks_get(o->cfg.ranks, r->rank, host, 1);
	smt_ranks_account(o->cfg.ranks, r, &kept, &kept_len, &truncated);
	o->st.bytes += r->n;
	if (!kept)
		return;
	o->st.lines++;
	smt_ring_push(&o->log, kept, kept_len, truncated, r->rank, r->stream, r->ms);
	k = smt_ranks_get(o->cfg.ranks, r->rank, NULL, 0);
	if (k) {
		/* Progress as --progress-pattern says, for every rank this host
		 * sees: its own, and on the leader the workers' as they arrive. */
		int progress = 1;
		if (o->cfg.progress) {
			char line[SMT_KEEP_LINE_MAX + 1];
			memcpy(line, kept, kept_len);
			line[kept_len] = '\0';
			progress = regexec(o->cfg.progress, line, 0, NULL, 0) == 0;
		}
		if (progress && r->ms > k->last_progress_ms)
			k->last_progress_ms = r->ms;
	}
	if (local && o->cfg.local_line)
		o->cfg.local_line(o->cfg.arg, r->rank, r->stream, kept, kept_len);
}

/* LINE and its newline into Q, whole or not at all: a line queued
 * without its newline would run into the next one. */
static int queue_line(struct smt_dynbuf *q, const char *line)
{
	return smt_dynbuf_addf(q, "%s\n", line);
}

static void ranklog_put(struct ranklog *l, const struct smt_record *r)
{
	struct smt_dynbuf *q = smt_fdwriter_queue(l->w);
	int rc = smt_dynbuf_add(q, r->p, r->n);

	if (rc == 0 && (r->flags & SMT_REC_LAST))
		rc = smt_dynbuf_add(q, "\n", 1);
	if (rc < 0)
		smt_warn("rank %d's log file: %s", l->rank, strerror(-rc));
	smt_fdwriter_kick(l->w);
}

static struct ranklog *ranklog_of(struct smt_output *o, int rank)
{
	struct ranklog *l;

	SLIST_FOREACH(l, &o->ranklogs, link)
		if (l->rank == rank)
			return l;
	return NULL;
}

static void sink_put(void *arg, const struct smt_record *r, const char *host)
{
	struct smt_output *o = arg;
	int local = is_local(o, host);

	if (o->outbox) {
		if (smt_outbox_put(o->outbox, r) < 0)
			smt_warn("the outbox refused a record of rank %d", r->rank);
		else if (o->cfg.outbox_news)
			o->cfg.outbox_news(o->cfg.outbox_arg);
	} else {
		struct smt_dynbuf *q = smt_fdwriter_queue(o->stdout_w);
		if (smt_format_record(q, o->cfg.format, r, host, &o->clock) < 0)
			smt_warn("stdout: a record of rank %d does not fit its queue", r->rank);
		smt_fdwriter_kick(o->stdout_w);
	}
	if (r->flags & SMT_REC_CUT)
		smt_info("rank %d's %s stopped in the middle of a long line while other lines "
			 "waited: the line is ended there, and its rest goes on a line of its own",
			 r->rank, smt_stream_name(r->stream));
	if (local && !(r->flags & SMT_REC_CUT)) {
		/* The rank's own file has its bytes as written, never a cut. */
		struct ranklog *l = ranklog_of(o, r->rank);
		if (l)
			ranklog_put(l, r);
	}
	account(o, r, host, local);
}

static const struct smt_merge_sink sink = { .room = sink_room, .put = sink_put };

/* The sink (stdout, or the outbox the leader fetched from) has room again. */
static void on_stdout_room(void *arg)
{
	smt_merge_wake(((struct smt_output *)arg)->merge);
}

/* ---- local streams ---- */

static void source_pump(struct source *s);
static void rhost_release(struct rhost *h);

static int source_emit(void *arg, unsigned flags, const char *p, size_t n)
{
	struct source *s = arg;
	struct smt_record r = {
		.rank = s->rank,
		.stream = s->stream,
		.flags = flags,
		.ms = s->ms_read,
		.p = p,
		.n = n,
	};

	if (s->log && !smt_fdwriter_room(s->log->w)) {
		s->log_waiting = 1;
		return 1;
	}
	return smt_merge_offer(s->o->merge, &s->ms, &r, s->o->cfg.current_host) < 0;
}

static void source_finish(struct source *s)
{
	struct smt_output *o = s->o;
	struct source *t;
	int other_done = 1;

	s->done = 1;
	smt_merge_forget(o->merge, &s->ms);
	smt_framer_free(&s->framer);
	smt_dynbuf_free(&s->pending);
	o->open_streams--;
	SLIST_FOREACH(t, &o->sources, link)
		if (t != s && t->rank == s->rank && !t->done)
			other_done = 0;
	if (other_done && o->cfg.streams_ended)
		o->cfg.streams_ended(o->cfg.arg, s->rank);
}

static uv_handle_t *source_handle(struct source *s)
{
	return s->pty ? (uv_handle_t *)&s->poll : (uv_handle_t *)&s->pipe;
}

static void source_read_stop(struct source *s)
{
	if (s->pty)
		uv_poll_stop(&s->poll);
	else
		uv_read_stop((uv_stream_t *)&s->pipe);
	s->reading = 0;
}

static void close_pipe(struct source *s)
{
	if (uv_is_closing(source_handle(s)))
		return;
	source_read_stop(s);
	uv_close(source_handle(s), source_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct source *s = h->data;

	(void)suggested;
	*buf = uv_buf_init(s->o->readbuf, sizeof(s->o->readbuf));
}

/* N > 0 bytes read from S. */
static void source_bytes(struct source *s, const char *p, size_t n)
{
	long used;

	s->ms_read = now_ms();
	used = smt_framer_feed(&s->framer, p, n, source_emit, s);
	if (used < 0)
		used = 0;
	if ((size_t)used < n) {
		/* Refused: keep the rest and read no more until resumed. */
		if (smt_dynbuf_add(&s->pending, p + used, n - (size_t)used) < 0)
			smt_error("rank %d's %s: out of memory holding its output",
				  s->rank, smt_stream_name(s->stream));
		source_read_stop(s);
	}
}

/* S has ended: at its end (ERR 0), or on a read error (a libuv error). */
static void source_ended(struct source *s, int err)
{
	if (err)
		smt_warn("reading rank %d's %s: %s", s->rank, smt_stream_name(s->stream),
			 uv_strerror(err));
	s->eof_seen = 1;
	close_pipe(s);
	source_pump(s);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct source *s = st->data;

	if (n > 0)
		source_bytes(s, buf->base, (size_t)n);
	else if (n < 0)
		source_ended(s, n == UV_EOF ? 0 : (int)n);
}

/*
 * A pty's master is read here, not by libuv's stream: a read gives at most
 * the line discipline's 4 KiB, and libuv takes a short read with POLLHUP
 * (the rank has exited) for the end while the pty still holds the rank's
 * last bytes.  The end is EIO, and only once every byte was read (the
 * kernel moves what is in flight to the reader first).  The reads are
 * gathered into one feed of up to a pipe's read: the framer then copies a
 * long line into its piece only where a pipe's read would have cut it.
 */
static void on_pty(uv_poll_t *h, int status, int events)
{
	struct source *s = h->data;
	char *buf = s->o->readbuf;
	size_t len = 0;
	int end = 0, err = 0;

	(void)events;
	while (len < sizeof(s->o->readbuf)) {
		ssize_t n = read(s->fd, buf + len, sizeof(s->o->readbuf) - len);

		if (n > 0) {
			len += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			/* libuv stops a poll it reports an error on. */
			end = status < 0;
			err = status;
			break;
		} else {
			end = 1;
			err = n == 0 || errno == EIO ? 0 : -errno;
			break;
		}
	}
	if (len)
		source_bytes(s, buf, len);
	if (end)
		source_ended(s, err);
}

static int source_read_start(struct source *s)
{
	if (s->pty)
		return uv_poll_start(&s->poll, UV_READABLE, on_pty);
	return uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read);
}

/* Go on: what is held first, then the end or the pipe again. */
static void source_pump(struct source *s)
{
	if (s->done || s->o->closing)
		return;
	if (s->pending.len) {
		long used =
			smt_framer_feed(&s->framer, s->pending.p, s->pending.len, source_emit, s);
		if (used > 0)
			smt_dynbuf_consume(&s->pending, (size_t)used, 1);
		if (s->pending.len)
			return;
	}
	if (s->eof_seen) {
		if (smt_framer_eof(&s->framer, source_emit, s) == 0)
			source_finish(s);
		return;
	}
	if (!s->reading && source_read_start(s) == 0)
		s->reading = 1;
}

static void source_resume(struct smt_merge_src *ms)
{
	source_pump((struct source *)ms);
}

static void on_ranklog_room(void *arg)
{
	struct ranklog *l = arg;

	struct source *s;

	SLIST_FOREACH(s, &l->o->sources, link)
		if (s->log == l && s->log_waiting) {
			s->log_waiting = 0;
			source_pump(s);
		}
}

static int open_ranklog(struct smt_output *o, int rank, struct ranklog **out)
{
	char name[64];
	struct ranklog *l;
	int fd, rc;

	*out = NULL;
	if (!o->cfg.rank_log_dir)
		return 0;
	if ((l = ranklog_of(o, rank))) {
		*out = l;
		return 0;
	}
	if (o->ranklog_dirfd < 0) {
		o->ranklog_dirfd = open(o->cfg.rank_log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (o->ranklog_dirfd < 0 && errno == ENOENT &&
		    mkdir(o->cfg.rank_log_dir, 0755) == 0)
			o->ranklog_dirfd =
				open(o->cfg.rank_log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (o->ranklog_dirfd < 0) {
			rc = -errno;
			smt_error("--rank-log-dir %s: %s; the ranks' lines are not written there",
				  o->cfg.rank_log_dir, strerror(errno));
			return rc;
		}
	}
	snprintf(name, sizeof(name), "rank-%d.log", rank);
	/* Never through a link, a FIFO or a file someone planted there. */
	fd = smt_safefile_open(o->ranklog_dirfd, name, SMT_SAFEFILE_APPEND, 0644);
	if (fd < 0) {
		smt_error("--rank-log-dir %s/%s: %s; rank %d's lines are not written there",
			  o->cfg.rank_log_dir, name, smt_safefile_strerror(fd), rank);
		return fd;
	}
	l = calloc(1, sizeof(*l));
	if (!l || smt_fdwriter_new(o->cfg.loop, fd, 1, name, SMT_OUTPUT_RANKLOG_CAP,
				    SMT_RECORD_MAX + 16, &l->w) < 0) {
		free(l);
		close(fd);
		return -ENOMEM;
	}
	l->rank = rank;
	l->o = o;
	smt_fdwriter_on_room(l->w, on_ranklog_room, l);
	SLIST_INSERT_HEAD(&o->ranklogs, l, link);
	*out = l;
	return 0;
}

/* Only a pty's master answers TIOCGPTN (rankd.c checked the rest). */
static int is_pty_master(int fd)
{
	unsigned n;

	return ioctl(fd, TIOCGPTN, &n) == 0;
}

static int add_source(struct smt_output *o, int rank, enum smt_stream stream, int fd,
		      struct ranklog *log)
{
	struct source *s = calloc(1, sizeof(*s));
	int rc;

	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	s->o = o;
	s->rank = rank;
	s->stream = stream;
	s->log = log;
	s->ms.resume = source_resume;
	smt_framer_init(&s->framer, SMT_RECORD_MAX);
	smt_dynbuf_init(&s->pending, READ_BUF);
	s->pty = is_pty_master(fd);
	s->fd = fd;
	/* uv_poll_init makes the pty's master non-blocking. */
	rc = s->pty ? uv_poll_init(o->cfg.loop, &s->poll, fd) :
		      uv_pipe_init(o->cfg.loop, &s->pipe, 0);
	if (rc < 0) {
		close(fd);
		free(s);
		return rc;
	}
	source_handle(s)->data = s;
	o->handles++;
	SLIST_INSERT_HEAD(&o->sources, s, link);
	o->open_streams++;
	rc = s->pty ? 0 : uv_pipe_open(&s->pipe, fd);
	if (rc < 0) {
		close(fd);
		s->eof_seen = 1;
		close_pipe(s);
		source_pump(s);
		return rc;
	}
	source_pump(s);
	return 0;
}

int smt_output_add_rank(struct smt_output *o, int rank, int out_fd, int err_fd)
{
	struct ranklog *log = NULL;
	int rc = 0;

	open_ranklog(o, rank, &log);
	if (log && o->mark && log->mark_gen != o->mark_gen) {
		/* The rank's file says where each attempt begins. */
		int rc2 = queue_line(smt_fdwriter_queue(log->w), o->mark);
		if (rc2 < 0)
			smt_warn("rank %d's log file: the attempt's mark: %s", rank,
				 strerror(-rc2));
		smt_fdwriter_kick(log->w);
		log->mark_gen = o->mark_gen;
	}
	if (out_fd >= 0)
		rc = add_source(o, rank, SMT_STREAM_STDOUT, out_fd, log);
	if (err_fd >= 0) {
		int rc2 = add_source(o, rank, SMT_STREAM_STDERR, err_fd, log);
		if (rc == 0)
			rc = rc2;
	}
	return rc;
}

int smt_output_open_streams(const struct smt_output *o)
{
	return o->open_streams;
}

void smt_output_close_streams(struct smt_output *o)
{
	struct source *s;
	struct rhost *h;

	SLIST_FOREACH(s, &o->sources, link) {
		if (s->done || s->eof_seen)
			continue;
		s->eof_seen = 1;
		close_pipe(s);
		source_pump(s);
	}
	for (int i = 0; i < 2; i++)
		if (o->msg[i].open) {
			o->msg[i].open = 0;
			uv_close((uv_handle_t *)&o->msg[i].pipe, msg_closed);
		}
	/* Nor does a worker's line left unfinished hold the others back. */
	SLIST_FOREACH(h, &o->rhosts, link)
		if (TAILQ_EMPTY(&h->batches))
			rhost_release(h);
}

/* ---- the command's own messages ---- */

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void msg_line(struct smt_output *o, const char *p, size_t n)
{
	size_t i;

	while (n && p[n - 1] == '\r')
		n--;
	for (i = 0; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	if (i == n)
		return;
	o->st.msg_lines++;
	smt_ring_push(&o->msgring, p, n, 0, -1, 0, now_ms());
	if (o->cfg.msg_fd < 0)
		return;
	if (o->cfg.format == SMT_FORMAT_TEXT) {
		char buf[MSG_LINE_MAX + 1];
		memcpy(buf, p, n);
		buf[n] = '\n';
		write_all(o->cfg.msg_fd, buf, n + 1);
		return;
	}
	struct smt_dynbuf b;
	int inv = 0, rc;
	char ts[40];

	/* The cap holds the longest line; only running out of memory fails,
	 * and then nothing is written rather than a broken object. */
	smt_dynbuf_init(&b, SMT_JSON_ESCAPE_MAX(MSG_LINE_MAX + 256) + 512);
	smt_log_time((long long)now_ms(), ts, sizeof(ts));
	rc = smt_dynbuf_addf(&b, "{\"" SMT_F_TIME "\":\"%s\",\"" SMT_F_HOST "\":\"", ts);
	if (rc == 0)
		rc = smt_json_escape_add(&b, o->cfg.current_host, strlen(o->cfg.current_host),
					 &inv);
	if (rc == 0)
		rc = smt_dynbuf_addf(&b, "\",\"" SMT_F_STREAM "\":\"%s\",\"" SMT_F_LINE "\":\"",
				     o->cfg.msg_name);
	if (rc == 0)
		rc = smt_json_escape_add(&b, p, n, &inv);
	if (rc == 0)
		rc = smt_dynbuf_addstr(&b, "\"}\n");
	if (rc == 0)
		write_all(o->cfg.msg_fd, b.p, b.len);
	smt_dynbuf_free(&b);
}

static void msg_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct msgsrc *m = h->data;

	(void)suggested;
	*buf = uv_buf_init(m->o->readbuf, sizeof(m->o->readbuf));
}

static void msg_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct msgsrc *m = st->data;
	const char *p = buf->base;

	if (n == 0)
		return;
	if (n < 0) {
		if (m->len)
			msg_line(m->o, m->line, m->len);
		m->len = 0;
		if (m->open) {
			m->open = 0;
			uv_close((uv_handle_t *)&m->pipe, msg_closed);
		}
		if (!m->o->msg[0].open && !m->o->msg[1].open && m->o->cfg.streams_ended)
			m->o->cfg.streams_ended(m->o->cfg.arg, -1);
		return;
	}
	while (n > 0) {
		const char *nl = memchr(p, '\n', (size_t)n);
		size_t len = nl ? (size_t)(nl - p) : (size_t)n;
		size_t room = MSG_LINE_MAX - m->len;
		size_t take = len < room ? len : room;

		memcpy(m->line + m->len, p, take);
		m->len += take;
		if (nl || m->len == MSG_LINE_MAX) {
			msg_line(m->o, m->line, m->len);
			m->len = 0;
		}
		if (nl)
			take = len + 1;
		p += take;
		n -= (ssize_t)take;
	}
}

int smt_output_add_command(struct smt_output *o, int out_fd, int err_fd)
{
	int fds[2] = { out_fd, err_fd };
	int rc = 0;

	for (int i = 0; i < 2; i++) {
		struct msgsrc *m = &o->msg[i];
		if (fds[i] < 0)
			continue;
		m->o = o;
		if ((rc = uv_pipe_init(o->cfg.loop, &m->pipe, 0)) < 0) {
			close(fds[i]);
			continue;
		}
		m->pipe.data = m;
		o->handles++;
		m->open = 1;
		if ((rc = uv_pipe_open(&m->pipe, fds[i])) < 0 ||
		    (rc = uv_read_start((uv_stream_t *)&m->pipe, msg_alloc, msg_read)) < 0) {
			m->open = 0;
			uv_close((uv_handle_t *)&m->pipe, msg_closed);
		}
	}
	return rc;
}

const struct smt_ring *smt_output_msgs(const struct smt_output *o)
{
	return &o->msgring;
}

/* ---- workers' batches ---- */

static void remote_free(struct remote *rb)
{
	free(rb->body);
	json_decref(rb->final);
	free(rb);
}

/* Every batch of H goes, untaken and unanswered. */
static void drop_batches(struct rhost *h)
{
	struct remote *rb;

	while ((rb = TAILQ_FIRST(&h->batches))) {
		TAILQ_REMOVE(&h->batches, rb, link);
		remote_free(rb);
	}
}

/* The host's line lock goes: it sends nothing more (for now, or ever). */
static void rhost_release(struct rhost *h)
{
	smt_merge_forget(h->o->merge, &h->ms);
}

static void remote_pump(struct rhost *h)
{
	struct smt_output *o = h->o;
	struct remote *rb;

	while ((rb = TAILQ_FIRST(&h->batches))) {
		int rc = 0;

		while (rb->off < rb->len) {
			struct smt_record r;
			size_t used;

			if (smt_lineproto_decode(rb->body + rb->off, rb->len - rb->off, &r,
						 &used) != 1) {
				smt_warn("the output of %s is not valid at byte %zu of a batch; "
					 "dropping "
					 "the rest of it",
					 h->host, rb->off);
				rc = -EINVAL;
				break;
			}
			if (r.rank == SMT_LINEPROTO_EOF_RANK) {
				json_decref(rb->final);
				rb->final = json_loadb(r.p, r.n, 0, NULL);
				rb->off += used;
				continue;
			}
			if (smt_merge_offer(o->merge, &h->ms, &r, h->host) < 0)
				return;
			rb->off += used;
		}
		TAILQ_REMOVE(&h->batches, rb, link);
		if (rb->done)
			rb->done(rb->arg, rc, rb->final);
		remote_free(rb);
	}
	/* Nothing more to offer for now: only a line in progress keeps the
	 * lock, until the host's next batch ends it. */
	if (smt_merge_locked_by(o->merge) != &h->ms)
		rhost_release(h);
}

static void remote_resume(struct smt_merge_src *ms)
{
	remote_pump((struct rhost *)ms);
}

static struct rhost *rhost_of(struct smt_output *o, size_t index, const char *host)
{
	struct rhost *h;

	if (index < o->rhost_cap && (h = o->rhost_at[index]))
		return h;
	if (index == SIZE_MAX || SMT_VEC_RESERVE(o->rhost_at, o->rhost_cap, index + 1) < 0)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->host = strdup(host))) {
		free(h);
		return NULL;
	}
	o->rhost_at[index] = h;
	h->o = o;
	h->ms.resume = remote_resume;
	TAILQ_INIT(&h->batches);
	SLIST_INSERT_HEAD(&o->rhosts, h, link);
	return h;
}

int smt_output_remote(struct smt_output *o, size_t index, const char *host, char *body,
		      size_t len, smt_output_batch_cb done, void *arg)
{
	struct rhost *h = rhost_of(o, index, host);
	struct remote *rb = h ? malloc(sizeof(*rb)) : NULL;

	if (!rb) {
		free(body);
		return -ENOMEM;
	}
	*rb = (struct remote){ .body = body, .len = len, .done = done, .arg = arg };
	TAILQ_INSERT_TAIL(&h->batches, rb, link);
	/* Taken from the loop, after what the host sent before. */
	smt_merge_defer(o->merge, &h->ms);
	return 0;
}

void smt_output_remote_cancel(struct smt_output *o, smt_output_batch_cb done, void *arg)
{
	struct rhost *h;

	SLIST_FOREACH(h, &o->rhosts, link) {
		struct remote *rb, *next;
		int hit = 0;

		for (rb = TAILQ_FIRST(&h->batches); rb; rb = next) {
			next = TAILQ_NEXT(rb, link);
			if (!done || (rb->done == done && rb->arg == arg)) {
				TAILQ_REMOVE(&h->batches, rb, link);
				remote_free(rb);
				hit = 1;
			}
		}
		/* A line it left unfinished stays so. */
		if ((hit || !done) && TAILQ_EMPTY(&h->batches))
			rhost_release(h);
	}
}

void smt_output_remote_lost(struct smt_output *o, const char *host)
{
	struct rhost *h;

	SLIST_FOREACH(h, &o->rhosts, link) {
		if (strcmp(h->host, host) != 0)
			continue;
		drop_batches(h);
		rhost_release(h);
	}
}

/* ---- the outbox ---- */

struct smt_outbox *smt_output_outbox(struct smt_output *o)
{
	return o->outbox;
}

int smt_output_end(struct smt_output *o, json_t *final)
{
	char *text;
	int rc;

	if (!o->outbox)
		return 0;
	text = json_dumps(final, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	rc = smt_outbox_end(o->outbox, text, strlen(text));
	free(text);
	if (rc == 0 && o->cfg.outbox_news)
		o->cfg.outbox_news(o->cfg.outbox_arg);
	return rc;
}


/* ---- attempts ---- */

void smt_output_next_attempt(struct smt_output *o)
{
	if (o->outbox)
		smt_outbox_reopen(o->outbox);
}

void smt_output_mark(struct smt_output *o, int attempt, const char *line)
{
	char *copy = strdup(line);

	if (!copy)
		return;
	free(o->mark);
	o->mark = copy;
	o->mark_gen++;
	if (!o->stdout_w)
		return;
	struct smt_dynbuf *q = smt_fdwriter_queue(o->stdout_w);
	int rc;
	if (o->cfg.format == SMT_FORMAT_JSON) {
		json_t *j = json_pack("{s:s, s:i, s:s}", "smtd", "attempt", "attempt", attempt,
				      "message", line);
		char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		rc = text ? queue_line(q, text) : -ENOMEM;
		free(text);
		json_decref(j);
	} else {
		rc = queue_line(q, line);
	}
	if (rc < 0)
		smt_warn("the attempt's mark on stdout: %s", strerror(-rc));
	smt_fdwriter_kick(o->stdout_w);
}

/* ---- the rest ---- */

int smt_output_new(const struct smt_output_config *cfg, struct smt_output **out)
{
	struct smt_output *o = calloc(1, sizeof(*o));
	int rc = -ENOMEM;

	if (!o)
		return -ENOMEM;
	o->cfg = *cfg;
	o->ranklog_dirfd = -1;
	SLIST_INIT(&o->sources);
	SLIST_INIT(&o->rhosts);
	SLIST_INIT(&o->ranklogs);
	smt_ring_init(&o->log, SMT_OUTPUT_LOG_LINES, SMT_OUTPUT_LOG_BYTES);
	smt_ring_init(&o->msgring, SMT_OUTPUT_MSG_LINES, SMT_OUTPUT_MSG_BYTES);
	if (!o->cfg.msg_name)
		o->cfg.msg_name = "mpirun";
	if (cfg->to_outbox)
		rc = smt_outbox_new(SMT_OUTPUT_OUTBOX_CAP, &o->outbox);
	else
		rc = smt_fdwriter_new(cfg->loop, cfg->out_fd, 0, "stdout", SMT_OUTPUT_STDOUT_CAP,
				      SMT_FORMAT_MAX(SMT_RECORD_MAX), &o->stdout_w);
	/* Lines are never interleaved where they are text: on stdout in text
	 * mode, in the outbox (the leader may print text whatever this host's
	 * format), and in the rank log files. */
	if (rc == 0)
		rc = smt_merge_new(cfg->loop, cfg->format == SMT_FORMAT_TEXT || cfg->to_outbox ||
				   cfg->rank_log_dir, cfg->line_cut_ms, &sink, o, &o->merge);
	if (rc < 0) {
		smt_output_free(o);
		return rc;
	}
	if (o->stdout_w)
		smt_fdwriter_on_room(o->stdout_w, on_stdout_room, o);
	if (o->outbox)
		smt_outbox_on_room(o->outbox, on_stdout_room, o);
	*out = o;
	return 0;
}

void smt_output_flush(struct smt_output *o, void (*cb)(void *), void *arg)
{
	if (o->stdout_w) {
		smt_fdwriter_on_drained(o->stdout_w, cb, arg);
		return;
	}
	cb(arg);
}

void smt_output_stats(const struct smt_output *o, struct smt_output_stats *st)
{
	*st = o->st;
	if (o->stdout_w) {
		struct smt_fdwriter_stats ws;
		smt_fdwriter_stats(o->stdout_w, &ws);
		st->stdout_written = ws.written;
		st->stdout_dropped = ws.dropped;
		st->stdout_error = ws.error;
	}
}

uint64_t smt_output_stdout_blocked_ms(const struct smt_output *o)
{
	return o->stdout_w ? smt_fdwriter_blocked_ms(o->stdout_w) : 0;
}

/* ---- /v1/logs ---- */

struct logs_walk {
	const struct smt_output *o;
	int rank;
	json_t *a;
	struct smt_dynbuf *b;
	int err;
	struct smt_format_clock clk;   /* lines of one millisecond share a time */
};

static const char *host_of(const struct smt_output *o, int rank)
{
	const char *h = smt_ranks_host(o->cfg.ranks, rank);

	return h ? h : "unknown";
}

static int log_json(void *arg, const struct smt_ring_entry *e, const char *bytes)
{
	struct logs_walk *w = arg;
	char *line, *b64 = NULL;
	size_t ll;
	int invalid = 0, bad = 0;
	json_t *obj;

	if (w->rank >= 0 && e->rank != w->rank)
		return 0;
	line = smt_utf8_sanitize(bytes, e->len, &ll, &invalid);
	if (!line)
		return -ENOMEM;
	if (invalid && (b64 = malloc(SMT_BASE64_LEN(e->len) + 1)))
		b64[smt_base64((const unsigned char *)bytes, e->len, b64)] = '\0';
	if (w->clk.ms != (int64_t)e->ms || !w->clk.text[0]) {
		w->clk.ms = (int64_t)e->ms;
		smt_log_time((long long)e->ms, w->clk.text, sizeof(w->clk.text));
	}
	/*
	 * Up to 10,000 of these make one answer, built in one step of the
	 * loop: no format string to parse, and no UTF-8 to check again - the
	 * line was just made valid, the rest is ASCII or the job's own
	 * checked host names.
	 */
	obj = json_object();
	bad = !obj;
	bad = bad || json_object_set_new_nocheck(obj, SMT_F_TIME,
						 json_string_nocheck(w->clk.text)) < 0;
	bad = bad || json_object_set_new_nocheck(obj, SMT_F_RANK, json_integer(e->rank)) < 0;
	bad = bad || json_object_set_new_nocheck(obj, SMT_F_HOST,
						 json_string_nocheck(host_of(w->o, e->rank))) < 0;
	bad = bad || json_object_set_new_nocheck(obj, SMT_F_STREAM, json_string_nocheck(
					smt_stream_name((enum smt_stream)e->stream))) < 0;
	bad = bad || json_object_set_new_nocheck(obj, SMT_F_LINE,
						 json_stringn_nocheck(line, ll)) < 0;
	free(line);
	if (!bad && b64)
		bad = json_object_set_new_nocheck(obj, SMT_F_LINE_B64, json_string_nocheck(b64)) <
			0;
	free(b64);
	if (!bad && e->truncated)
		bad = json_object_set_new_nocheck(obj, SMT_F_TRUNCATED, json_true()) < 0;
	if (bad || json_array_append_new(w->a, obj) < 0) {
		if (bad)
			json_decref(obj);
		return -ENOMEM;
	}
	return 0;
}

json_t *smt_output_logs_json(const struct smt_output *o, size_t tail, int rank)
{
	struct logs_walk w = { .o = o, .rank = rank, .a = json_array() };

	if (!w.a)
		return NULL;
	if (tail && smt_ring_foreach(&o->log, smt_ring_tail_start(&o->log, tail, rank), log_json,
				     &w) < 0) {
		json_decref(w.a);
		return NULL;
	}
	return w.a;
}

static int log_text(void *arg, const struct smt_ring_entry *e, const char *bytes)
{
	struct logs_walk *w = arg;
	char tag[320];
	size_t tl;

	if (w->rank >= 0 && e->rank != w->rank)
		return 0;
	tl = smt_format_tag(tag, e->rank, host_of(w->o, e->rank), (enum smt_stream)e->stream);
	if (smt_dynbuf_add(w->b, tag, tl) < 0 || smt_dynbuf_add(w->b, bytes, e->len) < 0 ||
	    smt_dynbuf_add(w->b, "\n", 1) < 0)
		return -ENOMEM;
	return 0;
}

int smt_output_logs_text(const struct smt_output *o, size_t tail, int rank, char **text,
			 size_t *len)
{
	struct smt_dynbuf b;
	struct logs_walk w = { .o = o, .rank = rank, .b = &b };

	smt_dynbuf_init(&b, (size_t)-1 / 2);
	if (tail && smt_ring_foreach(&o->log, smt_ring_tail_start(&o->log, tail, rank), log_text,
				     &w) < 0) {
		smt_dynbuf_free(&b);
		return -ENOMEM;
	}
	if (smt_dynbuf_add(&b, "", 0) < 0) {
		smt_dynbuf_free(&b);
		return -ENOMEM;
	}
	*text = smt_dynbuf_take(&b, len);
	if (!*text) {
		/* Empty: take handed nothing over, the allocation stays. */
		smt_dynbuf_free(&b);
		*text = strdup("");
		*len = 0;
	}
	return *text ? 0 : -ENOMEM;
}

/* ---- the end ---- */

void smt_output_close(struct smt_output *o, void (*cb)(void *), void *arg)
{
	o->closing = 1;
	o->closed_cb = cb;
	o->closed_arg = arg;
	struct source *s;

	SLIST_FOREACH(s, &o->sources, link)
		close_pipe(s);
	for (int i = 0; i < 2; i++)
		if (o->msg[i].open) {
			o->msg[i].open = 0;
			uv_close((uv_handle_t *)&o->msg[i].pipe, msg_closed);
		}
	if (o->handles == 0) {
		o->closed_cb = NULL;
		if (cb)
			cb(arg);
	}
}

void smt_output_free(struct smt_output *o)
{
	if (!o)
		return;
	struct source *s;
	struct rhost *h;
	struct ranklog *l;

	while ((s = SLIST_FIRST(&o->sources))) {
		SLIST_REMOVE_HEAD(&o->sources, link);
		smt_framer_free(&s->framer);
		smt_dynbuf_free(&s->pending);
		free(s);
	}
	while ((h = SLIST_FIRST(&o->rhosts))) {
		SLIST_REMOVE_HEAD(&o->rhosts, link);
		drop_batches(h);
		free(h->host);
		free(h);
	}
	free(o->rhost_at);
	while ((l = SLIST_FIRST(&o->ranklogs))) {
		SLIST_REMOVE_HEAD(&o->ranklogs, link);
		smt_fdwriter_close(l->w);
		free(l);
	}
	if (o->ranklog_dirfd >= 0)
		close(o->ranklog_dirfd);
	smt_fdwriter_close(o->stdout_w);
	smt_outbox_free(o->outbox);
	free(o->mark);
	smt_merge_free(o->merge);
	smt_ring_free(&o->log);
	smt_ring_free(&o->msgring);
	free(o);
}
