// Views kept sorted by address, as the stages that read a heap many times
// keep them (the glibc walker's heaps, typing's segments): the one view
// that holds an address, by binary search.
#ifndef HD_TARGET_VIEWS_H
#define HD_TARGET_VIEWS_H

#include "heapdom.h"

// The view of views[0..n) (sorted, disjoint) holding the len bytes at
// addr, or NULL. len 0 asks only for the view addr falls in.
static inline const struct hd_view *hd_views_find(const struct hd_view *views,
						  size_t n, uint64_t addr,
						  uint64_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (views[mid].addr + views[mid].len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || views[lo].addr > addr ||
	    addr + len > views[lo].addr + views[lo].len)
		return NULL;
	return &views[lo];
}

#endif
