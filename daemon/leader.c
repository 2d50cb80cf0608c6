/*
 * leader.c - the leader's part of the job, and a standalone host's.
 *
 * Leader: start sshd if needed, wait until every worker is ready (peers.c),
 * launch mpirun, carry its output, and when it ends tell every worker the
 * result and then end here too.  A worker lost while the job runs ends the
 * job on every host: the job's processes here get SIGTERM, mpirun is
 * killed as soon as they are gone (at the latest after the grace), and
 * the failure names the lost host (on_worker_lost below).  A standalone
 * host runs the rank command itself, with no peers and no mpirun.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "daemon_int.h"
#include "log.h"
#include "report.h"
#include "spawn.h"

/* The workers answer the result within this, or are not waited for. */
#define RESULT_DELIVERY_MS 6000

static int is_mpi(const struct smt_daemon *d)
{
	return d->role == SMT_ROLE_LEADER;
}

/* ---- the end ---- */

static void on_results_delivered(void *ctx)
{
	struct smt_daemon *d = ctx;

	uv_timer_stop(&d->phase_timer);
	if (d->results_sent != 1)
		return;
	d->results_sent = 2;
	char *failure = d->failure ? strdup(d->failure) : NULL;
	smt_daemon_finish(d, d->state_after_results, d->exit_code, failure);
	free(failure);
}

static void on_delivery_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_warn("not every worker confirmed the result within %d ms", RESULT_DELIVERY_MS);
	on_results_delivered(d);
}

/*
 * End the job on this host and, through the result, on every worker: the
 * files and the exit code are written once the workers have answered (or
 * could not be reached), so that every host ends within a second.
 */
static void leader_end(struct smt_daemon *d, enum smt_state state, int exit_code,
		       const char *failure)
{
	if (d->results_sent || smt_state_is_final(d->state) || d->closing)
		return;
	if (d->peers == NULL || smt_peers_count(d->peers) == 0) {
		smt_daemon_finish(d, state, exit_code, failure);
		return;
	}
	json_t *result = json_pack("{s:i, s:s, s:s, s:s?, s:s?}", SMT_F_EXIT_CODE, exit_code,
				   SMT_F_STATE, smt_state_name(state), SMT_F_LEADER,
				   smt_plan_current_host(d->plan), SMT_F_FAILURE, failure,
				   SMT_F_SUMMARY, NULL);
	if (failure) {
		char *line = strndup(failure, strcspn(failure, "\n"));
		json_object_set_new(result, SMT_F_SUMMARY, json_string(line ? line : ""));
		free(line);
	}
	/* Kept for finish: the state and code are final from here on. */
	d->exit_code = exit_code;
	free(d->failure);
	d->failure = failure ? strdup(failure) : NULL;
	d->results_sent = 1;
	d->state_after_results = state;
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	uv_timer_start(&d->phase_timer, on_delivery_timeout, RESULT_DELIVERY_MS, 0);
	smt_peers_send_result(d->peers, result);
	json_decref(result);
}

/* ---- the job ---- */

/* What the job's STREAM (1 or 2) carries: mpirun's XML or the program's text. */
static enum smt_output_source job_source(const struct smt_daemon *d, int stream)
{
	if (is_mpi(d))
		return stream == 1 ? SMT_SRC_MPIRUN_STDOUT : SMT_SRC_MPIRUN_STDERR;
	return stream == 1 ? SMT_SRC_CHILD_STDOUT : SMT_SRC_CHILD_STDERR;
}

static void on_job_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct smt_daemon *d = ctx;

	smt_output_feed(d->output, job_source(d, stream), buf, len);
	/* The first rank table from mpirun makes the job "running". */
	if (d->state == SMT_STATE_LAUNCHING && smt_output_rank_count(d->output) > 0)
		smt_daemon_set_state(d, SMT_STATE_RUNNING);
}

