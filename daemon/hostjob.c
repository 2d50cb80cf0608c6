/*
 * hostjob.c - the job on this host (hostjob.h): its roots, its ranks,
 * their signals and their end.
 *
 * Everything is an event: the command's exit (the reaper), orted's and a
 * rank's (a pidfd, the launcher's report, or the reaper for a program whose
 * launcher died), the streams' ends (output.c), the grace and end timers.
 * check_end() is the one place that decides, after each of them, whether
 * the local job is over.
 *
 * Why one file of this size: every event of the job here feeds
 * check_end(), and the stop, the end and the grace change what each event
 * means; apart, the one decision would be scattered over several files.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostjob.h"
#include "log.h"
#include "pidwatch.h"
#include "procfs.h"
#include "rankd.h"
#include "smt_proto.h"
#include "spawn.h"
#include "vec.h"

/* What is known of one local rank's program. */
struct rankproc {
	int rank;
	struct smt_pidwatch *w;
	pid_t pid;
	int gone;            /* its pidfd said it ended */
	int launcher_gone;   /* its launcher's connection closed */
	int status;          /* wstatus, once known, else -1 */
	int settling;        /* gone, status unknown: waiting for the reaper */
	int ended;
	int stopped_with;    /* the stopping signal it was sent, once */
};

/* A process of the job still alive when everything else ended. */
struct leftover {
	struct smt_pidwatch *w;
	struct smt_hostjob *hj;
	LIST_ENTRY(leftover) link;
};

struct smt_hostjob {
	struct smt_hostjob_config cfg;
	const struct smt_hostjob_ops *ops;
	void *ctx;
	struct smt_jobtree *tree;
	struct smt_ranks *ranks;
	struct smt_output *out;
	struct smt_rankd *rankd;

	/* The launched command. */
	pid_t cmd_pid;
	int cmd_running;
	int cmd_rank0;
	double start_time;
	struct smt_hostjob_status st;

	/* A worker's Open MPI daemon. */
	struct smt_pidwatch *orted;
	pid_t orted_pid;

	struct rankproc *procs;
	size_t nprocs, cap;

	/* Ending. */
	int stop_signal;     /* a stop is in progress: its signal */
	int roots_stopped_with;  /* the stopping signal the roots were sent */
	int ending;          /* failure or lost host: the roots go once the ranks are gone */
	int end_signal;
	uv_timer_t grace_timer;   /* SIGKILL for everything at the grace's end */
	uv_timer_t end_timer;     /* SIGKILL for ranks left when the roots ended */
	uv_timer_t drain_timer;   /* the pipes' end, at the latest */
	uv_timer_t settle_timer;  /* a rank's status from the reaper, at the latest */
	uv_timer_t reap_timer;    /* the end of what the final SIGKILL hit, at the latest */
	int killed;               /* the final SIGKILL went out */
	double grace_s;           /* the grace running */
	LIST_HEAD(, leftover) left;
	json_t *launcher_env;
	char *stacks_dir;         /* under ROOT/output/data/stacks; NULL: there */
	struct smt_collect *collect;  /* a collection of stacks in progress */
	smt_collect_cb collect_cb;
	void *collect_arg;
	int done;
	int idle;            /* between attempts: nothing of the next one yet */
	int closing;
	int handles;
	void (*closed_cb)(void *);
	void *closed_arg;
};

static void check_end(struct smt_hostjob *hj);

static double now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static int64_t now_ms(void)
{
	return (int64_t)(now_s() * 1000.0);
}

static void changed(struct smt_hostjob *hj)
{
	if (hj->ops->changed && !hj->closing)
		hj->ops->changed(hj->ctx);
}

static struct rankproc *proc_of(struct smt_hostjob *hj, int rank)
{
	for (size_t i = 0; i < hj->nprocs; i++)
		if (hj->procs[i].rank == rank)
			return &hj->procs[i];
	return NULL;
}

static struct rankproc *proc_new(struct smt_hostjob *hj, int rank)
{
	struct rankproc *p;

	if (SMT_VEC_RESERVE(hj->procs, hj->cap, hj->nprocs + 1) < 0)
		return NULL;
	p = &hj->procs[hj->nprocs++];
	memset(p, 0, sizeof(*p));
	p->rank = rank;
	p->status = -1;
	return p;
}

static int roots_running(const struct smt_hostjob *hj)
{
	return hj->cmd_running || (hj->orted && !smt_pidwatch_ended(hj->orted));
}

static int ranks_running(const struct smt_hostjob *hj)
{
	for (size_t i = 0; i < hj->nprocs; i++)
		if (!hj->procs[i].ended)
			return 1;
	return 0;
}

/* ---- signals ---- */

static int signal_proc(struct rankproc *p, int signo)
{
	int fd = p->w ? smt_pidwatch_fd(p->w) : -1;

	if (p->ended || p->gone)
		return -ESRCH;
	if (fd >= 0)
		return smt_pidfd_signal(fd, signo);
	return p->pid > 0 ? smt_proc_signal(p->pid, 0, signo) : -ESRCH;
}

/*
 * SIGNO to every rank still running; the number reached.  A stopping
 * signal reaches a rank once: the platform's SIGTERM to every host and the
 * leader's stop relayed to it arrive a moment apart, and a rank that
 * checkpoints on the first would take the second as "quit now".  Another
 * signal (SIGINT, then SIGTERM; SIGKILL) still goes through.
 */
