/*
 * procfs.h - what /proc says about a process, and pidfds.
 *
 * A PID is only a number: once its process is reaped the number may name
 * another process.  smtd therefore never signals a PID it merely read:
 * smt_proc_open() opens a pidfd and checks that the process behind it is
 * still the one that was read (same start time), and every signal goes
 * through that pidfd (pidfd_send_signal), which can never reach a newer
 * process.  On a kernel without pidfds (before 5.3) the functions fall back
 * to the PID with the same start-time check, narrowing the race to the
 * instant between check and kill.
 */
#ifndef SMT_PROCFS_H
#define SMT_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct smt_proc_stat {
	pid_t pid, ppid, pgrp, sid;
	char state;               /* R S D Z T ... */
	uint64_t starttime;       /* clock ticks after boot: the identity */
	char comm[32];
	double cpu_s;             /* utime + stime */
};

/* Read PROC/PID/stat (PROC NULL: "/proc").  0 or -errno (-ESRCH when gone). */
int smt_proc_stat(const char *proc, pid_t pid, struct smt_proc_stat *st);

/* Whether PROC/PID/environ holds exactly "NAME=VALUE" ("NAME=": NAME with
 * any value).  1, 0 or -errno. */
int smt_proc_has_env(const char *proc, pid_t pid, const char *assignment);

/* A pidfd for PID (close-on-exec): >= 0, or -errno (-ENOSYS without pidfd
 * support, -ESRCH when gone). */
int smt_pidfd_open(pid_t pid);

/*
 * A pidfd for PID, but only if that process still has START (0: any) as
 * its start time: >= 0, -ESRCH when it is gone or was replaced, -ENOSYS
 * when the kernel has no pidfds.
 */
int smt_proc_open(pid_t pid, uint64_t start);

/* SIGNO to the process behind PIDFD: 0 or -errno (-ESRCH when it ended). */
int smt_pidfd_signal(int pidfd, int signo);

/* SIGNO to the main thread of the process behind PIDFD (PID), not to
 * whichever thread the kernel picks: a Python rank's faulthandler dumps
 * its Python threads only from a thread the interpreter knows. */
int smt_pidfd_signal_main(int pidfd, pid_t pid, int signo);

/*
 * SIGNO to PID if it still has START as its start time, through a pidfd
 * where the kernel has them.  0, -ESRCH (gone or replaced) or -errno.
 */
int smt_proc_signal(pid_t pid, uint64_t start, int signo);

/* The first live (not zombie) process named COMM in PROC (NULL: "/proc"):
 * its PID, 0 when there is none, or -errno. */
pid_t smt_proc_find_comm(const char *proc, const char *comm);

/* As smt_proc_find_comm, the first for which OK(ARG, PID) is nonzero: a
 * process anyone may name COMM must not hide the one sought. */
pid_t smt_proc_find_comm_if(const char *proc, const char *comm, int (*ok)(void *arg, pid_t pid),
			    void *arg);

/* The largest PID this kernel hands out (/proc/sys/kernel/pid_max; 4194304
 * when unreadable). */
pid_t smt_proc_pid_max(void);

#endif
