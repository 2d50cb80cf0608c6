/*
 * jsonrender.h - a JSON value serialized a step at a time.
 *
 * A large answer (the status of a thousand hosts, 100,000 kept lines) is
 * written a few hundred values per step, the loop turning between steps,
 * and each value written is freed at once when nothing else holds it, so
 * that no answer holds the loop or doubles its memory for long.  The text
 * is the same as json_dumps(V, JSON_COMPACT | JSON_ENSURE_ASCII) gives.
 */
#ifndef SMT_JSONRENDER_H
#define SMT_JSONRENDER_H

#include <stddef.h>

#include <jansson.h>

struct smt_jsonrender;

/* Takes the reference to V, an array or an object.  0 or -ENOMEM (V is
 * released either way on failure). */
int smt_jsonrender_new(json_t *v, struct smt_jsonrender **out);
void smt_jsonrender_free(struct smt_jsonrender *r);

/* Serialize up to SMT_JSONRENDER_STEP more values: 1 when the text is
 * complete, 0 when more is to come, -ENOMEM. */
#define SMT_JSONRENDER_STEP 256
int smt_jsonrender_step(struct smt_jsonrender *r);

/* The text so far (complete once a step returned 1), NUL-terminated. */
const char *smt_jsonrender_text(const struct smt_jsonrender *r, size_t *len);

#endif