static void on_job_eof(void *ctx, int stream)
{
	struct smt_daemon *d = ctx;

	smt_output_eof(d->output, job_source(d, stream));
}

static void on_job_done(void *ctx, const struct smt_job_status *st)
{
	struct smt_daemon *d = ctx;
	struct smt_report_input in = { 0 };
	char *text = NULL;
	size_t len;
	long oom_now;

	d->job_ended = 1;
	d->job_status = *st;
	/* No change is announced here: the next state (finishing or the
	 * final one) follows at once and carries the exit status with it. */

	/* A worker lost or of another job ended the job: that is the reason,
	 * not how mpirun took it. */
	if (d->peer_exit_code) {
		leader_end(d, SMT_STATE_FAILED, d->peer_exit_code, d->peer_failure);
		return;
	}
	if (!d->stop_signal && st->exited && st->code == 0 && !st->exec_errno) {
		leader_end(d, SMT_STATE_SUCCEEDED, SMT_EXIT_OK, NULL);
		return;
	}
	in.current_host = smt_plan_current_host(d->plan);
	in.mpi = is_mpi(d);
	in.exit_code = st->exited ? st->code : -1;
	in.term_signal = st->exited ? 0 : st->signo;
	in.stop_signal = d->stop_signal;
	in.exec_errno = st->exec_errno;
	in.program = smt_plan_rank_argv(d->plan)[0];
	in.workdir = smt_plan_workdir(d->plan);
	if (d->oom_kills >= 0 &&
	    smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &oom_now) == 0 &&
	    oom_now > d->oom_kills)
		in.oom_kill = 1;
	if (smt_report_build(d->output, &in, NULL, &text, &len) < 0)
		text = NULL;
	if (d->stop_signal)
		leader_end(d, SMT_STATE_STOPPED, 128 + d->stop_signal,
			   text ? text : "Stopped: smtd received a signal\n");
	else
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED,
			   text ? text : "JobFailed: the job failed\n");
	free(text);
}

static const struct smt_job_ops job_ops = {
	.output = on_job_output,
	.eof = on_job_eof,
	.done = on_job_done,
};

static int write_hostfile(struct smt_daemon *d)
{
	const char *contents = NULL;
	const char *path = smt_plan_hostfile(d->plan, &contents);
	int fd, rc = 0;

	if (path == NULL)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(contents);
	if (write(fd, contents, len) != (ssize_t)len)
		rc = -EIO;
	close(fd);
	return rc;
}

