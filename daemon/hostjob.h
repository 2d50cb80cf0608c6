/*
 * hostjob.h - the job on this host: what was launched here, the ranks that
 * run here, their output, their signals and their end (smtd(8) OUTPUT, SIGNALS).
 *
 * Every host has one.  Its roots are the command smtd launched here
 * (mpirun on the leader, torchrun on every torchrun host, the program on a
 * standalone host), the Open MPI daemon the leader's mpirun started here
 * (a worker), and every rank registered by its launcher (rankd.h).  The
 * job's processes are the roots and all they start (jobtree.h); their
 * output is output.h's.
 *
 * Signals reach the ranks directly from here, never through mpirun or
 * orted (which would kill them on their own timetable):
 *   - smt_hostjob_signal: USR1/USR2 (or any) to every rank now.
 *   - smt_hostjob_stop: a stop (TERM, INT, HUP, QUIT): the signal to every
 *     rank, then the whole grace for everything of the job to end on its
 *     own; what is left at its end gets SIGKILL.
 *   - smt_hostjob_end: the job failed or cannot go on (a lost host): the
 *     signal to the ranks, and as soon as the ranks are gone the rest of
 *     the job (mpirun waiting for a lost host) is killed; SIGKILL for all
 *     after GRACE at the latest.
 * When the roots end on their own, ranks still running (mpirun aborted the
 * job) get SIGTERM and SIGKILL a second later (within the grace); what
 * outlives everything (a daemon a rank double-forked) is killed at once,
 * unless a stop's grace is running.
 *
 * The local job is over - ops->done, once - when every root and rank has
 * ended, nothing of the job is left, and every output stream reached its
 * end (or, for a pipe someone outside the job holds, after DRAIN_MS).
 */
#ifndef SMT_HOSTJOB_H
#define SMT_HOSTJOB_H

#include <jansson.h>
#include <regex.h>
#include <uv.h>

#include "collect.h"
#include "format.h"
#include "jobtree.h"
#include "output.h"
#include "ranks.h"
#include "reaper.h"

/* The longest wait for the output pipes once the job's processes are gone. */
#define SMT_HOSTJOB_DRAIN_MS 2000
/* Ranks left when the roots ended on their own: SIGTERM, then this. */
#define SMT_HOSTJOB_END_MS 1000

struct smt_hostjob;

/* How the launched command ended. */
struct smt_hostjob_status {
	int launched;        /* a command was started here */
	int exec_errno;      /* it could not be executed */
	int exited;          /* 1: ended with CODE; 0: killed by SIGNO */
	int code;
	int signo;
};

struct smt_hostjob_ops {
	/* What /v1/status shows changed (a rank started or ended...). */
	void (*changed)(void *ctx);
	/* The launched command (or orted) ended; the job goes on ending. */
	void (*root_ended)(void *ctx);
	/* A rank ended (K is its entry). */
	void (*rank_ended)(void *ctx, const struct smt_rank *k);
	/* The local job is over. */
	void (*done)(void *ctx);
	/* May LAUNCHER register RANK (besides being part of the job)?  0 or
	 * -errno with WHY.  May be NULL. */
	int (*admit)(void *ctx, pid_t launcher, int rank, char *why, size_t len);
};

struct smt_hostjob_config {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	const char *current_host;
	enum smt_format format;
	int to_outbox;             /* a worker */
	void (*outbox_news)(void *arg); /* the outbox has new bytes: called as it is */
	void *outbox_arg;
	const char *msg_name;      /* "mpirun", "torchrun", "program" */
	const char *rankd_path;    /* the launcher's socket; NULL: none */
	long nranks;               /* ranks of the job (for checks) */
	const char *rank_log_dir;
	const regex_t *progress;
	int use_cgroup;
	long long min_shm; /* --min-shm, bytes (0: off): a crash's /dev/shm words (crash.h) */
	smt_jobtree_keep keep;     /* smtd's own helpers */
	void *keep_arg;
};

int smt_hostjob_new(const struct smt_hostjob_config *cfg, const struct smt_hostjob_ops *ops,
		    void *ctx, struct smt_hostjob **out);

