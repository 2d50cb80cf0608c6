/*
 * prelaunch.c - this host's pre-launch phase (prelaunch.h).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errline.h"
#include "log.h"
#include "prelaunch.h"
#include "smt_proto.h"
#include "report.h"
#include "spawn.h"
#include "strv.h"

#define LINE_MAX_BYTES 4096
/* A child that exited may have left a descendant holding its pipes: its
 * output is not waited for longer than this. */
#define DRAIN_MS 1000

enum step { STEP_BUILTIN, STEP_INSTALL, STEP_COMMAND, STEP_DONE };

struct stream {
	struct smt_prelaunch *p;
	uv_pipe_t pipe;
	int open;
	size_t len;
	char line[LINE_MAX_BYTES + 1];
};

struct smt_prelaunch {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	char *host;
	char **envp;
	char *code_dir;
	const char *const *install_argv;
	char **command;
	double timeout;
	struct smt_preflight_config builtin;
	char **disk_dirs;
	smt_prelaunch_done_cb done;
	void *ctx;

	enum step step;
	const char *source;      /* "pip", "--preflight-command" */
	pid_t pid;
	int exited, wstatus, timed_out;
	struct stream out, err;
	uv_timer_t timer;        /* the timeout, then the drain */
	uv_timer_t kick;         /* the next step, from the loop */
	int handles;             /* open handles; freed at 0 once closing */
	int closing;
	int best_score;
	char best[SMT_ERRLINE_MAX + 1];
	char last[SMT_ERRLINE_MAX + 1];
	struct timespec t0;
	json_t *result;
	char *failure;
};

static void next_step(struct smt_prelaunch *p);

static double elapsed(const struct smt_prelaunch *p)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - p->t0.tv_sec) + (now.tv_nsec - p->t0.tv_nsec) / 1e9;
}

/* The phase ended: the result, then the caller is told (once). */
static void finish(struct smt_prelaunch *p, enum smt_failure_kind kind, const char *detail)
{
	p->step = STEP_DONE;
	json_object_set_new(p->result, SMT_F_MICROSECONDS,
			    json_integer((json_int_t)(elapsed(p) * 1e6)));
	if (detail) {
		p->failure = smt_failure_text(kind, "%s: %s", p->host, detail);
		json_object_set_new(p->result, SMT_F_STATE, json_string("failed"));
		json_object_set_new(p->result, SMT_F_FAILURE,
				    json_stringn(p->failure ? p->failure : "",
						 p->failure ? strcspn(p->failure, "\n") : 0));
	} else {
		json_object_set_new(p->result, SMT_F_STATE, json_string("passed"));
	}
	smt_info("pre-launch phase on %s: %s in %.3f s", p->host, detail ? "failed" : "passed",
		 elapsed(p));
	if (p->done)
		p->done(p->ctx, detail == NULL);
}

/* ---- a child's output into the log ---- */

static void keep_line(struct smt_prelaunch *p, const char *line, size_t len)
{
	int score = smt_errline_score(line, len);
	size_t n = len > SMT_ERRLINE_MAX ? SMT_ERRLINE_MAX : len;

	if (len == 0)
		return;
	memcpy(p->last, line, n);
	p->last[n] = '\0';
	if (score > p->best_score) {
		p->best_score = score;
		memcpy(p->best, line, n);
		p->best[n] = '\0';
	}
}

static void emit(struct stream *s)
{
	struct smt_prelaunch *p = s->p;

	s->line[s->len] = '\0';
	for (size_t i = 0; i < s->len; i++)
		if ((unsigned char)s->line[i] < 0x20 && s->line[i] != '\t')
			s->line[i] = ' ';
	smt_info("%s on %s: %s", p->source, p->host, s->line);
	keep_line(p, s->line, s->len);
	s->len = 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char chunk[16384];

	(void)h;
	(void)suggested;
	/* Copied into a line before the next read: one buffer is enough. */
	*buf = uv_buf_init(chunk, sizeof(chunk));
}

static void child_over(struct smt_prelaunch *p);

