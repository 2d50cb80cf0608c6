/*
 * leader.c - the leader's part of the job, and a standalone host's.
 *
 * Leader: start sshd if needed, wait until every worker is ready
 * (peers.c), launch mpirun (or torchrun), carry every rank's output - its
 * own host's and, fetched from the workers, every other's - and decide how
 * the job ended; then tell every worker and end here too.
 *
 * The job ends for one of these reasons, whichever comes first:
 *   - the launched command exits (mpirun when every rank has ended, or
 *     after it aborted the job);
 *   - a rank fails on its own, on any host: the others are ended at once
 *     (torchrun would not end them);
 *   - a stop: SIGTERM/INT/HUP/QUIT or `smtctl kill` here, passed to every
 *     worker so that every rank gets it from its own host with the grace;
 *   - a worker is lost (on_worker_lost below): every host ends its part,
 *     the failure names the lost host.
 * The result is decided when the job here is over and every worker's
 * output has arrived (its end carries its ranks' final state), so the
 * report names the first rank that failed, on whatever host, and the
 * leader's stdout is complete.  A standalone host runs the rank command
 * itself, with no peers and no mpirun.
 *
 * Why one file of this size: when the job ends and what its result is are
 * decided from the local job, every worker's news and the stall watchdog
 * together (maybe_decide, decide); they are read in one place.
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
#include "peers.h"
#include "prelaunch.h"
#include "safefile.h"
#include "smt_proto.h"
#include "spawn.h"
#include "strv.h"

/* The workers answer the result within this, or are not waited for. */
#define RESULT_DELIVERY_MS 6000
/* Once the job here is over, the workers' ends of output within the grace
 * and this. */
#define COLLECT_EXTRA_MS 5000
/* A failure ends the rest of the job this fast (SIGTERM, then SIGKILL). */
#define FAILURE_GRACE_S 1.0

struct leader {
	struct smt_peers *peers;
	int launched;
	int job_over;            /* the job on this host is over */
	int ending;              /* the job is ending everywhere */
	int peer_exit_code;      /* 3: a worker was lost; 2: one of another job */
	char *peer_failure;
	char *worker_failure;    /* a worker's command failed (torchrun) */
	char *worker_stopped;    /* a worker was stopped on its own host */
	int worker_stop_signal;
	char *stall_failure;     /* the job stalled: the failure text */
	int results_sent;        /* 1 while the workers are told, 2 after */
	int restart_asked;       /* smtctl restart: the next attempt, whatever the end */
	int restarting;          /* between two attempts (smtd(8) Restarts) */
	char *restart_summary;   /* why the last attempt ended */
	int prelaunch_done;      /* this host's pre-launch phase ended (and passed) */
	int all_ready;           /* every worker is ready, its phase ended */
	uint64_t begin_ms;       /* uv_now at the role's begin */
	uint64_t delivery_ms;    /* the workers' answers to the result within this */
	enum smt_state final_state;
	uv_timer_t wait_timer;   /* workers ready in time */
	uv_timer_t collect_timer; /* workers' output in time */
	uv_timer_t delivery_timer; /* the result delivered in time */
	uv_timer_t restart_timer; /* --restart-delay */
};

static struct leader *L(struct smt_daemon *d)
{
	return d->role_state;
}

static int is_mpi(const struct smt_daemon *d)
{
	return d->role_kind == SMT_ROLE_LEADER;
}

/* ---- the end ---- */

static void on_results_delivered(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);
	char *failure;

	uv_timer_stop(&l->delivery_timer);
	if (l->results_sent != 1)
		return;
	l->results_sent = 2;
	failure = d->failure ? strdup(d->failure) : NULL;
	smt_daemon_finish(d, l->final_state, d->exit_code, failure);
	free(failure);
}

static void on_delivery_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_warn("not every worker confirmed the result within %llu ms",
		 (unsigned long long)(L(d)->delivery_ms ? L(d)->delivery_ms : RESULT_DELIVERY_MS));
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
	struct leader *l = L(d);
	json_t *result;

	char *wrapped = NULL;

	if (l->results_sent || smt_state_is_final(d->state) || d->closing)
		return;
	uv_timer_stop(&l->collect_timer);
	uv_timer_stop(&l->restart_timer);
	l->restarting = 0;
	if (!l->peers || smt_peers_count(l->peers) == 0) {
		smt_daemon_finish(d, state, exit_code, failure);
		return;
	}
	/* The workers write the failure as the leader does, restarts told. */
	if (failure && state != SMT_STATE_SUCCEEDED &&
	    (wrapped = smt_daemon_failure_text(d, failure)))
		failure = wrapped;
	result = json_pack("{s:i, s:s, s:s, s:s?, s:s?}", SMT_F_EXIT_CODE, exit_code, SMT_F_STATE,
			   smt_state_name(state), SMT_F_LEADER, smt_plan_current_host(d->plan),
			   SMT_F_FAILURE, failure, SMT_F_SUMMARY, NULL);
	if (failure) {
		char *line = strndup(failure, strcspn(failure, "\n"));
		json_object_set_new(result, SMT_F_SUMMARY, json_string(line ? line : ""));
		free(line);
	}
	/* Kept for finish: the state and code are final from here on. */
	d->exit_code = exit_code;
	free(d->failure);
	d->failure = failure ? strdup(failure) : NULL;
	l->results_sent = 1;
	l->final_state = state;
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	uv_timer_start(&l->delivery_timer, on_delivery_timeout,
		       l->delivery_ms ? l->delivery_ms : RESULT_DELIVERY_MS, 0);
	smt_peers_send_result(l->peers, result);
	json_decref(result);
	free(wrapped);
}

