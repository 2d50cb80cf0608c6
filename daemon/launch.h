/*
 * launch.h - which launch a job asks for (smtd(8) Roles).  Pure: the options and
 * the job's files in, the launch and why out, the same on every host.
 */
#ifndef SMT_LAUNCH_H
#define SMT_LAUNCH_H

#include <stddef.h>

#include "jobconfig.h"
#include "options.h"

/*
 * How the job is launched (smtd(8) Roles), decided the same way on every host:
 * --launch KIND (SMTD_LAUNCH) when given; else a distribution smtd cannot
 * launch is a configuration error (the table in launch.c; an unknown
 * sagemaker_*_enabled key is not, see smt_launch_unknown_setting); else
 * sagemaker_mpi_enabled (or --mpi/--no-mpi) -> MPI;
 * sagemaker_distributed_dataparallel_enabled or sagemaker_pytorch_ddp_enabled
 * -> SMDDP (mpirun with smdataparallel.py's options and smddprun);
 * sagemaker_torch_distributed_enabled -> TORCHRUN (torchrun on every
 * distribution host); else STANDALONE.
 */
enum smt_launch {
	SMT_LAUNCH_STANDALONE,
	SMT_LAUNCH_MPI,
	SMT_LAUNCH_SMDDP,
	SMT_LAUNCH_TORCHRUN,
};

/*
 * The first sagemaker_*_enabled hyperparameter of C that smtd knows
 * neither as a distribution nor as a setting (the table in launch.c), or
 * NULL: the plan warns about it, and the job runs as if it were absent.
 */
const char *smt_launch_unknown_setting(const struct smt_jobconfig *c);

/* "standalone", "mpi", "smddp", "torchrun": the names of --launch and --dry-run. */
const char *smt_launch_name(enum smt_launch launch);

/*
 * The launch the options and C ask for, and why in REASON (a phrase for
 * the log and --dry-run).  0, or -EINVAL with one line in ERR when C
 * enables a distribution smtd does not launch.
 */
int smt_launch_choose(const struct smt_options *o, const struct smt_jobconfig *c,
		      enum smt_launch *launch, char *reason, size_t reasonlen, char *err,
		      size_t errlen);

#endif
