/*
 * stackgroup.c - group ranks by stack, name the odd one(s) out
 * (stackgroup.h).
 *
 * Why one file of this size: the grouping (which ranks share a stack, which
 * went quiet first) and its three renderings (the failure line's summary,
 * the details, the JSON) read the same private groups; the renderings are
 * what the grouping is for, and a split would export struct group.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "smt_proto.h"
#include "stackgroup.h"
#include "stackparse.h"
#include "textesc.h"
#include "vec.h"

#define POSITION_MAX 256
#define LIST_RANKS_MAX 8
#define LIST_HOSTS_MAX 4
#define ODD_GROUPS_NAMED 3
#define HEADER_MAX 2048
/* Ranks whose last lines are this close went quiet at the same time. */
#define QUIET_TIE_S 0.001
/* A rank went quiet first only this long before every other: ranks of one
 * step write their lines within a second or so of each other (and hosts
 * measure a little apart), so a smaller lead names a rank at random. */
#define QUIET_APART_S 1.0

struct rank {
	int rank;
	char *host;
	char *stack;
	char *reason;
	double quiet;
	int group;   /* index into groups, -1 when unreadable */
};

struct group {
	char *key;
	size_t n, cap;
	size_t *members;           /* indices into ranks, by rank number */
	char position[POSITION_MAX];
	int odd;
};

struct smt_stackgroup {
	struct rank *r;
	size_t n;
	struct group *g;
	size_t ng, gcap;
	int majority;          /* group index, -1: none */
	size_t *order;         /* groups in the order they are shown */
	int *odd;              /* rank numbers */
	size_t nodd;
	size_t *quiet;         /* indices of the ranks that went quiet first */
	size_t nquiet;
	size_t nunreadable;
};

/* --- bounded, sanitised text ------------------------------------------- */

struct text {
	struct smt_dynbuf b;   /* its cap: the bytes allowed */
	int full, oom;
};

/* CAP bytes at most (0: unbounded). */
static void text_init(struct text *t, size_t cap)
{
	smt_dynbuf_init(&t->b, cap ? cap : SIZE_MAX / 2);
	t->full = t->oom = 0;
}

static size_t text_len(const struct text *t)
{
	return smt_dynbuf_len(&t->b);
}

/* The text, malloc'ed ("" when empty), or NULL when out of memory. */
static char *text_take(struct text *t)
{
	size_t n;
	char *s = t->oom ? NULL : smt_dynbuf_take(&t->b, &n);

	if (!s && !t->oom)
		s = strdup("");
	smt_dynbuf_free(&t->b);
	return s;
}

/* Append N bytes: whole UTF-8 characters only, invalid bytes as '?',
 * control bytes (but newlines when NL) as spaces; stops when full. */
static void put_n(struct text *t, const char *s, size_t n, int nl)
{
	const unsigned char *p = (const unsigned char *)s;

	while (n > 0 && !t->full && !t->oom) {
		size_t k = *p < 0x80 ? 1 : smt_utf8_len(p, n);
		char c[4];
		const char *src = (const char *)p;
		size_t w = k;

		if (k == 0) {
			c[0] = '?';
			src = c;
			w = 1;
			k = 1;
		} else if (*p < 0x20 || *p == 0x7f) {
			c[0] = (*p == '\n' && nl) ? '\n' : ' ';
			src = c;
		}
		int rc = smt_dynbuf_add(&t->b, src, w);
		if (rc == -ENOBUFS) {
			t->full = 1;
			break;
		}
		if (rc < 0) {
			t->oom = 1;
			break;
		}
		p += k;
		n -= k;
	}
}

static void put(struct text *t, const char *s)
{
	put_n(t, s, strlen(s), 1);
}

/* Text from outside (a host name, a reason, a position): one line. */
static void put_line(struct text *t, const char *s)
{
	put_n(t, s, strlen(s), 0);
}

static void __attribute__((format(printf, 2, 3))) putf(struct text *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	put(t, buf);
}

