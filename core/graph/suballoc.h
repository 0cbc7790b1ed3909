// Blocks of sub-allocators (pools, arenas) that framework modules find
// inside malloc'd blocks or in mappings of their own: the graph makes them
// vertices after the heap's blocks.
#ifndef HD_SUBALLOC_H
#define HD_SUBALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Blocks of sub-allocators, sorted by address and disjoint, with the
// regions (own mappings) they may lie in. Vertex of sub-block i:
// g->num_vertices - num_blocks + i (they come after the heap's blocks).
struct hd_subblock {
	uint64_t addr, size;
	uint32_t type;      // index into labels, UINT32_MAX: none
	uint16_t module;    // index of the framework that added it
	uint8_t state;      // enum hd_block_state
	int64_t container;  // heap block id around it, -1 if in a region
};

struct hd_subregion {
	uint64_t start, end;
	uint32_t label;     // index into labels
	uint16_t module;
};

struct hd_suballoc {
	struct hd_subblock *blocks;
	size_t num_blocks, cap_blocks;
	struct hd_subregion *regions; // sorted by start once finalized
	size_t num_regions, cap_regions;
	uint64_t lo, hi; // span of all blocks, for a quick reject
	// Heap blocks that contain sub-blocks, sorted (for the scanner).
	uint32_t *containers;
	uint64_t *container_bytes; // bytes of sub-blocks in each container
	size_t num_containers;
	// Threads the graph's scan of the blocks may use (0: the default of
	// hd_threads_wanted); the edges do not depend on it.
	unsigned threads;
	// When the blocks' span is compact (a Python heap's arenas): per
	// granule (1 << dense_shift bytes) of it, the first block ending
	// after the granule's start (dense_n + 1 entries), so a look-up
	// searches a granule's few blocks (hd_suballoc_index). NULL: none.
	uint32_t *dense;
	uint64_t dense_base;
	size_t dense_n;
	unsigned dense_shift;
};

// Makes sa->dense when the blocks (sorted, disjoint, lo and hi set) span
// at most about one granule of 128 bytes to a page per block; false when
// out of memory.
bool hd_suballoc_index(struct hd_suballoc *sa);

// The block holding p among [i, end), the blocks ending after the start
// of p's granule up to the first ending after the next one's; or -1.
static inline int64_t hd_suballoc_search(const struct hd_suballoc *sa,
					 size_t i, size_t end, uint64_t p)
{
	if (end > sa->num_blocks)
		end = sa->num_blocks;
	while (i < end) {
		size_t mid = i + (end - i) / 2;
		if (sa->blocks[mid].addr + sa->blocks[mid].size <= p)
			i = mid + 1;
		else
			end = mid;
	}
	return i < sa->num_blocks && sa->blocks[i].addr <= p &&
			       p < sa->blocks[i].addr + sa->blocks[i].size
		       ? (int64_t)i
		       : -1;
}

// Index of the first sub-block ending after p (num_blocks if none).
static inline size_t hd_suballoc_lower(const struct hd_suballoc *sa,
				       uint64_t p)
{
	size_t lo = 0, hi = sa->num_blocks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sa->blocks[mid].addr + sa->blocks[mid].size <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

// Index of the sub-block containing p, or -1.
static inline int64_t hd_suballoc_find(const struct hd_suballoc *sa,
				       uint64_t p)
{
	if (p - sa->lo >= sa->hi - sa->lo)
		return -1;
	if (sa->dense) {
		size_t g = (size_t)((p >> sa->dense_shift) - sa->dense_base);
		return hd_suballoc_search(sa, sa->dense[g],
					  (size_t)sa->dense[g + 1] + 1, p);
	}
	size_t i = hd_suballoc_lower(sa, p);
	return i < sa->num_blocks && sa->blocks[i].addr <= p ? (int64_t)i : -1;
}

// Index in containers[] of heap block id, or -1 if it holds no sub-block.
static inline int64_t hd_suballoc_container(const struct hd_suballoc *sa,
					    size_t id)
{
	size_t lo = 0, hi = sa->num_containers;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sa->containers[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sa->num_containers && sa->containers[lo] == id
		       ? (int64_t)lo
		       : -1;
}

#endif
