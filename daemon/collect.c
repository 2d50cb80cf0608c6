/* collect.c - the stacks of this host's ranks (collect.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "log.h"
#include "procfs.h"
#include "pystack.h"
#include "rankcred.h"
#include "safefile.h"
#include "smt_proto.h"
#include "stacks.h"
#include "textesc.h"

struct item {
	struct smt_collect *c;
	struct smt_collect_target t;
	char cwd[4096];
	struct smt_rankcred cred;   /* source files are read as the rank */
	int have_cred;
	struct smt_pystack *dump;   /* ABORT: its faulthandler dump */
	char *text;
	char *reason;
	const char *tool;
	int reading;                /* a live read is on its way */
	int frozen;                 /* ABORT: stopped, its SIGABRT still due */
	int done;
};

struct smt_collect {
	struct smt_collect_config cfg;
	smt_collect_cb cb;
	void *arg;
	struct item *items;
	size_t n, left;
	struct smt_stacks *stacks;
	uv_timer_t timer;
	unsigned reads;             /* live reads whose callback is still due */
	int finished;
	int cancelled;
	int timer_closed;
};

int smt_collect_is_python(pid_t pid)
{
	char path[64], exe[4096];
	ssize_t n;
	const char *base;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return strncmp(base, "python", 6) == 0;
}

/* TEXT with its frames' source lines, read as the rank (without them when
 * the rank's credentials could not be read: it had gone), its control
 * bytes escaped. */
static int add_source(struct item *it, const char *text, size_t len, char **out)
{
	char *with = NULL;
	int rc = 0;

	if (!it->have_cred)
		with = strndup(text, len);
	else
		rc = smt_pystack_add_source(text, len, it->cwd[0] ? it->cwd : NULL, &it->cred,
					    &with);
	/* Every byte here is the rank's choice (names, source lines): on its
	 * way to the failure file, the log and a terminal it stays text. */
	*out = with ? smt_text_escape_controls(with, strlen(with)) : NULL;
	free(with);
	return rc < 0 ? rc : *out ? 0 : -ENOMEM;
}

static void read_live(struct smt_collect *c, struct item *it);

/* The frozen ranks go on: with their SIGABRT first (ABORT), or without
 * it (a collection stopped during the freeze: the job's end kills them,
 * and a stopped process would hold its SIGTERM until then). */
static void thaw(struct smt_collect *c, int abort)
{
	for (size_t i = 0; i < c->n; i++) {
		struct item *it = &c->items[i];
		int rc = 0;

		if (!it->frozen)
			continue;
		it->frozen = 0;
		if (abort)
			rc = smt_pidfd_signal_main(it->t.pidfd, it->t.pid, SIGABRT);
		smt_pidfd_signal_main(it->t.pidfd, it->t.pid, SIGCONT);
		smt_debug("stacks: SIGABRT to rank %d (pid %d): %s", it->t.rank, (int)it->t.pid,
			  !abort ? "not sent" : rc < 0 ? strerror(-rc) : "sent");
		if (abort && rc < 0 && !it->done) {
			/* It ended meanwhile: its output's end says so. */
			smt_pystack_free(it->dump);
			it->dump = NULL;
			it->tool = NULL;
			read_live(c, it);
		}
	}
}

static void maybe_free(struct smt_collect *c)
{
	if (!c->cancelled || !c->timer_closed || c->reads)
		return;
	for (size_t i = 0; i < c->n; i++) {
		smt_pystack_free(c->items[i].dump);
		free(c->items[i].text);
		free(c->items[i].reason);
	}
	free(c->items);
	free(c);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct smt_collect *c = h->data;

	c->timer_closed = 1;
	maybe_free(c);
}

/* Never through a link: each directory is opened without following one,
 * and the file is written under a new name, then renamed into place. */
static int write_stack(struct smt_collect *c, int rank, const char *text, size_t len)
{
	const char *const parts[] = { "output", "data", "stacks", c->cfg.subdir };
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "rank-%d.txt", rank);
	rc = smt_safefile_replace(c->cfg.root, parts, c->cfg.subdir ? 4 : 3, name, text, len);
	if (rc < 0)
		smt_warn("cannot write %s/output/data/stacks/%s%srank-%d.txt: %s", c->cfg.root,
			 c->cfg.subdir ? c->cfg.subdir : "", c->cfg.subdir ? "/" : "", rank,
			 strerror(-rc));
	return rc;
}

