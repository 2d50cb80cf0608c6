/*
 * daemon_int.h - the daemon's shared state and the table a role fills.
 *
 * daemon.c owns the loop and what every host has: signals, the control
 * API, sshd, the job on this host (hostjob.h) and the end (the result
 * files, the final state, the exit code).  What differs between a leader
 * (and a standalone host) and a worker is a role: a table of operations
 * (struct smt_role) with private state of its own, in leader.c and
 * worker.c.  apiview.c renders what the control API shows, apiapply.c
 * applies what a request asks.  Nothing outside
 * these files sees this struct.
 */
#ifndef SMT_DAEMON_INT_H
#define SMT_DAEMON_INT_H

#include <jansson.h>
#include <regex.h>
#include <uv.h>

#include "api.h"
#include "hostjob.h"
#include "plan.h"
#include "reaper.h"
#include "report.h"
#include "restart.h"
#include "sshd.h"
#include "tcpchannel.h"

#define SMT_NSIGNALS 6

struct smt_daemon;

/* A POST of the daemons' protocol, as apiops.h's smt_api_post_fn. */
typedef int (*smt_role_post_fn)(struct smt_daemon *d, json_t *body, int peer_pid,
				json_t **reply);

/* What a role does; every member may be NULL except begin. */
struct smt_role_ops {
	const char *name;
	/* 1: the role decides the job (the leader, a standalone host): it
	 * watches for a stall, shows and names every rank of the job, and a
	 * stall's stacks end the job; 0: it serves its own host's part (a
	 * worker: its own ranks, its stacks for the leader). */
	int decides;
	/* sshd is up (or not needed): the role's life begins. */
	void (*begin)(struct smt_daemon *d);
	/* SIGNO arrived (a signal to smtd, or POST /v1/kill). */
	void (*signal)(struct smt_daemon *d, int signo);
	/* The POSTs of the daemons' protocol a worker serves (smtd(8) LEADER
	 * AND WORKERS): the leader's launch, orted's registration, the end
	 * of the ranks, the job's result, the next attempt.  NULL: the role
	 * does not serve it (404).  Each returns the HTTP status. */
	smt_role_post_fn launch, orted, end, result, attempt;
	/* GET /v1/lines: this host's output for the leader (api.h's lines). */
	int (*lines)(struct smt_daemon *d, uint64_t from, size_t max, int final,
		     const char **body, size_t *len);
	/* POST /v1/restart (smtd(8) Restarts): 202, or 409 with *REPLY. */
	int (*restart)(struct smt_daemon *d, json_t **reply);
	/* A request from the leader arrived (a worker's sign of life). */
	void (*contact)(struct smt_daemon *d);
	/* The leader holds a poll with no time on the TCP channel, or the
	 * last such ended (apiops.h's leader_kept). */
	void (*kept)(struct smt_daemon *d, int kept, uint64_t quiet_ms);
	/* The job's events on this host (hostjob.h: changed, the command or
	 * orted ended, a rank ended, it is over, a launcher registers), handed
	 * to the hostjob as they are, with the daemon as CTX; every role's
	 * table has .changed = smt_daemon_job_changed. */
	const struct smt_hostjob_ops *job;
	/* Add what the role knows to /v1/status (the hosts' readiness...). */
	void (*status)(struct smt_daemon *d, json_t *st);
	/* A host's readiness, for /v1/status. */
	int (*host_ready)(struct smt_daemon *d, const char *host);
	/* Workers known to the leader (metrics). */
	void (*peer_counts)(struct smt_daemon *d, size_t *ready, size_t *all);
	/* The workers this role reaches (the leader's channels), or NULL. */
	struct smt_peers *(*peers)(struct smt_daemon *d);
	/* A stall's stacks were read (TEXT, the failure text): the job ends
	 * on every host. */
	void (*stalled)(struct smt_daemon *d, const char *text);
	/* The job fails with TEXT and EXIT_CODE (smt_daemon_fail), once the
	 * role has its state: the leader tells its workers. */
	void (*fail)(struct smt_daemon *d, int exit_code, const char *text);
	/* Release everything (the loop is closing). */
	void (*close)(struct smt_daemon *d);
};