static int signal_ranks(struct smt_hostjob *hj, int signo, int stopping)
{
	/* Read before any signal goes: a rank that ends at once must not
	 * seem to have ended before it was told to (ranks.h, victims). */
	int64_t ms = now_ms();
	int n = 0;

	if (hj->cmd_rank0) {
		/* A standalone program: its process group, as a shell does. */
		struct rankproc *p = hj->nprocs ? &hj->procs[0] : NULL;

		if (stopping && p && p->stopped_with == signo)
			n++;
		else if (hj->cmd_running && kill(-hj->cmd_pid, signo) == 0)
			n++;
		if (stopping && p)
			p->stopped_with = signo;
	} else {
		for (size_t i = 0; i < hj->nprocs; i++) {
			struct rankproc *p = &hj->procs[i];

			if (stopping && p->stopped_with == signo && !p->ended && !p->gone) {
				n++;
				continue;
			}
			if (signal_proc(p, signo) == 0) {
				n++;
				if (stopping)
					p->stopped_with = signo;
			}
		}
	}
	if (stopping) {
		for (size_t i = 0; i < hj->nprocs; i++) {
			struct smt_rank *k = smt_ranks_get(hj->ranks, hj->procs[i].rank, NULL, 0);
			if (k && !hj->procs[i].ended && !k->signaled_ms)
				k->signaled_ms = ms;
		}
	}
	return n;
}

/* SIGNO to the roots (the command, orted). */
static void signal_roots(struct smt_hostjob *hj, int signo)
{
	if (hj->cmd_running)
		kill(hj->cmd_pid, signo);
	if (hj->orted && !smt_pidwatch_ended(hj->orted) && smt_pidwatch_fd(hj->orted) >= 0)
		smt_pidfd_signal(smt_pidwatch_fd(hj->orted), signo);
}

static void watch_leftover(void *arg, pid_t pid);

static void kill_all(struct smt_hostjob *hj, const char *why)
{
	int n;

	signal_ranks(hj, SIGKILL, 1);
	/* Each one killed is watched: the job on this host is over only
	 * once they are gone (check_end), so that none outlives smtd. */
	n = smt_jobtree_signal(hj->tree, SIGKILL, watch_leftover, hj);
	if (n > 0)
		smt_info("%s: killed %d process%s of the job", why, n, n == 1 ? "" : "es");
	hj->killed = 1;
}

void smt_hostjob_signal(struct smt_hostjob *hj, int signo)
{
	if (signal_ranks(hj, signo, 0) == 0 && roots_running(hj))
		/* No rank runs yet: the command passes it on as it can. */
		signal_roots(hj, signo);
}

static void on_grace(uv_timer_t *t)
{
	struct smt_hostjob *hj = t->data;

	smt_warn("grace period of %.1f s is over: killing what is left of the job", hj->grace_s);
	kill_all(hj, "grace over");
	check_end(hj);
}

static void arm_grace(struct smt_hostjob *hj, double grace)
{
	uint64_t ms = grace > 0 ? (uint64_t)(grace * 1000.0) : 0;

	if (uv_is_active((uv_handle_t *)&hj->grace_timer) &&
	    uv_timer_get_due_in(&hj->grace_timer) <= ms)
		return;
	hj->grace_s = grace;
	uv_timer_start(&hj->grace_timer, on_grace, ms, 0);
}

/* A stopping SIGNO to the ranks or, before there are any, to the roots
 * (mpirun, orted, torchrun pass it on), each once. */
static void stop_all(struct smt_hostjob *hj, int signo)
{
	if (signal_ranks(hj, signo, 1) == 0 && roots_running(hj) &&
	    hj->roots_stopped_with != signo) {
		signal_roots(hj, signo);
		hj->roots_stopped_with = signo;
	}
}

void smt_hostjob_stop(struct smt_hostjob *hj, int signo, double grace)
{
	if (hj->done)
		return;
	hj->idle = 0;
	if (!hj->stop_signal)
		hj->stop_signal = signo;
	arm_grace(hj, grace);
	stop_all(hj, signo);
	changed(hj);
	check_end(hj);
}

void smt_hostjob_end(struct smt_hostjob *hj, int signo, double grace)
{
	if (hj->done)
		return;
	hj->idle = 0;
	hj->ending = 1;
	if (!hj->end_signal)
		hj->end_signal = signo;
	arm_grace(hj, grace);
	stop_all(hj, signo);
	check_end(hj);
}

/* ---- the end ---- */

static void on_end_timer(uv_timer_t *t)
{
	struct smt_hostjob *hj = t->data;

	kill_all(hj, roots_running(hj) ? "the job's command outlived its ranks by 1 s"
				       : "the job's command ended");
	check_end(hj);
}

static void leftover_ended(void *arg, pid_t pid)
{
	struct leftover *l = arg;
	struct smt_hostjob *hj = l->hj;

	(void)pid;
	LIST_REMOVE(l, link);
	smt_pidwatch_stop(l->w);
	free(l);
	if (LIST_EMPTY(&hj->left)) {
		uv_timer_stop(&hj->reap_timer);
		check_end(hj);
	}
}

