/*
 * status.c - what the control API shows: /v1/status, health, readiness,
 * logs and metrics, all read from the daemon's state on the loop, and the
 * POST paths of the daemons' own protocol routed to the role.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "log.h"
#include "smt_proto.h"

static json_t *host_list(struct smt_daemon *d)
{
	json_t *hosts = json_array();
	size_t n = smt_plan_host_count(d->plan);

	for (size_t i = 0; i < n; i++) {
		const char *h = smt_plan_host(d->plan, i);
		int ready;
		if (strcmp(h, smt_plan_current_host(d->plan)) == 0)
			ready = d->state != SMT_STATE_STARTING;
		else if (d->peers) {
			ready = 0;
			for (size_t k = 0; k < smt_peers_count(d->peers); k++)
				if (strcmp(smt_peers_host(d->peers, k), h) == 0)
					ready = smt_peers_ready(d->peers, k);
		} else if (d->role == SMT_ROLE_WORKER && strcmp(h, smt_plan_leader(d->plan)) == 0)
			ready = d->leader_seen;
		else
			ready = 0;
		json_array_append_new(hosts, json_pack("{s:s, s:b}", SMT_F_HOST, h, SMT_F_READY, ready));
	}
	return hosts;
}

static json_t *job_object(struct smt_daemon *d)
{
	json_t *job = json_object();
	pid_t pid = d->job ? smt_job_pid(d->job) : d->orted_pid > 0 ? d->orted_pid : -1;

	json_object_set_new(job, SMT_F_PID, pid > 0 ? json_integer(pid) : json_null());
	json_object_set_new(job, SMT_F_START_TIME,
			    d->launch_time > 0 ? json_real(d->launch_time) : json_null());
	json_t *ranks = d->output ? smt_output_ranks_json(d->output) : NULL;
	json_object_set_new(job, SMT_F_RANKS, ranks ? ranks : json_array());
	if (d->job_ended && d->job_status.exited)
		json_object_set_new(job, SMT_F_EXIT_CODE, json_integer(d->job_status.code));
	else
		json_object_set_new(job, SMT_F_EXIT_CODE, json_null());
	if (d->job_ended && !d->job_status.exited && d->job_status.signo) {
		const char *name = smt_signal_name(d->job_status.signo);
		json_object_set_new(job, SMT_F_SIGNAL, name ? json_string(name) : json_integer(d->job_status.signo));
	} else {
		json_object_set_new(job, SMT_F_SIGNAL, json_null());
	}
	return job;
}

static json_t *status(void *ctx)
{
	struct smt_daemon *d = ctx;
	json_t *st = json_object();

	json_object_set_new(st, SMT_F_ROLE, json_string(smt_role_name(d->role)));
	json_object_set_new(st, SMT_F_STATE, json_string(smt_state_name(d->state)));
	json_object_set_new(st, SMT_F_CURRENT_HOST, json_string(smt_plan_current_host(d->plan)));
	json_object_set_new(st, SMT_F_LEADER, json_string(smt_plan_leader(d->plan)));
	json_object_set_new(st, SMT_F_HOSTS, host_list(d));
	json_object_set_new(st, SMT_F_JOB, job_object(d));
	json_object_set_new(st, SMT_F_FAILURE, d->summary ? json_string(d->summary) : json_null());
	if (d->state == SMT_STATE_SUCCEEDED || d->state == SMT_STATE_FAILED ||
	    d->state == SMT_STATE_STOPPED)
		json_object_set_new(st, "exit_code", json_integer(d->exit_code));
	json_object_set_new(st, SMT_F_UPTIME, json_real(smt_daemon_now() - d->start_time));
	json_object_set_new(st, SMT_F_VERSION, json_string(PACKAGE_VERSION));
	json_object_set_new(st, SMT_F_SSHD_RESTARTS, json_integer(smt_sshd_restarts(d->sshd)));
	json_object_set_new(st, SMT_F_GENERATION, json_integer(d->generation));
	return st;
}

/* Healthy while the daemon does its work, also after a job failure: only a
 * daemon that cannot supervise any more (sshd it must run is gone for good)
 * is unhealthy. */
static int healthy(void *ctx)
{
	struct smt_daemon *d = ctx;

	return !d->closing || smt_state_is_final(d->state);
}