/* --- positions --------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int is_library_file(const char *file)
{
	const char *p;

	if (strncmp(file, "<frozen", 7) == 0)
		return 1;
	if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/"))
		return 1;
	for (p = strstr(file, "/lib/python"); p; p = strstr(p + 1, "/lib/python"))
		if (isdigit((unsigned char)p[11]))
			return 1;
	return 0;
}

static int is_keyword(const char *s, size_t n)
{
	static const char *const kw[] = { "if", "elif", "while", "for", "return", "not", "and",
		"or", "in", "is", "with", "assert", "yield", "await", "lambda", "del", "raise",
		"except", "else", "from", "import", "as", "global", "print", NULL };

	for (size_t i = 0; kw[i]; i++)
		if (strlen(kw[i]) == n && memcmp(kw[i], s, n) == 0)
			return strcmp(kw[i], "print") != 0;
	return 0;
}

/* The function a Python source line calls first: "time.sleep" in
 * "time.sleep(3600)", "dist.all_reduce" in "x = dist.all_reduce(t)". */
static int callee(const char *code, char *buf, size_t size)
{
	const char *s = code;
	char quote = 0;

	for (; *s; s++) {
		if (quote) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == quote)
				quote = 0;
			continue;
		}
		if (*s == '\'' || *s == '"') {
			quote = *s;
			continue;
		}
		if (*s == '#')
			break;
		if (!(isalpha((unsigned char)*s) || *s == '_' || *s == '.'))
			continue;
		if (s > code && (isalnum((unsigned char)s[-1]) || s[-1] == '_'))
			continue;
		const char *e = s;
		while (isalnum((unsigned char)*e) || *e == '_' || *e == '.')
			e++;
		const char *q = e;
		while (*q == ' ')
			q++;
		const char *b = s;
		while (b < e && *b == '.')
			b++;
		size_t n = (size_t)(e - b);
		while (n > 0 && b[n - 1] == '.')
			n--;
		if (*q == '(' && n > 0 && !isdigit((unsigned char)*b) && !is_keyword(b, n)) {
			if (n >= size)
				n = size - 1;
			memcpy(buf, b, n);
			buf[n] = '\0';
			return 1;
		}
		s = e - 1;
	}
	return 0;
}

static const struct smt_thread *thread_with_frames(const struct smt_stack *st)
{
	const struct smt_thread *m = smt_stack_main_thread(st);

	if (m && m->nframes)
		return m;
	for (size_t i = 0; i < st->nthreads; i++)
		if (st->threads[i].nframes)
			return &st->threads[i];
	return NULL;
}

static void python_position(const struct smt_thread *t, char *buf, size_t size)
{
	const struct smt_frame *pick = NULL, *first_py = NULL;
	size_t at = 0;
	char name[POSITION_MAX];

	for (size_t i = 0; i < t->nframes; i++) {
		const struct smt_frame *f = &t->frames[i];
		if (!f->python)
			continue;
		if (!first_py)
			first_py = f, at = i;
		if (!is_library_file(f->file)) {
			pick = f;
			at = i;
			break;
		}
	}
	if (!pick)
		pick = first_py;
	if (pick->code && callee(pick->code, name, sizeof(name))) {
		;
	} else if (!pick->code && at > 0 && t->frames[at - 1].builtin) {
		/* py-bt without the source: the C function it is in. */
		snprintf(name, sizeof(name), "%s", t->frames[at - 1].func);
	} else {
		snprintf(name, sizeof(name), "%s", pick->func);
	}
	snprintf(buf, size, "%s (%s:%d)", name, base_name(pick->file), pick->line);
}

static void native_position(const struct smt_thread *t, char *buf, size_t size)
{
	const struct smt_frame *pick = NULL, *named = NULL;
	char sym[POSITION_MAX];

	for (size_t i = 0; i < t->nframes && !pick; i++) {
		const struct smt_frame *f = &t->frames[i];
		if (strcmp(f->func, "??") == 0 || f->func[0] == '\0')
			continue;
		if (!named)
			named = f;
		if (!smt_frame_is_wait_wrapper(f->func) && !f->builtin)
			pick = f;
	}
	if (!pick)
		pick = named;
	if (!pick) {
		snprintf(buf, size, "an unknown native frame");
		return;
	}
	smt_frame_symbol(pick->func, sym, sizeof(sym));
	if (pick->file && pick->line > 0)
		snprintf(buf, size, "%s (%s:%d)", sym, base_name(pick->file), pick->line);
	else
		snprintf(buf, size, "%s", sym);
}

