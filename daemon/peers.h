/*
 * peers.h - the leader's channels to its workers (smtd(8) Roles).
 *
 * For every worker the leader runs `ssh -o BatchMode=yes HOST smtctl
 * dial-stdio`, and speaks the worker's own HTTP API through it: curl
 * connects to a Unix socket of the leader, and each connection accepted
 * there becomes one ssh's stdin and stdout (docs/ARCHITECTURE.md, "The
 * channels between hosts"); curluv.h drives every transfer from the loop,
 * no thread per host.  Each worker has a host name of its own in the URL,
 * so that curl's connection cache never lends one worker's channel to
 * another.
 *
 * Readiness: all workers are probed at once (GET /v1/status); a probe that
 * fails is retried after 50 ms, doubling to at most 1 s.  A worker is ready
 * when it says it is a worker of the same job: same hosts, same leader.
 * A worker with another host list is a configuration error naming it.
 * A worker whose own pre-launch phase still runs (its "preflight" entry
 * in the status, prelaunch.h) is not ready yet: it is asked again with a
 * long poll, so that the end of its phase is known at once; once ready,
 * its status (with that phase's result, passed or failed) is its news.
 *
 * Supervision: once the job is launched each worker is watched with a long
 * poll (GET /v1/status?wait=GEN&timeout=MS) that the worker answers when
 * its state changes or after MS; the answer is the worker's news and the
 * heartbeat of the channel both ways.  When a channel fails it is re-opened
 * with the same back-off; a worker not heard from for the peer timeout is
 * lost.  At the end the result is POSTed to every worker.
 *
 * Output: after the launch the leader fetches each worker's rank output
 * (GET /v1/lines?from=N, held by the worker until it has some) and hands
 * every batch to ops->batch; the next fetch goes out once that batch was
 * taken, so a slow stdout on the leader slows the workers' ranks down.
 * The worker's end of output comes in its last batch (ops->final); the
 * leader then acknowledges it with one more fetch (ops->acked).
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
	/* A batch of worker I's output (BODY, LEN bytes, from HOST, taken
	 * over): DONE(ARG, rc, final) once it was taken.  0 or -errno. */
	int (*batch)(void *ctx, size_t i, const char *host, char *body, size_t len,
		     void (*done)(void *arg, int rc, json_t *final), void *arg);
	/* Worker I's end of output: the final state of its job (borrowed). */
	void (*final)(void *ctx, size_t i, json_t *final);
	/* Worker I knows its end of output arrived. */
	void (*acked)(void *ctx, size_t i);
	/* Every worker not lost confirmed the next attempt, its preflight for
	 * it passed (a worker that refused it or could not be reached is
	 * ops->lost). */
	void (*attempt_ready)(void *ctx);
	/* Worker I's preflight for the next attempt ended: RESULT (borrowed)
	 * is its pre-launch result (prelaunch.h), passed or failed; after a
	 * failure ops->attempt_ready never comes. */
	void (*attempt_preflight)(void *ctx, size_t i, json_t *result);
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
	int tcp;                    /* after readiness, a worker's TCP channel where
				       it offers one (smtd(8) Channels) */
	unsigned oneshots;          /* one-shot requests over TCP at once, the others
				       wait in order; 0: SMT_PEERS_ONESHOTS_DEFAULT */
};
#define SMT_PEERS_ONESHOTS_DEFAULT 64

/* Loads libcurl first (smt_curl.h): its failure is logged and returned. */
int smt_peers_start(uv_loop_t *loop, const struct smt_peers_config *cfg,
		    const struct smt_peers_ops *ops, void *ctx, struct smt_peers **out);

/* Tell every worker the launch is on (POST /v1/launch), then watch them. */
void smt_peers_launched(struct smt_peers *ps);

/*
 * The job's next attempt (smtd(8) Restarts): POST BODY (borrowed) to
 * SMT_PATH_ATTEMPT of every worker not lost; each takes it once its part
 * of the attempt is over, and starts its preflight for the next one
 * (smtd(8) Preflight).  Its answer carries that preflight's result ("preflight"); while
 * it says "running", the same request is sent again, after 20 ms doubling
 * to at most 320 ms, and the worker answers with how far it got.  Its
 * output goes on after its end (ops->final comes again).
 * ops->attempt_preflight for each result, ops->attempt_ready when every
 * worker's passed.  Then smt_peers_launched again: the long polls and the
 * channels stay as they are.  0 or -ENOMEM.
 */
int smt_peers_next_attempt(struct smt_peers *ps, json_t *body);

/* POST RESULT (borrowed) to every worker that is not lost. */
void smt_peers_send_result(struct smt_peers *ps, json_t *result);

/* POST BODY (borrowed) to PATH of every worker that is ready and not lost,
 * without waiting for the answers (a failure is logged).  Returns how many
 * were sent, or -ENOMEM. */
int smt_peers_post(struct smt_peers *ps, const char *path, json_t *body);

/* Tell every worker reached to end its part (POST /v1/end): MODE "stop"
 * (a stop with GRACE seconds), "end" (the job failed: SIGNO, SIGKILL after
 * GRACE) or "signal" (pass SIGNO on, the job goes on). */
void smt_peers_end(struct smt_peers *ps, const char *mode, int signo, double grace);

/* Worker I's output is complete (its end arrived), or will never come
 * (lost, another job, no launch). */
int smt_peers_output_done(const struct smt_peers *ps, size_t i);

size_t smt_peers_count(const struct smt_peers *ps);
const char *smt_peers_host(const struct smt_peers *ps, size_t i);
int smt_peers_ready(const struct smt_peers *ps, size_t i);
size_t smt_peers_ready_count(const struct smt_peers *ps);
/* Hosts not ready yet, comma-separated, into BUF. */
void smt_peers_missing(const struct smt_peers *ps, char *buf, size_t len);

void smt_peers_close(struct smt_peers *ps);

#endif
