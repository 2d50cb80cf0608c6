/*
 * stall.c - a stuck job noticed, its ranks' stacks collected on every host,
 * the odd rank named (smtd(8) Stalls), and the stacks asked for on demand (POST
 * /v1/stacks, smtctl stacks).
 *
 * The watchdog is the leader's: one timer, set to the moment the job would
 * be stalled if nothing happened (the last progress line of any rank plus
 * --stall-timeout; before the first line, the launch plus --start-timeout),
 * re-set when it fires and something did happen meanwhile.  Progress is
 * read from the rank table, which the leader keeps for every rank of the
 * job as the output arrives (output.c), so printing costs the watchdog
 * nothing.  A leader whose own stdout is not being read is not judged:
 * its ranks wait in write() because of it.
 *
 * A collection of stacks is job-wide on the leader - its own ranks through
 * hostjob.h, every worker's through POST /v1/stacks, whose result a worker
 * puts in its /v1/status, which the leader's long poll brings back - and
 * this host's alone on a worker.  It ends when every host answered or at
 * its deadline; ranks not heard of are named with the reason.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "log.h"
#include "peers.h"
#include "stackgroup.h"

/*
 * How long the hosts have to read their ranks' stacks.  A stalled job
 * ends anyway, and its Python ranks print their own stacks as they die
 * (faulthandler): milliseconds.  A live read goes through gdb and
 * CPython's extension, 0.5-1 s of CPU per Python rank with at most one
 * reader per CPU: 8 ranks on 8 CPUs, or 3 hosts of 2 ranks sharing 2
 * CPUs, take 3-5 s.
 */
#define ABORT_COLLECT_MS 2000
#define LIVE_COLLECT_MS (SMT_STACKS_TIMEOUT_S * 1000)
/*
 * A job-wide abort first stops every Python rank on every host, and aborts
 * them only this long after: the request must have reached every worker
 * by then (over channels already open: milliseconds; ASan at a load of 9
 * on 2 cores, tens).  Aborted at once, the leader's ranks died before a
 * worker had the request, and a worker's torchrun rank left its
 * all-reduce with "connection closed by peer" instead of showing where it
 * was stuck.
 */
#define FREEZE_MS 500
#define FREEZE_MAX_MS 5000
/* A leader asking for more or less is taken within these bounds. */
#define COLLECT_MIN_MS 500
#define COLLECT_MAX_MS (SMT_STACKS_TIMEOUT_MAX_S * 1000)
/* Their answers may take this much more to reach the leader. */
#define COLLECT_SLACK_MS 2000
/* A host's own reads always answer by their time limit; this is only in
 * case they do not. */
#define LOCAL_SLACK_MS 500
/* stdout not taking a write for this long pauses the watchdog. */
#define STDOUT_STUCK_MS 1000
/* The failure file's stacks, after its summary. */
#define DETAILS_MAX (32 * 1024)

struct smt_stall {
	struct smt_daemon *d;
	uv_timer_t watch;          /* the stall deadline (leader) */
	uv_timer_t deadline;       /* a collection's end */
	double t0;                 /* the launch */
	int stalled;
	int paused_logged;
	/* The collection in progress or last finished. */
	int next_id;
	int id;
	enum smt_collect_mode mode;
	int collecting;
	size_t pending;
	json_t *ranks;             /* what the hosts sent, merged */
	json_t *answered;          /* the workers heard from: {host: true} */
	/* Every rank's last progress line (ms) as the collection began: an
	 * aborted rank's dump is a line too. */
	int64_t *progress_ms;
	int nprogress;
	double began;
	json_t *result;            /* the finished one, for GET /v1/stacks */
	char *why;                 /* ABORT: why the job is stalled */
	json_t *local;             /* a worker's own result, shown in its status */
	int handles;
};

/* The host that decides the job (smt_role_ops.decides): it watches, names
 * every rank and ends the job; a worker reads its own ranks for it. */
static int decides(const struct smt_daemon *d)
{
	return d->role->decides;
}

/* ---- finishing a collection ---- */

/* Seconds without progress of RANK when the collection began; DFLT when
 * this host's table does not know the rank. */
static double quiet_of(const struct smt_stall *s, int rank, double dflt)
{
	if (rank < 0 || rank >= s->nprogress)
		return dflt;
	return s->progress_ms[rank] ? s->began - s->progress_ms[rank] / 1000.0 : -1;
}

