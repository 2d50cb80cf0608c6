/*
 * output.h - the ranks' output on this host: read where it is written,
 * framed, merged, forwarded and kept (smtd(8) OUTPUT).
 *
 * Every local rank's stdout and stderr arrive as two descriptors (the
 * launcher handed them to smtd, rankd.h: stdout a pty's master, or a pipe,
 * stderr a pipe; a standalone program's are smtd's own pipes).  A pty's
 * end (EIO once every slave is closed) is taken as the end of the stream.  Each stream is framed
 * into records (framer.h) and offered to one merger (merge.h) whose sink is, on the leader and a
 * standalone host, smtd's stdout (formatted as format.h says, written by an fdwriter that never
 * blocks the loop) and, on a worker, the outbox the leader fetches (outbox.h).  On the leader the
 * workers' batches are offered to the same merger, so stdout carries every rank of the job.
 *
 * Every record taken is also counted in the rank table (ranks.h), kept in
 * the log ring (GET /v1/logs) and, with --rank-log-dir, appended to
 * DIR/rank-N.log on the rank's host.
 *
 * Back-pressure, not loss: a stream whose records are refused (stdout or
 * the outbox full, a rank log file behind, or in text mode another
 * stream's long line in progress) stops being read until the merger
 * resumes it; the rank then waits in write().  Memory: per stream one
 * record in the framer and one read's worth of bytes held back; the sink's
 * queue; the log ring.  Bytes are lost only when memory runs out (a record
 * that no queue can take is dropped with a warning naming its rank) or a
 * destination fails (stdout or a rank log file: a write error drops its
 * further output, counted in smt_output_stats' stdout_dropped, so that a
 * dead stdout never stops the job).
 *
 * The launched command's own messages (mpirun's, torchrun's) are not rank
 * output: they go to MSG_FD as they are (JSON mode: objects of stream
 * MSG_NAME) and to a ring of their own for the failure report.
 */
#ifndef SMT_OUTPUT_H
#define SMT_OUTPUT_H

#include <jansson.h>
#include <regex.h>
#include <stdint.h>
#include <uv.h>

#include "format.h"
#include "outbox.h"
#include "ranks.h"
#include "ring.h"

/* Kept lines of all ranks (GET /v1/logs). */
#define SMT_OUTPUT_LOG_LINES 10000
#define SMT_OUTPUT_LOG_BYTES (1024 * 1024)
/* The launched command's own last lines, for the failure report. */
#define SMT_OUTPUT_MSG_LINES 512
#define SMT_OUTPUT_MSG_BYTES (64 * 1024)
/* Soft caps of the queues: stdout, the outbox, one rank log file. */
#define SMT_OUTPUT_STDOUT_CAP (256 * 1024)
#define SMT_OUTPUT_OUTBOX_CAP (1024 * 1024)
#define SMT_OUTPUT_RANKLOG_CAP (256 * 1024)

struct smt_output;

struct smt_output_config {
	uv_loop_t *loop;
	enum smt_format format;
	int to_outbox;              /* a worker: records go to the outbox */
	int out_fd;                 /* stdout */
	int msg_fd;                 /* the command's messages; -1: keep only */
	const char *msg_name;       /* "mpirun", "torchrun" */
	const char *current_host;
	struct smt_ranks *ranks;    /* borrowed */
	const char *rank_log_dir;   /* NULL: none */
	const regex_t *progress;    /* NULL: every line is progress */
	unsigned line_cut_ms;       /* merge.h's CUT_MS; 0: the default */
	/* The outbox has new bytes (wake a held fetch), with OUTBOX_ARG. */
	void (*outbox_news)(void *outbox_arg);
	void *outbox_arg;
	/* A local rank's streams have both ended (RANK -1: the command's). */
	void (*streams_ended)(void *arg, int rank);
	/* A line of a local rank was taken (its kept head); may be NULL. */
	void (*local_line)(void *arg, int rank, enum smt_stream stream, const char *line,
			   size_t len);
	void *arg;
};