static void watch_leftover(void *arg, pid_t pid)
{
	struct smt_hostjob *hj = arg;
	struct leftover *l = calloc(1, sizeof(*l));

	if (!l)
		return;
	l->hj = hj;
	if (smt_pidwatch_start(hj->cfg.loop, pid, 0, leftover_ended, l, &l->w) < 0) {
		free(l);
		return;
	}
	LIST_INSERT_HEAD(&hj->left, l, link);
}

/* Stop watching every leftover; how many there were. */
static int drop_leftovers(struct smt_hostjob *hj)
{
	int n = 0;

	while (!LIST_EMPTY(&hj->left)) {
		struct leftover *l = LIST_FIRST(&hj->left);
		LIST_REMOVE(l, link);
		smt_pidwatch_stop(l->w);
		free(l);
		n++;
	}
	return n;
}

/* The leftovers killed have not ended (a process stuck in the kernel
 * ignores even SIGKILL for a while): the job ends without them. */
static void on_reap_timeout(uv_timer_t *t)
{
	struct smt_hostjob *hj = t->data;
	int n = drop_leftovers(hj);

	if (n > 0)
		smt_warn("%d process%s of the job killed %d ms ago %s not ended; ending the job "
			 "without them", n, n == 1 ? "" : "es", SMT_HOSTJOB_END_MS,
			 n == 1 ? "has" : "have");
	check_end(hj);
}

static void on_drain_timeout(uv_timer_t *t)
{
	struct smt_hostjob *hj = t->data;

	smt_warn("the job's output pipes are still open %d ms after its processes ended "
		 "(held by a process outside the job?); closing them", SMT_HOSTJOB_DRAIN_MS);
	smt_output_close_streams(hj->out);
	check_end(hj);
}

static void finish(struct smt_hostjob *hj)
{
	if (hj->done)
		return;
	hj->done = 1;
	uv_timer_stop(&hj->grace_timer);
	uv_timer_stop(&hj->end_timer);
	uv_timer_stop(&hj->drain_timer);
	uv_timer_stop(&hj->reap_timer);
	smt_info("the job on this host is over");
	if (hj->ops->done)
		hj->ops->done(hj->ctx);
}

/* The names of the processes killed at the end, for the log line; each
 * is watched (HJ) until it has ended. */
struct names {
	struct smt_hostjob *hj;
	char text[200];
	size_t len;
	int more;
};

static void name_of(void *arg, pid_t pid)
{
	struct names *nm = arg;
	struct smt_proc_stat st;
	int n;

	watch_leftover(nm->hj, pid);
	if (smt_proc_stat(NULL, pid, &st) < 0)
		return;
	n = snprintf(nm->text + nm->len, sizeof(nm->text) - nm->len, "%s%s (%d)",
		     nm->len ? ", " : "", st.comm, (int)pid);
	if (n < 0 || (size_t)n >= sizeof(nm->text) - nm->len) {
		nm->text[nm->len] = '\0';
		nm->more = 1;
		return;
	}
	nm->len += (size_t)n;
}

static void check_end(struct smt_hostjob *hj)
{
	/* Between attempts, an event of the last one (its streams' end) says
	 * nothing of the next, which has not begun. */
	if (hj->done || hj->closing || hj->idle)
		return;
	if (roots_running(hj)) {
		/* A failed job or a lost host: once the ranks are gone the
		 * command has nothing left to do (mpirun would wait for a lost
		 * host's daemon forever). */
		if (hj->ending && !ranks_running(hj) && hj->nprocs) {
			smt_info("the ranks here have ended: stopping the job's command");
			signal_roots(hj, SIGKILL);
		} else if (hj->stop_signal && !ranks_running(hj) && hj->nprocs &&
			   !uv_is_active((uv_handle_t *)&hj->end_timer) && !hj->killed) {
			/* Stopped, with the ranks gone: the command has a second
			 * to end as it does (torchrun's agents wait for each
			 * other at an exit barrier), not the rest of the grace. */
			uv_timer_start(&hj->end_timer, on_end_timer, SMT_HOSTJOB_END_MS, 0);
		}
		return;
	}
	if (ranks_running(hj)) {
		/* The roots ended on their own and left ranks running (mpirun
		 * aborted the job): they go, within a second. */
		if (!hj->stop_signal && !uv_is_active((uv_handle_t *)&hj->end_timer) &&
		    !hj->killed) {
			int n = signal_ranks(hj, SIGTERM, 1);
			smt_info("%s ended and left %d rank%s running here: SIGTERM now, SIGKILL "
				 "in %d ms", hj->orted ? "orted" : hj->cfg.msg_name, n,
				 n == 1 ? "" : "s", SMT_HOSTJOB_END_MS);
			uv_timer_start(&hj->end_timer, on_end_timer, SMT_HOSTJOB_END_MS, 0);
		}
		return;
	}
	if (!LIST_EMPTY(&hj->left)) {
		/* Killed ones are on their way out: a bounded wait. */
		if (hj->killed && !uv_is_active((uv_handle_t *)&hj->reap_timer))
			uv_timer_start(&hj->reap_timer, on_reap_timeout, SMT_HOSTJOB_END_MS, 0);
		return;
	}
	/* Roots and ranks are gone: what is left of the job (a daemon a rank
	 * forked) keeps a stop's grace, else goes now; smtd waits until what
	 * it killed has ended, so that nothing of the job outlives it. */
	if (!hj->killed) {
		if (hj->stop_signal && uv_is_active((uv_handle_t *)&hj->grace_timer)) {
			smt_jobtree_signal(hj->tree, 0, watch_leftover, hj);
			if (!LIST_EMPTY(&hj->left))
				return;
		} else {
			struct names left = { .hj = hj, .len = 0 };
			int n = smt_jobtree_signal(hj->tree, SIGKILL, name_of, &left);
			if (n > 0)
				smt_info("killed %d process%s of the job left behind: %s%s", n,
					 n == 1 ? "" : "es", left.text, left.more ? ", ..." : "");
			hj->killed = 1;
			if (!LIST_EMPTY(&hj->left)) {
				uv_timer_start(&hj->reap_timer, on_reap_timeout, SMT_HOSTJOB_END_MS,
					       0);
				return;
			}
		}
	}
	if (smt_output_open_streams(hj->out)) {
		if (!uv_is_active((uv_handle_t *)&hj->drain_timer))
			uv_timer_start(&hj->drain_timer, on_drain_timeout, SMT_HOSTJOB_DRAIN_MS, 0);
		return;
	}
	finish(hj);
}

