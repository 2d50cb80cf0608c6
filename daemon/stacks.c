/*
 * stacks.c - a live process's stack through gdb or eu-stack, on the loop
 * (stacks.h).
 *
 * Why one file of this size: one read is a chain of steps - Python's own
 * dump, then eu-stack, then gdb - and which step comes next depends on why
 * the last one failed (ptrace refused, the process gone, no symbols).  The
 * steps, their pipes, the timer and the one finish() share one struct
 * read; apart, each step would have to export it to the others.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "procfs.h"
#include "rankcred.h"
#include "spawn.h"
#include "stacks.h"
#include "vec.h"

#define STDERR_MAX (16 * 1024)
#define READ_CHUNK (64 * 1024)
/* After the tool exits, its pipes reach EOF at once unless something it
 * started still holds them; this bounds that wait. */
#define DRAIN_MS 1000
#define PARALLEL_CAP 8

enum step { STEP_NONE, STEP_PYTHON, STEP_EUSTACK, STEP_GDB };

struct buf {
	char *s;
	size_t len, max, dropped;
};

struct read;

struct tpipe {
	uv_pipe_t h;
	struct read *r;
	struct buf *to;
};

struct read {
	struct smt_stacks *s;
	LIST_ENTRY(read) link;     /* every read not yet finished */
	TAILQ_ENTRY(read) wait;    /* the queue of reads waiting for a slot */
	pid_t pid;
	smt_stacks_cb cb;
	void *arg;
	uint64_t start, deadline;
	unsigned timeout_ms;
	uv_timer_t timer;
	struct tpipe *out_pipe, *err_pipe;
	int handles;               /* the timer and the pipes still open */
	int running;               /* holds one of max_parallel slots */
	int queued;
	pid_t tool;
	int tool_exited, wstatus, timed_out, finished;
	enum step step;
	const char *tool_name;
	int python;
	char exe[PATH_MAX], script[PATH_MAX];
	int libpython;             /* the interpreter is a shared library */
	char note[PATH_MAX + 128];
	struct buf out, err;
	struct smt_rankcred cred;  /* the tools run as the target (rankcred.h) */
	uint64_t starttime;        /* the target's identity, checked after the read */
};

struct smt_stacks {
	uv_loop_t *loop;
	struct smt_reaper *reaper;
	struct smt_stacks_config cfg;
	LIST_HEAD(, read) reads;
	TAILQ_HEAD(, read) queue;
	unsigned running;
	int closing;
	/* Loop callbacks of this module under way: a reader closed from a
	 * result's callback (the caller's last read is in) is freed when the
	 * outermost of them returns, never under their feet. */
	unsigned busy;
};

static void start_next(struct smt_stacks *s);
static void hold(struct smt_stacks *s);
static void release(struct smt_stacks *s);
static void run_step(struct read *r);
static void on_timer(uv_timer_t *t);

/* --- output cleaning (pure) -------------------------------------------- */

static int starts(const char *s, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && memcmp(s, pre, k) == 0;
}

static int is_gdb_thread_header(const char *s, size_t n)
{
	return starts(s, n, "Thread ") && n > 7 && s[7] >= '0' && s[7] <= '9';
}

static int is_noise(const char *s, size_t n)
{
	return starts(s, n, "[New LWP ") || starts(s, n, "[New Thread ") ||
	       starts(s, n, "[Thread debugging using libthread_db") ||
	       starts(s, n, "Using host libthread_db library") || starts(s, n, "[Inferior ") ||
	       starts(s, n, "[Thread 0x");
}

struct line {
	const char *s;
	size_t n;
};