static void launch(struct smt_daemon *d);

static int outputs_done(struct smt_daemon *d)
{
	struct leader *l = L(d);

	for (size_t i = 0; l->peers && i < smt_peers_count(l->peers); i++)
		if (!smt_peers_output_done(l->peers, i))
			return 0;
	return 1;
}

/* ---- restarts (smtd(8) Restarts) ---- */

static void on_restart_timer(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	if (!L(d)->restarting || d->closing)
		return;
	L(d)->restarting = 0;
	launch(d);
}

static void maybe_launch(struct smt_daemon *d);
static void leader_prelaunch_done(struct smt_daemon *d, int passed);

/* Every worker confirmed: its part of the last attempt is over, and its
 * preflight for the next one passed.  The launch once this host's passed
 * too (maybe_launch), after --restart-delay. */
static void on_attempt_ready(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);

	if (!l->restarting || l->results_sent || d->closing)
		return;
	l->all_ready = 1;
	maybe_launch(d);
}

/*
 * The next attempt begins: this host's part of the last one is forgotten
 * and every worker is asked to do the same, each host then running its
 * preflight again (smtd(8) Preflight; not the install: the code is installed once),
 * the workers' results coming back in the answers (peers.h); the launch
 * once every host passed (on_attempt_ready, maybe_launch).  From
 * the loop, not from inside the last attempt's end: the events still on
 * their way through the call stack (the command's exit after its rank's)
 * belong to the last attempt.
 */
static void on_restart_begin(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	struct leader *l = L(d);
	char *summary = l->restart_summary;
	json_t *msg;

	l->restart_summary = NULL;
	if (!l->restarting || l->results_sent || d->closing) {
		free(summary);
		return;
	}
	if (d->stop_signal) {
		/* Stopped as the last attempt ended: nothing more starts. */
		char *text = smt_failure_text(
			SMT_FAIL_STOPPED,
			"smtd on %s received SIG%s while the "
			"job was restarting; no further attempt starts",
			smt_plan_current_host(d->plan),
			smt_signal_name(d->stop_signal) ? smt_signal_name(d->stop_signal) : "?");
		l->restarting = 0;
		leader_end(d, SMT_STATE_STOPPED, 128 + d->stop_signal, text);
		free(text);
		free(summary);
		return;
	}
	if (smt_daemon_next_attempt(d, summary) < 0) {
		smt_error("cannot start the job's next attempt here; the job ends");
		l->restarting = 0;
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, summary);
		free(summary);
		return;
	}
	l->job_over = l->ending = l->launched = 0;
	l->prelaunch_done = l->all_ready = 0;
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_PEERS);
	if (smt_daemon_prelaunch(d, smt_restart_attempt(d->restart), leader_prelaunch_done) < 0) {
		l->restarting = 0;
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
				"cannot start the preflight of attempt %d",
				smt_restart_attempt(d->restart) + 1);
		free(summary);
		return;
	}
	msg = json_pack("{s:i, s:s}", SMT_F_ATTEMPT, smt_restart_attempt(d->restart), SMT_F_FAILURE,
			summary ? summary : "");
	free(summary);
	if (l->peers && msg)
		smt_peers_next_attempt(l->peers, msg);
	else
		on_attempt_ready(d);
	json_decref(msg);
}

/*
 * The attempt ended as KIND (TEXT): start the next one instead of ending,
 * when an operator asked for it or the kind and the count allow it - and
 * only when every host confirmed the end of its part (its end of output
 * came: nothing of the attempt runs anywhere) and none was lost.
 */
static int restart(struct smt_daemon *d, enum smt_failure_kind kind, const char *text)
{
	struct leader *l = L(d);
	/* Not a failure kind: the operator's word, in the attempt's record. */
	const char *asked = l->restart_asked ? "Restarted: on request (smtctl restart)" : NULL;
	const char *why = asked ? asked : text;

	if (d->stop_signal || l->peer_exit_code || !outputs_done(d) ||
	    (!l->restart_asked && !smt_restart_due(d->restart, kind)))
		return 0;
	free(l->restart_summary);
	l->restart_summary = strndup(why, strcspn(why, "\n"));
	if (!l->restart_summary)
		return 0;
	smt_warn("attempt %d ended (%s); restarting the job (%d restart%s of %ld so far)",
		 smt_restart_attempt(d->restart) + 1, l->restart_summary,
		 smt_restart_attempt(d->restart) + 1, smt_restart_attempt(d->restart) ? "s" : "",
		 smt_restart_max(d->restart));
	l->restart_asked = 0;
	free(l->worker_failure);
	free(l->stall_failure);
	free(l->worker_stopped);
	l->worker_failure = l->stall_failure = l->worker_stopped = NULL;
	l->restarting = 1;
	/* The last attempt's wait for its output is over. */
	uv_timer_stop(&l->collect_timer);
	uv_timer_start(&l->restart_timer, on_restart_begin, 0, 0);
	return 1;
}

