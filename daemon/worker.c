/*
 * worker.c - a worker's part of the job.
 *
 * Start sshd if needed and wait for the leader's contact (its readiness
 * probe, then POST /v1/launch).  Under MPI the leader's mpirun starts orted
 * here through `smtctl exec-orted`, which announces its PID (POST
 * /v1/orted, checked: an Open MPI daemon under this host's sshd); under
 * torchrun this host starts its own torchrun.  The ranks register with this
 * host's smtd as on every host (hostjob.h), their output goes to the outbox
 * the leader fetches, and when the job here is over its end goes there too.
 * Then the job's result comes from the leader (POST /v1/result) and is
 * written here with the same exit code.
 *
 * The leader is lost when its channel is silent for --peer-timeout
 * (on_leader_lost below): the job cannot go on, as when the leader loses a
 * host - the ranks here get SIGTERM and the grace, orted is killed once
 * they are gone (smt_hostjob_end) - and the failure names the lost leader.
 *
 * Why one file of this size: it is the worker's role table (daemon_int.h)
 * and its private state; the contact, launch, outbox and result steps all
 * turn on that state (seen, launched, lost, over, acked).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_int.h"
#include "log.h"
#include "prelaunch.h"
#include "procfs.h"
#include "rankcred.h"
#include "strv.h"

/* Without an announcement this soon after the launch, look for orted. */
#define ORTED_SCAN_MS 5000
/* The job here is over: the leader takes the rest of our output within
 * this, or we end without it knowing. */
#define ACK_TIMEOUT_MS 5000

struct worker {
	int leader_seen;
	int launched;
	int leader_lost;
	int job_over;
	int acked;
	int prelaunch_passed;    /* this host's pre-launch phase passed */
	json_t *result;          /* the leader's result, kept until the job here is over */
	char *lost_text;
	uv_timer_t wait_timer;   /* the leader in time */
	uv_timer_t launch_timer; /* orted to appear */
	uv_timer_t contact_timer; /* the leader's channel heard from */
	int kept;                 /* the leader holds a poll with no time */
	uv_timer_t end_timer;    /* the leader's result / acknowledgement in time */
	uint64_t begin_ticks;    /* when this worker began, in /proc's start-time units */
};

static struct worker *W(struct smt_daemon *d)
{
	return d->role_state;
}

static int torchrun(const struct smt_daemon *d)
{
	return smt_plan_launch(d->plan) == SMT_LAUNCH_TORCHRUN;
}

/* ---- the end ---- */

/* The leader's result, written here: its exit code, or 1 for a stop of
 * the leader's (this host did not receive the signal).  When the rank the
 * leader names is one of this host's, the failure is worded from this
 * host's own knowledge (its stderr, its first error line); a rank here
 * that failed only as a consequence (Open MPI's abort reaching it) never
 * takes the leader's place (smtd(8) Roles). */
static void finish_with_result(struct smt_daemon *d, json_t *res)
{
	json_int_t code = json_integer_value(json_object_get(res, SMT_F_EXIT_CODE));
	const char *failure = json_string_value(json_object_get(res, SMT_F_FAILURE));
	const char *leader = json_string_value(json_object_get(res, SMT_F_LEADER));
	char *text = NULL, *own = NULL;
	enum smt_failure_kind kind;
	int exit_code = (int)code;

	if (!leader)
		leader = smt_plan_leader(d->plan);
	if (exit_code >= 128)
		exit_code = d->stop_signal ? 128 + d->stop_signal : SMT_EXIT_JOB_FAILED;
	else if (d->stop_signal)
		exit_code = 128 + d->stop_signal;
	if (exit_code == 0) {
		smt_daemon_finish(d, SMT_STATE_SUCCEEDED, SMT_EXIT_OK, NULL);
		return;
	}
	const struct smt_rank *mine = d->job ? smt_ranks_first_failure(smt_hostjob_ranks(d->job), 1)
					     : NULL;
	if (!d->stop_signal && mine && smt_report_names(failure, mine->rank, mine->host)) {
		own = smt_daemon_report(d, 1, &kind);
		(void)kind;
	}
	/* This host's own pre-launch failure is told in its own words. */
	const char *pre = smt_prelaunch_failure(d->prelaunch);
	if (!own && pre && failure && strncmp(failure, pre, strcspn(pre, "\n")) == 0)
		own = strdup(pre);
	if (!failure)
		failure = "JobFailed: the job failed\n";
	if (own) {
		text = own;
	} else {
		size_t first = strcspn(failure, "\n");
		if (asprintf(&text, "%.*s (reported by the leader %s)%s",
			     (int)(first > 900 ? 900 : first), failure, leader,
			     failure + first) < 0)
			text = NULL;
	}
	smt_daemon_finish(d, exit_code >= 128 ? SMT_STATE_STOPPED : SMT_STATE_FAILED, exit_code,
			  text ? text : failure);
	free(text);
}