int smt_stacks_clean(const char *raw, size_t len, char **out)
{
	struct line *lines = NULL;
	size_t nl = 0, cap = 0, first = 0, no_python = 0, o = 0;
	const char *p = raw, *end = raw + len;
	char *res;
	int gdb = 0;

	/* Index the lines first: a gdb thread block is kept or dropped whole. */
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		if (SMT_VEC_RESERVE(lines, cap, nl + 1) < 0) {
			free(lines);
			return -ENOMEM;
		}
		while (n > 0 && p[n - 1] == '\r')
			n--;
		lines[nl++] = (struct line){ p, n };
		if (!gdb && is_gdb_thread_header(p, n)) {
			gdb = 1;
			first = nl - 1;
		}
		p += (e ? (size_t)(e - p) + 1 : n);
	}
	res = malloc(len + 64);
	if (res == NULL) {
		free(lines);
		return -ENOMEM;
	}
	/* Before gdb's first thread comes only what it says while attaching. */
	for (size_t i = gdb ? first : 0; i < nl; i++) {
		const struct line *l = &lines[i];
		if (is_noise(l->s, l->n))
			continue;
		if (is_gdb_thread_header(l->s, l->n)) {
			size_t j = i + 1, frames = 0, unlocated = 0;
			for (; j < nl && !is_gdb_thread_header(lines[j].s, lines[j].n); j++) {
				if (lines[j].n == 0 || is_noise(lines[j].s, lines[j].n))
					continue;
				if (starts(lines[j].s, lines[j].n, "Unable to locate python frame"))
					unlocated++;
				else
					frames++;
			}
			if (unlocated && !frames) {
				no_python++;
				i = j - 1;
				continue;
			}
		}
		/* One blank line between blocks, none at the start. */
		if (l->n == 0 && (o == 0 || (o >= 2 && res[o - 1] == '\n' && res[o - 2] == '\n')))
			continue;
		memcpy(res + o, l->s, l->n);
		o += l->n;
		res[o++] = '\n';
	}
	while (o >= 2 && res[o - 1] == '\n' && res[o - 2] == '\n')
		o--;
	if (no_python)
		o += (size_t)snprintf(res + o, 64, "%s(%zu more thread%s without Python frames)\n",
				      o ? "\n" : "", no_python, no_python == 1 ? "" : "s");
	res[o] = '\0';
	free(lines);
	*out = res;
	return 0;
}

/* --- what the process is ----------------------------------------------- */

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int basename_is_python(const char *path)
{
	const char *b = strrchr(path, '/');

	return strncmp(b ? b + 1 : path, "python", 6) == 0;
}

/* Whether the script at PATH may be sourced by a gdb running as R's
 * target: always when gdb runs as the target itself (the script can do
 * nothing the target could not), else only a file no one but root could
 * have written (rankcred.h), which then goes to gdb by its real path. */
static int script_ok(struct read *r, char *path, size_t size)
{
	char real[PATH_MAX];

	if (!file_exists(path))
		return 0;
	if (!r->cred.privileged)
		return 1;
	if (!smt_rankcred_trusted(path, real, sizeof(real)) || strlen(real) >= size)
		return 0;
	memcpy(path, real, strlen(real) + 1);
	return 1;
}

/* The CPython gdb extension for OBJ: where Debian's packages put it, or
 * next to the object, where a build from source installs it. */
static int find_script(struct read *r, const char *obj, char *out, size_t size)
{
	if ((size_t)snprintf(out, size, "/usr/share/gdb/auto-load%s-gdb.py", obj) < size &&
	    script_ok(r, out, size))
		return 1;
	if ((size_t)snprintf(out, size, "%s-gdb.py", obj) < size && script_ok(r, out, size))
		return 1;
	out[0] = '\0';
	return 0;
}

/* Whether R's target runs Python; finds its executable, libpython and the
 * gdb extension for them. */