static void launch(struct smt_daemon *d)
{
	char *const *argv = smt_plan_argv(d->plan);
	char *const *rank = smt_plan_rank_argv(d->plan);
	char *const *envp = smt_plan_envp(d->plan);
	const char *cwd = smt_plan_workdir(d->plan);
	const char *bad = NULL;
	char text[2048];
	int rc;

	uv_timer_stop(&d->wait_timer);
	smt_daemon_set_state(d, SMT_STATE_LAUNCHING);
	/* A job given as `-- COMMAND` needs no code directory. */
	if (cwd && access(cwd, X_OK) < 0) {
		smt_info("code directory %s: %s; the job runs in smtd's working directory", cwd,
			 strerror(errno));
		cwd = NULL;
	}
	/* A missing or non-executable program is found here, with a clear
	 * reason, instead of in mpirun's output on every host. */
	rc = smt_spawn_check_program(rank[0], envp, cwd);
	if (rc < 0)
		bad = rank[0];
	else if (argv != rank && (rc = smt_spawn_check_program(argv[0], envp, cwd)) < 0)
		bad = argv[0];
	if (bad) {
		snprintf(text, sizeof(text), "%s: cannot execute %s on %s: %s (exit status %d)\n",
			 rc == -ENOENT ? "ProgramNotFound" : "ProgramNotExecutable", bad,
			 smt_plan_current_host(d->plan), strerror(-rc), smt_spawn_exec_status(-rc));
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}
	if (is_mpi(d) && d->opts->preload_path && access(d->opts->preload_path, R_OK) < 0)
		smt_warn("%s: %s: gethostname() in the ranks will return the machine's name; "
			 "install libsmthostname.so or give its path with --preload",
			 d->opts->preload_path, strerror(errno));
	rc = write_hostfile(d);
	if (rc < 0) {
		snprintf(text, sizeof(text), "LaunchFailed: cannot write the hostfile: %s\n",
			 strerror(-rc));
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}

	struct smt_job_config cfg = {
		.argv = argv,
		.envp = envp,
		.cwd = cwd,
		.forward_to_group = !is_mpi(d),
		.grace = d->opts->grace,
		.keep = smt_daemon_not_job,
		.keep_arg = d,
	};
	if (smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &d->oom_kills) < 0)
		d->oom_kills = -1;
	d->launch_time = smt_daemon_now();
	rc = smt_job_start(&d->loop, d->reaper, &cfg, &job_ops, d, &d->job);
	if (rc < 0) {
		snprintf(text, sizeof(text), "LaunchFailed: cannot start %s: %s\n", argv[0],
			 strerror(-rc));
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}
	smt_info("launched %s (pid %d)", argv[0], (int)smt_job_pid(d->job));
	/* A standalone program runs from here; mpirun once it has mapped. */
	if (!is_mpi(d))
		smt_daemon_set_state(d, SMT_STATE_RUNNING);
	if (d->peers)
		smt_peers_launched(d->peers);
	smt_daemon_changed(d);
}

/* ---- the workers ---- */

static void on_all_ready(void *ctx)
{
	struct smt_daemon *d = ctx;

	smt_info("all %zu workers are ready", smt_peers_count(d->peers));
	smt_daemon_changed(d);
	launch(d);
}

static void on_mismatch(void *ctx, size_t i, const char *what)
{
	struct smt_daemon *d = ctx;
	char text[2048];

	snprintf(text, sizeof(text),
		 "ConfigurationError: host %s is not part of this job as the leader %s sees it: %s; "
		 "give every host the same resourceconfig.json\n",
		 smt_peers_host(d->peers, i), smt_plan_current_host(d->plan), what);
	if (d->job) {
		/* Cannot happen before launch; after it, end the job the same way. */
		d->peer_exit_code = SMT_EXIT_CONFIG;
		free(d->peer_failure);
		d->peer_failure = strdup(text);
		smt_job_signal(d->job, SIGTERM);
		return;
	}
	leader_end(d, SMT_STATE_FAILED, SMT_EXIT_CONFIG, text);
}

/* What happens when a worker is lost: the job ends on every host. */
static void on_worker_lost(void *ctx, size_t i, const char *why)
{
	struct smt_daemon *d = ctx;
	char text[1024];

	snprintf(text, sizeof(text), "LostHost: worker %s was lost during the job: %s\n",
		 smt_peers_host(d->peers, i), why);
	smt_error("%.*s", (int)strcspn(text, "\n"), text);
	if (d->peer_exit_code == 0) {
		d->peer_exit_code = SMT_EXIT_PEER;
		d->peer_failure = strdup(text);
	}
	smt_daemon_changed(d);
	if (d->job && !d->job_ended)
		/* mpirun would wait for the lost host's daemon forever: the
		 * ranks here get TERM, mpirun is killed once they are gone,
		 * everything after the grace. */
		smt_job_abandon(d->job);
	else if (!d->job)
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_PEER, text);
}

static void on_news(void *ctx, size_t i, json_t *status)
{
	struct smt_daemon *d = ctx;
	const char *state = json_string_value(json_object_get(status, SMT_F_STATE));

	smt_debug("worker %s: %s", smt_peers_host(d->peers, i), state ? state : "?");
	smt_daemon_changed(d);
}

