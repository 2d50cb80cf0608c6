/*
 * pystack.h - Python's faulthandler dump, picked out of a rank's stderr.
 *
 * When smtd ends a stalled job it can start every rank with
 * PYTHONFAULTHANDLER=1 and send SIGABRT: each Python rank then writes
 * every thread's traceback to its stderr before it dies:
 *
 *   Fatal Python error: Aborted
 *   <blank>
 *   Thread 0x00007f2a... (most recent call first):
 *     File "/usr/lib/python3.11/threading.py", line 320 in wait
 *   <blank>
 *   Current thread 0x00007f2b... (most recent call first):
 *     File "train.py", line 88 in step
 *     File "train.py", line 120 in <module>
 *   <blank>
 *   Extension modules: torch._C, numpy.core._multiarray_umath (total: 2)
 *
 * A recogniser is fed the rank's stderr a line at a time, as smtd's framer
 * delivers them (without the newline; a line cut by the framer is fed as
 * what it kept).  It starts a dump at "Fatal Python error: ", or at a
 * thread header ("Thread 0x... (most recent call first):", "Current thread
 * 0x...", "Stack (most recent call first):", which is how a dump registered
 * with faulthandler.register() or dump_traceback_later() begins).  The dump
 * goes on through blank lines, thread headers, frame lines ("  File ...",
 * "  <no Python frame>", "  ...") and ends with "Extension modules: ...", at
 * the first other line once it has a thread (that line is not part of it),
 * or at smt_pystack_end().  Up to 4 lines the interpreter writes between
 * the error line and the first thread ("Python runtime state: ...") are
 * kept.  A later dump replaces an earlier one.  The text kept is bounded
 * (MAX bytes, whole lines; "  [... N more lines]" says what was left out).
 * Feeding never fails: memory it cannot get ends the dump where it is.
 */
#ifndef SMT_PYSTACK_H
#define SMT_PYSTACK_H

#include <stddef.h>

struct smt_pystack;

/* MAX: bytes of dump text kept (0: 64 KiB).  Returns 0 or -ENOMEM. */
int smt_pystack_new(size_t max, struct smt_pystack **out);

/*
 * Feed one line (LEN bytes, no newline).  Returns 1 when the line belongs
 * to a dump, 0 when it does not.  Either way the caller still forwards the
 * line as rank output: recognising never hides anything.
 */
int smt_pystack_feed(struct smt_pystack *p, const char *line, size_t len);

/* The stream ended (EOF): a dump in progress is complete as it is. */
void smt_pystack_end(struct smt_pystack *p);

/*
 * The last dump seen, complete or in progress, NUL-terminated, each line
 * ending with a newline; NULL when none was seen.  *LEN (may be NULL) gets
 * its length.  Valid until the next feed.
 */
const char *smt_pystack_text(const struct smt_pystack *p, size_t *len);

/* Nonzero once the last dump has ended (see above). */
int smt_pystack_complete(const struct smt_pystack *p);

void smt_pystack_free(struct smt_pystack *p);

/*
 * A copy of the faulthandler dump TEXT (LEN bytes) with each frame's source
 * line under its File line, 4 spaces in, as Python's tracebacks and gdb's
 * py-bt show it - read from the file now, on the rank's host, because the
 * leader (stackgroup.h) needs the called function ("time.sleep" from
 * "time.sleep(3600)") and may not have the file.  A relative file name is
 * taken from CWD (the rank's working directory; NULL: smtd's).  Lines that
 * already have their source line, files that cannot be read, "<frozen ...>"
 * and "<string>" are left as they are; at most 64 distinct files are opened
 * and a source line is cut at 200 bytes.  The rank chooses the file names
 * (co_filename), so every file is opened as the rank (CRED, rankcred.h;
 * NULL: as smtd, for tests), without blocking or following a final link,
 * and only a regular file is read, at most 8 MiB for the whole TEXT: a
 * rank learns nothing it could not read itself, and a FIFO or /dev/zero
 * costs nothing.  *OUT is malloc'ed and NUL-terminated.  Returns 0 or
 * -ENOMEM.
 */
struct smt_rankcred;
int smt_pystack_add_source(const char *text, size_t len, const char *cwd,
			   const struct smt_rankcred *cred, char **out);

#endif
