/* testutil.c - checks several unit tests make (testutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "textesc.h"
#include "testutil.h"

static int b64val(char c)
{
	const char *set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = strchr(set, c);

	return c && p ? (int)(p - set) : -1;
}

size_t smt_test_b64decode(const char *s, size_t n, unsigned char *out)
{
	size_t o = 0;

	assert_int_equal(n % 4, 0);
	for (size_t i = 0; i < n; i += 4) {
		int a = b64val(s[i]), b = b64val(s[i + 1]);
		int c = s[i + 2] == '=' ? -2 : b64val(s[i + 2]);
		int d = s[i + 3] == '=' ? -2 : b64val(s[i + 3]);

		assert_true(a >= 0 && b >= 0 && c != -1 && d != -1);
		assert_true(c != -2 || d == -2);
		assert_true((c != -2 && d != -2) || i + 4 == n);
		out[o++] = (unsigned char)(a << 2 | b >> 4);
		if (c >= 0)
			out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
		if (d >= 0)
			out[o++] = (unsigned char)((c & 3) << 6 | d);
	}
	return o;
}

int smt_test_valid_utf8(const char *s, size_t n, int controls)
{
	for (size_t i = 0; i < n;) {
		size_t k;

		if (!controls && (unsigned char)s[i] < 0x20)
			return 0;
		k = (unsigned char)s[i] < 0x80 ? 1 : smt_utf8_len((const unsigned char *)s + i, n - i);
		if (k == 0)
			return 0;
		i += k;
	}
	return 1;
}