static void position_of(const struct smt_stack *st, char *buf, size_t size)
{
	const struct smt_thread *t = thread_with_frames(st);
	int python = 0;

	buf[0] = '\0';
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nframes && !python; i++)
		python = t->frames[i].python;
	if (python)
		python_position(t, buf, size);
	else
		native_position(t, buf, size);
}

char *smt_stack_position(const char *text, size_t len, char *buf, size_t size)
{
	struct smt_stack *st;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (smt_stack_parse(text, len, &st) == 0) {
		position_of(st, buf, size);
		smt_stack_free(st);
	}
	return buf;
}

/* --- grouping ---------------------------------------------------------- */

static void key_thread(struct text *k, const struct smt_thread *t)
{
	char sym[POSITION_MAX];

	for (size_t i = 0; i < t->nframes; i++) {
		const struct smt_frame *f = &t->frames[i];
		put(k, f->python ? "P " : f->builtin ? "B " : "N ");
		put(k,
		    f->python || f->builtin ? f->func :
					      smt_frame_symbol(f->func, sym, sizeof(sym)));
		put(k, "|");
		put(k, f->file ? f->file : "");
		putf(k, "|%d\n", f->line);
	}
}

/* What identical stacks share: the main thread's frames without anything
 * that differs between processes running the same code. */
static char *stack_key(const struct smt_stack *st)
{
	struct text k;
	const struct smt_thread *t = thread_with_frames(st);

	text_init(&k, 0);
	if (t)
		key_thread(&k, t);
	return text_take(&k);
}

static int add_member(struct group *g, size_t idx)
{
	if (SMT_VEC_RESERVE(g->members, g->cap, g->n + 1) < 0)
		return -ENOMEM;
	g->members[g->n++] = idx;
	return 0;
}

static int group_rank(struct smt_stackgroup *sg, size_t idx)
{
	struct rank *r = &sg->r[idx];
	struct smt_stack *st;
	char *key;
	int rc;

	rc = smt_stack_parse(r->stack, strlen(r->stack), &st);
	if (rc < 0)
		return rc;
	key = stack_key(st);
	if (key == NULL) {
		smt_stack_free(st);
		return -ENOMEM;
	}
	for (size_t i = 0; i < sg->ng; i++) {
		if (strcmp(sg->g[i].key, key) == 0) {
			free(key);
			smt_stack_free(st);
			r->group = (int)i;
			return add_member(&sg->g[i], idx);
		}
	}
	if (SMT_VEC_RESERVE(sg->g, sg->gcap, sg->ng + 1) < 0) {
		free(key);
		smt_stack_free(st);
		return -ENOMEM;
	}
	struct group *g = &sg->g[sg->ng];
	memset(g, 0, sizeof(*g));
	g->key = key;
	position_of(st, g->position, sizeof(g->position));
	smt_stack_free(st);
	r->group = (int)sg->ng++;
	return add_member(g, idx);
}

static int by_rank(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The order groups are shown in: the odd ones (smallest first), then the
 * majority, then the rest (largest first). */
static const struct smt_stackgroup *sort_ctx;

static int group_rank_order(const struct group *g)
{
	if (g->odd)
		return 0;
	if (sort_ctx->majority >= 0 && g == &sort_ctx->g[sort_ctx->majority])
		return 1;
	return 2;
}

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = &sort_ctx->g[*(const size_t *)a];
	const struct group *y = &sort_ctx->g[*(const size_t *)b];
	int ox = group_rank_order(x), oy = group_rank_order(y);

	if (ox != oy)
		return ox - oy;
	if (x->n != y->n)
		return ox == 0 ? (x->n > y->n) - (x->n < y->n) : (x->n < y->n) - (x->n > y->n);
	return sort_ctx->r[x->members[0]].rank - sort_ctx->r[y->members[0]].rank;
}

