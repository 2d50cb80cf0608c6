/*
 * shellwords.h - split a string into words as a POSIX shell would, without
 * evaluating anything.
 *
 * Blanks (space, tab, newline) separate words; single quotes keep every
 * byte up to the next single quote; double quotes keep every byte except
 * that a backslash before $ ` " \ or newline escapes it; an unquoted
 * backslash keeps the next byte (a backslash-newline pair vanishes).
 * $, `, *, ? and the rest are ordinary bytes: no expansion, no globbing.
 * "" and '' give an empty word.  An unbalanced quote or a trailing lone
 * backslash is an error.
 */
#ifndef SMT_SHELLWORDS_H
#define SMT_SHELLWORDS_H

#include <stddef.h>

/*
 * Split TEXT into *WORDS (NULL-terminated, malloc'd, free with
 * smt_strv_free, strv.h) and *COUNT.  Returns 0, -ENOMEM, or -EINVAL with
 * the problem in ERR ("unbalanced single quote starting at byte 5").
 */
int smt_shellwords_split(const char *text, char ***words, size_t *count, char *err,
			 size_t errlen);

#endif
