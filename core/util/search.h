// The binary search most stages do over address ranges kept sorted and
// disjoint (mappings, core segments, extents, vtables): the first range
// that ends after an address. Whether that range holds the address is the
// caller's to say (start <= addr, or start < addr for a vtable).
#ifndef HD_UTIL_SEARCH_H
#define HD_UTIL_SEARCH_H

#include <stddef.h>
#include <stdint.h>

// The index of the first element of arr[0..n) (elements stride bytes
// apart, each with its end address a uint64_t end_off bytes in) whose
// end lies after addr; n if none.
static inline size_t hd_first_ending_after(const void *arr, size_t n,
					   size_t stride, size_t end_off,
					   uint64_t addr)
{
	const char *base = arr;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (*(const uint64_t *)(base + mid * stride + end_off) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

// The same for an array of structs whose end address is member end.
#define HD_FIRST_ENDING_AFTER(arr, n, end, addr)                            \
	hd_first_ending_after((arr), (n), sizeof(*(arr)),                   \
			      offsetof(__typeof__(*(arr)), end), (addr))

#endif