extern const struct smt_role_ops smt_leader_role;     /* also a standalone host */
extern const struct smt_role_ops smt_worker_role;

struct smt_daemon {
	uv_loop_t loop;
	struct smt_plan *plan;
	const struct smt_options *opts;
	enum smt_role role_kind;      /* leader, worker, standalone (plan.h) */
	const struct smt_role_ops *role;
	void *role_state;
	struct smt_reaper *reaper;
	struct smt_api *api;
	struct smt_tcpchannel channel; /* a worker's, for the leader; port 0: none */
	struct smt_sshd *sshd;
	struct smt_hostjob *job;
	uv_signal_t signals[SMT_NSIGNALS];
	uv_timer_t watchdog_timer;   /* systemd's WATCHDOG=1, when asked for */

	enum smt_state state;
	json_int_t generation;       /* bumped on every change /v1/status shows */
	double start_time;
	int stop_signal;             /* the first stopping signal smtd received */
	int closing;

	/* The end: set by smt_daemon_finish, and by the leader when it sends
	 * the workers its result (leader.c), final from then on. */
	int exit_code;
	char *failure;               /* whole failure text */
	char *summary;               /* its first line */

	long oom_kills;              /* the memory cgroup's count at launch, or -1 */
	regex_t progress;            /* --progress-pattern */
	int have_progress;
	json_t *launcher_env;        /* what every rank's launcher is given */
	struct smt_stall *stall;     /* the watchdog and the stacks (stall.c) */
	struct smt_restart *restart; /* the attempts (restart.h) */
	int attempt_started;         /* the current attempt's start was recorded */
	char restart_env[48];        /* "SMTD_RESTART_COUNT=K" */
	char *cmd_preload;           /* "LD_PRELOAD=..." of a standalone program, or NULL */
	struct smt_prelaunch *prelaunch; /* this host's pre-launch phase (prelaunch.h) */
	void (*prelaunch_done)(struct smt_daemon *d, int passed);
	json_t *preflight;           /* every host's pre-launch result known here, by host */
};

/* daemon.c */
void smt_daemon_set_state(struct smt_daemon *d, enum smt_state state);
void smt_daemon_changed(struct smt_daemon *d);
/* The job here changed (hostjob.h's changed; CTX the daemon): it runs once
 * a rank does, and /v1/status shows it. */
void smt_daemon_job_changed(void *ctx);
/* The job fails with KIND and the formatted rest, and EXIT_CODE, through
 * the role's fail once it has begun, else smt_daemon_finish. */
