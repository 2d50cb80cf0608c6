/*
 * test_jobtree.c - which processes are the job (daemon/jobtree.h), decided
 * from a fake /proc (the config's PROC): the roots by PID and start time,
 * their descendants, the job's mark on what left the tree, smtd itself and
 * its helpers never.  A process that vanished between the directory's read
 * and its files', a reused PID, a parent cycle.  Signals go to real
 * children of this test, through the start time the fake /proc gives.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobtree.h"
#include "procfs.h"

static char proc[64];

/* PROC/PID/stat as the kernel writes it: PID's parent PPID, its state and
 * its start time START (clock ticks after boot). */
static void put_stat(pid_t pid, pid_t ppid, char state, unsigned long long start)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d", proc, (int)pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/stat", proc, (int)pid);
	f = fopen(p, "w");
	assert_non_null(f);
	/* comm with a space and a ')' as a rank may name itself */
	fprintf(f, "%d (py) x) %c %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 1000 100\n",
		(int)pid, state, (int)ppid, (int)pid, (int)pid, start);
	fclose(f);
}

/* A live process with no environment variable of ours. */
static void put(pid_t pid, pid_t ppid, unsigned long long start)
{
	put_stat(pid, ppid, 'S', start);
}

/* PROC/PID/environ: PATH and ENTRY, NUL-separated. */
static void put_env(pid_t pid, const char *entry)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d/environ", proc, (int)pid);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("PATH=/usr/bin", f);
	fputc('\0', f);
	fputs(entry, f);
	fputc('\0', f);
	fclose(f);
}

static void drop(pid_t pid, const char *file)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%d/%s", proc, (int)pid, file);
	assert_int_equal(unlink(p), 0);
}

static pid_t kept;

static int keep(void *arg, pid_t pid)
{
	(void)arg;
	return pid == kept;
}

static struct smt_jobtree *tree(void)
{
	struct smt_jobtree_config cfg = { .use_cgroup = 0, .name = "algo-1", .keep = keep,
					   .proc = proc };
	struct smt_jobtree *jt = NULL;

	assert_int_equal(smt_jobtree_new(&cfg, &jt), 0);
	assert_non_null(jt);
	return jt;
}

/* A tree whose one root is 100, a child of init started at 5000. */
static struct smt_jobtree *job(void)
{
	struct smt_jobtree *jt = tree();

	put(1, 0, 1);
	put(100, 1, 5000);
	assert_int_equal(smt_jobtree_add(jt, 100), 0);
	return jt;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(proc, sizeof(proc), "%s/smt-jobtree-XXXXXX", tmp ? tmp : "/tmp");
	kept = 0;
	return mkdtemp(proc) ? 0 : -1;
}

static pid_t children[4];
static int nchildren;

/* Also after a failed assertion: no child is left running, nothing is
 * left in /tmp. */