static void finish_stopped(struct smt_daemon *d)
{
	char *text = smt_failure_text(
		SMT_FAIL_STOPPED, "smtd on %s received SIG%s and stopped the job",
		smt_plan_current_host(d->plan),
		smt_signal_name(d->stop_signal) ? smt_signal_name(d->stop_signal) : "?");

	smt_daemon_finish(d, SMT_STATE_STOPPED, 128 + d->stop_signal, text);
	free(text);
}

static void on_result_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_daemon_fail(d, SMT_EXIT_PEER, SMT_FAIL_LOST_LEADER,
			"the leader %s sent no result within %.1f s after the job ended on %s "
			"(--result-timeout)", smt_plan_leader(d->plan), d->opts->result_timeout,
			smt_plan_current_host(d->plan));
}

/* The job here is over and its output with the leader (or never will be):
 * how this host ends. */
static void conclude(struct smt_daemon *d)
{
	struct worker *w = W(d);

	if (!w->job_over || smt_state_is_final(d->state) || d->closing)
		return;
	if (w->leader_lost) {
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_PEER, w->lost_text);
		return;
	}
	if (!w->acked && !d->stop_signal && !w->result)
		return;
	if (w->result) {
		finish_with_result(d, w->result);
		return;
	}
	if (d->stop_signal) {
		finish_stopped(d);
		return;
	}
	uv_timer_stop(&w->end_timer);
	uv_timer_start(&w->end_timer, on_result_timeout, (uint64_t)(d->opts->result_timeout * 1000),
		       0);
}

static void on_ack_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_warn("the leader did not take the end of this host's output within %d ms",
		 ACK_TIMEOUT_MS);
	W(d)->acked = 1;
	conclude(d);
}

static void worker_job_done(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct worker *w = W(d);
	json_t *final = smt_hostjob_final(d->job);
	const char *sig = smt_signal_name(d->stop_signal);

	/* Stopped here, not by the leader: the leader words the job's end
	 * from this, not from the orted or torchrun it lost. */
	if (final && d->stop_signal)
		json_object_set_new(final, SMT_F_STOPPED,
				    sig ? json_string(sig) : json_integer(d->stop_signal));
	w->job_over = 1;
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	smt_output_end(smt_hostjob_output(d->job), final);
	json_decref(final);
	if (!w->result && !w->leader_lost)
		uv_timer_start(&w->end_timer, on_ack_timeout, ACK_TIMEOUT_MS, 0);
	conclude(d);
}

static void on_acked(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	W(d)->acked = 1;
	conclude(d);
}

/* GET /v1/lines: the leader takes this host's output; past the end of it,
 * that is the acknowledgement that all of it arrived. */
static int worker_lines(struct smt_daemon *d, uint64_t from, size_t max, int final,
			const char **body, size_t *len)
{
	struct worker *w = W(d);
	struct smt_outbox *ob = d->job ? smt_output_outbox(smt_hostjob_output(d->job)) : NULL;
	int done, rc;

	if (!ob)
		return -ENOENT;
	if (!final && !smt_outbox_ready(ob, from))
		return -EAGAIN;
	rc = smt_outbox_fetch(ob, from, max, body, len, &done);
	if (rc == 0 && w && !w->acked && smt_outbox_acked(ob)) {
		/* Concluded from the loop, not from inside this answer. */
		uv_timer_stop(&w->end_timer);
		uv_timer_start(&w->end_timer, on_acked, 0, 0);
	}
	return rc;
}

/* ---- the leader ---- */

