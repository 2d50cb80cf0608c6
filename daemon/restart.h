/*
 * restart.h - restarts in place: which failures start the job again, how
 * many times, and what each attempt did (smtd(8) Restarts).
 *
 * A job fails as one kind (report.h).  RankFailed, OutOfMemory and Stalled
 * are transient often enough to be worth another attempt on the same
 * hosts; every other kind (a configuration error, a missing program, a lost
 * host or leader, a stop) is not: nothing would go differently.  While
 * fewer than --max-restarts restarts were made, the leader ends the
 * attempt everywhere and starts the next one (leader.c); an operator's
 * `smtctl restart` starts the next one whatever the kind and the count.
 *
 * Every host keeps the records: one per attempt (its start, its end, the
 * one-line summary of its failure, where its stacks went), written to
 * ROOT/output/data/attempts.json after each change - atomically, under a
 * temporary name renamed into place, never through a symbolic link (the
 * job may write ROOT/output).  When the last attempt fails, the failure
 * file's first line is its summary with "(attempt K of K)", and the next
 * lines summarise the earlier attempts, all within SMT_REPORT_SHOWN bytes.
 * Attempts are numbered from 0, as SMTD_RESTART_COUNT and the stacks'
 * directories stacks/attempt-K/ are; people read them from 1.
 */
#ifndef SMT_RESTART_H
#define SMT_RESTART_H

#include <jansson.h>

#include "report.h"

/* The most restarts --max-restarts takes. */
#define SMT_RESTART_MAX 10000

struct smt_restart;

/* MAX restarts on failure (0: none), DELAY seconds between attempts. */
int smt_restart_new(long max, double delay, struct smt_restart **out);
void smt_restart_free(struct smt_restart *r);

/* A failure of KIND may be restarted (smtd(8) Restarts). */
int smt_restart_kind(enum smt_failure_kind kind);
/* A failure of KIND ends the current attempt and starts the next one. */
int smt_restart_due(const struct smt_restart *r, enum smt_failure_kind kind);

/* The current attempt (0, 1, ...), the most, the delay. */
int smt_restart_attempt(const struct smt_restart *r);
long smt_restart_max(const struct smt_restart *r);
double smt_restart_delay(const struct smt_restart *r);
/* Attempts are marked and their stacks go under stacks/attempt-K/:
 * restarts are possible, or one was made. */
int smt_restart_marked(const struct smt_restart *r);

/* The current attempt started, ended (SUMMARY: its failure's first line,
 * NULL on success; STACKS: "stacks/attempt-K" when they were read, else
 * NULL); the next attempt begins (its number). */
void smt_restart_started(struct smt_restart *r, double when);
void smt_restart_ended(struct smt_restart *r, double when, const char *summary,
		       const char *stacks);
int smt_restart_next(struct smt_restart *r);
/* A worker: the leader's number for the current attempt. */
void smt_restart_set_attempt(struct smt_restart *r, int attempt);

/* {"attempt":K, "restarts":K, "max_restarts":N, "attempts":[...]} (new). */
json_t *smt_restart_json(const struct smt_restart *r);
/* Write ROOT/output/data/attempts.json.  0 or -errno (logged). */
int smt_restart_write(const struct smt_restart *r, const char *root);

/*
 * The failure text of the job after its last attempt failed with TEXT:
 * TEXT itself when there was one attempt; else its first line with
 * " (attempt K of K)", one line per earlier attempt, the rest of TEXT -
 * the whole of the first two parts within SMT_REPORT_SHOWN bytes.
 * malloc'ed; NULL when out of memory.
 */
char *smt_restart_failure(const struct smt_restart *r, const char *text);

/* The marked line at an attempt's start (no newline) into BUF. */
void smt_restart_mark_line(const struct smt_restart *r, const char *host, char *buf,
			   size_t len);

#endif
