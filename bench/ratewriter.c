/*
 * ratewriter - write numbered 100-byte lines to stdout at a fixed rate, for
 * the CPU cost of forwarding (B5) and a checksum of the output it wrote.
 *
 *   ratewriter MB_PER_S TOTAL_MB    (MB_PER_S 0: as fast as possible)
 *
 * Writes TOTAL_MB * 10000 lines "ratewriter line NNNNNNNN xxx...x\n"
 * (MB = 10^6 bytes), in writes of 640 lines.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE 100
#define BATCH 640

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) * 1e6 : 100e6;
	long lines = (long)((argc > 2 ? atof(argv[2]) : 100) * 1e6 / LINE);
	static char chunk[BATCH * LINE];
	double t0 = now(), sent = 0;

	for (int i = 0; i < BATCH; i++) {
		memset(chunk + i * LINE, 'x', LINE - 1);
		chunk[i * LINE + LINE - 1] = '\n';
	}
	for (long l = 0; l < lines;) {
		int n = 0;
		for (; n < BATCH && l < lines; n++, l++) {
			char head[48];
			snprintf(head, sizeof(head), "ratewriter line %08ld ", l);
			memcpy(chunk + n * LINE, head, strlen(head));
		}
		if (rate > 0) {
			double due = (now() - t0) * rate;
			if (sent > due) {
				struct timespec ts = { 0, (long)((sent - due) / rate * 1e9) };
				nanosleep(&ts, NULL);
			}
		}
		size_t len = (size_t)n * LINE, off = 0;
		while (off < len) {
			ssize_t w = write(1, chunk + off, len - off);
			if (w <= 0)
				return 1;
			off += (size_t)w;
		}
		sent += (double)len;
	}
	return 0;
}
