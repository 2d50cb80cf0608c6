/* testdata.c - the captured files under tests/data/. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testdata.h"

char *smt_test_data(const char *name, size_t *len, int required)
{
	const char *top = getenv("top_srcdir");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/%s", top ? top : "..", name);
	f = fopen(path, "rbe");
	if (!f) {
		if (required)
			fail_msg("cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}
