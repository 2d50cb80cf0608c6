/*
 * daemon.c - the event loop and what every host has: signals, the control
 * socket, sshd, the job on this host, and the end of the job here (the
 * result files, the final state, the exit code).
 *
 * One struct smt_daemon (daemon_int.h) owns the loop and everything on it.
 * Its states follow smtd(8) Roles; every transition happens in a loop callback -
 * a child's exit, a pipe's end, a signal, a request, a timer - never after
 * a sleep.  What a leader (or a standalone host) does is in leader.c, what
 * a worker does in worker.c: the role table of daemon_int.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include "cgroup.h"
#include "daemon.h"
#include "daemon_int.h"
#include "log.h"
#include "install.h"
#include "notify.h"
#include "prelaunch.h"
#include "rankd.h"
#include "resultfile.h"
#include "safefile.h"
#include "shellwords.h"
#include "strv.h"

static const int forwarded_signals[SMT_NSIGNALS] = {
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
};

double smt_daemon_now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

int smt_daemon_stopping_signal(int signo)
{
	return signo == SIGTERM || signo == SIGINT || signo == SIGHUP || signo == SIGQUIT;
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
 * channels, stack readers - are watched by the reaper; the job's command is
 * the one watched child that is the job's.
 */
int smt_daemon_not_job(void *arg, pid_t pid)
{
	struct smt_daemon *d = arg;

	if (d->job && pid == smt_hostjob_pid(d->job))
		return 0;
	return pid == smt_sshd_pid(d->sshd) || smt_reaper_watched(d->reaper, pid);
}

int smt_daemon_oom(struct smt_daemon *d)
{
	long now;

	return d->oom_kills >= 0 &&
	       smt_cgroup_oom_kills("/sys/fs/cgroup", "/proc/self/cgroup", &now) == 0 &&
	       now > d->oom_kills;
}

