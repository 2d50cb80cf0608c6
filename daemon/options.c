/* options.c - TEMPORARY minimal parser until the configuration module lands. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

int smt_options_parse(struct smt_options *opts, int argc, char **argv, char **envp,
		      char *err, size_t errlen)
{
	(void)envp; (void)err; (void)errlen;
	memset(opts, 0, sizeof(*opts));
	opts->grace = 30;
	opts->mpi_enabled = -1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
			opts->root = argv[++i];
		else if (strcmp(argv[i], "--grace") == 0 && i + 1 < argc)
			opts->grace = atof(argv[++i]);
		else if (strcmp(argv[i], "--dry-run") == 0)
			opts->dry_run = 1;
		else if (strcmp(argv[i], "--") == 0) {
			opts->command = argv + i + 1;
			opts->command_argc = argc - i - 1;
			break;
		}
	}
	return 0;
}

void smt_options_free(struct smt_options *opts)
{
	(void)opts;
}
