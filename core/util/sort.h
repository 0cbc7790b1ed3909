// qsort and bsearch for arrays that may be empty. An empty growable array
// is a NULL pointer, and both functions declare their array nonnull even
// for no elements (C11 7.22.5): passing it is undefined (UBSan reports it).
#ifndef HD_UTIL_SORT_H
#define HD_UTIL_SORT_H

#include <stdint.h>
#include <stdlib.h>

// Sorts n 32-bit integers ascending (radix passes for long arrays; qsort
// when memory for them is short). Never fails.
void hd_sort_u32(uint32_t *a, size_t n);

static inline void hd_qsort(void *base, size_t n, size_t size,
			    int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void *hd_bsearch(const void *key, const void *base, size_t n,
			       size_t size, int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

#endif
