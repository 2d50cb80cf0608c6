/*
 * killtree.h - find and signal every process of the job on this host.
 *
 * A job's processes are the members of its session (the launched child
 * calls setsid(); mpirun gives each rank its own process group but keeps
 * the session) and every descendant of smtd, which as PID 1 or subreaper
 * inherits the orphans (an orted that daemonized, ranks of a killed
 * mpirun).  Processes KEEP says are not the job's - sshd, the leader's ssh
 * channels - are spared together with their descendants, unless they are in
 * the job's session.  /proc is read once per
 * call; nothing polls.
 */
#ifndef SMT_KILLTREE_H
#define SMT_KILLTREE_H

#include <stddef.h>
#include <sys/types.h>

/* Nonzero when PID (and what descends from it) is not part of the job. */
typedef int (*smt_killtree_keep)(void *arg, pid_t pid);

/*
 * Send SIGNO to every process of session SID (if SID > 0) and to every
 * descendant of this process, except those KEEP (may be NULL) spares and
 * their descendants outside the session, and never to this process.  PROC
 * is the /proc mount to read (NULL means "/proc").  SIGNO 0 only counts.
 * Returns the number of processes signalled, or -errno.
 */
int smt_killtree(const char *proc, pid_t sid, smt_killtree_keep keep, void *arg, int signo);

/* As smt_killtree, and EACH(EACH_ARG, PID) runs for every process that
 * was sent the signal. */
typedef void (*smt_killtree_each)(void *arg, pid_t pid);
int smt_killtree_visit(const char *proc, pid_t sid, smt_killtree_keep keep, void *arg,
		       int signo, smt_killtree_each each, void *each_arg);

#endif
