/*
 * jsonrender.c - a JSON value serialized a step at a time (jsonrender.h).
 *
 * The value is walked with an explicit stack: the root and the containers
 * near it, and any large container, are descended into; smaller values are
 * written whole with json_dumps.  A value only this answer holds (its
 * reference count is 1 all the way up) is replaced by null once written,
 * which frees it.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "jsonrender.h"

/* Descends at most this deep; deeper containers are written whole. */
#define RENDER_DEPTH 8

struct smt_jsonrender {
	json_t *root;
	struct frame {
		json_t *v;       /* an array or an object */
		size_t index;    /* array: the next element */
		void *iter;      /* object: the next member */
		int started;     /* something written inside already */
		int owned;       /* only this answer holds it: written values may go */
	} stack[RENDER_DEPTH];
	int depth;
	struct smt_dynbuf text;
};

static int dump(struct smt_jsonrender *r, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = smt_dynbuf_addstr(&r->text, text);
	free(text);
	return rc;
}

/* Walk into V: the root, a container near it, and any large one. */
static int descends(const struct smt_jsonrender *r, json_t *v)
{
	size_t n = json_is_array(v) ? json_array_size(v) :
		   json_is_object(v) ? json_object_size(v) : 0;

	if (!json_is_array(v) && !json_is_object(v))
		return 0;
	return r->depth < RENDER_DEPTH && (r->depth < 2 || n > 16);
}

static int push(struct smt_jsonrender *r, json_t *v)
{
	/* A value the daemon keeps a reference to elsewhere is left whole. */
	int owned = v->refcount == 1 && (r->depth == 0 || r->stack[r->depth - 1].owned);
	struct frame *f = &r->stack[r->depth++];

	f->owned = owned;
	f->v = v;
	f->index = 0;
	f->iter = json_is_object(v) ? json_object_iter(v) : NULL;
	f->started = 0;
	return smt_dynbuf_add(&r->text, json_is_array(v) ? "[" : "{", 1);
}

int smt_jsonrender_new(json_t *v, struct smt_jsonrender **out)
{
	struct smt_jsonrender *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r || (!json_is_array(v) && !json_is_object(v))) {
		free(r);
		json_decref(v);
		return r ? -EINVAL : -ENOMEM;
	}
	smt_dynbuf_init(&r->text, SIZE_MAX / 2);
	r->root = v;
	if (push(r, v) < 0) {
		smt_jsonrender_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void smt_jsonrender_free(struct smt_jsonrender *r)
{
	if (!r)
		return;
	json_decref(r->root);
	smt_dynbuf_free(&r->text);
	free(r);
}

/* The next member of the innermost container: its key written, *CHILD set;
 * 1 when that container was closed instead. */
static int next_member(struct smt_jsonrender *r, struct frame *f, json_t **child)
{
	int rc = 0;

	if (json_is_array(f->v)) {
		if (f->index == json_array_size(f->v)) {
			r->depth--;
			return smt_dynbuf_add(&r->text, "]", 1) < 0 ? -ENOMEM : 1;
		}
		if (f->started)
			rc = smt_dynbuf_add(&r->text, ",", 1);
		*child = json_array_get(f->v, f->index);
		return rc;
	}
	if (!f->iter) {
		r->depth--;
		return smt_dynbuf_add(&r->text, "}", 1) < 0 ? -ENOMEM : 1;
	}
	json_t *key = json_string(json_object_iter_key(f->iter));
	if (!key)
		return -ENOMEM;
	if (f->started)
		rc = smt_dynbuf_add(&r->text, ",", 1);
	if (rc == 0)
		rc = dump(r, key);
	json_decref(key);
	if (rc == 0)
		rc = smt_dynbuf_add(&r->text, ":", 1);
	*child = json_object_iter_value(f->iter);
	return rc;
}

/* Past the member just written or descended into; written, its memory
 * goes now, not at the end, when only this answer holds it. */
static void advance(struct frame *f, int written)
{
	if (json_is_array(f->v)) {
		if (written && f->owned)
			json_array_set_new(f->v, f->index, json_null());
		f->index++;
	} else {
		void *next = json_object_iter_next(f->v, f->iter);
		if (written && f->owned)
			json_object_iter_set_new(f->v, f->iter, json_null());
		f->iter = next;
	}
}

int smt_jsonrender_step(struct smt_jsonrender *r)
{
	int budget = SMT_JSONRENDER_STEP, rc = 0;

	while (r->depth > 0 && budget-- > 0) {
		struct frame *f = &r->stack[r->depth - 1];
		json_t *child = NULL;

		rc = next_member(r, f, &child);
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (rc < 0)
			return -ENOMEM;
		f->started = 1;
		if (descends(r, child)) {
			/* The child stays in its parent until the end. */
			advance(f, 0);
			rc = push(r, child);
		} else {
			rc = dump(r, child);
			advance(f, 1);
		}
		if (rc < 0)
			return -ENOMEM;
	}
	return r->depth == 0;
}

const char *smt_jsonrender_text(const struct smt_jsonrender *r, size_t *len)
{
	*len = smt_dynbuf_len(&r->text);
	return smt_dynbuf_ptr(&r->text);
}
