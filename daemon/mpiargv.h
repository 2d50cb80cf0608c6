/*
 * mpiargv.h - the exact mpirun command line of SPEC §6.
 *
 * Built as an argv, never a string: nothing passes through a shell.  The
 * custom MPI options are split as POSIX shell words (shellwords.h); one
 * that repeats a default (-mca/--mca NAME, -x NAME[=V], -bind-to, -map-by)
 * replaces that default in place, and --NCCL_DEBUG X (or --NCCL_DEBUG=X)
 * sets the level of -x NCCL_DEBUG and is not passed on.
 *
 * `-mca btl ^openib` keeps the site's own btl choice: openib is excluded
 * together with what the site excludes (^openib,uct,ofi on Debian), and a
 * site's list of components to use is kept without openib.
 */
#ifndef SMT_MPIARGV_H
#define SMT_MPIARGV_H

#include <stddef.h>

struct smt_mpiargv_in {
	const char *mpirun;          /* argv[0] */
	char *const *hosts;          /* distribution hosts, NULL-terminated */
	long processes_per_host;
	long num_processes;
	const char *hostfile;        /* when set: --hostfile PATH instead of --host */
	const char *iface;
	const char *preload;         /* LD_PRELOAD for the ranks */
	const char *smtctl;          /* orted launch agent, used with > 1 host */
	const char *socket;          /* the workers' control socket; NULL: the default */
	const char *instance_type;   /* EFA variables; may be NULL */
	char *const *envp;           /* to see which AWS variables are set */
	char *const *forward;        /* extra -x NAME, in order (job-wide SM_*) */
	const char *custom;          /* custom MPI options; may be NULL */
	const char *site_btl;        /* btl as the site's Open MPI sets it
					(ompiparams.h); NULL when unset */
	char *const *launcher;       /* smtd's rank launcher, put in front of the rank
					command; NULL: none */
	char *const *rank_argv;
};

/*
 * Build the argv (NULL-terminated, free with smt_strv_free, strv.h).  Returns 0,
 * -ENOMEM, or -EINVAL with the shell-word problem of the custom options in
 * ERR (the caller names where they came from).
 */
int smt_mpiargv_build(const struct smt_mpiargv_in *in, char ***argv, char *err, size_t errlen);

/* The AWS credential variables forwarded when set. */
extern const char *const smt_mpiargv_aws_names[];

#endif