static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < nchildren; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	nchildren = 0;
	return nftw(proc, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The mark is SMTD_JOB= and a token of this tree alone; no cgroup when
 * switched off, and why. */
static void test_mark_and_no_cgroup(void **state)
{
	struct smt_jobtree *a = tree(), *b = tree();
	const char *why = NULL, *m = smt_jobtree_mark(a);

	(void)state;
	assert_int_equal(strncmp(m, SMT_JOB_MARK_ENV "=", strlen(SMT_JOB_MARK_ENV) + 1), 0);
	assert_int_equal(strspn(m + strlen(SMT_JOB_MARK_ENV) + 1, "0123456789abcdef"), 24);
	assert_int_equal(strlen(m), strlen(SMT_JOB_MARK_ENV) + 1 + 24);
	assert_string_not_equal(m, smt_jobtree_mark(b));
	assert_null(smt_jobtree_cgroup(a, &why));
	assert_string_equal(why, "switched off (--job-cgroup never)");
	assert_int_equal(smt_jobtree_cgroup_fd(a), -1);
	smt_jobtree_free(a);
	smt_jobtree_free(b);
}

/* A root and everything below it; not its parent, not its siblings. */
static void test_descendants(void **state)
{
	struct smt_jobtree *jt = tree();

	(void)state;
	put(1, 0, 1);
	put(90, 1, 50);       /* sshd, started before the job */
	put(100, 90, 5000);   /* the root: mpirun */
	put(101, 100, 5001);  /* orted's child: a rank launcher */
	put(102, 101, 5002);  /* the rank */
	put(103, 102, 5003);  /* the rank's dataloader */
	put(110, 90, 5010);   /* another session of sshd */
	put(111, 110, 5011);
	assert_int_equal(smt_jobtree_add(jt, 100), 0);
	/* Added twice: still one root, nothing else changes. */
	assert_int_equal(smt_jobtree_add(jt, 100), 0);
	assert_int_equal(smt_jobtree_member(jt, 100), 1);
	assert_int_equal(smt_jobtree_member(jt, 101), 1);
	assert_int_equal(smt_jobtree_member(jt, 102), 1);
	assert_int_equal(smt_jobtree_member(jt, 103), 1);
	assert_int_equal(smt_jobtree_member(jt, 90), 0);
	assert_int_equal(smt_jobtree_member(jt, 1), 0);
	assert_int_equal(smt_jobtree_member(jt, 110), 0);
	assert_int_equal(smt_jobtree_member(jt, 111), 0);
	assert_int_equal(smt_jobtree_member(jt, 999), 0);
	/* A second root makes its own tree the job's too. */
	assert_int_equal(smt_jobtree_add(jt, 110), 0);
	assert_int_equal(smt_jobtree_member(jt, 111), 1);
	assert_int_equal(smt_jobtree_member(jt, 90), 0);
	smt_jobtree_free(jt);
}

/* A root is a PID and a start time: the same PID started later is another
 * process, and neither it nor its children are the job. */
static void test_reused_pid(void **state)
{
	struct smt_jobtree *jt = job();

	(void)state;
	put(101, 100, 5001);
	assert_int_equal(smt_jobtree_member(jt, 101), 1);
	put(100, 1, 9000);    /* the root ended; its PID was handed out again */
	put(101, 100, 9001);
	assert_int_equal(smt_jobtree_member(jt, 100), 0);
	assert_int_equal(smt_jobtree_member(jt, 101), 0);
	/* Unless the new process carries the job's mark. */
	put_env(101, smt_jobtree_mark(jt));
	assert_int_equal(smt_jobtree_member(jt, 101), 1);
	smt_jobtree_free(jt);
}

/* Out of the tree (its parent died, it double-forked): the mark decides,
 * exactly; a process gone before its environment was read is not the job. */
static void test_mark_outside_the_tree(void **state)
{
	struct smt_jobtree *jt = job(), *other = tree();
	char prefixed[128];

	(void)state;
	put(200, 1, 6000);    /* a daemon a rank started, reparented to init */
	put_env(200, smt_jobtree_mark(jt));
	put(201, 200, 6001);  /* and its child */
	put(300, 1, 7000);    /* another job's */
	put_env(300, smt_jobtree_mark(other));
	put(301, 1, 7001);    /* a mark that only ends like ours */
	snprintf(prefixed, sizeof(prefixed), "X%s", smt_jobtree_mark(jt));
	put_env(301, prefixed);
	put(400, 1, 8000);    /* gone between its stat and its environ */
	assert_int_equal(smt_jobtree_member(jt, 200), 1);
	assert_int_equal(smt_jobtree_member(jt, 201), 1);
	assert_int_equal(smt_jobtree_member(jt, 300), 0);
	assert_int_equal(smt_jobtree_member(jt, 301), 0);
	assert_int_equal(smt_jobtree_member(jt, 400), 0);
	assert_int_equal(smt_jobtree_member(other, 300), 1);
	assert_int_equal(smt_jobtree_member(other, 200), 0);
	smt_jobtree_free(other);
	smt_jobtree_free(jt);
}

/* A PID listed in /proc whose stat is gone by the time it is read: it is
 * in no tree, and a child whose parent vanished so is out of the tree. */
static void test_vanished(void **state)
{
	struct smt_jobtree *jt = job();

	(void)state;
	put(101, 100, 5001);
	put(102, 101, 5002);
	put(103, 101, 5003);
	put_env(103, smt_jobtree_mark(jt));
	assert_int_equal(smt_jobtree_member(jt, 102), 1);
	drop(101, "stat");
	assert_int_equal(smt_jobtree_member(jt, 101), 0);
	assert_int_equal(smt_jobtree_member(jt, 102), 0);
	assert_int_equal(smt_jobtree_member(jt, 103), 1);
	/* A root that is gone cannot be added. */
	assert_int_equal(smt_jobtree_add(jt, 101), -ESRCH);
	assert_int_equal(smt_jobtree_add(jt, 555), -ESRCH);
	smt_jobtree_free(jt);
}

/* smtd itself and its helpers (the KEEP callback: sshd, ssh, a stack
 * reader) are never the job, nor is what they start, by the tree. */
static void test_self_and_helpers(void **state)
{
	struct smt_jobtree *jt = job();
	pid_t self = getpid();

	(void)state;
	put(self, 100, 5001);
	put(120, 100, 5020);  /* a stack reader smtd started under a root */
	put(121, 120, 5021);
	put(122, 100, 5022);
	put_env(self, smt_jobtree_mark(jt));
	kept = 120;
	assert_int_equal(smt_jobtree_member(jt, self), 0);
	assert_int_equal(smt_jobtree_member(jt, 120), 0);
	assert_int_equal(smt_jobtree_member(jt, 121), 0);
	assert_int_equal(smt_jobtree_member(jt, 122), 1);
	smt_jobtree_free(jt);
}

/* Parents that form a cycle (PIDs reused while /proc was read) end the
 * walk, outside the job. */
static void test_parent_cycle(void **state)
{
	struct smt_jobtree *jt = job();

	(void)state;
	put(400, 401, 8000);
	put(401, 400, 8001);
	put(402, 402, 8002);
	assert_int_equal(smt_jobtree_member(jt, 400), 0);
	assert_int_equal(smt_jobtree_member(jt, 401), 0);
	assert_int_equal(smt_jobtree_member(jt, 402), 0);
	smt_jobtree_free(jt);
}

/* No /proc to read: an error, not an empty job. */
static void test_no_proc(void **state)
{
	struct smt_jobtree *jt = tree();

	(void)state;
	assert_int_equal(rmdir(proc), 0);
	assert_int_equal(smt_jobtree_member(jt, 1), -ENOENT);
	assert_int_equal(smt_jobtree_signal(jt, 0, NULL, NULL), -ENOENT);
	assert_int_equal(mkdir(proc, 0700), 0);
	smt_jobtree_free(jt);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	assert_true(nchildren < 4);
	children[nchildren++] = pid;
	return pid;
}

/* PID was reaped here: the teardown must not signal its number. */
static void forget(pid_t pid)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid)
			children[i] = children[--nchildren];
}

