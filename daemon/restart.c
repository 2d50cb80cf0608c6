/* restart.c - the restart policy and the attempts' records (restart.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "log.h"
#include "restart.h"
#include "safefile.h"
#include "smt_proto.h"
#include "vec.h"

/* An earlier attempt's line in the failure file keeps at most this much,
 * so that a few of them and the last one's fit the bytes SageMaker shows. */
#define EARLIER_LINE_MAX 240
/* The last attempt's summary keeps at most this much of them. */
#define LAST_LINE_MAX 500

struct record {
	double start, end;     /* epoch seconds; 0: not yet */
	char *summary;         /* its failure's first line; NULL: none (yet) */
	char *stacks;          /* "stacks/attempt-K" when its stacks were read */
};

struct smt_restart {
	long max;
	double delay;
	int attempt;           /* the current one */
	struct record *v;      /* v[0..attempt] */
	size_t cap;
};

static int reserve(struct smt_restart *r, int attempt)
{
	return SMT_VEC_RESERVE(r->v, r->cap, (size_t)attempt + 1);
}

int smt_restart_new(long max, double delay, struct smt_restart **out)
{
	struct smt_restart *r = calloc(1, sizeof(*r));

	if (!r || reserve(r, 0) < 0) {
		free(r);
		return -ENOMEM;
	}
	r->max = max < 0 ? 0 : max;
	r->delay = delay < 0 ? 0 : delay;
	*out = r;
	return 0;
}

void smt_restart_free(struct smt_restart *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->cap; i++) {
		free(r->v[i].summary);
		free(r->v[i].stacks);
	}
	free(r->v);
	free(r);
}

int smt_restart_kind(enum smt_failure_kind kind)
{
	return kind == SMT_FAIL_RANK_FAILED || kind == SMT_FAIL_OOM || kind == SMT_FAIL_STALLED;
}

int smt_restart_due(const struct smt_restart *r, enum smt_failure_kind kind)
{
	return smt_restart_kind(kind) && r->attempt < r->max;
}

int smt_restart_attempt(const struct smt_restart *r) { return r->attempt; }
long smt_restart_max(const struct smt_restart *r) { return r->max; }
double smt_restart_delay(const struct smt_restart *r) { return r->delay; }

int smt_restart_marked(const struct smt_restart *r)
{
	return r->max > 0 || r->attempt > 0;
}

void smt_restart_started(struct smt_restart *r, double when)
{
	r->v[r->attempt].start = when;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? strndup(s, strcspn(s, "\n")) : NULL;
}

void smt_restart_ended(struct smt_restart *r, double when, const char *summary,
		       const char *stacks)
{
	struct record *k = &r->v[r->attempt];

	k->end = when;
	set_str(&k->summary, summary);
	set_str(&k->stacks, stacks);
}

int smt_restart_next(struct smt_restart *r)
{
	if (reserve(r, r->attempt + 1) < 0)
		return -ENOMEM;
	r->attempt++;
	return r->attempt;
}

void smt_restart_set_attempt(struct smt_restart *r, int attempt)
{
	while (r->attempt < attempt && smt_restart_next(r) >= 0)
		;
}

static json_t *when(double t)
{
	return t > 0 ? json_real(t) : json_null();
}

json_t *smt_restart_json(const struct smt_restart *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i <= r->attempt; i++) {
		const struct record *k = &r->v[i];
		json_array_append_new(a, json_pack("{s:i, s:o, s:o, s:s?, s:s?}", SMT_F_ATTEMPT, i,
						   "start", when(k->start), "end", when(k->end),
						   "failure", k->summary, "stacks", k->stacks));
	}
	return json_pack("{s:i, s:i, s:I, s:o}", SMT_F_ATTEMPT, r->attempt, SMT_F_RESTARTS,
			 r->attempt, SMT_F_MAX_RESTARTS, (json_int_t)r->max, "attempts",
			 a ? a : json_array());
}

int smt_restart_write(const struct smt_restart *r, const char *root)
{
	static const char *const parts[] = { "output", "data" };
	json_t *j = smt_restart_json(r);
	char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	int rc = -ENOMEM;

	json_decref(j);
	if (text) {
		size_t len = strlen(text);

		text[len] = '\n';  /* the NUL's place: LEN + 1 bytes, a last newline */
		rc = smt_safefile_replace(root, parts, 2, "attempts.json", text, len + 1);
	}
	if (rc < 0)
		smt_warn("cannot write %s/output/data/attempts.json: %s", root, strerror(-rc));
	free(text);
	return rc < 0 ? rc : 0;
}

/* Append at most MAX bytes of S, cut at a character's start. */
static int add_cut(struct smt_dynbuf *b, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return smt_dynbuf_add(b, s, n);
}

char *smt_restart_failure(const struct smt_restart *r, const char *text)
{
	size_t first = strcspn(text, "\n");
	struct smt_dynbuf b;
	char suffix[64], *last = strndup(text, first);
	int rc;

	if (!last)
		return NULL;
	if (r->attempt == 0) {
		free(last);
		return strdup(text);
	}
	smt_dynbuf_init(&b, 1024 * 1024);
	snprintf(suffix, sizeof(suffix), " (attempt %d of %d)", r->attempt + 1, r->attempt + 1);
	rc = add_cut(&b, last, LAST_LINE_MAX);
	rc = rc ? rc : smt_dynbuf_add(&b, suffix, strlen(suffix));
	rc = rc ? rc : smt_dynbuf_add(&b, "\n", 1);
	free(last);
	/* The earlier attempts share what is left of the shown bytes. */
	size_t left =
		SMT_REPORT_SHOWN > smt_dynbuf_len(&b) ? SMT_REPORT_SHOWN - smt_dynbuf_len(&b) : 0;
	size_t each = left / (size_t)r->attempt;
	for (int i = 0; rc == 0 && i < r->attempt; i++) {
		char head[64], line[EARLIER_LINE_MAX + 1];
		int n = snprintf(head, sizeof(head), "attempt %d of %d: ", i + 1, r->attempt + 1);
		size_t cap = each > EARLIER_LINE_MAX ? EARLIER_LINE_MAX : each;
		if (cap <= (size_t)n + 1)
			break;
		snprintf(line, sizeof(line), "%s%s", head,
			 r->v[i].summary ? r->v[i].summary : "ended");
		rc = add_cut(&b, line, cap - 1);
		rc = rc ? rc : smt_dynbuf_add(&b, "\n", 1);
	}
	if (rc == 0 && text[first])
		rc = smt_dynbuf_add(&b, text + first + 1, strlen(text + first + 1));
	if (rc < 0) {
		smt_dynbuf_free(&b);
		return NULL;
	}
	return smt_dynbuf_take(&b, NULL);
}

void smt_restart_mark_line(const struct smt_restart *r, const char *host, char *buf,
			   size_t len)
{
	snprintf(buf, len,
		 "==== smtd: attempt %d of at most %ld on %s (SMTD_RESTART_COUNT=%d) ====",
		 r->attempt + 1, r->max + 1 > r->attempt + 1 ? r->max + 1 : (long)r->attempt + 1,
		 host, r->attempt);
}