/* ---- ranks ---- */

static void rank_end_at(struct smt_hostjob *hj, struct rankproc *p, int wstatus, double when)
{
	struct smt_rank *k = smt_ranks_get(hj->ranks, p->rank, NULL, 0);

	if (p->ended)
		return;
	p->ended = 1;
	if (wstatus >= 0)
		p->status = wstatus;
	smt_pidwatch_stop(p->w);
	p->w = NULL;
	if (k) {
		smt_ranks_ended(hj->ranks, k, p->status, when);
		/* What only this host can tell, now: /dev/shm, the OOM count. */
		if (k->signo || k->exit_code > 0)
			smt_crash_probe(&k->crash, k->signo, k->oom_base, "/proc", "/sys/fs/cgroup",
					"/dev/shm", hj->cfg.min_shm);
		if (p->status < 0)
			smt_info("rank %d (pid %d) ended; its status is unknown", p->rank,
				 (int)p->pid);
		else if (WIFSIGNALED(p->status))
			smt_info("rank %d (pid %d) was killed by SIG%s", p->rank, (int)p->pid,
				 smt_signal_name(WTERMSIG(p->status)) ?
					 smt_signal_name(WTERMSIG(p->status)) :
					 "?");
		else
			smt_debug("rank %d (pid %d) exited with code %d", p->rank, (int)p->pid,
				  WEXITSTATUS(p->status));
		if (hj->ops->rank_ended)
			hj->ops->rank_ended(hj->ctx, k);
	}
	changed(hj);
	check_end(hj);
}

static void rank_end(struct smt_hostjob *hj, struct rankproc *p, int wstatus)
{
	rank_end_at(hj, p, wstatus, now_s());
}

static void on_settle(uv_timer_t *t)
{
	struct smt_hostjob *hj = t->data;

	for (size_t i = 0; i < hj->nprocs; i++)
		if (hj->procs[i].settling && !hj->procs[i].ended)
			rank_end(hj, &hj->procs[i], -1);
}

/*
 * The program ended and its launcher is gone without saying how: the
 * launcher leaves it a zombie until it reported, so the kernel hands it
 * to smtd (PID 1 or subreaper), whose reaper then gives the status
 * (smt_hostjob_reaped).  The adoption follows the launcher's death by a
 * moment; if no status comes in SETTLE_MS it is unknown.
 */
#define SETTLE_MS 200

static void settle(struct smt_hostjob *hj, struct rankproc *p)
{
	if (p->ended || p->settling)
		return;
	p->settling = 1;
	if (!uv_is_active((uv_handle_t *)&hj->settle_timer))
		uv_timer_start(&hj->settle_timer, on_settle, SETTLE_MS, 0);
}

/* The program ended: its status comes from the launcher, or from the
 * reaper when smtd adopted it, or it is unknown. */
static void on_rank_gone(void *arg, pid_t pid)
{
	struct smt_hostjob *hj = arg;

	for (size_t i = 0; i < hj->nprocs; i++) {
		struct rankproc *p = &hj->procs[i];

		if (p->pid != pid || p->ended)
			continue;
		p->gone = 1;
		if (p->status >= 0)
			rank_end(hj, p, -1);
		else if (p->launcher_gone)
			settle(hj, p);
		return;
	}
}

static int rankd_admit(void *ctx, pid_t launcher, int rank, char *why, size_t len)
{
	struct smt_hostjob *hj = ctx;
	int member;

	if (hj->done || hj->stop_signal || hj->ending) {
		snprintf(why, len, "the job on this host is ending");
		return -EPIPE;
	}
	if (hj->cfg.nranks > 0 && rank >= hj->cfg.nranks) {
		snprintf(why, len, "rank %d is not a rank of this job (it has %ld)", rank,
			 hj->cfg.nranks);
		return -ERANGE;
	}
	if (proc_of(hj, rank)) {
		snprintf(why, len, "rank %d is registered already", rank);
		return -EEXIST;
	}
	if (hj->ops->admit && hj->ops->admit(hj->ctx, launcher, rank, why, len) < 0)
		return -EPERM;
	member = smt_jobtree_member(hj->tree, launcher);
	if (member != 1) {
		snprintf(why, len, "process %d is not part of the job on this host", (int)launcher);
		return -EPERM;
	}
	return 0;
}

