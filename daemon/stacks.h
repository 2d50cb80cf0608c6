/*
 * stacks.h - read the stack of a live process with an installed tool, on
 * the loop, without blocking it.
 *
 * A read runs a debugger as a child of smtd: started with smt_spawn (no
 * shell, no daemon descriptor, its own process group, in the target's
 * working directory so that relative source paths resolve), watched with
 * smt_reaper_watch (so it is never counted as part of the job), its stdout
 * and stderr read through uv pipes, its output bounded, killed at the time
 * limit.  The tool is chosen for the most useful stack:
 *
 *   Python process (its executable is python*, or it maps libpython):
 *     gdb with CPython's gdb extension: every thread's Python frames with
 *     their source lines, in py-bt's format, read from the interpreter's
 *     own frame lists (no C unwinding, so no shared library's symbols are
 *     loaded: 0.5 s for a torch rank where py-bt takes 2.4 s and 430 MB).
 *     It needs the interpreter's debug symbols and the extension script of
 *     the same build: on Debian 12, package python3.11-dbg for
 *     /usr/bin/python3.11 (/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py);
 *     a python built from source (pyenv) installs its script next to the
 *     binary (bin/python3.11-gdb.py).  gdb loads the symbols before it
 *     attaches, so the process is stopped only while its frames are read.
 *     When there is no script, or gdb finds no Python frame, the native
 *     stack is read instead and the result says why (note).
 *   otherwise: `eu-stack -p PID` (elfutils; the process is stopped for a
 *     few milliseconds), else gdb `thread apply all bt`.
 *
 * The text is the tool's output without its noise (banners, "[New LWP]",
 * thread-debugging lines, the location printed at attach, gdb's
 * "[Inferior 1 (process N) detached]"); every frame is kept.  In a py-bt
 * text, threads without a Python frame (C++ worker threads) are counted on
 * one line instead of one "Unable to locate python frame" each.
 *
 * Several reads may be asked for at once: the module runs at most
 * max_parallel tools at a time and queues the rest.  The time limit of a
 * read counts from the call, queueing included, so that a caller's
 * deadline holds however many ranks it asked for.  A tool killed at the
 * limit may leave its target stopped under ptrace: the target gets
 * SIGCONT.
 *
 * Reasons (exact texts, the result's reason, PID and N filled in):
 *   "no stack reader installed (neither gdb nor eu-stack is in PATH)"
 *   "process PID is gone"                       (before or during the read)
 *   "ptrace not permitted: ..."                 (says which capability or
 *                                                sysctl: CAP_SYS_PTRACE,
 *                                                kernel.yama.ptrace_scope)
 *   "timed out after N ms (TOOL)"
 *   "timed out after N ms waiting for a free reader (M at once)"
 *   "TOOL failed (exit N): LAST STDERR LINE"
 *   "cancelled: smtd is stopping"
 */
#ifndef SMT_STACKS_H
#define SMT_STACKS_H

#include <sys/types.h>
#include <uv.h>

#include "reaper.h"

#define SMT_STACKS_OUTPUT_MAX (256 * 1024)

struct smt_stacks_config {
	unsigned max_parallel; /* tools running at once; 0: the number of CPUs, at most 8 */
	size_t max_output;     /* bytes of a tool's stdout kept; 0: SMT_STACKS_OUTPUT_MAX */
	char *const *envp;     /* the tools' environment and PATH; NULL: the daemon's */
	int no_python;         /* 1: native frames only, even for Python */
};

struct smt_stack_result {
	pid_t pid;
	const char *text;    /* the stack, NUL-terminated; NULL when it could not be read */
	size_t len;
	const char *reason;  /* one line, when text is NULL */
	const char *tool;    /* "gdb python", "eu-stack", "gdb"; NULL if none ran */
	const char *note;    /* NULL, or one line: why there are no Python frames,
			        or that the output was cut */
	int python;          /* the process runs a Python interpreter */
	double seconds;      /* from the call to the result */
};

/* Called once per read, from the loop; RES and its strings are valid only
 * during the call. */
typedef void (*smt_stacks_cb)(void *arg, const struct smt_stack_result *res);

struct smt_stacks;

/* CFG may be NULL.  Returns 0 or -ENOMEM. */
int smt_stacks_new(uv_loop_t *loop, struct smt_reaper *reaper, const struct smt_stacks_config *cfg,
		   struct smt_stacks **out);

/*
 * Read the stack of PID within TIMEOUT_MS (from now).  CB is called once,
 * from a later loop iteration, with the stack or the reason.  Returns 0, or
 * -EINVAL / -ENOMEM (and CB is never called).
 */
int smt_stacks_read(struct smt_stacks *s, pid_t pid, unsigned timeout_ms, smt_stacks_cb cb,
		    void *arg);

/*
 * Kill every tool still running (their targets get SIGCONT), call each
 * pending read's callback with "cancelled: smtd is stopping", and free the
 * reader once its handles are closed.  May be called from a read's
 * callback (typically the last one a caller waited for).
 */
void smt_stacks_close(struct smt_stacks *s);

/*
 * The tool's raw stdout (LEN bytes) without its noise, as described above.
 * *OUT is malloc'ed and NUL-terminated.  Returns 0 or -ENOMEM.  Pure.
 */
int smt_stacks_clean(const char *raw, size_t len, char **out);

#endif
