/*
 * vec.h - growing an array of fixed-size elements, the one way smtd does.
 *
 * An array is three plain fields of its owner (a pointer, a count, a
 * capacity); this module only grows the allocation, so the owner keeps
 * indexing, sorting and freeing the array as any C array.  Growth is
 * geometric (doubling from a small first allocation), so appending one
 * element at a time costs amortized constant time.  The size in bytes is
 * checked for overflow before it is asked for, and a failed reserve leaves
 * the array and its capacity exactly as they were: the caller's error path
 * still owns a valid array.  Elements past the old capacity come zeroed,
 * so a table indexed by a number (a slot per rank) needs no clearing.
 */
#ifndef SMT_VEC_H
#define SMT_VEC_H

#include <stddef.h>

/* Make *ITEMSP (a pointer to the array's pointer, NULL while empty), whose
 * allocation holds *CAP elements of SIZE (> 0) bytes, hold at least NEED.  0, or
 * -ENOMEM (out of memory, or NEED * SIZE past SIZE_MAX). */
int smt_vec_reserve(void *itemsp, size_t *cap, size_t need, size_t size)
	__attribute__((warn_unused_result));

/* The usual call: room for NEED elements of the array V with capacity CAP
 * (both lvalues). */
#define SMT_VEC_RESERVE(v, cap, need) smt_vec_reserve(&(v), &(cap), (need), sizeof(*(v)))

#endif