/* Everything is known: how did the job end? */
static void decide(struct smt_daemon *d)
{
	struct leader *l = L(d);
	struct smt_hostjob_status st = { 0 };
	enum smt_failure_kind kind;
	char *text;

	if (l->results_sent || d->closing || l->restarting)
		return;
	smt_hostjob_status(d->job, &st);
	if (l->stall_failure && !d->stop_signal) {
		if (!restart(d, SMT_FAIL_STALLED, l->stall_failure))
			leader_end(d, SMT_STATE_FAILED, smt_failure_exit_code(SMT_FAIL_STALLED, 0),
				   l->stall_failure);
		return;
	}
	if (l->peer_exit_code && !d->stop_signal) {
		leader_end(d, SMT_STATE_FAILED, l->peer_exit_code, l->peer_failure);
		return;
	}
	/* A worker stopped on its own host ended the job: that is its cause,
	 * whatever mpirun or torchrun made of the ranks it lost. */
	if (l->worker_stopped && !d->stop_signal) {
		leader_end(d, SMT_STATE_STOPPED, 128 + l->worker_stop_signal, l->worker_stopped);
		return;
	}
	if (!d->stop_signal && st.launched && st.exited && st.code == 0 && !st.exec_errno &&
	    !smt_ranks_first_failure(smt_hostjob_ranks(d->job), 0) && !l->worker_failure) {
		leader_end(d, SMT_STATE_SUCCEEDED, SMT_EXIT_OK, NULL);
		return;
	}
	text = smt_daemon_report(d, 0, &kind);
	if (!d->stop_signal && l->worker_failure &&
	    (kind == SMT_FAIL_JOB_FAILED || (st.exited && st.code == 0))) {
		free(text);
		text = strdup(l->worker_failure);
		kind = SMT_FAIL_JOB_FAILED;
	}
	if (d->stop_signal)
		leader_end(d, SMT_STATE_STOPPED, 128 + d->stop_signal,
			   text ? text : "Stopped: smtd received a signal\n");
	else if (!restart(d, kind, text ? text : "JobFailed: the job failed\n"))
		leader_end(d, SMT_STATE_FAILED, smt_failure_exit_code(kind, 0),
			   text ? text : "JobFailed: the job failed\n");
	free(text);
}


static void on_collect_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;

	smt_warn("not every worker's output arrived in time; deciding with what is known");
	decide(d);
}

static void maybe_decide(struct smt_daemon *d)
{
	struct leader *l = L(d);

	if (!l->job_over || smt_stall_deciding(d))
		return;
	if (outputs_done(d)) {
		decide(d);
		return;
	}
	if (!uv_is_active((uv_handle_t *)&l->collect_timer))
		uv_timer_start(&l->collect_timer, on_collect_timeout,
			       (uint64_t)(d->opts->grace * 1000) + COLLECT_EXTRA_MS, 0);
}

/* The job cannot go on (a failure, a lost host): every host ends its part,
 * the ranks with SIGTERM, the rest once they are gone. */
static void end_everywhere(struct smt_daemon *d, double grace)
{
	struct leader *l = L(d);

	if (l->ending || d->stop_signal)
		return;
	l->ending = 1;
	smt_daemon_set_state(d, SMT_STATE_FINISHING);
	smt_hostjob_end(d->job, SIGTERM, grace);
	if (l->peers)
		smt_peers_end(l->peers, "end", SIGTERM, grace);
}

static void leader_fail(struct smt_daemon *d, int exit_code, const char *text)
{
	leader_end(d, SMT_STATE_FAILED, exit_code, text);
}

static struct smt_peers *leader_peers(struct smt_daemon *d)
{
	return L(d) ? L(d)->peers : NULL;
}

/* The job is stalled and every stack was read: it ends on every host. */
static void leader_stalled(struct smt_daemon *d, const char *text)
{
	struct leader *l = L(d);

	if (!l || l->stall_failure)
		return;
	l->stall_failure = strdup(text ? text : "Stalled: no progress\n");
	end_everywhere(d, FAILURE_GRACE_S);
	maybe_decide(d);
}

/* ---- the job here ---- */

static void leader_root_ended(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct smt_hostjob_status st;

	smt_hostjob_status(d->job, &st);
	if (d->state == SMT_STATE_RUNNING || d->state == SMT_STATE_LAUNCHING)
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
	/* A command that failed leaves nothing worth waiting for elsewhere;
	 * torchrun on the other hosts would not know. */
	if (!(st.exited && st.code == 0 && !st.exec_errno))
		end_everywhere(d, FAILURE_GRACE_S);
}

