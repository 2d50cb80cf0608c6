/*
 * plan.h - what this host will do, worked out from the options and the
 * SageMaker-style configuration files (SPEC §3-§6, §12).
 *
 * smt_plan_build reads ROOT/input/config/{resourceconfig,hyperparameters,
 * inputdataconfig}.json (config.c), validates them and decides the role,
 * the leader, the distribution hosts, processes per host, the rank command,
 * the mpirun argv (mpiargv.c) and the rank environment (smenv.c).  It starts
 * nothing and writes nothing.  On a configuration error it returns
 * -EINVAL with one line in ERR naming the file, the field, the problem and
 * what to do, and the caller exits 2.
 */
#ifndef SMT_PLAN_H
#define SMT_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "options.h"
#include "smt_proto.h"

struct smt_plan;

/* How the job is launched (SPEC §4). */
enum smt_launch {
	SMT_LAUNCH_STANDALONE = 0,
	SMT_LAUNCH_MPI,
	SMT_LAUNCH_SMDDP,
	SMT_LAUNCH_TORCHRUN,
};

int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen);
void smt_plan_free(struct smt_plan *plan);

/* The options the plan was built from (timeouts, paths, log format). */
const struct smt_options *smt_plan_options(const struct smt_plan *plan);

enum smt_role smt_plan_role(const struct smt_plan *plan);
enum smt_launch smt_plan_launch(const struct smt_plan *plan);
const char *smt_plan_root(const struct smt_plan *plan);        /* "/opt/ml" */
const char *smt_plan_current_host(const struct smt_plan *plan);
const char *smt_plan_leader(const struct smt_plan *plan);      /* first distribution host */

/* All hosts of resourceconfig.json, in file order. */
size_t smt_plan_host_count(const struct smt_plan *plan);
const char *smt_plan_host(const struct smt_plan *plan, size_t i);
/* The distribution hosts: those mpirun runs ranks on (leader first). */
size_t smt_plan_dist_host_count(const struct smt_plan *plan);
const char *smt_plan_dist_host(const struct smt_plan *plan, size_t i);

long smt_plan_processes_per_host(const struct smt_plan *plan);
long smt_plan_num_processes(const struct smt_plan *plan);

/*
 * What this host executes, NULL-terminated: the mpirun argv on the leader,
 * the rank command on a standalone host, NULL on a worker (the leader's
 * mpirun starts orted here).  argv[0] is looked up in PATH by the caller.
 */
char *const *smt_plan_argv(const struct smt_plan *plan);
/* The rank command alone (what each rank runs). */
char *const *smt_plan_rank_argv(const struct smt_plan *plan);
/* The mpirun argv whatever the role (NULL when MPI is off), for reports. */
char *const *smt_plan_mpi_argv(const struct smt_plan *plan);
/* The names smt_plan_envp adds or overrides (SM_*, SMTD_RESOURCE_CONFIG), sorted. */
char *const *smt_plan_env_names(const struct smt_plan *plan);
/* network_interface_name (default eth0). */
const char *smt_plan_interface(const struct smt_plan *plan);
/*
 * The complete environment of what this host launches, NULL-terminated:
 * the daemon's own environment plus the SM_* variables of SPEC §12 with
 * this host's values.  On a worker this is what orted (and so the local
 * ranks) must get.
 */
char *const *smt_plan_envp(const struct smt_plan *plan);
/* Working directory of the launched command: the code directory. */
const char *smt_plan_workdir(const struct smt_plan *plan);

/*
 * Beyond 64 hosts the argv names a hostfile instead of --host.  Then, on
 * the leader, this returns its path (DIR/hostfile where DIR is the
 * directory of the control socket) and sets *contents to what the daemon
 * must write there before launching ("HOST slots=N" lines); otherwise NULL.
 */
const char *smt_plan_hostfile(const struct smt_plan *plan, const char **contents);

/*
 * --dry-run: print the plan (role, leader, hosts, ranks, the exact argv,
 * the forwarded environment names) as text, or with JSON as one JSON object
 * on one line with at least role, leader, hosts, processes_per_host,
 * num_processes, argv.  Returns 0 or -errno.
 */
int smt_plan_print(const struct smt_plan *plan, FILE *out, int json);

#endif
