/* shellwords.c - POSIX shell word splitting, no evaluation (see shellwords.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shellwords.h"
#include "strv.h"

struct buf {
	char *data;
	size_t len, cap;
};

static int buf_put(struct buf *b, char c)
{
	if (b->len + 1 >= b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		char *p = realloc(b->data, cap);
		if (!p)
			return -ENOMEM;
		b->data = p;
		b->cap = cap;
	}
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
	return 0;
}

static int push_word(char ***words, size_t *n, size_t *cap, struct buf *b)
{
	char *w;

	if (*n + 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		char **p = realloc(*words, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*words = p;
		*cap = ncap;
	}
	w = b->data ? b->data : strdup("");
	if (!w)
		return -ENOMEM;
	(*words)[(*n)++] = w;
	(*words)[*n] = NULL;
	b->data = NULL;
	b->len = b->cap = 0;
	return 0;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/*
 * TEXT[I] must close the KIND quote opened at START.  A quoted part, even
 * an empty one, makes a word: B gets storage, so that a line continuation
 * after it does not drop the word.
 */
static int close_quote(const char *text, size_t i, size_t start, const char *kind,
		       struct buf *b, char *err, size_t errlen)
{
	int rc;

	if (!text[i]) {
		snprintf(err, errlen, "unbalanced %s quote at byte %zu", kind, start + 1);
		return -EINVAL;
	}
	if (!b->data) {
		if ((rc = buf_put(b, 'x')) < 0)
			return rc;
		b->data[--b->len] = '\0';
	}
	return 0;
}

int smt_shellwords_split(const char *text, char ***words, size_t *count, char *err,
			 size_t errlen)
{
	struct buf b = { 0 };
	char **out = NULL;
	size_t n = 0, cap = 0, i = 0, start;
	int in_word = 0, rc = 0;

	*words = NULL;
	*count = 0;
	rc = -ENOMEM;
	out = calloc(1, sizeof(*out));
	if (!out)
		goto fail;
	cap = 1;
	while (text[i]) {
		char c = text[i];

		if (is_blank(c)) {
			if (in_word && (rc = push_word(&out, &n, &cap, &b)) < 0)
				goto fail;
			in_word = 0;
			i++;
			continue;
		}
		in_word = 1;
		if (c == '\'') {
			start = i++;
			while (text[i] && text[i] != '\'')
				if ((rc = buf_put(&b, text[i++])) < 0)
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
				if ((rc = buf_put(&b, text[i++])) < 0)
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
				if (!b.data)
					in_word = 0;
				i += 2;
				continue;
			}
			if ((rc = buf_put(&b, text[i + 1])) < 0)
				goto fail;
			i += 2;
		} else {
			if ((rc = buf_put(&b, c)) < 0)
				goto fail;
			i++;
		}
	}
	if (in_word && (rc = push_word(&out, &n, &cap, &b)) < 0)
		goto fail;
	*words = out;
	*count = n;
	return 0;
fail:
	free(b.data);
	smt_strv_free(out);
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
	struct buf b = { 0 };
	size_t len = strlen(word);
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)word[i];

		if (c < 0x20 || c == 0x7f || strchr("$`\"\\", c)) {
			if (bad)
				*bad = (char)c;
			free(b.data);
			return -EINVAL;
		}
		if (!plain_byte(c) || (i == 0 && strcmp(word, "orted") == 0))
			rc |= buf_put(&b, '\\');
		rc |= buf_put(&b, (char)c);
	}
	/* '' keeps an escaped space at the end away from the next separator,
	 * and makes the empty word a word. */
	if (len == 0 || word[len - 1] == ' ') {
		rc |= buf_put(&b, '\'');
		rc |= buf_put(&b, '\'');
	}
	if (rc) {
		free(b.data);
		return -ENOMEM;
	}
	*out = b.data;
	return 0;
}
