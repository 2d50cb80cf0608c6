/*
 * daemon.c - the event loop and what every role shares: signals, the
 * control socket, sshd, the rank output, and the end of the job on this
 * host (the result files, the final state, the exit code).
 *
 * One struct smt_daemon (daemon_int.h) owns the loop and everything on it.
 * Its states follow SPEC §4; every transition happens in a loop callback -
 * a child's exit, a pipe's end, a signal, a request, a timer - never after
 * a sleep.  What a leader does is in leader.c, what a worker does in
 * worker.c.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include "daemon.h"
#include "daemon_int.h"
#include "log.h"
#include "notify.h"
#include "resultfile.h"

static const int forwarded_signals[SMT_NSIGNALS] = {
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
};

double smt_daemon_now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

void smt_daemon_changed(struct smt_daemon *d)
{
	d->generation++;
	if (d->api)
		smt_api_notify(d->api);
}

void smt_daemon_set_state(struct smt_daemon *d, enum smt_state state)
{
	if (d->state == state)
		return;
	smt_info("state %s -> %s", smt_state_name(d->state), smt_state_name(state));
	d->state = state;
	smt_log_set_state(smt_state_name(state));
	smt_notify_status(smt_state_name(state));
	smt_daemon_changed(d);
}

/*
 * Children smtd started for itself - sshd, ssh-keygen, the leader's ssh
 * channels - are watched by the reaper; the job's command is the one
 * watched child that is the job's.  Anything else that is our child was
 * left to us: an orphan of the job.
 */
int smt_daemon_not_job(void *arg, pid_t pid)
{
	struct smt_daemon *d = arg;

	if (d->job && pid == smt_job_pid(d->job))
		return 0;
	return pid == smt_sshd_pid(d->sshd) || smt_reaper_watched(d->reaper, pid);
}

static void close_timer(uv_timer_t *t)
{
	if (!uv_is_closing((uv_handle_t *)t))
		uv_close((uv_handle_t *)t, NULL);
}

/* The control socket is closed last: its answers - a worker's reply to the
 * leader's result - may still travel through sshd. */
static void on_api_closed(void *arg)
{
	struct smt_daemon *d = arg;

	if (d->sshd) {
		smt_sshd_stop(d->sshd);
		d->sshd = NULL;
	}
	if (d->reaper) {
		smt_reaper_close(d->reaper);
		d->reaper = NULL;
	}
}

/* Close every handle, so that the loop ends. */
static void close_all(struct smt_daemon *d)
{
	d->closing = 1;
	for (size_t i = 0; i < SMT_NSIGNALS; i++)
		if (!uv_is_closing((uv_handle_t *)&d->signals[i]))
			uv_close((uv_handle_t *)&d->signals[i], NULL);
	close_timer(&d->wait_timer);
	close_timer(&d->phase_timer);
	close_timer(&d->contact_timer);
	close_timer(&d->grace_timer);
	close_timer(&d->watchdog_timer);
	smt_leader_close(d);
	smt_worker_close(d);
	if (d->api) {
		struct smt_api *api = d->api;
		d->api = NULL;
		smt_api_close(api, on_api_closed, d);
	} else {
		on_api_closed(d);
	}
}

static void first_line(const char *text, char **out)
{
	free(*out);
	*out = strndup(text, strcspn(text, "\n"));
}

void smt_daemon_finish(struct smt_daemon *d, enum smt_state state, int exit_code,
		       const char *failure)
{
	const char *root = smt_plan_root(d->plan);
	int rc;

	if (smt_state_is_final(d->state) || d->closing)
		return;
	if (state == SMT_STATE_SUCCEEDED) {
		rc = smt_resultfile_success(root);
		if (rc < 0)
			smt_error("cannot write %s/output/success: %s", root, strerror(-rc));
	} else {
		const char *text = failure ? failure : "JobFailed: the job failed\n";
		free(d->failure);
		d->failure = strdup(text);
		first_line(text, &d->summary);
		rc = smt_resultfile_failure(root, text, strlen(text));
		if (rc == -EEXIST)
			smt_warn("%s/output/failure exists already; leaving it as it is", root);
		else if (rc < 0)
			smt_error("cannot write %s/output/failure: %s", root, strerror(-rc));
		smt_error("%s", d->summary ? d->summary : "failed");
	}
	d->exit_code = exit_code;
	smt_daemon_set_state(d, state);
	smt_info("exit code %d", exit_code);
	close_all(d);
}

/* sshd comes first on every host (SPEC §4); then the role begins. */
static void on_sshd(void *arg, int up)
{
	struct smt_daemon *d = arg;
	char text[512];

	if (up < 0) {
		snprintf(text, sizeof(text),
			 "SshdFailed: sshd is needed for a job of several hosts but %s cannot be "
			 "started: %s; install the openssh-server package\n",
			 d->opts->sshd_path, strerror(-up));
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_CONFIG, text);
	} else if (d->role == SMT_ROLE_WORKER) {
		smt_worker_begin(d);
	} else {
		smt_leader_begin(d);
	}
}

static void start_sshd(struct smt_daemon *d)
{
	struct smt_sshd_config sc = {
		.mode = d->opts->sshd_mode,
		.sshd_path = d->opts->sshd_path,
		.config_file = d->opts->sshd_config,
		.nhosts = d->role == SMT_ROLE_STANDALONE ? 1 : smt_plan_dist_host_count(d->plan),
	};

	if (smt_sshd_start(&d->loop, d->reaper, &sc, on_sshd, d, &d->sshd) < 0)
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED,
				  "InternalError: out of memory\n");
}

