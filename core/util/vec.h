// Growable arrays without a generic container: a pointer, a length and a
// capacity, grown geometrically so appends are amortised O(1).
#ifndef HD_UTIL_VEC_H
#define HD_UTIL_VEC_H

#include <stdbool.h>
#include <stdlib.h>

// Makes room for one more element; false on allocation failure.
static inline bool hd_vec_reserve(void **data, size_t *cap, size_t len,
				  size_t elem, size_t want)
{
	if (want <= *cap)
		return true;
	size_t n = *cap ? *cap : 8;
	while (n < want)
		n *= 2;
	void *p = realloc(*data, n * elem);
	if (!p)
		return false;
	*data = p;
	*cap = n;
	(void)len;
	return true;
}

#define HD_VEC_PUSH(arr, len, cap, value)                                     \
	(hd_vec_reserve((void **)&(arr), &(cap), (len), sizeof(*(arr)),      \
			(len) + 1)                                            \
		 ? ((arr)[(len)++] = (value), true)                           \
		 : false)

#endif
