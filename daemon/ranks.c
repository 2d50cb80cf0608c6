/* ranks.c - the rank table (ranks.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "errline.h"
#include "pystack.h"
#include "ranks.h"
#include "smt_proto.h"
#include "textesc.h"
#include "vec.h"

struct smt_ranks {
	struct smt_rank **v;  /* by rank number; NULL where none yet */
	size_t nslots;
	int count;            /* highest rank + 1 */
	int nlocal, local_alive;
	char **hosts;         /* interned host names; hosts[0] is this host */
	size_t nhosts, hostscap;
	char scratch[SMT_KEEP_LINE_MAX]; /* a long line's head, handed out */
};

static const char *intern(struct smt_ranks *t, const char *host)
{
	char *copy;

	for (size_t i = 0; i < t->nhosts; i++)
		if (!strcmp(t->hosts[i], host))
			return t->hosts[i];
	if (!(copy = strdup(host)))
		return NULL;
	if (SMT_VEC_RESERVE(t->hosts, t->hostscap, t->nhosts + 1) < 0) {
		free(copy);
		return NULL;
	}
	t->hosts[t->nhosts++] = copy;
	return copy;
}

int smt_ranks_new(const char *current_host, struct smt_ranks **out)
{
	struct smt_ranks *t = calloc(1, sizeof(*t));

	if (!t || !intern(t, current_host ? current_host : "unknown")) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static void rank_free(struct smt_rank *k)
{
	if (!k)
		return;
	free(k->error_line);
	for (char **p = k->tail; p && *p; p++)
		free(*p);
	free(k->tail);
	smt_ring_free(&k->stderr_tail);
	smt_pystack_free(k->dump);
	free(k->keep[0]);
	free(k->keep[1]);
	free(k);
}

void smt_ranks_free(struct smt_ranks *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nslots; i++)
		rank_free(t->v[i]);
	free(t->v);
	for (size_t i = 0; i < t->nhosts; i++)
		free(t->hosts[i]);
	free(t->hosts);
	free(t);
}

void smt_ranks_clear(struct smt_ranks *t)
{
	for (size_t i = 0; i < t->nslots; i++) {
		rank_free(t->v[i]);
		t->v[i] = NULL;
	}
	t->count = 0;
	t->nlocal = t->local_alive = 0;
}

struct smt_rank *smt_ranks_get(struct smt_ranks *t, int rank, const char *host, int create)
{
	struct smt_rank *k;

	if (rank < 0 || rank > SMT_RANK_MAX)
		return NULL;
	if ((size_t)rank < t->nslots && t->v[rank])
		return t->v[rank];
	if (!create)
		return NULL;
	/* New slots come NULL (vec.h). */
	if (SMT_VEC_RESERVE(t->v, t->nslots, (size_t)rank + 1) < 0)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->rank = rank;
	k->exit_code = -1;
	k->oom_base = -1;
	k->local = host == NULL;
	k->host = host ? intern(t, host) : t->hosts[0];
	if (!k->host) {
		free(k);
		return NULL;
	}
	smt_ring_init(&k->stderr_tail, SMT_RANK_TAIL_LINES, SMT_RANK_TAIL_BYTES);
	t->v[rank] = k;
	if (rank >= t->count)
		t->count = rank + 1;
	if (k->local) {
		t->nlocal++;
		t->local_alive++;
	}
	return k;
}

const struct smt_rank *smt_ranks_find(const struct smt_ranks *t, int rank)
{
	return rank >= 0 && (size_t)rank < t->nslots ? t->v[rank] : NULL;
}

int smt_ranks_count(const struct smt_ranks *t)
{
	return t->count;
}

int smt_ranks_local(const struct smt_ranks *t)
{
	return t->nlocal;
}

const char *smt_ranks_host(const struct smt_ranks *t, int rank)
{
	const struct smt_rank *k = smt_ranks_find(t, rank);

	return k ? k->host : NULL;
}

/* A dump of a fatal signal bounded like the stderr tail's bytes twice:
 * only what fits in the failure file's first 1024 bytes is ever shown. */
#define DUMP_MAX (2 * SMT_RANK_TAIL_BYTES)
#define FATAL_PREFIX "Fatal Python error: "

/* Python's faulthandler dump on a fatal signal starts with FATAL_PREFIX;
 * the recogniser exists only from then on, so a rank that never crashes
 * costs nothing. */
