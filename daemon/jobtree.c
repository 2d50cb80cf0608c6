/* jobtree.c - the job's processes on this host (jobtree.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobtree.h"
#include "log.h"
#include "procfs.h"
#include "vec.h"

struct root {
	pid_t pid;
	uint64_t start;
};

struct smt_jobtree {
	struct smt_jobtree_config cfg;
	char mark[64];
	struct root *roots;
	size_t nroots, cap;
	char *cg_dir;          /* the job cgroup, or NULL */
	const char *cg_why;    /* why there is none */
	int cg_procs_fd;
};

/* One process as one scan saw it. */
struct entry {
	struct smt_proc_stat st;
	int mark;              /* 0 unknown, 1 job, 2 not, 3 visiting */
};

/* ---- the job cgroup ---- */

/* The cgroup2 mount and our path in it: DIR = mount point + our path. */
static int own_cgroup_dir(char *dir, size_t size, const char **why)
{
	char line[4096], path[4096] = "", mnt[4096] = "", root[4096] = "";
	FILE *f;
	int have_path = 0, have_mnt = 0;

	f = fopen("/proc/self/cgroup", "re");
	if (!f) {
		*why = "/proc/self/cgroup cannot be read";
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(path, sizeof(path), "%s", line + 3);
			path[strcspn(path, "\n")] = '\0';
			have_path = 1;
		}
	}
	fclose(f);
	if (!have_path) {
		*why = "this process is in no cgroup v2 hierarchy";
		return -ENOENT;
	}
	f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		*why = "/proc/self/mountinfo cannot be read";
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPER */
		char r[4096], m[4096];
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2)
			continue;
		snprintf(root, sizeof(root), "%s", r);
		snprintf(mnt, sizeof(mnt), "%s", m);
		have_mnt = 1;
		break;
	}
	fclose(f);
	if (!have_mnt) {
		*why = "no cgroup v2 file system is mounted";
		return -ENOENT;
	}
	/* Our path relative to what the mount shows; a path outside it (a
	 * container's view) means the mount point is our cgroup. */
	const char *rel = path;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0) {
		if (strncmp(path, root, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'))
			rel = path + rl;
		else
			rel = "";
	}
	if (strcmp(rel, "/") == 0)
		rel = "";
	if (snprintf(dir, size, "%s%s", mnt, rel) >= (int)size) {
		*why = "the cgroup path is too long";
		return -ENAMETOOLONG;
	}
	return 0;
}

static void setup_cgroup(struct smt_jobtree *jt, const char *token)
{
	char own[4096], dir[4200], procs[4300];
	int fd;

	if (!jt->cfg.use_cgroup) {
		jt->cg_why = "switched off (--job-cgroup never)";
		return;
	}
	if (own_cgroup_dir(own, sizeof(own), &jt->cg_why) < 0)
		return;
	snprintf(dir, sizeof(dir), "%s/smtd-job-%s-%.8s", own,
		 jt->cfg.name ? jt->cfg.name : "host", token);
	if (mkdir(dir, 0755) < 0) {
		jt->cg_why = errno == EROFS ? "the cgroup v2 file system is read-only here" :
			errno == EACCES || errno == EPERM ? "cgroup v2 is not delegated to smtd" :
							    "a cgroup cannot be created";
		smt_debug("job cgroup %s: %s", dir, strerror(errno));
		return;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		jt->cg_why = "the job cgroup's cgroup.procs cannot be opened";
		rmdir(dir);
		return;
	}
	jt->cg_dir = strdup(dir);
	if (!jt->cg_dir) {
		close(fd);
		rmdir(dir);
		jt->cg_why = "out of memory";
		return;
	}
	jt->cg_procs_fd = fd;
}

static int cgroup_move(struct smt_jobtree *jt, pid_t pid)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);

	if (jt->cg_procs_fd < 0)
		return 0;
	if (write(jt->cg_procs_fd, buf, (size_t)n) < 0) {
		smt_warn("cannot move process %d into the job cgroup %s: %s", (int)pid, jt->cg_dir,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- the module ---- */

int smt_jobtree_new(const struct smt_jobtree_config *cfg, struct smt_jobtree **out)
{
	struct smt_jobtree *jt = calloc(1, sizeof(*jt));
	unsigned char rnd[12];
	char token[32];

	if (!jt)
		return -ENOMEM;
	jt->cfg = *cfg;
	jt->cg_procs_fd = -1;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		/* Unique enough to tell jobs apart; it guards no secret. */
		uint64_t t = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
		memcpy(rnd, &t, sizeof(t));
		memset(rnd + sizeof(t), 0x5a, sizeof(rnd) - sizeof(t));
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	snprintf(jt->mark, sizeof(jt->mark), SMT_JOB_MARK_ENV "=%s", token);
	setup_cgroup(jt, token);
	*out = jt;
	return 0;
}

const char *smt_jobtree_mark(const struct smt_jobtree *jt)
{
	return jt->mark;
}

const char *smt_jobtree_cgroup(const struct smt_jobtree *jt, const char **why)
{
	if (why)
		*why = jt->cg_why;
	return jt->cg_dir;
}

int smt_jobtree_cgroup_fd(const struct smt_jobtree *jt)
{
	return jt->cg_procs_fd;
}

int smt_jobtree_add(struct smt_jobtree *jt, pid_t pid)
{
	struct smt_proc_stat st;
	int rc = smt_proc_stat(jt->cfg.proc, pid, &st);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < jt->nroots; i++)
		if (jt->roots[i].pid == pid && jt->roots[i].start == st.starttime)
			return 0;
	rc = SMT_VEC_RESERVE(jt->roots, jt->cap, jt->nroots + 1);
	if (rc < 0)
		return rc;
	jt->roots[jt->nroots++] = (struct root){ pid, st.starttime };
	cgroup_move(jt, pid);
	return 0;
}

/* ---- one pass over /proc ---- */

struct scan {
	struct entry *v;
	size_t n, cap;
	pid_t *cg;             /* the job cgroup's members, sorted */
	size_t ncg, cgcap;
};

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static void read_cgroup(struct smt_jobtree *jt, struct scan *s)
{
	char path[4300];
	FILE *f;
	long pid;

	if (!jt->cg_dir)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", jt->cg_dir);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (SMT_VEC_RESERVE(s->cg, s->cgcap, s->ncg + 1) < 0)
			break;
		s->cg[s->ncg++] = (pid_t)pid;
	}
	fclose(f);
	if (s->ncg > 1)
		qsort(s->cg, s->ncg, sizeof(*s->cg), cmp_pid);
}

