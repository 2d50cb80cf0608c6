/* pyrender.c - JSON and str() as Python writes them (see pyrender.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyrender.h"

void smt_py_float(double v, char *out, size_t outlen)
{
	char digits[64];
	int p, exp;

	if (!isfinite(v)) {
		snprintf(out, outlen, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	/* Python's repr: the fewest significant digits that read back as V. */
	for (p = 1; p < 17; p++) {
		snprintf(digits, sizeof(digits), "%.*e", p - 1, v);
		if (strtod(digits, NULL) == v)
			break;
	}
	snprintf(digits, sizeof(digits), "%.*e", p - 1, v);
	exp = atoi(strchr(digits, 'e') + 1);
	if (exp < -4 || exp >= 16)
		snprintf(out, outlen, "%s", digits);
	else
		snprintf(out, outlen, "%.*f", p - 1 - exp > 1 ? p - 1 - exp : 1, v);
}

/* The next code point of valid UTF-8 (jansson's strings are), advancing *S. */
static unsigned long next_cp(const unsigned char **s)
{
	const unsigned char *p = *s;
	unsigned long cp;
	int more;

	if (p[0] < 0x80) {
		*s = p + 1;
		return p[0];
	}
	more = p[0] >= 0xf0 ? 3 : p[0] >= 0xe0 ? 2 : 1;
	cp = p[0] & (0x3f >> more);
	for (int i = 1; i <= more && p[i]; i++)
		cp = (cp << 6) | (p[i] & 0x3f);
	*s = p + 1 + more;
	return cp;
}

/* json.dumps(S, ensure_ascii=True): lower-case \u, surrogate pairs. */
static void json_string_out(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		unsigned long c = next_cp(&s);

		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			if (c >= 0x20 && c < 0x7f)
				fputc((int)c, f);
			else if (c < 0x10000)
				fprintf(f, "\\u%04lx", c);
			else
				fprintf(f, "\\u%04lx\\u%04lx", 0xd800 + ((c - 0x10000) >> 10),
					0xdc00 + ((c - 0x10000) & 0x3ff));
		}
	}
	fputc('"', f);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int json_out(FILE *f, json_t *v)
{
	char num[64];
	const char *key;
	const char **keys;
	json_t *item;
	size_t i, n = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		keys = calloc(json_object_size(v) + 1, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		json_object_foreach(v, key, item)
			keys[n++] = key;
		qsort(keys, n, sizeof(*keys), cmp_key);
		fputc('{', f);
		for (i = 0; i < n; i++) {
			if (i)
				fputc(',', f);
			json_string_out(f, keys[i]);
			fputc(':', f);
			if (json_out(f, json_object_get(v, keys[i])) < 0) {
				free(keys);
				return -ENOMEM;
			}
		}
		free(keys);
		fputc('}', f);
		return 0;
	case JSON_ARRAY:
		fputc('[', f);
		json_array_foreach(v, i, item) {
			if (i)
				fputc(',', f);
			if (json_out(f, item) < 0)
				return -ENOMEM;
		}
		fputc(']', f);
		return 0;
	case JSON_STRING: json_string_out(f, json_string_value(v)); return 0;
	case JSON_INTEGER: fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); return 0;
	case JSON_REAL:
		smt_py_float(json_real_value(v), num, sizeof(num));
		fputs(num, f);
		return 0;
	case JSON_TRUE: fputs("true", f); return 0;
	case JSON_FALSE: fputs("false", f); return 0;
	default: fputs("null", f); return 0;
	}
}

/*
 * Nonzero for a code point Python's str.isprintable() rejects, beyond
 * ASCII: C1 controls, no-break and other spaces, the format characters,
 * line and paragraph separators, private use and the noncharacters.
 * (Unassigned code points are not known here and are kept as they are.)
 */
static int py_unprintable(unsigned long c)
{
	static const unsigned long ranges[][2] = {
		{ 0x80, 0xa0 }, { 0xad, 0xad }, { 0x600, 0x605 }, { 0x61c, 0x61c },
		{ 0x6dd, 0x6dd }, { 0x70f, 0x70f }, { 0x1680, 0x1680 }, { 0x180e, 0x180e },
		{ 0x2000, 0x200f }, { 0x2028, 0x202f }, { 0x205f, 0x2064 }, { 0x2066, 0x206f },
		{ 0x3000, 0x3000 }, { 0xd800, 0xf8ff }, { 0xfeff, 0xfeff }, { 0xfff9, 0xfffb },
		{ 0xfffe, 0xffff }, { 0xf0000, 0x10ffff },
	};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (c >= ranges[i][0] && c <= ranges[i][1])
			return 1;
	return 0;
}

/* repr(S): single quotes unless S has ' and no ". */
static void repr_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	char q = strchr(str, '\'') && !strchr(str, '"') ? '"' : '\'';

	fputc(q, f);
	while (*s) {
		const unsigned char *start = s;
		unsigned long c = next_cp(&s);

		if (c == (unsigned long)q || c == '\\')
			fprintf(f, "\\%c", (int)c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0xff && py_unprintable(c)))
			fprintf(f, "\\x%02lx", c);
		else if (c > 0xff && py_unprintable(c))
			fprintf(f, c > 0xffff ? "\\U%08lx" : "\\u%04lx", c);
		else
			fwrite(start, 1, (size_t)(s - start), f);
	}
	fputc(q, f);
}

static int str_out(FILE *f, json_t *v, int nested)
{
	const char *key;
	json_t *item;
	size_t i = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		/* A dict keeps the order json.loads read its keys in. */
		fputc('{', f);
		json_object_foreach(v, key, item) {
			fputs(i++ ? ", " : "", f);
			repr_string(f, key);
			fputs(": ", f);
			if (str_out(f, item, 1) < 0)
				return -ENOMEM;
		}
		fputc('}', f);
		return 0;
	case JSON_ARRAY:
		fputc('[', f);
		json_array_foreach(v, i, item) {
			fputs(i ? ", " : "", f);
			if (str_out(f, item, 1) < 0)
				return -ENOMEM;
		}
		fputc(']', f);
		return 0;
	case JSON_STRING:
		if (nested)
			repr_string(f, json_string_value(v));
		else
			fputs(json_string_value(v), f);
		return 0;
	case JSON_TRUE: fputs("True", f); return 0;
	case JSON_FALSE: fputs("False", f); return 0;
	case JSON_NULL: fputs("None", f); return 0;
	default:
		return json_out(f, v);
	}
}

static char *render(json_t *v, int json)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	int rc;

	if (!f)
		return NULL;
	rc = json ? json_out(f, v) : str_out(f, v, 0);
	if (fclose(f) != 0 || rc < 0) {
		free(s);
		return NULL;
	}
	return s;
}

char *smt_py_json(json_t *v)
{
	return render(v, 1);
}

char *smt_py_str(json_t *v)
{
	return render(v, 0);
}
