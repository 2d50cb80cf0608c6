/* plan.c - TEMPORARY minimal plan until the configuration module lands. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"

extern char **environ;

struct smt_plan {
	const struct smt_options *opts;
};

int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen)
{
	(void)envp;
	*out = NULL;
	if (opts->command == NULL) {
		snprintf(err, errlen, "no command");
		return -EINVAL;
	}
	*out = calloc(1, sizeof(**out));
	(*out)->opts = opts;
	return 0;
}

void smt_plan_free(struct smt_plan *plan) { free(plan); }
const struct smt_options *smt_plan_options(const struct smt_plan *p) { return p->opts; }
enum smt_role smt_plan_role(const struct smt_plan *p) { (void)p; return SMT_ROLE_STANDALONE; }
const char *smt_plan_root(const struct smt_plan *p) { return p->opts->root ? p->opts->root : "/opt/ml"; }
const char *smt_plan_current_host(const struct smt_plan *p) { (void)p; return "algo-1"; }
size_t smt_plan_dist_host_count(const struct smt_plan *p) { (void)p; return 1; }
long smt_plan_num_processes(const struct smt_plan *p) { (void)p; return 1; }
char *const *smt_plan_argv(const struct smt_plan *p) { return p->opts->command; }
char *const *smt_plan_rank_argv(const struct smt_plan *p) { return p->opts->command; }
char *const *smt_plan_envp(const struct smt_plan *p) { (void)p; return environ; }
const char *smt_plan_workdir(const struct smt_plan *p) { (void)p; return NULL; }
int smt_plan_print(const struct smt_plan *plan, FILE *out, int json) { (void)plan; (void)out; (void)json; return 0; }
