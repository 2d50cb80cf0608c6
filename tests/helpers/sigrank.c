/*
 * sigrank - a stand-in rank for the supervision tests.
 *
 * Records every signal it receives as "RANK SIG" lines in a file, writes a
 * ready marker once its handlers are installed, and then waits.  Options:
 *   --record FILE   append "RANK NAME" per signal (O_APPEND, one write each)
 *   --ready DIR     create DIR/ready.RANK when set up
 *   --ignore-term   record SIGTERM but keep running (to test the grace kill)
 *   --peers N       after recording a stopping signal, exit only once the
 *                   record file holds N lines of it (at most 5 s): under mpirun,
 *                   the first rank to exit makes mpirun kill the others,
 *                   which may not have run since their signal arrived
 *   --exit-after S  exit 0 after S seconds (default: wait forever)
 *   --exit CODE     exit with CODE right after start
 *   --child         fork a child that also waits (to test leftovers)
 *   --checkpoint DIR  on SIGTERM, take --term-sleep S seconds (default 0),
 *                   then write DIR/ckpt.RANK ("rank R signalled T0 wrote
 *                   T1", seconds since the epoch) and exit 0: a training
 *                   program saving its state before a stop
 *   --pid-dir DIR   write DIR/pid.RANK (this PID) at once, before anything
 *                   else (before MPI_Init in sigrank_mpi)
 *   --pre-init-sleep S  sleep S seconds before MPI_Init (and the ready
 *                   marker)
 *   --daemon DIR    double-fork a daemon in a session of its own (setsid,
 *                   stdio on /dev/null) that sleeps until killed; its PID
 *                   goes to DIR/daemon.RANK
 *   --forever       a sidecar, not a rank: record every signal it can
 *                   catch and never exit because of one
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
#include <sys/wait.h>
#include <unistd.h>
#ifdef SIGRANK_MPI
#include <mpi.h>
#endif

static const char *record_path;
static int rank(void);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (s > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* DIR/NAME.RANK holding TEXT, complete once it exists under its name. */
static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096], tmp[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.%d", dir, name, rank());
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) < 0 ||
	    rename(tmp, path) < 0)
		perror(path);
}

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

/* Until the record file holds N lines of SIG, for at most 5 s: the lines
 * of the signals before it (USR1, USR2, which the job goes on after) are
 * not the peers' of this one. */
static void wait_for_peers(int n, int sig)
{
	for (int i = 0; n > 0 && record_path && i < 500; i++) {
		char line[64], *sp;
		int lines = 0;
		FILE *f = fopen(record_path, "r");

		while (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			sp = strchr(line, ' ');
			lines += sp && strcmp(sp + 1, sigabbrev_np(sig)) == 0;
		}
		if (f)
			fclose(f);
		if (lines >= n)
			return;
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	const char *ready = NULL, *checkpoint = NULL, *pid_dir = NULL, *daemon_dir = NULL;
	int ignore_term = 0, child = 0, peers = 0, forever = 0;
	double exit_after = -1, term_sleep = 0, pre_init_sleep = 0;
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
		else if (!strcmp(argv[i], "--checkpoint") && i + 1 < argc)
			checkpoint = argv[++i];
		else if (!strcmp(argv[i], "--term-sleep") && i + 1 < argc)
			term_sleep = atof(argv[++i]);
		else if (!strcmp(argv[i], "--pid-dir") && i + 1 < argc)
			pid_dir = argv[++i];
		else if (!strcmp(argv[i], "--pre-init-sleep") && i + 1 < argc)
			pre_init_sleep = atof(argv[++i]);
		else if (!strcmp(argv[i], "--daemon") && i + 1 < argc)
			daemon_dir = argv[++i];
		else if (!strcmp(argv[i], "--forever"))
			forever = 1;
	}
	if (pid_dir) {
		char text[32];
		snprintf(text, sizeof(text), "%d\n", (int)getpid());
		write_file(pid_dir, "pid", text);
	}
	if (forever) {
		/* Every signal that can be caught is taken here and recorded,
		 * also those a shell's background job starts with ignored. */
		sigfillset(&set);
		sigprocmask(SIG_BLOCK, &set, NULL);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		for (;;) {
			if (sigwait(&set, &sig) == 0)
				record(sig);
		}
	}
	if (daemon_dir) {
		pid_t p = fork();
		if (p == 0) {
			int fd = open("/dev/null", O_RDWR);
			setsid();
			if (fork() != 0)
				_exit(0);
			if (fd >= 0) {
				dup2(fd, 0);
				dup2(fd, 1);
				dup2(fd, 2);
				close(fd);
			}
			char text[32];
			snprintf(text, sizeof(text), "%d\n", (int)getpid());
			write_file(daemon_dir, "daemon", text);
			for (;;)
				pause();
		}
		if (p > 0)
			waitpid(p, NULL, 0);
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
	sleep_s(pre_init_sleep);
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
		if (sig == SIGTERM && checkpoint) {
			double t0 = now_s();
			char text[128];

			sleep_s(term_sleep);
			snprintf(text, sizeof(text), "rank %d signalled %.3f wrote %.3f\n", rank(), t0,
				 now_s());
			write_file(checkpoint, "ckpt", text);
			printf("rank %d wrote its checkpoint\n", rank());
			fflush(stdout);
			return 0;
		}
		if (sig == SIGUSR1 || sig == SIGUSR2)
			continue;
		wait_for_peers(peers, sig);
		return 128 + sig;
	}
}