static void find_quiet(struct smt_stackgroup *sg)
{
	double max = -1, next = -1;

	for (size_t i = 0; i < sg->n; i++)
		if (sg->r[i].quiet > max)
			max = sg->r[i].quiet;
	if (max < 0)
		return;
	for (size_t i = 0; i < sg->n; i++)
		if (sg->r[i].quiet >= 0 && sg->r[i].quiet < max - QUIET_TIE_S &&
		    sg->r[i].quiet > next)
			next = sg->r[i].quiet;
	/* Ranks that all stopped together (a heartbeat job, every rank in
	 * the same wait), or the only ones that ever wrote, are no culprit. */
	if (sg->n > 1 && (next < 0 || max - next < QUIET_APART_S))
		return;
	for (size_t i = 0; i < sg->n; i++)
		if (sg->r[i].quiet >= 0 && sg->r[i].quiet >= max - QUIET_TIE_S)
			sg->quiet[sg->nquiet++] = i;
}

static void decide(struct smt_stackgroup *sg)
{
	size_t best = 0, second = 0;

	sg->majority = -1;
	for (size_t i = 0; i < sg->ng; i++) {
		if (sg->g[i].n > best) {
			second = best;
			best = sg->g[i].n;
			sg->majority = (int)i;
		} else if (sg->g[i].n > second) {
			second = sg->g[i].n;
		}
	}
	if (best == second)
		sg->majority = -1;
	find_quiet(sg);
	if (sg->majority >= 0 && sg->ng > 1) {
		for (size_t i = 0; i < sg->ng; i++)
			sg->g[i].odd = (int)i != sg->majority;
		for (size_t i = 0; i < sg->n; i++)
			if (sg->r[i].group >= 0 && sg->g[sg->r[i].group].odd)
				sg->odd[sg->nodd++] = sg->r[i].rank;
	} else {
		/* Nothing tells the stacks apart: the first to go quiet is odd. */
		for (size_t i = 0; i < sg->nquiet; i++) {
			struct rank *r = &sg->r[sg->quiet[i]];
			sg->odd[sg->nodd++] = r->rank;
			if (r->group >= 0)
				sg->g[r->group].odd = 1;
		}
	}
	qsort(sg->odd, sg->nodd, sizeof(*sg->odd), cmp_int);
	for (size_t i = 0; i < sg->ng; i++)
		sg->order[i] = i;
	sort_ctx = sg;
	qsort(sg->order, sg->ng, sizeof(*sg->order), cmp_group);
	sort_ctx = NULL;
}

static char *dup_or_null(const char *s, int *oom)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*oom = 1;
	return d;
}

int smt_stackgroup_new(const struct smt_rank_stack *ranks, size_t n, struct smt_stackgroup **out)
{
	struct smt_stackgroup *sg;
	int oom = 0, rc = -ENOMEM;

	if (ranks == NULL && n > 0)
		return -EINVAL;
	sg = calloc(1, sizeof(*sg));
	if (sg == NULL)
		return -ENOMEM;
	sg->n = n;
	sg->r = calloc(n + 1, sizeof(*sg->r));
	sg->odd = calloc(n + 1, sizeof(*sg->odd));
	sg->quiet = calloc(n + 1, sizeof(*sg->quiet));
	sg->order = calloc(n + 1, sizeof(*sg->order));
	if (!sg->r || !sg->odd || !sg->quiet || !sg->order)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct rank *r = &sg->r[i];
		r->rank = ranks[i].rank;
		r->host = dup_or_null(ranks[i].host ? ranks[i].host : "?", &oom);
		r->stack = dup_or_null(ranks[i].stack, &oom);
		r->reason = dup_or_null(ranks[i].stack ? NULL :
					ranks[i].reason ? ranks[i].reason : "unknown", &oom);
		r->quiet = ranks[i].quiet_s;
		r->group = -1;
	}
	if (oom)
		goto fail;
	/* Members of a group, and every list made from them, in rank order. */
	qsort(sg->r, n, sizeof(*sg->r), by_rank);
	for (size_t i = 0; i < n; i++) {
		if (sg->r[i].stack == NULL) {
			sg->nunreadable++;
			continue;
		}
		rc = group_rank(sg, i);
		if (rc < 0)
			goto fail;
	}
	decide(sg);
	*out = sg;
	return 0;
fail:
	smt_stackgroup_free(sg);
	return rc;
}

void smt_stackgroup_free(struct smt_stackgroup *sg)
{
	if (sg == NULL)
		return;
	for (size_t i = 0; sg->r && i < sg->n; i++) {
		free(sg->r[i].host);
		free(sg->r[i].stack);
		free(sg->r[i].reason);
	}
	for (size_t i = 0; i < sg->ng; i++) {
		free(sg->g[i].key);
		free(sg->g[i].members);
	}
	free(sg->g);
	free(sg->r);
	free(sg->odd);
	free(sg->quiet);
	free(sg->order);
	free(sg);
}