static void snapshot(struct smt_stall *s)
{
	const struct smt_ranks *t = smt_hostjob_ranks(s->d->job);
	int n = smt_ranks_count(t);

	free(s->progress_ms);
	s->nprogress = 0;
	s->began = smt_daemon_now();
	s->progress_ms = n > 0 ? calloc((size_t)n, sizeof(*s->progress_ms)) : NULL;
	if (!s->progress_ms)
		return;
	s->nprogress = n;
	for (int r = 0; r < n; r++) {
		const struct smt_rank *k = smt_ranks_find(t, r);
		s->progress_ms[r] = k ? k->last_progress_ms : 0;
	}
}

static void finish(struct smt_stall *s)
{
	struct smt_daemon *d = s->d;
	const struct smt_ranks *t = smt_hostjob_ranks(d->job);
	size_t n = 0, cap = json_array_size(s->ranks) + (size_t)smt_ranks_count(t) + 1;
	struct smt_rank_stack *v = calloc(cap, sizeof(*v));
	struct smt_stackgroup *g = NULL;
	char summary[SMT_STACKGROUP_SUMMARY_MAX + 1], *details = NULL;
	size_t i;
	json_t *o;

	uv_timer_stop(&s->deadline);
	s->collecting = 0;
	if (!decides(d)) {
		/* A worker shows its ranks' stacks in its status: that is how
		 * they reach the leader - also when its reads ran out of time,
		 * so that the leader hears of every rank and why. */
		json_decref(s->local);
		s->local = json_pack("{s:i, s:O}", SMT_F_ID, s->id, SMT_F_RANKS, s->ranks);
	}
	if (!v)
		return;
	json_array_foreach(s->ranks, i, o) {
		v[n].rank = (int)json_integer_value(json_object_get(o, SMT_F_RANK));
		v[n].host = json_string_value(json_object_get(o, SMT_F_HOST));
		v[n].stack = json_string_value(json_object_get(o, SMT_F_STACK));
		v[n].reason = json_string_value(json_object_get(o, SMT_F_REASON));
		v[n].quiet_s = json_is_number(json_object_get(o, SMT_F_QUIET))
			? json_number_value(json_object_get(o, SMT_F_QUIET)) : -1;
		n++;
	}
	/*
	 * Which rank went quiet first is judged on this host's rank table as
	 * the collection began, one instant for all: the hosts measured when
	 * each got the request, which puts a worker's ranks behind by the
	 * request's way there.  And it is progress that counts: a rank that
	 * only writes heartbeats has gone quiet as far as the job is concerned.
	 */
	for (size_t j = 0; j < n; j++)
		v[j].quiet_s = quiet_of(s, v[j].rank, v[j].quiet_s);
	/* Every rank of the job is named, also one whose host did not answer. */
	for (int r = 0; decides(d) && r < smt_ranks_count(t); r++) {
		const struct smt_rank *k = smt_ranks_find(t, r);
		int have = 0;
		for (size_t j = 0; j < n && !have; j++)
			have = v[j].rank == r;
		if (!k || have)
			continue;
		v[n].rank = r;
		v[n].host = k->host;
		v[n].reason = k->state == SMT_RANK_EXITED ? "the rank has ended"
							  : "its host did not answer in time";
		v[n].quiet_s = quiet_of(s, r, -1);
		n++;
	}
	if (smt_stackgroup_new(v, n, &g) == 0) {
		double stall = s->mode == SMT_COLLECT_ABORT && d->opts->stall_timeout > 0 &&
			       !strstr(s->why ? s->why : "", "start-timeout")
			       ? d->opts->stall_timeout : -1;
		smt_stackgroup_summary(g, stall, summary, sizeof(summary));
		smt_stackgroup_details(g, DETAILS_MAX, &details);
		json_decref(s->result);
		s->result = smt_stackgroup_json(g);
		if (s->result) {
			json_object_set_new(s->result, SMT_F_ID, json_integer(s->id));
			json_object_set_new(s->result, SMT_F_SUMMARY, json_string(summary));
			json_object_set_new(s->result, SMT_F_TEXT,
					    json_string(details ? details : ""));
		}
	}
	free(v);
	smt_info("stacks of %zu rank%s collected (collection %d)", n, n == 1 ? "" : "s", s->id);
	if (s->mode == SMT_COLLECT_ABORT && decides(d)) {
		char *text = NULL;
		/* Every stack also goes to the leader's log, a line at a time. */
		for (char *line = details; line && *line;) {
			char *nl = strchr(line, '\n');
			smt_warn("stacks: %.*s", nl ? (int)(nl - line) : (int)strlen(line), line);
			line = nl ? nl + 1 : NULL;
		}
		const char *rest = details ? details : "";
		const char *nl = *rest && rest[strlen(rest) - 1] != '\n' ? "\n" : "";

		if (strstr(s->why, "start-timeout") && strncmp(summary, "Stalled: ", 9) != 0) {
			if (asprintf(&text, "Stalled: %s; %s\n%s%s", s->why, summary, rest, nl) < 0)
				text = NULL;
		} else if (asprintf(&text, "%s\n%s%s", summary, rest, nl) < 0) {
			text = NULL;
		}
		if (d->role->stalled)
			d->role->stalled(d, text);
		free(text);
	}
	free(details);
	smt_stackgroup_free(g);
	smt_daemon_changed(d);
}

