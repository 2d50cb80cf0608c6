/*
 * resultfile.h - ROOT/output/success and ROOT/output/failure.
 *
 * SageMaker reads these two files to tell the job's outcome.  The failure
 * file is written once and never overwritten (the first reason is the one
 * that matters), atomically: written and fsync'ed under no name at all
 * (O_TMPFILE) or under an unpredictable temporary name, then linked into
 * place, so a reader never sees half a reason.
 *
 * smtd runs as root next to a job that may write ROOT/output, so nothing is
 * ever written outside that directory or through a symbolic link: the
 * directory is opened without following a link (it is created, mode 0755,
 * when missing), every name is used relative to it, a temporary file is
 * created only if it did not exist (O_EXCL, O_NOFOLLOW), and the final
 * name is made with link(), which never follows or replaces what is there.
 * A link in the way is logged here, with what to do, and the result is not
 * written (-ELOOP); the caller still reports the result on stderr and exits
 * with the code the result calls for.
 */
#ifndef SMT_RESULTFILE_H
#define SMT_RESULTFILE_H

#include <stddef.h>

/* Write TEXT (LEN bytes) to ROOT/output/failure unless it exists.
 * Returns 0, -EEXIST when a failure file was already there, -ELOOP when
 * ROOT/output or ROOT/output/failure is a symbolic link, or -errno. */
int smt_resultfile_failure(const char *root, const char *text, size_t len);

/* Create an empty ROOT/output/success (0 when one exists already).
 * Returns 0, -ELOOP when ROOT/output or ROOT/output/success is a symbolic
 * link, or -errno. */
int smt_resultfile_success(const char *root);

#endif
