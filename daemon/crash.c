/* crash.c - how a rank died, as its host saw it (crash.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "cgroup.h"
#include "crash.h"
#include "dynbuf.h"
#include "smt_proto.h"
#include "stackparse.h"

/* Python's own library and installed packages: where a crash surfaces,
 * rarely where the program went wrong. */
static int library_file(const char *file)
{
	return file[0] == '<' || strstr(file, "/lib/python") || strstr(file, "-packages/");
}

static const struct smt_thread *crashing_thread(const struct smt_stack *st)
{
	for (size_t i = 0; i < st->nthreads; i++)
		if (st->threads[i].current)
			return &st->threads[i];
	return st->nthreads ? &st->threads[0] : NULL;
}

void smt_crash_where(const char *text, size_t len, char out[SMT_CRASH_WHERE_MAX + 1])
{
	struct smt_stack *st = NULL;
	const struct smt_thread *t;
	const struct smt_frame *pick = NULL;

	out[0] = '\0';
	if (!text || smt_stack_parse(text, len, &st) < 0)
		return;
	t = crashing_thread(st);
	for (size_t i = 0; t && i < t->nframes; i++) {
		const struct smt_frame *f = &t->frames[i];

		if (!f->python || !f->file)
			continue;
		if (!pick)
			pick = f;
		if (!library_file(f->file)) {
			pick = f;
			break;
		}
	}
	if (pick) {
		const char *base = strrchr(pick->file, '/');

		snprintf(out, SMT_CRASH_WHERE_MAX + 1, "%s (%s:%d)", pick->func,
			 base && base[1] ? base + 1 : pick->file, pick->line);
	}
	smt_stack_free(st);
}

/* ---- the dump, crashing thread first ---- */

struct block {
	const char *p;
	size_t n;       /* lines up to the blank line after them, newline included */
};

static int thread_block(const struct block *b, int current)
{
	if (current)
		return b->n >= 15 && !memcmp(b->p, "Current thread ", 15);
	return (b->n >= 7 && !memcmp(b->p, "Thread ", 7)) ||
		(b->n >= 7 && !memcmp(b->p, "Stack (", 7)) ||
		(b->n >= 15 && !memcmp(b->p, "Current thread ", 15));
}

char *smt_crash_dump_order(const char *text, size_t len)
{
	struct block b[64];
	size_t nb = 0, first_thread = SIZE_MAX, cur = SIZE_MAX;
	struct smt_dynbuf out;
	const char *p = text, *end = text + len;

	/* Blocks: runs of non-blank lines (the dump separates threads by one
	 * blank line).  Past 64 blocks the rest stays one block, in place. */
	while (p < end) {
		while (p < end && *p == '\n')
			p++;
		if (p >= end)
			break;
		b[nb].p = p;
		if (nb == 63) {
			b[nb++].n = (size_t)(end - p);
			break;
		}
		/* Line by line up to a blank line (or the end). */
		while (p < end && *p != '\n') {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			p = nl ? nl + 1 : end;
		}
		b[nb].n = (size_t)(p - b[nb].p);
		nb++;
	}
	for (size_t i = 0; i < nb; i++) {
		if (first_thread == SIZE_MAX && thread_block(&b[i], 0))
			first_thread = i;
		if (cur == SIZE_MAX && thread_block(&b[i], 1))
			cur = i;
	}
	smt_dynbuf_init(&out, 2 * len + 2 * nb + 1);
	for (size_t k = 0; k < nb; k++) {
		/* The order: before the threads, the current one, the rest. */
		size_t i = first_thread == SIZE_MAX || cur == SIZE_MAX || k < first_thread ? k
			 : k == first_thread ? cur : k <= cur ? k - 1 : k;
		int ok = (k == 0 || smt_dynbuf_add(&out, "\n", 1) == 0) &&
			smt_dynbuf_add(&out, b[i].p, b[i].n) == 0 &&
			(b[i].n == 0 || b[i].p[b[i].n - 1] == '\n' ||
			 smt_dynbuf_add(&out, "\n", 1) == 0);

		if (!ok) {
			smt_dynbuf_free(&out);
			return NULL;
		}
	}
	return smt_dynbuf_len(&out) ? smt_dynbuf_take(&out, NULL) : strdup("");
}

/* ---- the host's facts ---- */

int smt_crash_shm_tight(const struct smt_crash *c)
{
	if (c->shm_size <= 0)
		return 0;
	return c->shm_used * 100 > c->shm_size * SMT_CRASH_SHM_FULL_PCT ||
	       (c->shm_min > 0 && c->shm_size < c->shm_min);
}