static void handle_closed(struct smt_prelaunch *p)
{
	if (--p->handles == 0 && p->closing) {
		json_decref(p->result);
		free(p->failure);
		free(p->host);
		free(p->code_dir);
		smt_strv_free(p->envp);
		smt_strv_free(p->command);
		smt_strv_free(p->disk_dirs);
		free(p);
	}
}

static void on_handle_closed(uv_handle_t *h)
{
	handle_closed(h->data);
}

static void on_stream_closed(uv_handle_t *h)
{
	struct stream *s = h->data;

	handle_closed(s->p);
}

static void stream_close(struct stream *s)
{
	if (!s->open)
		return;
	s->open = 0;
	if (s->len)
		emit(s);
	uv_close((uv_handle_t *)&s->pipe, on_stream_closed);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct stream *s = st->data;

	if (n < 0) {
		stream_close(s);
		child_over(s->p);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];

		if (c == '\n')
			emit(s);
		else if (c != '\r' && s->len < LINE_MAX_BYTES)
			s->line[s->len++] = c;
	}
}

static int stream_open(struct smt_prelaunch *p, struct stream *s, int fd)
{
	int rc;

	s->p = p;
	s->len = 0;
	uv_pipe_init(p->loop, &s->pipe, 0);
	s->pipe.data = s;
	p->handles++;
	s->open = 1;
	rc = uv_pipe_open(&s->pipe, fd);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read);
	if (rc < 0) {
		stream_close(s);
		close(fd);
	}
	return rc;
}

/* ---- one child: pip or the command ---- */

static void kill_child(struct smt_prelaunch *p)
{
	/* Its own process group (spawn.h): whatever it started goes too. */
	if (p->pid > 0 && !p->exited)
		kill(-p->pid, SIGKILL);
}

/* The child's words for the failure: its error line, else its last. */
static void child_failed(struct smt_prelaunch *p, const char *what)
{
	const char *line = p->best_score > 0 ? p->best : p->last;
	char detail[1024];

	snprintf(detail, sizeof(detail), "%s%s%s", what, line[0] ? ": " : "", line);
	finish(p, p->step == STEP_INSTALL ? SMT_FAIL_INSTALL : SMT_FAIL_PREFLIGHT, detail);
}

/* Decided once the child exited and its output was read (or the drain
 * time is over). */
static void child_over(struct smt_prelaunch *p)
{
	char what[512];
	int code;

	if (p->closing || p->step == STEP_DONE || !p->exited)
		return;
	if ((p->out.open || p->err.open) && uv_is_active((uv_handle_t *)&p->timer))
		return;
	uv_timer_stop(&p->timer);
	stream_close(&p->out);
	stream_close(&p->err);
	p->pid = -1;
	code = WIFEXITED(p->wstatus) ? WEXITSTATUS(p->wstatus) : 128 + WTERMSIG(p->wstatus);
	if (p->timed_out) {
		snprintf(what, sizeof(what), "--preflight-command did not end within %g s "
			 "(--preflight-timeout)", p->timeout);
		child_failed(p, what);
		return;
	}
	if (code != 0) {
		if (p->step == STEP_INSTALL)
			snprintf(what, sizeof(what), "%s in %s exited with code %d", "pip install",
				 p->code_dir, code);
		else if (WIFSIGNALED(p->wstatus))
			snprintf(what, sizeof(what),
				 "--preflight-command %s was killed by signal %d", p->command[0],
				 WTERMSIG(p->wstatus));
		else
			snprintf(what, sizeof(what), "--preflight-command %s exited with code %d",
				 p->command[0], code);
		child_failed(p, what);
		return;
	}
	p->step = p->step == STEP_INSTALL ? STEP_COMMAND : STEP_DONE;
	next_step(p);
}

static void on_drained(uv_timer_t *t)
{
	struct smt_prelaunch *p = t->data;

	child_over(p);
}

static void on_exit_cb(void *arg, pid_t pid, int wstatus)
{
	struct smt_prelaunch *p = arg;

	(void)pid;
	p->exited = 1;
	p->wstatus = wstatus;
	uv_timer_stop(&p->timer);
	if (p->out.open || p->err.open)
		uv_timer_start(&p->timer, on_drained, DRAIN_MS, 0);
	child_over(p);
}