int smt_stall_deciding(struct smt_daemon *d)
{
	struct smt_stall *s = d->stall;

	return s && s->stalled && s->collecting && s->mode == SMT_COLLECT_ABORT;
}

static void add_ranks(struct smt_stall *s, json_t *ranks)
{
	size_t i;
	json_t *o;

	json_array_foreach(ranks, i, o)
		if (json_is_object(o))
			json_array_append(s->ranks, o);
}

static void answered(struct smt_stall *s)
{
	if (s->collecting && s->pending > 0 && --s->pending == 0)
		finish(s);
}

static void on_local(void *arg, json_t *ranks)
{
	struct smt_stall *s = arg;

	if (!s->collecting)
		return;
	add_ranks(s, ranks);
	answered(s);
}

static void on_deadline(uv_timer_t *t)
{
	struct smt_stall *s = t->data;

	if (s->collecting) {
		smt_warn("not every host sent its ranks' stacks in time");
		finish(s);
	}
}

/* Start collection ID in MODE on this host, its reads limited to TIMEOUT_MS,
 * and, on the leader, on every worker.  0 or -errno. */
static int collect(struct smt_stall *s, int id, enum smt_collect_mode mode, unsigned timeout_ms,
		   unsigned freeze_ms)
{
	struct smt_daemon *d = s->d;
	struct smt_peers *peers = d->role->peers ? d->role->peers(d) : NULL;
	int rc;

	if (s->collecting)
		return -EBUSY;
	json_decref(s->ranks);
	s->ranks = json_array();
	json_decref(s->answered);
	s->answered = json_object();
	snapshot(s);
	s->id = id;
	s->mode = mode;
	s->collecting = 1;
	s->pending = 2;  /* this host, and the end of this call */
	if (peers) {
		json_t *msg;
		int n;

		/* Every worker freezes too: the last to get the request must
		 * not find its ranks woken by an earlier host's aborts. */
		if (mode == SMT_COLLECT_ABORT && smt_peers_count(peers) > 0)
			freeze_ms = FREEZE_MS;
		msg = json_pack("{s:i, s:s, s:i, s:i}", SMT_F_ID, id, SMT_F_MODE,
				mode == SMT_COLLECT_ABORT ? "abort" : "live", SMT_F_TIMEOUT_MS,
				(int)timeout_ms, SMT_F_FREEZE_MS, (int)freeze_ms);
		n = msg ? smt_peers_post(peers, SMT_PATH_STACKS, msg) : 0;
		json_decref(msg);
		if (n > 0)
			s->pending += (size_t)n;
	}
	uv_timer_start(&s->deadline, on_deadline,
		       freeze_ms + timeout_ms + (peers ? COLLECT_SLACK_MS : LOCAL_SLACK_MS), 0);
	rc = smt_hostjob_collect(d->job, mode, timeout_ms, freeze_ms,
				 mode == SMT_COLLECT_ABORT ? smt_plan_root(d->plan) : NULL,
				 on_local, s);
	if (rc < 0) {
		if (rc != -ESRCH)
			smt_warn("cannot read this host's stacks: %s", strerror(-rc));
		answered(s);
	}
	answered(s);
	return 0;
}

/* ---- the watchdog (leader) ---- */

static void on_watch(uv_timer_t *t);

static void arm(struct smt_stall *s, double at)
{
	double delay = at - smt_daemon_now();

	uv_timer_start(&s->watch, on_watch, delay > 0 ? (uint64_t)(delay * 1000) + 1 : 0, 0);
}