char *smt_daemon_report(struct smt_daemon *d, int local_only, enum smt_failure_kind *kind)
{
	struct smt_hostjob_status st = { 0 };
	struct smt_report_input in = { 0 };
	struct smt_report r;
	char *text = NULL;
	size_t len;

	if (d->job)
		smt_hostjob_status(d->job, &st);
	in.current_host = smt_plan_current_host(d->plan);
	in.command = smt_plan_launcher_name(d->plan);
	in.exit_code = st.exited ? st.code : -1;
	in.term_signal = st.exited ? 0 : st.signo;
	in.stop_signal = d->stop_signal;
	in.exec_errno = st.exec_errno;
	in.program = smt_plan_rank_argv(d->plan)[0];
	in.workdir = smt_plan_workdir(d->plan);
	in.oom_kill = smt_daemon_oom(d);
	in.msgs = d->job ? smt_output_msgs(smt_hostjob_output(d->job)) : NULL;
	in.ranks = d->job ? smt_hostjob_ranks(d->job) : NULL;
	in.local_only = local_only;
	smt_report_analyse(&in, &r);
	if (kind)
		*kind = r.kind;
	if (smt_report_build(&in, &r, &text, &len) < 0)
		return NULL;
	return text;
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

static void close_api(void *arg)
{
	struct smt_daemon *d = arg;

	if (d->api) {
		struct smt_api *api = d->api;
		d->api = NULL;
		smt_api_close(api, on_api_closed, d);
	} else {
		on_api_closed(d);
	}
}

static void on_job_closed(void *arg)
{
	close_api(arg);
}

/* Close every handle, so that the loop ends. */
static void close_all(struct smt_daemon *d)
{
	d->closing = 1;
	for (size_t i = 0; i < SMT_NSIGNALS; i++)
		if (!uv_is_closing((uv_handle_t *)&d->signals[i]))
			uv_close((uv_handle_t *)&d->signals[i], NULL);
	close_timer(&d->watchdog_timer);
	smt_stall_close(d);
	smt_prelaunch_close(d->prelaunch);
	d->prelaunch = NULL;
	if (d->role->close)
		d->role->close(d);
	if (d->job)
		smt_hostjob_close(d->job, on_job_closed, d);
	else
		close_api(d);
}

static void first_line(const char *text, char **out)
{
	free(*out);
	*out = strndup(text, strcspn(text, "\n"));
}

/* stdout is written by the thread pool: everything the ranks said gets
 * out before the daemon exits. */
static void on_flushed(void *arg)
{
	close_all(arg);
}

void smt_daemon_finish(struct smt_daemon *d, enum smt_state state, int exit_code,
		       const char *failure)
{
	const char *root = smt_plan_root(d->plan);
	int rc;

	if (smt_state_is_final(d->state) || d->closing)
		return;
	if (d->restart && smt_restart_marked(d->restart)) {
		smt_restart_ended(d->restart, smt_daemon_now(),
				  state == SMT_STATE_SUCCEEDED ? NULL
				  : failure ? failure : "JobFailed: the job failed", NULL);
		smt_restart_write(d->restart, root);
	}
	if (state == SMT_STATE_SUCCEEDED) {
		rc = smt_resultfile_success(root);
		if (rc < 0)
			smt_error("cannot write %s/output/success: %s", root, strerror(-rc));
	} else {
		const char *given = failure ? failure : "JobFailed: the job failed\n";
		char *wrapped = smt_daemon_failure_text(d, given);
		if (wrapped || d->failure != given) {
			char *keep = wrapped ? wrapped : strdup(given);
			free(d->failure);
			d->failure = keep;
		}
		const char *text = d->failure ? d->failure : given;
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
	if (d->job)
		smt_output_flush(smt_hostjob_output(d->job), on_flushed, d);
	else
		close_all(d);
}

/* ---- attempts (smtd(8) Restarts) ---- */

static void set_attempt_env(struct smt_daemon *d)
{
	int k = smt_restart_attempt(d->restart);
	json_t *env = json_object_get(d->launcher_env, SMT_F_ENV);

	snprintf(d->restart_env, sizeof(d->restart_env), "SMTD_RESTART_COUNT=%d", k);
	if (env)
		json_object_set_new(env, "SMTD_RESTART_COUNT", json_sprintf("%d", k));
}

void smt_daemon_attempt_starts(struct smt_daemon *d)
{
	char line[256];

	if (d->attempt_started || !d->restart)
		return;
	d->attempt_started = 1;
	smt_restart_started(d->restart, smt_daemon_now());
	if (!smt_restart_marked(d->restart))
		return;
	smt_restart_mark_line(d->restart, smt_plan_current_host(d->plan), line, sizeof(line));
	smt_info("%s", line);
	smt_output_mark(smt_hostjob_output(d->job), smt_restart_attempt(d->restart), line);
	smt_restart_write(d->restart, smt_plan_root(d->plan));
}

/* "attempt-K" under stacks/: where attempt K's stacks go, when attempts are marked. */
static void attempt_dir(int attempt, char *buf, size_t len)
{
	snprintf(buf, len, "attempt-%d", attempt);
}

int smt_daemon_next_attempt(struct smt_daemon *d, const char *summary)
{
	char dir[32], stacks[48];
	int k = smt_restart_attempt(d->restart), rc;

	attempt_dir(k, dir, sizeof(dir));
	snprintf(stacks, sizeof(stacks), "stacks/%s", dir);
	smt_restart_ended(d->restart, smt_daemon_now(), summary,
			  summary && strncmp(summary, "Stalled", 7) == 0 ? stacks : NULL);
	rc = smt_hostjob_next_attempt(d->job);
	if (rc < 0)
		return rc;
	if (smt_restart_next(d->restart) < 0)
		return -ENOMEM;
	attempt_dir(k + 1, dir, sizeof(dir));
	smt_hostjob_set_stacks_dir(d->job, dir);
	smt_stall_next_attempt(d);
	set_attempt_env(d);
	d->attempt_started = 0;
	smt_restart_write(d->restart, smt_plan_root(d->plan));
	return 0;
}

char *smt_daemon_failure_text(struct smt_daemon *d, const char *text)
{
	char suffix[64];
	int k = d->restart ? smt_restart_attempt(d->restart) : 0;

	snprintf(suffix, sizeof(suffix), " (attempt %d of %d)", k + 1, k + 1);
	/* Once: the leader's text reaches the workers with it already. */
	if (k == 0 || (strstr(text, suffix) && strstr(text, suffix) < text + strcspn(text, "\n")))
		return strdup(text);
	return smt_restart_failure(d->restart, text);
}

/* sshd comes first on every host (smtd(8) Roles); then the role begins. */
static void on_sshd(void *arg, int up)
{
	struct smt_daemon *d = arg;

	if (up < 0) {
		smt_daemon_fail(
			d, SMT_EXIT_CONFIG, SMT_FAIL_SSHD,
			"sshd is needed for a job of several hosts but %s cannot be started: "
			"%s; install the openssh-server package",
			d->opts->sshd_path, strerror(-up));
		return;
	}
	d->role->begin(d);
}

static void start_sshd(struct smt_daemon *d)
{
	struct smt_sshd_config sc = {
		.start = d->opts->sshd_mode == SMT_SSHD_ALWAYS ? 1 :
			d->opts->sshd_mode == SMT_SSHD_NEVER   ? 0 :
								 -1,
		.sshd_path = d->opts->sshd_path,
		.config_file = d->opts->sshd_config,
		/* A program smtd runs itself needs no other host. */
		.nhosts = smt_plan_launcher_name(d->plan) ? smt_plan_dist_host_count(d->plan) : 1,
	};

	if (smt_sshd_start(&d->loop, d->reaper, &sc, on_sshd, d, &d->sshd) < 0)
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
				"out of memory starting sshd");
}

/*
 * The job fails here with KIND and the printf-formatted rest (the one way
 * smtd words a failure it found itself, report.h), and EXIT_CODE: through
 * the role's own end once it has begun (the leader tells its workers),
 * else this host's end.
 */
void smt_daemon_fail(struct smt_daemon *d, int exit_code, enum smt_failure_kind kind,
		     const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	text = smt_failure_vtext(kind, fmt, ap);
	va_end(ap);
	if (d->role->fail && d->role_state)
		d->role->fail(d, exit_code, text);
	else
		smt_daemon_finish(d, SMT_STATE_FAILED, exit_code, text);
	free(text);
}

/* The one way in for a signal, whether smtd received it or smtctl kill
 * asked for it (smtd(8) SIGNALS): the first stopping one is kept, and the
 * role passes it on. */
void smt_daemon_signal(struct smt_daemon *d, int signo, const char *from)
{
	const char *name = smt_signal_name(signo);

	smt_info("%s SIG%s", from, name ? name : "?");
	if (smt_daemon_stopping_signal(signo) && d->stop_signal == 0)
		d->stop_signal = signo;
	if (d->role->signal)
		d->role->signal(d, signo);
}

static void on_signal(uv_signal_t *h, int signo)
{
	smt_daemon_signal(h->data, signo, "received");
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

	smt_debug("reaped process %d", (int)pid);
	if (d->job)
		smt_hostjob_reaped(d->job, pid, wstatus);
}

/* On failure *TEXT (allocated) says which listener and why, for the failure file. */
static int setup_api(struct smt_daemon *d, char **text)
{
	int rc = smt_api_new(&d->loop, &smt_daemon_api_ops, d, &d->api);

	if (rc == 0)
		rc = smt_api_listen_unix(d->api, d->opts->socket_path, d->opts->socket_group);
	if (rc < 0) {
		smt_error("cannot serve the control API on %s: %s", d->opts->socket_path,
			  strerror(-rc));
		*text = smt_failure_text(SMT_FAIL_CONFIG, "cannot serve the control socket %s: %s; "
					 "give a path in a directory smtd may write",
					 d->opts->socket_path, strerror(-rc));
		return rc;
	}
	if (d->opts->health_listen) {
		rc = smt_api_listen_tcp(d->api, d->opts->health_listen);
		if (rc < 0) {
			smt_error("cannot serve health probes on %s: %s", d->opts->health_listen,
				  strerror(-rc));
			*text = smt_failure_text(
				SMT_FAIL_CONFIG,
				"--health-listen %s: cannot listen "
				"there: %s; give a free port on an address of this host",
				d->opts->health_listen, strerror(-rc));
			return rc;
		}
	}
	if (d->role_kind == SMT_ROLE_WORKER && d->opts->channels == SMT_CHANNELS_TCP) {
		char why[256];

		/* Not fatal: the leader's ssh still reaches this host, at the
		 * price of an ssh process per channel on the leader. */
		if (smt_tcpchannel_open(d->api, smt_plan_iface(d->plan), d->opts->peer_timeout,
					&d->channel, why, sizeof(why)) < 0)
			smt_warn("no TCP channel for the leader: %s; its channels to this host go "
				 "through ssh", why);
		else
			smt_info("TCP channel for the leader on %s port %d", d->channel.address,
				 d->channel.port);
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

/* ---- the job on this host ---- */

void smt_daemon_job_changed(void *ctx)
{
	struct smt_daemon *d = ctx;

	/* The job runs once a rank does. */
	if (d->state == SMT_STATE_LAUNCHING && smt_ranks_local(smt_hostjob_ranks(d->job)) > 0)
		smt_daemon_set_state(d, SMT_STATE_RUNNING);
	smt_daemon_changed(d);
}

/*
 * The plan's variables besides SM_* (plan.c's job_vars: PYTHONPATH, the
 * PyTorch container's, ...) as this host's defaults, over the image's
 * own, under mpirun's -x; CURRENT_HOST is this host's and wins.
 */
static void plan_defaults(struct smt_daemon *d, json_t *set, json_t *dflt)
{
	char *const *envp = smt_plan_envp(d->plan);

	for (char *const *n = smt_plan_env_names(d->plan); n && *n; n++) {
		const char *v = smt_env_get(envp, *n);

		if (!v || strncmp(*n, "SM_", 3) == 0 || strcmp(*n, "SMTD_RESOURCE_CONFIG") == 0)
			continue;
		json_object_set_new(strcmp(*n, "CURRENT_HOST") == 0 ? set : dflt, *n,
				    json_string(v));
	}
}

/*
 * What every rank's launcher gives its program: this host's own SM_*
 * variables and the job's mark (they win), and the environment the image
 * gave smtd (smtd(8) ENVIRONMENT), under the job's own variables from mpirun's -x.
 */
static json_t *stdout_preload(struct smt_daemon *d);

static json_t *launcher_env(struct smt_daemon *d)
{
	static const char *const not_for_ranks[] = {
		"NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID",
		"LISTEN_FDNAMES", "INVOCATION_ID", "JOURNAL_STREAM", "SHLVL", "_", "PWD", "OLDPWD",
		NULL,
	};
	json_t *set = json_object(), *dflt = json_object();
	extern char **environ;

	for (char *const *e = smt_plan_envp(d->plan); e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char *name;
		if (!eq)
			continue;
		if (strncmp(*e, "SM_", 3) != 0 && strncmp(*e, "SMTD_RESOURCE_CONFIG=", 21) != 0)
			continue;
		name = strndup(*e, (size_t)(eq - *e));
		if (name)
			json_object_set_new(set, name, json_string(eq + 1));
		free(name);
	}
	if (d->job) {
		const char *mark = smt_hostjob_mark(d->job);
		const char *eq = strchr(mark, '=');
		char *name = strndup(mark, (size_t)(eq - mark));
		if (name)
			json_object_set_new(set, name, json_string(eq + 1));
		free(name);
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		int skip = 0;
		char *name;
		if (!eq || strncmp(*e, "SMTD_", 5) == 0)
			continue;
		name = strndup(*e, (size_t)(eq - *e));
		if (!name)
			continue;
		for (const char *const *n = not_for_ranks; *n; n++)
			if (strcmp(*n, name) == 0)
				skip = 1;
		if (!skip && !json_object_get(set, name))
			json_object_set_new(dflt, name, json_string(eq + 1));
		free(name);
	}
	plan_defaults(d, set, dflt);
	/* Python ranks print every thread's stack on a fatal signal: the
	 * failure names the crashing frame (crash.h), and a stalled job's
	 * ranks show where they waited when smtd aborts them (stall.c).
	 * Unless the job or the image set the variable, to any value. */
	if (!json_object_get(dflt, "PYTHONFAULTHANDLER"))
		json_object_set_new(dflt, "PYTHONFAULTHANDLER", json_string("1"));
	return json_pack("{s:o, s:o, s:o*}", SMT_F_ENV, set, SMT_F_ENV_DEFAULT, dflt,
			 SMT_F_STDOUT_PRELOAD, stdout_preload(d));
}

/* The library that line-buffers C's stdout in the ranks (rank.c), when
 * their stdout is a pipe and it is there; without it a warning, once. */
static json_t *stdout_preload(struct smt_daemon *d)
{
	const char *path = smt_plan_stdout_preload(d->plan);

	if (!path)
		return NULL;
	if (access(path, R_OK) < 0) {
		smt_warn("%s: %s: C programs whose stdout is a pipe to smtd will hold their "
			 "lines until 4 KiB; install libsmtlinebuf.so in the directory of "
			 "libsmthostname.so (--preload)",
			 path, strerror(errno));
		return NULL;
	}
	return json_string(path);
}

/* A standalone program is its own rank (no launcher): LD_PRELOAD with the
 * library that line-buffers its stdout first, as rank.c gives a rank. */
static int standalone_preload(struct smt_daemon *d)
{
	const char *lib = json_string_value(json_object_get(d->launcher_env, SMT_F_STDOUT_PRELOAD));
	const char *old = smt_env_get(smt_plan_envp(d->plan), "LD_PRELOAD");
	int rc;

	if (!lib)
		return 0;
	if (old && *old)
		rc = asprintf(&d->cmd_preload, "LD_PRELOAD=%s:%s", lib, old);
	else
		rc = asprintf(&d->cmd_preload, "LD_PRELOAD=%s", lib);
	if (rc < 0) {
		d->cmd_preload = NULL;
		return -ENOMEM;
	}
	return 0;
}

char **smt_daemon_command_env(struct smt_daemon *d)
{
	char *const *envp = smt_plan_envp(d->plan);
	size_t n = smt_strv_len(envp), k = 0;
	char **v = calloc(n + 6, sizeof(*v));
	int faulthandler = 0, unbuffered = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		faulthandler |= strncmp(envp[i], "PYTHONFAULTHANDLER=", 19) == 0;
		unbuffered |= strncmp(envp[i], "PYTHONUNBUFFERED=", 17) == 0;
		if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0 || !d->cmd_preload)
			v[k++] = envp[i];
	}
	v[k++] = (char *)smt_hostjob_mark(d->job);
	v[k++] = d->restart_env;
	/* As for the ranks under a launcher (launcher_env, rank.c). */
	if (!faulthandler)
		v[k++] = (char *)"PYTHONFAULTHANDLER=1";
	if (!smt_plan_launcher_name(d->plan) && !unbuffered)
		v[k++] = (char *)"PYTHONUNBUFFERED=1";
	if (d->cmd_preload)
		v[k++] = d->cmd_preload;
	return v;
}

/* ---- the pre-launch phase ---- */

/* The /dev/shm a host needs: --min-shm, else the default (0: no
 * threshold) - for the preflight and for the words of a crash. */
static long long min_shm(const struct smt_daemon *d)
{
	return d->opts->min_shm >= 0 ? d->opts->min_shm : SMT_MIN_SHM_DEFAULT;
}

/*
 * Do the ranks use PyTorch?  A launch that only runs PyTorch (torchrun,
 * SMDataParallel), or an image whose Python has torch (SM_DLC_TORCH_VERSION
 * in the job's environment).  Only then is a small /dev/shm fatal by
 * default: PyTorch's DataLoader workers pass tensors through it.
 */
static int ranks_use_torch(struct smt_daemon *d)
{
	enum smt_launch l = smt_plan_launch(d->plan);

	return l == SMT_LAUNCH_TORCHRUN || l == SMT_LAUNCH_SMDDP ||
	       smt_env_get(smt_plan_envp(d->plan), "SM_DLC_TORCH_VERSION") != NULL;
}

void smt_daemon_preflight_set(struct smt_daemon *d, const char *host, json_t *result)
{
	if (!d->preflight)
		d->preflight = json_object();
	if (d->preflight && host && json_is_object(result))
		json_object_set_new(d->preflight, host, json_deep_copy(result));
	smt_daemon_changed(d);
}

static void on_prelaunch_done(void *ctx, int passed)
{
	struct smt_daemon *d = ctx;

	smt_daemon_preflight_set(d, smt_plan_current_host(d->plan),
				 smt_prelaunch_result(d->prelaunch));
	if (d->prelaunch_done)
		d->prelaunch_done(d, passed);
}

/* What every role does first (leader_begin, worker_begin). */
void *smt_daemon_role_state(struct smt_daemon *d, size_t size)
{
	void *state = calloc(1, size);

	if (!state)
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL, "out of memory");
	d->role_state = state;
	return state;
}