static void watch_dump(struct smt_rank *k, const char *p, size_t n)
{
	size_t fl = sizeof(FATAL_PREFIX) - 1;

	if (!k->dump && n >= fl && !memcmp(p, FATAL_PREFIX, fl) &&
	    smt_pystack_new(DUMP_MAX, &k->dump) < 0)
		k->dump = NULL;
	if (k->dump)
		smt_pystack_feed(k->dump, p, n);
	/* "Bus error" (a shell, a C runtime), "bus error" (PyTorch's
	 * DataLoader telling of its worker's SIGBUS). */
	if (!k->crash.bus_error && (memmem(p, n, "Bus error", 9) || memmem(p, n, "bus error", 9)))
		k->crash.bus_error = 1;
}

void smt_ranks_crash(const struct smt_rank *k, struct smt_crash *out)
{
	size_t len;
	const char *text = k->dump ? smt_pystack_text(k->dump, &len) : NULL;

	*out = k->crash;
	if (text)
		smt_crash_where(text, len, out->where);
}

char *smt_ranks_dump(const struct smt_rank *k)
{
	size_t len;
	const char *text = k->dump ? smt_pystack_text(k->dump, &len) : NULL;

	return text ? smt_crash_dump_order(text, len) : NULL;
}

/* Keep the head of a line that arrives in pieces. */
static void keep_piece(struct smt_rank *k, int s, const struct smt_record *r)
{
	size_t room;

	if (r->flags & SMT_REC_FIRST) {
		k->keep_len[s] = 0;
		k->keep_total[s] = 0;
	}
	k->keep_total[s] += r->n;
	if (!k->keep[s] && !(k->keep[s] = malloc(SMT_KEEP_LINE_MAX)))
		return;
	room = SMT_KEEP_LINE_MAX - k->keep_len[s];
	if (room > r->n)
		room = r->n;
	memcpy(k->keep[s] + k->keep_len[s], r->p, room);
	k->keep_len[s] += room;
}

void smt_ranks_account(struct smt_ranks *t, const struct smt_record *r, const char **kept,
		       size_t *kept_len, int *truncated)
{
	struct smt_rank *k = smt_ranks_get(t, r->rank, NULL, 0);
	int s = r->stream == SMT_STREAM_STDERR;
	const char *p = r->p;
	size_t n = r->n;
	uint64_t total = r->n;

	*kept = NULL;
	if (!k)
		return;
	k->bytes += r->n;
	if (!(r->flags & SMT_REC_LAST) || !(r->flags & SMT_REC_FIRST)) {
		keep_piece(k, s, r);
		if (!(r->flags & SMT_REC_LAST))
			return;
		/* The head leaves the rank's buffer, which is given back below. */
		n = k->keep_len[s];
		if (n)
			memcpy(t->scratch, k->keep[s], n);
		p = t->scratch;
		total = k->keep_total[s];
	}
	k->lines++;
	k->last_line_ms = r->ms;
	*truncated = total > SMT_KEEP_LINE_MAX;
	if (n > SMT_KEEP_LINE_MAX)
		n = SMT_KEEP_LINE_MAX;
	*kept = p;
	*kept_len = n;
	if (k->local && s) {
		smt_ring_push(&k->stderr_tail, p, n, *truncated, r->rank, s, r->ms);
		watch_dump(k, p, n);
		if (!k->error_line && smt_errline_score(p, n) >= 2) {
			size_t fl = n < SMT_FIRST_ERROR_MAX ? n : SMT_FIRST_ERROR_MAX;
			k->error_line = strndup(p, fl);
		}
	}
	/* Give back a long line's head buffer. */
	if (k->keep[s] && (r->flags & SMT_REC_LAST)) {
		free(k->keep[s]);
		k->keep[s] = NULL;
		k->keep_len[s] = 0;
	}
}

void smt_ranks_ended(struct smt_ranks *t, struct smt_rank *k, int wstatus, double when)
{
	if (k->state == SMT_RANK_EXITED)
		return;
	k->state = SMT_RANK_EXITED;
	k->end_time = when;
	if (wstatus >= 0 && WIFEXITED(wstatus))
		k->exit_code = WEXITSTATUS(wstatus);
	else if (wstatus >= 0 && WIFSIGNALED(wstatus))
		k->signo = WTERMSIG(wstatus);
	if (k->local && t->local_alive > 0)
		t->local_alive--;
}

static const char *state_name(enum smt_rank_state s)
{
	switch (s) {
	case SMT_RANK_STARTING: return "starting";
	case SMT_RANK_RUNNING: return "running";
	default: return "exited";
	}
}

static int parse_state(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "starting"))
		return SMT_RANK_STARTING;
	if (!strcmp(s, "running"))
		return SMT_RANK_RUNNING;
	if (!strcmp(s, "exited"))
		return SMT_RANK_EXITED;
	return -1;
}

