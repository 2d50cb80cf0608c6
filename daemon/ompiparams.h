/*
 * ompiparams.h - the value Open MPI itself would give an MCA parameter
 * that is not on mpirun's command line.
 *
 * smtd(8) The mpirun command line puts `-mca btl ^openib` on the command line, which outranks
 * every other source: on a site whose Open MPI configuration excludes
 * more (Debian excludes uct and ofi; ofi alone adds 1.4 s to every job
 * start here) it would silently re-enable what the site disabled.  smtd
 * reads the site's value first and keeps its choices (mpiargv.h).
 *
 * Open MPI's order, highest first: OMPI_MCA_<NAME> in the environment,
 * then the parameter files in order - those of OMPI_MCA_mca_base_param_files
 * (colon-separated) when it is set, else $HOME/.openmpi/mca-params.conf and
 * the installation's openmpi-mca-params.conf (PREFIX/etc/ next to
 * PREFIX/bin/mpirun; /etc/openmpi/ for PREFIX /usr, as Debian installs it).
 */
#ifndef SMT_OMPIPARAMS_H
#define SMT_OMPIPARAMS_H

#include <stddef.h>

/*
 * Look NAME up for the mpirun at MPIRUN_PATH (the path found on PATH; may
 * be NULL: no installation file) with the environment ENVP.  Returns 1 and
 * the value in OUT, 0 when nothing sets it, or -ENAMETOOLONG when the value
 * does not fit.  Unreadable files are skipped, as Open MPI skips them.
 */
int smt_ompi_param(const char *name, char *const *envp, const char *mpirun_path, char *out,
		   size_t outlen);

/* NAME in one parameter file ("name = value" lines, # comments): 1, 0 or
 * -errno as above (-ENOENT and the like when the file cannot be read). */
int smt_ompi_param_in_file(const char *file, const char *name, char *out, size_t outlen);

#endif