static void finish(struct smt_collect *c)
{
	json_t *a = json_array();

	if (c->finished)
		return;
	c->finished = 1;
	uv_timer_stop(&c->timer);
	thaw(c, 0);
	for (size_t i = 0; i < c->n; i++) {
		struct item *it = &c->items[i];
		json_t *o = json_pack("{s:i, s:s, s:f}", SMT_F_RANK, it->t.rank, SMT_F_HOST,
				      c->cfg.host, SMT_F_QUIET, it->t.quiet_s);

		if (!it->done && !it->text) {
			/* What a dump in progress has is better than nothing. */
			size_t len;
			const char *part = it->dump ? smt_pystack_text(it->dump, &len) : NULL;
			if (part)
				add_source(it, part, len, &it->text);
			if (!it->text && !it->reason &&
			    asprintf(&it->reason, "timed out after %u ms", c->cfg.timeout_ms) < 0)
				it->reason = NULL;
		}
		if (it->text) {
			json_object_set_new(o, SMT_F_STACK, json_string(it->text));
			if (c->cfg.root && c->cfg.mode == SMT_COLLECT_ABORT)
				write_stack(c, it->t.rank, it->text, strlen(it->text));
		} else {
			json_object_set_new(o, SMT_F_STACK, json_null());
			json_object_set_new(o, SMT_F_REASON,
					    json_string(it->reason ? it->reason : "unknown"));
		}
		if (it->tool)
			json_object_set_new(o, SMT_F_TOOL, json_string(it->tool));
		json_array_append_new(a, o);
	}
	if (c->stacks) {
		smt_stacks_close(c->stacks);
		c->stacks = NULL;
	}
	c->cb(c->arg, a);
	json_decref(a);
}

static void item_done(struct item *it)
{
	if (it->done)
		return;
	it->done = 1;
	if (--it->c->left == 0)
		finish(it->c);
}

static void on_stack(void *arg, const struct smt_stack_result *res)
{
	struct item *it = arg;
	struct smt_collect *c = it->c;

	c->reads--;
	if (c->cancelled) {
		maybe_free(c);
		return;
	}
	if (c->finished || it->done)
		return;
	if (res->text) {
		/* Python frames of gdb's extension carry their source lines;
		 * faulthandler-like texts get them here. */
		if (add_source(it, res->text, res->len, &it->text) < 0)
			it->text = strndup(res->text, res->len);
		/* Why a Python rank shows only C frames (what to install), or
		 * that the text was cut: the last line, for the person reading. */
		if (it->text && res->note) {
			char *with = NULL;
			if (asprintf(&with, "%s%s[smtd: %s]\n", it->text,
				     it->text[0] && it->text[strlen(it->text) - 1] != '\n' ? "\n" :
											     "",
				     res->note) >= 0) {
				free(it->text);
				it->text = with;
			}
		}
	} else {
		it->reason = strdup(res->reason ? res->reason : "could not be read");
	}
	it->tool = res->tool;
	item_done(it);
}

static void on_timeout(uv_timer_t *t)
{
	finish(t->data);
}

static void on_thaw(uv_timer_t *t)
{
	struct smt_collect *c = t->data;

	thaw(c, 1);
	if (!c->finished)
		uv_timer_start(&c->timer, on_timeout, c->cfg.timeout_ms, 0);
}

static void read_live(struct smt_collect *c, struct item *it)
{
	if (!c->stacks) {
		struct smt_stacks_config sc = { .envp = c->cfg.envp };
		if (smt_stacks_new(c->cfg.loop, c->cfg.reaper, &sc, &c->stacks) < 0) {
			it->reason = strdup("out of memory");
			item_done(it);
			return;
		}
	}
	if (smt_stacks_read(c->stacks, it->t.pid, c->cfg.timeout_ms, on_stack, it) < 0) {
		it->reason = strdup("the stack reader could not start");
		item_done(it);
		return;
	}
	c->reads++;
	it->reading = 1;
}