void smt_daemon_fail(struct smt_daemon *d, int exit_code, enum smt_failure_kind kind,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* SIGNO for the job, received by smtd or asked for by smtctl kill; FROM
 * begins the log line ("received"). */
void smt_daemon_signal(struct smt_daemon *d, int signo, const char *from);
/* The end of this host's part: files, final state, exit code, close. */
void smt_daemon_finish(struct smt_daemon *d, enum smt_state state, int exit_code,
		       const char *failure);
/* The kill-tree's KEEP: processes smtd started for itself. */
int smt_daemon_not_job(void *arg, pid_t pid);
double smt_daemon_now(void);
/* The environment of the command this host launches: the plan's, the
 * job's mark, and PYTHONFAULTHANDLER=1 when the job did not set it.  An array to free; its strings
 * are borrowed. */
char **smt_daemon_command_env(struct smt_daemon *d);
/* A stopping signal (TERM, INT, HUP, QUIT)? */
int smt_daemon_stopping_signal(int signo);
/* The failure report of this host's job, as this host knows it (LOCAL_ONLY:
 * name only its own ranks); malloc'ed; *KIND set. */
char *smt_daemon_report(struct smt_daemon *d, int local_only, enum smt_failure_kind *kind);
/* The OOM killer struck since the launch. */
int smt_daemon_oom(struct smt_daemon *d);

/*
 * Attempts (smtd(8) Restarts), on every host.  smt_daemon_attempt_starts: the
 * current attempt is launched here (once per attempt: the marked line, its
 * record).  smt_daemon_next_attempt: the current attempt is over here,
 * SUMMARY says why; its record is closed and the job here waits for the
 * next launch (hostjob.h), with SMTD_RESTART_COUNT one more; the role then
 * runs this host's preflight for it (smt_daemon_prelaunch).  0 or -errno.
 */
void smt_daemon_attempt_starts(struct smt_daemon *d);
int smt_daemon_next_attempt(struct smt_daemon *d, const char *summary);
/* TEXT, the failure of the job, as the failure file says it after
 * restarts (restart.h); malloc'ed. */
char *smt_daemon_failure_text(struct smt_daemon *d, const char *text);
/*
 * The pre-launch phase of this host for attempt ATTEMPT (0, then one per
 * restart): built-in checks, the install of the code directory (attempt 0
 * only: the code is installed once), the preflight command with
 * SMTD_RESTART_COUNT (prelaunch.h), configured from the plan; a phase
 * still running is ended first.  DONE(d, passed) is called from the loop;
 * the result is in d->preflight under this host's name.  0 or -errno.
 */
int smt_daemon_prelaunch(struct smt_daemon *d, int attempt,
			 void (*done)(struct smt_daemon *d, int passed));
/* A role's beginning, shared by every role: its state (SIZE bytes, zeroed)
 * as d->role_state, NULL after failing the job (out of memory); then this
 * host's first pre-launch phase, the job failed when it cannot start
 * (0 or -errno). */
void *smt_daemon_role_state(struct smt_daemon *d, size_t size);
int smt_daemon_begin_prelaunch(struct smt_daemon *d,
			       void (*done)(struct smt_daemon *d, int passed));
/* HOST's result (borrowed RESULT, a JSON object) into d->preflight. */
void smt_daemon_preflight_set(struct smt_daemon *d, const char *host, json_t *result);
/* The results known here as an array in the order of the hosts (a new
 * reference; null before the phase started): /v1/status and the file. */
json_t *smt_daemon_preflight_list(struct smt_daemon *d);
/* That list to ROOT/output/data/preflight.json (never through a link). */
void smt_daemon_preflight_write(struct smt_daemon *d);

/* leader.c: the workers' channels (NULL on a standalone or one-host job),
 * and the end of a stalled job with its failure TEXT. */

/* stall.c: the stall watchdog and the stacks of every rank. */
int smt_stall_new(struct smt_daemon *d);
void smt_stall_close(struct smt_daemon *d);
void smt_stall_launched(struct smt_daemon *d);
void smt_stall_next_attempt(struct smt_daemon *d);
/* The job is stalled and its ranks' stacks are being read: the failure is
 * not known yet, whatever the ranks do meanwhile (they are being aborted). */
int smt_stall_deciding(struct smt_daemon *d);
/* POST /v1/stacks: start a collection (the leader: of the whole job). */
int smt_stacks_post(struct smt_daemon *d, json_t *body, json_t **reply);
/* The leader: a worker's status, which may carry its ranks' stacks. */
void smt_stacks_worker_news(struct smt_daemon *d, json_t *status);
/* GET /v1/stacks?id=ID and what /v1/status says of the stacks. */
json_t *smt_stacks_get(struct smt_daemon *d, long long id, int *status);
void smt_stacks_status(struct smt_daemon *d, json_t *st);

/* apiapply.c: every callback of the control API. */
extern const struct smt_api_ops smt_daemon_api_ops;
/* apiview.c: what the control API shows (apiops.h says what each gives). */
json_t *smt_view_status(void *ctx, int flags);
int smt_view_healthy(void *ctx);
int smt_view_ready(void *ctx);
json_t *smt_view_logs(void *ctx, long tail, long rank);
char *smt_view_metrics(void *ctx);
json_int_t smt_view_generation(void *ctx);

#endif
