/*
 * resultfile.h - ROOT/output/success and ROOT/output/failure.
 *
 * SageMaker reads these two files to tell the job's outcome.  The failure
 * file is written once and never overwritten (the first reason is the one
 * that matters), atomically: to a temporary name in the same directory,
 * fsync'ed, then renamed, so a reader never sees half a reason.  The
 * directory is created when missing.
 */
#ifndef SMT_RESULTFILE_H
#define SMT_RESULTFILE_H

#include <stddef.h>

/* Write TEXT (LEN bytes) to ROOT/output/failure unless it exists.
 * Returns 0, -EEXIST when a failure file was already there, or -errno. */
int smt_resultfile_failure(const char *root, const char *text, size_t len);

/* Create an empty ROOT/output/success.  Returns 0 or -errno. */
int smt_resultfile_success(const char *root);

#endif
