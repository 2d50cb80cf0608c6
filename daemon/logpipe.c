/* logpipe.c - helpers' stderr, a line at a time, into the daemon's log. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "logpipe.h"

#define LINE_MAX_BYTES 4096

struct smt_logpipe {
	uv_pipe_t pipe;
	int write_fd;
	char source[32];
	char line[LINE_MAX_BYTES + 1];
	size_t len;
	int cut;
	char buf[LINE_MAX_BYTES];
};

static void emit(struct smt_logpipe *lp)
{
	lp->line[lp->len] = '\0';
	if (lp->len > 0 || !lp->cut)
		smt_info("%s: %s%s", lp->source, lp->line, lp->cut ? " [cut]" : "");
	lp->len = 0;
	lp->cut = 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct smt_logpipe *lp = h->data;

	(void)suggested;
	*buf = uv_buf_init(lp->buf, sizeof(lp->buf));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct smt_logpipe *lp = s->data;

	if (n < 0) {
		uv_read_stop(s);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char c = buf->base[i];
		if (c == '\n') {
			emit(lp);
		} else if (c != '\r') {
			if (lp->len < LINE_MAX_BYTES)
				lp->line[lp->len++] = c;
			else
				lp->cut = 1;
		}
	}
}

int smt_logpipe_new(uv_loop_t *loop, const char *source, struct smt_logpipe **out)
{
	struct smt_logpipe *lp = calloc(1, sizeof(*lp));
	int fds[2], rc;

	if (lp == NULL)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		free(lp);
		return rc;
	}
	/* Children write to it with blocking writes, as to any stderr. */
	fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) & ~O_NONBLOCK);
	snprintf(lp->source, sizeof(lp->source), "%s", source);
	lp->write_fd = fds[1];
	uv_pipe_init(loop, &lp->pipe, 0);
	lp->pipe.data = lp;
	rc = uv_pipe_open(&lp->pipe, fds[0]);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&lp->pipe, on_alloc, on_read);
	if (rc < 0) {
		close(fds[0]);
		smt_logpipe_close(lp);
		return rc;
	}
	/* A helper's messages alone never keep the daemon running. */
	uv_unref((uv_handle_t *)&lp->pipe);
	*out = lp;
	return 0;
}

int smt_logpipe_fd(const struct smt_logpipe *lp)
{
	return lp ? lp->write_fd : -1;
}

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

void smt_logpipe_close(struct smt_logpipe *lp)
{
	if (lp == NULL)
		return;
	if (lp->len > 0)
		emit(lp);
	if (lp->write_fd >= 0)
		close(lp->write_fd);
	lp->write_fd = -1;
	uv_close((uv_handle_t *)&lp->pipe, on_closed);
}
