/* killtree.c - every process of the job on this host, from /proc. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "killtree.h"

struct proc_entry {
	pid_t pid, ppid, sid;
	char state;
	int mark; /* 0 unknown, 1 job, 2 kept, 3 visiting */
};

/* Parse /proc/PID/stat: the command name may hold spaces and ')' so the
 * fields start after the last ')'. */
static int read_stat(const char *proc, pid_t pid, struct proc_entry *e)
{
	char path[64], buf[1024];
	int fd, n;
	char *p;

	snprintf(path, sizeof(path), "%s/%d/stat", proc, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL)
		return -EIO;
	int ppid, pgrp, sid;
	char state;
	if (sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4)
		return -EIO;
	e->pid = pid;
	e->ppid = ppid;
	e->sid = sid;
	e->state = state;
	e->mark = 0;
	return 0;
}

static struct proc_entry *find(struct proc_entry *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return &v[i];
	return NULL;
}

/* Walk up the parent chain: a process belongs to the job when it or an
 * ancestor is in the job's session or a child of ours, unless a kept
 * process is met first. */
static int classify(struct proc_entry *v, size_t n, struct proc_entry *e, pid_t self,
		    pid_t sid, int depth)
{
	if (e->mark == 1 || e->mark == 2)
		return e->mark;
	if (e->mark == 3 || depth > 4096)
		return 2;
	if (e->pid == self) {
		e->mark = 2;
		return 2;
	}
	if (sid > 0 && e->sid == sid) {
		e->mark = 1;
		return 1;
	}
	if (e->ppid == self) {
		e->mark = 1;
		return 1;
	}
	struct proc_entry *parent = find(v, n, e->ppid);
	if (parent == NULL) {
		e->mark = 2;
		return 2;
	}
	e->mark = 3;
	e->mark = classify(v, n, parent, self, sid, depth + 1);
	return e->mark;
}

int smt_killtree(const char *proc, pid_t sid, smt_killtree_keep keep, void *arg, int signo)
{
	return smt_killtree_visit(proc, sid, keep, arg, signo, NULL, NULL);
}

int smt_killtree_visit(const char *proc, pid_t sid, smt_killtree_keep keep, void *arg,
		       int signo, smt_killtree_each each, void *each_arg)
{
	struct proc_entry *v = NULL;
	size_t n = 0, cap = 0;
	pid_t self = getpid();
	DIR *d;
	struct dirent *de;
	int count = 0, rc = 0;

	if (proc == NULL)
		proc = "/proc";
	d = opendir(proc);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct proc_entry *nv = realloc(v, ncap * sizeof(*v));
			if (nv == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		if (read_stat(proc, (pid_t)atoi(de->d_name), &v[n]) == 0)
			n++;
	}
	for (size_t i = 0; keep && i < n; i++)
		if (v[i].sid != sid && keep(arg, v[i].pid))
			v[i].mark = 2;
	for (size_t i = 0; i < n; i++) {
		if (classify(v, n, &v[i], self, sid, 0) != 1)
			continue;
		if (v[i].state == 'Z')
			continue;
		if (kill(v[i].pid, signo) == 0) {
			count++;
			if (each)
				each(each_arg, v[i].pid);
		}
	}
	rc = count;
out:
	closedir(d);
	free(v);
	return rc;
}
