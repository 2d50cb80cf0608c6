/* job.c - this host's launched command, from spawn to its last byte. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job.h"
#include "killtree.h"
#include "log.h"
#include "spawn.h"

#define READ_BUF (64 * 1024)
/* After the command ends, its pipes should reach EOF as soon as the
 * leftovers are killed; this bounds the wait if something outside the job
 * still holds a write end. */
#define DRAIN_TIMEOUT_MS 5000

struct stream {
	uv_pipe_t pipe;
	int open;
	int id;
	struct smt_job *job;
};

/* A process of the job watched until it ends: an abandoned job's (see
 * smt_job_abandon), or one that outlives the command during a stop. */
struct watch {
	uv_poll_t poll;
	int fd;
	struct smt_job *job;
	struct watch *next, *prev;
};

struct smt_job {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	struct smt_job_config cfg;
	const struct smt_job_ops *ops;
	void *ctx;
	pid_t pid;
	struct stream out, err;
	uv_timer_t grace_timer, drain_timer;
	int grace_armed;
	struct watch *watches;
	size_t watching;
	int blind;        /* a process of the job could not be watched */
	int leftovers_watched; /* maybe_done looked for what outlives the command */
	int exited;
	int done_called;
	int closing;
	int handles_open;
	struct smt_job_status st;
	char buf[READ_BUF];
};

static void watch_process(void *arg, pid_t pid);

static void maybe_done(struct smt_job *job)
{
	if (job->done_called || !job->exited || job->out.open || job->err.open)
		return;
	/*
	 * A stop is in progress and its grace is not over: what is left of
	 * the job (a child checkpointing after the command exited) keeps it,
	 * watched through pidfds; the grace's SIGKILL ends the wait.
	 */
	if (uv_is_active((uv_handle_t *)&job->grace_timer) && !job->blind) {
		if (!job->watches && !job->leftovers_watched) {
			job->leftovers_watched = 1;
			smt_killtree_visit(job->cfg.proc, job->pid, job->cfg.keep, job->cfg.keep_arg, 0,
					   watch_process, job);
		}
		if (job->watching > 0 && !job->blind)
			return;
	}
	job->done_called = 1;
	uv_timer_stop(&job->drain_timer);
	uv_timer_stop(&job->grace_timer);
	/* Anything that slipped out of the session while we drained. */
	int n = smt_killtree(job->cfg.proc, job->pid, job->cfg.keep, job->cfg.keep_arg, SIGKILL);
	if (n > 0)
		job->st.leftovers += n;
	job->ops->done(job->ctx, &job->st);
}

static void stream_close_cb(uv_handle_t *h)
{
	struct stream *s = h->data;
	struct smt_job *job = s->job;

	job->handles_open--;
	if (job->closing && job->handles_open == 0)
		free(job);
}

static void stream_end(struct stream *s)
{
	if (!s->open)
		return;
	s->open = 0;
	uv_read_stop((uv_stream_t *)&s->pipe);
	uv_close((uv_handle_t *)&s->pipe, stream_close_cb);
	if (!s->job->closing && s->job->ops->eof)
		s->job->ops->eof(s->job->ctx, s->id);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct stream *s = h->data;

	(void)suggested;
	buf->base = s->job->buf;
	buf->len = sizeof(s->job->buf);
}