static void inspect(struct read *r)
{
	char path[64], lib[PATH_MAX] = "";
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)r->pid);
	n = readlink(path, r->exe, sizeof(r->exe) - 1);
	if (n > 0) {
		r->exe[n] = '\0';
		char *del = strstr(r->exe, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		r->python = basename_is_python(r->exe);
	}
	if (n <= 0 || !file_exists(r->exe))
		snprintf(r->exe, sizeof(r->exe), "/proc/%d/exe", (int)r->pid);
	/* An interpreter embedded in another program maps libpython. */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	f = fopen(path, "re");
	if (f) {
		char line[PATH_MAX + 128];
		while (fgets(line, sizeof(line), f)) {
			char *so = strstr(line, "/libpython");
			char *start = strchr(line, '/');
			if (so && start) {
				start[strcspn(start, "\n")] = '\0';
				snprintf(lib, sizeof(lib), "%s", start);
				r->python = 1;
				break;
			}
		}
		fclose(f);
	}
	if (!r->python) {
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)r->pid);
		f = fopen(path, "re");
		if (f) {
			char argv0[PATH_MAX];
			size_t k = fread(argv0, 1, sizeof(argv0) - 1, f);
			argv0[k] = '\0';
			r->python = k > 0 && basename_is_python(argv0);
			fclose(f);
		}
	}
	if (!r->python || r->s->cfg.no_python)
		return;
	if (find_script(r, r->exe, r->script, sizeof(r->script)))
		return;
	if (lib[0] && find_script(r, lib, r->script, sizeof(r->script))) {
		r->libpython = 1;
		return;
	}
	snprintf(
		r->note, sizeof(r->note),
		"no Python frames: no CPython gdb extension for %s (Debian: install python3.X-dbg; "
		"a root process's must be root's)",
		lib[0] ? lib : r->exe);
}

/* Whether PID is gone: no /proc entry, or a zombie. */
static int process_gone(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	int gone = 1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 1;
	if (fgets(buf, sizeof(buf), f)) {
		char *rp = strrchr(buf, ')');
		gone = rp && (rp[2] == 'Z' || rp[2] == 'X');
	}
	fclose(f);
	return gone;
}