static void stalled(struct smt_stall *s, const char *why)
{
	s->stalled = 1;
	free(s->why);
	s->why = strdup(why);
	smt_error("the job is stalled: %s; reading every rank's stack", why);
	if (collect(s, ++s->next_id, SMT_COLLECT_ABORT, ABORT_COLLECT_MS, 0) < 0) {
		/* A live collection is running: this one is more important. */
		smt_hostjob_collect_cancel(s->d->job);
		s->collecting = 0;
		collect(s, s->id, SMT_COLLECT_ABORT, ABORT_COLLECT_MS, 0);
	}
}

static void on_watch(uv_timer_t *t)
{
	struct smt_stall *s = t->data;
	struct smt_daemon *d = s->d;
	const struct smt_ranks *ranks = smt_hostjob_ranks(d->job);
	double now = smt_daemon_now(), stall = d->opts->stall_timeout,
	       start = d->opts->start_timeout;
	int64_t last_line = 0, last_progress = 0;
	char why[160];

	if (s->stalled || smt_state_is_final(d->state) || d->state == SMT_STATE_FINISHING)
		return;
	for (int r = 0; r < smt_ranks_count(ranks); r++) {
		const struct smt_rank *k = smt_ranks_find(ranks, r);
		if (!k)
			continue;
		if (k->last_line_ms > last_line)
			last_line = k->last_line_ms;
		if (k->last_progress_ms > last_progress)
			last_progress = k->last_progress_ms;
	}
	if (!last_line) {
		if (start > 0 && now - s->t0 >= start) {
			snprintf(why, sizeof(why), "no rank wrote a line within %.0f s "
				 "(--start-timeout)", start);
			stalled(s, why);
		} else if (start > 0) {
			arm(s, s->t0 + start);
		} else if (stall > 0) {
			arm(s, now + stall);
		}
		return;
	}
	if (stall <= 0)
		return;
	double base = last_progress ? last_progress / 1000.0 : s->t0;
	if (now - base < stall) {
		arm(s, base + stall);
		return;
	}
	if (smt_output_stdout_blocked_ms(smt_hostjob_output(d->job)) >= STDOUT_STUCK_MS) {
		if (!s->paused_logged++)
			smt_warn("no progress for %.0f s, but smtd's stdout is not being read: the "
				 "ranks wait for it; the stall watchdog waits too", now - base);
		arm(s, now + stall);
		return;
	}
	snprintf(why, sizeof(why), "no progress for %.0f s (--stall-timeout %.0f)", now - base,
		 stall);
	stalled(s, why);
}

void smt_stall_launched(struct smt_daemon *d)
{
	struct smt_stall *s = d->stall;
	double stall = d->opts->stall_timeout, start = d->opts->start_timeout;

	if (!s || !decides(d) || (stall <= 0 && start <= 0))
		return;
	s->t0 = smt_daemon_now();
	arm(s, s->t0 + (start > 0 ? start : stall));
	if (stall > 0 && start > 0)
		smt_info("stall watchdog: %g s without progress, the first line within %g s", stall,
			 start);
	else if (stall > 0)
		smt_info("stall watchdog: %g s without progress", stall);
	else
		smt_info("stall watchdog: the first line within %g s", start);
}

/* The next attempt is watched afresh from its launch (smtd(8) Restarts). */
void smt_stall_next_attempt(struct smt_daemon *d)
{
	struct smt_stall *s = d->stall;

	if (!s)
		return;
	uv_timer_stop(&s->watch);
	s->stalled = 0;
	s->paused_logged = 0;
}

/* ---- requests ---- */

