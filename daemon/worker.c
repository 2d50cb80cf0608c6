/*
 * worker.c - a worker's part of the job.
 *
 * Start sshd if needed and wait for the leader's contact (its readiness
 * probe, then POST /v1/launch).  The leader's mpirun starts orted here
 * through `smtctl exec-orted`, which announces orted's PID (POST
 * /v1/orted) and takes this host's own SM_* variables for the ranks from
 * the answer.  orted is watched until it exits; then the job's result
 * comes from the leader (POST /v1/result) and is written here with the
 * same exit code.  The leader is lost when its channel is silent for
 * longer than the watch period plus --peer-timeout: then the local part
 * of the job is ended here (on_leader_lost below).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_int.h"
#include "killtree.h"
#include "log.h"

/* Without an announcement this soon after the launch, look for orted. */
#define ORTED_SCAN_MS 5000

static void start_watch(struct smt_daemon *d, pid_t pid);

/* Signal every process of the job on this host: orted's session, and what
 * was left to us, never sshd itself.  Returns how many were signalled. */
static int signal_job(struct smt_daemon *d, int signo)
{
	return smt_killtree(NULL, d->orted_sid, smt_daemon_not_job, d, signo);
}

/* ---- ending ---- */

static void drained(struct smt_daemon *d)
{
	char *text = d->drain_failure;

	d->drain_failure = NULL;
	d->draining = 0;
	uv_timer_stop(&d->grace_timer);
	signal_job(d, SIGKILL);
	smt_daemon_finish(d, d->drain_exit_code >= 128 ? SMT_STATE_STOPPED : SMT_STATE_FAILED,
			  d->drain_exit_code, text);
	free(text);
}

static void on_grace(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_warn("grace period of %.1f s is over: killing what is left of the job",
		 d->opts->grace);
	drained(d);
}

/*
 * End the local part of the job: SIGNO to every process of it, SIGKILL
 * after the grace, and the end as soon as none is left.
 */
static void drain(struct smt_daemon *d, int signo, int exit_code, const char *failure)
{
	if (d->draining || smt_state_is_final(d->state) || d->closing)
		return;
	d->draining = 1;
	d->drain_exit_code = exit_code;
	d->drain_failure = strdup(failure);
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	if (signal_job(d, signo) <= 0) {
		drained(d);
		return;
	}
	uv_timer_start(&d->grace_timer, on_grace, (uint64_t)(d->opts->grace * 1000), 0);
}

void smt_worker_reaped(struct smt_daemon *d, pid_t pid)
{
	(void)pid;
	if (d->draining && signal_job(d, 0) <= 0)
		drained(d);
}

/* ---- the leader ---- */

static void on_leader_lost(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char text[512];

	snprintf(text, sizeof(text),
		 "LostLeader: the leader %s was lost: nothing was heard from it on %s for %.1f s "
		 "(--peer-timeout)\n", smt_plan_leader(d->plan), smt_plan_current_host(d->plan),
		 d->opts->peer_timeout);
	smt_error("%.*s", (int)strcspn(text, "\n"), text);
	/* Whatever channel the leader had here is dead: no answer of ours
	 * needs to wait for it at the end. */
	if (d->api)
		smt_api_set_linger(d->api, 0);
	drain(d, SIGTERM, SMT_EXIT_PEER, text);
}

void smt_worker_contact(struct smt_daemon *d)
{
	if (smt_state_is_final(d->state) || d->closing)
		return;
	if (!d->leader_seen) {
		d->leader_seen = 1;
		smt_info("the leader %s made contact", smt_plan_leader(d->plan));
		/* From now on the leader has --wait-timeout to launch. */
		uv_timer_again(&d->wait_timer);
		smt_daemon_changed(d);
	}
	/* The leader's long polls arrive at least every third of its peer
	 * timeout: silence for the whole timeout means it is gone. */
	if (d->launched)
		uv_timer_start(&d->contact_timer, on_leader_lost,
			       (uint64_t)(d->opts->peer_timeout * 1000), 0);
}

static void on_wait_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char text[512];

	snprintf(text, sizeof(text), "LeaderNotReady: the leader %s %s within %.1f s "
		 "(--wait-timeout)\n", smt_plan_leader(d->plan),
		 d->leader_seen ? "did not launch the job" : "did not contact this host",
		 d->opts->wait_timeout);
	smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_PEER, text);
}

