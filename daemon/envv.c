/* envv.c - lookups in an environment array. */
#include "config.h"

#include <string.h>

#include "envv.h"

const char *smt_env_get(char *const *envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}
