/*
 * stamp - record when a process is exec'd, for the start-up benchmarks.
 *
 *   stamp -o FILE CMD ARGS...  append CLOCK_REALTIME (seconds, 6 decimals)
 *                              to FILE, then exec CMD
 *   stamp -w FILE N TEXT       copy stdin to stdout; append the time to
 *                              FILE once the Nth line holding TEXT was
 *                              read (B12l: when the leader wrote it)
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

/* stamp -w: a line is at most LINE_MAX bytes for the count (longer ones
 * are copied, and counted by their first LINE_MAX bytes). */
#define LINE_MAX_B 4096
static int watch(const char *file, long want, const char *text)
{
	char buf[65536], line[LINE_MAX_B + 1];
	size_t len = 0;
	long seen = 0;
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(1, buf + off, (size_t)(n - off));
			if (w <= 0)
				return 1;
			off += w;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < LINE_MAX_B)
					line[len++] = buf[i];
				continue;
			}
			line[len] = '\0';
			len = 0;
			if (strstr(line, text) && ++seen == want)
				record(file);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "-w") == 0)
		return watch(argv[2], atol(argv[3]), argv[4]);
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
	fprintf(stderr, "usage: stamp -o FILE CMD [ARGS...], stamp -w FILE N TEXT, "
		"or STAMP_FILE=FILE stamp\n");
	return 2;
}
