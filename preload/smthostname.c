/*
 * smthostname.c - LD_PRELOAD library: gethostname() returns current_host.
 *
 * Training frameworks name a rank's host with gethostname(); in a SageMaker
 * job that must be the job's name for the host (current_host of
 * resourceconfig.json, libsmthostname(3)), not the container's.  The file is read
 * once per process, on the first call, from SMTD_RESOURCE_CONFIG, else
 * $SMTD_ROOT/input/config/resourceconfig.json, else
 * /opt/ml/input/config/resourceconfig.json.  Anything short of a valid
 * document with a valid host name there (missing, unreadable, not a regular
 * file, empty, over 1 MiB, malformed, current_host absent or not a string or
 * not a host name) gives the real host name instead: this library is loaded
 * into programs we do not own and must never be the reason one fails.
 *
 * It links libc only and exports gethostname and __gethostname_chk, nothing
 * else (-fvisibility=hidden).  uname() is deliberately left alone: the
 * toolkit we replace changes gethostname only, Python's
 * socket.gethostname() and Open MPI call gethostname, and callers of
 * uname() ask for the kernel's identity, which is not ours to change.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hostscan.h"

#define EXPORT __attribute__((visibility("default")))

/* smtd-config(5), libsmthostname(3); the daemon refuses larger files. */
#define CONFIG_MAX	(1024 * 1024)
#define CONFIG_REL	"/input/config/resourceconfig.json"
#define CONFIG_DEFAULT	"/opt/ml" CONFIG_REL
#define ENV_CONFIG	"SMTD_RESOURCE_CONFIG"
#define ENV_ROOT	"SMTD_ROOT"

/* glibc's fortified entry point (bits/unistd.h declares it only when
 * _FORTIFY_SOURCE is on) and its failure report. */
int __gethostname_chk(char *name, size_t len, size_t nreal);
extern void __chk_fail(void) __attribute__((noreturn));

/*
 * The state of the process, written once inside pthread_once and only read
 * afterwards; pthread_once orders those writes before every later read.
 * glibc restarts a pthread_once interrupted by fork() in the child, so a
 * program that forks while another thread is loading cannot deadlock.
 * job_host_len == 0 means "use the real host name".
 */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char job_host[SMT_HOSTSCAN_MAX + 1];
static size_t job_host_len;
static int (*next_gethostname)(char *, size_t);

static const char *config_path(char *buf, size_t size)
{
	const char *env = secure_getenv(ENV_CONFIG);
	size_t n;

	if (env && *env)
		return env;
	env = secure_getenv(ENV_ROOT);
	if (!env || !*env)
		return CONFIG_DEFAULT;
	n = strlen(env);
	if (n + sizeof(CONFIG_REL) > size)
		return NULL;
	memcpy(buf, env, n);
	memcpy(buf + n, CONFIG_REL, sizeof(CONFIG_REL));
	return buf;
}

/*
 * The file is read into an anonymous mapping rather than malloc'd memory
 * (a thread of a forking program could otherwise leave the allocator's
 * lock held in the child) and rather than mapped itself (a file truncated
 * under us would raise SIGBUS).  A FIFO or device is never opened for
 * reading: stat() first, and O_NONBLOCK for what may change in between.
 */
static void load_from(const char *path)
{
	char *buf = MAP_FAILED;
	size_t total = 0;
	struct stat st;
	ssize_t n;
	int fd = -1;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto out;
	buf = mmap(NULL, CONFIG_MAX + 1, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		goto out;
	/* One byte more than allowed tells a file that grew since stat(). */
	while (total <= CONFIG_MAX) {
		n = read(fd, buf + total, CONFIG_MAX + 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		total += (size_t)n;
	}
	if (total > CONFIG_MAX)
		goto out;
	n = smt_hostscan(buf, total, job_host);
	if (n > 0)
		job_host_len = (size_t)n;
out:
	if (buf != MAP_FAILED)
		munmap(buf, CONFIG_MAX + 1);
	if (fd >= 0)
		close(fd);
}

static void load(void)
{
	char buf[PATH_MAX];
	const char *path = config_path(buf, sizeof(buf));
	int cancel;

	/* glibc's gethostname is no cancellation point and ours must not
	 * become one: a thread cancelled inside open() or read() here would
	 * leave the descriptor and the mapping behind. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	/* Another preloaded library may wrap gethostname too; RTLD_NEXT
	 * keeps the chain.  Without one, uname() is what glibc uses. */
	next_gethostname = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
	if (path)
		load_from(path);
	pthread_setcancelstate(cancel, NULL);
}

/*
 * glibc's short-buffer rule, which this library matches byte for byte
 * (sysdeps/posix/gethostname.c, the implementation on Linux, checked on
 * glibc 2.36): copy min(LEN, strlen(name) + 1) bytes, then, if the name
 * with its NUL did not fit, fail with ENAMETOOLONG.  So with LEN equal to
 * the name's length the whole name is copied without a NUL and -1 is
 * returned; with LEN 1, its first character.  POSIX lets the truncated
 * call succeed, but programs on glibc are written against glibc.
 */
static int copy_name(char *name, size_t len, const char *src, size_t srclen)
{
	size_t need = srclen + 1;

	memcpy(name, src, len < need ? len : need);
	if (need > len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int real_gethostname(char *name, size_t len)
{
	struct utsname u;

	if (next_gethostname)
		return next_gethostname(name, len);
	if (uname(&u) != 0)
		return -1;
	return copy_name(name, len, u.nodename, strlen(u.nodename));
}

static int job_gethostname(char *name, size_t len)
{
	int saved = errno;

	pthread_once(&load_once, load);
	/* A successful call leaves errno as it was, as glibc's does. */
	errno = saved;
	if (job_host_len == 0)
		return real_gethostname(name, len);
	return copy_name(name, len, job_host, job_host_len);
}

EXPORT int gethostname(char *name, size_t len)
{
	return job_gethostname(name, len);
}

/*
 * Programs built with _FORTIFY_SOURCE call this when the compiler knows the
 * buffer's size NREAL.  glibc's own version goes straight to its internal
 * __gethostname and would bypass this library.
 */
EXPORT int __gethostname_chk(char *name, size_t len, size_t nreal)
{
	if (len > nreal)
		__chk_fail();
	return job_gethostname(name, len);
}
