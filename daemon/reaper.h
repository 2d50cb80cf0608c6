/*
 * reaper.h - the one owner of waitpid() in smtd.
 *
 * smtd is PID 1 of its container or, otherwise, a child subreaper
 * (PR_SET_CHILD_SUBREAPER), so orphans of the job - a daemonized orted,
 * ranks left behind by a killed mpirun - are re-parented to it.  The reaper
 * takes SIGCHLD as a loop event and reaps every child with
 * wait4(-1, WNOHANG), started by smtd or adopted.  Whoever wants a
 * child's exit status registers its PID with smt_reaper_watch right after
 * starting it, in the same loop callback: a child cannot be reaped before
 * that, as reaping happens only on a loop event.  Nothing about a reaped
 * PID is remembered: once reaped, the number may be another process's,
 * and a status kept for it would be handed to the wrong one.  Because libuv's
 * uv_spawn() would reap its own children too, smtd never calls it (see
 * spawn.h).
 */
#ifndef SMT_REAPER_H
#define SMT_REAPER_H

#include <sys/types.h>
#include <uv.h>

struct smt_reaper;

typedef void (*smt_reaper_cb)(void *arg, pid_t pid, int wstatus);
/* Called for every reaped process nobody watched (adopted orphans). */
typedef void (*smt_reaper_any_cb)(void *arg, pid_t pid, int wstatus);

int smt_reaper_new(uv_loop_t *loop, struct smt_reaper **out);
void smt_reaper_set_any(struct smt_reaper *r, smt_reaper_any_cb cb, void *arg);

/*
 * Call CB once when PID, a child started in this loop callback, exits.
 * Returns 0 or -ENOMEM.
 */
int smt_reaper_watch(struct smt_reaper *r, pid_t pid, smt_reaper_cb cb, void *arg);
void smt_reaper_unwatch(struct smt_reaper *r, pid_t pid);

/* Inside a watcher's callback: the peak resident memory of the process
 * reported, in KiB (wait4's ru_maxrss: it, or a descendant it reaped
 * itself); 0 elsewhere or when unknown. */
long long smt_reaper_maxrss(const struct smt_reaper *r);

/* Nonzero while PID is a child somebody watches (one smtd started). */
int smt_reaper_watched(const struct smt_reaper *r, pid_t pid);

/* Reap now (also done on every SIGCHLD). */
void smt_reaper_reap(struct smt_reaper *r);

void smt_reaper_close(struct smt_reaper *r);

#endif
