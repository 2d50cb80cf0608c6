/*
 * test_dynbuf.c - the capped growable buffer: the cap is exact, a failed
 * add changes nothing, the contents are always NUL-terminated, consume and
 * take hand the right bytes over, and a buffer without a real cap (SIZE_MAX)
 * works like any other.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"

static void test_empty(void **state)
{
	struct smt_dynbuf b;
	size_t len = 99;

	(void)state;
	smt_dynbuf_init(&b, 10);
	assert_null(b.p);
	assert_int_equal(smt_dynbuf_len(&b), 0);
	assert_string_equal(smt_dynbuf_ptr(&b), "");
	assert_int_equal(smt_dynbuf_room(&b), 10);
	assert_null(smt_dynbuf_take(&b, &len));
	assert_int_equal(len, 0);
	/* Adding nothing still gives a terminated buffer. */
	assert_int_equal(smt_dynbuf_add(&b, "", 0), 0);
	assert_non_null(b.p);
	assert_int_equal(b.p[0], '\0');
	smt_dynbuf_free(&b);
	smt_dynbuf_free(&b);
}

/* Exactly CAP bytes fit; one more is refused and changes nothing. */
static void test_cap_exact(void **state)
{
	struct smt_dynbuf b;
	char big[1000];

	(void)state;
	memset(big, 'x', sizeof(big));
	smt_dynbuf_init(&b, 700);
	assert_int_equal(smt_dynbuf_add(&b, big, 699), 0);
	assert_int_equal(smt_dynbuf_room(&b), 1);
	assert_int_equal(smt_dynbuf_add(&b, "ab", 2), -ENOBUFS);
	assert_int_equal(smt_dynbuf_len(&b), 699);
	assert_int_equal(b.p[699], '\0');
	assert_int_equal(smt_dynbuf_addstr(&b, "y"), 0);
	assert_int_equal(smt_dynbuf_len(&b), 700);
	assert_int_equal(b.p[699], 'y');
	assert_int_equal(b.p[700], '\0');
	/* The allocation never passes the cap (and its NUL). */
	assert_true(b.alloc <= 701);
	assert_int_equal(smt_dynbuf_add(&b, "z", 1), -ENOBUFS);
	assert_int_equal(smt_dynbuf_addf(&b, "%d", 1), -ENOBUFS);
	assert_null(smt_dynbuf_reserve(&b, 1));
	assert_non_null(smt_dynbuf_reserve(&b, 0));
	assert_int_equal(smt_dynbuf_len(&b), 700);
	smt_dynbuf_free(&b);
}

static void test_addf(void **state)
{
	struct smt_dynbuf b;
	char want[2000];

	(void)state;
	smt_dynbuf_init(&b, 4096);
	assert_int_equal(smt_dynbuf_addf(&b, "%s=%d;", "a", 1), 0);
	/* Longer than the small buffer addf tries first. */
	memset(want, 'q', 1500);
	want[1500] = '\0';
	assert_int_equal(smt_dynbuf_addf(&b, "[%s]", want), 0);
	assert_int_equal(smt_dynbuf_len(&b), 4 + 1502);
	assert_memory_equal(b.p, "a=1;[", 5);
	assert_int_equal(b.p[4 + 1501], ']');
	assert_int_equal(b.p[4 + 1502], '\0');
	/* Too long for what is left: refused, unchanged. */
	assert_int_equal(smt_dynbuf_addf(&b, "%s%s", want, want), -ENOBUFS);
	assert_int_equal(smt_dynbuf_len(&b), 4 + 1502);
	assert_int_equal(b.p[4 + 1502], '\0');
	smt_dynbuf_free(&b);
}

static void test_reserve_commit(void **state)
{
	struct smt_dynbuf b;
	char *w;

	(void)state;
	smt_dynbuf_init(&b, 100);
	assert_int_equal(smt_dynbuf_addstr(&b, "head:"), 0);
	w = smt_dynbuf_reserve(&b, 50);
	assert_non_null(w);
	memcpy(w, "0123456789", 10);
	smt_dynbuf_commit(&b, 10);
	assert_string_equal(smt_dynbuf_ptr(&b), "head:0123456789");
	assert_null(smt_dynbuf_reserve(&b, 86));
	assert_non_null(smt_dynbuf_reserve(&b, 85));
	smt_dynbuf_free(&b);
}

static void test_consume(void **state)
{
	struct smt_dynbuf b;
	char big[5000];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	smt_dynbuf_init(&b, 1 << 20);
	assert_int_equal(smt_dynbuf_add(&b, big, sizeof(big)), 0);
	assert_true(b.alloc > 256);
	smt_dynbuf_consume(&b, 4990, 0);
	assert_int_equal(smt_dynbuf_len(&b), 10);
	assert_memory_equal(b.p, big + 4990, 10);
	assert_int_equal(b.p[10], '\0');
	/* Shrinking gives back what a small remainder does not need. */
	smt_dynbuf_consume(&b, 3, 1);
	assert_int_equal(b.alloc, 256);
	assert_memory_equal(b.p, big + 4993, 7);
	assert_int_equal(b.p[7], '\0');
	smt_dynbuf_consume(&b, 100, 1);
	assert_int_equal(smt_dynbuf_len(&b), 0);
	assert_string_equal(smt_dynbuf_ptr(&b), "");
	/* Still usable, and the room is the whole cap again. */
	assert_int_equal(smt_dynbuf_room(&b), 1 << 20);
	assert_int_equal(smt_dynbuf_add(&b, "again", 5), 0);
	smt_dynbuf_reset(&b);
	assert_int_equal(smt_dynbuf_len(&b), 0);
	smt_dynbuf_free(&b);
}

static void test_take(void **state)
{
	struct smt_dynbuf b;
	size_t len;
	char *p;

	(void)state;
	smt_dynbuf_init(&b, 64);
	assert_int_equal(smt_dynbuf_add(&b, "a\0b", 3), 0);
	p = smt_dynbuf_take(&b, &len);
	assert_non_null(p);
	assert_int_equal(len, 3);
	assert_memory_equal(p, "a\0b", 4);
	free(p);
	assert_int_equal(smt_dynbuf_len(&b), 0);
	assert_null(b.p);
	assert_int_equal(smt_dynbuf_room(&b), 64);
	assert_int_equal(smt_dynbuf_add(&b, "x", 1), 0);
	smt_dynbuf_free(&b);
}

/* A buffer "without a cap" (SIZE_MAX) grows like any other. */
static void test_no_cap(void **state)
{
	struct smt_dynbuf b;
	char big[3000];

	(void)state;
	memset(big, 'n', sizeof(big));
	smt_dynbuf_init(&b, (size_t)-1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(smt_dynbuf_add(&b, big, sizeof(big)), 0);
	assert_int_equal(smt_dynbuf_len(&b), 30000);
	assert_true(b.alloc > 30000);
	assert_int_equal(b.p[29999], 'n');
	assert_int_equal(b.p[30000], '\0');
	smt_dynbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_cap_exact),
		cmocka_unit_test(test_addf),
		cmocka_unit_test(test_reserve_commit),
		cmocka_unit_test(test_consume),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_no_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
