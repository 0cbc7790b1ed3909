// The object graph's internals: address index, roots, scanner.
#ifndef HD_GRAPH_INTERNAL_H
#define HD_GRAPH_INTERNAL_H

#include "dom/dom.h"
#include "heap/heap_internal.h"
#include "heapdom.h"

// Address -> block id in O(1): ranges of contiguous blocks, each with a
// table of one 64-bit cell per 128-byte granule: the id of the first block
// whose address lies at or after the granule's start, and a bit for each
// of the granule's sixteen 8-byte units that holds a block's address. The
// block at or below an address is then that id plus a population count,
// with no look at the block table; a pointer to a block's start (most
// pointers) needs only its cell.
#define HD_GRANULE_SHIFT 7

struct hd_index_range {
	uint64_t lo, hi;       // [lo, hi): extent bytes and usable bytes covered
	uint32_t first_block;  // block id of the extent at lo
	uint32_t last_block;   // block id of the range's last extent
	uint64_t *cells;       // num_granules cells; NULL: no table
	uint64_t num_granules; // 0 for a range of one block, or addresses
			       // closer than 8 bytes (binary search then)
	// Every address 8-aligned (lo too) and every usable size nonzero: a
	// set bit at an aligned address is the block that starts there.
	bool exact_bits;
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

// The range that holds p, or NULL.
static inline const struct hd_index_range *hd_index_range_of(const struct hd_index *ix,
							     uint64_t p)
{
	if (p - ix->lo >= ix->hi - ix->lo)
		return NULL;
	size_t lo = 0, hi = ix->num_ranges;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->ranges[mid].hi <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ix->num_ranges || p < ix->ranges[lo].lo)
		return NULL;
	return &ix->ranges[lo];
}

// The last block of r at or below p, without a table.
int64_t hd_index_search(const struct hd_index *ix,
			const struct hd_index_range *r, uint64_t p);

// What r's cell says of p (in r's table): the first block starting in p's
// granule at or after p's 8-byte unit, counted from the cell's first
// block; *starts: whether a block starts in p's unit.
static inline int64_t hd_index_cell_block(const struct hd_index_range *r,
					  uint64_t p, bool *starts)
{
	uint64_t off = p - r->lo;
	uint64_t cell = r->cells[off >> HD_GRANULE_SHIFT];
	unsigned u = (unsigned)(off >> 3) & 15;
	uint32_t bits = (uint32_t)(cell >> 32);
	*starts = bits & (1u << u);
	return (int64_t)(uint32_t)cell + __builtin_popcount(bits & ((1u << u) - 1));
}

// Id of the block whose usable bytes hold p, or -1: the same answer as
// hd_heap_find, in O(1); *exact says whether p is the block's start. A
// block's usable bytes may end inside the next extent's header (glibc's
// prev_size word), so an address in a header belongs to the block before
// it or to none.
static inline int64_t hd_index_find(const struct hd_index *ix, uint64_t p,
				    bool *exact)
{
	const struct hd_index_range *r = hd_index_range_of(ix, p);
	*exact = false;
	if (!r)
		return -1;
	int64_t id;
	if (r->num_granules) {
		bool starts;
		int64_t k = hd_index_cell_block(r, p, &starts);
		if (starts) {
			if (r->exact_bits && !(p & 7)) {
				*exact = true;
				return k;
			}
			id = ix->addr[k] <= p ? k : k - 1;
		} else {
			id = k - 1;
		}
		if (id < (int64_t)r->first_block)
			return -1;
	} else if (r->first_block == r->last_block) {
		id = r->first_block;
		if (p < ix->addr[id])
			return -1;
	} else {
		id = hd_index_search(ix, r, p);
		if (id < 0)
			return -1;
	}
	*exact = p == ix->addr[id];
	return p - ix->addr[id] < hd_heap_usable(ix->h, (size_t)id) ? id : -1;
}

// hd_index_find for n addresses at once (n <= HD_INDEX_BATCH), their
// memory fetched in parallel: ids[i] (-1: none) and exact[i] for vals[i].
#define HD_INDEX_BATCH 64
void hd_index_find_batch(const struct hd_index *ix, const uint64_t *vals,
			 size_t n, int64_t *ids, bool *exact);

static inline int64_t hd_index_lookup(const struct hd_index *ix, uint64_t p)
{
	bool exact;
	return hd_index_find(ix, p, &exact);
}

// The words of a block the typing calls pointers (bit i for word i), or
// NULL for none, so the graph can count typed edges. The scanner reads
// every word whatever the map says: reachability stays conservative,
// typed or not.
typedef const uint8_t *(*hd_pointer_map_fn)(void *arg, size_t block_id,
					    size_t nwords);

// Whether word `word` of block_id is typed as a pointer (the bit of
// hd_pointer_map_fn's map); safe to call from several threads at once.
typedef bool (*hd_word_typed_fn)(void *arg, size_t block_id, uint64_t word);

struct hd_suballoc;

struct hd_graph {
	hd_pointer_map_fn pointer_map;
	hd_word_typed_fn word_typed; // or NULL (then one thread asks pointer_map)
	// Blocks of sub-allocators (framework modules), vertices after the
	// heap's blocks; NULL for the plain graph. Not owned.
	const struct hd_suballoc *sub;
	size_t num_sub;
	// The heap's references (graph/refs.h), which make the block edges
	// without reading the heap again, consumed (each part freed once its
	// blocks' edges are made); NULL: the scan reads the heap.
	struct hd_refs *refs;
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
// The same from the heap's references (no sub-allocators), which it
// consumes: their memory is given back as the edges are made, before the
// reverse graph is built (refs keeps only its counts).
struct hd_refs;
struct hd_error *hd_graph_build_refs(struct hd_target *t,
				     struct hd_debuginfo *di,
				     const struct hd_heap *h,
				     const struct hd_index *ix,
				     struct hd_refs *refs,
				     hd_pointer_map_fn map,
				     hd_word_typed_fn word_typed, void *map_arg,
				     struct hd_graph **ret);
// The graph's vertices alone (roots named, blocks and sub-allocator
// blocks numbered as hd_graph_build_with does) and no edge: for framework
// modules that assign blocks by vertex and never read references.
struct hd_error *hd_graph_build_vertices(struct hd_target *t,
					 struct hd_debuginfo *di,
					 const struct hd_heap *h,
					 const struct hd_suballoc *sub,
					 struct hd_graph **ret);
// Numbers g's vertices (super-root, roots, blocks, sub-blocks).
struct hd_error *hd_graph_number(struct hd_graph *g, const struct hd_heap *h);
// Scans roots and used blocks and builds g->fwd and g->rev.
struct hd_error *hd_graph_scan(struct hd_graph *g, struct hd_target *t,
			       const struct hd_heap *h,
			       const struct hd_index *ix);

#endif