const int *smt_stackgroup_odd(const struct smt_stackgroup *sg, size_t *n)
{
	*n = sg->nodd;
	return sg->odd;
}

/* --- lists of ranks and hosts ------------------------------------------ */

/* "3", "3, 7", "8-15, 20" for the ranks at IDX (N of them, in rank order),
 * at most MAXITEMS items then " and K more". */
static void put_ranks(struct text *t, const struct smt_stackgroup *sg, const size_t *idx,
		      size_t n, size_t maxitems)
{
	size_t items = 0, i = 0;

	while (i < n) {
		size_t j = i;
		while (j + 1 < n && sg->r[idx[j + 1]].rank == sg->r[idx[j]].rank + 1)
			j++;
		if (items == maxitems) {
			putf(t, " and %zu more", n - i);
			return;
		}
		putf(t, "%s%d", items ? ", " : "", sg->r[idx[i]].rank);
		if (j > i)
			putf(t, "%s%d", j == i + 1 ? ", " : "-", sg->r[idx[j]].rank);
		items++;
		i = j + 1;
	}
}

/* Whether IDX[I]'s host is the first time that host appears in IDX. */
static int first_of_host(const struct smt_stackgroup *sg, const size_t *idx, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (strcmp(sg->r[idx[j]].host, sg->r[idx[i]].host) == 0)
			return 0;
	return 1;
}

/* "algo-2, algo-4" - distinct hosts in rank order, at most MAXHOSTS. */
static void put_hosts(struct text *t, const struct smt_stackgroup *sg, const size_t *idx,
		      size_t n, size_t maxhosts)
{
	size_t shown = 0, distinct = 0;

	for (size_t i = 0; i < n; i++) {
		const char *h = sg->r[idx[i]].host;

		if (!first_of_host(sg, idx, i))
			continue;
		distinct++;
		if (shown < maxhosts) {
			put(t, shown ? ", " : "");
			put_line(t, h);
			shown++;
		}
	}
	if (distinct > shown)
		putf(t, " and %zu more host%s", distinct - shown, distinct - shown == 1 ? "" : "s");
}

/* "rank 5 on algo-3" / "ranks 3, 7 on algo-2, algo-4" */
static void put_who(struct text *t, const struct smt_stackgroup *sg, const size_t *idx, size_t n)
{
	put(t, n == 1 ? "rank " : "ranks ");
	put_ranks(t, sg, idx, n, LIST_RANKS_MAX);
	put(t, " on ");
	put_hosts(t, sg, idx, n, LIST_HOSTS_MAX);
}

/* "algo-1: 0-15; algo-2: 16-31" - every host of the group with its ranks. */
static void put_by_host(struct text *t, const struct smt_stackgroup *sg, const size_t *idx,
			size_t n)
{
	size_t *sel = malloc((n + 1) * sizeof(*sel));
	int first = 1;

	if (sel == NULL) {
		t->oom = 1;
		return;
	}
	for (size_t i = 0; i < n && !t->full; i++) {
		const char *h = sg->r[idx[i]].host;

		if (!first_of_host(sg, idx, i))
			continue;
		size_t k = 0;
		for (size_t j = i; j < n; j++)
			if (strcmp(sg->r[idx[j]].host, h) == 0)
				sel[k++] = idx[j];
		put(t, first ? "" : "; ");
		put_line(t, h);
		put(t, ": ");
		put_ranks(t, sg, sel, k, 64);
		first = 0;
	}
	free(sel);
}

/* --- the summary ------------------------------------------------------- */

static void put_unreadable_note(struct text *t, const struct smt_stackgroup *sg)
{
	size_t first = sg->n;

	for (size_t i = 0; i < sg->n && first == sg->n; i++)
		if (sg->r[i].stack == NULL)
			first = i;
	if (first == sg->n)
		return;
	if (sg->nunreadable == 1) {
		put(t, "; no stack for ");
		put_who(t, sg, &first, 1);
		put(t, ": ");
		put_line(t, sg->r[first].reason);
	} else {
		putf(t, "; no stack for %zu ranks (rank %d on ", sg->nunreadable,
		     sg->r[first].rank);
		put_line(t, sg->r[first].host);
		put(t, ": ");
		put_line(t, sg->r[first].reason);
		put(t, ")");
	}
}