static void leader_rank_ended(void *ctx, const struct smt_rank *k)
{
	struct smt_daemon *d = ctx;
	int64_t end_ms = (int64_t)(k->end_time * 1000.0);

	if ((k->exit_code > 0 || k->signo || k->exec_errno) &&
	    !(k->signaled_ms && end_ms >= k->signaled_ms))
		end_everywhere(d, FAILURE_GRACE_S);
}

static void leader_job_done(void *ctx)
{
	struct smt_daemon *d = ctx;

	L(d)->job_over = 1;
	maybe_decide(d);
}

static int write_hostfile(struct smt_daemon *d)
{
	const char *contents = NULL;
	const char *path = smt_plan_hostfile(d->plan, &contents);
	int fd, rc = 0;

	if (path == NULL)
		return 0;
	/* Where the job may write too: never a FIFO, a link or another's file. */
	fd = smt_safefile_open(AT_FDCWD, path, SMT_SAFEFILE_TRUNCATE, 0644);
	if (fd < 0) {
		smt_error("hostfile %s: %s", path, smt_safefile_strerror(fd));
		return fd;
	}
	size_t len = strlen(contents);
	if (write(fd, contents, len) != (ssize_t)len)
		rc = -EIO;
	close(fd);
	return rc;
}

static void fail_launch(struct smt_daemon *d, char *text)
{
	leader_end(d, SMT_STATE_FAILED, SMT_EXIT_JOB_FAILED, text);
	free(text);
}

static void launch(struct smt_daemon *d)
{
	struct leader *l = L(d);
	char *const *argv = smt_plan_argv(d->plan);
	char *const *rank = smt_plan_rank_argv(d->plan);
	const char *cwd = smt_plan_workdir(d->plan);
	const char *bad = NULL;
	char **envp;
	int rc;

	uv_timer_stop(&l->wait_timer);
	smt_daemon_set_state(d, SMT_STATE_LAUNCHING);
	smt_daemon_attempt_starts(d);
	/* A job given as `-- COMMAND` needs no code directory. */
	if (cwd && access(cwd, X_OK) < 0) {
		smt_info("code directory %s: %s; the job runs in smtd's working directory", cwd,
			 strerror(errno));
		cwd = NULL;
	}
	/* A missing or non-executable program is found here, with a clear
	 * reason, instead of in mpirun's output on every host. */
	envp = smt_daemon_command_env(d);
	rc = smt_spawn_check_program(rank[0], envp, cwd);
	if (rc < 0)
		bad = rank[0];
	else if (argv != rank && (rc = smt_spawn_check_program(argv[0], envp, cwd)) < 0)
		bad = argv[0];
	else if (is_mpi(d) && (rc = smt_spawn_check_program(smt_plan_launcher_argv(d->plan)[0],
							     envp, cwd)) < 0)
		/* The rank launcher (smtctl) must be there, on every host. */
		bad = smt_plan_launcher_argv(d->plan)[0];
	if (bad) {
		free(envp);
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED,
				rc == -ENOENT ? SMT_FAIL_NOT_FOUND : SMT_FAIL_NOT_EXECUTABLE,
				"cannot execute %s on %s: %s (exit status %d)", bad,
				smt_plan_current_host(d->plan), strerror(-rc),
				smt_spawn_exec_status(-rc));
		return;
	}
	if (is_mpi(d) && d->opts->preload_path && access(d->opts->preload_path, R_OK) < 0)
		smt_warn("%s: %s: gethostname() in the ranks will return the machine's name; "
			 "install libsmthostname.so or give its path with --preload",
			 d->opts->preload_path, strerror(errno));
	rc = write_hostfile(d);
	if (rc < 0) {
		free(envp);
		fail_launch(d, smt_failure_text(SMT_FAIL_LAUNCH, "cannot write the hostfile: %s",
						smt_safefile_strerror(rc)));
		return;
	}
	if (smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &d->oom_kills) < 0)
		d->oom_kills = -1;
	rc = smt_hostjob_launch(d->job, argv, envp, cwd, !is_mpi(d));
	free(envp);
	if (rc < 0) {
		fail_launch(d, smt_failure_text(SMT_FAIL_LAUNCH, "cannot start %s: %s", argv[0],
						strerror(-rc)));
		return;
	}
	l->launched = 1;
	smt_info("launched %s (pid %d)", argv[0], (int)smt_hostjob_pid(d->job));
	/* A standalone program runs from here; mpirun once a rank runs. */
	if (!is_mpi(d))
		smt_daemon_set_state(d, SMT_STATE_RUNNING);
	if (l->peers)
		smt_peers_launched(l->peers);
	smt_stall_launched(d);
	smt_daemon_changed(d);
}

/* ---- the workers ---- */

/* ---- the pre-launch phase: every host's, before the launch ---- */