static int scan_proc(struct smt_jobtree *jt, struct scan *s)
{
	const char *proc = jt->cfg.proc ? jt->cfg.proc : "/proc";
	DIR *d = opendir(proc);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (SMT_VEC_RESERVE(s->v, s->cap, s->n + 1) < 0) {
			closedir(d);
			return -ENOMEM;
		}
		if (smt_proc_stat(jt->cfg.proc, (pid_t)atoi(de->d_name), &s->v[s->n].st) == 0) {
			s->v[s->n].mark = 0;
			s->n++;
		}
	}
	closedir(d);
	read_cgroup(jt, s);
	return 0;
}

static struct entry *find(struct scan *s, pid_t pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].st.pid == pid)
			return &s->v[i];
	return NULL;
}

static int is_root(const struct smt_jobtree *jt, const struct entry *e)
{
	for (size_t i = 0; i < jt->nroots; i++)
		if (jt->roots[i].pid == e->st.pid && jt->roots[i].start == e->st.starttime)
			return 1;
	return 0;
}

static int in_cgroup(const struct scan *s, pid_t pid)
{
	return s->ncg && bsearch(&pid, s->cg, s->ncg, sizeof(*s->cg), cmp_pid) != NULL;
}

/* 1 job, 2 not. */
static int classify(struct smt_jobtree *jt, struct scan *s, struct entry *e, pid_t self, int depth)
{
	struct entry *parent;

	if (e->mark == 1 || e->mark == 2)
		return e->mark;
	if (e->mark == 3 || depth > 4096)
		return 2;
	if (e->st.pid == self || (jt->cfg.keep && jt->cfg.keep(jt->cfg.keep_arg, e->st.pid))) {
		e->mark = 2;
		return 2;
	}
	if (is_root(jt, e) || in_cgroup(s, e->st.pid)) {
		e->mark = 1;
		return 1;
	}
	e->mark = 3;
	parent = e->st.ppid > 0 ? find(s, e->st.ppid) : NULL;
	if (parent && classify(jt, s, parent, self, depth + 1) == 1) {
		e->mark = 1;
		return 1;
	}
	/* Out of the tree: the mark it was started with says. */
	e->mark = smt_proc_has_env(jt->cfg.proc, e->st.pid, jt->mark) == 1 ? 1 : 2;
	return e->mark;
}

int smt_jobtree_member(struct smt_jobtree *jt, pid_t pid)
{
	struct scan s = { 0 };
	struct entry *e;
	int rc;

	rc = scan_proc(jt, &s);
	if (rc == 0) {
		e = find(&s, pid);
		rc = e ? classify(jt, &s, e, getpid(), 0) == 1 : 0;
	}
	free(s.v);
	free(s.cg);
	return rc;
}

static int signal_pass(struct smt_jobtree *jt, int signo, smt_jobtree_each each, void *arg)
{
	struct scan s = { 0 };
	pid_t self = getpid();
	int rc, count = 0;

	rc = scan_proc(jt, &s);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < s.n; i++) {
		struct entry *e = &s.v[i];
		if (classify(jt, &s, e, self, 0) != 1 || e->st.state == 'Z' || e->st.state == 'X')
			continue;
		/* Through a pidfd checked against this scan's start time. */
		if (smt_proc_signal(e->st.pid, e->st.starttime, signo) == 0) {
			count++;
			if (each)
				each(arg, e->st.pid);
		}
	}
	rc = count;
out:
	free(s.v);
	free(s.cg);
	return rc;
}

int smt_jobtree_signal(struct smt_jobtree *jt, int signo, smt_jobtree_each each, void *arg)
{
	int total = 0, n;

	/* What forked while a SIGKILL pass ran is caught by the next one. */
	for (int pass = 0; pass < (signo == SIGKILL ? 8 : 1); pass++) {
		n = signal_pass(jt, signo, each, arg);
		if (n < 0)
			return total ? total : n;
		total += n;
		if (n == 0)
			break;
	}
	return total;
}

void smt_jobtree_free(struct smt_jobtree *jt)
{
	if (!jt)
		return;
	if (jt->cg_procs_fd >= 0)
		close(jt->cg_procs_fd);
	if (jt->cg_dir && rmdir(jt->cg_dir) < 0 && errno != ENOENT)
		smt_warn("job cgroup %s not removed: %s", jt->cg_dir, strerror(errno));
	free(jt->cg_dir);
	free(jt->roots);
	free(jt);
}