static json_t *rank_json(const struct smt_rank *k, double now)
{
	json_t *o = json_object();
	const char *sig = k->signo ? smt_signal_name(k->signo) : NULL;

	if (!o)
		return NULL;
	json_object_set_new(o, SMT_F_RANK, json_integer(k->rank));
	json_object_set_new(o, SMT_F_HOST, json_string(k->host));
	json_object_set_new(o, SMT_F_PID, k->pid > 0 ? json_integer(k->pid) : json_null());
	json_object_set_new(o, SMT_F_START_TIME, k->start_time > 0 ? json_real(k->start_time)
								    : json_null());
	json_object_set_new(o, SMT_F_STATE, json_string(state_name(k->state)));
	json_object_set_new(o, SMT_F_EXIT_CODE, k->state == SMT_RANK_EXITED && k->exit_code >= 0
							? json_integer(k->exit_code) : json_null());
	if (k->signo)
		json_object_set_new(o, SMT_F_SIGNAL,
				    sig ? json_string(sig) : json_integer(k->signo));
	else
		json_object_set_new(o, SMT_F_SIGNAL, json_null());
	json_object_set_new(o, SMT_F_LINES, json_integer((json_int_t)k->lines));
	json_object_set_new(o, SMT_F_BYTES, json_integer((json_int_t)k->bytes));
	json_object_set_new(o, SMT_F_LAST_LINE, k->last_line_ms
			    ? json_real(now - (double)k->last_line_ms / 1000.0) : json_null());
	json_object_set_new(o, SMT_F_LAST_LINE_MS, json_integer(k->last_line_ms));
	json_object_set_new(o, SMT_F_LAST_PROGRESS_MS, json_integer(k->last_progress_ms));
	json_object_set_new(o, SMT_F_CPU, json_real(k->cpu_s));
	if (k->end_time > 0)
		json_object_set_new(o, SMT_F_END_TIME, json_real(k->end_time));
	if (k->signaled_ms)
		json_object_set_new(o, SMT_F_SIGNALED_MS, json_integer(k->signaled_ms));
	if (k->exec_errno)
		json_object_set_new(o, SMT_F_EXEC_ERRNO, json_integer(k->exec_errno));
	/* A rank that failed carries its own account of why, so that the
	 * leader names it without the worker's logs. */
	if (k->state == SMT_RANK_EXITED && (k->exit_code > 0 || k->signo)) {
		char line[SMT_ERRLINE_MAX + 1];

		smt_errline_pick(k->local ? &k->stderr_tail : NULL, k->tail, k->error_line,
				 !k->signo, line);
		json_object_set_new(o, SMT_F_ERROR_LINE, json_string(line));
	}
	if (k->state == SMT_RANK_EXITED && (k->signo || k->exit_code > 0)) {
		struct smt_crash c;

		smt_ranks_crash(k, &c);
		smt_crash_to_json(&c, o);
	}
	return o;
}

/* The last error lines of a local rank as a JSON array (bounded by the
 * ring's own bounds). */
static int tail_entry(void *arg, const struct smt_ring_entry *e, const char *line)
{
	size_t len;
	char *clean = smt_utf8_sanitize(line, e->len, &len, NULL);

	if (clean)
		json_array_append_new(arg, json_stringn(clean, len));
	free(clean);
	return 0;
}

/* A dump's lines into the array TAIL, as the stderr tail would be: a
 * crashed rank's tail is its dump (the failure file shows it). */
static void dump_lines(const char *dump, json_t *tail)
{
	size_t i = 0;

	for (const char *p = dump; *p && i < SMT_RANK_TAIL_LINES; i++) {
		size_t n = strcspn(p, "\n"), len;
		char *clean = smt_utf8_sanitize(p, n, &len, NULL);

		if (clean)
			json_array_append_new(tail, json_stringn(clean, len));
		free(clean);
		p += n + (p[n] == '\n');
	}
}

