// The address index: built once per heap, 8 bytes per 128 heap bytes.
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
	// would cost 128 MiB of cells that all name it.
	bool table = first != last;
	// The cells tell blocks apart by 8-byte unit.
	for (size_t i = first + 1; table && i <= last; i++)
		if (h->addr[i] - h->addr[i - 1] < 8)
			table = false;
	if (table) {
		size_t n = ((r.hi - 1 - r.lo) >> HD_GRANULE_SHIFT) + 1;
		r.cells = malloc(n * sizeof(*r.cells));
		if (!r.cells)
			return &hd_error_no_memory;
		r.num_granules = n;
		r.exact_bits = !(r.lo & 7);
		size_t id = first;
		for (size_t g = 0; g < n; g++) {
			uint64_t start = r.lo + ((uint64_t)g << HD_GRANULE_SHIFT);
			uint64_t end = start + (1u << HD_GRANULE_SHIFT);
			while (id <= last && h->addr[id] < start)
				id++;
			uint64_t cell = (uint32_t)id;
			for (size_t k = id; k <= last && h->addr[k] < end; k++) {
				cell |= 1ull << (32 + ((h->addr[k] - start) >> 3));
				if ((h->addr[k] & 7) || !hd_heap_usable(h, k))
					r.exact_bits = false;
			}
			r.cells[g] = cell;
		}
		ix->bytes += n * sizeof(*r.cells);
	}
	if (!HD_VEC_PUSH(ix->ranges, ix->num_ranges, ix->cap_ranges, r)) {
		free(r.cells);
		return &hd_error_no_memory;
	}
	return NULL;
}

int64_t hd_index_search(const struct hd_index *ix,
			const struct hd_index_range *r, uint64_t p)
{
	size_t lo = r->first_block, hi = (size_t)r->last_block + 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->addr[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == r->first_block ? -1 : (int64_t)lo - 1;
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
		free(ix->ranges[i].cells);
	free(ix->ranges);
	memset(ix, 0, sizeof(*ix));
}

// Three passes over the batch, each touching what the previous one
// fetched: the ranges and cells, then the blocks' flags (and addresses
// when the cell alone does not say). A lookup costs two dependent cache
// misses; a batch overlaps them all.
void hd_index_find_batch(const struct hd_index *ix, const uint64_t *vals,
			 size_t n, int64_t *ids, bool *exact)
{
	const struct hd_heap *h = ix->h;
	const struct hd_index_range *rs[HD_INDEX_BATCH];
	for (size_t i = 0; i < n; i++) {
		const struct hd_index_range *r = hd_index_range_of(ix, vals[i]);
		rs[i] = r;
		if (r && r->num_granules)
			__builtin_prefetch(&r->cells[(vals[i] - r->lo) >> HD_GRANULE_SHIFT]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct hd_index_range *r = rs[i];
		ids[i] = -1;
		exact[i] = false;
		if (!r || !r->num_granules)
			continue;
		uint64_t p = vals[i];
		bool starts;
		int64_t k = hd_index_cell_block(r, p, &starts);
		if (!starts)
			k--;
		else if (r->exact_bits && !(p & 7)) {
			ids[i] = k;
			exact[i] = true;
			__builtin_prefetch(&h->flags[k]);
			continue;
		}
		if (k >= (int64_t)r->first_block) {
			// Resolved below, with the address.
			__builtin_prefetch(&h->addr[k]);
			__builtin_prefetch(&h->flags[k]);
			__builtin_prefetch(&h->span[k]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (ids[i] >= 0)
			continue; // exact from its cell
		ids[i] = hd_index_find(ix, vals[i], &exact[i]);
	}
}