static long status_field(const char *path, const char *name)
{
	char line[256];
	size_t k = strlen(name);
	long v = -1;
	FILE *f = fopen(path, "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, k) == 0) {
			v = strtol(line + k, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int has_cap_sys_ptrace(void)
{
	char line[256];
	int has = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0) {
			unsigned long long caps = strtoull(line + 7, NULL, 16);
			has = (caps >> 19) & 1; /* CAP_SYS_PTRACE */
			break;
		}
	fclose(f);
	return has;
}

/* Which rule forbids the attach, in words a person can act on. */
static void ptrace_reason(pid_t pid, char *buf, size_t size)
{
	char path[64];
	long scope = -1, uid, seccomp;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int cap = has_cap_sys_ptrace();

	if (f) {
		if (fscanf(f, "%ld", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	uid = status_field(path, "Uid:");
	seccomp = status_field("/proc/self/status", "Seccomp:");
	if (scope == 3)
		snprintf(buf, size, "ptrace not permitted: kernel.yama.ptrace_scope is 3 "
			 "(no process may attach until reboot)");
	else if (!cap && scope == 2)
		snprintf(buf, size, "ptrace not permitted: kernel.yama.ptrace_scope is 2 and smtd "
			 "lacks CAP_SYS_PTRACE");
	else if (!cap && uid >= 0 && uid != (long)geteuid())
		snprintf(buf, size, "ptrace not permitted: process %d runs as uid %ld, smtd as uid "
			 "%ld without CAP_SYS_PTRACE", (int)pid, uid, (long)geteuid());
	else if (!cap && scope == 1)
		snprintf(buf, size, "ptrace not permitted: kernel.yama.ptrace_scope is 1 (only "
			 "ancestors may attach) and smtd lacks CAP_SYS_PTRACE");
	else if (seccomp == 2)
		snprintf(buf, size, "ptrace not permitted: a seccomp filter blocks it (in a "
			 "container: allow ptrace, e.g. --cap-add SYS_PTRACE)");
	else
		snprintf(buf, size, "ptrace not permitted (EPERM) for process %d", (int)pid);
}

/*
 * What gdb runs in the target for its Python frames: CPython's own list of
 * each thread's frames (PyThreadState.cframe->current_frame, then
 * .previous), printed by the classes of CPython's gdb extension in py-bt's
 * format, with source lines.  Unlike py-bt it never unwinds the C stack,
 * so gdb needs no shared library's symbols: a torch rank is read in 0.5 s
 * and 130 MB instead of 2.4 s and 430 MB.  The main thread is the
 * interpreter's oldest, printed as thread 1.  Passed hex-encoded, so that
 * no quoting is needed on gdb's command line.
 */
static const char python_walker[] =
	"def _smt_stacks():\n"
	"    ts = []\n"
	"    i = gdb.parse_and_eval('&_PyRuntime')['interpreters']['head']\n"
	"    while int(i):\n"
	"        t = i['threads']['head']\n"
	"        while int(t):\n"
	"            ts.append(t)\n"
	"            t = t['next']\n"
	"        i = i['next']\n"
	"    n = len(ts)\n"
	"    for t in ts:\n"
	"        print()\n"
	"        print('Thread %d (Thread 0x%x (LWP %d) \"python\"):' % (n, int(t['thread_id']),\n"
	"              int(t['native_thread_id'])))\n"
	"        print('Traceback (most recent call first):')\n"
	"        n -= 1\n"
	"        try:\n"
	"            f = t['cframe']['current_frame']\n"
	"            depth = 0\n"
	"            while int(f) and depth < 2000:\n"
	"                p = PyFramePtr(f)\n"
	"                p.print_traceback()\n"
	"                try:\n"
	"                    line = p.current_line()\n"
	"                except Exception:\n"
	"                    line = None\n"
	"                if line and line.strip() and not line.startswith('('):\n"
	"                    print('    ' + line.strip())\n"
	"                f = f['previous']\n"
	"                depth += 1\n"
	"        except gdb.error as e:\n"
	"            print('  (unable to read python frame information: %s)' % e)\n"
	"_smt_stacks()\n";

/* --- the read's life --------------------------------------------------- */

static double now_s(struct smt_stacks *s)
{
	return (double)uv_now(s->loop) / 1000.0;
}

static void maybe_free(struct read *r)
{
	if (r->finished && r->handles == 0) {
		free(r->out.s);
		free(r->err.s);
		free(r);
	}
}

static void on_pipe_closed(uv_handle_t *h)
{
	struct tpipe *tp = h->data;
	struct read *r = tp->r;

	free(tp);
	r->handles--;
	maybe_free(r);
}

static void close_pipe(struct tpipe **tpp)
{
	struct tpipe *tp = *tpp;

	if (tp == NULL)
		return;
	*tpp = NULL;
	uv_read_stop((uv_stream_t *)&tp->h);
	uv_close((uv_handle_t *)&tp->h, on_pipe_closed);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct read *r = h->data;

	r->handles--;
	maybe_free(r);
}

static void unlink_read(struct read *r)
{
	struct smt_stacks *s = r->s;

	LIST_REMOVE(r, link);
	if (r->queued) {
		TAILQ_REMOVE(&s->queue, r, wait);
		r->queued = 0;
	}
}

/* The one call of the callback; then everything of R goes. */
static void finish(struct read *r, const char *text, size_t len, const char *reason)
{
	struct smt_stacks *s = r->s;
	struct smt_stack_result res = {
		.pid = r->pid, .text = text, .len = text ? len : 0,
		.reason = text ? NULL : reason, .tool = r->tool_name,
		.note = r->note[0] ? r->note : NULL, .python = r->python,
		.seconds = now_s(s) - (double)r->start / 1000.0,
	};

	if (r->finished)
		return;
	r->finished = 1;
	if (r->tool > 0 && !r->tool_exited) {
		/* Cancelled while attached: the target must not stay stopped. */
		kill(-r->tool, SIGKILL);
		kill(r->pid, SIGCONT);
		smt_reaper_unwatch(s->reaper, r->tool);
	}
	unlink_read(r);
	if (r->running) {
		r->running = 0;
		s->running--;
	}
	close_pipe(&r->out_pipe);
	close_pipe(&r->err_pipe);
	uv_close((uv_handle_t *)&r->timer, on_timer_closed);
	r->cb(r->arg, &res);
	if (!s->closing)
		start_next(s);
}

static void finish_reason(struct read *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void finish_reason(struct read *r, const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	finish(r, NULL, 0, reason);
}

static int contains(const struct buf *b, const char *what)
{
	return b->s && memmem(b->s, b->len, what, strlen(what)) != NULL;
}

static void last_line(const struct buf *b, char *out, size_t size)
{
	size_t end = b->len, start;

	while (end > 0 && (b->s[end - 1] == '\n' || b->s[end - 1] == '\r'))
		end--;
	start = end;
	while (start > 0 && b->s[start - 1] != '\n')
		start--;
	snprintf(out, size, "%.*s", (int)(end - start), b->s ? b->s + start : "");
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

static enum step native_step(struct read *r)
{
	char path[PATH_MAX];

	if (smt_spawn_find_program("eu-stack", r->s->cfg.envp, NULL, path, sizeof(path)) == 0)
		return STEP_EUSTACK;
	if (smt_spawn_find_program("gdb", r->s->cfg.envp, NULL, path, sizeof(path)) == 0)
		return STEP_GDB;
	return STEP_NONE;
}

/* The tool has exited and its output is all in: what did it say? */
static void step_done(struct read *r)
{
	int code = WIFEXITED(r->wstatus) ? WEXITSTATUS(r->wstatus) : 128 + WTERMSIG(r->wstatus);
	char *clean = NULL;
	char line[256];

	r->tool = -1;
	if (r->timed_out) {
		finish_reason(r, "timed out after %u ms (%s)", r->timeout_ms, r->tool_name);
		return;
	}
	if (contains(&r->err, "Operation not permitted") ||
	    contains(&r->out, "Operation not permitted") ||
	    (r->step == STEP_EUSTACK && contains(&r->err, "Permission denied"))) {
		if (process_gone(r->pid)) {
			finish_reason(r, "process %d is gone", (int)r->pid);
			return;
		}
		ptrace_reason(r->pid, line, sizeof(line));
		finish(r, NULL, 0, line);
		return;
	}
	if (smt_stacks_clean(r->out.s ? r->out.s : "", r->out.len, &clean) < 0) {
		finish_reason(r, "out of memory");
		return;
	}
	/* The PID was attached by number: what it said counts only if it is
	 * still the process this read began with. */
	struct smt_proc_stat st;
	if (smt_proc_stat(NULL, r->pid, &st) < 0 || st.starttime != r->starttime) {
		free(clean);
		finish_reason(r, "process %d is gone", (int)r->pid);
		return;
	}
	/* A frame line of any format says the read worked. */
	int frames = strstr(clean, "#0 ") != NULL || strstr(clean, "  File \"") != NULL ||
		     strstr(clean, "Traceback (most recent call first)") != NULL;
	if (!frames && process_gone(r->pid)) {
		free(clean);
		finish_reason(r, "process %d is gone", (int)r->pid);
		return;
	}
	if (r->step == STEP_PYTHON && strstr(clean, "  File \"") == NULL) {
		/* The extension found no interpreter frame (symbols of another
		 * build, a thread outside Python): the native stack says more. */
		free(clean);
		snprintf(r->note, sizeof(r->note), "no Python frames: gdb found none in %s",
			 r->exe);
		r->step = native_step(r);
		r->out.len = r->err.len = r->out.dropped = r->err.dropped = 0;
		run_step(r);
		return;
	}
	if (!frames) {
		free(clean);
		last_line(r->err.len ? &r->err : &r->out, line, sizeof(line));
		finish_reason(r, "%s failed (exit %d): %s", r->tool_name, code,
			      line[0] ? line : "no stack in its output");
		return;
	}
	if (r->out.dropped && !r->note[0])
		snprintf(r->note, sizeof(r->note), "output cut at %zu bytes (%zu more)", r->out.max,
			 r->out.dropped);
	finish(r, clean, strlen(clean), NULL);
	free(clean);
}

static void maybe_step_done(struct read *r)
{
	if (!r->finished && r->tool_exited && !r->out_pipe && !r->err_pipe) {
		uv_timer_stop(&r->timer);
		step_done(r);
	}
}

static void on_tool_exit(void *arg, pid_t pid, int wstatus)
{
	struct read *r = arg;
	struct smt_stacks *s = r->s;

	(void)pid;
	hold(s);
	r->tool_exited = 1;
	r->wstatus = wstatus;
	if (r->out_pipe || r->err_pipe)
		uv_timer_start(&r->timer, on_timer, DRAIN_MS, 0);
	maybe_step_done(r);
	release(s);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	static char chunk[READ_CHUNK];

	(void)h;
	(void)suggested;
	/* Copied into the read's bounded buffer at once: one chunk serves all. */
	*b = uv_buf_init(chunk, sizeof(chunk));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct tpipe *tp = st->data;
	struct read *r = tp->r;
	struct buf *to = tp->to;

	if (n > 0) {
		size_t keep = to->len + (size_t)n <= to->max ? (size_t)n : to->max - to->len;
		if (keep) {
			memcpy(to->s + to->len, b->base, keep);
			to->len += keep;
			to->s[to->len] = '\0';
		}
		to->dropped += (size_t)n - keep;
		return;
	}
	if (n == 0)
		return;
	struct smt_stacks *s = r->s;
	hold(s);
	close_pipe(tp == r->out_pipe ? &r->out_pipe : &r->err_pipe);
	maybe_step_done(r);
	release(s);
}

static int open_pipe(struct read *r, struct tpipe **tpp, struct buf *to, int fd)
{
	struct tpipe *tp = calloc(1, sizeof(*tp));
	int rc;

	if (tp == NULL) {
		close(fd);
		return -ENOMEM;
	}
	if (to->s == NULL && (to->s = malloc(to->max + 1)) == NULL) {
		free(tp);
		close(fd);
		return -ENOMEM;
	}
	to->s[0] = '\0';
	tp->r = r;
	tp->to = to;
	uv_pipe_init(r->s->loop, &tp->h, 0);
	tp->h.data = tp;
	r->handles++;
	*tpp = tp;
	rc = uv_pipe_open(&tp->h, fd);
	if (rc < 0)
		close(fd);
	else
		rc = uv_read_start((uv_stream_t *)&tp->h, on_alloc, on_read);
	/* Once opened, the descriptor is the handle's: closed with it. */
	if (rc < 0)
		close_pipe(tpp);
	return rc;
}

/* The argv of R's current step, in ARGV (room for 24), with STORE for
 * the strings it makes. */
static int build_argv(struct read *r, char **argv, char store[][PATH_MAX + 32], char *code)
{
	int n = 0;

	if (r->step == STEP_EUSTACK) {
		argv[n++] = "eu-stack";
		argv[n++] = "-p";
		snprintf(store[0], sizeof(store[0]), "%d", (int)r->pid);
		argv[n++] = store[0];
		argv[n] = NULL;
		return n;
	}
	argv[n++] = "gdb";
	argv[n++] = "-nx";
	argv[n++] = "-batch";
	/* Never a prompt, never the network. */
	argv[n++] = "-iex";
	argv[n++] = "set debuginfod enabled off";
	if (r->step == STEP_PYTHON) {
		/* The extension is sourced explicitly (found above), and no
		 * shared library is read unless it is the interpreter. */
		argv[n++] = "-iex";
		argv[n++] = "set auto-load python-scripts off";
		argv[n++] = "-iex";
		argv[n++] = "set auto-solib-add off";
	}
	/* Symbols are read before the attach, so the process is stopped
	 * only while gdb reads its frames. */
	argv[n++] = r->exe;
	if (r->step == STEP_PYTHON) {
		snprintf(store[0], sizeof(store[0]), "source %s", r->script);
		argv[n++] = "-ex";
		argv[n++] = store[0];
	}
	snprintf(store[1], sizeof(store[1]), "attach %d", (int)r->pid);
	argv[n++] = "-ex";
	argv[n++] = store[1];
	if (r->step == STEP_PYTHON) {
		if (r->libpython) {
			argv[n++] = "-ex";
			argv[n++] = "sharedlibrary libpython";
		}
		char *c = code + sprintf(code, "python exec(bytes.fromhex('");
		for (const char *q = python_walker; *q; q++)
			c += sprintf(c, "%02x", (unsigned char)*q);
		strcpy(c, "').decode())");
		argv[n++] = "-ex";
		argv[n++] = code;
	} else {
		argv[n++] = "-ex";
		argv[n++] = "thread apply all bt";
	}
	argv[n] = NULL;
	return n;
}

/* Start the tool of R's current step. */
static void run_step(struct read *r)
{
	struct smt_stacks *s = r->s;
	char store[2][PATH_MAX + 32], cwd[64];
	char code[2 * sizeof(python_walker) + 64];
	char *argv[24];
	struct smt_spawn_opts so;
	uint64_t now = uv_now(s->loop);
	int out_r = -1, err_r = -1, rc;

	if (r->step == STEP_NONE) {
		finish_reason(r, "no stack reader installed (neither gdb nor eu-stack is in PATH)");
		return;
	}
	if (now >= r->deadline) {
		r->tool_name = r->step == STEP_EUSTACK ? "eu-stack" : "gdb";
		finish_reason(r, "timed out after %u ms (%s)", r->timeout_ms, r->tool_name);
		return;
	}
	if (process_gone(r->pid)) {
		finish_reason(r, "process %d is gone", (int)r->pid);
		return;
	}
	r->tool_name = r->step == STEP_PYTHON ? "gdb python" :
		r->step == STEP_EUSTACK       ? "eu-stack" :
						"gdb";
	r->tool_exited = 0;
	r->out.max = s->cfg.max_output;
	r->err.max = STDERR_MAX;
	build_argv(r, argv, store, code);
	/* In the target's directory, gdb finds its relative source files. */
	snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)r->pid);
	int dfd = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		close(dfd);
	so = (struct smt_spawn_opts){
		.argv = argv, .envp = s->cfg.envp, .cwd = dfd >= 0 ? cwd : NULL, .stdin_fd = -1,
		/* The tool reads, and gdb runs, what the target names: as the
		 * target, unless that is root or smtd (rankcred.h). */
		.as_user = !r->cred.privileged, .uid = r->cred.uid, .gid = r->cred.gid,
	};
	rc = smt_spawn_piped(&so, &r->tool, &out_r, &err_r);
	if (r->tool > 0) {
		if (smt_reaper_watch(s->reaper, r->tool, on_tool_exit, r) < 0) {
			kill(-r->tool, SIGKILL);
			r->tool = -1;
			rc = -ENOMEM;
			goto fail;
		}
	}
	if (rc < 0 && r->tool <= 0)
		goto fail;
	if (rc < 0) {
		/* exec failed in the child, which has exited: the reaper
		 * collects it and the empty output reads as a failure. */
		snprintf(r->note, sizeof(r->note), "%s: %s", argv[0], strerror(-rc));
	}
	/* open_pipe takes the descriptor, also when it fails. */
	rc = open_pipe(r, &r->out_pipe, &r->out, out_r);
	out_r = -1;
	if (rc == 0) {
		rc = open_pipe(r, &r->err_pipe, &r->err, err_r);
		err_r = -1;
	}
	if (rc < 0) {
		if (err_r >= 0)
			close(err_r);
		finish_reason(r, "cannot read %s's output: %s", r->tool_name, strerror(-rc));
		return;
	}
	uv_timer_start(&r->timer, on_timer, r->deadline - now, 0);
	return;
fail:
	if (out_r >= 0)
		close(out_r);
	if (err_r >= 0)
		close(err_r);
	finish_reason(r, "cannot start %s: %s", r->tool_name, strerror(-rc));
}

static void on_timer(uv_timer_t *t)
{
	struct read *r = t->data;
	struct smt_stacks *s = r->s;

	if (r->queued) {
		hold(s);
		finish_reason(r, "timed out after %u ms waiting for a free reader (%u at once)",
			      r->timeout_ms, s->cfg.max_parallel);
		release(s);
		return;
	}
	if (r->tool_exited) {
		/* Something the tool started holds its pipes: stop waiting. */
		hold(s);
		close_pipe(&r->out_pipe);
		close_pipe(&r->err_pipe);
		maybe_step_done(r);
		release(s);
		return;
	}
	r->timed_out = 1;
	if (r->tool > 0) {
		kill(-r->tool, SIGKILL);
		/* ptrace's stop may outlive a tracer killed mid-attach. */
		kill(r->pid, SIGCONT);
	}
	uv_timer_start(&r->timer, on_timer, DRAIN_MS, 0);
}

static void begin(struct read *r)
{
	char path[PATH_MAX];
	struct smt_proc_stat st;

	r->running = 1;
	r->s->running++;
	if (smt_proc_stat(NULL, r->pid, &st) < 0 || smt_rankcred_of(NULL, r->pid, &r->cred) < 0) {
		finish_reason(r, "process %d is gone", (int)r->pid);
		return;
	}
	r->starttime = st.starttime;
	inspect(r);
	if (r->python && !r->s->cfg.no_python && r->script[0] &&
	    smt_spawn_find_program("gdb", r->s->cfg.envp, NULL, path, sizeof(path)) == 0)
		r->step = STEP_PYTHON;
	else
		r->step = native_step(r);
	if (r->step != STEP_PYTHON && r->python && !r->note[0] && !r->s->cfg.no_python)
		snprintf(r->note, sizeof(r->note), "no Python frames: gdb is not in PATH");
	run_step(r);
}

static void start_next(struct smt_stacks *s)
{
	while (!TAILQ_EMPTY(&s->queue) && s->running < s->cfg.max_parallel) {
		struct read *r = TAILQ_FIRST(&s->queue);
		TAILQ_REMOVE(&s->queue, r, wait);
		r->queued = 0;
		begin(r);
	}
}

int smt_stacks_new(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_stacks_config *cfg,
		   struct smt_stacks **out)
{
	struct smt_stacks *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -ENOMEM;
	s->loop = loop;
	s->reaper = reaper;
	LIST_INIT(&s->reads);
	TAILQ_INIT(&s->queue);
	if (cfg)
		s->cfg = *cfg;
	if (s->cfg.max_parallel == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		s->cfg.max_parallel = n < 1 ? 1 : n > PARALLEL_CAP ? PARALLEL_CAP : (unsigned)n;
	}
	if (s->cfg.max_output == 0)
		s->cfg.max_output = SMT_STACKS_OUTPUT_MAX;
	*out = s;
	return 0;
}

/* Reads start from the loop, never inside the caller's call: the callback
 * must not run before smt_stacks_read has returned. */
static void on_first_tick(uv_timer_t *t)
{
	struct read *r = t->data;
	struct smt_stacks *s = r->s;

	hold(s);
	start_next(s);
	if (r->queued) {
		/* Still waiting for a slot: the timer now is the deadline. */
		uint64_t now = uv_now(s->loop);
		uv_timer_start(&r->timer, on_timer, r->deadline > now ? r->deadline - now : 0, 0);
	}
	release(s);
}

int smt_stacks_read(struct smt_stacks *s, pid_t pid, unsigned timeout_ms, smt_stacks_cb cb,
		    void *arg)
{
	struct read *r;

	if (s == NULL || s->closing || pid <= 0 || cb == NULL)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	*r = (struct read){ .s = s, .pid = pid, .cb = cb, .arg = arg, .tool = -1,
			    .timeout_ms = timeout_ms, .start = uv_now(s->loop) };
	r->deadline = r->start + timeout_ms;
	uv_timer_init(s->loop, &r->timer);
	r->timer.data = r;
	r->handles = 1;
	LIST_INSERT_HEAD(&s->reads, r, link);
	r->queued = 1;
	TAILQ_INSERT_TAIL(&s->queue, r, wait);
	uv_timer_start(&r->timer, on_first_tick, 0, 0);
	return 0;
}

static void hold(struct smt_stacks *s)
{
	s->busy++;
}

static void release(struct smt_stacks *s)
{
	if (--s->busy == 0 && s->closing)
		free(s);
}

void smt_stacks_close(struct smt_stacks *s)
{
	if (s == NULL || s->closing)
		return;
	s->closing = 1;
	hold(s);
	while (!LIST_EMPTY(&s->reads))
		finish_reason(LIST_FIRST(&s->reads), "cancelled: smtd is stopping");
	release(s);
}
