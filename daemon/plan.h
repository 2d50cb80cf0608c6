/*
 * plan.h - what this host will do, worked out from the options and the
 * SageMaker-style configuration files (smtd-config(5); smtd(8) Roles, The rank command, The mpirun
 * command line, ENVIRONMENT, torchrun).
 *
 * smt_plan_build reads ROOT/input/config/{resourceconfig,hyperparameters,
 * inputdataconfig}.json (jobconfig.c), validates them and decides the
 * launch, the role, the leader, the distribution hosts, processes per
 * host, the rank command, what this host executes (the mpirun argv,
 * mpiargv.c, or torchrun's) and the rank environment (smenv.c).  It
 * starts nothing and writes nothing; it reads files and looks programs up
 * on PATH (pathsearch.h), nothing else.  On a configuration error it
 * returns -EINVAL with one line in ERR naming the file (or the option),
 * the field, the problem and what to do, and the caller exits 2.
 *
 * Every rank is started through smtd's rank launcher,
 * `SMTCTL [--socket SOCKET] rank [--tty] -- PROGRAM...` (smt_plan_launcher_argv),
 * placed in front of the rank command and of any wrapper (smddprun,
 * smddpmprun) and, under torchrun, after torchrun's own options through
 * --no_python.  It runs on the rank's own host, as the rank's first
 * process: it registers the rank with that host's smtd before the program
 * runs and hands it the rank's stdout and stderr, so that smtd frames
 * every rank's lines itself (mpirun's --xml crashes on non-ASCII output,
 * --tag-output interleaves ranks within a line) and knows every rank's
 * PID on every host, whichever launcher (mpirun, torchrun) started it
 * (smtd(8) OUTPUT).  A standalone host runs the rank command itself, as its own
 * child, without the launcher.
 */
#ifndef SMT_PLAN_H
#define SMT_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "launch.h"
#include "options.h"
#include "smt_proto.h"

struct smt_plan;


int smt_plan_build(const struct smt_options *opts, char **envp, struct smt_plan **out,
		   char *err, size_t errlen);
void smt_plan_free(struct smt_plan *plan);

/* The options the plan was built from (timeouts, paths, log format). */
const struct smt_options *smt_plan_options(const struct smt_plan *plan);

enum smt_launch smt_plan_launch(const struct smt_plan *plan);
/* Why, in one short phrase: "sagemaker_torch_distributed_enabled is true in
 * hyperparameters.json", "--launch mpi (or SMTD_LAUNCH)", ... */
const char *smt_plan_launch_reason(const struct smt_plan *plan);

/*
 * The role: with MPI and SMDDP the leader runs mpirun and the other
 * distribution hosts are workers, whose ranks the leader's mpirun starts
 * through orted; with TORCHRUN the leader is the first distribution host
 * and the others are workers too, but every one of them runs its own
 * torchrun.  A host outside the distribution hosts, and every host of a
 * STANDALONE launch, is standalone.
 */
enum smt_role smt_plan_role(const struct smt_plan *plan);
/* The program that starts this host's ranks, as messages name it:
 * "mpirun" (orted on a worker), "torchrun", or NULL where smtd runs the
 * program itself (a standalone host), and must then do for it what the
 * rank launcher does for a rank (line-buffered stdout). */
const char *smt_plan_launcher_name(const struct smt_plan *plan);
const char *smt_plan_root(const struct smt_plan *plan);        /* "/opt/ml" */
const char *smt_plan_current_host(const struct smt_plan *plan);
const char *smt_plan_leader(const struct smt_plan *plan);      /* first distribution host */

/* All hosts of resourceconfig.json, in file order. */
size_t smt_plan_host_count(const struct smt_plan *plan);
const char *smt_plan_host(const struct smt_plan *plan, size_t i);
/* The digest of the job's host list (smt_digest_text): a worker's brief status. */
const char *smt_plan_hosts_digest(const struct smt_plan *plan);
/* The distribution hosts: those that run ranks (leader first). */
size_t smt_plan_dist_host_count(const struct smt_plan *plan);
const char *smt_plan_dist_host(const struct smt_plan *plan, size_t i);

/* Ranks per host (default: the GPUs, else the Neuron cores, else 1) and in all. */
long smt_plan_processes_per_host(const struct smt_plan *plan);
long smt_plan_num_processes(const struct smt_plan *plan);

