/*
 * test_notify.c - the sd_notify messages, received on a real AF_UNIX
 * datagram socket standing in for systemd's NOTIFY_SOCKET.  Built twice:
 * test_notify uses what configure chose (libsystemd when found),
 * test_notify_fallback our own datagram writer.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

struct listener {
	char dir[64];
	char path[96];
	int fd;
};

/* A datagram socket bound to a path, or to an abstract name when ABSTRACT. */
static void listen_on(struct listener *l, int abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;

	l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(l->fd >= 0);
	l->dir[0] = '\0';
	if (abstract) {
		snprintf(l->path, sizeof(l->path), "@smt-test-notify-%d", (int)getpid());
		memcpy(sa.sun_path, l->path, strlen(l->path));
		sa.sun_path[0] = '\0';
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(l->path));
	} else {
		snprintf(l->dir, sizeof(l->dir), "%s", "/tmp/smt-notify.XXXXXX");
		assert_non_null(mkdtemp(l->dir));
		snprintf(l->path, sizeof(l->path), "%s/notify", l->dir);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->path);
		salen = sizeof(sa);
	}
	assert_int_equal(bind(l->fd, (struct sockaddr *)&sa, salen), 0);
	assert_int_equal(setenv("NOTIFY_SOCKET", l->path, 1), 0);
}

static void unlisten(struct listener *l)
{
	close(l->fd);
	if (l->dir[0]) {
		unlink(l->path);
		rmdir(l->dir);
	}
	unsetenv("NOTIFY_SOCKET");
}

/* The next datagram must be exactly WANT. */
static void expect_message(struct listener *l, const char *want)
{
	struct pollfd p = { .fd = l->fd, .events = POLLIN };
	char buf[512];
	ssize_t n;

	assert_int_equal(poll(&p, 1, 2000), 1);
	n = recv(l->fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void expect_nothing(struct listener *l)
{
	struct pollfd p = { .fd = l->fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 0), 0);
}

static void test_messages_on_path_socket(void **state)
{
	struct listener l;

	(void)state;
	listen_on(&l, 0);
	assert_int_equal(smt_notify_ready(), 0);
	expect_message(&l, "READY=1");
	assert_int_equal(smt_notify_status("running"), 0);
	expect_message(&l, "STATUS=running");
	assert_int_equal(smt_notify_status("waiting-for-peers"), 0);
	expect_message(&l, "STATUS=waiting-for-peers");
	assert_int_equal(smt_notify_watchdog(), 0);
	expect_message(&l, "WATCHDOG=1");
	expect_nothing(&l);
	/* The variable stays for later calls (sd_notify's unset_environment=0). */
	assert_non_null(getenv("NOTIFY_SOCKET"));
	unlisten(&l);
}

static void test_messages_on_abstract_socket(void **state)
{
	struct listener l;

	(void)state;
	listen_on(&l, 1);
	assert_int_equal(smt_notify_ready(), 0);
	expect_message(&l, "READY=1");
	assert_int_equal(smt_notify_status("succeeded"), 0);
	expect_message(&l, "STATUS=succeeded");
	assert_int_equal(smt_notify_watchdog(), 0);
	expect_message(&l, "WATCHDOG=1");
	unlisten(&l);
}

static void test_no_socket_is_a_noop(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(smt_notify_ready(), 0);
	assert_int_equal(smt_notify_status("running"), 0);
	assert_int_equal(smt_notify_watchdog(), 0);
}

static void test_errors(void **state)
{
	struct listener l;

	(void)state;
	listen_on(&l, 0);
	/* A status is one line: a newline would start a second assignment. */
	assert_int_equal(smt_notify_status("running\nREADY=1"), -EINVAL);
	assert_int_equal(smt_notify_status(NULL), -EINVAL);
	expect_nothing(&l);
	unlisten(&l);
	/* Nobody listens there: an error, not a crash and not a hang. */
	setenv("NOTIFY_SOCKET", "/nonexistent/smt-notify.sock", 1);
	assert_true(smt_notify_ready() < 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_true(smt_notify_ready() < 0);
	unsetenv("NOTIFY_SOCKET");
}

static void test_watchdog_usec(void **state)
{
	uint64_t usec = 0;
	char pid[32];

	(void)state;
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(smt_notify_watchdog_usec(&usec), 0);

	setenv("WATCHDOG_USEC", "30000000", 1);
	assert_int_equal(smt_notify_watchdog_usec(&usec), 1);
	assert_int_equal(usec, 30000000);

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	usec = 0;
	assert_int_equal(smt_notify_watchdog_usec(&usec), 1);
	assert_int_equal(usec, 30000000);

	/* Inherited from a watched parent: not ours to ping. */
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(smt_notify_watchdog_usec(&usec), 0);
	unsetenv("WATCHDOG_PID");

	setenv("WATCHDOG_USEC", "soon", 1);
	assert_true(smt_notify_watchdog_usec(&usec) < 0);
	unsetenv("WATCHDOG_USEC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages_on_path_socket),
		cmocka_unit_test(test_messages_on_abstract_socket),
		cmocka_unit_test(test_no_socket_is_a_noop),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_watchdog_usec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
