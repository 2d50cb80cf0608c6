/*
 * testutil.h - checks several unit tests make on smtd's output: base64
 * decoded strictly, UTF-8 validated.  A failed decode fails the test.
 */
#ifndef SMT_TESTUTIL_H
#define SMT_TESTUTIL_H

#include <stddef.h>

/* Standard, padded base64 of N bytes at S (N a multiple of 4, '=' only at
 * the end) into OUT; returns the bytes written. */
size_t smt_test_b64decode(const char *s, size_t n, unsigned char *out);

/* Whether the N bytes at S are valid UTF-8, and, unless CONTROLS, hold no
 * control byte (below 0x20). */
int smt_test_valid_utf8(const char *s, size_t n, int controls);

#endif
