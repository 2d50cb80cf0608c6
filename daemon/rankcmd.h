/*
 * rankcmd.h - what every rank runs (smtd(8) The rank command): the command after "--" as
 * it is, or the program (sagemaker_program) in the code directory, a .py
 * through python3 as the launch wants it, with the user hyperparameters as
 * "--key value" arguments, keys sorted.  Pure apart from stat'ing the code
 * directory.
 */
#ifndef SMT_RANKCMD_H
#define SMT_RANKCMD_H

#include "jobconfig.h"
#include "launch.h"
#include "options.h"

struct smt_rankcmd {
	char *code_dir;    /* where the program is and the ranks start */
	char *program;     /* sagemaker_program, or NULL with a command */
	char **user_args;  /* the hyperparameters as arguments */
	char **argv;       /* the rank command */
};

/*
 * Fill OUT (zeroed) for LAUNCH; DISTRIBUTED when this host is one of the
 * job's distribution hosts.  0, -ENOMEM, or -EINVAL with one line in ERR
 * (no program).  The fields are the caller's, filled or NULL, whatever the
 * result: the plan takes them over and frees them with itself (plan.c).
 */
int smt_rankcmd_build(const struct smt_options *o, const struct smt_jobconfig *c,
		      enum smt_launch launch, int distributed, struct smt_rankcmd *out, char *err,
		      size_t errlen);

#endif
