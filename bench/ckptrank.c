/*
 * ckptrank - a rank that writes a checkpoint when it is stopped, for B8
 * (the grace: SIGTERM to every host as a platform stop does).
 *
 *   ckptrank DIR SECONDS...
 *
 * Rank R (OMPI_COMM_WORLD_RANK, else RANK, else 0) needs SECONDS[R % N]
 * seconds to write its checkpoint.  It takes SIGTERM, SIGINT and SIGHUP
 * synchronously, creates DIR/ready.R once it does, and waits.  At the
 * first stopping signal it writes DIR/ckpt.R.tmp for its SECONDS (a few
 * bytes every 10 ms, as a checkpoint being written), puts in it
 *   rank R need SECONDS signal T_SIGNAL done T_DONE signals N
 * (CLOCK_REALTIME; N: the stopping signals it received in all), renames it
 * to DIR/ckpt.R and exits 0.  A rank killed before that leaves no ckpt.R.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rank_of_env(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");

	if (!r)
		r = getenv("RANK");
	return r ? atoi(r) : 0;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	return close(fd);
}

/* Write the checkpoint for NEED seconds from the signal at T_SIG; count
 * the stopping signals that arrive meanwhile in *SIGNALS. */
static int checkpoint(const char *dir, int rank, double need, double t_sig, const sigset_t *set,
		      int *signals)
{
	char tmp[4096], path[4096], line[256];
	double end = now(CLOCK_MONOTONIC) + need;
	int fd, n;

	snprintf(tmp, sizeof(tmp), "%s/ckpt.%d.tmp", dir, rank);
	snprintf(path, sizeof(path), "%s/ckpt.%d", dir, rank);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(tmp);
		return -1;
	}
	for (;;) {
		double left = end - now(CLOCK_MONOTONIC);
		struct timespec ts;

		if (left <= 0)
			break;
		if (left > 0.01)
			left = 0.01;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e9);
		if (sigtimedwait(set, NULL, &ts) > 0)
			(*signals)++;
		if (write(fd, "checkpoint data\n", 16) != 16) {
			perror(tmp);
			close(fd);
			return -1;
		}
	}
	n = snprintf(line, sizeof(line), "rank %d need %.3f signal %.6f done %.6f signals %d\n", rank,
		     need, t_sig, now(CLOCK_REALTIME), *signals);
	if (write(fd, line, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096];
	sigset_t set;
	int rank = rank_of_env(), signals = 1;
	double need, t_sig;

	if (argc < 3) {
		fprintf(stderr, "usage: ckptrank DIR SECONDS...\n");
		return 2;
	}
	need = atof(argv[2 + rank % (argc - 2)]);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	snprintf(path, sizeof(path), "%s/ready.%d", argv[1], rank);
	if (touch(path) < 0) {
		perror(path);
		return 2;
	}
	printf("rank %d ready, needs %.3f s to checkpoint\n", rank, need);
	fflush(stdout);
	while (sigwaitinfo(&set, NULL) < 0)
		if (errno != EINTR)
			return 2;
	t_sig = now(CLOCK_REALTIME);
	printf("rank %d stopped: writing its checkpoint\n", rank);
	fflush(stdout);
	if (checkpoint(argv[1], rank, need, t_sig, &set, &signals) < 0)
		return 1;
	printf("rank %d checkpoint written\n", rank);
	return 0;
}
