/*
 * hostname_probe.c - report what gethostname() gives, for the preload tests.
 *
 *   hostname_probe              print the host name (buffer of 256 bytes)
 *   hostname_probe SIZE...      one line per SIZE: the return value, errno
 *                               and the exact bytes written, e.g.
 *                               size=3 rc=-1 errno=ENAMETOOLONG buf="alg"
 *                               (NUL shown as \0, an untouched byte as ~);
 *                               a write past SIZE is reported and fails
 *   hostname_probe -c SIZE...   the same through __gethostname_chk, as a
 *                               program built with _FORTIFY_SOURCE calls it
 *   hostname_probe -t N         N threads call gethostname at the same
 *                               moment, as the process's first call;
 *                               prints "threads=N same=yes NAME"
 *   hostname_probe -f           open descriptors before and after the
 *                               first call: "fds=BEFORE,AFTER"
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int __gethostname_chk(char *name, size_t len, size_t nreal);

#define UNTOUCHED 0xa5
#define GUARD 32
#define MAX_THREADS 64

static pthread_barrier_t start;

struct result {
	int rc;
	int err;
	char name[300];
};

static const char *errno_name(int err)
{
	switch (err) {
	case 0: return "0";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	default: return "other";
	}
}

static int probe_size(size_t size, int chk)
{
	unsigned char *buf = malloc(size + GUARD);
	int rc, err, bad = 0;

	if (!buf)
		return 1;
	memset(buf, UNTOUCHED, size + GUARD);
	errno = 0;
	rc = chk ? __gethostname_chk((char *)buf, size, size) :
		   gethostname((char *)buf, size);
	err = rc < 0 ? errno : 0;
	printf("size=%zu rc=%d errno=%s buf=\"", size, rc, errno_name(err));
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\0')
			fputs("\\0", stdout);
		else if (buf[i] == UNTOUCHED)
			putchar('~');
		else if (buf[i] >= 0x20 && buf[i] < 0x7f)
			putchar(buf[i]);
		else
			printf("\\x%02x", buf[i]);
	}
	putchar('"');
	for (size_t i = size; i < size + GUARD; i++)
		if (buf[i] != UNTOUCHED)
			bad = 1;
	if (bad)
		fputs(" OVERFLOW", stdout);
	putchar('\n');
	free(buf);
	return bad;
}

static void *thread_main(void *arg)
{
	struct result *r = arg;

	pthread_barrier_wait(&start);
	r->rc = gethostname(r->name, sizeof(r->name));
	r->err = errno;
	return NULL;
}

static int probe_threads(int n)
{
	pthread_t tid[MAX_THREADS];
	struct result res[MAX_THREADS];
	int same = 1;

	if (n < 1 || n > MAX_THREADS)
		return 2;
	memset(res, 0, sizeof(res));
	pthread_barrier_init(&start, NULL, (unsigned int)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&tid[i], NULL, thread_main, &res[i]) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < n; i++) {
		if (res[i].rc != 0 || strcmp(res[i].name, res[0].name) != 0) {
			same = 0;
			fprintf(stderr, "thread %d: rc=%d errno=%s name=%s\n", i,
				res[i].rc, errno_name(res[i].err), res[i].name);
		}
	}
	printf("threads=%d same=%s %s\n", n, same ? "yes" : "no", res[0].name);
	return !same;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	/* The directory stream itself was one of them. */
	return n - 1;
}

static int probe_fds(void)
{
	char name[300];
	int before = count_fds(), after, rc;

	rc = gethostname(name, sizeof(name));
	after = count_fds();
	printf("fds=%d,%d rc=%d\n", before, after, rc);
	return before < 0 || before != after;
}

int main(int argc, char **argv)
{
	char name[257];
	int chk = 0, status = 0;

	if (argc >= 3 && strcmp(argv[1], "-t") == 0)
		return probe_threads(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "-f") == 0)
		return probe_fds();
	if (argc >= 2 && strcmp(argv[1], "-c") == 0) {
		chk = 1;
		argv++;
		argc--;
	}
	if (argc == 1) {
		if (gethostname(name, sizeof(name) - 1) != 0) {
			perror("gethostname");
			return 1;
		}
		name[sizeof(name) - 1] = '\0';
		puts(name);
		return 0;
	}
	for (int i = 1; i < argc; i++)
		status |= probe_size(strtoul(argv[i], NULL, 10), chk);
	return status;
}
