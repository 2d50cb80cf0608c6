/* reaper.c - SIGCHLD as a loop event, wait4(-1) in one place. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "reaper.h"

struct watch {
	pid_t pid;
	smt_reaper_cb cb;
	void *arg;
	LIST_ENTRY(watch) link;
};

struct smt_reaper {
	uv_signal_t sigchld;
	LIST_HEAD(, watch) watches;
	smt_reaper_any_cb any_cb;
	void *any_arg;
	int closing_handles;
	long long maxrss_kb;   /* the process being reported, in its callback */
};

/* SIGCHLD keeps the loop alive exactly while someone waits for a child. */
static void update_ref(struct smt_reaper *r)
{
	if (!LIST_EMPTY(&r->watches))
		uv_ref((uv_handle_t *)&r->sigchld);
	else
		uv_unref((uv_handle_t *)&r->sigchld);
}

/*
 * uv_spawn() would install libuv's own SIGCHLD handling and reap its
 * children by PID, racing with waitpid(-1) below and losing exit statuses.
 * This definition takes its place in smtd, so a call added by mistake fails
 * loudly instead of silently.
 */
int uv_spawn(uv_loop_t *loop, uv_process_t *handle, const uv_process_options_t *options)
{
	(void)loop;
	(void)handle;
	(void)options;
	smt_error("internal error: uv_spawn() is not allowed in smtd (the reaper owns waitpid)");
	return UV_ENOSYS;
}

static struct watch *take_watch(struct smt_reaper *r, pid_t pid)
{
	struct watch *w;

	LIST_FOREACH(w, &r->watches, link) {
		if (w->pid == pid) {
			LIST_REMOVE(w, link);
			return w;
		}
	}
	return NULL;
}

void smt_reaper_reap(struct smt_reaper *r)
{
	for (;;) {
		int wstatus;
		struct rusage ru;
		/* wait4: the peak memory comes with the status, and only then. */
		pid_t pid = wait4(-1, &wstatus, WNOHANG, &ru);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		struct watch *w = take_watch(r, pid);
		if (w) {
			smt_reaper_cb cb = w->cb;
			void *arg = w->arg;
			free(w);
			update_ref(r);
			r->maxrss_kb = ru.ru_maxrss;
			cb(arg, pid, wstatus);
			r->maxrss_kb = 0;
			continue;
		}
		if (r->any_cb)
			r->any_cb(r->any_arg, pid, wstatus);
	}
}

long long smt_reaper_maxrss(const struct smt_reaper *r)
{
	return r->maxrss_kb;
}

static void on_sigchld(uv_signal_t *h, int signum)
{
	(void)signum;
	smt_reaper_reap(h->data);
}

int smt_reaper_new(uv_loop_t *loop, struct smt_reaper **out)
{
	struct smt_reaper *r;
	int rc;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	LIST_INIT(&r->watches);
	/* As PID 1 orphans come to us anyway; otherwise ask for them. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		smt_warn("cannot become a child subreaper (%s): orphaned job processes "
			 "may escape supervision", strerror(errno));
	uv_signal_init(loop, &r->sigchld);
	r->sigchld.data = r;
	rc = uv_signal_start(&r->sigchld, on_sigchld, SIGCHLD);
	if (rc < 0) {
		smt_reaper_close(r);
		return rc;
	}
	update_ref(r);
	*out = r;
	/* Children may have exited before the handler existed. */
	smt_reaper_reap(r);
	return 0;
}

void smt_reaper_set_any(struct smt_reaper *r, smt_reaper_any_cb cb, void *arg)
{
	r->any_cb = cb;
	r->any_arg = arg;
}

int smt_reaper_watch(struct smt_reaper *r, pid_t pid, smt_reaper_cb cb, void *arg)
{
	struct watch *w = malloc(sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	*w = (struct watch){ .pid = pid, .cb = cb, .arg = arg };
	LIST_INSERT_HEAD(&r->watches, w, link);
	update_ref(r);
	return 0;
}

int smt_reaper_watched(const struct smt_reaper *r, pid_t pid)
{
	const struct watch *w;

	if (!r)
		return 0;
	LIST_FOREACH(w, &r->watches, link)
		if (w->pid == pid)
			return 1;
	return 0;
}

void smt_reaper_unwatch(struct smt_reaper *r, pid_t pid)
{
	free(take_watch(r, pid));
	update_ref(r);
}

static void on_closed(uv_handle_t *h)
{
	struct smt_reaper *r = h->data;

	if (--r->closing_handles == 0)
		free(r);
}

void smt_reaper_close(struct smt_reaper *r)
{
	while (!LIST_EMPTY(&r->watches)) {
		struct watch *w = LIST_FIRST(&r->watches);
		LIST_REMOVE(w, link);
		free(w);
	}
	r->closing_handles = 1;
	uv_close((uv_handle_t *)&r->sigchld, on_closed);
}
