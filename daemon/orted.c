/* orted.c - the worker's Open MPI daemon, watched through a pidfd. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "orted.h"

struct smt_orted {
	uv_poll_t poll;
	uv_idle_t gone;      /* reports an exit found at watch time */
	int pidfd;
	pid_t pid;
	smt_orted_exit_cb cb;
	void *arg;
	int fired;
	int open_handles;
};

static void fire(struct smt_orted *o)
{
	if (o->fired)
		return;
	o->fired = 1;
	o->cb(o->arg, o->pid);
}

static void on_pidfd(uv_poll_t *h, int status, int events)
{
	struct smt_orted *o = h->data;

	(void)status;
	(void)events;
	uv_poll_stop(h);
	fire(o);
}

static void on_gone(uv_idle_t *h)
{
	uv_idle_stop(h);
	fire(h->data);
}

int smt_orted_watch(uv_loop_t *loop, pid_t pid, smt_orted_exit_cb cb, void *arg,
		    struct smt_orted **out)
{
	struct smt_orted *o = calloc(1, sizeof(*o));
	int rc = 0;

	if (o == NULL)
		return -ENOMEM;
	o->pid = pid;
	o->cb = cb;
	o->arg = arg;
	o->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uv_idle_init(loop, &o->gone);
	o->gone.data = o;
	o->open_handles = 1;
	if (o->pidfd < 0) {
		rc = -errno;
		uv_idle_start(&o->gone, on_gone);
	} else {
		fcntl(o->pidfd, F_SETFD, FD_CLOEXEC);
		uv_poll_init(loop, &o->poll, o->pidfd);
		o->poll.data = o;
		o->open_handles++;
		uv_poll_start(&o->poll, UV_READABLE, on_pidfd);
	}
	*out = o;
	return rc;
}

static void on_closed(uv_handle_t *h)
{
	struct smt_orted *o = h->data;

	if (--o->open_handles == 0) {
		if (o->pidfd >= 0)
			close(o->pidfd);
		free(o);
	}
}

void smt_orted_close(struct smt_orted *o)
{
	if (o == NULL)
		return;
	o->fired = 1;
	if (o->pidfd >= 0)
		uv_close((uv_handle_t *)&o->poll, on_closed);
	uv_close((uv_handle_t *)&o->gone, on_closed);
}

pid_t smt_orted_find(const char *proc)
{
	DIR *d = opendir(proc ? proc : "/proc");
	struct dirent *de;
	pid_t found = 0;

	if (d == NULL)
		return -errno;
	while (found == 0 && (de = readdir(d)) != NULL) {
		char path[300], buf[512];
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", proc ? proc : "/proc", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
		if (!open_paren || !close_paren || close_paren[1] != ' ')
			continue;
		*close_paren = '\0';
		const char *comm = open_paren + 1;
		char state = close_paren[2];
		if ((strcmp(comm, "orted") == 0 || strcmp(comm, "prted") == 0) && state != 'Z')
			found = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return found;
}
