/* plan.c - placeholder until the configuration module lands. */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "plan.h"

int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen)
{
	(void)opts; (void)envp; *out = NULL;
	snprintf(err, errlen, "not implemented");
	return -EINVAL;
}

void smt_plan_free(struct smt_plan *plan) { (void)plan; }
const char *smt_plan_current_host(const struct smt_plan *plan) { (void)plan; return NULL; }
int smt_plan_print(const struct smt_plan *plan, FILE *out, int json) { (void)plan; (void)out; (void)json; return 0; }
