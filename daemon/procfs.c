/* procfs.c - /proc and pidfds (procfs.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int read_file(const char *path, char *buf, size_t size, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (off < size - 1) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			close(fd);
			return err == ESRCH ? -ESRCH : -err;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	*len = off;
	return 0;
}

int smt_proc_stat(const char *proc, pid_t pid, struct smt_proc_stat *st)
{
	char path[64], buf[1024], *open_paren, *close_paren, *p;
	size_t len, clen;
	unsigned long long start = 0;
	unsigned long utime = 0, stime = 0;
	int ppid, pgrp, sid, rc, n = 0;
	char state;

	snprintf(path, sizeof(path), "%s/%d/stat", proc ? proc : "/proc", (int)pid);
	if ((rc = read_file(path, buf, sizeof(buf), &len)) < 0)
		return rc;
	/* The command name may hold spaces and ')': fields follow the last ')'. */
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EIO;
	p = close_paren + 1;
	if (sscanf(p,
		   " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d "
		   "%llu%n",
		   &state, &ppid, &pgrp, &sid, &utime, &stime, &start, &n) < 7 ||
	    n == 0)
		return -EIO;
	*st = (struct smt_proc_stat){ .pid = pid, .ppid = ppid, .pgrp = pgrp, .sid = sid,
				      .state = state, .starttime = start };
	clen = (size_t)(close_paren - open_paren - 1);
	if (clen >= sizeof(st->comm))
		clen = sizeof(st->comm) - 1;
	memcpy(st->comm, open_paren + 1, clen);
	st->comm[clen] = '\0';
	long hz = sysconf(_SC_CLK_TCK);
	st->cpu_s = hz > 0 ? (double)(utime + stime) / (double)hz : 0;
	return 0;
}

/* Whether the environment entry E (N bytes; PARTIAL: only its start)
 * is ASSIGNMENT (ALEN bytes; ending in '=': NAME with any value). */
static int env_matches(const char *e, size_t n, int partial, const char *assignment, size_t alen)
{
	int any = alen && assignment[alen - 1] == '=';

	if (n < alen || memcmp(e, assignment, alen) != 0)
		return 0;
	return any || (n == alen && !partial);
}

/*
 * The whole of environ, a window at a time: the job's mark may come after
 * hundreds of KiB of hyperparameters (SM_HPS, SM_TRAINING_ENV).  An entry
 * longer than the window is judged by its start and skipped.
 */
int smt_proc_has_env(const char *proc, pid_t pid, const char *assignment)
{
	char path[64];
	const size_t cap = 64 * 1024;
	size_t alen = strlen(assignment), have = 0;
	char *buf = malloc(cap);
	int fd, rc = 0, skipping = 0;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%d/environ", proc ? proc : "/proc", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return errno == ENOENT ? -ESRCH : -errno;
	}
	while (rc == 0) {
		ssize_t n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno == ESRCH ? -ESRCH : -errno;
			break;
		}
		size_t len = have + (size_t)n, off = 0;
		for (;;) {
			char *z = memchr(buf + off, '\0', len - off);
			if (z == NULL)
				break;
			if (!skipping &&
			    env_matches(buf + off, (size_t)(z - buf) - off, 0, assignment, alen))
				rc = 1;
			skipping = 0;
			off = (size_t)(z - buf) + 1;
		}
		have = len - off;
		memmove(buf, buf + off, have);
		if (n == 0) {
			/* The last entry may lack its NUL. */
			if (have && !skipping && env_matches(buf, have, 0, assignment, alen))
				rc = 1;
			break;
		}
		if (have == cap) {
			if (!skipping && env_matches(buf, have, 1, assignment, alen))
				rc = 1;
			skipping = 1;
			have = 0;
		}
	}
	close(fd);
	free(buf);
	return rc;
}

int smt_pidfd_open(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	/* pidfds are close-on-exec from the start (fcntl for old headers). */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

int smt_proc_open(pid_t pid, uint64_t start)
{
	struct smt_proc_stat st;
	int fd, rc;

	if (pid <= 0)
		return -ESRCH;
	fd = smt_pidfd_open(pid);
	if (fd < 0)
		return fd;
	/* The pidfd now pins the process; is it still the one we mean? */
	rc = smt_proc_stat(NULL, pid, &st);
	if (rc < 0 || (start && st.starttime != start) || st.state == 'Z' || st.state == 'X') {
		close(fd);
		return rc < 0 ? rc : -ESRCH;
	}
	return fd;
}

int smt_pidfd_signal(int pidfd, int signo)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, signo, NULL, 0) < 0)
		return -errno;
	return 0;
}

#ifndef PIDFD_SIGNAL_THREAD
#define PIDFD_SIGNAL_THREAD (1UL << 0)
#endif
#ifndef SYS_tgkill
#define SYS_tgkill 234
#endif

int smt_pidfd_signal_main(int pidfd, pid_t pid, int signo)
{
	if (pidfd >= 0) {
		if (syscall(SYS_pidfd_send_signal, pidfd, signo, NULL, PIDFD_SIGNAL_THREAD) == 0)
			return 0;
		if (errno != EINVAL)
			return -errno;
		/* Before Linux 6.9: the thread by its ID, which the pidfd keeps
		 * from being reused while the process has not been reaped. */
		if (smt_pidfd_signal(pidfd, 0) < 0)
			return -ESRCH;
	}
	return syscall(SYS_tgkill, pid, pid, signo) < 0 ? -errno : 0;
}

int smt_proc_signal(pid_t pid, uint64_t start, int signo)
{
	int fd = smt_proc_open(pid, start), rc;

	if (fd == -ENOSYS) {
		struct smt_proc_stat st;
		if (smt_proc_stat(NULL, pid, &st) < 0 || (start && st.starttime != start))
			return -ESRCH;
		return kill(pid, signo) < 0 ? -errno : 0;
	}
	if (fd < 0)
		return fd;
	rc = smt_pidfd_signal(fd, signo);
	close(fd);
	return rc;
}

pid_t smt_proc_pid_max(void)
{
	char buf[32];
	size_t len;

	if (read_file("/proc/sys/kernel/pid_max", buf, sizeof(buf), &len) < 0)
		return 4194304;
	long v = strtol(buf, NULL, 10);
	return v > 0 ? (pid_t)v : 4194304;
}

pid_t smt_proc_find_comm(const char *proc, const char *comm)
{
	return smt_proc_find_comm_if(proc, comm, NULL, NULL);
}

pid_t smt_proc_find_comm_if(const char *proc, const char *comm, int (*ok)(void *arg, pid_t pid),
			    void *arg)
{
	DIR *d = opendir(proc ? proc : "/proc");
	struct dirent *de;
	pid_t found = 0;

	if (!d)
		return -errno;
	while (found == 0 && (de = readdir(d)) != NULL) {
		struct smt_proc_stat st;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (smt_proc_stat(proc, (pid_t)atoi(de->d_name), &st) == 0 &&
		    strcmp(st.comm, comm) == 0 && st.state != 'Z' && st.state != 'X' &&
		    (ok == NULL || ok(arg, st.pid)))
			found = st.pid;
	}
	closedir(d);
	return found;
}