static void summary_odd(struct text *t, const struct smt_stackgroup *sg)
{
	size_t named = 0, left = 0;
	const struct group *maj = &sg->g[sg->majority];

	for (size_t o = 0; o < sg->ng; o++) {
		const struct group *g = &sg->g[sg->order[o]];
		if (!g->odd)
			continue;
		if (named == ODD_GROUPS_NAMED) {
			left += g->n;
			continue;
		}
		put(t, named ? ", " : "");
		put_who(t, sg, g->members, g->n);
		put(t, g->n == 1 ? " is in " : " are in ");
		put_line(t, g->position[0] ? g->position : "an unknown place");
		named++;
	}
	if (left)
		putf(t, " and %zu more rank%s elsewhere", left, left == 1 ? "" : "s");
	putf(t, " while %zu rank%s in ", maj->n, maj->n == 1 ? " waits" : "s wait");
	put_line(t, maj->position[0] ? maj->position : "an unknown place");
	put_unreadable_note(t, sg);
}

static void summary_quiet(struct text *t, const struct smt_stackgroup *sg)
{
	size_t readable = sg->n - sg->nunreadable;

	if (sg->nquiet > 0) {
		put_who(t, sg, sg->quiet, sg->nquiet);
		putf(t, " went quiet%s (no progress for %.0f s)", sg->n > 1 ? " first" : "",
		     sg->r[sg->quiet[0]].quiet);
		if (sg->ng > 1 && sg->nquiet == 1 && sg->r[sg->quiet[0]].group >= 0) {
			put(t, " and is in ");
			put_line(t, sg->g[sg->r[sg->quiet[0]].group].position);
		}
		put(t, "; ");
	}
	if (sg->ng == 0) {
		size_t first = 0;
		while (first < sg->n && sg->r[first].stack != NULL)
			first++;
		put(t, "no stack could be read");
		if (first < sg->n) {
			put(t, ": ");
			put_line(t, sg->r[first].reason);
		}
		return;
	}
	if (sg->ng == 1) {
		const char *pos = sg->g[0].position[0] ? sg->g[0].position : "the same place";
		if (sg->n == 1)
			put(t, "it is in ");
		else if (sg->nunreadable == 0)
			putf(t, "all %zu ranks are in ", readable);
		else
			putf(t, "all %zu readable stacks are in ", readable);
		put_line(t, pos);
	} else {
		putf(t, "no majority among %zu distinct stacks", sg->ng);
	}
	put_unreadable_note(t, sg);
}

size_t smt_stackgroup_summary(const struct smt_stackgroup *sg, double stall_s, char *buf,
			      size_t size)
{
	struct text t;
	size_t cap, n;

	if (size == 0)
		return 0;
	text_init(&t, 0);
	cap = size - 1 < SMT_STACKGROUP_SUMMARY_MAX ? size - 1 : SMT_STACKGROUP_SUMMARY_MAX;
	/* Built unbounded, then cut at a character boundary with "...". */
	if (stall_s >= 0)
		putf(&t, "Stalled: no progress for %.0f s; ", stall_s);
	if (sg->n == 0)
		put(&t, "no rank to read");
	else if (sg->majority >= 0 && sg->ng > 1)
		summary_odd(&t, sg);
	else
		summary_quiet(&t, sg);
	if (t.oom || text_len(&t) == 0) {
		snprintf(buf, size, "%s", stall_s >= 0 ? "Stalled" : "");
		smt_dynbuf_free(&t.b);
		return strlen(buf);
	}
	const char *p = smt_dynbuf_ptr(&t.b);
	n = text_len(&t);
	if (n > cap) {
		n = cap >= 3 ? cap - 3 : 0;
		while (n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
			n--;
		memcpy(buf, p, n);
		memcpy(buf + n, "...", cap - n >= 3 ? 3 : cap - n);
		n += cap - n >= 3 ? 3 : cap - n;
	} else {
		memcpy(buf, p, n);
	}
	buf[n] = '\0';
	smt_dynbuf_free(&t.b);
	return n;
}

/* --- the details ------------------------------------------------------- */

/* TEXT's lines while they fit in BUDGET bytes, then a count of the rest. */
static void put_stack(struct text *t, const char *text, size_t budget)
{
	const char *s = text, *end = text + strlen(text);
	size_t used = 0, left = 0;

	while (end > s && end[-1] == '\n')
		end--;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (left || used + n + 1 > budget) {
			left++;
		} else {
			put_n(t, s, n, 0);
			put(t, "\n");
			used += n + 1;
		}
		s += n + (nl != NULL);
	}
	if (left)
		putf(t, "[... %zu more line%s]\n", left, left == 1 ? "" : "s");
}

