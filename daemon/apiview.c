/*
 * apiview.c - what the control API shows: /v1/status, health, readiness,
 * logs and metrics, all read from the daemon's state on the loop and
 * changing nothing.  What a request changes is apiapply.c's.
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
		int ready = d->role->host_ready ? d->role->host_ready(d, h) : 0;
		json_array_append_new(hosts,
				      json_pack("{s:s, s:b}", SMT_F_HOST, h, SMT_F_READY, ready));
	}
	return hosts;
}

static json_t *job_object(struct smt_daemon *d)
{
	json_t *job = json_object();
	struct smt_hostjob_status st = { 0 };
	pid_t pid = d->job ? smt_hostjob_pid(d->job) : -1;
	double start = d->job ? smt_hostjob_start_time(d->job) : 0;
	/* The leader shows every rank of the job, a worker its own. */
	int local_only = !d->role->decides;
	json_t *ranks = NULL;

	if (d->job) {
		smt_hostjob_status(d->job, &st);
		smt_hostjob_sample_cpu(d->job);
		ranks = smt_ranks_json(smt_hostjob_ranks(d->job), local_only, smt_daemon_now());
	}
	json_object_set_new(job, SMT_F_PID, pid > 0 ? json_integer(pid) : json_null());
	json_object_set_new(job, SMT_F_START_TIME, start > 0 ? json_real(start) : json_null());
	json_object_set_new(job, SMT_F_RANKS, ranks ? ranks : json_array());
	/* Job-wide: what the stall watchdog looks at (on a worker, its ranks). */
	int64_t progress = d->job ? smt_ranks_last_progress_ms(smt_hostjob_ranks(d->job)) : 0;
	json_object_set_new(job, SMT_F_SINCE_PROGRESS,
			    progress ? json_real(smt_daemon_now() - progress / 1000.0) :
				       json_null());
	json_object_set_new(job, SMT_F_EXIT_CODE,
			    st.exited && !st.exec_errno ? json_integer(st.code) : json_null());
	if (st.launched && !st.exited && st.signo) {
		const char *name = smt_signal_name(st.signo);
		json_object_set_new(job, SMT_F_SIGNAL,
				    name ? json_string(name) : json_integer(st.signo));
	} else {
		json_object_set_new(job, SMT_F_SIGNAL, json_null());
	}
	return job;
}

json_t *smt_view_status(void *ctx, int flags)
{
	struct smt_daemon *d = ctx;
	int brief = flags & SMT_STATUS_BRIEF;
	json_t *st = json_object();
	const char *digest = brief ? smt_plan_hosts_digest(d->plan) : NULL;

	json_object_set_new(st, SMT_F_ROLE, json_string(smt_role_name(d->role_kind)));
	json_object_set_new(st, SMT_F_STATE, json_string(smt_state_name(d->state)));
	json_object_set_new(st, SMT_F_CURRENT_HOST, json_string(smt_plan_current_host(d->plan)));
	json_object_set_new(st, SMT_F_LEADER, json_string(smt_plan_leader(d->plan)));
	if (digest)
		json_object_set_new(st, SMT_F_HOSTS_DIGEST, json_string(digest));
	else
		json_object_set_new(st, SMT_F_HOSTS, host_list(d));
	json_object_set_new(st, SMT_F_JOB, job_object(d));
	json_object_set_new(st, SMT_F_FAILURE, d->summary ? json_string(d->summary) : json_null());
	if (smt_state_is_final(d->state))
		json_object_set_new(st, SMT_F_EXIT_CODE, json_integer(d->exit_code));
	json_object_set_new(st, SMT_F_UPTIME, json_real(smt_daemon_now() - d->start_time));
	json_object_set_new(st, SMT_F_VERSION, json_string(PACKAGE_VERSION));
	json_object_set_new(st, SMT_F_SSHD_RESTARTS, json_integer(smt_sshd_restarts(d->sshd)));
	json_object_set_new(st, SMT_F_GENERATION, json_integer(d->generation));
	/* The attempt the job is at, and the restarts so far (smtd(8) Restarts). */
	json_object_set_new(st, SMT_F_ATTEMPT,
			    json_integer(d->restart ? smt_restart_attempt(d->restart) : 0));
	json_object_set_new(st, SMT_F_RESTARTS,
			    json_integer(d->restart ? smt_restart_attempt(d->restart) : 0));
	json_object_set_new(st, SMT_F_MAX_RESTARTS,
			    json_integer(d->restart ? smt_restart_max(d->restart) : 0));
	/* The pre-launch phase: this host's, and on the leader every host's. */
	json_object_set_new(st, SMT_F_PREFLIGHT, smt_daemon_preflight_list(d));
	/* Where the leader reaches this worker over TCP; the token only in
	 * an answer to the leader (over its ssh, at readiness). */
	if (d->channel.port > 0) {
		json_t *ch = json_pack("{s:s, s:i}", SMT_F_ADDRESS, d->channel.address, SMT_F_PORT,
				       d->channel.port);
		if (ch && (flags & SMT_STATUS_LEADER))
			json_object_set_new(ch, SMT_F_TOKEN, json_string(d->channel.token));
		json_object_set_new(st, SMT_F_CHANNEL, ch);
	}
	smt_stacks_status(d, st);
	if (d->role->status)
		d->role->status(d, st);
	return st;
}

/* Healthy while the daemon does its work, also after a job failure: only a
 * daemon that cannot supervise any more is unhealthy. */
int smt_view_healthy(void *ctx)
{
	struct smt_daemon *d = ctx;

	return !d->closing || smt_state_is_final(d->state);
}

int smt_view_ready(void *ctx)
{
	struct smt_daemon *d = ctx;

	return d->state == SMT_STATE_RUNNING || d->state == SMT_STATE_SUCCEEDED;
}

