/*
 * pidwatch.h - the end of a process that is not (necessarily) our child.
 *
 * A pidfd becomes readable when its process exits; libuv polls it like any
 * descriptor, so waiting for orted, a rank or a leftover of the job costs
 * no wakeup and no /proc scan.  The callback runs once, from the loop:
 * when the process ends, or at once when it was already gone.  The status
 * is not known here (waitpid belongs to the reaper and to the process's
 * parent); callers that need it get it elsewhere.
 */
#ifndef SMT_PIDWATCH_H
#define SMT_PIDWATCH_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct smt_pidwatch;

typedef void (*smt_pidwatch_cb)(void *arg, pid_t pid);

/*
 * Watch PID (if its start time is still START; 0: any).  Returns 0 and
 * *OUT; -ENOSYS (no pidfds: nothing is watched, no callback) or -ENOMEM.
 * A process already gone gives 0 and an early callback.
 */
int smt_pidwatch_start(uv_loop_t *loop, pid_t pid, uint64_t start, smt_pidwatch_cb cb,
		       void *arg, struct smt_pidwatch **out);

/* The pidfd, to signal the process safely (-1 when it was gone). */
int smt_pidwatch_fd(const struct smt_pidwatch *w);
/* Nonzero once the process has ended. */
int smt_pidwatch_ended(const struct smt_pidwatch *w);

/* Stop watching; no callback after this.  NULL is fine. */
void smt_pidwatch_stop(struct smt_pidwatch *w);

#endif
