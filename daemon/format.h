/*
 * format.h - how a rank's line looks on the leader's stdout (smtd(8) OUTPUT).
 *
 *   text:  [1,mpirank:R,HOST]<stdout>: LINE\n       (the toolkit's format)
 *   json:  {"time":"2024-05-01T12:00:00.123Z","rank":R,"host":"HOST",
 *           "stream":"stdout","line":"LINE"}\n
 *
 * Text passes the rank's bytes through untouched; a line in several records
 * is tagged once, by its first record, and ended by its last.  JSON gives
 * one object per record: "line" is valid UTF-8 (an invalid byte becomes
 * U+FFFD there and the exact bytes go to "line_b64"), and a record that
 * does not end its line says "partial":true, so that the bytes of a line's
 * objects, concatenated, are the line.
 */
#ifndef SMT_FORMAT_H
#define SMT_FORMAT_H

#include <stdint.h>

#include "dynbuf.h"
#include "record.h"

enum smt_format { SMT_FORMAT_TEXT = 0, SMT_FORMAT_JSON };

/* The time string of the last millisecond formatted, kept to save work. */
struct smt_format_clock {
	int64_t ms;
	char text[40];
};

/* Append R of HOST to B as FMT says; 0 or the dynbuf error (B unchanged). */
int smt_format_record(struct smt_dynbuf *b, enum smt_format fmt, const struct smt_record *r,
		      const char *host, struct smt_format_clock *clk);

/* The text tag "[1,mpirank:R,HOST]<STREAM>: " into OUT (at least 300
 * bytes); its length. */
size_t smt_format_tag(char *out, int rank, const char *host, enum smt_stream s);

/* The upper bound of what smt_format_record appends for N bytes. */
#define SMT_FORMAT_MAX(n) (SMT_JSON_ESCAPE_MAX(n) + 4 * ((n) + 2) / 3 + 1024)

#endif
