/*
 * dial.c - `smtctl dial-stdio`: a byte pump between stdio and the daemon's
 * socket, as `docker system dial-stdio` is for `docker -H ssh://`.
 *
 * One poll() loop, one buffer per direction.  Reading stops while a buffer
 * is full, so a slow reader on either side slows the writer instead of
 * filling memory.  Writes to stdout go in pieces of at most PIPE_BUF, which
 * a pipe reported writable always takes without blocking.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "smt_proto.h"
#include "smtctl.h"

#define PUMP_BUF (64 * 1024)

struct pump {
	char buf[PUMP_BUF];
	size_t len;
	size_t off;
	int eof;   /* the source has ended */
	int done;  /* the direction has ended: nothing more will move */
};

static int connect_unix(const char *path, int *fdp)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (errno == EINTR)
			continue;
		int err = errno;
		close(fd);
		return -err;
	}
	*fdp = fd;
	return 0;
}

/* stdin -> socket; at the end of stdin the socket is half-closed. */
static void finish_up(struct pump *up, int sock)
{
	if (up->done)
		return;
	up->done = 1;
	shutdown(sock, SHUT_WR);
}

/* socket -> stdout; at the end of the socket stdout is closed. */
static void finish_down(struct pump *down, int sock)
{
	if (down->done)
		return;
	down->done = 1;
	shutdown(sock, SHUT_RD);
	close(STDOUT_FILENO);
}

static void pump_read(struct pump *p, int fd, int is_sock)
{
	ssize_t n = is_sock ? recv(fd, p->buf, sizeof p->buf, MSG_DONTWAIT)
			    : read(fd, p->buf, sizeof p->buf);
	if (n > 0) {
		p->len = (size_t)n;
		p->off = 0;
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		p->eof = 1;
	}
}

/* Returns -1 when the destination is gone. */
static int pump_write(struct pump *p, int fd, int is_sock)
{
	size_t want = p->len - p->off;
	ssize_t n;

	if (is_sock) {
		n = send(fd, p->buf + p->off, want, MSG_DONTWAIT | MSG_NOSIGNAL);
	} else {
		if (want > PIPE_BUF)
			want = PIPE_BUF;
		n = write(fd, p->buf + p->off, want);
	}
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	p->off += (size_t)n;
	if (p->off == p->len)
		p->len = p->off = 0;
	return 0;
}

int smtctl_dial_stdio(const char *path)
{
	struct pump up = { .len = 0 }, down = { .len = 0 };
	int sock = -1, r;

	r = connect_unix(path, &sock);
	if (r < 0)
		return smtctl_connect_error(path, -r);
	/* A reader that goes away must end this direction, not the process. */
	signal(SIGPIPE, SIG_IGN);

	while (!up.done || !down.done) {
		struct pollfd fds[3];
		int nfds = 0, in = -1, s = -1, out = -1;
		short sock_events = 0;

		if (!up.done && !up.eof && up.len == 0) {
			in = nfds;
			fds[nfds++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		}
		if (!up.done && up.len > 0)
			sock_events |= POLLOUT;
		if (!down.done && !down.eof && down.len == 0)
			sock_events |= POLLIN;
		if (sock_events) {
			s = nfds;
			fds[nfds++] = (struct pollfd){ .fd = sock, .events = sock_events };
		}
		if (!down.done && down.len > 0) {
			out = nfds;
			fds[nfds++] = (struct pollfd){ .fd = STDOUT_FILENO, .events = POLLOUT };
		}
		if (nfds > 0 && poll(fds, (nfds_t)nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "smtctl: dial-stdio: poll: %s\n", strerror(errno));
			close(sock);
			return SMTCTL_EXIT_UNREACHABLE;
		}
		if (in >= 0 && fds[in].revents)
			pump_read(&up, STDIN_FILENO, 0);
		if (s >= 0 && (fds[s].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    (sock_events & POLLIN))
			pump_read(&down, sock, 1);
		if (s >= 0 && (fds[s].revents & (POLLOUT | POLLERR | POLLHUP)) &&
		    (sock_events & POLLOUT) && pump_write(&up, sock, 1) < 0)
			finish_up(&up, sock);
		if (out >= 0 && fds[out].revents && pump_write(&down, STDOUT_FILENO, 0) < 0)
			finish_down(&down, sock);
		if (up.eof && up.len == 0)
			finish_up(&up, sock);
		if (down.eof && down.len == 0)
			finish_down(&down, sock);
	}
	close(sock);
	return SMTCTL_EXIT_OK;
}