static void on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf)
{
	struct stream *s = h->data;
	struct smt_job *job = s->job;

	if (n > 0) {
		job->ops->output(job->ctx, s->id, buf->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	if (n != UV_EOF)
		smt_warn("reading the job's %s: %s", s->id == 1 ? "stdout" : "stderr",
			 uv_strerror((int)n));
	stream_end(s);
	maybe_done(job);
}

static void kill_all(struct smt_job *job)
{
	int n = smt_killtree(job->cfg.proc, job->pid, job->cfg.keep, job->cfg.keep_arg, SIGKILL);

	if (n > 0) {
		if (job->exited)
			job->st.leftovers += n;
		smt_info("killed %d remaining process%s of the job", n, n == 1 ? "" : "es");
	}
}

static void watch_close_cb(uv_handle_t *h)
{
	struct watch *w = h->data;
	struct smt_job *job = w->job;

	close(w->fd);
	free(w);
	job->handles_open--;
	if (job->closing && job->handles_open == 0)
		free(job);
}

static void unwatch(struct watch *w)
{
	struct smt_job *job = w->job;

	if (w->prev)
		w->prev->next = w->next;
	else
		job->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	job->watching--;
	uv_close((uv_handle_t *)&w->poll, watch_close_cb);
}

/* Nothing but the command is left of an abandoned job: it has nothing
 * more to do than wait for a host that is gone. */
static void abandoned_alone(struct smt_job *job)
{
	if (job->exited || job->watching > 0 || job->blind)
		return;
	smt_info("the job's other processes have ended: killing its command (pid %d)",
		 (int)job->pid);
	kill_all(job);
}

static void on_watched_end(uv_poll_t *h, int status, int events)
{
	struct watch *w = h->data;
	struct smt_job *job = w->job;

	(void)status;
	(void)events;
	unwatch(w);
	abandoned_alone(job);
	maybe_done(job);
}

static void watch_process(void *arg, pid_t pid)
{
	struct smt_job *job = arg;
	struct watch *w;
	int fd;

	if (pid == job->pid)
		return;
	/* pidfds are close-on-exec from the start. */
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno != ESRCH)
			job->blind = 1;
		return;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL || uv_poll_init(job->loop, &w->poll, fd) < 0) {
		free(w);
		close(fd);
		job->blind = 1;
		return;
	}
	w->fd = fd;
	w->job = job;
	w->poll.data = w;
	w->next = job->watches;
	if (w->next)
		w->next->prev = w;
	job->watches = w;
	job->watching++;
	job->handles_open++;
	uv_poll_start(&w->poll, UV_READABLE, on_watched_end);
}

static void on_grace(uv_timer_t *t)
{
	struct smt_job *job = t->data;

	smt_warn("grace period of %.1f s is over: killing what is left of the job",
		 job->cfg.grace);
	kill_all(job);
}

static void on_drain_timeout(uv_timer_t *t)
{
	struct smt_job *job = t->data;

	smt_warn("the job's output pipes are still open %d ms after it ended; closing them",
		 DRAIN_TIMEOUT_MS);
	stream_end(&job->out);
	stream_end(&job->err);
	maybe_done(job);
}

static void on_exit_status(void *arg, pid_t pid, int wstatus)
{
	struct smt_job *job = arg;

	(void)pid;
	job->exited = 1;
	if (WIFEXITED(wstatus)) {
		job->st.exited = 1;
		job->st.code = WEXITSTATUS(wstatus);
	} else if (WIFSIGNALED(wstatus)) {
		job->st.exited = 0;
		job->st.signo = WTERMSIG(wstatus);
	}
	smt_debug("job process %d ended (%s %d)", (int)job->pid,
		  job->st.exited ? "exit code" : "signal",
		  job->st.exited ? job->st.code : job->st.signo);
	/*
	 * Once the command is gone nothing can finish the job properly: ranks
	 * it left behind (a SIGKILLed mpirun leaves its local ranks running)
	 * are killed now.  While a stop is in progress they keep the rest of
	 * their grace period to checkpoint.
	 */
	if (!job->grace_armed)
		kill_all(job);
	uv_timer_start(&job->drain_timer, on_drain_timeout,
		       DRAIN_TIMEOUT_MS + (job->grace_armed ? (uint64_t)(job->cfg.grace * 1000) : 0), 0);
	maybe_done(job);
}

static int open_stream(struct smt_job *job, struct stream *s, int id, int fd)
{
	int rc;

	s->job = job;
	s->id = id;
	rc = uv_pipe_init(job->loop, &s->pipe, 0);
	if (rc < 0)
		return rc;
	s->pipe.data = s;
	job->handles_open++;
	s->open = 1;
	rc = uv_pipe_open(&s->pipe, fd);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read);
	if (rc < 0)
		stream_end(s);
	return rc;
}

static void timer_close_cb(uv_handle_t *h)
{
	struct smt_job *job = h->data;

	job->handles_open--;
	if (job->closing && job->handles_open == 0)
		free(job);
}

