/*
 * output.h - the ranks' output: decode, join into lines, tag, forward, keep.
 *
 * The supervisor feeds the bytes it reads from mpirun's stdout (the --xml
 * dialect, see xmlstream.h) and stderr, or from a standalone program's
 * stdout and stderr, and calls smt_output_eof() when a pipe ends.  This
 * module joins each rank's chunks into lines and writes them to OUT_FD:
 *
 *   text:  [1,mpirank:R,HOST]<stdout>: LINE\n       (the toolkit's format)
 *   json:  {"time":"2024-05-01T12:00:00.123Z","rank":R,"host":"HOST",
 *           "stream":"stdout","line":"LINE"}\n
 *
 * HOST comes from mpirun's --display-map (never guessed; "unknown" when
 * the map did not name the rank); a standalone program's lines are rank 0
 * on the current host.  mpirun's own messages (untagged <stderr>, text
 * outside the chunks, its stderr descriptor) are kept apart: written to
 * MSG_FD as they are (json: "stream":"mpirun", no rank) and retained for
 * the failure report.  Blank lines of mpirun's own are dropped.
 *
 * Guarantees:
 * - No byte of a rank line is lost and no two lines are merged, whatever
 *   the bytes (NUL, invalid UTF-8 pass through exactly in text mode).
 *   A line not ended by '\n' when its pipe ends is written with a '\n'.
 * - Text mode: a line longer than SMT_OUTPUT_LINE_CAP is streamed straight
 *   through as it arrives (so a 10 MiB line arrives as one line).  While it
 *   streams, other lines wait in memory; only when the waiting bytes and
 *   unfinished lines of every rank together exceed SMT_OUTPUT_HOLD_CAP is
 *   the streaming line cut: that piece ends with SMT_OUTPUT_SPLIT_MARK and
 *   the rest of the line follows as a new tagged line of the same rank.
 * - JSON mode: every object is valid JSON.  "line" is always valid UTF-8:
 *   a line that is not carries each invalid byte as U+FFFD there, and its
 *   exact bytes in "line_b64" (standard base64).  A line longer than
 *   SMT_OUTPUT_LINE_CAP comes as several objects, all but the last with
 *   "partial":true (cut between UTF-8 characters where the line has them);
 *   concatenating their bytes gives the line.
 * - Memory is bounded whatever the volume or line length: at most
 *   SMT_OUTPUT_HOLD_CAP bytes of unfinished and waiting lines (up to twice
 *   that allocated, as buffers grow by doubling), an output buffer of
 *   SMT_OUTPUT_BUF_CAP + 64 KiB, the log ring (SMT_OUTPUT_LOG_BYTES plus
 *   32 bytes a line), mpirun's messages (SMT_OUTPUT_MSG_BYTES), and per rank
 *   about 20 KiB (its stderr tail, first error line, idle line buffers and
 *   tags): about 19 MiB + 20 KiB per rank in all.  Ranks above
 *   SMT_OUTPUT_MAX_RANK count as mpirun's own output.
 * - Writes are blocking (poll() on EAGAIN): one write() per feed call in
 *   the common case, more only when a call produces more than
 *   SMT_OUTPUT_BUF_CAP.  A write error (EPIPE, ...) is returned once; later
 *   output is counted as dropped, and the tails are kept all the same.
 *
 * Not thread-safe; owned by the event loop like everything else.
 */
#ifndef SMT_OUTPUT_H
#define SMT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Memory caps (bytes unless said otherwise). */
#define SMT_OUTPUT_LINE_CAP        (64 * 1024)
#define SMT_OUTPUT_HOLD_CAP        (8 * 1024 * 1024)
#define SMT_OUTPUT_BUF_CAP         (256 * 1024)
#define SMT_OUTPUT_LOG_BYTES       (2 * 1024 * 1024)
#define SMT_OUTPUT_LOG_LINES       10000
#define SMT_OUTPUT_RANK_TAIL_BYTES (8 * 1024)
#define SMT_OUTPUT_RANK_TAIL_LINES 64
#define SMT_OUTPUT_MSG_BYTES       (64 * 1024)
#define SMT_OUTPUT_MSG_LINES       512
/* A kept line (logs, tails) keeps at most its first this many bytes. */
#define SMT_OUTPUT_KEEP_LINE_MAX   2048
#define SMT_OUTPUT_FIRST_ERROR_MAX 512
#define SMT_OUTPUT_MAX_RANK        65535

/* Ends the first piece of a line cut because of SMT_OUTPUT_HOLD_CAP. */
#define SMT_OUTPUT_SPLIT_MARK " [smtd: line split]"

