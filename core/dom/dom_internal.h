// The dominator stage's result (analysis.c) and its top-level holders
// (holders.c).
#ifndef HD_DOM_INTERNAL_H
#define HD_DOM_INTERNAL_H

#include "dom/dom.h"
#include "graph/graph_internal.h"
#include "heap/heap_internal.h"
#include "heapdom.h"

struct hd_dom {
	uint32_t n;
	enum hd_dom_view view;
	struct hd_domtree tree;
	// Retained bytes, 48 bits a vertex (hd_dom_ret): a vertex's blocks
	// lie in the address space, which is narrower. The high part is
	// calloc'd and written only where nonzero, so only the pages of the
	// few vertices retaining 4 GiB or more are ever resident.
	uint32_t *retained_lo;
	uint16_t *retained_hi;
	uint32_t *count;
	// The reached vertices but the root, grouped by immediate dominator
	// (ascending), each group largest retained first: v's children are
	// the run whose idom is v, found by binary search (no offsets array).
	uint32_t *children;
	uint32_t num_children;
	uint32_t *leaked;      // leaked vertices, ascending: local ids 1..k
	size_t num_leaked;
	struct hd_domtree leak_tree; // over local ids
	uint64_t *leak_retained;
	uint32_t *leak_count;
	// The top-level holders, largest first; their root and vertex lists
	// point into holder_items.
	struct hd_holder *holders;
	size_t num_holders;
	uint32_t *holder_items;
	size_t bytes;
};

static inline uint64_t hd_dom_ret(const struct hd_dom *d, uint32_t v)
{
	return d->retained_lo[v] | (uint64_t)d->retained_hi[v] << 32;
}

// The partition of the used blocks into top-level holders (holders.c).
struct hd_error *hd_dom_holders_compute(struct hd_dom *d,
					const struct hd_graph *g);
void hd_dom_holders_free(struct hd_dom *d);

#endif
