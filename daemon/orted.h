/*
 * orted.h - on a worker, the Open MPI daemon that the leader's mpirun
 * starts here, and when it ends.
 *
 * The leader's mpirun runs `smtctl exec-orted orted ARGS` as its launch
 * agent: smtctl announces its own PID to this host's smtd and then execs
 * orted in the foreground, so that PID is orted's.  smtd watches it with a
 * pidfd (the process is sshd's grandchild, not ours: no waitpid for it),
 * whose readability is the exit event.  If nothing is announced in time,
 * /proc is read once for a live orted or prted in this PID namespace.
 */
#ifndef SMT_ORTED_H
#define SMT_ORTED_H

#include <sys/types.h>
#include <uv.h>

struct smt_orted;

typedef void (*smt_orted_exit_cb)(void *arg, pid_t pid);

/* Watch PID; CB runs once from the loop when it has exited.  Returns 0,
 * -ESRCH when it is already gone (CB still runs), or another -errno. */
int smt_orted_watch(uv_loop_t *loop, pid_t pid, smt_orted_exit_cb cb, void *arg,
		    struct smt_orted **out);
void smt_orted_close(struct smt_orted *o);

/* Read PROC once for a process named orted or prted that is not a zombie;
 * returns its PID, 0 when there is none, or -errno. */
pid_t smt_orted_find(const char *proc);

#endif
