/*
 * nswatch - who in a simulated host outlived its PID 1 (a test witness).
 *
 *   nswatch PID1 > report
 *
 * PID1 is the host's init (smtd) as the machine sees it.  nswatch, run on
 * the machine, finds every process of PID1's PID namespace (a scan of /proc
 * every 20 ms: every host of every multi-host test is watched, so the scan
 * is kept cheap), holds a pidfd of each and, the moment one ends, looks at
 * PID1: still running, the process ended while smtd was alive ("before");
 * exiting (PF_EXITING) or gone, the kernel ended it because PID 1 exited
 * ("teardown") - it was left behind by smtd.  When PID1 has ended it prints
 * one line per process it saw:
 *
 *   NSPID COMM MARK WHEN END_TIME START_SEEN
 *
 * MARK is 1 when the process carried SMTD_JOB= in its environment (the
 * job's mark), WHEN "before" or "teardown" (or "alive" if it somehow
 * outlived the namespace), END_TIME seconds since the epoch.  The first
 * line is "# PID1 start END_TIME" with PID1's own end.
 *
 * When PID1 is already gone as nswatch starts, it says so and exits 3.
 *
 * COMM is the name it had last seen (it may exec).  A process that lives
 * less than one scan interval may be missed; the tests ask about
 * long-lived ones (ranks, daemons, sshd, a sidecar).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#define PF_EXITING 0x4
#define MAX_PROCS 4096

struct proc {
	pid_t pid;
	unsigned long long start;
	int nspid;
	char comm[32];
	int mark;
	int fd;
	const char *when;
	double end;
};

static struct proc procs[MAX_PROCS];
static int nprocs;
static char ns[64];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Fields of /proc/PID/stat after the command: state (3), flags (9),
 * starttime (22). */
static int stat_of(pid_t pid, char *state, unsigned long *flags, unsigned long long *start)
{
	char path[64], buf[2048], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* ") S ppid pgrp session tty tpgid flags ... starttime" */
	if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   state, flags, start) != 3)
		return -1;
	return 0;
}

static int has_mark(pid_t pid)
{
	char path[64], buf[65536];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	for (ssize_t i = 0; i + 9 <= n; i++)
		if ((i == 0 || buf[i - 1] == '\0') && memcmp(buf + i, "SMTD_JOB=", 9) == 0)
			return 1;
	return 0;
}

static int nspid_of(pid_t pid)
{
	char path[64], line[256];
	int v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');
			v = atoi(last ? last + 1 : line + 6);
		}
	fclose(f);
	return v;
}

/* PID 1 is exiting or gone: what ends now is ended by the kernel. */
static int pid1_exiting(pid_t pid1, unsigned long long start1)
{
	char st;
	unsigned long flags;
	unsigned long long start;

	if (stat_of(pid1, &st, &flags, &start) < 0 || start != start1)
		return 1;
	return st == 'Z' || st == 'X' || (flags & PF_EXITING);
}

/* PID's command name, spaces made underscores; COMM unchanged if gone. */
static void read_comm(pid_t pid, char *comm, size_t size)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if (*c == ' ')
			*c = '_';
	if (strlen(buf) < size)
		memcpy(comm, buf, strlen(buf) + 1);
}

static void scan(pid_t pid1)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL && nprocs < MAX_PROCS) {
		char path[64], link[64], st;
		unsigned long flags;
		unsigned long long start;
		pid_t pid;
		ssize_t n;
		int seen = 0;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)atoi(de->d_name);
		if (pid == pid1)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, ns) != 0 || stat_of(pid, &st, &flags, &start) < 0 || st == 'Z')
			continue;
		for (int i = 0; i < nprocs; i++)
			if (procs[i].pid == pid && procs[i].start == start) {
				/* It may have exec'd since: the name it has now. */
				if (!procs[i].when)
					read_comm(pid, procs[i].comm, sizeof(procs[i].comm));
				seen = 1;
			}
		if (seen)
			continue;
		struct proc *p = &procs[nprocs];
		p->fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (p->fd < 0)
			continue;
		p->pid = pid;
		p->start = start;
		p->nspid = nspid_of(pid);
		p->mark = has_mark(pid);
		p->when = NULL;
		strcpy(p->comm, "?");
		read_comm(pid, p->comm, sizeof(p->comm));
		nprocs++;
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	char path[64], st;
	unsigned long flags;
	unsigned long long start1;
	pid_t pid1;
	int fd1;
	ssize_t n;
	double end1;

	if (argc != 2) {
		fprintf(stderr, "usage: nswatch PID1\n");
		return 2;
	}
	pid1 = (pid_t)atoi(argv[1]);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid1);
	n = readlink(path, ns, sizeof(ns) - 1);
	fd1 = (int)syscall(SYS_pidfd_open, pid1, 0);
	if (n <= 0 || fd1 < 0 || stat_of(pid1, &st, &flags, &start1) < 0) {
		/* A host that ends at once (a refused configuration) may be
		 * gone before its watch starts: the caller is told so. */
		fprintf(stderr, "nswatch: no process %d (ended before it was watched)\n", (int)pid1);
		return 3;
	}
	ns[n] = '\0';
	for (;;) {
		struct pollfd pf[MAX_PROCS + 1];
		int map[MAX_PROCS + 1], k = 0;

		scan(pid1);
		pf[k].fd = fd1;
		pf[k].events = POLLIN;
		map[k++] = -1;
		for (int i = 0; i < nprocs; i++)
			if (!procs[i].when) {
				pf[k].fd = procs[i].fd;
				pf[k].events = POLLIN;
				map[k++] = i;
			}
		if (poll(pf, (nfds_t)k, 20) < 0 && errno != EINTR)
			return 1;
		for (int j = 1; j < k; j++) {
			struct proc *p = &procs[map[j]];
			if (!(pf[j].revents & (POLLIN | POLLHUP)))
				continue;
			p->when = pid1_exiting(pid1, start1) ? "teardown" : "before";
			p->end = now();
			/* Its last name, if it is not reaped yet. */
			read_comm(p->pid, p->comm, sizeof(p->comm));
			close(p->fd);
		}
		if (pf[0].revents & (POLLIN | POLLHUP))
			break;
	}
	end1 = now();
	printf("# PID1 %d end %.3f\n", (int)pid1, end1);
	for (int i = 0; i < nprocs; i++)
		printf("%d %s %d %s %.3f\n", procs[i].nspid, procs[i].comm, procs[i].mark,
		       procs[i].when ? procs[i].when : "alive", procs[i].when ? procs[i].end : end1);
	return 0;
}
