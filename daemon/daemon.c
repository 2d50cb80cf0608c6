/*
 * daemon.c - the event loop and the job's life cycle on this host.
 *
 * One struct smt_daemon owns the loop and everything on it: the reaper,
 * the signal handles, the job.  Its states follow SPEC §4; every
 * transition happens in a loop callback (a child's exit, a pipe's end, a
 * signal, a timer), never after a sleep.
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

#include "cgroup.h"
#include "daemon.h"
#include "job.h"
#include "log.h"
#include "reaper.h"
#include "resultfile.h"
#include "spawn.h"

static const int forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define NSIGNALS (sizeof(forwarded_signals) / sizeof(forwarded_signals[0]))

struct smt_daemon {
	uv_loop_t loop;
	struct smt_plan *plan;
	const struct smt_options *opts;
	struct smt_reaper *reaper;
	struct smt_job *job;
	uv_signal_t signals[NSIGNALS];
	enum smt_state state;
	int stop_signal;        /* first stopping signal smtd received */
	int exit_code;
	char *failure;          /* the failure text, once failed */
	double start_time;
	long oom_kills;         /* the memory cgroup's count at launch, or -1 */
};

static double now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void set_state(struct smt_daemon *d, enum smt_state state)
{
	if (d->state == state)
		return;
	smt_info("state %s -> %s", smt_state_name(d->state), smt_state_name(state));
	d->state = state;
}

static void close_all(struct smt_daemon *d)
{
	for (size_t i = 0; i < NSIGNALS; i++)
		if (!uv_is_closing((uv_handle_t *)&d->signals[i]))
			uv_close((uv_handle_t *)&d->signals[i], NULL);
	if (d->job) {
		smt_job_free(d->job);
		d->job = NULL;
	}
	if (d->reaper) {
		smt_reaper_close(d->reaper);
		d->reaper = NULL;
	}
}

/* The end of the job on this host: the result files, the final state and
 * the exit code.  TEXT is the failure report (NULL on success). */
static void finish(struct smt_daemon *d, enum smt_state state, int exit_code, const char *text)
{
	const char *root = smt_plan_root(d->plan);
	int rc;

	set_state(d, SMT_STATE_FINISHING);
	if (state == SMT_STATE_SUCCEEDED) {
		rc = smt_resultfile_success(root);
		if (rc < 0)
			smt_error("cannot write %s/output/success: %s", root, strerror(-rc));
	} else {
		free(d->failure);
		d->failure = strdup(text ? text : "Failed\n");
		rc = smt_resultfile_failure(root, d->failure, strlen(d->failure));
		if (rc == -EEXIST)
			smt_warn("%s/output/failure exists already; leaving it as it is", root);
		else if (rc < 0)
			smt_error("cannot write %s/output/failure: %s", root, strerror(-rc));
		char first[1024];
		snprintf(first, sizeof(first), "%.*s", (int)strcspn(d->failure, "\n"), d->failure);
		smt_error("%s", first);
	}
	d->exit_code = exit_code;
	set_state(d, state);
	close_all(d);
}

static void on_job_output(void *ctx, int stream, const char *buf, size_t len)
{
	(void)ctx;
	/* Placeholder until output.c: pass the bytes through unchanged. */
	int fd = stream == 1 ? 1 : 2;
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

static void on_job_done(void *ctx, const struct smt_job_status *st)
{
	struct smt_daemon *d = ctx;
	char text[2048];

	if (d->stop_signal) {
		const char *name = smt_signal_name(d->stop_signal);
		snprintf(text, sizeof(text),
			 "Stopped: smtd on %s received SIG%s and stopped the job\n",
			 smt_plan_current_host(d->plan), name ? name : "?");
		finish(d, SMT_STATE_STOPPED, 128 + d->stop_signal, text);
		return;
	}
	if (st->exec_errno) {
		snprintf(text, sizeof(text), "%s: cannot execute %s: %s (exit status %d)\n",
			 st->exec_errno == ENOENT ? "ProgramNotFound" : "ProgramNotExecutable",
			 smt_plan_argv(d->plan)[0], strerror(st->exec_errno),
			 smt_spawn_exec_status(st->exec_errno));
		finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}
	if (st->exited && st->code == 0) {
		finish(d, SMT_STATE_SUCCEEDED, SMT_EXIT_OK, NULL);
		return;
	}
	long oom_now;
	if (d->oom_kills >= 0 && smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &oom_now) == 0 &&
	    oom_now > d->oom_kills) {
		snprintf(text, sizeof(text),
			 "OutOfMemory: the kernel's OOM killer ended %ld process%s of the job on %s\n",
			 oom_now - d->oom_kills, oom_now - d->oom_kills == 1 ? "" : "es",
			 smt_plan_current_host(d->plan));
		finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return;
	}
	if (st->exited)
		snprintf(text, sizeof(text), "JobFailed: exited with code %d\n", st->code);
	else
		snprintf(text, sizeof(text), "JobFailed: killed by SIG%s\n",
			 smt_signal_name(st->signo) ? smt_signal_name(st->signo) : "?");
	finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
}

static const struct smt_job_ops job_ops = {
	.output = on_job_output,
	.done = on_job_done,
};

