/* curluv.c - curl's multi socket API on the libuv loop. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "curluv.h"
#include "log.h"

struct smt_curluv {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	int closing;
};

/* One per descriptor curl asked us to watch. */
struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct smt_curluv *cu;
};

/* One per transfer, reached through CURLOPT_PRIVATE. */
struct xfer {
	smt_curluv_cb cb;
	void *arg;
};

static void check_done(struct smt_curluv *cu)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(cu->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURL *easy = msg->easy_handle;
		CURLcode result = msg->data.result;
		struct xfer *x = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
		curl_multi_remove_handle(cu->multi, easy);
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		if (x) {
			smt_curluv_cb cb = x->cb;
			void *arg = x->arg;
			free(x);
			cb(arg, easy, result);
		}
	}
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sock *s = h->data;
	struct smt_curluv *cu = s->cu;
	int flags = 0, running;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cu->multi, s->fd, flags, &running);
	check_done(cu);
}

static void on_timer(uv_timer_t *t)
{
	struct smt_curluv *cu = t->data;
	int running;

	curl_multi_socket_action(cu->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(cu);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct smt_curluv *cu = userp;

	(void)multi;
	if (cu->closing)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&cu->timer);
	else
		/* 0 means "as soon as possible": the next loop turn, never a
		 * recursive call from inside curl. */
		uv_timer_start(&cu->timer, on_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

static void sock_closed(uv_handle_t *h)
{
	free(h->data);
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct smt_curluv *cu = userp;
	struct sock *s = socketp;
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, sock_closed);
			curl_multi_assign(cu->multi, fd, NULL);
		}
		return 0;
	}
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return -1;
		s->fd = fd;
		s->cu = cu;
		if (uv_poll_init_socket(cu->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		curl_multi_assign(cu->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	uv_poll_start(&s->poll, events, on_poll);
	return 0;
}

int smt_curluv_new(uv_loop_t *loop, struct smt_curluv **out)
{
	struct smt_curluv *cu = calloc(1, sizeof(*cu));

	if (cu == NULL)
		return -ENOMEM;
	cu->multi = curl_multi_init();
	if (cu->multi == NULL) {
		free(cu);
		return -ENOMEM;
	}
	cu->loop = loop;
	uv_timer_init(loop, &cu->timer);
	cu->timer.data = cu;
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(cu->multi, CURLMOPT_SOCKETDATA, cu);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(cu->multi, CURLMOPT_TIMERDATA, cu);
	*out = cu;
	return 0;
}

int smt_curluv_add(struct smt_curluv *cu, CURL *easy, smt_curluv_cb cb, void *arg)
{
	struct xfer *x = malloc(sizeof(*x));

	if (x == NULL)
		return -ENOMEM;
	x->cb = cb;
	x->arg = arg;
	curl_easy_setopt(easy, CURLOPT_PRIVATE, x);
	if (curl_multi_add_handle(cu->multi, easy) != CURLM_OK) {
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		free(x);
		return -EINVAL;
	}
	return 0;
}

void smt_curluv_cancel(struct smt_curluv *cu, CURL *easy)
{
	struct xfer *x = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	if (x == NULL)
		return;
	curl_multi_remove_handle(cu->multi, easy);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
	free(x);
}

static void timer_closed(uv_handle_t *h)
{
	struct smt_curluv *cu = h->data;

	curl_multi_cleanup(cu->multi);
	free(cu);
}

void smt_curluv_close(struct smt_curluv *cu)
{
	if (cu == NULL)
		return;
	cu->closing = 1;
	uv_close((uv_handle_t *)&cu->timer, timer_closed);
}