static json_t *rankd_hello(void *ctx, int rank, pid_t launcher, int out_fd, int err_fd)
{
	struct smt_hostjob *hj = ctx;
	struct smt_rank *k = smt_ranks_get(hj->ranks, rank, NULL, 1);
	struct rankproc *p = proc_new(hj, rank);

	(void)launcher;
	if (!k || !p) {
		close(out_fd);
		close(err_fd);
		return NULL;
	}
	k->state = SMT_RANK_STARTING;
	hj->idle = 0;
	smt_output_add_rank(hj->out, rank, out_fd, err_fd);
	smt_debug("rank %d registered by its launcher (pid %d)", rank, (int)launcher);
	changed(hj);
	return hj->launcher_env ? json_deep_copy(hj->launcher_env) : json_object();
}

static void rankd_started(void *ctx, int rank, pid_t pid, unsigned long long start)
{
	struct smt_hostjob *hj = ctx;
	struct rankproc *p = proc_of(hj, rank);
	struct smt_rank *k = smt_ranks_get(hj->ranks, rank, NULL, 0);

	if (!p || !k)
		return;
	p->pid = pid;
	k->pid = pid;
	k->start_time = now_s();
	k->state = SMT_RANK_RUNNING;
	/* An OOM kill counted after this is one the rank may have died of. */
	k->oom_base = smt_crash_oom_count("/proc", "/sys/fs/cgroup");
	smt_jobtree_add(hj->tree, pid);
	if (smt_pidwatch_start(hj->cfg.loop, pid, start, on_rank_gone, hj, &p->w) < 0)
		p->w = NULL;
	smt_info("rank %d runs as pid %d", rank, (int)pid);
	changed(hj);
}

static void rankd_exited(void *ctx, int rank, int wstatus, int exec_errno, int64_t end_ms,
			 long long maxrss_kb)
{
	struct smt_hostjob *hj = ctx;
	struct rankproc *p = proc_of(hj, rank);
	struct smt_rank *k = smt_ranks_get(hj->ranks, rank, NULL, 0);

	if (!p)
		return;
	if (k && maxrss_kb > 0)
		k->crash.mem_kb = maxrss_kb;
	if (exec_errno && k) {
		k->exec_errno = exec_errno;
		wstatus = (exec_errno == ENOENT ? 127 : 126) << 8;
	}
	/* It is gone; when, the launcher says (within a few ms of the truth,
	 * where the arrival of this message could be much later). */
	rank_end_at(hj, p, wstatus, end_ms > 0 && end_ms <= now_ms() ? end_ms / 1000.0 : now_s());
}

static void rankd_hangup(void *ctx, int rank)
{
	struct smt_hostjob *hj = ctx;
	struct rankproc *p = proc_of(hj, rank);

	if (!p || p->ended)
		return;
	p->launcher_gone = 1;
	if (!p->pid)
		/* Killed before its program ran. */
		rank_end(hj, p, -1);
	else if (p->gone)
		settle(hj, p);
}

static const struct smt_rankd_ops rankd_ops = {
	.admit = rankd_admit,
	.hello = rankd_hello,
	.started = rankd_started,
	.exited = rankd_exited,
	.hangup = rankd_hangup,
};

void smt_hostjob_reaped(struct smt_hostjob *hj, pid_t pid, int wstatus)
{
	for (size_t i = 0; i < hj->nprocs; i++)
		if (hj->procs[i].pid == pid && !hj->procs[i].ended) {
			rank_end(hj, &hj->procs[i], wstatus);
			return;
		}
}

/* ---- output events ---- */

static void on_streams_ended(void *arg, int rank)
{
	struct smt_hostjob *hj = arg;

	if (hj->collect && rank >= 0)
		smt_collect_output_ended(hj->collect, rank);
	if (!smt_output_open_streams(hj->out))
		check_end(hj);
}

static void on_local_line(void *arg, int rank, enum smt_stream stream, const char *line,
			  size_t len)
{
	struct smt_hostjob *hj = arg;

	if (hj->collect && stream == SMT_STREAM_STDERR)
		smt_collect_line(hj->collect, rank, line, len);
}

/* ---- roots ---- */

static void on_cmd_exit(void *arg, pid_t pid, int wstatus)
{
	struct smt_hostjob *hj = arg;

	hj->cmd_running = 0;
	if (WIFEXITED(wstatus)) {
		hj->st.exited = 1;
		hj->st.code = WEXITSTATUS(wstatus);
	} else if (WIFSIGNALED(wstatus)) {
		hj->st.exited = 0;
		hj->st.signo = WTERMSIG(wstatus);
	}
	smt_info("%s (pid %d) ended with %s %d", hj->cfg.msg_name, (int)pid,
		 hj->st.exited ? "exit code" : "signal",
		 hj->st.exited ? hj->st.code : hj->st.signo);
	if (hj->cmd_rank0) {
		struct rankproc *p = proc_of(hj, 0);
		struct smt_rank *k = smt_ranks_get(hj->ranks, 0, NULL, 0);
		long long maxrss_kb = smt_reaper_maxrss(hj->cfg.reaper);

		/* No launcher measured it: our own wait did. */
		if (k && maxrss_kb > 0)
			k->crash.mem_kb = maxrss_kb;
		if (p)
			rank_end(hj, p, wstatus);
	}
	if (hj->ops->root_ended)
		hj->ops->root_ended(hj->ctx);
	changed(hj);
	check_end(hj);
}