enum smt_output_format { SMT_OUTPUT_TEXT = 0, SMT_OUTPUT_JSON };

enum smt_output_stream { SMT_OUTPUT_STDOUT = 0, SMT_OUTPUT_STDERR = 1 };

/* Where fed bytes come from. */
enum smt_output_source {
	SMT_SRC_MPIRUN_STDOUT = 0, /* mpirun --xml's stdout: the dialect */
	SMT_SRC_MPIRUN_STDERR,     /* mpirun's stderr: its own plain text */
	SMT_SRC_CHILD_STDOUT,      /* standalone program: rank 0 stdout */
	SMT_SRC_CHILD_STDERR,      /* standalone program: rank 0 stderr */
	SMT_SRC_COUNT
};

struct smt_output_config {
	int out_fd;                    /* rank lines; usually 1 */
	int msg_fd;                    /* mpirun's messages; usually 2; -1: keep only */
	enum smt_output_format format;
	const char *current_host;      /* copied; rank 0's host in standalone */
};

struct smt_output_stats {
	uint64_t lines;          /* rank lines forwarded (a cut line counts per piece) */
	uint64_t bytes;          /* their bytes, without tags and newlines */
	uint64_t mpirun_lines;   /* lines of mpirun's own */
	uint64_t split_lines;    /* lines cut by SMT_OUTPUT_HOLD_CAP */
	uint64_t dropped_bytes;  /* not written after a write error */
	int write_error;         /* the first write error (negative errno) or 0 */
};

struct smt_output;

/* Returns 0 or -ENOMEM / -EINVAL. */
int smt_output_new(const struct smt_output_config *cfg, struct smt_output **out);
void smt_output_free(struct smt_output *o);

/* LEN bytes read from SRC.  Complete lines are written before it returns.
 * Returns 0, or the first write error (negative errno) once. */
int smt_output_feed(struct smt_output *o, enum smt_output_source src,
		    const void *buf, size_t len);

/* SRC has ended: unfinished lines from it are written with a '\n'.  For
 * SMT_SRC_MPIRUN_STDOUT that is every rank's.  Same return as feed. */
int smt_output_eof(struct smt_output *o, enum smt_output_source src);

void smt_output_stats(const struct smt_output *o, struct smt_output_stats *st);

/* The rank table, from mpirun's map and MPIR proctable. */
int smt_output_rank_count(const struct smt_output *o);   /* highest rank + 1 */
const char *smt_output_rank_host(const struct smt_output *o, int rank); /* or NULL */
int smt_output_rank_pid(const struct smt_output *o, int rank);          /* or 0 */
/* [{"rank":R,"host":H,"pid":P}, ...] for ranks the map or output named
 * (host null / pid omitted when unknown).  NULL on ENOMEM. */
json_t *smt_output_ranks_json(const struct smt_output *o);

/* Visit kept lines, oldest first.  LINE (LEN bytes) is valid only during the
 * call; TRUNCATED says it kept only the line's first
 * SMT_OUTPUT_KEEP_LINE_MAX bytes.  A nonzero return from CB stops the walk
 * and is returned. */
typedef int (*smt_output_line_cb)(void *arg, const char *line, size_t len,
				  int truncated);
/* RANK's last stderr lines (SMT_OUTPUT_RANK_TAIL_*). */
int smt_output_rank_tail(const struct smt_output *o, int rank,
			 smt_output_line_cb cb, void *arg);
/* mpirun's own last lines (SMT_OUTPUT_MSG_*), all its sources in arrival order. */
int smt_output_mpirun_lines(const struct smt_output *o,
			    smt_output_line_cb cb, void *arg);
/* The first line of RANK's stderr that smt_report_error_score() ranks as an
 * error (at most SMT_OUTPUT_FIRST_ERROR_MAX bytes), or NULL. */
const char *smt_output_rank_first_error(const struct smt_output *o, int rank,
					size_t *len);

/* The last TAIL lines of all ranks (of RANK only when RANK >= 0), oldest
 * first, from the log ring (SMT_OUTPUT_LOG_*).  JSON: an array of the
 * objects of JSON mode ("truncated":true on a kept head); text: tagged
 * lines, malloc'ed into *TEXT (*LEN bytes, NUL-terminated).  NULL / -ENOMEM
 * on allocation failure. */
json_t *smt_output_logs_json(const struct smt_output *o, size_t tail, int rank);
int smt_output_logs_text(const struct smt_output *o, size_t tail, int rank,
			 char **text, size_t *len);

#endif
