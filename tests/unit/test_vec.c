/*
 * test_vec.c - growing arrays: the first reserve allocates, one-by-one
 * appends keep every element, new room comes zeroed, and a size that
 * would overflow is refused with the array left as it was.
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

#include "vec.h"

struct pair {
	int a;
	long b;
};

static void test_from_zero(void **state)
{
	struct pair *v = NULL;
	size_t cap = 0;

	(void)state;
	/* Nothing needed, nothing allocated. */
	assert_int_equal(SMT_VEC_RESERVE(v, cap, 0), 0);
	assert_null(v);
	assert_int_equal(cap, 0);
	assert_int_equal(SMT_VEC_RESERVE(v, cap, 1), 0);
	assert_non_null(v);
	assert_true(cap >= 1);
	assert_int_equal(v[0].a, 0);
	assert_int_equal(v[0].b, 0);
	free(v);
}

/* A thousand appends, one at a time: every value stays, the capacity only
 * grows, and it reallocates a logarithmic number of times. */
static void test_one_by_one(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0, prev = 0;
	int grew = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(SMT_VEC_RESERVE(v, cap, n + 1), 0);
		assert_true(cap >= n + 1);
		assert_true(cap >= prev);
		grew += cap != prev;
		prev = cap;
		v[n++] = i;
	}
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	assert_true(grew <= 10);
	free(v);
}

/* A jump straight to a large need, and the room past the old capacity
 * zeroed (what a table indexed by rank relies on). */
static void test_jump_zeroed(void **state)
{
	long *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(SMT_VEC_RESERVE(v, cap, 3), 0);
	for (size_t i = 0; i < cap; i++)
		v[i] = -1;
	size_t old = cap;
	assert_int_equal(SMT_VEC_RESERVE(v, cap, 5000), 0);
	assert_true(cap >= 5000);
	for (size_t i = 0; i < old; i++)
		assert_int_equal(v[i], -1);
	for (size_t i = old; i < cap; i++)
		assert_int_equal(v[i], 0);
	free(v);
}

/* NEED * SIZE past SIZE_MAX is refused before any allocation, and the
 * array and its capacity are as they were. */
static void test_overflow(void **state)
{
	struct pair *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(SMT_VEC_RESERVE(v, cap, 2), 0);
	struct pair *was = v;
	size_t wascap = cap;
	v[1].a = 42;
	assert_int_equal(SMT_VEC_RESERVE(v, cap, SIZE_MAX / sizeof(*v) + 1), -ENOMEM);
	assert_int_equal(SMT_VEC_RESERVE(v, cap, SIZE_MAX), -ENOMEM);
	assert_ptr_equal(v, was);
	assert_int_equal(cap, wascap);
	assert_int_equal(v[1].a, 42);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_zero),
		cmocka_unit_test(test_one_by_one),
		cmocka_unit_test(test_jump_zeroed),
		cmocka_unit_test(test_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
