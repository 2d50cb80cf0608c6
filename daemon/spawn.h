/*
 * spawn.h - start a child the way a supervisor must.
 *
 * The child gets its own session and process group (so a signal can reach
 * everything it starts with kill(-pgid)), default signal dispositions and
 * an empty signal mask, the given working directory, environment and
 * standard descriptors, and no other descriptor of the daemon.  argv[0] is
 * looked up in the PATH of the child's environment, as
 * smt_spawn_find_program() reports it (glibc's execvpe() would search the
 * daemon's own PATH), and run with execve(): nothing passes through a
 * shell, not even a script without "#!" (ENOEXEC, where execvp() would
 * hand it to /bin/sh).
 *
 * smtd never uses uv_spawn(): the reaper (reaper.h) is the only owner of
 * waitpid(), and libuv would reap its own children behind its back.
 */
#ifndef SMT_SPAWN_H
#define SMT_SPAWN_H

#include <sys/types.h>

struct smt_spawn_opts {
	char *const *argv;   /* NULL-terminated; argv[0] searched in ENVP's PATH */
	char *const *envp;   /* NULL-terminated; NULL means the daemon's own */
	const char *cwd;     /* NULL: keep the daemon's */
	int stdin_fd;        /* -1: /dev/null */
	int stdout_fd;       /* -1: the daemon's stdout */
	int stderr_fd;       /* -1: the daemon's stderr */
	int cgroup_fd;       /* a cgroup.procs the child joins before exec; -1: none
				(0 in a zero-initialised struct also means none) */
	int as_user;         /* 1: the child takes UID and GID (and no other group)
				before its chdir and exec; a failure is its exec error */
	uid_t uid;
	gid_t gid;
	const char *stdout_id_env; /* smt_spawn_piped only: the child's environment
				also has NAME=DEVICE:INODE of its stdout pipe
				(libsmtlinebuf.so finds that pipe by it) */
	int no_wait;         /* 1: for a caller starting many children in a row
				(the leader's channels), where waiting for each
				exec through a pipe costs two scheduling delays,
				long on a loaded machine.  Without as_user and a
				cgroup the child is started by posix_spawn (no copy
				of the daemon's page tables; an exec error is
				returned, with no child); else it returns once
				forked, and an exec error is only the child's exit
				status (smt_spawn_exec_status) */
};

/*
 * Fork and exec.  Returns 0 with *PID set once the exec succeeded (with
 * OPTS->no_wait: once forked).  When
 * the exec (or the chdir before it) fails, the child has already exited;
 * returns the child's errno, negated, with *PID still set so that the
 * caller's reaper collects it.  Returns another -errno with *PID = -1 when
 * no child was created.
 */
int smt_spawn(const struct smt_spawn_opts *opts, pid_t *pid);

/*
 * smt_spawn with the child's stdout and stderr on two new pipes (OPTS's
 * own stdout_fd and stderr_fd are ignored): as smt_spawn, and when *PID
 * is set, *OUT_R and *ERR_R are the pipes' read ends (close-on-exec),
 * which the caller owns; else both are -1.
 */
int smt_spawn_piped(const struct smt_spawn_opts *opts, pid_t *pid, int *out_r, int *err_r);

/* The shell's exit status for an exec error: 127 not found, 126 otherwise. */
int smt_spawn_exec_status(int err);

/*
 * Look PROG up as execvp() would (PATH from ENVP, else the daemon's), and
 * check it can be executed.  Returns 0, -ENOENT or -EACCES.
 */
int smt_spawn_check_program(const char *prog, char *const *envp, const char *cwd);

/* As smt_spawn_check_program, and the path found is copied to OUT. */
int smt_spawn_find_program(const char *prog, char *const *envp, const char *cwd, char *out,
			   size_t outlen);

#endif
