// Sorting arrays of 32-bit integers (vertex ids) by radix: a hash table's
// bucket array is a million pointers, and its edges are sorted to drop
// repeats; qsort's comparison calls cost ten times the four passes here.
#include <stdlib.h>
#include <string.h>

#include "util/sort.h"

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

void hd_sort_u32(uint32_t *a, size_t n)
{
	if (n < 2)
		return;
	if (n <= 16) {
		for (size_t i = 1; i < n; i++) {
			uint32_t v = a[i];
			size_t j = i;
			for (; j > 0 && a[j - 1] > v; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	uint32_t *tmp = n >= 4096 ? malloc(n * sizeof(*tmp)) : NULL;
	if (!tmp) {
		// Small arrays, or no memory for the second buffer.
		qsort(a, n, sizeof(*a), u32_cmp);
		return;
	}
	// Four passes of a byte each, least significant first; a pass whose
	// byte is the same in every element moves nothing.
	uint32_t *src = a, *dst = tmp;
	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = {0};
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xff]++;
		if (count[(src[0] >> shift) & 0xff] == n)
			continue;
		size_t at = 0;
		for (unsigned b = 0; b < 256; b++) {
			size_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xff]++] = src[i];
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
}
