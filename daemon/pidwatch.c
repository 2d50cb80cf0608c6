/* pidwatch.c - a process's end through its pidfd (pidwatch.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "pidwatch.h"
#include "procfs.h"

struct smt_pidwatch {
	uv_poll_t poll;
	uv_idle_t gone;     /* an end found at start is reported from the loop */
	int fd;
	pid_t pid;
	smt_pidwatch_cb cb;
	void *arg;
	int ended;
	int fired;
	int handles;
};

static void fire(struct smt_pidwatch *w)
{
	w->ended = 1;
	if (w->fired)
		return;
	w->fired = 1;
	w->cb(w->arg, w->pid);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	uv_poll_stop(h);
	fire(h->data);
}

static void on_gone(uv_idle_t *h)
{
	uv_idle_stop(h);
	fire(h->data);
}

int smt_pidwatch_start(uv_loop_t *loop, pid_t pid, uint64_t start, smt_pidwatch_cb cb,
		       void *arg, struct smt_pidwatch **out)
{
	struct smt_pidwatch *w = calloc(1, sizeof(*w));
	int fd;

	if (!w)
		return -ENOMEM;
	fd = smt_proc_open(pid, start);
	if (fd == -ENOSYS) {
		free(w);
		return -ENOSYS;
	}
	w->pid = pid;
	w->cb = cb;
	w->arg = arg;
	w->fd = fd >= 0 ? fd : -1;
	uv_idle_init(loop, &w->gone);
	w->gone.data = w;
	w->handles = 1;
	if (w->fd < 0 || uv_poll_init(loop, &w->poll, w->fd) < 0) {
		uv_idle_start(&w->gone, on_gone);
	} else {
		w->poll.data = w;
		w->handles++;
		uv_poll_start(&w->poll, UV_READABLE, on_poll);
	}
	*out = w;
	return 0;
}

int smt_pidwatch_fd(const struct smt_pidwatch *w)
{
	return w->fd;
}

int smt_pidwatch_ended(const struct smt_pidwatch *w)
{
	return w->ended;
}

static void on_closed(uv_handle_t *h)
{
	struct smt_pidwatch *w = h->data;

	if (--w->handles == 0) {
		if (w->fd >= 0)
			close(w->fd);
		free(w);
	}
}

void smt_pidwatch_stop(struct smt_pidwatch *w)
{
	if (!w)
		return;
	w->fired = 1;
	if (w->handles == 2)
		uv_close((uv_handle_t *)&w->poll, on_closed);
	uv_close((uv_handle_t *)&w->gone, on_closed);
}
