/* spawn.c - fork/exec with a clean slate for the child. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pathsearch.h"
#include "spawn.h"

extern char **environ;

/*
 * Runs in the child between fork and exec: async-signal-safe calls only.
 * FILE is the program the parent found in the PATH of the child's own
 * environment (execvpe() would search the daemon's), or NULL with FIND_ERR
 * why there is none.
 */
static void __attribute__((noreturn))
child_exec(const struct smt_spawn_opts *o, const char *file, int find_err, int errfd)
{
	struct sigaction sa;
	int err;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);

	setsid();
	/* Into the job cgroup before anything of the job runs, so that all it
	 * forks is there too. */
	if (o->cgroup_fd > 0 && write(o->cgroup_fd, "0\n", 2) < 0)
		goto fail;
	if (o->stdin_fd >= 0) {
		if (dup2(o->stdin_fd, 0) < 0)
			goto fail;
	} else {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0 || dup2(fd, 0) < 0)
			goto fail;
		if (fd > 2)
			close(fd);
	}
	if (o->stdout_fd >= 0 && dup2(o->stdout_fd, 1) < 0)
		goto fail;
	if (o->stderr_fd >= 0 && dup2(o->stderr_fd, 2) < 0)
		goto fail;
	/* Whatever the daemon holds, even a descriptor someone forgot to
	 * mark, must not reach the job. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		for (int fd = 3; fd < 1024; fd++)
			if (fd != errfd)
				close(fd);
	}
	/* Raw calls: they change this thread only, which after fork is the
	 * whole process, and stay async-signal-safe.  Before the chdir, so
	 * that the directory too is entered as the user. */
	if (o->as_user &&
	    (syscall(SYS_setgroups, 1, &o->gid) < 0 || syscall(SYS_setgid, o->gid) < 0 ||
	     syscall(SYS_setuid, o->uid) < 0))
		goto fail;
	if (o->cwd && chdir(o->cwd) < 0)
		goto fail;

	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (file == NULL) {
		errno = find_err;
		goto fail;
	}
	execve(file, o->argv, o->envp ? o->envp : environ);
fail:
	err = errno;
	while (write(errfd, &err, sizeof(err)) < 0 && errno == EINTR)
		;
	_exit(smt_spawn_exec_status(err));
}

/*
 * The same child through posix_spawn, which glibc runs in a clone that
 * shares the parent's memory until the exec: no copy of the parent's page
 * tables per child.  fork() costs the leader 2-3 ms of CPU per channel on
 * these VMs, growing with its size (bench B12: a 1000-worker leader forks
 * some 2500 times at 60 MiB); this costs 0.5 ms.  Only for what
 * posix_spawn can do: no user or cgroup to take before the exec.  An exec
 * error is returned here, with no child left (glibc reaps it).
 */
static int spawn_shared_vm(const struct smt_spawn_opts *o, const char *file, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t all, none;
	int rc;

	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return -rc;
	if ((rc = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -rc;
	}
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigemptyset(&none);
	rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF |
					       POSIX_SPAWN_SETSIGMASK);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&at, &all);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (!rc)
		rc = o->stdin_fd >= 0 ?
			     posix_spawn_file_actions_adddup2(&fa, o->stdin_fd, 0) :
			     posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc && o->stdout_fd >= 0)
		rc = posix_spawn_file_actions_adddup2(&fa, o->stdout_fd, 1);
	if (!rc && o->stderr_fd >= 0)
		rc = posix_spawn_file_actions_adddup2(&fa, o->stderr_fd, 2);
	/* As child_exec's close_range: nothing of the daemon's reaches it. */
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (!rc && o->cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
	if (!rc)
		rc = posix_spawn(pid, file, &fa, &at, o->argv, o->envp ? o->envp : environ);
	if (rc)
		*pid = -1;
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -rc;
}

