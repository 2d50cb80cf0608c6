/*
 * pidreuse.c - PIDs reused, against the real kernel.
 *
 * Run as PID 1 of a PID namespace whose pid_max is small (the test sets it),
 * so that PIDs wrap within a few hundred processes:
 *   1. orphans that exit with code 7 are reaped unwatched by smtd's reaper;
 *      children spawned afterwards, which get their reused PIDs, must each
 *      be told their own status (0), never an orphan's 7;
 *   2. a process read from /proc and then replaced by another with the same
 *      PID is never signalled: smt_proc_signal checks the start time through
 *      a pidfd, and the new process lives on.
 * Prints what it did and exits 0, or 1 with the first failure.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "procfs.h"
#include "reaper.h"
#include "spawn.h"

static int orphans_reaped, spawned, statuses_ok, failures;
static pid_t seen[65536];

static void on_orphan(void *arg, pid_t pid, int wstatus)
{
	(void)arg;
	(void)pid;
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 7)
		orphans_reaped++;
}

static void on_child(void *arg, pid_t pid, int wstatus)
{
	(void)arg;
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
		statuses_ok++;
	} else {
		fprintf(stderr, "FAIL: child %d was given status 0x%x, not its own exit 0\n", (int)pid,
			(unsigned)wstatus);
		failures++;
	}
}

/* A process whose child is orphaned and exits with code 7. */
static void make_orphan(void)
{
	pid_t p = fork();

	if (p == 0) {
		if (fork() == 0)
			_exit(7);
		_exit(0);
	}
	if (p > 0)
		waitpid(p, NULL, 0);
}

int main(void)
{
	uv_loop_t loop;
	struct smt_reaper *r;
	char *argv[] = { "true", NULL };
	int reused = 0;

	if (getpid() != 1) {
		fprintf(stderr, "pidreuse: must run as PID 1 of a PID namespace\n");
		return 2;
	}
	uv_loop_init(&loop);
	if (smt_reaper_new(&loop, &r) < 0)
		return 1;
	smt_reaper_set_any(r, on_orphan, NULL);
	/* 1. Orphans first, then children on the same PIDs. */
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 100; i++)
			make_orphan();
		uv_run(&loop, UV_RUN_NOWAIT);
		smt_reaper_reap(r);
		for (int i = 0; i < 100; i++) {
			struct smt_spawn_opts so = { .argv = argv, .stdin_fd = -1, .stdout_fd = -1,
						     .stderr_fd = -1 };
			pid_t pid = -1;
			int rc = -EAGAIN;
			/* After the first wrap the kernel hands out PIDs from 300
			 * on only: 100 here, some still held by orphans that have
			 * not exited yet.  Their end frees them. */
			for (int tries = 0; rc == -EAGAIN && tries < 200; tries++) {
				rc = smt_spawn(&so, &pid);
				if (rc == -EAGAIN) {
					usleep(10000);
					uv_run(&loop, UV_RUN_NOWAIT);
					smt_reaper_reap(r);
				}
			}
			if (rc < 0 || pid <= 0) {
				fprintf(stderr, "FAIL: cannot spawn: %s\n", strerror(-rc));
				return 1;
			}
			if (pid < (pid_t)(sizeof(seen) / sizeof(seen[0]))) {
				if (seen[pid])
					reused++;
				seen[pid] = 1;
			}
			smt_reaper_watch(r, pid, on_child, NULL);
			spawned++;
		}
		while (statuses_ok + failures < spawned) {
			if (uv_run(&loop, UV_RUN_ONCE) == 0)
				break;
		}
	}
	printf("orphans reaped: %d, children spawned: %d, own status: %d, PIDs reused: %d\n",
	       orphans_reaped, spawned, statuses_ok, reused);
	if (failures || statuses_ok != spawned || reused == 0) {
		fprintf(stderr, "FAIL: %d wrong statuses, %d of %d right, %d reused\n", failures,
			statuses_ok, spawned, reused);
		return 1;
	}

	/* 2. A PID read, its process replaced: the new one is not signalled. */
	pid_t old = fork();
	if (old == 0) {
		pause();
		_exit(0);
	}
	struct smt_proc_stat st;
	if (smt_proc_stat(NULL, old, &st) < 0) {
		fprintf(stderr, "FAIL: cannot read process %d\n", (int)old);
		return 1;
	}
	uint64_t old_start = st.starttime;
	kill(old, SIGKILL);
	waitpid(old, NULL, 0);
	pid_t again = -1;
	for (int i = 0; i < 2000 && again < 0; i++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p == old) {
			again = p;
			break;
		}
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	if (again < 0) {
		fprintf(stderr, "FAIL: PID %d was not reused\n", (int)old);
		return 1;
	}
	/* The scan said OLD with OLD_START: the new process is not it. */
	int rc = smt_proc_signal(old, old_start, SIGTERM);
	usleep(100000);
	int alive = kill(again, 0) == 0 && waitpid(again, NULL, WNOHANG) == 0;
	printf("PID %d reused: signal through the old identity gave %s, the new process %s\n",
	       (int)old, rc == -ESRCH ? "ESRCH" : strerror(-rc), alive ? "lives" : "was hit");
	kill(again, SIGKILL);
	waitpid(again, NULL, 0);
	smt_reaper_close(r);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	if (rc != -ESRCH || !alive) {
		fprintf(stderr, "FAIL: a reused PID was signalled\n");
		return 1;
	}
	return 0;
}