/* What the launcher gives the program: {"env":{..},"env_default":{..}}
 * (borrowed; copied into every answer). */
void smt_hostjob_set_launcher_env(struct smt_hostjob *hj, json_t *env);

/* The job's mark for the environment of everything launched ("SMTD_JOB=..."). */
const char *smt_hostjob_mark(const struct smt_hostjob *hj);
struct smt_ranks *smt_hostjob_ranks(struct smt_hostjob *hj);
struct smt_output *smt_hostjob_output(struct smt_hostjob *hj);

/*
 * Launch ARGV here (its own session, the job cgroup, ENVP, CWD).  AS_RANK0:
 * it is the job's only rank (standalone), its output is rank 0's; else its
 * output is the command's own messages.  0, or -errno when nothing could be
 * started (no callback then).  An exec failure is a launch too: it ends at
 * once with status.exec_errno.
 */
int smt_hostjob_launch(struct smt_hostjob *hj, char *const *argv, char *const *envp,
		       const char *cwd, int as_rank0);

/*
 * The attempt here is over (ops->done ran): forget it - its roots, its
 * ranks, its status - and wait for the next launch, as before the first
 * (smtd(8) Restarts).  The output goes on (a worker's outbox takes records again
 * after its end).  0, -EBUSY while anything of the attempt is left.
 */
int smt_hostjob_next_attempt(struct smt_hostjob *hj);
/* Where the stacks of a collection in ABORT mode go under
 * ROOT/output/data/stacks: DIR, one name (NULL: there).  0 or -ENOMEM. */
int smt_hostjob_set_stacks_dir(struct smt_hostjob *hj, const char *dir);

/* A worker: PID (verified by the caller) is the Open MPI daemon here. */
int smt_hostjob_adopt(struct smt_hostjob *hj, pid_t pid);
pid_t smt_hostjob_orted(const struct smt_hostjob *hj);

void smt_hostjob_signal(struct smt_hostjob *hj, int signo);
void smt_hostjob_stop(struct smt_hostjob *hj, int signo, double grace);
void smt_hostjob_end(struct smt_hostjob *hj, int signo, double grace);

/* Something of the job is running here (a root or a rank). */
int smt_hostjob_running(const struct smt_hostjob *hj);
/* The local job is over. */
int smt_hostjob_done(const struct smt_hostjob *hj);
void smt_hostjob_status(const struct smt_hostjob *hj, struct smt_hostjob_status *st);
/* The launched command's PID (or orted's), -1 none. */
pid_t smt_hostjob_pid(const struct smt_hostjob *hj);
double smt_hostjob_start_time(const struct smt_hostjob *hj);

/* A process smtd reaped (PID 1 / subreaper): a rank's program orphaned by
 * its launcher gives its status here. */
void smt_hostjob_reaped(struct smt_hostjob *hj, pid_t pid, int wstatus);

/* The final state of the local job, for the leader: {"command":{...},
 * "ranks":[...]} (a new reference). */
json_t *smt_hostjob_final(const struct smt_hostjob *hj);

/*
 * Collect the stacks of this host's ranks (collect.h) within TIMEOUT_MS,
 * after FREEZE_MS (ABORT mode: the ranks stopped until every host has the
 * request; 0: none); ROOT: where ABORT mode writes them
 * (ROOT/output/data/stacks).  CB(ARG, ranks) once.  -EBUSY while another
 * collection runs, -ESRCH when no rank runs here.
 */
int smt_hostjob_collect(struct smt_hostjob *hj, enum smt_collect_mode mode, unsigned timeout_ms,
			unsigned freeze_ms, const char *root, smt_collect_cb cb, void *arg);

/* Stop a collection in progress (no callback). */
void smt_hostjob_collect_cancel(struct smt_hostjob *hj);

/* Refresh the CPU seconds of the local ranks (for status and metrics). */
void smt_hostjob_sample_cpu(struct smt_hostjob *hj);

/* Kill what is left, close every handle; CB(ARG) when closed. */
void smt_hostjob_close(struct smt_hostjob *hj, void (*cb)(void *), void *arg);
/* Free, after the close callback ran. */
void smt_hostjob_free(struct smt_hostjob *hj);

#endif