static void on_leader_lost(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	struct worker *w = W(d);

	w->lost_text = smt_failure_text(SMT_FAIL_LOST_LEADER,
					"the leader %s was lost: nothing was heard from it on %s "
					"for %.1f s (--peer-timeout)",
					smt_plan_leader(d->plan), smt_plan_current_host(d->plan),
					d->opts->peer_timeout);
	if (w->lost_text)
		smt_error("%.*s", (int)strcspn(w->lost_text, "\n"), w->lost_text);
	w->leader_lost = 1;
	/* Whatever channel the leader had here is dead: no answer of ours
	 * needs to wait for it at the end. */
	if (d->api)
		smt_api_set_linger(d->api, 0);
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	/* The job cannot go on: the ranks get SIGTERM and the grace, but
	 * orted, its mpirun gone, never ends by itself - it is killed as
	 * soon as the ranks are gone (hostjob.h), not a second later. */
	if (w->job_over)
		conclude(d);
	else
		smt_hostjob_end(d->job, SIGTERM, d->opts->grace);
}

static void worker_contact(struct smt_daemon *d)
{
	struct worker *w = W(d);

	if (!w || smt_state_is_final(d->state) || d->closing || w->leader_lost)
		return;
	if (!w->leader_seen) {
		w->leader_seen = 1;
		smt_info("the leader %s made contact", smt_plan_leader(d->plan));
		/* From now on the leader has --wait-timeout to launch. */
		uv_timer_again(&w->wait_timer);
		smt_daemon_changed(d);
	}
	/* The leader's long polls arrive at least every third of its peer
	 * timeout: silence for the whole timeout means it is gone.  While it
	 * holds one with no time (worker_kept), the connection's keepalive
	 * says so instead. */
	if (w->launched && !w->job_over && !w->kept)
		uv_timer_start(&w->contact_timer, on_leader_lost,
			       (uint64_t)(d->opts->peer_timeout * 1000), 0);
}

/*
 * The leader holds a long poll with no time on the TCP channel (KEPT), or
 * the last one ended.  Meanwhile the kernel's keepalive watches the
 * connection and no timer of ours runs; after it, silence is timed again
 * from when the kernel last heard the leader (QUIET_MS ago: all of the
 * keepalive's time when it found nobody; an answer sent into a link that
 * is down is not the leader heard), so that the leader is lost after
 * --peer-timeout of silence either way.
 */
static void worker_kept(struct smt_daemon *d, int kept, uint64_t quiet_ms)
{
	struct worker *w = W(d);
	double left = d->opts->peer_timeout - (double)quiet_ms / 1000;

	if (!w)
		return;
	w->kept = kept;
	if (kept) {
		uv_timer_stop(&w->contact_timer);
		return;
	}
	if (smt_state_is_final(d->state) || d->closing || w->leader_lost || !w->launched ||
	    w->job_over)
		return;
	uv_timer_start(&w->contact_timer, on_leader_lost, left > 0 ? (uint64_t)(left * 1000) : 0,
		       0);
}

static void on_wait_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_daemon_fail(d, SMT_EXIT_PEER, SMT_FAIL_LEADER_NOT_READY,
			"the leader %s %s within %.1f s (--wait-timeout)", smt_plan_leader(d->plan),
			W(d)->leader_seen ? "did not launch the job" : "did not contact this host",
			d->opts->wait_timeout);
}

/* ---- orted ---- */

/* Now, in the units of a process's start time (clock ticks after boot). */
static uint64_t boot_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)hz +
		(uint64_t)ts.tv_nsec / (1000000000UL / (uint64_t)hz);
}

/* Root's, or smtd's own user's: no one else can have started sshd or the
 * job's orted, whatever name its process gives itself. */
static int trusted_uid(pid_t pid)
{
	struct smt_rankcred c;

	return smt_rankcred_of(NULL, pid, &c) == 0 && (c.uid == 0 || c.uid == geteuid());
}

/* PID is an Open MPI daemon (or exec-orted about to become one) that
 * descends from an sshd session on this host, or left it (daemonized) with
 * the session's environment: the only process the leader's mpirun starts
 * here.  Names are no proof (any process may call itself orted or sshd):
 * it must run as root or as smtd's user, have started after this worker
 * did, and its sshd must be root's or smtd's user's.  0, or -errno with
 * WHY. */
