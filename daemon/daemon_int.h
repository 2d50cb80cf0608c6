/*
 * daemon_int.h - the daemon's state, shared by the files that make up its
 * life cycle: daemon.c (the loop, signals, the end), leader.c (waiting for
 * workers, mpirun, the result for everyone, a worker lost), worker.c (the
 * leader's contact, orted, the leader's result, the leader lost) and
 * status.c (what the control API shows).  Nothing outside those files sees
 * this struct.
 */
#ifndef SMT_DAEMON_INT_H
#define SMT_DAEMON_INT_H

#include <jansson.h>
#include <uv.h>

#include "api.h"
#include "job.h"
#include "orted.h"
#include "output.h"
#include "peers.h"
#include "plan.h"
#include "reaper.h"
#include "report.h"
#include "sshd.h"

#define SMT_NSIGNALS 6

struct smt_daemon {
	uv_loop_t loop;
	struct smt_plan *plan;
	const struct smt_options *opts;
	enum smt_role role;
	struct smt_reaper *reaper;
	struct smt_api *api;
	struct smt_sshd *sshd;
	struct smt_output *output;
	uv_signal_t signals[SMT_NSIGNALS];
	uv_timer_t wait_timer;    /* peers (leader) or the leader (worker) in time */
	uv_timer_t phase_timer;   /* worker: orted to appear, then the result */
	uv_timer_t contact_timer; /* worker: the leader's channel heard from */
	uv_timer_t grace_timer;   /* worker: SIGKILL after a stop */
	uv_timer_t watchdog_timer; /* systemd's WATCHDOG=1, when asked for */

	enum smt_state state;
	json_int_t generation;    /* bumped on every change /v1/status shows */
	double start_time;
	int stop_signal;          /* the first stopping signal smtd received */
	int closing;

	/* The end: set once by smt_daemon_finish. */
	int exit_code;
	char *failure;            /* whole failure text */
	char *summary;            /* its first line */

	/* Leader and standalone: the launched command. */
	struct smt_job *job;
	struct smt_job_status job_status;
	int job_ended;
	long oom_kills;           /* the memory cgroup's count at launch, or -1 */
	double launch_time;

	/* Leader: the workers. */
	struct smt_peers *peers;
	int peer_exit_code;       /* 3 when a worker was lost, 2 on a mismatch */
	char *peer_failure;       /* why, when the workers ended the job */
	int results_sent;         /* 1 while the workers are told, 2 after */
	enum smt_state state_after_results;

	/* Worker. */
	struct smt_orted *orted;
	pid_t orted_pid;
	pid_t orted_sid;
	int leader_seen;
	int launched;
	int orted_ended;
	int draining;             /* waiting for the job's processes to go */
	int drain_exit_code;
	char *drain_failure;
};

/* daemon.c */
void smt_daemon_set_state(struct smt_daemon *d, enum smt_state state);
void smt_daemon_changed(struct smt_daemon *d);
/* The end of this host's part: files, final state, exit code, close. */
void smt_daemon_finish(struct smt_daemon *d, enum smt_state state, int exit_code,
		       const char *failure);
/* A configuration error found after start (a worker of another job). */
/* The kill-tree's KEEP: processes smtd started that are not the job. */
int smt_daemon_not_job(void *arg, pid_t pid);
double smt_daemon_now(void);

/* leader.c: also runs a standalone host (no peers, no mpirun).  The
 * *_begin functions run once sshd is up (or not needed). */
void smt_leader_begin(struct smt_daemon *d);
void smt_leader_signal(struct smt_daemon *d, int signo);
void smt_leader_close(struct smt_daemon *d);

/* worker.c */
void smt_worker_begin(struct smt_daemon *d);
void smt_worker_signal(struct smt_daemon *d, int signo);
void smt_worker_contact(struct smt_daemon *d);
int smt_worker_post(struct smt_daemon *d, const char *path, json_t *body, json_t **reply);
void smt_worker_reaped(struct smt_daemon *d, pid_t pid);
void smt_worker_close(struct smt_daemon *d);

/* status.c: the control API's answers. */
extern const struct smt_api_ops smt_status_ops;

#endif
