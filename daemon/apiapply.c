/*
 * apiapply.c - what a control API request changes: smtctl kill, the POST
 * paths of the daemons' own protocol (each handed to the role that serves
 * it, through its entry of smt_role_ops), a restart, a stack collection,
 * and the leader's fetch of a worker's lines.  The table of every callback
 * the API may call is here; what the API only shows is apiview.c's.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "daemon_int.h"
#include "log.h"
#include "smt_proto.h"

/* smtctl kill: as if smtd had received the signal (smtd(8) SIGNALS). */
static int kill_job(void *ctx, int signo)
{
	struct smt_daemon *d = ctx;

	if (smt_state_is_final(d->state) || d->closing)
		return -ESRCH;
	smt_daemon_signal(d, signo, "control API: kill with");
	return 0;
}

/*
 * A POST of the daemons' protocol to the role's operation at OFFSET in
 * smt_role_ops: 404 where the role does not serve it (a worker's path on
 * the leader), 503 before the role has its state.
 */
static int to_role(struct smt_daemon *d, size_t offset, json_t *body, int peer_pid,
		   json_t **reply)
{
	smt_role_post_fn fn;

	memcpy(&fn, (const char *)d->role + offset, sizeof(fn));
	if (!fn)
		return 404;
	if (!d->role_state)
		return 503;
	return fn(d, body, peer_pid, reply);
}

static int post_launch(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	return to_role(ctx, offsetof(struct smt_role_ops, launch), body, peer_pid, reply);
}

static int post_orted(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	return to_role(ctx, offsetof(struct smt_role_ops, orted), body, peer_pid, reply);
}

static int post_end(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	return to_role(ctx, offsetof(struct smt_role_ops, end), body, peer_pid, reply);
}

static int post_result(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	return to_role(ctx, offsetof(struct smt_role_ops, result), body, peer_pid, reply);
}

static int post_attempt(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	return to_role(ctx, offsetof(struct smt_role_ops, attempt), body, peer_pid, reply);
}

/* smtctl restart (smtd(8) Restarts): the role restarts a running job. */
static int post_restart(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	struct smt_daemon *d = ctx;

	(void)body;
	(void)peer_pid;
	if (d->role->restart && d->role_state)
		return d->role->restart(d, reply);
	*reply = json_pack("{s:s}", SMT_F_ERROR, "no running job to restart");
	return 409;
}

/* smtctl stacks: a live collection starts (stall.c). */
static int post_stacks(void *ctx, json_t *body, int peer_pid, json_t **reply)
{
	(void)peer_pid;
	return smt_stacks_post(ctx, body, reply);
}

static json_t *stacks(void *ctx, long long id, int *status)
{
	return smt_stacks_get(ctx, id, status);
}

static int lines(void *ctx, uint64_t from, size_t max, int final, const char **body, size_t *len)
{
	struct smt_daemon *d = ctx;

	if (!d->role->lines)
		return -ENOENT;
	return d->role->lines(d, from, max, final, body, len);
}

static void leader_contact(void *ctx)
{
	struct smt_daemon *d = ctx;

	if (d->role->contact)
		d->role->contact(d);
}

static void leader_kept(void *ctx, int kept, uint64_t quiet_ms)
{
	struct smt_daemon *d = ctx;

	if (d->role->kept)
		d->role->kept(d, kept, quiet_ms);
}

const struct smt_api_ops smt_daemon_api_ops = {
	.status = smt_view_status,
	.healthy = smt_view_healthy,
	.ready = smt_view_ready,
	.logs = smt_view_logs,
	.metrics = smt_view_metrics,
	.generation = smt_view_generation,
	.kill = kill_job,
	.launch = post_launch,
	.orted = post_orted,
	.end = post_end,
	.result = post_result,
	.attempt = post_attempt,
	.restart = post_restart,
	.stacks_start = post_stacks,
	.stacks = stacks,
	.lines = lines,
	.leader_contact = leader_contact,
	.leader_kept = leader_kept,
};