int smt_hostjob_launch(struct smt_hostjob *hj, char *const *argv, char *const *envp,
		       const char *cwd, int as_rank0)
{
	struct smt_spawn_opts so = {
		.argv = argv, .envp = envp, .cwd = cwd, .stdin_fd = -1,
		.cgroup_fd = smt_jobtree_cgroup_fd(hj->tree),
		/* A standalone program's stdout pipe, for libsmtlinebuf.so. */
		.stdout_id_env = as_rank0 ? SMT_ENV_STDOUT_PIPE : NULL,
	};
	int out_r, err_r, rc;
	/* As for a registered rank (rankd_started), before it can be killed. */
	long oom_base = as_rank0 ? smt_crash_oom_count("/proc", "/sys/fs/cgroup") : -1;
	pid_t pid;

	rc = smt_spawn_piped(&so, &pid, &out_r, &err_r);
	if (pid < 0)
		return rc;
	hj->st.launched = 1;
	hj->idle = 0;
	hj->cmd_pid = pid;
	hj->cmd_running = 1;
	hj->cmd_rank0 = as_rank0;
	hj->start_time = now_s();
	if (rc < 0)
		hj->st.exec_errno = -rc;
	smt_jobtree_add(hj->tree, pid);
	if (as_rank0) {
		struct smt_rank *k = smt_ranks_get(hj->ranks, 0, NULL, 1);
		struct rankproc *p = proc_new(hj, 0);
		if (k) {
			k->pid = pid;
			k->start_time = hj->start_time;
			k->state = SMT_RANK_RUNNING;
			k->oom_base = oom_base;
			if (rc < 0)
				k->exec_errno = -rc;
		}
		if (p)
			p->pid = pid;
		smt_output_add_rank(hj->out, 0, out_r, err_r);
	} else {
		smt_output_add_command(hj->out, out_r, err_r);
	}
	rc = smt_reaper_watch(hj->cfg.reaper, pid, on_cmd_exit, hj);
	if (rc < 0) {
		kill(-pid, SIGKILL);
		return rc;
	}
	changed(hj);
	return 0;
}

static void on_orted_gone(void *arg, pid_t pid)
{
	struct smt_hostjob *hj = arg;

	smt_info("orted (pid %d) ended", (int)pid);
	if (hj->ops->root_ended)
		hj->ops->root_ended(hj->ctx);
	changed(hj);
	check_end(hj);
}

int smt_hostjob_adopt(struct smt_hostjob *hj, pid_t pid)
{
	int rc;

	if (hj->orted)
		return pid == hj->orted_pid ? 0 : -EEXIST;
	rc = smt_jobtree_add(hj->tree, pid);
	if (rc < 0)
		return rc;
	rc = smt_pidwatch_start(hj->cfg.loop, pid, 0, on_orted_gone, hj, &hj->orted);
	if (rc < 0)
		return rc;
	hj->orted_pid = pid;
	hj->idle = 0;
	hj->start_time = now_s();
	smt_info("watching orted (pid %d)", (int)pid);
	changed(hj);
	return 0;
}

pid_t smt_hostjob_orted(const struct smt_hostjob *hj)
{
	return hj->orted ? hj->orted_pid : -1;
}

/* ---- attempts ---- */

int smt_hostjob_set_stacks_dir(struct smt_hostjob *hj, const char *dir)
{
	char *copy = NULL;

	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	free(hj->stacks_dir);
	hj->stacks_dir = copy;
	return 0;
}

int smt_hostjob_next_attempt(struct smt_hostjob *hj)
{
	if (!hj->done || hj->closing)
		return -EBUSY;
	/* Everything of the attempt ended (check_end): its handles are closed,
	 * only its facts are left, and they are forgotten here. */
	for (size_t i = 0; i < hj->nprocs; i++)
		smt_pidwatch_stop(hj->procs[i].w);
	hj->nprocs = 0;
	smt_pidwatch_stop(hj->orted);
	hj->orted = NULL;
	hj->orted_pid = 0;
	memset(&hj->st, 0, sizeof(hj->st));
	hj->cmd_pid = -1;
	hj->cmd_running = 0;
	hj->cmd_rank0 = 0;
	hj->start_time = 0;
	hj->stop_signal = hj->roots_stopped_with = hj->ending = hj->end_signal = 0;
	hj->killed = 0;
	hj->grace_s = 0;
	uv_timer_stop(&hj->settle_timer);
	smt_ranks_clear(hj->ranks);
	smt_output_next_attempt(hj->out);
	hj->done = 0;
	hj->idle = 1;
	changed(hj);
	return 0;
}

/* ---- the module ---- */

