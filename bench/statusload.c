/*
 * statusload - a load generator for smtd's control API (benchmarks B7 and
 * I5): C client threads, each with one keep-alive connection to the
 * Unix socket, send TOTAL `GET PATH` requests in all and time each one.
 *
 *   statusload SOCKET CLIENTS TOTAL [PATH]
 *
 * A request the daemon refuses (503: too many connections) or a connection
 * it closes is retried on a new connection; the retry counts in the
 * request's latency and in `retries`.  Once the socket is gone (the daemon
 * ended: no such file, or nobody listening), every request left fails at
 * once.  Prints one line:
 *   ok=N failed=N retries=N refused=N secs=S rps=R p50_ms=X p99_ms=Y max_ms=Z
 * and exits 0 when every request was answered 200.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct worker {
	pthread_t t;
	long n;
	double *lat;
	long ok, failed, retries, refused;
};

static const char *sock_path;
static char request[256];
static size_t request_len;
/* The daemon is gone: set by the first client that finds it so. */
static volatile int gone;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(void)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", sock_path);
	if (connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			gone = 1;
		close(fd);
		return -1;
	}
	return fd;
}

/* One request on fd: returns the status code, or -1 when the connection
 * failed or was closed (the caller reconnects).  *keep says whether the
 * connection can be reused. */
static int one_request(int fd, int *keep)
{
	char buf[65536];
	size_t have = 0;
	ssize_t n;
	char *end = NULL;
	long clen = -1;
	int status;

	for (size_t off = 0; off < request_len; off += (size_t)n) {
		n = write(fd, request + off, request_len - off);
		if (n <= 0)
			return -1;
	}
	while (!end) {
		if (have == sizeof(buf) - 1)
			return -1;
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	char *cl = strcasestr(buf, "\r\ncontent-length:");
	if (cl && cl < end)
		clen = strtol(cl + 17, NULL, 10);
	*keep = !(strcasestr(buf, "\r\nconnection: close") && strcasestr(buf, "\r\nconnection: close") < end);
	if (clen < 0) {
		*keep = 0;
		return status;
	}
	size_t body = have - (size_t)(end + 4 - buf);
	while ((long)body < clen) {
		n = read(fd, buf, sizeof(buf) < (size_t)(clen - (long)body) ? sizeof(buf) : (size_t)(clen - (long)body));
		if (n <= 0)
			return -1;
		body += (size_t)n;
	}
	return status;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	int fd = -1;

	for (long i = 0; i < w->n; i++) {
		double t0 = now();
		int tries = 0, status = -1, keep = 0;

		for (;;) {
			if (fd < 0)
				fd = dial();
			if (fd >= 0)
				status = one_request(fd, &keep);
			if (status == 200)
				break;
			if (status == 503)
				w->refused++;
			if (fd >= 0)
				close(fd);
			fd = -1;
			if (gone || ++tries > 1000)
				break;
			w->retries++;
			/* A refused client backs off a little, as a real one would. */
			struct timespec ts = { 0, 1000000L * (tries < 10 ? tries : 10) };
			nanosleep(&ts, NULL);
		}
		w->lat[i] = now() - t0;
		if (status == 200)
			w->ok++;
		else
			w->failed++;
		if (!keep && fd >= 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: statusload SOCKET CLIENTS TOTAL [PATH]\n");
		return 2;
	}
	/* A refused connection is closed under our write: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	sock_path = argv[1];
	long clients = atol(argv[2]), total = atol(argv[3]);
	const char *path = argc > 4 ? argv[4] : "/v1/status";
	if (clients < 1 || total < clients) {
		fprintf(stderr, "statusload: need 1 <= CLIENTS <= TOTAL\n");
		return 2;
	}
	request_len = (size_t)snprintf(request, sizeof(request),
				       "GET %s HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n", path);
	struct worker *w = calloc((size_t)clients, sizeof(*w));
	double *lat = calloc((size_t)total, sizeof(double));
	if (!w || !lat)
		return 1;
	long given = 0;
	for (long i = 0; i < clients; i++) {
		w[i].n = total / clients + (i < total % clients);
		w[i].lat = lat + given;
		given += w[i].n;
	}
	double t0 = now();
	for (long i = 0; i < clients; i++)
		if (pthread_create(&w[i].t, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "statusload: pthread_create: %s\n", strerror(errno));
			return 1;
		}
	long ok = 0, failed = 0, retries = 0, refused = 0;
	for (long i = 0; i < clients; i++) {
		pthread_join(w[i].t, NULL);
		ok += w[i].ok;
		failed += w[i].failed;
		retries += w[i].retries;
		refused += w[i].refused;
	}
	double secs = now() - t0;
	qsort(lat, (size_t)total, sizeof(double), cmp);
	printf("ok=%ld failed=%ld retries=%ld refused=%ld secs=%.3f rps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
	       ok, failed, retries, refused, secs, (double)ok / secs, lat[total / 2] * 1e3,
	       lat[(size_t)((double)total * 0.99)] * 1e3, lat[total - 1] * 1e3);
	free(lat);
	free(w);
	return failed ? 1 : 0;
}