static int ready(void *ctx)
{
	struct smt_daemon *d = ctx;

	return d->state == SMT_STATE_RUNNING || d->state == SMT_STATE_SUCCEEDED;
}

static int kill_job(void *ctx, int signo)
{
	struct smt_daemon *d = ctx;

	if (smt_state_is_final(d->state))
		return -ESRCH;
	smt_info("control API: kill with SIG%s", smt_signal_name(signo) ? smt_signal_name(signo) : "?");
	if (d->role == SMT_ROLE_WORKER)
		smt_worker_signal(d, signo);
	else
		smt_leader_signal(d, signo);
	return 0;
}

static json_t *logs(void *ctx, long tail, long rank)
{
	struct smt_daemon *d = ctx;
	json_t *lines = d->output ? smt_output_logs_json(d->output, (size_t)tail, (int)rank)
				  : json_array();

	return lines ? json_pack("{s:o}", SMT_F_LINES, lines) : NULL;
}

static char *metrics(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct smt_output_stats os = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	size_t ready_peers = smt_peers_ready_count(d->peers), npeers = smt_peers_count(d->peers);

	if (f == NULL)
		return NULL;
	if (d->output)
		smt_output_stats(d->output, &os);

	fprintf(f, "# HELP smtd_state The daemon's state (1 for the current one).\n"
		   "# TYPE smtd_state gauge\n");
	for (int s = 0; s < SMT_STATE_COUNT; s++)
		fprintf(f, "smtd_state{state=\"%s\"} %d\n", smt_state_name(s), d->state == (enum smt_state)s);
	fprintf(f, "# HELP smtd_ranks Ranks of the job known from mpirun's map.\n"
		   "# TYPE smtd_ranks gauge\nsmtd_ranks %d\n",
		d->output ? smt_output_rank_count(d->output) : 0);
	fprintf(f, "# HELP smtd_sshd_restarts_total Times sshd was restarted.\n"
		   "# TYPE smtd_sshd_restarts_total counter\nsmtd_sshd_restarts_total %u\n",
		smt_sshd_restarts(d->sshd));
	fprintf(f, "# HELP smtd_lines_forwarded_total Rank output lines forwarded.\n"
		   "# TYPE smtd_lines_forwarded_total counter\nsmtd_lines_forwarded_total %llu\n",
		(unsigned long long)os.lines);
	fprintf(f, "# HELP smtd_bytes_forwarded_total Rank output bytes forwarded.\n"
		   "# TYPE smtd_bytes_forwarded_total counter\nsmtd_bytes_forwarded_total %llu\n",
		(unsigned long long)os.bytes);
	fprintf(f, "# HELP smtd_peers_ready Workers that are ready (leader).\n"
		   "# TYPE smtd_peers_ready gauge\nsmtd_peers_ready %zu\n", ready_peers);
	fprintf(f, "# HELP smtd_peers Workers of the job (leader).\n"
		   "# TYPE smtd_peers gauge\nsmtd_peers %zu\n", npeers);
	fprintf(f, "# HELP smtd_uptime_seconds Seconds since smtd started.\n"
		   "# TYPE smtd_uptime_seconds gauge\nsmtd_uptime_seconds %.3f\n",
		smt_daemon_now() - d->start_time);
	fclose(f);
	return text;
}

static int post(void *ctx, const char *path, json_t *body, int peer_uid, json_t **reply)
{
	struct smt_daemon *d = ctx;

	(void)peer_uid;
	if (d->role == SMT_ROLE_WORKER)
		return smt_worker_post(d, path, body, reply);
	return 404;
}

static json_int_t generation(void *ctx)
{
	return ((struct smt_daemon *)ctx)->generation;
}

static void leader_contact(void *ctx)
{
	struct smt_daemon *d = ctx;

	if (d->role == SMT_ROLE_WORKER)
		smt_worker_contact(d);
}

const struct smt_api_ops smt_status_ops = {
	.status = status,
	.healthy = healthy,
	.ready = ready,
	.kill = kill_job,
	.logs = logs,
	.metrics = metrics,
	.post = post,
	.generation = generation,
	.leader_contact = leader_contact,
};
