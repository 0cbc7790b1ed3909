// The granule index of sub-allocator blocks (graph/suballoc.h): made once
// the framework modules' blocks are final, used by every look-up of them
// (the graph's scan, the modules' hd_fw_vertex_at, the reports).
#include <stdlib.h>

#include "graph/suballoc.h"

#define HD_SUB_MAX_SHIFT 12

bool hd_suballoc_index(struct hd_suballoc *sa)
{
	size_t n = sa->num_blocks;
	free(sa->dense);
	sa->dense = NULL;
	if (!n || n >= UINT32_MAX)
		return true;
	// The smallest granule from 128 bytes to a page that keeps the table
	// to one entry per block (and 64k more): a granule's few blocks make
	// a short search.
	unsigned shift = 7;
	uint64_t granules;
	for (;; shift++) {
		granules = ((sa->hi - 1) >> shift) - (sa->lo >> shift) + 1;
		if (granules <= (uint64_t)n + 65536)
			break;
		if (shift == HD_SUB_MAX_SHIFT)
			return true;
	}
	uint64_t base = sa->lo >> shift;
	uint32_t *dense = malloc((granules + 1) * sizeof(*dense));
	if (!dense)
		return false;
	size_t i = 0;
	for (uint64_t g = 0; g <= granules; g++) {
		uint64_t start = (base + g) << shift;
		while (i < n && sa->blocks[i].addr + sa->blocks[i].size <= start)
			i++;
		dense[g] = (uint32_t)i;
	}
	sa->dense = dense;
	sa->dense_base = base;
	sa->dense_n = granules;
	sa->dense_shift = shift;
	return true;
}
