/*
 * job.h - this host's launched command (mpirun on the leader, the program
 * on a standalone host): start it, carry its output, forward signals, and
 * make sure nothing of it survives.
 *
 * The command runs in its own session.  Its stdout and stderr come back
 * through two pipes read on the loop and handed to ops->output.  When it
 * exits, whatever is left of the job on this host (ranks orphaned by a
 * killed mpirun) is killed, the pipes are drained to their end, and then -
 * only then - ops->done runs once with the outcome.
 *
 * Signals (SPEC §8): smt_job_signal forwards to the command (the leader's
 * mpirun passes them to every rank) or, with forward_to_group, to its whole
 * process group.  TERM, INT, QUIT and HUP also start the grace timer: what
 * is still alive when it fires is killed with SIGKILL.  Until then, what
 * outlives the command keeps its grace, and ops->done waits for it.
 */
#ifndef SMT_JOB_H
#define SMT_JOB_H

#include <sys/types.h>
#include <uv.h>

#include "killtree.h"
#include "reaper.h"

struct smt_job;

struct smt_job_status {
	int exec_errno;   /* the command could not be started (ENOENT, EACCES...) */
	int exited;       /* 1: ended with CODE; 0: killed by SIGNO */
	int code;
	int signo;
	int stopped_by;   /* first stopping signal forwarded (TERM, INT...), or 0 */
	int leftovers;    /* processes killed after the command ended */
};

struct smt_job_ops {
	/* STREAM is 1 (stdout) or 2 (stderr). */
	void (*output)(void *ctx, int stream, const char *buf, size_t len);
	/* STREAM reached its end (or was closed after the drain timeout). */
	void (*eof)(void *ctx, int stream);
	void (*done)(void *ctx, const struct smt_job_status *st);
};

struct smt_job_config {
	char *const *argv;
	char *const *envp;
	const char *cwd;
	int forward_to_group;  /* signal the process group, not just the command */
	double grace;          /* seconds between a stopping signal and SIGKILL */
	const char *proc;      /* /proc to scan for leftovers; NULL for "/proc" */
	/* Processes that are not the job's (sshd, the leader's channels). */
	smt_killtree_keep keep;
	void *keep_arg;
};

/*
 * Start the command.  Returns 0 and *OUT; ops->done will run exactly once,
 * also when the program could not be executed (st->exec_errno).  Returns
 * -errno, and no callback runs, when nothing could be started.
 */
int smt_job_start(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_job_config *cfg,
		  const struct smt_job_ops *ops, void *ctx, struct smt_job **out);

/* Forward SIGNO as SPEC §8 says.  Returns 0 or -errno (-ESRCH when the
 * command already ended). */
int smt_job_signal(struct smt_job *job, int signo);

/*
 * The job cannot end normally here (a host of it was lost: mpirun would
 * wait for that host's daemon forever).  The command is stopped (SIGSTOP),
 * every other process of the job on this host gets SIGTERM and the grace
 * starts; the command is killed as soon as every other process has ended,
 * so ranks that exit on SIGTERM end the job at once and ranks that catch
 * it keep the grace to checkpoint.  Returns 0 or -errno.
 */
int smt_job_abandon(struct smt_job *job);

/* The command's PID, or -1 before start. */
pid_t smt_job_pid(const struct smt_job *job);

/* Release the job after done has run (closes its handles). */
void smt_job_free(struct smt_job *job);

#endif
