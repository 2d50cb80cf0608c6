/*
 * errline.h - which line of a rank's output says what went wrong.
 *
 * The failure file quotes one line of the failing rank (smtd(8) OUTPUT): a Python
 * exception after a traceback, else the first line that surely is an error
 * ("terminate called", "Segmentation fault", "CUDA error", ...), else one
 * that may be ("error" in it), else - for a program that exited with a
 * code - its last line.  Pure functions.
 */
#ifndef SMT_ERRLINE_H
#define SMT_ERRLINE_H

#include <stddef.h>

#include "ring.h"

/* How much of the line the summary quotes. */
#define SMT_ERRLINE_MAX 400

/* 0 not an error, 1 maybe ("error" in it), 2 surely. */
int smt_errline_score(const char *line, size_t len);

/*
 * The error line of a rank into OUT (SMT_ERRLINE_MAX + 1 bytes, clean one-
 * line UTF-8; "" when none): from its stderr TAIL (may be NULL) or TAIL_V
 * (NULL-terminated lines, may be NULL) and FIRST, the first strong line
 * seen (may be NULL).  LAST_LINE allows the last line when nothing looks
 * like an error.
 */
void smt_errline_pick(const struct smt_ring *tail, char *const *tail_v, const char *first,
		      int last_line, char *out);

#endif