static void on_signal(uv_signal_t *h, int signo)
{
	struct smt_daemon *d = h->data;
	const char *name = smt_signal_name(signo);

	smt_info("received SIG%s", name ? name : "?");
	if (signo != SIGUSR1 && signo != SIGUSR2 && d->stop_signal == 0)
		d->stop_signal = signo;
	if (d->role == SMT_ROLE_WORKER)
		smt_worker_signal(d, signo);
	else
		smt_leader_signal(d, signo);
}

static int setup_signals(struct smt_daemon *d)
{
	/* As tini does: job control signals must not stop PID 1. */
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	/* A client or stdout that went away must give EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < SMT_NSIGNALS; i++) {
		uv_signal_init(&d->loop, &d->signals[i]);
		d->signals[i].data = d;
		int rc = uv_signal_start(&d->signals[i], on_signal, forwarded_signals[i]);
		if (rc < 0)
			return rc;
		/* Signals alone never keep the loop alive. */
		uv_unref((uv_handle_t *)&d->signals[i]);
	}
	return 0;
}

static void on_orphan(void *arg, pid_t pid, int wstatus)
{
	struct smt_daemon *d = arg;

	(void)wstatus;
	smt_debug("reaped process %d", (int)pid);
	if (d->role == SMT_ROLE_WORKER)
		smt_worker_reaped(d, pid);
}

/* On failure TEXT says which listener and why, for the failure file. */
static int setup_api(struct smt_daemon *d, char *text, size_t len)
{
	int rc = smt_api_new(&d->loop, &smt_status_ops, d, &d->api);

	if (rc == 0)
		rc = smt_api_listen_unix(d->api, d->opts->socket_path, d->opts->socket_group);
	if (rc < 0) {
		smt_error("cannot serve the control API on %s: %s", d->opts->socket_path,
			  strerror(-rc));
		snprintf(text, len, "ConfigurationError: cannot serve the control socket %s "
			 "(see smtd's log)\n", d->opts->socket_path);
		return rc;
	}
	if (d->opts->health_listen) {
		rc = smt_api_listen_tcp(d->api, d->opts->health_listen);
		if (rc < 0) {
			snprintf(text, len, "ConfigurationError: --health-listen %s: cannot listen "
				 "there: %s; give a free port on an address of this host\n",
				 d->opts->health_listen, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	smt_notify_watchdog();
}

/* Under systemd (Type=notify): ready once the control socket answers, and
 * the watchdog pinged from the loop, so a stuck loop is noticed. */
static void notify_systemd(struct smt_daemon *d)
{
	uint64_t usec = 0;

	smt_notify_ready();
	smt_notify_status(smt_state_name(d->state));
	if (smt_notify_watchdog_usec(&usec) > 0 && usec >= 2000) {
		uv_timer_start(&d->watchdog_timer, on_watchdog, usec / 2000, usec / 2000);
		uv_unref((uv_handle_t *)&d->watchdog_timer);
	}
}

static int setup_output(struct smt_daemon *d)
{
	struct smt_output_config oc = {
		.out_fd = 1,
		.msg_fd = 2,
		.format = d->opts->log_json ? SMT_OUTPUT_JSON : SMT_OUTPUT_TEXT,
		.current_host = smt_plan_current_host(d->plan),
	};

	return smt_output_new(&oc, &d->output);
}

int smt_daemon_run(struct smt_plan *plan)
{
	struct smt_daemon *d;
	char text[1024];
	int rc, code;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return SMT_EXIT_JOB_FAILED;
	d->plan = plan;
	d->opts = smt_plan_options(plan);
	d->role = smt_plan_role(plan);
	d->start_time = smt_daemon_now();
	d->exit_code = SMT_EXIT_JOB_FAILED;
	d->oom_kills = -1;
	rc = uv_loop_init(&d->loop);
	if (rc < 0) {
		smt_error("cannot start the event loop: %s", uv_strerror(rc));
		free(d);
		return SMT_EXIT_JOB_FAILED;
	}
	uv_timer_init(&d->loop, &d->wait_timer);
	uv_timer_init(&d->loop, &d->phase_timer);
	uv_timer_init(&d->loop, &d->contact_timer);
	uv_timer_init(&d->loop, &d->grace_timer);
	uv_timer_init(&d->loop, &d->watchdog_timer);
	d->wait_timer.data = d->phase_timer.data = d->contact_timer.data = d->grace_timer.data = d;

	rc = smt_reaper_new(&d->loop, &d->reaper);
	if (rc == 0) {
		smt_reaper_set_any(d->reaper, on_orphan, d);
		rc = setup_signals(d);
	}
	if (rc == 0)
		rc = setup_output(d);
	if (rc < 0) {
		smt_error("cannot set up the daemon: %s", strerror(-rc));
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED,
				  "InternalError: smtd could not set up its event loop\n");
	} else if (setup_api(d, text, sizeof(text)) < 0) {
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_CONFIG, text);
	} else {
		notify_systemd(d);
		smt_info("%s on %s: %zu host%s, %ld process%s; control socket %s",
			 smt_role_name(d->role), smt_plan_current_host(plan),
			 smt_plan_dist_host_count(plan), smt_plan_dist_host_count(plan) == 1 ? "" : "s",
			 smt_plan_num_processes(plan), smt_plan_num_processes(plan) == 1 ? "" : "es",
			 d->opts->socket_path);
		start_sshd(d);
	}
	uv_run(&d->loop, UV_RUN_DEFAULT);
	/* Anything still open (a failure before the end) is closed here and
	 * its close callbacks run. */
	if (!d->closing)
		close_all(d);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	code = d->exit_code;
	rc = uv_loop_close(&d->loop);
	if (rc < 0)
		smt_error("internal error: handles left open at exit");
	smt_output_free(d->output);
	free(d->failure);
	free(d->summary);
	free(d->peer_failure);
	free(d->drain_failure);
	free(d);
	return code;
}
