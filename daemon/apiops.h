/*
 * apiops.h - what the control API asks the daemon: one table of callbacks,
 * given to the server (api.h) and called by the routes (routes.c) on the
 * daemon's loop, so a callback may read and change the daemon's state
 * freely.  apiapply.c fills it in.
 */
#ifndef SMT_APIOPS_H
#define SMT_APIOPS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/*
 * A POST: BODY is the parsed JSON body or NULL when it was empty; PEER_PID
 * is the client's SO_PEERCRED PID (its uid already checked to be 0 or the
 * daemon's), 0 when unknown: what a client says of itself is checked
 * against it.  Returns the HTTP status; *REPLY may be set to a JSON body (a
 * new reference).
 */
typedef int (*smt_api_post_fn)(void *ctx, json_t *body, int peer_pid, json_t **reply);

/*
 * What the server asks the daemon.  Every callback may be NULL: the
 * endpoint then answers 501.  CTX is the pointer given to smt_api_new.
 */
#define SMT_STATUS_BRIEF 1
#define SMT_STATUS_LEADER 2

struct smt_api_ops {
	/* GET /v1/status: the state object (a new reference), NULL on error
	 * (500).  FLAGS: SMT_STATUS_BRIEF (?brief=1): the host list may be
	 * given as its digest (SMT_F_HOSTS_DIGEST, smt_digest_text) instead;
	 * the routes make the digest of a list that is given all the same.
	 * SMT_STATUS_LEADER: the leader asks (what only it may read). */
	json_t *(*status)(void *ctx, int flags);
	/* GET /healthz, GET /readyz: nonzero for 200, zero for 503. */
	int (*healthy)(void *ctx);
	int (*ready)(void *ctx);
	/* POST /v1/kill: forward SIGNO to the job; 0 (202), -ESRCH when
	 * there is no job to signal (409), another -errno (500). */
	int (*kill)(void *ctx, int signo);
	/* GET /v1/logs: the last TAIL kept lines of RANK (-1: all ranks) as
	 * {"lines": [...]} (a new reference), NULL on error (500). */
	json_t *(*logs)(void *ctx, long tail, long rank);
	/* GET /metrics: Prometheus text (version 0.0.4), malloc'ed; the
	 * server frees it and appends its own smtd_api_* metrics. */
	char *(*metrics)(void *ctx);
	/*
	 * The POST paths of the daemons' own protocol, one callback each
	 * (smt_api_post_fn): a worker's launch (SMT_PATH_LAUNCH), orted's
	 * registration (SMT_PATH_ORTED), the end of the ranks (SMT_PATH_END),
	 * the job's result (SMT_PATH_RESULT), the next attempt
	 * (SMT_PATH_ATTEMPT), a restart (SMT_PATH_RESTART) and a stack
	 * collection's start (POST SMT_PATH_STACKS).
	 */
	smt_api_post_fn launch, orted, end, result, attempt, restart, stacks_start;
	/*
	 * The status's generation: a number that changes whenever what
	 * /v1/status shows changes.  With it, GET /v1/status?wait=GEN&timeout=MS
	 * is a long poll, answered when the generation is no longer GEN
	 * (after smt_api_notify) or after MS.  NULL: never held.
	 */
	json_int_t (*generation)(void *ctx);
	/*
	 * GET /v1/lines (the leader only): at most MAX bytes of this host's
	 * rank output from offset FROM, as *BODY and *LEN (valid until the next
	 * call).  Returns 0, -EAGAIN when there is nothing yet and FINAL is 0
	 * (the request is held until smt_api_notify_lines or its time is up;
	 * with FINAL an empty answer is fine), -ERANGE for an offset out of
	 * range (409), -ENOENT when this host has no output to give (404).
	 */
	int (*lines)(void *ctx, uint64_t from, size_t max, int final, const char **body,
		     size_t *len);
	/* GET /v1/stacks?id=N (N -1: the last): the result of a POST
	 * /v1/stacks as JSON (a new reference), or NULL with *STATUS 404 (no
	 * such collection) or 409 (still collecting). */
	json_t *(*stacks)(void *ctx, long long id, int *status);
	/* A request carried "X-Smtd-Leader: 1": the leader's channel is alive. */
	void (*leader_contact)(void *ctx);
	/* The leader's first poll held with no time (keep=1) began (KEPT 1),
	 * or the last one ended (KEPT 0): while one is held, its connection's
	 * keepalive, not the requests' rhythm, says whether the leader lives.
	 * QUIET_MS: when it ended, how long the kernel had heard nothing from
	 * the leader on it (all of smt_tcpchannel_silence when the keepalive
	 * found nobody). */
	void (*leader_kept)(void *ctx, int kept, uint64_t quiet_ms);
};

#endif
