/*
 * ranks.h - the rank table: every rank this host knows of, what it is
 * doing, and what it said last.
 *
 * On every host the table holds the local ranks from the moment their
 * launcher registers them (rank.c of smtctl, rankd.h), before the program
 * runs; the leader also holds every other host's ranks, as the workers
 * report them (smt_ranks_merge_remote).  /v1/status, /metrics, the stall
 * watchdog and the failure report read it; nothing here does I/O.
 *
 * Per local rank the table keeps its stderr's last lines, the first line
 * that looks like an error and the Python faulthandler dump that begins
 * with "Fatal Python error: " (for the failure report), counts lines and
 * bytes, and the time of its last line and last progress line.
 */
#ifndef SMT_RANKS_H
#define SMT_RANKS_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "crash.h"
#include "record.h"
#include "ring.h"

struct smt_pystack;

/* A rank's stderr tail (for the failure report): lines and bytes. */
#define SMT_RANK_TAIL_LINES 64
#define SMT_RANK_TAIL_BYTES (8 * 1024)
/* A kept line keeps at most its first this many bytes. */
#define SMT_KEEP_LINE_MAX 2048
#define SMT_FIRST_ERROR_MAX 512
/* Ranks above this are refused (a registration, a worker's report). */
#define SMT_RANK_MAX 1000000

enum smt_rank_state {
	SMT_RANK_STARTING = 0,  /* registered, the program not yet running */
	SMT_RANK_RUNNING,
	SMT_RANK_EXITED,        /* ended: exit code, signal, or unknown */
};

struct smt_rank {
	int rank;
	int local;
	const char *host;        /* interned */
	pid_t pid;               /* the program's PID (0: not known yet) */
	double start_time;       /* epoch seconds, 0 unknown */
	double end_time;
	enum smt_rank_state state;
	int exit_code;           /* -1 unless it exited with a code */
	int signo;               /* the signal that killed it, or 0 */
	int exec_errno;          /* the program could not be executed */
	int64_t signaled_ms;     /* when smtd first signalled it to stop, 0 never */
	uint64_t lines, bytes;
	int64_t last_line_ms;    /* 0: no line yet */
	int64_t last_progress_ms;
	double cpu_s;            /* CPU seconds, as last read (local) or reported */
	char *error_line;        /* the first line that looks like an error */
	char **tail;             /* a remote rank's last error lines, as reported */
	struct smt_ring stderr_tail; /* a local rank's */
	/* How it died (crash.h): a local rank's facts are its host's, a
	 * remote one's as reported; CRASH.where of a local rank is read from
	 * DUMP (smt_ranks_crash). */
	struct smt_crash crash;
	struct smt_pystack *dump; /* a local rank's faulthandler dump, or NULL */
	long oom_base;           /* the OOM count at its start (-1 unknown) */
	/* The head of a long line in progress, per stream (local and, on the
	 * leader, remote). */
	char *keep[2];
	size_t keep_len[2];
	uint64_t keep_total[2];
};

struct smt_ranks;

/* A table for CURRENT_HOST. */
int smt_ranks_new(const char *current_host, struct smt_ranks **out);
void smt_ranks_free(struct smt_ranks *t);

/* Forget every rank (a new attempt of the job begins, smtd(8) Restarts); the
 * interned host names stay valid. */
void smt_ranks_clear(struct smt_ranks *t);

/* RANK's entry, created (as a rank of HOST, NULL: this host) when CREATE;
 * NULL when absent, out of range or out of memory. */
struct smt_rank *smt_ranks_get(struct smt_ranks *t, int rank, const char *host, int create);
const struct smt_rank *smt_ranks_find(const struct smt_ranks *t, int rank);

/* Highest rank + 1. */
int smt_ranks_count(const struct smt_ranks *t);
/* The latest progress line of any rank, ms since the epoch; 0: none yet. */
int64_t smt_ranks_last_progress_ms(const struct smt_ranks *t);
/* Local ranks registered. */
int smt_ranks_local(const struct smt_ranks *t);

/* The rank's host, or NULL. */
const char *smt_ranks_host(const struct smt_ranks *t, int rank);

/*
 * Account for record R (the rank must exist): lines, bytes, the time of the
 * last line, and for a completed line the kept head (*KEPT, *KEPT_LEN,
 * *TRUNCATED: what the log ring should keep of the line; *KEPT is NULL when
 * R does not end a line; valid until the next call).  Also the stderr tail
 * and first error line of a local rank.
 */
void smt_ranks_account(struct smt_ranks *t, const struct smt_record *r, const char **kept,
		       size_t *kept_len, int *truncated);

/* The end of a rank: WSTATUS as waitpid gives it, or -1 when unknown. */
void smt_ranks_ended(struct smt_ranks *t, struct smt_rank *k, int wstatus, double when);

/* K's crash facts with its crash site (a local rank's from its dump). */
void smt_ranks_crash(const struct smt_rank *k, struct smt_crash *out);
/* A local rank's faulthandler dump, crashing thread first
 * (smt_crash_dump_order), malloc'ed; NULL when it wrote none. */
char *smt_ranks_dump(const struct smt_rank *k);

/* Ranks as /v1/status shows them (LOCAL_ONLY: this host's), NOW epoch s. */
json_t *smt_ranks_json(const struct smt_ranks *t, int local_only, double now);

/*
 * The leader: take a worker's report of its ranks (the array of its
 * /v1/status job.ranks or of its end of output) into the table.  Entries
 * that are not objects with a valid rank are skipped.  Returns how many
 * were taken.
 */
int smt_ranks_merge_remote(struct smt_ranks *t, const char *host, json_t *ranks);

/* The first rank that failed on its own (exit code != 0 or a signal, not
 * after smtd signalled it), earliest end first; NULL when none. */
const struct smt_rank *smt_ranks_first_failure(const struct smt_ranks *t, int local_only);

/* Visit the ranks in order. */
typedef void (*smt_ranks_cb)(void *arg, struct smt_rank *k);
void smt_ranks_each(struct smt_ranks *t, smt_ranks_cb cb, void *arg);

#endif
