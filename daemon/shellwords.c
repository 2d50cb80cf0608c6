/* shellwords.c - POSIX shell word splitting, no evaluation (see shellwords.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "shellwords.h"
#include "strv.h"

/* The word being read: STARTED once a quote made it a word, even empty. */
struct word {
	struct smt_dynbuf text;
	int started;
};

static int put(struct word *w, char c)
{
	w->started = 1;
	return smt_dynbuf_add(&w->text, &c, 1) < 0 ? -ENOMEM : 0;
}

static int push_word(struct smt_strvbuf *words, struct word *w)
{
	size_t len;
	char *text = smt_dynbuf_take(&w->text, &len);

	w->started = 0;
	return smt_strvbuf_take(words, text ? text : strdup(""));
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/*
 * TEXT[I] must close the KIND quote opened at START.  A quoted part, even
 * an empty one, makes a word, so that a line continuation after it does
 * not drop the word.
 */
static int close_quote(const char *text, size_t i, size_t start, const char *kind,
		       struct word *w, char *err, size_t errlen)
{
	if (!text[i]) {
		snprintf(err, errlen, "unbalanced %s quote at byte %zu", kind, start + 1);
		return -EINVAL;
	}
	w->started = 1;
	return 0;
}

int smt_shellwords_split(const char *text, char ***words, size_t *count, char *err,
			 size_t errlen)
{
	struct word b = { 0 };
	struct smt_strvbuf out = { 0 };
	size_t i = 0, start;
	int in_word = 0, rc = 0;

	*words = NULL;
	*count = 0;
	smt_dynbuf_init(&b.text, SIZE_MAX / 2);
	rc = -ENOMEM;
	out.v = calloc(1, sizeof(*out.v));
	if (!out.v)
		goto fail;
	out.cap = 1;
	while (text[i]) {
		char c = text[i];

		if (is_blank(c)) {
			if (in_word && (rc = push_word(&out, &b)) < 0)
				goto fail;
			in_word = 0;
			i++;
			continue;
		}
		in_word = 1;
		if (c == '\'') {
			start = i++;
			while (text[i] && text[i] != '\'')
				if ((rc = put(&b, text[i++])) < 0)
					goto fail;
			if ((rc = close_quote(text, i, start, "single", &b, err, errlen)) < 0)
				goto fail;
			i++;
		} else if (c == '"') {
			start = i++;
			while (text[i] && text[i] != '"') {
				if (text[i] == '\\' && text[i + 1] &&
				    strchr("$`\"\\\n", text[i + 1])) {
					i++;
					if (text[i] == '\n') {
						i++;
						continue;
					}
				}
				if ((rc = put(&b, text[i++])) < 0)
					goto fail;
			}
			if ((rc = close_quote(text, i, start, "double", &b, err, errlen)) < 0)
				goto fail;
			i++;
		} else if (c == '\\') {
			if (!text[i + 1]) {
				snprintf(err, errlen, "trailing backslash at byte %zu", i + 1);
				rc = -EINVAL;
				goto fail;
			}
			if (text[i + 1] == '\n') {
				/* A line continuation alone does not start a word. */
				if (!b.started)
					in_word = 0;
				i += 2;
				continue;
			}
			if ((rc = put(&b, text[i + 1])) < 0)
				goto fail;
			i += 2;
		} else {
			if ((rc = put(&b, c)) < 0)
				goto fail;
			i++;
		}
	}
	if (in_word && (rc = push_word(&out, &b)) < 0)
		goto fail;
	*words = out.v;
	*count = out.n;
	return 0;
fail:
	smt_dynbuf_free(&b.text);
	smt_strv_free(out.v);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* Bytes a shell never treats specially, in any position of a word. */
static int plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("/._,:+@%-", c) || c >= 0x80;
}

int smt_shellwords_quote(const char *word, char **out, char *bad)
{
	struct word b = { 0 };
	size_t len = strlen(word), n;
	int rc = 0;

	*out = NULL;
	smt_dynbuf_init(&b.text, SIZE_MAX / 2);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)word[i];

		if (c < 0x20 || c == 0x7f || strchr("$`\"\\", c)) {
			if (bad)
				*bad = (char)c;
			smt_dynbuf_free(&b.text);
			return -EINVAL;
		}
		if (!plain_byte(c) || (i == 0 && strcmp(word, "orted") == 0))
			rc |= put(&b, '\\');
		rc |= put(&b, (char)c);
	}
	/* '' keeps an escaped space at the end away from the next separator,
	 * and makes the empty word a word. */
	if (len == 0 || word[len - 1] == ' ') {
		rc |= put(&b, '\'');
		rc |= put(&b, '\'');
	}
	if (rc) {
		smt_dynbuf_free(&b.text);
		return -ENOMEM;
	}
	*out = smt_dynbuf_take(&b.text, &n);
	return *out ? 0 : -ENOMEM;
}
