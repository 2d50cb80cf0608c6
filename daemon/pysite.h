/*
 * pysite.h - the job's Python (the python3 its PATH finds) and the torch
 * installed for it, found without running either.
 *
 * The PyTorch framework container sets SM_DLC_TORCH_VERSION from
 * torch.__version__ at run time; importing torch costs seconds, so this
 * reads the files instead: torch/version.py's __version__ (what
 * torch.__version__ is), else the version in the name of a
 * torch-VERSION.dist-info or .egg-info directory, in the directories that
 * Python's sys.path would hold for that python3: PYTHONPATH's, a virtual
 * environment's site-packages (and the base Python's when its pyvenv.cfg
 * includes them), the user's, and the base Python's (site-packages, and
 * Debian's dist-packages).  The base Python is where the path found on PATH
 * leads (python3 -> python3.11 in PREFIX/bin); a python3 that is a wrapper
 * script (pyenv's shims) has no site directories this can know, and then
 * no torch is found.
 *
 * Files are opened without following a link at their last component and
 * only read when regular: smtd (root) reads what the image installed.
 */
#ifndef SMT_PYSITE_H
#define SMT_PYSITE_H

#include <stddef.h>

/*
 * The version of torch installed for ENVP's python3 in VERSION, and the
 * file or directory it was read from in SOURCE.  0, or -ENOENT when no
 * python3 or no torch is found.
 */
int smt_pysite_torch_version(char *const *envp, char *version, size_t vlen, char *source,
			     size_t slen);

#endif
