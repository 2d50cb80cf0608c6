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

#endif