struct smt_output_stats {
	uint64_t lines;         /* rank lines taken (a line in pieces counts once) */
	uint64_t bytes;         /* their bytes */
	uint64_t msg_lines;     /* lines of the command's own */
	uint64_t stdout_written, stdout_dropped;
	int stdout_error;
};

int smt_output_new(const struct smt_output_config *cfg, struct smt_output **out);

/* Read OUT_FD and ERR_FD (taken over; -1 for none) as local rank RANK's
 * stdout and stderr.  Returns 0 or -errno (the descriptors are closed). */
int smt_output_add_rank(struct smt_output *o, int rank, int out_fd, int err_fd);

/* Read the launched command's stdout and stderr as its own messages. */
int smt_output_add_command(struct smt_output *o, int out_fd, int err_fd);

/*
 * The leader: a worker's batch (BODY of LEN bytes from HOST, the worker
 * numbered INDEX - a small number, the same for every batch of HOST - taken
 * over and freed).  DONE(ARG, rc, final) runs from the loop, never from inside this
 * call, once every record in it was taken (rc 0), or when the batch is not
 * valid (rc -EINVAL: what came before the bad record was taken).  FINAL is
 * the worker's end-of-output object if the batch holds it, else NULL
 * (borrowed: valid during the call).  A host's batches are taken in the
 * order given; a line a batch leaves unfinished keeps stdout to itself
 * (text mode) until a later batch of the same host ends it.
 */
typedef void (*smt_output_batch_cb)(void *arg, int rc, json_t *final);
int smt_output_remote(struct smt_output *o, size_t index, const char *host, char *body,
		      size_t len, smt_output_batch_cb done, void *arg);
/* Drop the batches given with DONE and ARG still waiting, without calling
 * DONE (DONE NULL: every batch); a line their host left unfinished stays
 * so, and holds nothing back. */
void smt_output_remote_cancel(struct smt_output *o, smt_output_batch_cb done, void *arg);

/* HOST was lost: its batches still waiting are dropped (without DONE) and
 * a line it left unfinished stays so, holding nothing back. */
void smt_output_remote_lost(struct smt_output *o, const char *host);

/* Local streams not yet at their end. */
int smt_output_open_streams(const struct smt_output *o);
/* Stop waiting for the end of the local streams: read no more, take what
 * was read (their writers are gone or outside the job).  A worker's line
 * left unfinished no longer holds the others back either. */
void smt_output_close_streams(struct smt_output *o);

/* A worker: the outbox, and its end once the local job is over. */
struct smt_outbox *smt_output_outbox(struct smt_output *o);
/* A new attempt of the job (smtd(8) Restarts): the outbox takes records again. */
void smt_output_next_attempt(struct smt_output *o);
/* The marked LINE of attempt ATTEMPT's start: on stdout now (the leader,
 * a standalone host; JSON mode: an object {"smtd":"attempt",...}), and in
 * each rank's --rank-log-dir file before the rank's first line of it. */
void smt_output_mark(struct smt_output *o, int attempt, const char *line);
int smt_output_end(struct smt_output *o, json_t *final);

/* CB(ARG) once stdout has written everything queued (at once when empty). */
void smt_output_flush(struct smt_output *o, void (*cb)(void *), void *arg);

void smt_output_stats(const struct smt_output *o, struct smt_output_stats *st);
/* How long stdout has not taken a write, in ms (0: it takes them). */
uint64_t smt_output_stdout_blocked_ms(const struct smt_output *o);
const struct smt_ring *smt_output_msgs(const struct smt_output *o);

/* The last TAIL kept lines (of RANK only when RANK >= 0), oldest first, as
 * /v1/logs gives them: JSON objects, or tagged text. */
json_t *smt_output_logs_json(const struct smt_output *o, size_t tail, int rank);
int smt_output_logs_text(const struct smt_output *o, size_t tail, int rank, char **text,
			 size_t *len);

/* Close every handle; CB(ARG) once they are all closed. */
void smt_output_close(struct smt_output *o, void (*cb)(void *), void *arg);
void smt_output_free(struct smt_output *o);

#endif
