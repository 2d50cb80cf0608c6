/*
 * textesc.h - bytes of unknown origin made safe for where they go: UTF-8
 * checked, JSON strings escaped, base64, one-line text for messages.
 *
 * Rank output is any bytes.  Text mode passes them through untouched; JSON
 * mode and every message smtd writes itself (failure summaries, logs) must
 * not carry a broken character, a control byte or a newline.  Pure
 * functions, no allocation unless said.
 */
#ifndef SMT_TEXTESC_H
#define SMT_TEXTESC_H

#include <stddef.h>

#include "dynbuf.h"

/* The length of the valid UTF-8 sequence at P (N > 0 bytes left), or 0 when
 * it is not one (overlong, surrogate, cut short or above U+10FFFF). */
size_t smt_utf8_len(const unsigned char *p, size_t n);

/* Where to cut P (N > MAX bytes) at or before MAX without splitting a UTF-8
 * character; MAX when the bytes there are no valid character anyway. */
size_t smt_utf8_cut(const char *p, size_t n, size_t max);

/* The most bytes smt_json_escape writes for N input bytes. */
#define SMT_JSON_ESCAPE_MAX(n) (6 * (n))

/* P as the inside of a JSON string into OUT (room for
 * SMT_JSON_ESCAPE_MAX(N)): invalid UTF-8 bytes become U+FFFD and set
 * *INVALID.  Returns the length written. */
size_t smt_json_escape(const char *p, size_t n, char *out, int *invalid);

/* The same, appended to B; 0 or the dynbuf error. */
int smt_json_escape_add(struct smt_dynbuf *b, const char *p, size_t n, int *invalid)
	__attribute__((warn_unused_result));

/* A valid UTF-8 copy of P (invalid bytes as U+FFFD, *INVALID set when
 * there was one; INVALID may be NULL), NUL-terminated, malloc'ed; its
 * length in *OUTLEN (may be NULL).  NULL when out of memory. */
char *smt_utf8_sanitize(const char *p, size_t n, size_t *outlen, int *invalid);

/* Standard base64 of P into OUT (room for SMT_BASE64_LEN(N)); its length. */
#define SMT_BASE64_LEN(n) (4 * (((n) + 2) / 3))
size_t smt_base64(const unsigned char *p, size_t n, char *out);

/*
 * Append SRC (N bytes) to DST (holding *LEN bytes, CAP bytes of room before
 * the terminating NUL) as clean one-line text: control bytes (newlines
 * included) become spaces, invalid UTF-8 bytes '?', and it stops before a
 * character that would not fit whole.  Returns nonzero when it stopped
 * short.
 */
int smt_text_clean(char *dst, size_t *len, size_t cap, const char *src, size_t n);

/*
 * A malloc'ed copy of S (N bytes, NUL-terminated) in which every control
 * byte but newline and tab - carriage return, escape, DEL included - is
 * written \xHH: text a process chose (a stack, a source line) keeps its
 * lines but cannot move a terminal's cursor or rewrite a line of a log or
 * of the failure file.  NULL when out of memory.
 */
char *smt_text_escape_controls(const char *s, size_t n);

/*
 * A message for a person, formatted into ERR (ERRLEN bytes) with every
 * control character that a file, a name or a variable brought into it
 * escaped (\n, \r, \t, \xHH): one line, always.  Cut at ERRLEN.
 */
void smt_errorf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
