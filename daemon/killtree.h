/*
 * killtree.h - find and signal every process of the job on this host.
 *
 * A job's processes are the members of its session (the launched child
 * calls setsid(); mpirun gives each rank its own process group but keeps
 * the session) and every descendant of smtd, which as PID 1 or subreaper
 * inherits the orphans (an orted that daemonized, ranks of a killed
 * mpirun).  Processes in KEEP - sshd and what it runs for other purposes -
 * are spared together with their descendants.  /proc is read once per
 * call; nothing polls.
 */
#ifndef SMT_KILLTREE_H
#define SMT_KILLTREE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Send SIGNO to every process of session SID (if SID > 0) and to every
 * descendant of this process, except KEEP[0..NKEEP) and their descendants,
 * and never to this process.  PROC is the /proc mount to read (NULL means
 * "/proc").  Returns the number of processes signalled, or -errno.
 */
int smt_killtree(const char *proc, pid_t sid, const pid_t *keep, size_t nkeep, int signo);

#endif