json_t *smt_ranks_json(const struct smt_ranks *t, int local_only, double now)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (int i = 0; i < t->count; i++) {
		const struct smt_rank *k = t->v[i];
		json_t *o;

		if (!k || (local_only && !k->local))
			continue;
		o = rank_json(k, now);
		if (o && k->state == SMT_RANK_EXITED && (k->exit_code > 0 || k->signo)) {
			json_t *tail = json_array();
			char *dump = k->local ? smt_ranks_dump(k) : NULL;
			if (dump)
				dump_lines(dump, tail);
			else if (k->local)
				smt_ring_foreach(&k->stderr_tail, 0, tail_entry, tail);
			else
				for (char **p = k->tail; p && *p; p++)
					json_array_append_new(tail, json_string(*p));
			free(dump);
			json_object_set_new(o, SMT_F_TAIL, tail);
		}
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static char **strings_of(json_t *arr)
{
	size_t n = json_array_size(arr), k = 0;
	char **v = calloc(n + 1, sizeof(*v));

	for (size_t i = 0; v && i < n; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (s && (v[k] = strdup(s)))
			k++;
	}
	return v;
}

int smt_ranks_merge_remote(struct smt_ranks *t, const char *host, json_t *ranks)
{
	size_t i;
	json_t *o;
	int taken = 0;

	json_array_foreach(ranks, i, o) {
		json_t *r = json_object_get(o, SMT_F_RANK);
		struct smt_rank *k;
		int st;

		if (!json_is_integer(r) || json_integer_value(r) < 0 ||
		    json_integer_value(r) > SMT_RANK_MAX)
			continue;
		k = smt_ranks_get(t, (int)json_integer_value(r), host, 1);
		/* A rank of this host is this host's to know. */
		if (!k || k->local)
			continue;
		if (strcmp(k->host, host) != 0) {
			const char *h = intern(t, host);
			if (h)
				k->host = h;
		}
		k->pid = (pid_t)json_integer_value(json_object_get(o, SMT_F_PID));
		k->start_time = json_number_value(json_object_get(o, SMT_F_START_TIME));
		st = parse_state(json_string_value(json_object_get(o, SMT_F_STATE)));
		if (st >= 0)
			k->state = (enum smt_rank_state)st;
		k->exit_code = json_is_integer(json_object_get(o, SMT_F_EXIT_CODE))
			? (int)json_integer_value(json_object_get(o, SMT_F_EXIT_CODE)) : -1;
		json_t *sig = json_object_get(o, SMT_F_SIGNAL);
		k->signo = json_is_string(sig) ? smt_signal_parse(json_string_value(sig))
			 : json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
		if (k->signo < 0)
			k->signo = 0;
		k->end_time = json_number_value(json_object_get(o, SMT_F_END_TIME));
		k->signaled_ms = json_integer_value(json_object_get(o, SMT_F_SIGNALED_MS));
		k->exec_errno = (int)json_integer_value(json_object_get(o, SMT_F_EXEC_ERRNO));
		k->cpu_s = json_number_value(json_object_get(o, SMT_F_CPU));
		/* Lines and bytes are the leader's own count of what it
		 * received; the times of the last lines are the worker's. */
		int64_t ll = json_integer_value(json_object_get(o, SMT_F_LAST_LINE_MS));
		int64_t lp = json_integer_value(json_object_get(o, SMT_F_LAST_PROGRESS_MS));
		if (ll > k->last_line_ms)
			k->last_line_ms = ll;
		if (lp > k->last_progress_ms)
			k->last_progress_ms = lp;
		const char *el = json_string_value(json_object_get(o, SMT_F_ERROR_LINE));
		if (el) {
			free(k->error_line);
			k->error_line = strdup(el);
		}
		smt_crash_from_json(&k->crash, o);
		json_t *tail = json_object_get(o, SMT_F_TAIL);
		if (json_is_array(tail)) {
			for (char **p = k->tail; p && *p; p++)
				free(*p);
			free(k->tail);
			k->tail = strings_of(tail);
		}
		taken++;
	}
	return taken;
}

const struct smt_rank *smt_ranks_first_failure(const struct smt_ranks *t, int local_only)
{
	const struct smt_rank *best = NULL;

	for (int i = 0; i < t->count; i++) {
		const struct smt_rank *k = t->v[i];
		int64_t end_ms;

		if (!k || (local_only && !k->local) || k->state != SMT_RANK_EXITED)
			continue;
		if (!(k->exit_code > 0 || k->signo || k->exec_errno))
			continue;
		end_ms = (int64_t)(k->end_time * 1000.0);
		/* A rank that ended after smtd told it to stop is a victim. */
		if (k->signaled_ms && end_ms >= k->signaled_ms)
			continue;
		if (!best || k->end_time < best->end_time)
			best = k;
	}
	return best;
}

void smt_ranks_each(struct smt_ranks *t, smt_ranks_cb cb, void *arg)
{
	for (int i = 0; i < t->count; i++)
		if (t->v[i])
			cb(arg, t->v[i]);
}

int64_t smt_ranks_last_progress_ms(const struct smt_ranks *t)
{
	int64_t last = 0;

	for (int r = 0; r < smt_ranks_count(t); r++) {
		const struct smt_rank *k = smt_ranks_find(t, r);

		if (k && k->last_progress_ms > last)
			last = k->last_progress_ms;
	}
	return last;
}
