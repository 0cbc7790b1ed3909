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
	uint64_t *retained;
	uint32_t *count;
	uint32_t *child_off; // n + 1
	uint32_t *children;
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

// The partition of the used blocks into top-level holders (holders.c).
struct hd_error *hd_dom_holders_compute(struct hd_dom *d,
					const struct hd_graph *g);
void hd_dom_holders_free(struct hd_dom *d);

#endif