/* "KEY N" in a /proc file of such lines (vmstat, meminfo). */
static long long proc_key(const char *proc, const char *file, const char *key)
{
	char path[512], line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", proc, file);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && (line[klen] == ' ' || line[klen] == ':')) {
			v = strtoll(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

long smt_crash_oom_count(const char *proc, const char *sysfs)
{
	char self[512];
	long n;

	snprintf(self, sizeof(self), "%s/self/cgroup", proc);
	if (smt_cgroup_oom_kills(sysfs, self, &n) == 0)
		return n;
	/* No memory cgroup in view: the kernel's count for the whole host. */
	return (long)proc_key(proc, "vmstat", "oom_kill");
}

static void probe_memory(struct smt_crash *c, const char *proc, const char *sysfs)
{
	char self[512];
	long long limit = 0, total;

	snprintf(self, sizeof(self), "%s/self/cgroup", proc);
	if (smt_cgroup_memory_limit(sysfs, self, &limit) == 0 && limit > 0) {
		c->limit_bytes = limit;
		c->limit_cgroup = 1;
		return;
	}
	total = proc_key(proc, "meminfo", "MemTotal");
	if (total > 0)
		c->limit_bytes = total * 1024;
}

void smt_crash_probe(struct smt_crash *c, int signo, long oom_base, const char *proc,
		     const char *sysfs, const char *shm_path, long long min_shm)
{
	struct statvfs sv;

	if (statvfs(shm_path, &sv) == 0 && sv.f_blocks > 0) {
		c->shm_size = (long long)sv.f_blocks * (long long)sv.f_frsize;
		c->shm_used = (long long)(sv.f_blocks - sv.f_bfree) * (long long)sv.f_frsize;
		c->shm_min = min_shm > 0 ? min_shm : 0;
	}
	if (signo == SIGKILL && oom_base >= 0) {
		long now = smt_crash_oom_count(proc, sysfs);

		c->oom = now > oom_base;
		if (c->oom)
			probe_memory(c, proc, sysfs);
	}
}

/* ---- the wire ---- */

void smt_crash_to_json(const struct smt_crash *c, json_t *o)
{
	if (c->where[0])
		json_object_set_new(o, SMT_F_CRASH_WHERE, json_string(c->where));
	if (c->oom)
		json_object_set_new(o, SMT_F_OOM, json_true());
	if (c->mem_kb > 0)
		json_object_set_new(o, SMT_F_MAXRSS_KB, json_integer(c->mem_kb));
	if (c->limit_bytes > 0) {
		json_object_set_new(o, SMT_F_MEM_LIMIT, json_integer(c->limit_bytes));
		json_object_set_new(o, SMT_F_MEM_LIMIT_OF,
				    json_string(c->limit_cgroup ? "cgroup" : "host"));
	}
	if (c->shm_size > 0) {
		json_object_set_new(o, SMT_F_SHM_SIZE, json_integer(c->shm_size));
		json_object_set_new(o, SMT_F_SHM_USED, json_integer(c->shm_used));
		if (c->shm_min > 0)
			json_object_set_new(o, SMT_F_SHM_MIN, json_integer(c->shm_min));
	}
	if (c->bus_error)
		json_object_set_new(o, SMT_F_BUS_ERROR, json_true());
}

static long long nonneg(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (long long)v : 0;
}

void smt_crash_from_json(struct smt_crash *c, json_t *o)
{
	const char *w = json_string_value(json_object_get(o, SMT_F_CRASH_WHERE));
	const char *of = json_string_value(json_object_get(o, SMT_F_MEM_LIMIT_OF));

	memset(c, 0, sizeof(*c));
	if (w)
		snprintf(c->where, sizeof(c->where), "%s", w);
	c->oom = json_is_true(json_object_get(o, SMT_F_OOM));
	c->bus_error = json_is_true(json_object_get(o, SMT_F_BUS_ERROR));
	c->mem_kb = nonneg(o, SMT_F_MAXRSS_KB);
	c->limit_bytes = nonneg(o, SMT_F_MEM_LIMIT);
	c->limit_cgroup = of && !strcmp(of, "cgroup");
	c->shm_size = nonneg(o, SMT_F_SHM_SIZE);
	c->shm_used = nonneg(o, SMT_F_SHM_USED);
	c->shm_min = nonneg(o, SMT_F_SHM_MIN);
	if (c->shm_used > c->shm_size)
		c->shm_used = c->shm_size;
}