int smt_collect_start(const struct smt_collect_config *cfg, const struct smt_collect_target *t,
		      size_t n, smt_collect_cb cb, void *arg, struct smt_collect **out)
{
	struct smt_collect *c = calloc(1, sizeof(*c));

	if (!c || !(c->items = calloc(n ? n : 1, sizeof(*c->items)))) {
		free(c);
		return -ENOMEM;
	}
	c->cfg = *cfg;
	c->cb = cb;
	c->arg = arg;
	c->n = c->left = n;
	uv_timer_init(cfg->loop, &c->timer);
	c->timer.data = c;
	*out = c;
	/* Every target is set up before any can finish. */
	c->left++;
	for (size_t i = 0; i < n; i++) {
		struct item *it = &c->items[i];
		char path[64];
		ssize_t k;

		it->c = c;
		it->t = t[i];
		snprintf(path, sizeof(path), "/proc/%d/cwd", (int)t[i].pid);
		k = t[i].pid > 0 ? readlink(path, it->cwd, sizeof(it->cwd) - 1) : -1;
		it->cwd[k > 0 ? k : 0] = '\0';
		it->have_cred = t[i].pid > 0 && smt_rankcred_of(NULL, t[i].pid, &it->cred) == 0;
		if (t[i].ended || t[i].pid <= 0) {
			it->reason =
				strdup(t[i].pid > 0 ? "the rank has ended" : "the rank never ran");
			item_done(it);
		} else if (cfg->mode == SMT_COLLECT_ABORT && t[i].faulthandler &&
			   smt_collect_is_python(t[i].pid) && smt_pystack_new(0, &it->dump) == 0) {
			/* It prints its own stacks as it dies. */
			int sig = cfg->freeze_ms ? SIGSTOP : SIGABRT;
			int rc = smt_pidfd_signal_main(t[i].pidfd, t[i].pid, sig);
			smt_debug("stacks: %s to rank %d (pid %d): %s",
				  sig == SIGSTOP ? "SIGSTOP" : "SIGABRT", t[i].rank, (int)t[i].pid,
				  rc < 0 ? strerror(-rc) : "sent");
			it->tool = "faulthandler";
			it->frozen = rc == 0 && sig == SIGSTOP;
			if (rc < 0) {
				smt_pystack_free(it->dump);
				it->dump = NULL;
				it->tool = NULL;
				read_live(c, it);
			}
		} else {
			read_live(c, it);
		}
	}
	if (--c->left == 0)
		finish(c);
	else if (cfg->mode == SMT_COLLECT_ABORT && cfg->freeze_ms)
		uv_timer_start(&c->timer, on_thaw, cfg->freeze_ms, 0);
	else
		uv_timer_start(&c->timer, on_timeout, cfg->timeout_ms, 0);
	return 0;
}

static struct item *item_of(struct smt_collect *c, int rank)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (c->items[i].t.rank == rank)
			return &c->items[i];
	return NULL;
}

void smt_collect_line(struct smt_collect *c, int rank, const char *line, size_t len)
{
	struct item *it = item_of(c, rank);

	if (it && it->dump && !it->done && !c->finished)
		smt_pystack_feed(it->dump, line, len);
}

void smt_collect_output_ended(struct smt_collect *c, int rank)
{
	struct item *it = item_of(c, rank);
	const char *text;
	size_t len;

	if (!it || !it->dump || it->done || c->finished)
		return;
	smt_debug("stacks: rank %d's output ended", rank);
	smt_pystack_end(it->dump);
	text = smt_pystack_text(it->dump, &len);
	if (text) {
		add_source(it, text, len, &it->text);
	} else {
		it->reason = strdup("no traceback on its stderr after SIGABRT (not a Python rank, "
				    "or faulthandler disabled)");
		it->tool = NULL;
	}
	item_done(it);
}

void smt_collect_cancel(struct smt_collect *c)
{
	if (!c)
		return;
	thaw(c, 0);
	c->cancelled = 1;
	c->finished = 1;
	if (c->stacks) {
		smt_stacks_close(c->stacks);
		c->stacks = NULL;
	}
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}