/* A host failed its pre-launch phase: the job ends on every host, before
 * any rank ran, with that host's own words. */
static void prelaunch_failed(struct smt_daemon *d, const char *failure)
{
	struct leader *l = L(d);
	char *text = failure && *failure ? strdup(failure) : NULL;

	if (l->launched || l->results_sent)
		return;
	uv_timer_stop(&l->wait_timer);
	smt_daemon_preflight_write(d);
	/* A worker whose sshd is not up yet is told when it is, within what
	 * is left of --wait-timeout: it would otherwise wait for a launch
	 * that never comes and end as LeaderNotReady. */
	uint64_t waited = uv_now(&d->loop) - l->begin_ms,
		 limit = (uint64_t)(d->opts->wait_timeout * 1000);
	l->delivery_ms = limit > waited + RESULT_DELIVERY_MS ? limit - waited : RESULT_DELIVERY_MS;
	if (text && text[strlen(text) - 1] != '\n') {
		char *nl = NULL;
		if (asprintf(&nl, "%s\n", text) < 0)
			nl = NULL;
		free(text);
		text = nl;
	}
	leader_end(d, SMT_STATE_FAILED, smt_failure_exit_code(SMT_FAIL_PREFLIGHT, 0),
		   text ? text : "PreflightFailed: a host failed its checks before the launch\n");
	free(text);
}

struct gpus_most {
	const char *type, *host;
	json_int_t gpus;
};

/* The entry of TYPE in MOST (N long), or N. */
static size_t gpus_type(const struct gpus_most *most, size_t n, const char *type)
{
	size_t k = 0;

	while (k < n && strcmp(most[k].type, type) != 0)
		k++;
	return k;
}

/* A host's pre-launch result R: its instance type (NULL: not known), its
 * GPUs in *GPUS. */
static const char *gpus_seen(json_t *r, json_int_t *gpus)
{
	*gpus = json_integer_value(json_object_get(r, SMT_F_GPUS));
	return json_string_value(json_object_get(r, SMT_F_INSTANCE_TYPE));
}

/*
 * Every host of an instance type sees as many GPUs as the others: for a
 * type whose count smtd does not know (preflight.h), the only check there
 * is.  The failure names the host that sees fewer.  0, or -1 with FAIL.
 */
static int gpus_differ(struct smt_daemon *d, char *fail, size_t len)
{
	/* The most GPUs seen per instance type, and the first host that saw
	 * them: one pass to learn, one to compare (a pair of every two hosts
	 * was a million at 1000 hosts, before the launch).  A job has few
	 * types: a short list. */
	struct gpus_most *most;
	size_t ntypes = 0, k;
	const char *h, *t;
	json_int_t g;
	json_t *r;
	int rc = 0;

	if (!d->opts->gpu_check || !d->preflight)
		return 0;
	most = calloc(json_object_size(d->preflight) + 1, sizeof(*most));
	if (!most)
		return 0;
	json_object_foreach(d->preflight, h, r) {
		if (!(t = gpus_seen(r, &g)))
			continue;
		k = gpus_type(most, ntypes, t);
		if (k == ntypes)
			ntypes++;
		else if (g <= most[k].gpus)
			continue;
		most[k] = (struct gpus_most){ t, h, g };
	}
	json_object_foreach(d->preflight, h, r) {
		if (!(t = gpus_seen(r, &g)))
			continue;
		k = gpus_type(most, ntypes, t);
		if (g >= most[k].gpus)
			continue;
		snprintf(fail, len, "%s: %lld GPUs visible, where %s of the same instance type %s "
			 "sees %lld", h, (long long)g, most[k].host, t, (long long)most[k].gpus);
		json_object_set_new(r, SMT_F_STATE, json_string("failed"));
		json_object_set_new(r, SMT_F_FAILURE, json_sprintf("PreflightFailed: %s", fail));
		rc = -1;
		break;
	}
	free(most);
	return rc;
}

/* Launch once this host's phase passed and every worker is ready with
 * its own phase passed (a failure ended the job already). */
static void maybe_launch(struct smt_daemon *d)
{
	struct leader *l = L(d);
	char fail[1024];

	if (!l->prelaunch_done || (l->peers && !l->all_ready) || l->launched || l->results_sent ||
	    d->stop_signal || smt_state_is_final(d->state))
		return;
	if (gpus_differ(d, fail, sizeof(fail)) < 0) {
		char *text = smt_failure_text(SMT_FAIL_PREFLIGHT, "%s", fail);

		prelaunch_failed(d, text);
		free(text);
		return;
	}
	smt_daemon_preflight_write(d);
	if (l->restarting) {
		double delay = smt_restart_delay(d->restart);

		if (uv_is_active((uv_handle_t *)&l->restart_timer))
			return;
		smt_info("every host is ready for attempt %d%s",
			 smt_restart_attempt(d->restart) + 1,
			 delay > 0 ? "; waiting --restart-delay" : "");
		uv_timer_start(&l->restart_timer, on_restart_timer, (uint64_t)(delay * 1000), 0);
		return;
	}
	launch(d);
}

