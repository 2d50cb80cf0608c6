/*
 * slowread - a slow consumer: copy stdin to stdout at RATE bytes a second.
 *
 *   slowread [--rate BYTES_PER_S] [--chunk BYTES] < in > out
 *
 * Reads at most CHUNK bytes (default 16 KiB, at most 1 MiB) at a time and sleeps so that
 * it never gets ahead of RATE (default 1000000), measured from its first
 * byte.  At the end it says on stderr how many bytes it copied, in how
 * many seconds, and the mean rate.  Stands in for a log collector that
 * reads the leader's stdout slower than the ranks write.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	double rate = 1e6, t0 = 0, t;
	static char buf[1024 * 1024];
	size_t chunk = 16 * 1024;
	unsigned long long total = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			rate = atof(argv[++i]);
		else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			chunk = (size_t)strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: slowread [--rate BYTES_PER_S] [--chunk BYTES]\n");
			return 2;
		}
	}
	if (rate <= 0 || chunk == 0 || chunk > sizeof(buf)) {
		fprintf(stderr, "slowread: bad rate or chunk\n");
		return 2;
	}
	for (;;) {
		ssize_t n = read(0, buf, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("slowread: read");
			return 1;
		}
		if (n == 0)
			break;
		if (total == 0)
			t0 = now();
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(1, buf + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				perror("slowread: write");
				return 1;
			}
			off += w;
		}
		total += (unsigned long long)n;
		/* Not ahead of the rate: the next read waits until these bytes
		 * are due. */
		t = t0 + (double)total / rate - now();
		if (t > 0)
			sleep_s(t);
	}
	t = total ? now() - t0 : 0;
	fprintf(stderr, "slowread: %llu bytes in %.2f s (%.0f bytes/s)\n", total, t,
		t > 0 ? (double)total / t : 0.0);
	return 0;
}