static void put_group_header(struct text *t, const struct smt_stackgroup *sg, const struct group *g)
{
	struct text h;

	text_init(&h, HEADER_MAX);
	put(&h, "--- ");
	if (g->n == 1) {
		putf(&h, "rank %d on ", sg->r[g->members[0]].rank);
		put_line(&h, sg->r[g->members[0]].host);
	} else {
		putf(&h, "%zu ranks (", g->n);
		put_by_host(&h, sg, g->members, g->n);
		put(&h, ")");
	}
	put(&h, ": ");
	put_line(&h, g->position[0] ? g->position : "no frame recognised");
	if (g->odd)
		put(&h, " [odd]");
	else if (sg->majority >= 0 && g == &sg->g[sg->majority] && sg->ng > 1)
		put(&h, " [majority]");
	if (h.full)
		put(&h, "...");
	put(t, smt_dynbuf_ptr(&h.b));
	put(t, "\n");
	if (h.oom)
		t->oom = 1;
	smt_dynbuf_free(&h.b);
}

static void put_unreadable(struct text *t, const struct smt_stackgroup *sg)
{
	size_t *sel = malloc((sg->n + 1) * sizeof(*sel));

	if (sel == NULL) {
		t->oom = 1;
		return;
	}
	/* One line per distinct reason, with the ranks that have it. */
	for (size_t i = 0; i < sg->n && !t->full; i++) {
		if (sg->r[i].stack != NULL)
			continue;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = sg->r[j].stack == NULL &&
				strcmp(sg->r[j].reason, sg->r[i].reason) == 0;
		if (seen)
			continue;
		size_t k = 0;
		for (size_t j = i; j < sg->n; j++)
			if (sg->r[j].stack == NULL && strcmp(sg->r[j].reason, sg->r[i].reason) == 0)
				sel[k++] = j;
		struct text h;
		text_init(&h, HEADER_MAX);
		putf(&h, "--- no stack for %zu rank%s (", k, k == 1 ? "" : "s");
		put_by_host(&h, sg, sel, k);
		put(&h, "): ");
		put_line(&h, sg->r[i].reason);
		if (h.full)
			put(&h, "...");
		put(t, smt_dynbuf_ptr(&h.b));
		put(t, "\n");
		smt_dynbuf_free(&h.b);
	}
	free(sel);
}

int smt_stackgroup_details(const struct smt_stackgroup *sg, size_t max, char **out)
{
	struct text t;
	size_t shown = 0;

	text_init(&t, max);
	putf(&t, "Stacks of %zu rank%s: %zu distinct", sg->n, sg->n == 1 ? "" : "s", sg->ng);
	if (sg->nunreadable)
		putf(&t, ", %zu unreadable", sg->nunreadable);
	put(&t, "\n");
	if (sg->nunreadable) {
		/* Short and always worth the room: shown before the stacks. */
		put_unreadable(&t, sg);
	}
	for (size_t o = 0; o < sg->ng && !t.full && !t.oom; o++) {
		const struct group *g = &sg->g[sg->order[o]];
		size_t room = max > text_len(&t) ? max - text_len(&t) : 0;
		/* An equal share of what is left, keeping room for the count
		 * of groups that would not fit. */
		size_t budget = room > 64 ? (room - 64) / (sg->ng - o) : 0;
		if (budget < 256 && o > 0)
			break;
		put(&t, "\n");
		put_group_header(&t, sg, g);
		const char *text = sg->r[g->members[0]].stack;
		size_t after_header = max > text_len(&t) + 64 ? max - text_len(&t) - 64 : 0;
		put_stack(&t, text, budget < after_header ? budget : after_header);
		shown++;
	}
	if (shown < sg->ng) {
		/* Lift the bound for this last line: MAX keeps room for it. */
		t.b.cap = SIZE_MAX / 2;
		t.full = 0;
		putf(&t, "[... %zu more distinct stack%s not shown]\n", sg->ng - shown,
		     sg->ng - shown == 1 ? "" : "s");
	}
	*out = text_take(&t);
	return *out ? 0 : -ENOMEM;
}