static void on_timeout(uv_timer_t *t)
{
	struct smt_prelaunch *p = t->data;

	smt_warn("--preflight-command on %s did not end within %g s: killed", p->host, p->timeout);
	p->timed_out = 1;
	kill_child(p);
}

static void log_command(struct smt_prelaunch *p, char *const *argv, const char *cwd)
{
	char line[1024];
	size_t n = 0;

	line[0] = '\0';
	for (size_t i = 0; argv[i] && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", i ? " " : "", argv[i]);
	smt_info("%s on %s: running %s%s%s", p->source, p->host, line, cwd ? " in " : "",
		 cwd ? cwd : "");
}

static void run_child(struct smt_prelaunch *p, char *const *argv, const char *cwd)
{
	struct smt_spawn_opts so = {
		.argv = argv, .envp = p->envp, .cwd = cwd, .stdin_fd = -1, .cgroup_fd = -1,
	};
	char what[512];
	int out_r = -1, err_r = -1, rc;

	p->exited = p->timed_out = p->best_score = 0;
	p->best[0] = p->last[0] = '\0';
	log_command(p, argv, cwd);
	rc = smt_spawn_piped(&so, &p->pid, &out_r, &err_r);
	if (p->pid > 0 && smt_reaper_watch(p->reaper, p->pid, on_exit_cb, p) < 0)
		rc = rc < 0 ? rc : -ENOMEM;
	if (rc < 0) {
		if (out_r >= 0)
			close(out_r);
		if (err_r >= 0)
			close(err_r);
		if (p->pid > 0) {
			kill_child(p);
			smt_reaper_unwatch(p->reaper, p->pid);
		}
		p->pid = -1;
		snprintf(what, sizeof(what), "cannot run %s%s%s: %s (exit status %d)", argv[0],
			 cwd ? " in " : "", cwd ? cwd : "", strerror(-rc),
			 smt_spawn_exec_status(-rc));
		finish(p, p->step == STEP_INSTALL ? SMT_FAIL_INSTALL : SMT_FAIL_PREFLIGHT, what);
		return;
	}
	stream_open(p, &p->out, out_r);
	stream_open(p, &p->err, err_r);
	if (p->step == STEP_COMMAND)
		uv_timer_start(&p->timer, on_timeout, (uint64_t)(p->timeout * 1000), 0);
}

/* ---- the steps ---- */

static void run_builtin(struct smt_prelaunch *p)
{
	json_t *checks = json_object_get(p->result, SMT_F_CHECKS);
	char fail[1024];
	long gpus = 0;
	double t0 = elapsed(p);
	int rc = smt_preflight_builtin(&p->builtin, checks, &gpus, fail, sizeof(fail));
	double took = elapsed(p) - t0;
	size_t i;
	json_t *c;

	json_object_set_new(p->result, SMT_F_GPUS, json_integer(gpus));
	/* What the built-in checks cost this host (at most 20 ms, smtd(8) Preflight). */
	json_object_set_new(p->result, SMT_F_BUILTIN_MICROSECONDS,
			    json_integer((json_int_t)(took * 1e6)));
	json_array_foreach(checks, i, c)
		if (json_is_true(json_object_get(c, SMT_F_WARNING)))
			smt_warn("preflight on %s: %s (a warning: the ranks do not use PyTorch)",
				 p->host, json_string_value(json_object_get(c, SMT_F_DETAIL)));
	smt_info("preflight on %s: built-in checks %s in %.1f ms", p->host,
		 rc < 0 ? "failed" : "passed", took * 1000);
	if (rc < 0) {
		finish(p, SMT_FAIL_PREFLIGHT, fail);
		return;
	}
	p->step = STEP_INSTALL;
	next_step(p);
}

static void next_step(struct smt_prelaunch *p)
{
	if (p->closing)
		return;
	switch (p->step) {
	case STEP_BUILTIN:
		run_builtin(p);
		return;
	case STEP_INSTALL:
		if (p->install_argv) {
			p->source = "pip";
			run_child(p, (char *const *)p->install_argv, p->code_dir);
			return;
		}
		p->step = STEP_COMMAND;
		/* fall through */
	case STEP_COMMAND:
		if (p->command) {
			p->source = "--preflight-command";
			run_child(p, p->command, NULL);
			return;
		}
		p->step = STEP_DONE;
		/* fall through */
	case STEP_DONE:
		finish(p, SMT_FAIL_NONE, NULL);
		return;
	}
}

static void on_kick(uv_timer_t *t)
{
	next_step(t->data);
}

/* A copy of V (NULL-terminated), or NULL. */
static char **strv_copy(char *const *v)
{
	struct smt_strvbuf b = { 0 };

	for (size_t i = 0; v && v[i]; i++)
		if (smt_strvbuf_add(&b, v[i]) < 0) {
			smt_strv_free(b.v);
			return NULL;
		}
	return b.v ? b.v : calloc(1, sizeof(char *));
}

static int copy_config(struct smt_prelaunch *p, const struct smt_prelaunch_config *cfg)
{
	size_t n = 0;

	p->host = strdup(cfg->host ? cfg->host : "?");
	p->code_dir = cfg->code_dir ? strdup(cfg->code_dir) : NULL;
	p->envp = strv_copy(cfg->envp);
	p->command = cfg->command && cfg->command[0] ? strv_copy(cfg->command) : NULL;
	p->install_argv = cfg->install_argv;
	p->timeout = cfg->timeout;
	if (cfg->builtin)
		p->builtin = *cfg->builtin;
	while (p->builtin.disk_dirs && p->builtin.disk_dirs[n])
		n++;
	p->disk_dirs = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; p->disk_dirs && i < n; i++)
		if (!(p->disk_dirs[i] = strdup(p->builtin.disk_dirs[i])))
			return -ENOMEM;
	p->builtin.disk_dirs = (const char *const *)p->disk_dirs;
	p->builtin.probe_root = NULL;
	if (cfg->builtin && cfg->builtin->probe_root)
		p->builtin.probe_root = cfg->builtin->probe_root; /* the options': outlive us */
	if (!p->host || (cfg->code_dir && !p->code_dir) || !p->envp || !p->disk_dirs ||
	    (cfg->command && cfg->command[0] && !p->command))
		return -ENOMEM;
	return 0;
}

