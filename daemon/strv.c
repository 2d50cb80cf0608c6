/* strv.c - NULL-terminated string arrays (strv.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "vec.h"

const char *smt_env_get(char *const *envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

size_t smt_strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

void smt_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int smt_strvbuf_take(struct smt_strvbuf *b, char *s)
{
	if (!s)
		return -ENOMEM;
	/* Room for S and the NULL after it. */
	if (SMT_VEC_RESERVE(b->v, b->cap, b->n + 2) < 0) {
		free(s);
		return -ENOMEM;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
	return 0;
}

int smt_strvbuf_add(struct smt_strvbuf *b, const char *s)
{
	return smt_strvbuf_take(b, strdup(s));
}

int smt_strvbuf_addf(struct smt_strvbuf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	return smt_strvbuf_take(b, rc < 0 ? NULL : s);
}

unsigned long long smt_digest_add(unsigned long long h, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	do {
		h ^= *p;
		h *= 0x100000001b3ULL;
	} while (*p++);
	return h;
}

void smt_digest_text(const char *const *v, size_t n, char out[SMT_DIGEST_TEXT])
{
	unsigned long long h = SMT_DIGEST_INIT;

	for (size_t i = 0; i < n; i++)
		h = smt_digest_add(h, v[i] ? v[i] : "");
	snprintf(out, SMT_DIGEST_TEXT, "%016llx", h);
}