static int check_orted(struct smt_daemon *d, pid_t pid, char *why, size_t len)
{
	struct smt_proc_stat st;
	pid_t p = pid;
	int depth = 0;

	if (smt_proc_stat(NULL, pid, &st) < 0) {
		snprintf(why, len, "process %d does not exist", (int)pid);
		return -ESRCH;
	}
	if (strcmp(st.comm, "orted") != 0 && strcmp(st.comm, "prted") != 0 &&
	    strcmp(st.comm, "smtctl") != 0) {
		snprintf(why, len, "process %d is %s, not an Open MPI daemon", (int)pid, st.comm);
		return -EPERM;
	}
	if (!trusted_uid(pid)) {
		snprintf(why, len, "process %d runs as neither root nor smtd's user", (int)pid);
		return -EPERM;
	}
	if (W(d) && st.starttime < W(d)->begin_ticks) {
		snprintf(why, len, "process %d started before this host's smtd", (int)pid);
		return -EPERM;
	}
	while (p > 1 && depth++ < 64) {
		if (smt_proc_stat(NULL, p, &st) < 0)
			break;
		if (strcmp(st.comm, "sshd") == 0 && trusted_uid(p))
			return 0;
		p = st.ppid;
	}
	/* An orted that daemonized (a launch agent other than smtctl's) left
	 * its sshd session for PID 1; what sshd gave the session stays in its
	 * environment (and only root or smtd's user got this far). */
	if (smt_proc_has_env(NULL, pid, "SSH_CONNECTION=") == 1)
		return 0;
	snprintf(why, len, "process %d was not started through this host's sshd", (int)pid);
	return -EPERM;
}

static int orted_ok(void *arg, pid_t pid)
{
	char why[160];

	if (check_orted(arg, pid, why, sizeof(why)) == 0)
		return 1;
	smt_warn("not taking process %d for orted: %s", (int)pid, why);
	return 0;
}

static void adopt(struct smt_daemon *d, pid_t pid)
{
	struct worker *w = W(d);

	if (smt_hostjob_adopt(d->job, pid) < 0)
		return;
	uv_timer_stop(&w->launch_timer);
	smt_daemon_set_state(d, SMT_STATE_RUNNING);
}

/* A process named orted or prted that check_orted accepts, not ours yet;
 * the others are logged and passed over. */
static pid_t find_orted(struct smt_daemon *d)
{
	pid_t found = smt_proc_find_comm_if(NULL, "orted", orted_ok, d);

	if (found <= 0)
		found = smt_proc_find_comm_if(NULL, "prted", orted_ok, d);
	return found > 0 ? found : 0;
}

static void on_launch_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	pid_t pid = find_orted(d);

	if (pid > 0) {
		adopt(d, pid);
		return;
	}
	smt_daemon_fail(d, SMT_EXIT_PEER, SMT_FAIL_LAUNCH,
			"the leader %s launched the job but no orted started on %s within %.1f s "
			"(--launch-timeout)", smt_plan_leader(d->plan),
			smt_plan_current_host(d->plan), d->opts->launch_timeout);
}

/*
 * A rank's launcher registers before orted was announced or found (a
 * custom orte_launch_agent): its orted is the Open MPI daemon among its
 * ancestors, which is adopted now, so that the rank is part of the job.
 */
static int worker_admit(void *ctx, pid_t launcher, int rank, char *why, size_t len)
{
	struct smt_daemon *d = ctx;
	struct smt_proc_stat st;
	pid_t p = launcher;
	char reason[160];

	(void)rank;
	if (!W(d) || W(d)->job_over || smt_hostjob_orted(d->job) > 0)
		return 0;
	for (int depth = 0; p > 1 && depth < 16 && smt_proc_stat(NULL, p, &st) == 0; depth++) {
		if ((strcmp(st.comm, "orted") == 0 || strcmp(st.comm, "prted") == 0) &&
		    check_orted(d, p, reason, sizeof(reason)) == 0) {
			smt_info("orted was not announced; found it in /proc (pid %d), the parent "
				 "of rank %d's launcher", (int)p, rank);
			/* As an announcement: it may come before the leader's
			 * launch message. */
			W(d)->launched = 1;
			uv_timer_stop(&W(d)->wait_timer);
			smt_daemon_attempt_starts(d);
			adopt(d, p);
			return 0;
		}
		p = st.ppid;
	}
	(void)why;
	(void)len;
	return 0;
}

/* The fallback for a launch agent that does not announce itself: one look
 * at /proc, then wait for the announcement until the launch timeout. */
static void on_scan(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	pid_t pid;

	if (smt_hostjob_orted(d->job) > 0)
		return;
	pid = find_orted(d);
	if (pid > 0) {
		smt_info("orted was not announced; found it in /proc (pid %d)", (int)pid);
		adopt(d, pid);
		return;
	}
	double left = d->opts->launch_timeout - ORTED_SCAN_MS / 1000.0;
	uv_timer_start(&W(d)->launch_timer, on_launch_timeout,
		       left > 0 ? (uint64_t)(left * 1000) : 0, 0);
}