/* --- JSON -------------------------------------------------------------- */

/* json_string() wants valid UTF-8: a stack text may hold anything. */
static json_t *json_text(const char *s)
{
	struct text t;
	json_t *j;

	text_init(&t, 0);
	put_n(&t, s, strlen(s), 1);
	j = t.oom ? NULL : json_string(smt_dynbuf_ptr(&t.b));
	smt_dynbuf_free(&t.b);
	return j;
}

json_t *smt_stackgroup_json(const struct smt_stackgroup *sg)
{
	json_t *root = json_object(), *groups = json_array(), *unread = json_array();
	json_t *odd = json_array(), *quiet = json_array();
	int bad = !root || !groups || !unread || !odd || !quiet;

	for (size_t i = 0; !bad && i < sg->nodd; i++)
		bad |= json_array_append_new(odd, json_integer(sg->odd[i]));
	for (size_t i = 0; !bad && i < sg->nquiet; i++)
		bad |= json_array_append_new(quiet, json_integer(sg->r[sg->quiet[i]].rank));
	for (size_t o = 0; !bad && o < sg->ng; o++) {
		const struct group *g = &sg->g[sg->order[o]];
		json_t *jg = json_object(), *ranks = json_array(), *hosts = json_array();
		bad |= !jg || !ranks || !hosts;
		for (size_t i = 0; !bad && i < g->n; i++) {
			const struct rank *r = &sg->r[g->members[i]];
			bad |= json_array_append_new(ranks, json_integer(r->rank));
			bad |= json_array_append_new(hosts, json_text(r->host));
		}
		if (!bad) {
			bad |= json_object_set_new(jg, SMT_F_RANKS, ranks);
			bad |= json_object_set_new(jg, SMT_F_HOSTS, hosts);
			ranks = hosts = NULL;
			bad |= json_object_set_new(jg, SMT_F_POSITION, json_text(g->position));
			bad |= json_object_set_new(
				jg, SMT_F_MAJORITY,
				json_boolean(sg->majority == (int)sg->order[o] && sg->ng > 1));
			bad |= json_object_set_new(jg, SMT_F_ODD, json_boolean(g->odd));
			bad |= json_object_set_new(jg, SMT_F_STACK,
						   json_text(sg->r[g->members[0]].stack));
			bad |= json_array_append_new(groups, jg);
			jg = NULL;
		}
		json_decref(ranks);
		json_decref(hosts);
		json_decref(jg);
	}
	for (size_t i = 0; !bad && i < sg->n; i++) {
		const struct rank *r = &sg->r[i];
		if (r->stack)
			continue;
		json_t *u = json_object();
		bad |= !u;
		if (!bad) {
			bad |= json_object_set_new(u, SMT_F_RANK, json_integer(r->rank));
			bad |= json_object_set_new(u, SMT_F_HOST, json_text(r->host));
			bad |= json_object_set_new(u, SMT_F_REASON, json_text(r->reason));
			bad |= json_array_append_new(unread, u);
		}
	}
	if (!bad) {
		bad |= json_object_set_new(root, SMT_F_RANKS, json_integer((json_int_t)sg->n));
		bad |= json_object_set_new(root, SMT_F_ODD, odd);
		bad |= json_object_set_new(root, SMT_F_QUIET_FIRST, quiet);
		bad |= json_object_set_new(root, SMT_F_GROUPS, groups);
		bad |= json_object_set_new(root, SMT_F_UNREADABLE, unread);
		if (!bad)
			return root;
		json_decref(root);
		return NULL;
	}
	json_decref(root);
	json_decref(groups);
	json_decref(unread);
	json_decref(odd);
	json_decref(quiet);
	return NULL;
}
