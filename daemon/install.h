/*
 * install.h - the code directory installed as the SageMaker training
 * toolkit 4.5.0 installs it (entry_point.install, modules.py), smtd(8) The rank command.
 *
 * The entry point's type decides, as the toolkit's _entry_point_type.get:
 * a program ending in .sh is a command (nothing installed); a code
 * directory with setup.py (or pyproject.toml, which the toolkit's later
 * releases also build) is a package, installed with `python3 -m pip
 * install . [-r requirements.txt]` and run as a module (`python3 -m
 * train`); a .py program with requirements.txt gets `python3 -m pip
 * install -r requirements.txt`.  pip runs in the code directory with the
 * job's environment, so python3 is the job's Python (the ranks').  Pure
 * apart from stat'ing the code directory.
 */
#ifndef SMT_INSTALL_H
#define SMT_INSTALL_H

/* Nonzero when PROGRAM in CODE_DIR is run as a module of a package. */
int smt_install_is_package(const char *code_dir, const char *program);

/*
 * pip's command for PROGRAM in CODE_DIR (NULL-terminated, static words),
 * or NULL when nothing is to be installed (no program: a command given
 * after --).
 */
const char *const *smt_install_argv(const char *code_dir, const char *program);

#endif
