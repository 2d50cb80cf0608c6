/*
 * envv.h - lookups in an environment array as execve() takes it, the one
 * every module that plans a child's environment works on (never the
 * daemon's own environ, which the caller passes when it means it).
 */
#ifndef SMT_ENVV_H
#define SMT_ENVV_H

/* The value of NAME in ENVP (may be NULL), or NULL when it is not set. */
const char *smt_env_get(char *const *envp, const char *name);

#endif