int smt_daemon_begin_prelaunch(struct smt_daemon *d, void (*done)(struct smt_daemon *d,
								   int passed))
{
	int rc = smt_daemon_prelaunch(d, 0, done);

	if (rc < 0)
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
				"cannot start the pre-launch phase on %s: %s",
				smt_plan_current_host(d->plan), strerror(-rc));
	return rc;
}

int smt_daemon_prelaunch(struct smt_daemon *d, int attempt,
			 void (*done)(struct smt_daemon *d, int passed))
{
	const char *root = smt_plan_root(d->plan);
	char model[4096], output[4096], checkpoints[4096];
	const char *dirs[] = { model, output, checkpoints, NULL };
	char **command = NULL;
	size_t n = 0;
	char msg[256];
	int rc;

	snprintf(model, sizeof(model), "%s/model", root);
	snprintf(output, sizeof(output), "%s/output", root);
	snprintf(checkpoints, sizeof(checkpoints), "%s/checkpoints", root);
	struct smt_preflight_config pc = {
		.probe_root = d->opts->gpu_probe_root,
		.instance_type = smt_plan_instance_type(d->plan),
		.gpu_check = d->opts->gpu_check != 0,
		.efa_check = d->opts->efa_check != 0,
		.min_shm = (uint64_t)min_shm(d),
		/* Asked for, or PyTorch: an error; the default otherwise: a warning. */
		.shm_fatal = d->opts->min_shm >= 0 || ranks_use_torch(d),
		.min_free_disk = (uint64_t)d->opts->min_free_disk,
		.disk_dirs = dirs,
	};
	/* Checked when the option or hyperparameter was read. */
	if (d->opts->preflight_command &&
	    smt_shellwords_split(d->opts->preflight_command, &command, &n, msg, sizeof(msg)) < 0)
		return -EINVAL;
	/* The command learns the attempt it checks for, as the ranks do; the
	 * job's mark it must not carry (it is smtd's, not the job's). */
	char *const *plan_env = smt_plan_envp(d->plan);
	size_t nenv = smt_strv_len(plan_env);
	char **envp = calloc(nenv + 2, sizeof(*envp));
	if (!envp) {
		smt_strv_free(command);
		return -ENOMEM;
	}
	memcpy(envp, plan_env, nenv * sizeof(*envp));
	envp[nenv] = d->restart_env;
	struct smt_prelaunch_config cfg = {
		.host = smt_plan_current_host(d->plan),
		.attempt = attempt,
		.envp = envp,
		.code_dir = smt_plan_workdir(d->plan),
		/* Installed once, before attempt 0: what pip put in place is
		 * still there for a restart (smtd(8), Restarts). */
		.install_argv = d->opts->no_install || attempt > 0 ? NULL
			: smt_install_argv(smt_plan_workdir(d->plan), smt_plan_program(d->plan)),
		.builtin = &pc,
		.command = command,
		.timeout = d->opts->preflight_timeout,
	};
	smt_prelaunch_close(d->prelaunch);
	d->prelaunch = NULL;
	d->prelaunch_done = done;
	rc = smt_prelaunch_start(&d->loop, d->reaper, &cfg, on_prelaunch_done, d, &d->prelaunch);
	smt_strv_free(command);
	free(envp);
	if (rc == 0)
		smt_daemon_preflight_set(d, cfg.host, smt_prelaunch_result(d->prelaunch));
	return rc;
}

