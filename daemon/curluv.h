/*
 * curluv.h - libcurl's multi socket interface driven by the libuv loop.
 *
 * curl tells us which descriptors to watch and when to wake it; we watch
 * them with uv_poll and one uv_timer and hand the events back with
 * curl_multi_socket_action.  No thread, no select, no busy wait: this is
 * how the leader talks to hundreds of workers at once.
 */
#ifndef SMT_CURLUV_H
#define SMT_CURLUV_H

#include <uv.h>

#include "smt_curl.h"

struct smt_curluv;

/* A transfer ended: RESULT is curl's code.  EASY is no longer in the
 * multi handle and belongs to the caller again. */
typedef void (*smt_curluv_cb)(void *arg, CURL *easy, CURLcode result);

int smt_curluv_new(uv_loop_t *loop, struct smt_curluv **out);

/* Start EASY; CB runs once from the loop when it ends.  Returns 0 or
 * -ENOMEM/-EINVAL (then CB never runs). */
int smt_curluv_add(struct smt_curluv *cu, CURL *easy, smt_curluv_cb cb, void *arg);

/* Abort EASY if it runs; its callback will not run. */
void smt_curluv_cancel(struct smt_curluv *cu, CURL *easy);

/* Abort everything (no callbacks) and close the handles. */
void smt_curluv_close(struct smt_curluv *cu);

#endif