int smt_hostjob_new(const struct smt_hostjob_config *cfg, const struct smt_hostjob_ops *ops,
		    void *ctx, struct smt_hostjob **out)
{
	struct smt_hostjob *hj = calloc(1, sizeof(*hj));
	struct smt_jobtree_config jc = {
		.use_cgroup = cfg->use_cgroup, .name = cfg->current_host,
		.keep = cfg->keep, .keep_arg = cfg->keep_arg,
	};
	int rc;

	if (!hj)
		return -ENOMEM;
	hj->cfg = *cfg;
	hj->ops = ops;
	hj->ctx = ctx;
	hj->cmd_pid = -1;
	LIST_INIT(&hj->left);
	rc = smt_jobtree_new(&jc, &hj->tree);
	if (rc == 0)
		rc = smt_ranks_new(cfg->current_host, &hj->ranks);
	if (rc == 0) {
		struct smt_output_config oc = {
			.loop = cfg->loop, .format = cfg->format, .to_outbox = cfg->to_outbox,
			.out_fd = 1, .msg_fd = 2, .msg_name = cfg->msg_name,
			.current_host = cfg->current_host, .ranks = hj->ranks,
			.rank_log_dir = cfg->rank_log_dir, .progress = cfg->progress,
			.outbox_news = cfg->outbox_news, .outbox_arg = cfg->outbox_arg,
			.streams_ended = on_streams_ended,
			.local_line = on_local_line, .arg = hj,
		};
		rc = smt_output_new(&oc, &hj->out);
	}
	if (rc == 0 && cfg->rankd_path)
		rc = smt_rankd_listen(cfg->loop, cfg->rankd_path, &rankd_ops, hj, &hj->rankd);
	if (rc < 0) {
		smt_output_free(hj->out);
		smt_ranks_free(hj->ranks);
		smt_jobtree_free(hj->tree);
		free(hj);
		return rc;
	}
	uv_timer_init(cfg->loop, &hj->grace_timer);
	uv_timer_init(cfg->loop, &hj->end_timer);
	uv_timer_init(cfg->loop, &hj->drain_timer);
	uv_timer_init(cfg->loop, &hj->settle_timer);
	uv_timer_init(cfg->loop, &hj->reap_timer);
	hj->grace_timer.data = hj->end_timer.data = hj->drain_timer.data = hj;
	hj->settle_timer.data = hj->reap_timer.data = hj;
	{
		const char *why;
		const char *cg = smt_jobtree_cgroup(hj->tree, &why);
		if (cg)
			smt_info("the job's processes go into cgroup %s", cg);
		else
			smt_debug("no job cgroup (%s): the job is told by its process tree and "
				  "its mark", why ? why : "?");
	}
	*out = hj;
	return 0;
}

void smt_hostjob_set_launcher_env(struct smt_hostjob *hj, json_t *env)
{
	hj->launcher_env = env;
}

const char *smt_hostjob_mark(const struct smt_hostjob *hj) { return smt_jobtree_mark(hj->tree); }
struct smt_ranks *smt_hostjob_ranks(struct smt_hostjob *hj) { return hj->ranks; }
struct smt_output *smt_hostjob_output(struct smt_hostjob *hj) { return hj->out; }

int smt_hostjob_running(const struct smt_hostjob *hj)
{
	return roots_running(hj) || ranks_running(hj);
}

int smt_hostjob_done(const struct smt_hostjob *hj)
{
	return hj->done;
}

void smt_hostjob_status(const struct smt_hostjob *hj, struct smt_hostjob_status *st)
{
	*st = hj->st;
}

pid_t smt_hostjob_pid(const struct smt_hostjob *hj)
{
	if (hj->cmd_pid > 0)
		return hj->cmd_pid;
	return hj->orted ? hj->orted_pid : -1;
}

double smt_hostjob_start_time(const struct smt_hostjob *hj)
{
	return hj->start_time;
}

json_t *smt_hostjob_final(const struct smt_hostjob *hj)
{
	json_t *cmd = json_object();
	const char *sig = hj->st.signo ? smt_signal_name(hj->st.signo) : NULL;

	if (hj->st.launched && !hj->cmd_running && hj->st.exited && !hj->st.exec_errno)
		json_object_set_new(cmd, SMT_F_EXIT_CODE, json_integer(hj->st.code));
	else
		json_object_set_new(cmd, SMT_F_EXIT_CODE, json_null());
	if (hj->st.launched && !hj->st.exited && hj->st.signo)
		json_object_set_new(cmd, SMT_F_SIGNAL,
				    sig ? json_string(sig) : json_integer(hj->st.signo));
	else
		json_object_set_new(cmd, SMT_F_SIGNAL, json_null());
	if (hj->st.exec_errno)
		json_object_set_new(cmd, SMT_F_EXEC_ERRNO, json_integer(hj->st.exec_errno));
	return json_pack("{s:o, s:o}", SMT_F_COMMAND, cmd, SMT_F_RANKS,
			 smt_ranks_json(hj->ranks, 1, now_s()));
}

static void on_collected(void *arg, json_t *ranks)
{
	struct smt_hostjob *hj = arg;
	struct smt_collect *c = hj->collect;

	hj->collect = NULL;
	if (hj->collect_cb)
		hj->collect_cb(hj->collect_arg, ranks);
	smt_collect_cancel(c);
}

