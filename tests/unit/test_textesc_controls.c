/* test_textesc_controls.c - text a rank chose (a stack's names and source lines)
 * keeps its lines and tabs but no other control byte
 * (smt_text_escape_controls, daemon/textesc.h): a rank cannot clear a
 * terminal, move its cursor or overwrite a line of the log or of the
 * failure file through its stack. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "textesc.h"

/* N 0: IN's length. */
static void check(const char *in, size_t n, const char *want)
{
	char *out = smt_text_escape_controls(in, n ? n : strlen(in));

	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_controls(void **state)
{
	(void)state;
	check("  File \"x.py\", line 3 in f\n\tcall()\n", 0,
	      "  File \"x.py\", line 3 in f\n\tcall()\n");
	check("\x1b[2J\x1b[Hroot# ok\rFAKE\n", 0, "\\x1b[2J\\x1b[Hroot# ok\\x0dFAKE\n");
	check("a\0b\x7f" "c\x01", 6, "a\\x00b\\x7fc\\x01");
	/* UTF-8 passes as it is. */
	check("caf\xc3\xa9", 0, "caf\xc3\xa9");
	check("", 0, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_controls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