int smt_prelaunch_start(uv_loop_t *loop, struct smt_reaper *reaper,
			const struct smt_prelaunch_config *cfg, smt_prelaunch_done_cb done,
			void *ctx, struct smt_prelaunch **out)
{
	struct smt_prelaunch *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	*p = (struct smt_prelaunch){ .loop = loop, .reaper = reaper, .done = done, .ctx = ctx,
				     .pid = -1 };
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	uv_timer_init(loop, &p->timer);
	uv_timer_init(loop, &p->kick);
	p->timer.data = p->kick.data = p;
	p->handles = 2;
	p->result =
		json_pack("{s:s?, s:i, s:s, s:[], s:i, s:s?}", SMT_F_HOST, cfg->host, SMT_F_ATTEMPT,
			  cfg->attempt, SMT_F_STATE, "running", SMT_F_CHECKS, SMT_F_GPUS, 0,
			  SMT_F_INSTANCE_TYPE, cfg->builtin ? cfg->builtin->instance_type : NULL);
	if (!p->result || copy_config(p, cfg) < 0) {
		smt_prelaunch_close(p);
		return -ENOMEM;
	}
	/* The built-in checks run from the loop, so DONE never runs inside
	 * this call. */
	uv_timer_start(&p->kick, on_kick, 0, 0);
	*out = p;
	return 0;
}

json_t *smt_prelaunch_result(const struct smt_prelaunch *p)
{
	return p ? p->result : NULL;
}

const char *smt_prelaunch_failure(const struct smt_prelaunch *p)
{
	return p ? p->failure : NULL;
}

void smt_prelaunch_close(struct smt_prelaunch *p)
{
	if (!p || p->closing)
		return;
	p->closing = 1;
	if (p->pid > 0 && !p->exited) {
		kill_child(p);
		/* Reaped as any orphan from now on. */
		smt_reaper_unwatch(p->reaper, p->pid);
	}
	stream_close(&p->out);
	stream_close(&p->err);
	uv_close((uv_handle_t *)&p->timer, on_handle_closed);
	uv_close((uv_handle_t *)&p->kick, on_handle_closed);
}
