/*
 * pathsearch.h - find a program as execvp() would, without running it.
 *
 * The planning modules need to know whether a program is installed (mpirun
 * for the site's Open MPI parameters, the smddprun and smddpmprun wrappers,
 * torchrun) and spawn.c needs the same search before it forks; both use
 * this module, which only stat()s and access()es files: it starts nothing
 * and reads no global state but what it is given.
 */
#ifndef SMT_PATHSEARCH_H
#define SMT_PATHSEARCH_H

#include <stddef.h>

/* The search path used when ENVP has no PATH, as smtd always did. */
#define SMT_PATHSEARCH_DEFAULT "/usr/local/bin:/usr/bin:/bin"

/*
 * Look PROG up: a name with a '/' is taken as it is (relative to CWD when
 * CWD is given), any other name in each directory of PATH from ENVP (an
 * empty element is the current directory), the first executable regular
 * file winning.  Returns 0 and, when OUT is given, the path found in OUT;
 * -ENOENT when there is none; -EACCES when one exists but none can be
 * executed; -ENAMETOOLONG when the path does not fit in OUT.
 */
int smt_path_find(const char *prog, char *const *envp, const char *cwd, char *out,
		  size_t outlen);

#endif