static void on_signal(uv_signal_t *h, int signo)
{
	struct smt_daemon *d = h->data;
	const char *name = smt_signal_name(signo);
	int stopping = signo != SIGUSR1 && signo != SIGUSR2;

	smt_info("received SIG%s", name ? name : "?");
	if (stopping && d->stop_signal == 0)
		d->stop_signal = signo;
	if (d->job) {
		int rc = smt_job_signal(d->job, signo);
		if (rc < 0 && rc != -ESRCH)
			smt_warn("cannot forward SIG%s to the job: %s", name, strerror(-rc));
		return;
	}
	if (stopping && !smt_state_is_final(d->state)) {
		char text[256];
		snprintf(text, sizeof(text),
			 "Stopped: smtd on %s received SIG%s before the job started\n",
			 smt_plan_current_host(d->plan), name ? name : "?");
		finish(d, SMT_STATE_STOPPED, 128 + signo, text);
	}
}

static int setup_signals(struct smt_daemon *d)
{
	/* As tini does: job control signals must not stop PID 1. */
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	/* A closed client socket or stdout must give EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < NSIGNALS; i++) {
		uv_signal_init(&d->loop, &d->signals[i]);
		d->signals[i].data = d;
		int rc = uv_signal_start(&d->signals[i], on_signal, forwarded_signals[i]);
		if (rc < 0)
			return rc;
		uv_unref((uv_handle_t *)&d->signals[i]);
	}
	return 0;
}

static int launch(struct smt_daemon *d)
{
	char *const *argv = smt_plan_argv(d->plan);
	char *const *rank = smt_plan_rank_argv(d->plan);
	char *const *envp = smt_plan_envp(d->plan);
	const char *cwd = smt_plan_workdir(d->plan);
	char text[2048];
	int rc;

	set_state(d, SMT_STATE_LAUNCHING);
	/* A job given as `-- COMMAND` needs no code directory. */
	if (cwd && access(cwd, X_OK) < 0) {
		smt_info("code directory %s: %s; the job runs in smtd's working directory", cwd,
			 strerror(errno));
		cwd = NULL;
	}
	/* Find a missing or non-executable rank program here, with a clear
	 * reason, instead of in mpirun's output on every host. */
	rc = smt_spawn_check_program(rank[0], envp, cwd);
	if (rc == 0 && argv[0] != rank[0])
		rc = smt_spawn_check_program(argv[0], envp, cwd);
	if (rc < 0) {
		const char *prog = smt_spawn_check_program(rank[0], envp, cwd) < 0 ? rank[0] : argv[0];
		snprintf(text, sizeof(text), "%s: cannot execute %s: %s (exit status %d)\n",
			 rc == -ENOENT ? "ProgramNotFound" : "ProgramNotExecutable", prog,
			 strerror(-rc), smt_spawn_exec_status(-rc));
		finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return 0;
	}

	struct smt_job_config cfg = {
		.argv = argv,
		.envp = envp,
		.cwd = cwd,
		.forward_to_group = smt_plan_role(d->plan) == SMT_ROLE_STANDALONE,
		.grace = smt_plan_options(d->plan)->grace,
	};
	if (smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &d->oom_kills) < 0)
		d->oom_kills = -1;
	rc = smt_job_start(&d->loop, d->reaper, &cfg, &job_ops, d, &d->job);
	if (rc < 0) {
		snprintf(text, sizeof(text), "LaunchFailed: cannot start %s: %s\n", argv[0],
			 strerror(-rc));
		finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
		return 0;
	}
	smt_info("launched %s (pid %d)", argv[0], (int)smt_job_pid(d->job));
	set_state(d, SMT_STATE_RUNNING);
	return 0;
}

int smt_daemon_run(struct smt_plan *plan)
{
	struct smt_daemon *d;
	int rc, code;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return SMT_EXIT_JOB_FAILED;
	d->plan = plan;
	d->opts = smt_plan_options(plan);
	d->start_time = now_s();
	d->exit_code = SMT_EXIT_JOB_FAILED;
	rc = uv_loop_init(&d->loop);
	if (rc < 0) {
		smt_error("cannot start the event loop: %s", uv_strerror(rc));
		free(d);
		return SMT_EXIT_JOB_FAILED;
	}
	rc = smt_reaper_new(&d->loop, &d->reaper);
	if (rc == 0)
		rc = setup_signals(d);
	if (rc < 0) {
		smt_error("cannot set up signal handling: %s", uv_strerror(rc));
		finish(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, "InternalError: signal set-up failed\n");
	} else {
		smt_info("%s on %s, %zu host%s, %ld process%s", smt_role_name(smt_plan_role(plan)),
			 smt_plan_current_host(plan), smt_plan_dist_host_count(plan),
			 smt_plan_dist_host_count(plan) == 1 ? "" : "s",
			 smt_plan_num_processes(plan),
			 smt_plan_num_processes(plan) == 1 ? "" : "es");
		launch(d);
	}
	uv_run(&d->loop, UV_RUN_DEFAULT);
	/* Let the close callbacks of what finish() closed run. */
	close_all(d);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	code = d->exit_code;
	rc = uv_loop_close(&d->loop);
	if (rc < 0)
		smt_error("internal error: handles left open at exit");
	free(d->failure);
	free(d);
	return code;
}
