// The conservative scanner's internals shared by its files: scan.c (roots,
// heap blocks, the graph's CSR) and subscan.c (sub-allocator blocks).
#ifndef HD_GRAPH_SCAN_INTERNAL_H
#define HD_GRAPH_SCAN_INTERNAL_H

#include "graph/graph_internal.h"
#include "graph/suballoc.h"
#include "heap/heap_internal.h"

// The scanner's state: the forward CSR being written (offsets per vertex,
// n targets of cap), and what a word is looked up in.
struct hd_scan_builder {
	struct hd_graph *g;
	const struct hd_heap *h;
	const struct hd_index *ix;
	uint32_t *offsets; // edges counted in 64 bits (n), checked at the end
	uint32_t *targets;
	uint64_t n, cap;
	uint32_t first_block_vertex;
	const struct hd_suballoc *sa; // or NULL
	// The pages sub-blocks lie on, sorted, and the first sub-block ending
	// after each page's start: a look-up searches a page's few blocks
	// instead of all of them (a Python heap has millions).
	uint64_t *pages;
	uint32_t *page_first;
	size_t num_pages;
	// Open addressing over the pages: slot -> index into pages + 1 (0:
	// empty), num_slots a power of two.
	uint32_t *page_slots;
	size_t num_slots;
	uint32_t first_sub_vertex;
	int64_t self_sub;             // sub-block being scanned, or -1
	uint64_t typed_found; // words typed as pointers that made an edge
};

#define SUB_PAGE_SHIFT 12

static inline size_t page_hash(uint64_t pg)
{
	return (size_t)((pg * 0x9e3779b97f4a7c15ull) >> 20);
}

// hd_suballoc_find through the page directory.
static inline int64_t sub_find(const struct hd_scan_builder *b, uint64_t p)
{
	const struct hd_suballoc *sa = b->sa;
	if (sa->dense || !b->pages)
		return hd_suballoc_find(sa, p);
	if (p - sa->lo >= sa->hi - sa->lo)
		return -1;
	uint64_t pg = p >> SUB_PAGE_SHIFT;
	size_t lo;
	if (b->page_slots) {
		size_t h = page_hash(pg) & (b->num_slots - 1);
		for (;;) {
			uint32_t k = b->page_slots[h];
			if (!k)
				return -1;
			if (b->pages[k - 1] == pg) {
				lo = k - 1;
				break;
			}
			h = (h + 1) & (b->num_slots - 1);
		}
	} else {
		size_t hi = b->num_pages;
		lo = 0;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (b->pages[mid] < pg)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == b->num_pages || b->pages[lo] != pg)
			return -1;
	}
	// The page's blocks: from the first ending after its start, up to
	// the first of the next page in the directory.
	size_t i = b->page_first[lo];
	size_t end = lo + 1 < b->num_pages ? (size_t)b->page_first[lo + 1] + 1
					   : sa->num_blocks;
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

// Room for more edges in b->targets; false without memory.
bool hd_scan_reserve(struct hd_scan_builder *b, uint64_t more);
// Sorts and deduplicates one vertex's n edges at t; returns how many stay.
uint64_t hd_scan_dedupe(uint32_t *t, uint64_t n);
// The edges of b->sa's used blocks (subscan.c), in block order.
struct hd_error *hd_scan_subblocks(struct hd_scan_builder *b,
				   struct hd_target *t);

#endif
