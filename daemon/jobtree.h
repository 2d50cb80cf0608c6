/*
 * jobtree.h - the job on this host, exactly (smtd(8) SIGNALS).
 *
 * The job on a host is the processes that descend from the job's launches
 * there: the launched command (mpirun, torchrun or the program), the Open
 * MPI daemon the leader's mpirun starts here, the ranks and everything they
 * start - also what double-forks or calls setsid and so leaves the tree.
 * Never sshd or its sessions, never the leader's channels, never a process
 * that existed before the job, whoever started it.
 *
 * Three facts decide, read from /proc once per call, nothing polled:
 *   1. the roots: processes registered with smt_jobtree_add (identified by
 *      PID and start time, so a reused PID is never taken for one), and
 *      every process whose parent chain reaches a root;
 *   2. the job cgroup, where cgroup v2 is mounted writable for us: every
 *      root is moved into it, so everything they fork is in it too;
 *   3. the job's mark: every root is started with SMTD_JOB=<token> in its
 *      environment, a random token of this smtd, which whatever it starts
 *      inherits; a process that left the tree (its parent died) still
 *      carries it.  Nothing that existed before the job can carry it.
 * Signals go through pidfds checked against the start time read in the
 * same pass (procfs.h), so a PID reused meanwhile is never signalled.
 */
#ifndef SMT_JOBTREE_H
#define SMT_JOBTREE_H

#include <sys/types.h>

/* The environment variable that marks the job's processes. */
#define SMT_JOB_MARK_ENV "SMTD_JOB"

/* Nonzero when PID is one of smtd's own helpers (sshd, ssh, a stack
 * reader): never the job's, whatever the rules above say. */
typedef int (*smt_jobtree_keep)(void *arg, pid_t pid);
/* Called for each process signalled. */
typedef void (*smt_jobtree_each)(void *arg, pid_t pid);

struct smt_jobtree_config {
	int use_cgroup;        /* try a job cgroup (v2) */
	const char *name;      /* part of the cgroup's name (the host) */
	smt_jobtree_keep keep;
	void *keep_arg;
	const char *proc;      /* /proc (tests); NULL: "/proc" */
};

struct smt_jobtree;

int smt_jobtree_new(const struct smt_jobtree_config *cfg, struct smt_jobtree **out);

/* "SMTD_JOB=<token>", for the environment of everything the job runs. */
const char *smt_jobtree_mark(const struct smt_jobtree *jt);

/* The job cgroup's directory, or NULL when there is none (and why in
 * *WHY, a static string, when not NULL). */
const char *smt_jobtree_cgroup(const struct smt_jobtree *jt, const char **why);

/* A descriptor of the job cgroup's cgroup.procs for a child to write "0"
 * to before exec (spawn.h), or -1. */
int smt_jobtree_cgroup_fd(const struct smt_jobtree *jt);

/* PID is a root of the job: remembered with its start time and moved into
 * the job cgroup.  0, -ESRCH (gone), -ENOMEM. */
int smt_jobtree_add(struct smt_jobtree *jt, pid_t pid);

/* Whether PID is part of the job now: 1, 0, or -errno. */
int smt_jobtree_member(struct smt_jobtree *jt, pid_t pid);

/* SIGNO (0: count only) to every process of the job; EACH(ARG, PID) for
 * each one signalled.  Returns how many, or -errno. */
int smt_jobtree_signal(struct smt_jobtree *jt, int signo, smt_jobtree_each each, void *arg);

/* Remove the job cgroup (when empty) and free. */
void smt_jobtree_free(struct smt_jobtree *jt);

#endif
