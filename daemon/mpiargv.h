/*
 * mpiargv.h - the exact mpirun command line of smtd(8) The mpirun command line, for the MPI launch
 * and for SMDataParallel (the toolkit's smdataparallel.py option set).
 *
 * Built as an argv, never a string: nothing passes through a shell.  The
 * custom MPI options are split as POSIX shell words (shellwords.h); one
 * that repeats a default (-mca/--mca NAME, -x NAME[=V], -bind-to, -map-by)
 * replaces that default in place, one that repeats a flag of the defaults
 * (--oversubscribe, --tag-output, ...) is dropped, and --NCCL_DEBUG X (or
 * --NCCL_DEBUG=X) sets the level of -x NCCL_DEBUG and is not passed on.
 * What is added after the custom options (SMDataParallel's EFA and server
 * variables, the model-parallel NCCL variables) is left out when a custom
 * option already sets the same variable: the custom option wins, and no
 * variable is given twice.
 *
 * `-mca btl ^openib` keeps the site's own btl choice: openib is excluded
 * together with what the site excludes (^openib,uct,ofi on Debian), and a
 * site's list of components to use is kept without openib.
 *
 * The argv ends with the rank launcher's words, then the wrapper
 * (smddprun, or smddpmprun -i TYPE --allow-bypass), then the rank command:
 * the launcher runs on the rank's host and starts the rest (plan.h says
 * why).
 */
#ifndef SMT_MPIARGV_H
#define SMT_MPIARGV_H

#include <stddef.h>

enum smt_mpiargv_kind {
	SMT_MPIARGV_MPI,   /* mpi.py's MasterRunner, with toolkit 4.5.0's model parallel */
	SMT_MPIARGV_SMDDP, /* smdataparallel.py's SMDataParallelRunner */
};

struct smt_mpiargv_in {
	enum smt_mpiargv_kind kind;
	const char *mpirun;          /* argv[0] */
	char *const *hosts;          /* distribution hosts, NULL-terminated */
	long processes_per_host;
	long num_processes;
	const char *hostfile;        /* when set: --hostfile PATH instead of --host */
	const char *iface;
	const char *preload;         /* LD_PRELOAD for the ranks */
	const char *smtctl;          /* orted launch agent, used with > 1 host */
	const char *socket;          /* the workers' control socket; NULL: the default */
	const char *instance_type;   /* EFA variables, SAGEMAKER_INSTANCE_TYPE, smddpmprun -i;
					NULL: "local", as SM_CURRENT_INSTANCE_TYPE says */
	char *const *envp;           /* to see which AWS variables are set */
	char *const *forward;        /* extra -x NAME, in order (job-wide SM_*) */
	const char *custom;          /* custom MPI options; may be NULL */
	const char *site_btl;        /* btl as the site's Open MPI sets it
					(ompiparams.h); NULL when unset */
	char *const *launcher;       /* the rank launcher's words; NULL: none */
	int smddprun;                /* SMDDP: smddprun is installed, run the ranks under it */
	int modelparallel;           /* MPI: mp_parameters is set and not empty */
	int torch_major;             /* MPI: major version of SM_DLC_TORCH_VERSION, -1 unset */
	int smddpmprun;              /* MPI: ddp_dist_backend is auto and smddpmprun is installed */
	char *const *rank_argv;
};

/*
 * Build the argv (NULL-terminated, free with smt_strv_free, strv.h).  Returns 0,
 * -ENOMEM, -EINVAL with the shell-word problem of the custom options in
 * ERR (the caller names where they came from), or -EILSEQ with a message
 * when SMTCTL or SOCKET cannot be quoted for the workers' shell
 * (smt_shellwords_quote; the plan refuses such paths first).
 */
int smt_mpiargv_build(const struct smt_mpiargv_in *in, char ***argv, char *err, size_t errlen);

/* The AWS credential variables forwarded when set. */
extern const char *const smt_mpiargv_aws_names[];

/* Nonzero when TYPE is one of the toolkit's EFA instance types, and one of
 * those with RDMA reads too (SM_EFA_NCCL_INSTANCES, SM_EFA_RDMA_INSTANCES). */
int smt_mpiargv_efa_type(const char *type);
int smt_mpiargv_efa_rdma_type(const char *type);

#endif
