/*
 * peers.h - the leader's channels to its workers (SPEC §10).
 *
 * For every worker the leader runs `ssh -o BatchMode=yes HOST smtctl
 * dial-stdio`, with ssh's stdin and stdout on one end of a socketpair whose
 * other end libcurl uses as an already-connected socket; the worker's own
 * HTTP API is then spoken over it (curluv.h drives every transfer from the
 * loop; no thread per host).  Each worker gets a distinct URL port so that
 * curl's connection cache never lends one worker's channel to another.
 *
 * Readiness: all workers are probed at once (GET /v1/status); a probe that
 * fails is retried after 50 ms, doubling to at most 1 s.  A worker is ready
 * when it says it is a worker of the same job: same hosts, same leader.
 * A worker with another host list is a configuration error naming it.
 *
 * Supervision: once the job is launched each worker is watched with a long
 * poll (GET /v1/status?wait=GEN&timeout=MS) that the worker answers when
 * its state changes or after MS; the answer is the worker's news and the
 * heartbeat of the channel both ways.  When a channel fails it is re-opened
 * with the same back-off; a worker not heard from for the peer timeout is
 * lost.  At the end the result is POSTed to every worker.
 */
#ifndef SMT_PEERS_H
#define SMT_PEERS_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "reaper.h"

struct smt_peers;

struct smt_peers_ops {
	/* Every worker is ready. */
	void (*all_ready)(void *ctx);
	/* Worker I belongs to another job: WHAT says how (one line). */
	void (*mismatch)(void *ctx, size_t i, const char *what);
	/* Worker I's channel failed and did not come back in time. */
	void (*lost)(void *ctx, size_t i, const char *why);
	/* Worker I's status changed (a new reference is NOT passed). */
	void (*news)(void *ctx, size_t i, json_t *status);
	/* Every worker answered the result, or could not be reached. */
	void (*results_delivered)(void *ctx);
};

struct smt_peers_config {
	const char *const *hosts;   /* the workers */
	size_t nhosts;
	const char *const *job_hosts; /* the job's hosts, as the worker must list them */
	size_t njob_hosts;
	const char *leader;
	const char *ssh_path;       /* "ssh" */
	const char *smtctl_path;    /* smtctl on the workers */
	const char *remote_socket;  /* the workers' control socket path */
	const char *channel_socket; /* where curl's connections to the workers are
				       accepted (a path: curl 7.88 never reuses a
				       connection to an abstract socket) */
	struct smt_reaper *reaper;  /* collects the channels' ssh processes */
	double peer_timeout;        /* seconds a worker may stay unheard */
	double watch_timeout;       /* seconds a long poll is held; 0: a third of
				       the peer timeout, between 0.2 and 5 */
};

/* Loads libcurl first (smt_curl.h): its failure is logged and returned. */
int smt_peers_start(uv_loop_t *loop, const struct smt_peers_config *cfg,
		    const struct smt_peers_ops *ops, void *ctx, struct smt_peers **out);

/* Tell every worker the launch is on (POST /v1/launch), then watch them. */
void smt_peers_launched(struct smt_peers *ps);

/* POST RESULT (borrowed) to every worker that is not lost. */
void smt_peers_send_result(struct smt_peers *ps, json_t *result);

size_t smt_peers_count(const struct smt_peers *ps);
const char *smt_peers_host(const struct smt_peers *ps, size_t i);
int smt_peers_ready(const struct smt_peers *ps, size_t i);
size_t smt_peers_ready_count(const struct smt_peers *ps);
/* Hosts not ready yet, comma-separated, into BUF. */
void smt_peers_missing(const struct smt_peers *ps, char *buf, size_t len);

void smt_peers_close(struct smt_peers *ps);

#endif
