/*
 * testdata.h - the captured files under tests/data/ for the unit tests
 * ($top_srcdir/tests/data, or ../tests/data when run by hand).
 */
#ifndef SMT_TESTDATA_H
#define SMT_TESTDATA_H

#include <stddef.h>

/* The bytes of tests/data/NAME, NUL-terminated (*LEN without the NUL;
 * free() it).  A file that cannot be read fails the test when REQUIRED,
 * and gives NULL otherwise. */
char *smt_test_data(const char *name, size_t *len, int required);

#endif