static void leader_prelaunch_done(struct smt_daemon *d, int passed)
{
	struct leader *l = L(d);

	if (!passed) {
		prelaunch_failed(d, smt_prelaunch_failure(d->prelaunch));
		return;
	}
	l->prelaunch_done = 1;
	maybe_launch(d);
}

/* HOST's pre-launch result (borrowed): kept, and a failure ends the job. */
static void host_prelaunch(struct smt_daemon *d, const char *host, json_t *mine)
{
	const char *state = json_string_value(json_object_get(mine, SMT_F_STATE));
	json_t *known = d->preflight ? json_object_get(d->preflight, host) : NULL;

	if (!json_equal(known, mine))
		smt_daemon_preflight_set(d, host, mine);
	if (state && strcmp(state, "failed") == 0)
		prelaunch_failed(d, json_string_value(json_object_get(mine, SMT_F_FAILURE)));
}

/* A worker's status carries its pre-launch result. */
static void worker_prelaunch(struct smt_daemon *d, const char *host, json_t *status)
{
	json_t *list = json_object_get(status, SMT_F_PREFLIGHT), *r;
	size_t i;

	json_array_foreach(list, i, r)
		if (json_is_object(r) &&
		    strcmp(json_string_value(json_object_get(r, SMT_F_HOST)) ?: "", host) == 0) {
			host_prelaunch(d, host, r);
			return;
		}
}

/* Worker I's preflight for the next attempt ended: its answer to the
 * attempt's request. */
static void on_attempt_preflight(void *ctx, size_t i, json_t *result)
{
	struct smt_daemon *d = ctx;

	if (L(d)->restarting)
		host_prelaunch(d, smt_peers_host(L(d)->peers, i), result);
}

static void on_all_ready(void *ctx)
{
	struct smt_daemon *d = ctx;

	smt_info("all %zu workers are ready", smt_peers_count(L(d)->peers));
	L(d)->all_ready = 1;
	smt_daemon_changed(d);
	maybe_launch(d);
}

static void on_mismatch(void *ctx, size_t i, const char *what)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);
	char *text = smt_failure_text(SMT_FAIL_CONFIG,
		"host %s is not part of this job as the leader %s sees it: %s; give every host the "
		"same resourceconfig.json", smt_peers_host(l->peers, i),
		smt_plan_current_host(d->plan), what);

	if (l->launched) {
		/* Cannot happen before launch; after it, end the job the same way. */
		if (!l->peer_exit_code) {
			l->peer_exit_code = SMT_EXIT_CONFIG;
			l->peer_failure = text;
			text = NULL;
		}
		end_everywhere(d, FAILURE_GRACE_S);
	} else {
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_CONFIG, text);
	}
	free(text);
}

/* What happens when a worker is lost: the job ends on every host.  The
 * ranks here get SIGTERM and the grace; mpirun, which would wait for the
 * lost host's daemon forever, goes as soon as they have ended. */
static void on_worker_lost(void *ctx, size_t i, const char *why)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);
	char *text = smt_failure_text(SMT_FAIL_LOST_HOST, "worker %s was lost during the job: %s",
				      smt_peers_host(l->peers, i), why);

	if (text)
		smt_error("%.*s", (int)strcspn(text, "\n"), text);
	if (l->peer_exit_code == 0) {
		l->peer_exit_code = SMT_EXIT_PEER;
		l->peer_failure = text;
		text = NULL;
	}
	free(text);
	/* A line of its left half-written must not hold the others back. */
	smt_output_remote_lost(smt_hostjob_output(d->job), smt_peers_host(l->peers, i));
	smt_daemon_changed(d);
	if (!l->launched || l->restarting) {
		leader_end(d, SMT_STATE_FAILED, SMT_EXIT_PEER, l->peer_failure);
		return;
	}
	if (!l->ending && !d->stop_signal) {
		l->ending = 1;
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
		smt_hostjob_end(d->job, SIGTERM, d->opts->grace);
		smt_peers_end(l->peers, "end", SIGTERM, d->opts->grace);
	}
	maybe_decide(d);
}

/* A worker's news: its ranks as they are now. */
static void on_news(void *ctx, size_t i, json_t *status)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);
	json_t *ranks = json_object_get(json_object_get(status, SMT_F_JOB), SMT_F_RANKS);
	const char *host = smt_peers_host(l->peers, i);
	json_t *attempt = json_object_get(status, SMT_F_ATTEMPT);
	size_t k;
	json_t *o;

	/* Before a further attempt the answers to its request carry the
	 * workers' results (on_attempt_preflight), not the status. */
	if (!l->launched && !l->restarting)
		worker_prelaunch(d, host, status);
	/* News of another attempt than the one running (the last one's, on
	 * its way while the next began) says nothing of this one. */
	if (l->restarting || (json_is_integer(attempt) &&
			      json_integer_value(attempt) != smt_restart_attempt(d->restart)))
		ranks = NULL;
	if (json_is_array(ranks)) {
		smt_ranks_merge_remote(smt_hostjob_ranks(d->job), host, ranks);
		if (d->state == SMT_STATE_LAUNCHING && json_array_size(ranks))
			smt_daemon_set_state(d, SMT_STATE_RUNNING);
		/* A rank that failed on its own over there ends the job. */
		json_array_foreach(ranks, k, o) {
			const struct smt_rank *r = smt_ranks_find(smt_hostjob_ranks(d->job),
				(int)json_integer_value(json_object_get(o, SMT_F_RANK)));
			if (r && !r->local && r->state == SMT_RANK_EXITED)
				leader_rank_ended(d, r);
		}
	}
	smt_stacks_worker_news(d, status);
	smt_daemon_changed(d);
}