int smt_spawn(const struct smt_spawn_opts *o, pid_t *pid)
{
	sigset_t all, old;
	int fds[2] = { -1, -1 };
	int rc = 0, err = 0, find_err = 0;
	char found[PATH_MAX];
	const char *file = found;
	ssize_t n;

	*pid = -1;
	if (o->argv == NULL || o->argv[0] == NULL)
		return -EINVAL;
	/* A name with a '/' is the child's to resolve, after its chdir. */
	if (strchr(o->argv[0], '/'))
		file = o->argv[0];
	else if ((find_err = -smt_spawn_find_program(o->argv[0], o->envp, NULL, found,
						     sizeof(found))) != 0)
		file = NULL;
	if (o->no_wait && !o->as_user && o->cgroup_fd <= 0 && file)
		return spawn_shared_vm(o, file, pid);
	if (!o->no_wait && pipe2(fds, O_CLOEXEC) < 0)
		return -errno;

	/* Blocked across fork so that no handler of the daemon runs in the
	 * child before its dispositions are reset. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	*pid = fork();
	if (*pid == 0)
		child_exec(o, file, find_err, fds[1]);
	if (*pid < 0)
		rc = -errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fds[1] >= 0)
		close(fds[1]);
	if (rc < 0 || o->no_wait)
		goto out;

	/* The write end closes on a successful exec, so this read returns at
	 * once either way. */
	do
		n = read(fds[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(err))
		rc = -err;
out:
	if (fds[0] >= 0)
		close(fds[0]);
	return rc;
}

int smt_spawn_exec_status(int err)
{
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

int smt_spawn_find_program(const char *prog, char *const *envp, const char *cwd, char *out,
			   size_t outlen)
{
	/* The daemon's own environment when none is given, as execvpe() would use. */
	return smt_path_find(prog, envp ? envp : environ, cwd, out, outlen);
}

int smt_spawn_check_program(const char *prog, char *const *envp, const char *cwd)
{
	return smt_spawn_find_program(prog, envp, cwd, NULL, 0);
}

/* ENVP (NULL: the daemon's) without NAME, and NAME=DEVICE:INODE of FD
 * last; one allocation, the strings but the last shared.  NULL: no memory
 * or no fstat. */
static char **env_with_id(char *const *envp, const char *name, int fd)
{
	char *const *e = envp ? envp : environ;
	size_t n = 0, k = 0, len = strlen(name);
	struct stat st;
	char **v;

	if (fstat(fd, &st) < 0)
		return NULL;
	while (e[n])
		n++;
	v = malloc((n + 2) * sizeof(*v) + len + 48);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(e[i], name, len) != 0 || e[i][len] != '=')
			v[k++] = e[i];
	v[k] = (char *)(v + n + 2);
	snprintf(v[k], len + 48, "%s=%ju:%ju", name, (uintmax_t)st.st_dev,
		 (uintmax_t)st.st_ino);
	v[k + 1] = NULL;
	return v;
}

int smt_spawn_piped(const struct smt_spawn_opts *opts, pid_t *pid, int *out_r, int *err_r)
{
	struct smt_spawn_opts so = *opts;
	int outp[2], errp[2], rc;
	char **idenv = NULL;

	*pid = -1;
	*out_r = *err_r = -1;
	if (pipe2(outp, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		close(outp[0]);
		close(outp[1]);
		return rc;
	}
	so.stdout_fd = outp[1];
	so.stderr_fd = errp[1];
	if (so.stdout_id_env) {
		if (!(idenv = env_with_id(so.envp, so.stdout_id_env, outp[1]))) {
			rc = -ENOMEM;
			*pid = -1;
			goto out;
		}
		so.envp = idenv;
	}
	rc = smt_spawn(&so, pid);
out:
	free(idenv);
	close(outp[1]);
	close(errp[1]);
	if (*pid < 0) {
		close(outp[0]);
		close(errp[0]);
		return rc;
	}
	*out_r = outp[0];
	*err_r = errp[0];
	return rc;
}