static unsigned long long real_start(pid_t pid)
{
	struct smt_proc_stat st;

	assert_int_equal(smt_proc_stat(NULL, pid, &st), 0);
	return st.starttime;
}

static pid_t signalled[8];
static int nsignalled;

static void each(void *arg, pid_t pid)
{
	(void)arg;
	if (nsignalled < 8)
		signalled[nsignalled++] = pid;
}

/* Signals reach the job's live processes through their start time in the
 * same pass: one whose start time differs from the one the pass read
 * (reused since) is not signalled, nor is a zombie. */
static void test_signal(void **state)
{
	struct smt_jobtree *jt = tree();
	pid_t root = sleeper(), reused = sleeper(), zombie = sleeper(), outside = sleeper();
	int st;

	(void)state;
	put(1, 0, 1);
	put(root, 1, real_start(root));
	put(reused, root, real_start(reused) + 1);
	put_stat(zombie, root, 'Z', real_start(zombie));
	put(outside, 1, real_start(outside));
	assert_int_equal(smt_jobtree_add(jt, root), 0);
	assert_int_equal(smt_jobtree_member(jt, reused), 1);
	assert_int_equal(smt_jobtree_member(jt, zombie), 1);
	assert_int_equal(smt_jobtree_member(jt, outside), 0);
	nsignalled = 0;
	assert_int_equal(smt_jobtree_signal(jt, 0, each, NULL), 1);
	assert_int_equal(nsignalled, 1);
	assert_int_equal(signalled[0], root);
	nsignalled = 0;
	assert_int_equal(smt_jobtree_signal(jt, SIGTERM, each, NULL), 1);
	assert_int_equal(nsignalled, 1);
	assert_int_equal(waitpid(root, &st, 0), root);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	/* The others were left alone. */
	assert_int_equal(waitpid(reused, &st, WNOHANG), 0);
	assert_int_equal(waitpid(zombie, &st, WNOHANG), 0);
	assert_int_equal(waitpid(outside, &st, WNOHANG), 0);
	forget(root);
	/* The root ended: its PID in the fake /proc is no longer its. */
	assert_int_equal(smt_jobtree_signal(jt, 0, NULL, NULL), 0);
	smt_jobtree_free(jt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mark_and_no_cgroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_descendants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mark_outside_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_and_helpers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_proc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
