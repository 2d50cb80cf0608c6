/*
 * stackparse.h - a process's stack, from the text a tool printed, to frames.
 *
 * Reads the four texts smtd meets, alone or mixed in one text:
 *
 *   faulthandler   Python's dump on a fatal signal (pystack.h):
 *                    Current thread 0x00007f... (most recent call first):
 *                      File "train.py", line 88 in step
 *   py-bt          gdb's `thread apply all py-bt` (CPython's gdb extension):
 *                    Thread 1 (Thread 0x7f... (LWP 470) "python3"):
 *                    Traceback (most recent call first):
 *                      <built-in method sleep of module object at remote 0x7f...>
 *                      File "train.py", line 88, in step
 *                        time.sleep(3600)
 *   gdb            `thread apply all bt`:
 *                    #1  0x00007f... in func (arg=1) at file.c:12
 *                    #2  0x00007f... in ?? () from /lib/libfoo.so
 *   eu-stack       elfutils' `eu-stack -p PID`:
 *                    TID 470:
 *                    #0  0x00007f... clock_nanosleep@GLIBC_2.2.5
 *
 * A Python frame's source line is the 4-space-indented line right after
 * its File line, as py-bt and Python's own tracebacks print it (and as
 * smt_pystack_add_source adds it to a faulthandler dump).  Lines the parser
 * does not know are skipped, so tool banners do no harm.  Frames are kept
 * innermost first, threads in the order printed.  The main thread is the
 * one whose id is the process's PID when the text says the PID (gdb's
 * "[Inferior 1 (process P) detached]", eu-stack's "PID P - process"), else
 * gdb's thread 1, eu-stack's first thread, or faulthandler's last thread
 * (CPython lists the newest thread first).  Pure logic.
 */
#ifndef SMT_STACKPARSE_H
#define SMT_STACKPARSE_H

#include <stddef.h>

enum smt_stack_format {
	SMT_STACK_UNKNOWN = 0,
	SMT_STACK_FAULTHANDLER,
	SMT_STACK_PYBT,
	SMT_STACK_GDB,
	SMT_STACK_EUSTACK,
};

struct smt_frame {
	char *func;   /* function or symbol as printed, "??" when unknown; never NULL */
	char *file;   /* source file, or NULL */
	int line;     /* source line number, 0 when unknown */
	char *code;   /* the source line, trimmed (Python frames), or NULL */
	char *object; /* gdb's "from /lib/libfoo.so", or NULL */
	int python;   /* a Python-level frame (File "...", line N) */
	int builtin;  /* py-bt's "<built-in method NAME ...>": a C function called from Python */
};

struct smt_thread {
	long id;          /* LWP / TID, or the faulthandler thread id; 0 unknown */
	int gdb_num;      /* gdb's thread number, 0 when not from gdb */
	int current;      /* faulthandler's "Current thread" */
	int main;         /* the process's main thread (exactly one thread has it) */
	size_t nframes;
	struct smt_frame *frames; /* innermost first */
	size_t frames_cap;        /* the room of frames (the parser's) */
};

struct smt_stack {
	enum smt_stack_format format; /* the first format seen */
	long pid;                     /* the process, when the text says; else 0 */
	size_t nthreads;
	struct smt_thread *threads;
	size_t nframes;               /* over all threads */
};

/*
 * Parse TEXT (LEN bytes, need not be NUL-terminated).  An empty or
 * unrecognised text gives a stack with no thread.  Returns 0 or -ENOMEM.
 */
int smt_stack_parse(const char *text, size_t len, struct smt_stack **out);

/* The main thread, or NULL when the stack has no thread. */
const struct smt_thread *smt_stack_main_thread(const struct smt_stack *st);

void smt_stack_free(struct smt_stack *st);

/*
 * A native symbol without what differs between builds of the same code or
 * says nothing about where the code is: "@GLIBC_2.2.5" versions, ".lto_priv.0"
 * and ".isra.0" style suffixes, a C++ argument list.  Writes at most SIZE
 * bytes (NUL included) to BUF and returns BUF.
 */
char *smt_frame_symbol(const char *func, char *buf, size_t size);

/* Whether FUNC is a libc/pthread/syscall wrapper a thread waits in
 * (nanosleep, futex and condition waits, poll, read, ...): never the
 * answer to "where is this thread". */
int smt_frame_is_wait_wrapper(const char *func);

#endif