/* ---- the leader's requests ---- */

/* Why a launch, or an orted, is refused before this host's checks and
 * install passed: the leader launches only once every host passed. */
static const char not_passed[] = "the pre-launch phase of this host has not passed";

static int on_launch(struct smt_daemon *d, json_t *body, int peer_pid, json_t **reply)
{
	struct worker *w = W(d);

	(void)body;
	(void)peer_pid;
	if (smt_state_is_final(d->state) || w->job_over || d->stop_signal)
		return 409;
	/* The leader launches only once every host passed (leader.c). */
	if (!w->prelaunch_passed) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, not_passed);
		return 409;
	}
	if (!w->launched) {
		w->launched = 1;
		uv_timer_stop(&w->wait_timer);
		smt_daemon_set_state(d, SMT_STATE_LAUNCHING);
		smt_daemon_attempt_starts(d);
		if (torchrun(d)) {
			char **envp = smt_daemon_command_env(d);
			const char *cwd = smt_plan_workdir(d->plan);
			int rc;

			if (cwd && access(cwd, X_OK) < 0)
				cwd = NULL;
			rc = smt_hostjob_launch(d->job, smt_plan_argv(d->plan), envp, cwd, 0);
			free(envp);
			if (rc < 0) {
				smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_LAUNCH,
						"cannot start torchrun on %s: %s",
						smt_plan_current_host(d->plan), strerror(-rc));
				return 500;
			}
		} else {
			uv_timer_start(&w->launch_timer, on_scan, ORTED_SCAN_MS, 0);
		}
		worker_contact(d);
	}
	*reply = json_object();
	return 200;
}

/* The environment orted (and so every local rank) gets from this host. */
static json_t *host_env(struct smt_daemon *d)
{
	json_t *env = json_deep_copy(json_object_get(d->launcher_env, SMT_F_ENV));

	return env ? env : json_object();
}

/* smtctl exec-orted announces its own PID, which it keeps as orted: a PID
 * that is not the client's own is refused, whatever process it names. */
static int on_orted(struct smt_daemon *d, json_t *body, int peer_pid, json_t **reply)
{
	struct worker *w = W(d);
	json_t *jp = json_object_get(body, SMT_F_PID);
	json_int_t pid = json_integer_value(jp);
	char why[256];

	if (!json_is_integer(jp) || pid <= 1 || pid > smt_proc_pid_max()) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, "pid must be a process ID of this host");
		return 400;
	}
	if (pid != peer_pid) {
		snprintf(why, sizeof(why), "pid %lld is not the announcing process (%d): "
			 "only orted's own smtctl exec-orted may announce it",
			 (long long)pid, peer_pid);
		smt_warn("refusing an orted announcement: %s", why);
		*reply = json_pack("{s:s}", SMT_F_ERROR, why);
		return 403;
	}
	if (check_orted(d, (pid_t)pid, why, sizeof(why)) < 0) {
		smt_warn("refusing an orted announcement: %s", why);
		*reply = json_pack("{s:s}", SMT_F_ERROR, why);
		return 403;
	}
	/* No orted of this job runs here before the leader's launch, which
	 * waits for this host's checks: whatever announces itself is not it. */
	if (!w->prelaunch_passed) {
		smt_warn("refusing an orted announcement: %s", not_passed);
		*reply = json_pack("{s:s}", SMT_F_ERROR, not_passed);
		return 409;
	}
	if (smt_state_is_final(d->state) || w->job_over) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, "the job on this host has ended");
		return 409;
	}
	if (!w->launched)
		smt_warn("orted announced before the leader's launch message");
	w->launched = 1;
	smt_daemon_attempt_starts(d);
	uv_timer_stop(&w->wait_timer);
	adopt(d, (pid_t)pid);
	*reply = json_pack("{s:o}", SMT_F_ENV, host_env(d));
	return 200;
}