/* A worker's end of output: its ranks' final state and its command's. */
static void on_final(void *ctx, size_t i, json_t *final)
{
	struct smt_daemon *d = ctx;
	struct leader *l = L(d);
	const char *host = smt_peers_host(l->peers, i);
	json_t *cmd = json_object_get(final, SMT_F_COMMAND);
	json_t *code = json_object_get(cmd, SMT_F_EXIT_CODE),
	       *sig = json_object_get(cmd, SMT_F_SIGNAL),
	       *stopped = json_object_get(final, SMT_F_STOPPED);

	smt_ranks_merge_remote(smt_hostjob_ranks(d->job), host,
			       json_object_get(final, SMT_F_RANKS));
	smt_debug("worker %s: its output is complete", host);
	if (!l->worker_stopped && !d->stop_signal && json_is_string(stopped)) {
		int signo = smt_signal_parse(json_string_value(stopped));
		l->worker_stop_signal = signo > 0 ? signo : SIGTERM;
		l->worker_stopped = smt_failure_text(
			SMT_FAIL_STOPPED,
			"smtd on %s received SIG%s and stopped the job's ranks there; the job "
			"cannot go on without them", host, json_string_value(stopped));
		end_everywhere(d, FAILURE_GRACE_S);
	}
	if (!l->worker_failure && ((json_is_integer(code) && json_integer_value(code) != 0) ||
				   json_is_string(sig))) {
		l->worker_failure = json_is_string(sig) ?
			smt_failure_text(SMT_FAIL_MPIRUN_KILLED,
					 "torchrun on %s was killed by SIG%s", host,
					 json_string_value(sig)) :
			smt_failure_text(SMT_FAIL_JOB_FAILED, "torchrun on %s exited with code %d",
					 host, (int)json_integer_value(code));
		end_everywhere(d, FAILURE_GRACE_S);
	}
	smt_daemon_changed(d);
	maybe_decide(d);
}

static int on_batch(void *ctx, size_t i, const char *host, char *body, size_t len,
		    void (*done)(void *arg, int rc, json_t *final), void *arg)
{
	struct smt_daemon *d = ctx;

	return smt_output_remote(smt_hostjob_output(d->job), i, host, body, len, done, arg);
}

static const struct smt_peers_ops peers_ops = {
	.all_ready = on_all_ready,
	.mismatch = on_mismatch,
	.lost = on_worker_lost,
	.news = on_news,
	.results_delivered = on_results_delivered,
	.attempt_ready = on_attempt_ready,
	.attempt_preflight = on_attempt_preflight,
	.batch = on_batch,
	.final = on_final,
};

static void on_wait_timeout(uv_timer_t *t)
{
	struct smt_daemon *d = t->data;
	char missing[1024];

	smt_peers_missing(L(d)->peers, missing, sizeof(missing));
	smt_daemon_fail(d, SMT_EXIT_PEER, SMT_FAIL_PEERS_NOT_READY,
			"workers %s did not become ready within %.1f s (--wait-timeout)", missing,
			d->opts->wait_timeout);
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
		.tcp = d->opts->channels == SMT_CHANNELS_TCP,
		.oneshots = d->opts->channel_requests > 0 ? (unsigned)d->opts->channel_requests : 0,
	};
	rc = smt_peers_start(&d->loop, &pc, &peers_ops, d, &L(d)->peers);
	free(workers);
	free(all);
	return rc;
}

static void leader_begin(struct smt_daemon *d)
{
	struct leader *l = smt_daemon_role_state(d, sizeof(*l));

	if (!l)
		return;
	l->begin_ms = uv_now(&d->loop);
	uv_timer_init(&d->loop, &l->wait_timer);
	uv_timer_init(&d->loop, &l->collect_timer);
	uv_timer_init(&d->loop, &l->delivery_timer);
	uv_timer_init(&d->loop, &l->restart_timer);
	l->wait_timer.data = l->collect_timer.data = l->delivery_timer.data = d;
	l->restart_timer.data = d;
	/* This host's phase runs while the workers become ready (and run
	 * theirs). */
	int rc = smt_daemon_begin_prelaunch(d, leader_prelaunch_done);
	if (rc < 0)
		return;
	if (!is_mpi(d) || smt_plan_dist_host_count(d->plan) <= 1)
		return;
	smt_daemon_set_state(d, SMT_STATE_WAITING_FOR_PEERS);
	rc = start_peers(d);
	if (rc < 0) {
		if (rc == -ELIBACC || rc == -ELIBBAD)
			smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
					"the channels to the workers need libcurl, which cannot "
					"be loaded; install the libcurl4 package");
		else
			smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
					"cannot open the channels to the workers: %s",
					strerror(-rc));
		return;
	}
	uv_timer_start(&l->wait_timer, on_wait_timeout, (uint64_t)(d->opts->wait_timeout * 1000),
		       0);
}