json_t *smt_view_logs(void *ctx, long tail, long rank)
{
	struct smt_daemon *d = ctx;
	json_t *lines = d->job ? smt_output_logs_json(smt_hostjob_output(d->job), (size_t)tail,
						      (int)rank)
			       : json_array();

	return lines ? json_pack("{s:o}", SMT_F_LINES, lines) : NULL;
}

struct metrics_walk {
	FILE *f;
	double now;
	const char *what;
};

static void rank_metric(void *arg, struct smt_rank *k)
{
	struct metrics_walk *w = arg;

	if (!strcmp(w->what, "last"))
		fprintf(w->f, "smtd_rank_seconds_since_last_line{rank=\"%d\",host=\"%s\"} %.3f\n",
			k->rank, k->host,
			k->last_line_ms ? w->now - k->last_line_ms / 1000.0 : -1.0);
	else
		fprintf(w->f, "smtd_rank_cpu_seconds{rank=\"%d\",host=\"%s\"} %.3f\n", k->rank,
			k->host, k->cpu_s);
}

static void count_rank(void *arg, struct smt_rank *k)
{
	(void)k;
	(*(int *)arg)++;
}

char *smt_view_metrics(void *ctx)
{
	struct smt_daemon *d = ctx;
	struct smt_output_stats os = { 0 };
	struct metrics_walk w;
	char *text = NULL;
	size_t len = 0, ready_peers = 0, npeers = 0;
	FILE *f = open_memstream(&text, &len);

	if (f == NULL)
		return NULL;
	if (d->job) {
		smt_output_stats(smt_hostjob_output(d->job), &os);
		smt_hostjob_sample_cpu(d->job);
	}
	if (d->role->peer_counts)
		d->role->peer_counts(d, &ready_peers, &npeers);
	fprintf(f, "# HELP smtd_state The daemon's state (1 for the current one).\n"
		   "# TYPE smtd_state gauge\n");
	for (int s = 0; s < SMT_STATE_COUNT; s++)
		fprintf(f, "smtd_state{state=\"%s\"} %d\n", smt_state_name(s),
			d->state == (enum smt_state)s);
	int known = 0;
	if (d->job)
		smt_ranks_each(smt_hostjob_ranks(d->job), count_rank, &known);
	fprintf(f, "# HELP smtd_ranks Ranks of the job this host knows of (the leader: every "
		   "rank; a worker: its own).\n"
		   "# TYPE smtd_ranks gauge\nsmtd_ranks %d\n", known);
	fprintf(f, "# HELP smtd_sshd_restarts_total Times sshd was restarted.\n"
		   "# TYPE smtd_sshd_restarts_total counter\nsmtd_sshd_restarts_total %u\n",
		smt_sshd_restarts(d->sshd));
	fprintf(f, "# HELP smtd_attempt The job's current attempt (0: the first).\n"
		   "# TYPE smtd_attempt gauge\nsmtd_attempt %d\n"
		   "# HELP smtd_restarts_total Times the job was restarted in place.\n"
		   "# TYPE smtd_restarts_total counter\nsmtd_restarts_total %d\n",
		d->restart ? smt_restart_attempt(d->restart) : 0,
		d->restart ? smt_restart_attempt(d->restart) : 0);
	fprintf(f, "# HELP smtd_lines_forwarded_total Rank output lines forwarded.\n"
		   "# TYPE smtd_lines_forwarded_total counter\nsmtd_lines_forwarded_total %llu\n",
		(unsigned long long)os.lines);
	fprintf(f, "# HELP smtd_bytes_forwarded_total Rank output bytes forwarded, "
		   "newlines not counted.\n"
		   "# TYPE smtd_bytes_forwarded_total counter\nsmtd_bytes_forwarded_total %llu\n",
		(unsigned long long)os.bytes);
	fprintf(f, "# HELP smtd_peers_ready Workers that are ready (leader).\n"
		   "# TYPE smtd_peers_ready gauge\nsmtd_peers_ready %zu\n", ready_peers);
	fprintf(f, "# HELP smtd_peers Workers of the job (leader).\n"
		   "# TYPE smtd_peers gauge\nsmtd_peers %zu\n", npeers);
	if (d->job) {
		w.f = f;
		w.now = smt_daemon_now();
		w.what = "last";
		fprintf(f, "# HELP smtd_rank_seconds_since_last_line Seconds since the rank's last "
			   "output line (-1: none yet).\n"
			   "# TYPE smtd_rank_seconds_since_last_line gauge\n");
		smt_ranks_each(smt_hostjob_ranks(d->job), rank_metric, &w);
		w.what = "cpu";
		fprintf(f, "# HELP smtd_rank_cpu_seconds CPU seconds the rank used (as last read "
			   "on its host).\n# TYPE smtd_rank_cpu_seconds gauge\n");
		smt_ranks_each(smt_hostjob_ranks(d->job), rank_metric, &w);
		int64_t progress = smt_ranks_last_progress_ms(smt_hostjob_ranks(d->job));
		fprintf(f, "# HELP smtd_job_seconds_since_progress Seconds since the last progress "
			   "line of any rank (-1: none yet).\n"
			   "# TYPE smtd_job_seconds_since_progress gauge\n"
			   "smtd_job_seconds_since_progress %.3f\n",
			progress ? w.now - progress / 1000.0 : -1.0);
	}
	fprintf(f, "# HELP smtd_uptime_seconds Seconds since smtd started.\n"
		   "# TYPE smtd_uptime_seconds gauge\nsmtd_uptime_seconds %.3f\n",
		smt_daemon_now() - d->start_time);
	fclose(f);
	return text;
}

json_int_t smt_view_generation(void *ctx)
{
	return ((struct smt_daemon *)ctx)->generation;
}
