// The address index: built once per heap, 4 bytes per 128 heap bytes.
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "heap/heap_internal.h"
#include "util/vec.h"

static struct hd_error *add_range(struct hd_index *ix, size_t first,
				  size_t last)
{
	const struct hd_heap *h = ix->h;
	uint64_t extent_end = hd_heap_extent_end(h, last);
	uint64_t usable_end = h->addr[last] + hd_heap_usable(h, last);
	struct hd_index_range r = {
		.lo = hd_heap_extent_start(h, first),
		.hi = usable_end > extent_end ? usable_end : extent_end,
		.first_block = (uint32_t)first,
		.last_block = (uint32_t)last,
	};
	// A range of one block needs no table: an mmapped chunk of 4 GiB
	// would cost 128 MiB of granules that all name it.
	if (first == last) {
		if (!HD_VEC_PUSH(ix->ranges, ix->num_ranges, ix->cap_ranges, r))
			return &hd_error_no_memory;
		return NULL;
	}
	size_t n = ((extent_end - r.lo) >> HD_GRANULE_SHIFT) + 1;
	r.num_granules = n;
	r.granules = malloc(n * sizeof(*r.granules));
	if (!r.granules)
		return &hd_error_no_memory;
	size_t id = first;
	for (size_t g = 0; g < n; g++) {
		uint64_t p = r.lo + ((uint64_t)g << HD_GRANULE_SHIFT);
		while (id < last && hd_heap_extent_end(h, id) <= p)
			id++;
		r.granules[g] = (uint32_t)id;
	}
	if (!HD_VEC_PUSH(ix->ranges, ix->num_ranges, ix->cap_ranges, r)) {
		free(r.granules);
		return &hd_error_no_memory;
	}
	ix->bytes += n * sizeof(*r.granules);
	return NULL;
}

struct hd_error *hd_index_init(struct hd_index *ix, const struct hd_heap *h)
{
	memset(ix, 0, sizeof(*ix));
	ix->h = h;
	ix->addr = h->addr;
	size_t n = h->num_blocks;
	size_t start = 0;
	for (size_t i = 1; i <= n && n; i++) {
		// A range ends where the next extent does not follow directly.
		if (i < n && hd_heap_extent_end(h, i - 1) ==
				     hd_heap_extent_start(h, i))
			continue;
		struct hd_error *err = add_range(ix, start, i - 1);
		if (err) {
			hd_index_deinit(ix);
			return err;
		}
		start = i;
	}
	if (ix->num_ranges) {
		ix->lo = ix->ranges[0].lo;
		ix->hi = ix->ranges[ix->num_ranges - 1].hi;
	}
	ix->bytes += ix->num_ranges * sizeof(*ix->ranges);
	return NULL;
}

void hd_index_deinit(struct hd_index *ix)
{
	for (size_t i = 0; i < ix->num_ranges; i++)
		free(ix->ranges[i].granules);
	free(ix->ranges);
	memset(ix, 0, sizeof(*ix));
}
