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

/*
 * WORD quoted for the shell of a remote host, as one word of a command
 * line that a POSIX shell parses: what mpirun's orte_launch_agent and
 * `ssh HOST COMMAND...` become on the workers.
 *
 * Measured with Open MPI 4.1.4's mpirun: it splits the launch agent on
 * spaces, drops the empty pieces and joins the rest with single spaces
 * into the command ssh runs (so a run of spaces, even inside quotes,
 * becomes one), and it also passes the whole value on to orted as
 * `-mca orte_launch_agent "VALUE"`, inside double quotes.  So every byte
 * outside [A-Za-z0-9/._,:+@%-] (and non-ASCII bytes, which no shell
 * interprets) is written with a backslash in front, never between quotes:
 * no two spaces end up next to each other, and a word ending with a space
 * is closed with ''.  $ ` " \ and control characters cannot be written so
 * that the double-quoted copy is inert too: they are refused.  A word
 * "orted" is escaped as well, since mpirun replaces that word with its own
 * orted's path when it runs with a prefix.
 *
 * Returns 0 and a new string in *OUT (free it), -ENOMEM, or -EINVAL with
 * the refused byte in *BAD.
 */
int smt_shellwords_quote(const char *word, char **out, char *bad);

#endif