static void leader_signal(struct smt_daemon *d, int signo)
{
	struct leader *l = L(d);
	char *text;

	if (!l)
		return;
	if (!smt_daemon_stopping_signal(signo)) {
		if (l->launched) {
			smt_hostjob_signal(d->job, signo);
			if (l->peers)
				smt_peers_end(l->peers, "signal", signo, 0);
		}
		return;
	}
	if (l->launched && !smt_hostjob_done(d->job)) {
		smt_daemon_set_state(d, SMT_STATE_FINISHING);
		smt_hostjob_stop(d->job, signo, d->opts->grace);
		if (l->peers)
			smt_peers_end(l->peers, "stop", signo, d->opts->grace);
		return;
	}
	if (l->launched)
		return;
	/* Between two attempts nothing runs: nothing more starts. */
	text = smt_failure_text(
		SMT_FAIL_STOPPED, "smtd on %s received SIG%s %s", smt_plan_current_host(d->plan),
		smt_signal_name(signo) ? smt_signal_name(signo) : "?",
		l->restarting ? "while the job was restarting; no further attempt starts" :
				"before the job started");
	leader_end(d, SMT_STATE_STOPPED, 128 + signo, text);
	free(text);
}

/* smtctl restart: the running job ends on every host as at a failure,
 * with the whole grace, and its next attempt starts (decide, restart). */
static int leader_restart(struct smt_daemon *d, json_t **reply)
{
	struct leader *l = L(d);

	if (!l || !l->launched || l->ending || l->restarting || l->results_sent ||
	    d->stop_signal || smt_state_is_final(d->state)) {
		*reply = json_pack("{s:s}", SMT_F_ERROR,
				   "no running job to restart (it is starting, "
				   "ending or restarting)");
		return 409;
	}
	smt_warn("control API: restart of the job requested (attempt %d ends)",
		 smt_restart_attempt(d->restart) + 1);
	l->restart_asked = 1;
	end_everywhere(d, d->opts->grace);
	*reply = json_pack("{s:i}", SMT_F_ATTEMPT, smt_restart_attempt(d->restart) + 1);
	return 202;
}

static int leader_host_ready(struct smt_daemon *d, const char *host)
{
	struct leader *l = L(d);

	if (strcmp(host, smt_plan_current_host(d->plan)) == 0)
		return d->state != SMT_STATE_STARTING;
	for (size_t k = 0; l && l->peers && k < smt_peers_count(l->peers); k++)
		if (strcmp(smt_peers_host(l->peers, k), host) == 0)
			return smt_peers_ready(l->peers, k);
	return 0;
}

static void leader_peer_counts(struct smt_daemon *d, size_t *ready, size_t *all)
{
	struct leader *l = L(d);

	*ready = l && l->peers ? smt_peers_ready_count(l->peers) : 0;
	*all = l && l->peers ? smt_peers_count(l->peers) : 0;
}

static void leader_close(struct smt_daemon *d)
{
	struct leader *l = L(d);

	if (!l)
		return;
	if (l->peers) {
		smt_output_remote_cancel(smt_hostjob_output(d->job), NULL, NULL);
		smt_peers_close(l->peers);
		l->peers = NULL;
	}
	uv_close((uv_handle_t *)&l->wait_timer, NULL);
	uv_close((uv_handle_t *)&l->collect_timer, NULL);
	uv_close((uv_handle_t *)&l->delivery_timer, NULL);
	uv_close((uv_handle_t *)&l->restart_timer, NULL);
	free(l->peer_failure);
	free(l->worker_failure);
	free(l->stall_failure);
	free(l->worker_stopped);
	free(l->restart_summary);
	/* The timers' memory goes once their close callbacks ran: with the
	 * daemon, after the loop. */
}

static const struct smt_hostjob_ops leader_job_ops = {
	.changed = smt_daemon_job_changed,
	.root_ended = leader_root_ended,
	.rank_ended = leader_rank_ended,
	.done = leader_job_done,
};

const struct smt_role_ops smt_leader_role = {
	.name = "leader",
	.decides = 1,
	.begin = leader_begin,
	.signal = leader_signal,
	.restart = leader_restart,
	.job = &leader_job_ops,
	.host_ready = leader_host_ready,
	.peer_counts = leader_peer_counts,
	.peers = leader_peers,
	.fail = leader_fail,
	.stalled = leader_stalled,
	.close = leader_close,
};