/* ---- orted ---- */

static void on_result_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char text[512];

	snprintf(text, sizeof(text), "LostLeader: the leader %s sent no result within %.1f s "
		 "after orted ended on %s (--result-timeout)\n", smt_plan_leader(d->plan),
		 d->opts->result_timeout, smt_plan_current_host(d->plan));
	smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_PEER, text);
}

static void on_orted_exit(void *arg, pid_t pid)
{
	struct smt_daemon *d = arg;
	int n;

	smt_info("orted (pid %d) ended", (int)pid);
	d->orted_ended = 1;
	d->job_ended = 1;
	/* Ranks that outlive their orted (it was killed) are ours to end. */
	n = signal_job(d, SIGKILL);
	if (n > 0)
		smt_warn("killed %d process%s of the job left behind by orted", n, n == 1 ? "" : "es");
	if (d->draining) {
		/* orted's death is seen through its pidfd, not through SIGCHLD. */
		if (signal_job(d, 0) <= 0)
			drained(d);
		return;
	}
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	uv_timer_stop(&d->phase_timer);
	uv_timer_start(&d->phase_timer, on_result_timeout,
		       (uint64_t)(d->opts->result_timeout * 1000), 0);
}

static void start_watch(struct smt_daemon *d, pid_t pid)
{
	if (d->orted)
		return;
	d->orted_pid = pid;
	d->orted_sid = getsid(pid);
	if (d->orted_sid < 0)
		d->orted_sid = 0;
	uv_timer_stop(&d->phase_timer);
	smt_orted_watch(&d->loop, pid, on_orted_exit, d, &d->orted);
	smt_info("watching orted (pid %d)", (int)pid);
	smt_daemon_set_state(d, SMT_STATE_RUNNING);
}

static void on_launch_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char text[512];
	pid_t pid = smt_orted_find(NULL);

	if (pid > 0) {
		start_watch(d, pid);
		return;
	}
	snprintf(text, sizeof(text), "LaunchFailed: the leader %s launched the job but no orted "
		 "started on %s within %.1f s (--launch-timeout)\n", smt_plan_leader(d->plan),
		 smt_plan_current_host(d->plan), d->opts->launch_timeout);
	smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_PEER, text);
}

/* The fallback for a launch agent that does not announce itself: one look
 * at /proc, then wait for the announcement until the launch timeout. */
static void on_scan(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	pid_t pid;

	if (d->orted)
		return;
	pid = smt_orted_find(NULL);
	if (pid > 0) {
		smt_info("orted was not announced; found it in /proc (pid %d)", (int)pid);
		start_watch(d, pid);
		return;
	}
	double left = d->opts->launch_timeout - ORTED_SCAN_MS / 1000.0;
	uv_timer_start(&d->phase_timer, on_launch_timeout, left > 0 ? (uint64_t)(left * 1000) : 0, 0);
}

/* ---- the leader's requests ---- */

static int on_launch(struct smt_daemon *d, json_t **reply)
{
	if (smt_state_is_final(d->state) || d->draining)
		return 409;
	if (!d->launched) {
		d->launched = 1;
		uv_timer_stop(&d->wait_timer);
		smt_daemon_set_state(d, SMT_STATE_LAUNCHING);
		uv_timer_start(&d->phase_timer, on_scan, ORTED_SCAN_MS, 0);
		smt_worker_contact(d);
	}
	*reply = json_object();
	return 200;
}

/* The environment orted (and so every local rank) gets from this host. */
static json_t *host_env(struct smt_daemon *d)
{
	json_t *env = json_object();

	for (char *const *e = smt_plan_envp(d->plan); e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (eq == NULL)
			continue;
		if (strncmp(*e, "SM_", 3) == 0 || strncmp(*e, "SMTD_RESOURCE_CONFIG=", 21) == 0) {
			char *name = strndup(*e, (size_t)(eq - *e));
			if (name)
				json_object_set_new(env, name, json_string(eq + 1));
			free(name);
		}
	}
	return env;
}

