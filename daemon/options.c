/* options.c - placeholder until the configuration module lands. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "options.h"

int smt_options_parse(struct smt_options *opts, int argc, char **argv, char **envp,
		      char *err, size_t errlen)
{
	memset(opts, 0, sizeof(*opts));
	(void)argc; (void)argv; (void)envp; (void)err; (void)errlen;
	return 0;
}

void smt_options_free(struct smt_options *opts)
{
	(void)opts;
}