int smt_hostjob_collect(struct smt_hostjob *hj, enum smt_collect_mode mode, unsigned timeout_ms,
			unsigned freeze_ms, const char *root, smt_collect_cb cb, void *arg)
{
	struct smt_collect_target *t;
	size_t n = 0;
	int64_t now = now_ms();
	int rc;

	if (hj->collect)
		return -EBUSY;
	if (!hj->nprocs)
		return -ESRCH;
	t = calloc(hj->nprocs, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < hj->nprocs; i++) {
		struct rankproc *p = &hj->procs[i];
		const struct smt_rank *k = smt_ranks_find(hj->ranks, p->rank);

		t[n].rank = p->rank;
		t[n].pid = p->pid;
		t[n].pidfd = p->w ? smt_pidwatch_fd(p->w) : -1;
		t[n].ended = p->ended || p->gone;
		t[n].quiet_s = k && k->last_line_ms ? (now - k->last_line_ms) / 1000.0 : -1;
		t[n].faulthandler = p->pid > 0 &&
				    smt_proc_has_env(NULL, p->pid, "PYTHONFAULTHANDLER=1") == 1;
		n++;
	}
	/*
	 * Ranks aborted to print their stacks die one after the other; mpirun
	 * and orted would tear the job down at the first death, killing the
	 * others in the middle of their dump.  Stopped, they wait; they are
	 * killed with the rest of the job afterwards.
	 */
	if (mode == SMT_COLLECT_ABORT) {
		/* (A standalone program is the root and rank 0 at once.) */
		if (!hj->cmd_rank0)
			signal_roots(hj, SIGSTOP);
		/* Their deaths are smtd's doing, not a failure of theirs. */
		for (size_t i = 0; i < n; i++) {
			struct smt_rank *k = smt_ranks_get(hj->ranks, t[i].rank, NULL, 0);
			if (k && !t[i].ended && !k->signaled_ms)
				k->signaled_ms = now;
		}
	}
	struct smt_collect_config cc = {
		.loop = hj->cfg.loop, .reaper = hj->cfg.reaper, .host = hj->cfg.current_host,
		.root = root, .subdir = hj->stacks_dir, .mode = mode, .timeout_ms = timeout_ms,
		.freeze_ms = freeze_ms,
	};
	hj->collect_cb = cb;
	hj->collect_arg = arg;
	rc = smt_collect_start(&cc, t, n, on_collected, hj, &hj->collect);
	free(t);
	return rc;
}

void smt_hostjob_collect_cancel(struct smt_hostjob *hj)
{
	if (hj->collect) {
		smt_collect_cancel(hj->collect);
		hj->collect = NULL;
	}
}

void smt_hostjob_sample_cpu(struct smt_hostjob *hj)
{
	for (size_t i = 0; i < hj->nprocs; i++) {
		struct smt_proc_stat st;
		struct smt_rank *k;

		if (hj->procs[i].ended || hj->procs[i].pid <= 0)
			continue;
		k = smt_ranks_get(hj->ranks, hj->procs[i].rank, NULL, 0);
		if (k && smt_proc_stat(NULL, hj->procs[i].pid, &st) == 0)
			k->cpu_s = st.cpu_s;
	}
}

static void hj_release(struct smt_hostjob *hj)
{
	if (--hj->handles > 0)
		return;
	if (hj->closed_cb)
		hj->closed_cb(hj->closed_arg);
}

static void hj_handle_closed(uv_handle_t *h)
{
	hj_release(h->data);
}

static void output_closed(void *arg)
{
	hj_release(arg);
}

void smt_hostjob_close(struct smt_hostjob *hj, void (*cb)(void *), void *arg)
{
	hj->closing = 1;
	hj->closed_cb = cb;
	hj->closed_arg = arg;
	/* Nothing of the job outlives the daemon. */
	if (hj->cmd_running || ranks_running(hj) || hj->orted) {
		int n = smt_jobtree_signal(hj->tree, SIGKILL, NULL, NULL);
		if (n > 0)
			smt_info("killed %d process%s of the job at exit", n, n == 1 ? "" : "es");
	}
	if (hj->cmd_running)
		smt_reaper_unwatch(hj->cfg.reaper, hj->cmd_pid);
	drop_leftovers(hj);
	for (size_t i = 0; i < hj->nprocs; i++)
		smt_pidwatch_stop(hj->procs[i].w);
	smt_pidwatch_stop(hj->orted);
	hj->orted = NULL;
	smt_rankd_close(hj->rankd);
	hj->rankd = NULL;
	if (hj->collect) {
		smt_collect_cancel(hj->collect);
		hj->collect = NULL;
	}
	hj->handles = 6;
	uv_close((uv_handle_t *)&hj->settle_timer, hj_handle_closed);
	uv_close((uv_handle_t *)&hj->grace_timer, hj_handle_closed);
	uv_close((uv_handle_t *)&hj->end_timer, hj_handle_closed);
	uv_close((uv_handle_t *)&hj->drain_timer, hj_handle_closed);
	uv_close((uv_handle_t *)&hj->reap_timer, hj_handle_closed);
	smt_output_close(hj->out, output_closed, hj);
}

void smt_hostjob_free(struct smt_hostjob *hj)
{
	if (!hj)
		return;
	smt_output_free(hj->out);
	smt_ranks_free(hj->ranks);
	smt_jobtree_free(hj->tree);
	free(hj->procs);
	free(hj->stacks_dir);
	free(hj);
}