int smt_job_start(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_job_config *cfg,
		  const struct smt_job_ops *ops, void *ctx, struct smt_job **out)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	struct smt_job *job;
	struct smt_spawn_opts so;
	int rc;

	job = calloc(1, sizeof(*job));
	if (job == NULL)
		return -ENOMEM;
	job->loop = loop;
	job->reaper = reaper;
	job->cfg = *cfg;
	job->ops = ops;
	job->ctx = ctx;
	job->pid = -1;
	uv_timer_init(loop, &job->grace_timer);
	uv_timer_init(loop, &job->drain_timer);
	job->grace_timer.data = job;
	job->drain_timer.data = job;
	job->handles_open = 2;

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	so = (struct smt_spawn_opts){
		.argv = cfg->argv, .envp = cfg->envp, .cwd = cfg->cwd,
		.stdin_fd = -1, .stdout_fd = outp[1], .stderr_fd = errp[1],
	};
	rc = smt_spawn(&so, &job->pid);
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	if (job->pid < 0)
		goto fail;
	if (rc < 0)
		job->st.exec_errno = -rc;
	rc = smt_reaper_watch(reaper, job->pid, on_exit_status, job);
	if (rc < 0)
		goto fail_started;
	rc = open_stream(job, &job->out, 1, outp[0]);
	outp[0] = -1;
	if (rc < 0)
		goto fail_started;
	rc = open_stream(job, &job->err, 2, errp[0]);
	errp[0] = -1;
	if (rc < 0)
		goto fail_started;
	*out = job;
	return 0;

fail_started:
	/* The child exists: let the normal path end it and report. */
	smt_error("cannot supervise the job's output: %s", uv_strerror(rc));
	kill(-job->pid, SIGKILL);
	stream_end(&job->out);
	stream_end(&job->err);
	*out = job;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	job->closing = 1;
	uv_close((uv_handle_t *)&job->grace_timer, timer_close_cb);
	uv_close((uv_handle_t *)&job->drain_timer, timer_close_cb);
	return rc;
}

static int is_stopping_signal(int signo)
{
	return signo == SIGTERM || signo == SIGINT || signo == SIGQUIT || signo == SIGHUP;
}

static void arm_grace(struct smt_job *job, int signo)
{
	if (job->st.stopped_by == 0)
		job->st.stopped_by = signo;
	if (!job->grace_armed) {
		job->grace_armed = 1;
		uv_timer_start(&job->grace_timer, on_grace, (uint64_t)(job->cfg.grace * 1000), 0);
	}
}

int smt_job_signal(struct smt_job *job, int signo)
{
	int rc = 0;

	if (is_stopping_signal(signo))
		arm_grace(job, signo);
	if (job->exited) {
		/* The command is gone; its leftovers still get the signal. */
		int n = smt_killtree(job->cfg.proc, job->pid, job->cfg.keep, job->cfg.keep_arg, signo);
		return n > 0 ? 0 : -ESRCH;
	}
	if (kill(job->cfg.forward_to_group ? -job->pid : job->pid, signo) < 0)
		rc = -errno;
	return rc;
}

int smt_job_abandon(struct smt_job *job)
{
	int n;

	if (job->exited || job->watches || job->blind)
		return smt_job_signal(job, SIGTERM);
	arm_grace(job, SIGTERM);
	/*
	 * Left running, mpirun would answer the TERM by killing the ranks on
	 * its own timetable (odls_base_sigkill_timeout) while it waits for the
	 * lost host; stopped, it leaves the ranks their grace.
	 */
	kill(job->pid, SIGSTOP);
	n = smt_killtree_visit(job->cfg.proc, job->pid, job->cfg.keep, job->cfg.keep_arg,
			       SIGTERM, watch_process, job);
	if (n < 0)
		return n;
	abandoned_alone(job);
	return 0;
}

pid_t smt_job_pid(const struct smt_job *job)
{
	return job ? job->pid : -1;
}

void smt_job_free(struct smt_job *job)
{
	if (job == NULL)
		return;
	if (!job->exited)
		smt_reaper_unwatch(job->reaper, job->pid);
	job->closing = 1;
	while (job->watches)
		unwatch(job->watches);
	stream_end(&job->out);
	stream_end(&job->err);
	uv_close((uv_handle_t *)&job->grace_timer, timer_close_cb);
	uv_close((uv_handle_t *)&job->drain_timer, timer_close_cb);
}