/*
 * What this host executes, NULL-terminated; argv[0] is looked up in PATH
 * by the caller:
 *   MPI, SMDDP  leader: the mpirun argv; worker: NULL (the leader's mpirun
 *               starts orted here); standalone: the rank command.
 *   TORCHRUN    leader and worker: this host's torchrun argv
 *               ([neuron_parallel_compile] torchrun --nnodes N
 *               --nproc_per_node P [--master_addr LEADER --master_port 7777
 *               --node_rank K] --no_python LAUNCHER... RANK COMMAND...);
 *               standalone: the rank command.
 *   STANDALONE  the rank command.
 */
char *const *smt_plan_argv(const struct smt_plan *plan);
/*
 * The rank command alone (what each rank runs, without launcher or
 * wrapper): `python3 -m mpi4py PROGRAM ARGS` under MPI and SMDDP,
 * `python3 -u PROGRAM ARGS` under torchrun, `python3 PROGRAM ARGS` on a
 * standalone host, a program that is not .py with ARGS, or the COMMAND
 * given after --.
 */
char *const *smt_plan_rank_argv(const struct smt_plan *plan);
/* The rank launcher's words, `SMTCTL [--socket SOCKET] rank [--tty] --`,
 * whatever the role (--socket only when the socket is not
 * SMT_SOCKET_DEFAULT, --tty with --rank-stdout tty). */
char *const *smt_plan_launcher_argv(const struct smt_plan *plan);
/* The library that line-buffers C's stdout in a rank whose stdout is a
 * pipe (libsmtlinebuf.so in --preload's directory); its presence is not
 * checked here. */
const char *smt_plan_stdout_preload(const struct smt_plan *plan);
/* The mpirun argv whatever the role (NULL unless MPI or SMDDP), for reports. */
char *const *smt_plan_mpi_argv(const struct smt_plan *plan);
/* The names smt_plan_envp adds or overrides (SM_*, SMTD_RESOURCE_CONFIG,
 * and on torchrun's hosts its NCCL, EFA and PET_MONITOR_INTERVAL
 * variables), sorted. */
char *const *smt_plan_env_names(const struct smt_plan *plan);
/*
 * The complete environment of what this host launches, NULL-terminated:
 * the daemon's own environment plus the SM_* variables of smtd(8) ENVIRONMENT with
 * this host's values, and on a torchrun host NCCL_SOCKET_IFNAME,
 * NCCL_PROTO=simple and the EFA variables as the toolkit sets them
 * (smtd(8) torchrun), and PET_MONITOR_INTERVAL=0.1 unless the environment has it
 * (torchrun notices the end of its processes at once, plan.c).  On a worker this is what orted (and
 * so the local ranks) must get.
 */
char *const *smt_plan_envp(const struct smt_plan *plan);
/* Working directory of the launched command: the code directory. */
const char *smt_plan_workdir(const struct smt_plan *plan);
/* The entry point (sagemaker_program), NULL with a command after --. */
const char *smt_plan_program(const struct smt_plan *plan);
/* This host's instance type (current_instance_type, else its group's), or NULL. */
const char *smt_plan_instance_type(const struct smt_plan *plan);
/* The job's network interface (network_interface_name; default eth0). */
const char *smt_plan_iface(const struct smt_plan *plan);

/*
 * What the caller should log as warnings, NULL-terminated (never NULL;
 * usually empty): a wrapper or launcher the plan expected and did not
 * find on PATH.  --dry-run prints them too.
 */
char *const *smt_plan_warnings(const struct smt_plan *plan);

/*
 * Beyond 64 hosts the mpirun argv names a hostfile instead of --host.
 * Then, on the leader, this returns its path (DIR/hostfile where DIR is
 * the directory of the control socket) and sets *contents to what the
 * daemon must write there before launching ("HOST slots=N" lines);
 * otherwise NULL.
 */
const char *smt_plan_hostfile(const struct smt_plan *plan, const char **contents);

/*
 * --dry-run: print the plan (launch and why, role, leader, hosts, ranks,
 * the exact argv, the forwarded environment names, warnings) as text, or
 * with JSON as one JSON object on one line with at least launch,
 * launch_reason, role, leader, hosts, processes_per_host, num_processes,
 * argv.  Returns 0 or -errno.
 */
int smt_plan_print(const struct smt_plan *plan, FILE *out, int json);

#endif