static int on_orted(struct smt_daemon *d, json_t *body, json_t **reply)
{
	json_int_t pid = json_integer_value(json_object_get(body, SMT_F_PID));

	if (pid <= 1 || kill((pid_t)pid, 0) < 0) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, "pid must name a live process");
		return 400;
	}
	if (smt_state_is_final(d->state) || d->draining) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, "the job on this host has ended");
		return 409;
	}
	if (!d->launched)
		smt_warn("orted announced before the leader's launch message");
	d->launched = 1;
	uv_timer_stop(&d->wait_timer);
	start_watch(d, (pid_t)pid);
	*reply = json_pack("{s:o}", "env", host_env(d));
	return 200;
}

static int on_result(struct smt_daemon *d, json_t *body, json_t **reply)
{
	json_int_t code = json_integer_value(json_object_get(body, SMT_F_EXIT_CODE));
	const char *failure = json_string_value(json_object_get(body, SMT_F_FAILURE));
	const char *leader = json_string_value(json_object_get(body, SMT_F_LEADER));
	char *text = NULL;
	int exit_code;

	*reply = json_object();
	if (smt_state_is_final(d->state) || d->closing)
		return 200;
	if (leader == NULL)
		leader = smt_plan_leader(d->plan);
	/* The leader stopped by a signal is a failed job here, unless this
	 * host was stopped itself. */
	exit_code = (int)code;
	if (exit_code >= 128)
		exit_code = d->stop_signal ? 128 + d->stop_signal : SMT_EXIT_JOB_FAILED;
	else if (d->stop_signal)
		exit_code = 128 + d->stop_signal;
	uv_timer_stop(&d->phase_timer);
	uv_timer_stop(&d->contact_timer);
	signal_job(d, SIGKILL);
	if (exit_code == 0) {
		smt_daemon_finish(d, SMT_STATE_SUCCEEDED, SMT_EXIT_OK, NULL);
		return 200;
	}
	if (failure == NULL)
		failure = "JobFailed: the job failed\n";
	size_t first = strcspn(failure, "\n");
	if (asprintf(&text, "%.*s (reported by the leader %s)%s", (int)(first > 900 ? 900 : first),
		     failure, leader, failure + first) < 0)
		text = NULL;
	smt_daemon_finish(d, exit_code >= 128 ? SMT_STATE_STOPPED : SMT_STATE_FAILED, exit_code,
			  text ? text : failure);
	free(text);
	return 200;
}

int smt_worker_post(struct smt_daemon *d, const char *path, json_t *body, json_t **reply)
{
	if (strcmp(path, SMT_PATH_LAUNCH) == 0)
		return on_launch(d, reply);
	if (strcmp(path, SMT_PATH_ORTED) == 0)
		return on_orted(d, body, reply);
	if (strcmp(path, SMT_PATH_RESULT) == 0)
		return on_result(d, body, reply);
	return 404;
}

/* ---- signals ---- */

void smt_worker_signal(struct smt_daemon *d, int signo)
{
	int stopping = signo != SIGUSR1 && signo != SIGUSR2;
	char text[256];

	if (!stopping) {
		if (d->orted && !d->orted_ended)
			signal_job(d, signo);
		return;
	}
	snprintf(text, sizeof(text), "Stopped: smtd on %s received SIG%s and stopped the job\n",
		 smt_plan_current_host(d->plan),
		 smt_signal_name(signo) ? smt_signal_name(signo) : "?");
	if (d->orted && !d->orted_ended)
		drain(d, signo, 128 + signo, text);
	else
		smt_daemon_finish(d, SMT_STATE_STOPPED, 128 + signo, text);
}

/* ---- start and end ---- */

void smt_worker_begin(struct smt_daemon *d)
{
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_LEADER);
	uv_timer_start(&d->wait_timer, on_wait_timeout, (uint64_t)(d->opts->wait_timeout * 1000),
		       (uint64_t)(d->opts->wait_timeout * 1000));
}

void smt_worker_close(struct smt_daemon *d)
{
	if (d->role != SMT_ROLE_WORKER)
		return;
	/* Nothing of the job outlives the daemon. */
	if (d->orted_sid > 0 || d->orted)
		signal_job(d, SIGKILL);
	if (d->orted) {
		smt_orted_close(d->orted);
		d->orted = NULL;
	}
}
