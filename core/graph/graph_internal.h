// The object graph's internals: address index, roots, scanner.
#ifndef HD_GRAPH_INTERNAL_H
#define HD_GRAPH_INTERNAL_H

#include "dom/dom.h"
#include "heap/heap_internal.h"
#include "heapdom.h"

// Address -> block id in O(1): ranges of contiguous blocks, each with a
// table of the first block overlapping every 128-byte granule (glibc's
// blocks are at least 32 bytes, so a lookup walks at most 4 blocks from
// there; a slab allocator's 8-byte blocks, 16).
#define HD_GRANULE_SHIFT 7

struct hd_index_range {
	uint64_t lo, hi;       // [lo, hi): extent bytes and usable bytes covered
	uint32_t first_block;  // block id of the extent at lo
	uint32_t last_block;   // block id of the range's last extent
	uint32_t *granules;    // num_granules entries, one per granule
	uint64_t num_granules; // 0 (no table) for a range of one block
};

struct hd_index {
	const struct hd_heap *h;
	const uint64_t *addr;    // the heap's user addresses
	struct hd_index_range *ranges;
	size_t num_ranges, cap_ranges;
	uint64_t lo, hi;         // span of all ranges, for a quick reject
	size_t bytes;
};

struct hd_error *hd_index_init(struct hd_index *ix, const struct hd_heap *h);
void hd_index_deinit(struct hd_index *ix);

// Id of the block whose usable bytes hold p, or -1: the same answer as
// hd_heap_find, in O(1). A block's usable bytes may end inside the next
// extent's header (glibc's prev_size word), so an address in a header
// belongs to the block before it or to none.
static inline int64_t hd_index_lookup(const struct hd_index *ix, uint64_t p)
{
	if (p - ix->lo >= ix->hi - ix->lo)
		return -1;
	size_t lo = 0, hi = ix->num_ranges;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->ranges[mid].hi <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ix->num_ranges || p < ix->ranges[lo].lo)
		return -1;
	const struct hd_index_range *r = &ix->ranges[lo];
	uint64_t g = (p - r->lo) >> HD_GRANULE_SHIFT;
	uint32_t id = !r->num_granules ? r->first_block
		      : r->granules[g < r->num_granules ? g : r->num_granules - 1];
	// The block whose extent holds p; the last block of the range also
	// takes the bytes its usable area lends past the range.
	while (id < r->last_block && hd_heap_extent_end(ix->h, id) <= p)
		id++;
	if (p < ix->addr[id]) {
		if (id == r->first_block)
			return -1;
		id--;
	}
	return p - ix->addr[id] < hd_heap_usable(ix->h, id) ? (int64_t)id : -1;
}

// The words of a block the typing calls pointers (bit i for word i), or
// NULL for none, so the graph can count typed edges. The scanner reads
// every word whatever the map says: reachability stays conservative,
// typed or not.
typedef const uint8_t *(*hd_pointer_map_fn)(void *arg, size_t block_id,
					    size_t nwords);

struct hd_suballoc;

struct hd_graph {
	hd_pointer_map_fn pointer_map;
	// Blocks of sub-allocators (framework modules), vertices after the
	// heap's blocks; NULL for the plain graph. Not owned.
	const struct hd_suballoc *sub;
	size_t num_sub;
	void *pointer_map_arg;
	struct hd_root *roots;
	size_t num_roots, cap_roots;
	// Register values of the registers roots.
	struct hd_reg_root {
		size_t root;
		struct hd_regs regs;
	} *reg_roots;
	size_t num_reg_roots, cap_reg_roots;
	uint32_t num_vertices;
	struct hd_csr fwd; // owned
	// Owned, built on first use (hd_graph_reverse): only the reports that
	// follow references backwards need it, and it costs as much as fwd.
	struct hd_csr rev;
	bool have_rev;
	size_t num_blocks;
	struct hd_graph_info info;
};

// The mapping of an exited thread's stack that glibc keeps: its stack and
// static TLS [start, descriptor), no root, and its descriptor
// [descriptor, end), a root while the thread is not joined (its result).
struct hd_dead_stack {
	uint64_t start, descriptor, end;
};
// The exited threads' stacks of t (dead_threads.c): *ret (to free) holds
// *num of them. None when the live threads do not show where glibc keeps
// a thread's id.
struct hd_error *hd_dead_thread_stacks(struct hd_target *t,
				       struct hd_dead_stack **ret, size_t *num);

// The reverse of g->fwd (predecessors, flags dropped), built the first
// time it is asked for and kept with the graph; the graph is otherwise
// read-only, so the cache is its one change.
struct hd_error *hd_graph_reverse(const struct hd_graph *g,
				  const struct hd_csr **ret);

// The super-root's edges come in root-class order (scan.c): groups[k] is
// the number of them to roots of class k or stronger, the groups of
// hd_dominators_grouped (HD_ROOT_RANKS entries).
void hd_graph_class_groups(const struct hd_graph *g, uint64_t *groups);

// Collects the named roots of the target.
struct hd_error *hd_roots_collect(struct hd_graph *g, struct hd_target *t,
				  struct hd_debuginfo *di,
				  const struct hd_heap *h);
// Builds the graph with a prebuilt index, an optional pointer map and
// optional sub-allocator blocks (sub may be NULL).
struct hd_error *hd_graph_build_with(struct hd_target *t,
				     struct hd_debuginfo *di,
				     const struct hd_heap *h,
				     const struct hd_index *ix,
				     hd_pointer_map_fn map, void *map_arg,
				     const struct hd_suballoc *sub,
				     struct hd_graph **ret);
// The graph's vertices alone (roots named, blocks and sub-allocator
// blocks numbered as hd_graph_build_with does) and no edge: for framework
// modules that assign blocks by vertex and never read references.
struct hd_error *hd_graph_build_vertices(struct hd_target *t,
					 struct hd_debuginfo *di,
					 const struct hd_heap *h,
					 const struct hd_suballoc *sub,
					 struct hd_graph **ret);
// Scans roots and used blocks and builds g->fwd and g->rev.
struct hd_error *hd_graph_scan(struct hd_graph *g, struct hd_target *t,
			       const struct hd_heap *h,
			       const struct hd_index *ix);

#endif