static int on_end(struct smt_daemon *d, json_t *body, int peer_pid, json_t **reply)
{
	const char *mode = json_string_value(json_object_get(body, SMT_F_MODE));
	const char *sig = json_string_value(json_object_get(body, SMT_F_SIGNAL));
	double grace = json_number_value(json_object_get(body, SMT_F_GRACE));
	int signo = sig ? smt_signal_parse(sig) : SIGTERM;

	(void)peer_pid;
	*reply = json_object();
	if (!mode || signo <= 0) {
		json_object_set_new(*reply, SMT_F_ERROR,
				    json_string("expected a mode and a signal"));
		return 400;
	}
	json_t *ja = json_object_get(body, SMT_F_ATTEMPT);

	if (grace <= 0 || grace > d->opts->grace)
		grace = d->opts->grace;
	if (!W(d)->launched || W(d)->job_over)
		return 200;
	/* A message of an attempt already over (it took a slow channel) ends
	 * nothing of this one. */
	if (json_is_integer(ja) && json_integer_value(ja) != smt_restart_attempt(d->restart)) {
		smt_info("ignoring the leader's %s message of attempt %lld", mode,
			 (long long)json_integer_value(ja) + 1);
		return 200;
	}
	if (strcmp(mode, "signal") == 0) {
		smt_hostjob_signal(d->job, signo);
	} else if (strcmp(mode, "stop") == 0) {
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
		smt_hostjob_stop(d->job, signo, grace);
	} else {
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
		smt_hostjob_end(d->job, signo, grace);
	}
	return 200;
}

static void worker_prelaunch_done(struct smt_daemon *d, int passed);

/* The answer to the attempt's request: the attempt, and how far this
 * host's preflight for it got ("running": the leader asks again). */
static json_t *attempt_reply(struct smt_daemon *d)
{
	json_t *pf = smt_prelaunch_result(d->prelaunch);

	return json_pack("{s:i, s:o?}", SMT_F_ATTEMPT, smt_restart_attempt(d->restart),
			 SMT_F_PREFLIGHT, pf ? json_deep_copy(pf) : NULL);
}

/*
 * The leader starts the job's next attempt (smtd(8) Restarts): this host's part of
 * the last one must be over - its answer is the confirmation - and the
 * job here waits for the next launch as it did for the first, the leader's
 * channels as they are.  This host's preflight runs again first (smtd(8)
 * Preflight); the leader asks again with the same request until the answer says
 * it ended, and launches only when it passed everywhere.
 */
static int on_attempt(struct smt_daemon *d, json_t *body, int peer_pid, json_t **reply)
{
	struct worker *w = W(d);
	json_t *ja = json_object_get(body, SMT_F_ATTEMPT);
	const char *summary = json_string_value(json_object_get(body, SMT_F_FAILURE));
	int attempt = (int)json_integer_value(ja), rc;

	(void)peer_pid;
	if (json_is_integer(ja) && attempt > 0 && attempt == smt_restart_attempt(d->restart) &&
	    !w->launched && !smt_state_is_final(d->state)) {
		*reply = attempt_reply(d);
		return 200;
	}
	if (!json_is_integer(ja) || attempt != smt_restart_attempt(d->restart) + 1) {
		*reply = json_pack("{s:s}", SMT_F_ERROR,
				   "attempt must be the one after this host's");
		return 400;
	}
	if (!w->job_over || w->result || w->leader_lost || d->stop_signal ||
	    smt_state_is_final(d->state) || d->closing) {
		*reply = json_pack("{s:s}", SMT_F_ERROR,
				   w->job_over ? "the job on this host is ending" :
						 "the job on this host is still running");
		return 409;
	}
	rc = smt_daemon_next_attempt(d, summary);
	if (rc < 0) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, strerror(-rc));
		return 500;
	}
	smt_info("the leader starts attempt %d", attempt + 1);
	uv_timer_stop(&w->end_timer);
	uv_timer_stop(&w->contact_timer);
	w->job_over = w->acked = w->launched = 0;
	w->prelaunch_passed = 0;
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_LEADER);
	/* The leader has --wait-timeout to launch it, as the first. */
	uv_timer_again(&w->wait_timer);
	rc = smt_daemon_prelaunch(d, attempt, worker_prelaunch_done);
	if (rc < 0) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, strerror(-rc));
		return 500;
	}
	*reply = attempt_reply(d);
	return 200;
}

