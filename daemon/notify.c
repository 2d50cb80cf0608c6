/*
 * notify.c - sd_notify, or the same few bytes sent by hand (see notify.h).
 *
 * SMT_NOTIFY_FALLBACK forces our own implementation even when libsystemd
 * is there, so that the unit test can check both against one socket.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

#if defined(HAVE_SYSTEMD) && !defined(SMT_NOTIFY_FALLBACK)
#include <systemd/sd-daemon.h>

static int send_state(const char *msg)
{
	int rc = sd_notify(0, msg);

	return rc < 0 ? rc : 0;
}

int smt_notify_watchdog_usec(uint64_t *usec)
{
	int rc = sd_watchdog_enabled(0, usec);

	return rc < 0 ? rc : rc > 0;
}

#else

static int send_state(const char *msg)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t salen;
	ssize_t n;
	int fd, rc = 0;

	if (name == NULL || *name == '\0')
		return 0;
	len = strlen(name);
	/* systemd also knows "vsock:"; a job's host never gets one. */
	if ((name[0] != '/' && name[0] != '@') || len < 2)
		return -EAFNOSUPPORT;
	if (len > sizeof(sa.sun_path) - (name[0] == '/'))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, name, len);
	/* An abstract address starts with a NUL and is exactly LEN bytes. */
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '/'));

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do
		n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n != strlen(msg))
		rc = -EMSGSIZE;
	close(fd);
	return rc;
}

int smt_notify_watchdog_usec(uint64_t *usec)
{
	const char *text = getenv("WATCHDOG_USEC");
	const char *pid_text = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (text == NULL || *text == '\0')
		return 0;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end || errno || v == 0 || text[0] == '-')
		return -EINVAL;
	/* The variables may have been inherited from a parent that is watched. */
	if (pid_text && *pid_text) {
		long pid;

		errno = 0;
		pid = strtol(pid_text, &end, 10);
		if (*end || errno || pid <= 0)
			return -EINVAL;
		if ((pid_t)pid != getpid())
			return 0;
	}
	if (usec)
		*usec = v;
	return 1;
}

#endif

int smt_notify_ready(void)
{
	return send_state("READY=1");
}

int smt_notify_status(const char *state)
{
	char msg[256];
	int n;

	if (state == NULL || strchr(state, '\n'))
		return -EINVAL;
	n = snprintf(msg, sizeof(msg), "STATUS=%s", state);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -ENAMETOOLONG;
	return send_state(msg);
}

int smt_notify_watchdog(void)
{
	return send_state("WATCHDOG=1");
}