static const struct smt_peers_ops peers_ops = {
	.all_ready = on_all_ready,
	.mismatch = on_mismatch,
	.lost = on_worker_lost,
	.news = on_news,
	.results_delivered = on_results_delivered,
};

static void on_wait_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char missing[1024], text[1400];

	smt_peers_missing(d->peers, missing, sizeof(missing));
	snprintf(text, sizeof(text),
		 "PeersNotReady: workers %s did not become ready within %.1f s (--wait-timeout)\n",
		 missing, d->opts->wait_timeout);
	leader_end(d, SMT_STATE_FAILED, SMT_EXIT_PEER, text);
}

static int start_peers(struct smt_daemon *d)
{
	size_t n = smt_plan_dist_host_count(d->plan), nall = smt_plan_host_count(d->plan);
	const char **workers = calloc(n ? n : 1, sizeof(*workers));
	const char **all = calloc(nall ? nall : 1, sizeof(*all));
	size_t nw = 0;
	char channels[4096];
	int rc;

	/* Next to the control socket, whose directory is ours. */
	snprintf(channels, sizeof(channels), "%s.channels", d->opts->socket_path);
	if (workers == NULL || all == NULL) {
		free(workers);
		free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(smt_plan_dist_host(d->plan, i), smt_plan_current_host(d->plan)) != 0)
			workers[nw++] = smt_plan_dist_host(d->plan, i);
	for (size_t i = 0; i < nall; i++)
		all[i] = smt_plan_host(d->plan, i);
	struct smt_peers_config pc = {
		.hosts = workers,
		.nhosts = nw,
		.job_hosts = all,
		.njob_hosts = nall,
		.leader = smt_plan_current_host(d->plan),
		.ssh_path = d->opts->ssh_path,
		.smtctl_path = d->opts->smtctl_path,
		.remote_socket = d->opts->socket_path,
		.channel_socket = channels,
		.reaper = d->reaper,
		.peer_timeout = d->opts->peer_timeout,
	};
	rc = smt_peers_start(&d->loop, &pc, &peers_ops, d, &d->peers);
	free(workers);
	free(all);
	return rc;
}

void smt_leader_begin(struct smt_daemon *d)
{
	char text[512];

	if (!is_mpi(d) || smt_plan_dist_host_count(d->plan) <= 1) {
		launch(d);
		return;
	}
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_PEERS);
	int rc = start_peers(d);
	if (rc < 0) {
		if (rc == -ELIBACC || rc == -ELIBBAD)
			snprintf(text, sizeof(text), "InternalError: the channels to the workers need "
				 "libcurl, which cannot be loaded; install the libcurl4 package\n");
		else
			snprintf(text, sizeof(text), "InternalError: cannot open the channels to the "
				 "workers: %s\n", strerror(-rc));
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}
	uv_timer_start(&d->wait_timer, on_wait_timeout, (uint64_t)(d->opts->wait_timeout * 1000), 0);
}

void smt_leader_signal(struct smt_daemon *d, int signo)
{
	int stopping = signo != SIGUSR1 && signo != SIGUSR2;
	char text[256];

	if (d->job && !d->job_ended) {
		int rc = smt_job_signal(d->job, signo);
		if (rc < 0 && rc != -ESRCH)
			smt_warn("cannot forward the signal to the job: %s", strerror(-rc));
		return;
	}
	if (!stopping || d->job)
		return;
	snprintf(text, sizeof(text), "Stopped: smtd on %s received SIG%s before the job started\n",
		 smt_plan_current_host(d->plan),
		 smt_signal_name(signo) ? smt_signal_name(signo) : "?");
	leader_end(d, SMT_STATE_STOPPED, 128 + signo, text);
}

void smt_leader_close(struct smt_daemon *d)
{
	if (d->job) {
		smt_job_free(d->job);
		d->job = NULL;
	}
	if (d->peers) {
		smt_peers_close(d->peers);
		d->peers = NULL;
	}
}