static int on_result(struct smt_daemon *d, json_t *body, int peer_pid, json_t **reply)
{
	struct worker *w = W(d);

	(void)peer_pid;
	*reply = json_object();
	if (smt_state_is_final(d->state) || d->closing || w->result)
		return 200;
	w->result = json_incref(body);
	smt_info("the leader's result: %s, exit code %lld",
		 json_string_value(json_object_get(body, SMT_F_STATE)) ?
		 json_string_value(json_object_get(body, SMT_F_STATE)) : "?",
		 (long long)json_integer_value(json_object_get(body, SMT_F_EXIT_CODE)));
	uv_timer_stop(&w->contact_timer);
	uv_timer_stop(&w->end_timer);
	if (!w->launched || w->job_over) {
		w->job_over = 1;
		conclude(d);
	} else {
		/* The leader decided without us (it gave up waiting): what
		 * runs here goes now. */
		smt_hostjob_end(d->job, SIGTERM, 1.0);
	}
	return 200;
}

/* ---- signals ---- */

static void worker_signal(struct smt_daemon *d, int signo)
{
	struct worker *w = W(d);

	if (!w)
		return;
	if (!smt_daemon_stopping_signal(signo)) {
		smt_hostjob_signal(d->job, signo);
		return;
	}
	if (w->launched && !w->job_over) {
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
		smt_hostjob_stop(d->job, signo, d->opts->grace);
		return;
	}
	if (w->job_over) {
		conclude(d);
		return;
	}
	finish_stopped(d);
}

/* ---- start and end ---- */

/* This host's pre-launch phase ended: the leader learns it from our
 * status (smt_daemon_preflight_set made it change); a failure waits for
 * the leader's result like any other end. */
static void worker_prelaunch_done(struct smt_daemon *d, int passed)
{
	W(d)->prelaunch_passed = passed;
	smt_daemon_preflight_write(d);
}

static void worker_begin(struct smt_daemon *d)
{
	struct worker *w = smt_daemon_role_state(d, sizeof(*w));

	if (!w)
		return;
	w->begin_ticks = boot_ticks();
	uv_timer_init(&d->loop, &w->wait_timer);
	uv_timer_init(&d->loop, &w->launch_timer);
	uv_timer_init(&d->loop, &w->contact_timer);
	uv_timer_init(&d->loop, &w->end_timer);
	w->wait_timer.data = w->launch_timer.data = w->contact_timer.data = w->end_timer.data = d;
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_LEADER);
	uv_timer_start(&w->wait_timer, on_wait_timeout, (uint64_t)(d->opts->wait_timeout * 1000),
		       (uint64_t)(d->opts->wait_timeout * 1000));
	/* Its result reaches the leader in this host's status (peers.h). */
	smt_daemon_begin_prelaunch(d, worker_prelaunch_done);
}

/* smtctl restart is the leader's to decide. */
static int worker_restart(struct smt_daemon *d, json_t **reply)
{
	char why[256];

	snprintf(why, sizeof(why), "this host is a worker: restart the job on the leader %s",
		 smt_plan_leader(d->plan));
	*reply = json_pack("{s:s}", SMT_F_ERROR, why);
	return 409;
}

static int worker_host_ready(struct smt_daemon *d, const char *host)
{
	struct worker *w = W(d);

	if (strcmp(host, smt_plan_current_host(d->plan)) == 0)
		return d->state != SMT_STATE_STARTING;
	if (strcmp(host, smt_plan_leader(d->plan)) == 0)
		return w && w->leader_seen;
	return 0;
}

static void worker_close(struct smt_daemon *d)
{
	struct worker *w = W(d);

	if (!w)
		return;
	uv_close((uv_handle_t *)&w->wait_timer, NULL);
	uv_close((uv_handle_t *)&w->launch_timer, NULL);
	uv_close((uv_handle_t *)&w->contact_timer, NULL);
	uv_close((uv_handle_t *)&w->end_timer, NULL);
	json_decref(w->result);
	w->result = NULL;
	free(w->lost_text);
	w->lost_text = NULL;
}

static const struct smt_hostjob_ops worker_job_ops = {
	.changed = smt_daemon_job_changed,
	.done = worker_job_done,
	.admit = worker_admit,
};

const struct smt_role_ops smt_worker_role = {
	.name = "worker",
	.begin = worker_begin,
	.signal = worker_signal,
	.launch = on_launch,
	.orted = on_orted,
	.end = on_end,
	.result = on_result,
	.attempt = on_attempt,
	.restart = worker_restart,
	.contact = worker_contact,
	.kept = worker_kept,
	.job = &worker_job_ops,
	.lines = worker_lines,
	.host_ready = worker_host_ready,
	.close = worker_close,
};
