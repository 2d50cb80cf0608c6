/* shellwords.c - POSIX shell word splitting, no evaluation (see shellwords.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shellwords.h"

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
			if (!text[i]) {
				snprintf(err, errlen, "unbalanced single quote at byte %zu", start + 1);
				rc = -EINVAL;
				goto fail;
			}
			/* An empty quoted word must still produce a word. */
			if (!b.data && (rc = buf_put(&b, 'x')) == 0)
				b.data[--b.len] = '\0';
			if (rc < 0)
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
			if (!text[i]) {
				snprintf(err, errlen, "unbalanced double quote at byte %zu", start + 1);
				rc = -EINVAL;
				goto fail;
			}
			if (!b.data && (rc = buf_put(&b, 'x')) == 0)
				b.data[--b.len] = '\0';
			if (rc < 0)
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
	smt_shellwords_free(out);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

void smt_shellwords_free(char **words)
{
	if (!words)
		return;
	for (char **w = words; *w; w++)
		free(*w);
	free(words);
}