int smt_stacks_post(struct smt_daemon *d, json_t *body, json_t **reply)
{
	struct smt_stall *s = d->stall;
	const char *mode = json_string_value(json_object_get(body, SMT_F_MODE));
	json_t *jid = json_object_get(body, SMT_F_ID);
	json_t *jt = json_object_get(body, SMT_F_TIMEOUT_MS);
	json_t *jf = json_object_get(body, SMT_F_FREEZE_MS);
	unsigned freeze_ms = 0;
	int ending = mode && strcmp(mode, "abort") == 0 && !decides(d);
	unsigned timeout_ms = ending ? ABORT_COLLECT_MS : LIVE_COLLECT_MS;
	int id, rc;

	if (!s || !d->job || !smt_hostjob_running(d->job)) {
		*reply = json_pack("{s:s}", SMT_F_ERROR, "no job runs here");
		return 409;
	}
	/* The leader numbers its collections and gives their time limit; a
	 * worker takes both.  A live read's limit may come from the client
	 * (smtctl stacks --timeout), on a machine whose CPUs are busy. */
	id = json_is_integer(jid) ? (int)json_integer_value(jid) : ++s->next_id;
	if (id > s->next_id)
		s->next_id = id;
	if (json_is_integer(jt)) {
		json_int_t v = json_integer_value(jt);
		timeout_ms = v < COLLECT_MIN_MS ? COLLECT_MIN_MS
			     : v > COLLECT_MAX_MS ? COLLECT_MAX_MS : (unsigned)v;
	}
	if (ending && json_is_integer(jf)) {
		json_int_t v = json_integer_value(jf);
		freeze_ms = v < 0 ? 0 : v > FREEZE_MAX_MS ? FREEZE_MAX_MS : (unsigned)v;
	}
	if (ending && s->collecting && s->mode == SMT_COLLECT_LIVE) {
		/* The job stalled while its stacks were being read live: the
		 * stall's collection, which ends it, takes over. */
		smt_hostjob_collect_cancel(d->job);
		uv_timer_stop(&s->deadline);
		s->collecting = 0;
	}
	rc = collect(s, id, ending ? SMT_COLLECT_ABORT : SMT_COLLECT_LIVE, timeout_ms, freeze_ms);
	if (rc == -EBUSY) {
		*reply = json_pack("{s:s, s:i}", SMT_F_ERROR, "stacks are being collected already",
				   SMT_F_ID, s->id);
		return 409;
	}
	*reply = json_pack("{s:i}", SMT_F_ID, id);
	return 202;
}

void smt_stacks_worker_news(struct smt_daemon *d, json_t *status)
{
	struct smt_stall *s = d->stall;
	json_t *st = json_object_get(status, SMT_F_STACKS);

	if (!s || !s->collecting || !json_is_object(st) ||
	    json_integer_value(json_object_get(st, SMT_F_ID)) != s->id ||
	    !json_is_array(json_object_get(st, SMT_F_RANKS)))
		return;
	/* The same answer comes with every status until the next collection:
	 * take a host's once, also one with no rank to show. */
	const char *host = json_string_value(json_object_get(status, SMT_F_CURRENT_HOST));
	if (!host || json_object_get(s->answered, host))
		return;
	json_object_set_new(s->answered, host, json_true());
	add_ranks(s, json_object_get(st, SMT_F_RANKS));
	answered(s);
}

json_t *smt_stacks_get(struct smt_daemon *d, long long id, int *status)
{
	struct smt_stall *s = d->stall;

	if (!s || (!s->result && !s->collecting) || (id >= 0 && id != s->id)) {
		*status = 404;
		return NULL;
	}
	if (s->collecting) {
		*status = 409;
		return NULL;
	}
	*status = 200;
	return json_incref(s->result);
}

void smt_stacks_status(struct smt_daemon *d, json_t *st)
{
	struct smt_stall *s = d->stall;
	json_t *o;

	if (!s || !s->id)
		return;
	o = json_pack("{s:i, s:s}", SMT_F_ID, s->id, SMT_F_STATE,
		      s->collecting ? "collecting" : "done");
	if (o && s->local && !s->collecting &&
	    json_integer_value(json_object_get(s->local, SMT_F_ID)) == s->id)
		json_object_set(o, SMT_F_RANKS, json_object_get(s->local, SMT_F_RANKS));
	if (o && s->result && !s->collecting)
		json_object_set(o, SMT_F_SUMMARY, json_object_get(s->result, SMT_F_SUMMARY));
	json_object_set_new(st, SMT_F_STACKS, o);
}

/* ---- the module ---- */

int smt_stall_new(struct smt_daemon *d)
{
	struct smt_stall *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->d = d;
	uv_timer_init(&d->loop, &s->watch);
	uv_timer_init(&d->loop, &s->deadline);
	s->watch.data = s->deadline.data = s;
	d->stall = s;
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct smt_stall *s = h->data;

	if (--s->handles > 0)
		return;
	json_decref(s->ranks);
	json_decref(s->answered);
	free(s->progress_ms);
	json_decref(s->result);
	json_decref(s->local);
	free(s->why);
	free(s);
}

void smt_stall_close(struct smt_daemon *d)
{
	struct smt_stall *s = d->stall;

	if (!s)
		return;
	d->stall = NULL;
	s->collecting = 0;
	s->handles = 2;
	uv_close((uv_handle_t *)&s->watch, on_closed);
	uv_close((uv_handle_t *)&s->deadline, on_closed);
}
