/*
 * sigrank - a stand-in rank for the supervision tests.
 *
 * Records every signal it receives as "RANK SIG" lines in a file, writes a
 * ready marker once its handlers are installed, and then waits.  Options:
 *   --record FILE   append "RANK NAME" per signal (O_APPEND, one write each)
 *   --ready DIR     create DIR/ready.RANK when set up
 *   --ignore-term   record SIGTERM but keep running (to test the grace kill)
 *   --peers N       after recording a stopping signal, exit only once the
 *                   record file holds N lines (at most 5 s): under mpirun,
 *                   the first rank to exit makes mpirun kill the others,
 *                   which may not have run since their signal arrived
 *   --exit-after S  exit 0 after S seconds (default: wait forever)
 *   --exit CODE     exit with CODE right after start
 *   --child         fork a child that also waits (to test leftovers)
 *
 * Built with -DSIGRANK_MPI by mpicc (tests/helpers/build-mpi.sh) as
 * sigrank_mpi, it calls MPI_Init before it says it is ready: mpirun passes
 * a signal on only to ranks it has registered, which a plain program may
 * not be yet when its ready marker appears.
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
#ifdef SIGRANK_MPI
#include <mpi.h>
#endif

static const char *record_path;

static int rank(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	return r ? atoi(r) : 0;
}

static void record(int sig)
{
	char line[64];
	int fd, n;

	if (record_path == NULL)
		return;
	n = snprintf(line, sizeof(line), "%d %s\n", rank(), sigabbrev_np(sig));
	fd = open(record_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			perror("write");
		close(fd);
	}
}

/* Until the record file holds N lines, for at most 5 s. */
static void wait_for_peers(int n)
{
	for (int i = 0; n > 0 && record_path && i < 500; i++) {
		char buf[4096];
		int lines = 0, fd = open(record_path, O_RDONLY);
		ssize_t k;

		if (fd >= 0) {
			while ((k = read(fd, buf, sizeof(buf))) > 0)
				for (ssize_t j = 0; j < k; j++)
					lines += buf[j] == '\n';
			close(fd);
		}
		if (lines >= n)
			return;
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	int ignore_term = 0, child = 0, peers = 0;
	double exit_after = -1;
	sigset_t set;
	int sig;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--record") && i + 1 < argc)
			record_path = argv[++i];
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--ignore-term"))
			ignore_term = 1;
		else if (!strcmp(argv[i], "--peers") && i + 1 < argc)
			peers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--child"))
			child = 1;
		else if (!strcmp(argv[i], "--exit-after") && i + 1 < argc)
			exit_after = atof(argv[++i]);
		else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
			return atoi(argv[++i]);
	}
	sigemptyset(&set);
	int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (child && fork() == 0) {
		/* The child only waits, with default dispositions: it is what a
		 * supervisor must not leave behind. */
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		for (;;)
			pause();
	}
#ifdef SIGRANK_MPI
	/* The blocked signals stay blocked in the threads MPI starts. */
	MPI_Init(&argc, &argv);
#endif
	if (exit_after >= 0)
		alarm((unsigned)(exit_after + 0.5));
	if (ready) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/ready.%d", ready, rank());
		int fd = open(path, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
	}
	printf("rank %d pid %d waiting\n", rank(), (int)getpid());
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGALRM) {
#ifdef SIGRANK_MPI
			MPI_Finalize();
#endif
			return 0;
		}
		record(sig);
		printf("rank %d got SIG%s\n", rank(), sigabbrev_np(sig));
		fflush(stdout);
		if (sig == SIGTERM && ignore_term)
			continue;
		if (sig == SIGUSR1 || sig == SIGUSR2)
			continue;
		wait_for_peers(peers);
		return 128 + sig;
	}
}
