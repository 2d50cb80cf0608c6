/*
 * strv.h - NULL-terminated string arrays as execve() takes them (argv,
 * envp): the one shape the planning modules pass around.  Lookups read
 * the array given, never the daemon's own environ unless the caller passes
 * it.
 */
#ifndef SMT_STRV_H
#define SMT_STRV_H

#include <stddef.h>

/* The value of NAME in ENVP (may be NULL), or NULL when it is not set. */
const char *smt_env_get(char *const *envp, const char *name);

/* The number of strings in V (may be NULL). */
size_t smt_strv_len(char *const *v);

/* Free every string of V and V itself; V may be NULL. */
void smt_strv_free(char **v);

/* An array being built: V is NULL while empty, else NULL-terminated; the
 * caller keeps V (or frees it with smt_strv_free). */
struct smt_strvbuf {
	char **v;
	size_t n, cap;
};

/* Append a copy of S, a formatted string, or S itself (taken; freed when
 * it cannot be added).  0 or -ENOMEM, the array as it was on failure. */
int smt_strvbuf_add(struct smt_strvbuf *b, const char *s) __attribute__((warn_unused_result));
int smt_strvbuf_addf(struct smt_strvbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), warn_unused_result));
int smt_strvbuf_take(struct smt_strvbuf *b, char *s) __attribute__((warn_unused_result));

/*
 * A digest of a list of strings, in order: FNV-1a (64 bits) over each
 * string and its terminating NUL, started from SMT_DIGEST_INIT.  It tells
 * two host lists apart without sending them; it is no defence against
 * someone choosing the lists (the channel is already trusted).
 */
#define SMT_DIGEST_INIT 0xcbf29ce484222325ULL
unsigned long long smt_digest_add(unsigned long long h, const char *s);
/* The digest of the N strings of V as text (16 hex digits) in OUT: what a
 * worker's brief status says of its host list and the leader expects. */
#define SMT_DIGEST_TEXT 17
void smt_digest_text(const char *const *v, size_t n, char out[SMT_DIGEST_TEXT]);

#endif
