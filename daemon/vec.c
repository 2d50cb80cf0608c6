/* vec.c - growing arrays (vec.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

/* The first allocation, in elements: small enough for a table of a few
 * entries, large enough that a one-by-one append does not realloc at once. */
#define FIRST 8

int smt_vec_reserve(void *itemsp, size_t *cap, size_t need, size_t size)
{
	void *old, *p;
	size_t n;

	if (need <= *cap)
		return 0;
	if (need > SIZE_MAX / size)
		return -ENOMEM;
	n = *cap ? *cap : FIRST;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	/* Doubling may pass what fits in memory where NEED itself does not. */
	if (n > SIZE_MAX / size)
		n = need;
	/* The caller's pointer has the array's own type; copy it as bytes. */
	memcpy(&old, itemsp, sizeof(old));
	p = realloc(old, n * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * size, 0, (n - *cap) * size);
	memcpy(itemsp, &p, sizeof(p));
	*cap = n;
	return 0;
}