/* TEXT to ROOT/output/data/NAME, never through a link (safefile.h). */
static int write_data_file(const char *root, const char *name, const char *text)
{
	static const char *const parts[] = { "output", "data" };

	return smt_safefile_replace(root, parts, 2, name, text, strlen(text));
}

json_t *smt_daemon_preflight_list(struct smt_daemon *d)
{
	json_t *list;

	if (!d->preflight)
		return json_null();
	list = json_array();
	for (size_t i = 0; list && i < smt_plan_host_count(d->plan); i++) {
		json_t *r = json_object_get(d->preflight, smt_plan_host(d->plan, i));

		if (r)
			json_array_append(list, r);
	}
	return list ? list : json_null();
}

void smt_daemon_preflight_write(struct smt_daemon *d)
{
	json_t *list;
	char *text;
	int rc;

	if (!d->preflight)
		return;
	list = smt_daemon_preflight_list(d);
	text = json_dumps(list, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(list);
	if (!text)
		return;
	rc = write_data_file(smt_plan_root(d->plan), "preflight.json", text);
	if (rc < 0)
		smt_warn("cannot write %s/output/data/preflight.json: %s", smt_plan_root(d->plan),
			 strerror(-rc));
	free(text);
}

static int setup_job(struct smt_daemon *d)
{
	char path[4096];
	const char *launcher = smt_plan_launcher_name(d->plan);
	int rc;

	if (d->opts->progress_pattern) {
		/* Checked when the option was read (options.c). */
		rc = regcomp(&d->progress, d->opts->progress_pattern, REG_EXTENDED | REG_NOSUB);
		if (rc != 0)
			return -ENOMEM;
		d->have_progress = 1;
	}
	snprintf(path, sizeof(path), "%s%s", d->opts->socket_path, SMT_RANKS_SUFFIX);
	struct smt_hostjob_config cfg = {
		.loop = &d->loop,
		.reaper = d->reaper,
		.current_host = smt_plan_current_host(d->plan),
		.format = d->opts->log_json ? SMT_FORMAT_JSON : SMT_FORMAT_TEXT,
		/* A role that serves its lines to the leader (a worker) keeps
		 * them for it, and they wake the leader's held fetch at once. */
		.to_outbox = d->role->lines != NULL,
		.outbox_news = d->role->lines ? smt_api_notify_lines : NULL,
		.outbox_arg = d->api,
		.msg_name = launcher ? launcher : "the program",
		/* The ranks' launchers register there (rankd.h). */
		.rankd_path = launcher ? path : NULL,
		.nranks = smt_plan_num_processes(d->plan),
		.rank_log_dir = d->opts->rank_log_dir,
		.progress = d->have_progress ? &d->progress : NULL,
		.use_cgroup = d->opts->job_cgroup != SMT_JOB_CGROUP_NEVER,
		.min_shm = min_shm(d),
		.keep = smt_daemon_not_job,
		.keep_arg = d,
	};
	rc = smt_hostjob_new(&cfg, d->role->job, d, &d->job);
	if (rc == 0)
		rc = smt_stall_new(d);
	if (rc < 0)
		return rc;
	d->launcher_env = launcher_env(d);
	if (!launcher && (rc = standalone_preload(d)) < 0)
		return rc;
	/* The hostjob reads it at every registration. */
	smt_hostjob_set_launcher_env(d->job, d->launcher_env);
	rc = smt_restart_new(d->opts->max_restarts, d->opts->restart_delay, &d->restart);
	if (rc < 0)
		return rc;
	set_attempt_env(d);
	if (smt_restart_marked(d->restart))
		smt_hostjob_set_stacks_dir(d->job, "attempt-0");
	return 0;
}

int smt_daemon_run(struct smt_plan *plan)
{
	struct smt_daemon *d;
	char *text = NULL;
	int rc, code;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return SMT_EXIT_JOB_FAILED;
	d->plan = plan;
	d->opts = smt_plan_options(plan);
	d->role_kind = smt_plan_role(plan);
	d->role = d->role_kind == SMT_ROLE_WORKER ? &smt_worker_role : &smt_leader_role;
	d->start_time = smt_daemon_now();
	d->exit_code = SMT_EXIT_JOB_FAILED;
	d->oom_kills = -1;
	rc = uv_loop_init(&d->loop);
	if (rc < 0) {
		smt_error("cannot start the event loop: %s", uv_strerror(rc));
		free(d);
		return SMT_EXIT_JOB_FAILED;
	}
	uv_timer_init(&d->loop, &d->watchdog_timer);

	rc = smt_reaper_new(&d->loop, &d->reaper);
	if (rc == 0) {
		smt_reaper_set_any(d->reaper, on_orphan, d);
		rc = setup_signals(d);
	}
	if (rc < 0) {
		smt_error("cannot set up the daemon: %s", strerror(-rc));
		smt_daemon_fail(d, SMT_EXIT_JOB_FAILED, SMT_FAIL_INTERNAL,
				"smtd could not set up its event loop: %s", strerror(-rc));
	} else if (setup_api(d, &text) < 0) {
		smt_daemon_finish(d, SMT_STATE_FAILED, SMT_EXIT_CONFIG, text);
		free(text);
	} else if ((rc = setup_job(d)) < 0) {
		/* The rank launcher's socket next to the control socket, or
		 * smtd itself (memory, handles). */
		enum smt_failure_kind kind = rc == -EADDRINUSE || rc == -ENAMETOOLONG ||
					     rc == -EACCES || rc == -ENOENT || rc == -EEXIST
			? SMT_FAIL_CONFIG : SMT_FAIL_INTERNAL;
		smt_daemon_fail(d, smt_failure_exit_code(kind, 0), kind,
				"cannot set up the job on this host: %s (see smtd's log)",
				strerror(-rc));
	} else {
		notify_systemd(d);
		smt_info("%s on %s: %zu host%s, %ld process%s; control socket %s",
			 smt_role_name(d->role_kind), smt_plan_current_host(plan),
			 smt_plan_dist_host_count(plan),
			 smt_plan_dist_host_count(plan) == 1 ? "" : "s",
			 smt_plan_num_processes(plan),
			 smt_plan_num_processes(plan) == 1 ? "" : "es", d->opts->socket_path);
		smt_info("launch: %s (%s)", smt_launch_name(smt_plan_launch(plan)),
			 smt_plan_launch_reason(plan) ? smt_plan_launch_reason(plan) :
							"the default");
		start_sshd(d);
	}
	uv_run(&d->loop, UV_RUN_DEFAULT);
	/* Anything still open (a failure before the end) is closed here and
	 * its close callbacks run. */
	if (!d->closing)
		close_all(d);
	uv_run(&d->loop, UV_RUN_DEFAULT);
	smt_hostjob_free(d->job);
	d->job = NULL;
	uv_run(&d->loop, UV_RUN_DEFAULT);
	code = d->exit_code;
	rc = uv_loop_close(&d->loop);
	if (rc < 0)
		smt_error("internal error: handles left open at exit");
	if (d->have_progress)
		regfree(&d->progress);
	json_decref(d->launcher_env);
	free(d->cmd_preload);
	json_decref(d->preflight);
	free(d->role_state);
	smt_restart_free(d->restart);
	free(d->failure);
	free(d->summary);
	free(d);
	return code;
}
