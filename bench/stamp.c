/*
 * stamp - record when a process is exec'd, for the start-up benchmarks.
 *
 *   stamp -o FILE CMD ARGS...  append CLOCK_REALTIME (seconds, 6 decimals)
 *                              to FILE, then exec CMD
 *   stamp [ANY ARGS]           a stand-in mpirun: appends the time to
 *                              $STAMP_FILE, sleeps $STAMP_SLEEP seconds
 *                              (default 0) and exits 0
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void record(const char *file)
{
	struct timespec ts;
	char line[64];
	int fd, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "%lld.%06ld\n", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			perror("stamp: write");
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("STAMP_FILE");

	if (argc > 3 && strcmp(argv[1], "-o") == 0) {
		record(argv[2]);
		execvp(argv[3], argv + 3);
		perror("stamp: exec");
		return 127;
	}
	if (env && *env) {
		record(env);
		const char *s = getenv("STAMP_SLEEP");
		if (s && *s) {
			double d = atof(s);
			struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
			nanosleep(&ts, NULL);
		}
		return 0;
	}
	fprintf(stderr, "usage: stamp -o FILE CMD [ARGS...], or STAMP_FILE=FILE stamp\n");
	return 2;
}
