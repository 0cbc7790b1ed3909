// The neutral block table every allocator backend fills (backend.h says
// how a backend is written), and the check for allocators heapdom does
// not walk.
#ifndef HD_HEAP_INTERNAL_H
#define HD_HEAP_INTERNAL_H

#include "heapdom.h"

// The source file whose struct layouts a walker will ask of the module at
// path (hd_debuginfo_struct_layouts' cu_suffix: "malloc.c" for libc), or
// NULL: read ahead, with the module's types, as a debugger loads it.
const char *hd_heap_layout_unit(const char *path);

// hd_heap_walk on up to threads threads (the glibc chunk walk splits a
// large heap between them; 0 or 1: one). asked: the user chose the
// number (--jobs), and even a small heap is split, as the scan does. The
// heap is the same whatever the number.
struct hd_error *hd_heap_walk_threads(struct hd_target *t,
				      struct hd_debuginfo *di,
				      const struct hd_heap_options *opts,
				      unsigned threads, bool asked,
				      struct hd_heap **ret);

// Block table, struct-of-arrays, 15 bytes per block: 8 (addr) + 4 (span:
// extent in units of 1 << span_shift) + 1 (flags) + 2 (region). Everything
// else a block has is derived from a handful of per-allocator tables the
// backend declares: its shape (header before addr, usable bytes) and its
// list's name. A backend whose allocator records each block's exact size
// (musl's mallocng) asks for a 16th to 19th byte: the bytes it keeps back
// at the end of the block (hd_heap_exact_sizes).
//
// flags: bits 0-1 state, bits 2-5 list (index into its allocator's lists,
// 0 = none), bits 6-7 shape (index into its allocator's shapes).
//
// Several allocators in one table (merge.c): a block's allocator is its
// region's (every region belongs to one allocator, region_alloc), and a
// block in a mapping of its own carries HD_REGION_NONE - a for allocator
// a. So list and shape stay 6 bits per block, resolved per allocator:
// allocator a's shapes are shapes[4a..4a+3], and its list l > 0 is the
// heap's list allocs[a].list_base + l.
#define HD_FLAG_STATE_MASK 0x3
#define HD_FLAG_LIST_SHIFT 2
#define HD_FLAG_LIST_MASK (0xf << HD_FLAG_LIST_SHIFT)
#define HD_FLAG_SHAPE_SHIFT 6
#define HD_HEAP_MAX_LISTS 16
#define HD_HEAP_MAX_SHAPES 4
#define HD_REGION_NONE 0xffff
// Allocators one heap merges; their regions are below HD_REGION_LIMIT.
#define HD_HEAP_MAX_ALLOCATORS HD_MAX_ALLOCATORS
#define HD_REGION_LIMIT (HD_REGION_NONE - HD_HEAP_MAX_ALLOCATORS + 1)
#define HD_HEAP_MAX_ALL_LISTS (1 + HD_HEAP_MAX_ALLOCATORS * (HD_HEAP_MAX_LISTS - 1))

// How a kind of block sits in its extent. A block's extent starts head
// bytes before the pointer the allocator returns (0 for slab allocators
// such as jemalloc's and mimalloc's, whose blocks have no header) and its
// usable size is extent - head + tail: tail is negative for a trailer, and
// positive when the block may use bytes of the next extent (glibc's arena
// chunks use their successor's prev_size word).
struct hd_heap_shape {
	uint32_t head;
	int32_t tail;
};

struct hd_heap_backend;

// Blocks, bytes and extents of one state, for totals.
struct hd_heap_count {
	uint64_t blocks, bytes;
};

// One allocator of a heap: what its walk declared and found. A heap of
// one allocator describes it in its own fields (own is NULL); a merged
// heap keeps each walk's heap, its block arrays released, for the info,
// the strings its facts and metadata point to.
struct hd_heap_alloc {
	const struct hd_heap_backend *backend;
	struct hd_heap *own;
	char evidence[256];  // what detect said
	unsigned list_base;  // its list l > 0 is the heap's list_base + l
	unsigned num_lists;  // its lists, "none" included
	// Its used, free (reserve lists apart) and internal blocks, extents.
	struct hd_heap_count used, free, reserve, internal;
	uint64_t usable; // usable bytes of its used blocks
};

struct hd_heap {
	uint64_t *addr;    // the pointer the allocator returned
	uint32_t *span;    // extent >> span_shift
	uint8_t *flags;    // state | list << 2 | shape << 6
	uint16_t *region;  // HD_REGION_NONE: a block mapped on its own
	// Only for backends that ask (hd_heap_exact_sizes), else NULL: bytes
	// at the end of the shape's usable range the block does not use
	// (mallocng's "reserved" count), so its usable size is exact.
	uint32_t *reserved;
	bool exact_sizes;
	size_t num_blocks, cap_blocks;
	unsigned span_shift; // the allocator's alignment of extents (glibc 4)

	// Declared by the backend before its first block (hd_heap_declare),
	// for allocator 0; a merged heap has every allocator's (above).
	struct hd_heap_shape shapes[HD_HEAP_MAX_ALLOCATORS * HD_HEAP_MAX_SHAPES];
	struct hd_free_list lists[HD_HEAP_MAX_ALL_LISTS];
	unsigned num_lists;
	const struct hd_heap_backend *backend; // the primary allocator's

	// The allocators (at least one once declared; allocs[0] is the
	// primary: merge.c), and per region its allocator (NULL with one).
	struct hd_heap_alloc allocs[HD_HEAP_MAX_ALLOCATORS];
	unsigned num_allocs;
	uint8_t *region_alloc;
	// Backends --allocator left out although they detected their
	// allocator, for reports ("glibc"), and why.
	char skipped[160];     // "glibc, poolalloc"
	char skipped_why[160]; // "--allocator jemalloc"

	struct hd_region *regions;
	size_t num_regions, cap_regions;
	struct hd_heap_segment *segments;
	size_t num_segments, cap_segments;
	struct hd_heap_metadata *metadata;
	size_t num_metadata, cap_metadata;
	struct hd_fact *facts;
	size_t num_facts, cap_facts;
	struct hd_heap_problem *problems;
	size_t num_problems, cap_problems;
	size_t dropped_problems; // beyond the cap, counted only
	struct hd_heap_info info;
	// info.version, version_source, other_allocator and empty_reason point
	// here.
	char version[32];
	char other_allocator[320];
	char empty_reason[256];
	// Strings the facts and metadata name (hd_heap_strdup), freed with h.
	char **strings;
	size_t num_strings, cap_strings;
	char version_source[256];
};

struct hd_error *hd_heap_alloc(struct hd_heap **ret);
// Makes room for cap blocks in total, so a counted walk allocates exactly.
bool hd_heap_reserve(struct hd_heap *h, size_t cap);
// Appends a block; blocks must be appended in address order and their
// extents must not overlap. extent is rounded down to 1 << span_shift.
bool hd_heap_add(struct hd_heap *h, uint64_t addr, uint64_t extent,
		 enum hd_block_state state, unsigned list, uint16_t region,
		 unsigned shape);
// Writes block id (below num_blocks) as hd_heap_add appends one: for a
// walk that counts rows first and fills them later, on several threads.
static inline void hd_heap_put(struct hd_heap *h, size_t id, uint64_t addr,
			       uint64_t extent, enum hd_block_state state,
			       unsigned list, uint16_t region, unsigned shape)
{
	h->addr[id] = addr;
	// 2^32 units of 16 bytes cover 64 GiB.
	uint64_t units = extent >> h->span_shift;
	h->span[id] = units > UINT32_MAX ? UINT32_MAX : (uint32_t)units;
	h->flags[id] = (uint8_t)(state | (list << HD_FLAG_LIST_SHIFT) |
				 ((shape & 3) << HD_FLAG_SHAPE_SHIFT));
	h->region[id] = region;
	if (h->reserved)
		h->reserved[id] = 0;
}
// Gives back the room reserved past num_blocks (after a walk that
// reserved more than it found).
void hd_heap_fit(struct hd_heap *h);
// For a backend of exact sizes: the reserved column (4 bytes a block),
// after hd_heap_declare and before the first block; false without memory.
bool hd_heap_exact_sizes(struct hd_heap *h);
// Block id uses reserved bytes fewer than its shape gives (exact sizes
// only; blocks start with 0).
static inline void hd_heap_set_reserved(struct hd_heap *h, size_t id,
					uint32_t reserved)
{
	if (h->reserved)
		h->reserved[id] = reserved;
}
// Id of the block whose extent [start, start + extent) contains p, or -1
// (the walker's view; analyses ask hd_heap_find for usable bytes).
int64_t hd_heap_find_extent(const struct hd_heap *h, uint64_t p);
// Id of the block whose user pointer is exactly addr, or -1.
int64_t hd_heap_find_exact(const struct hd_heap *h, uint64_t addr);

static inline void hd_heap_set(struct hd_heap *h, size_t id,
			       enum hd_block_state state, unsigned list)
{
	h->flags[id] = (uint8_t)((h->flags[id] & ~(HD_FLAG_STATE_MASK |
						   HD_FLAG_LIST_MASK)) |
				 state | (list << HD_FLAG_LIST_SHIFT));
}
static inline enum hd_block_state hd_heap_state(const struct hd_heap *h,
						size_t id)
{
	return (enum hd_block_state)(h->flags[id] & HD_FLAG_STATE_MASK);
}
// The block's list as its allocator numbers it (the backend's list enum);
// hd_heap_block() gives the heap's.
static inline unsigned hd_heap_block_list(const struct hd_heap *h, size_t id)
{
	return (h->flags[id] & HD_FLAG_LIST_MASK) >> HD_FLAG_LIST_SHIFT;
}
// Index in h->allocs of the allocator that owns block id.
static inline unsigned hd_heap_block_alloc(const struct hd_heap *h, size_t id)
{
	if (!h->region_alloc)
		return 0;
	uint16_t r = h->region[id];
	return r < h->num_regions ? h->region_alloc[r] : HD_REGION_NONE - r;
}
static inline const struct hd_heap_shape *hd_heap_shape(const struct hd_heap *h,
							size_t id)
{
	return &h->shapes[hd_heap_block_alloc(h, id) * HD_HEAP_MAX_SHAPES +
			  (h->flags[id] >> HD_FLAG_SHAPE_SHIFT)];
}
// Bytes the block takes in the allocator's memory, header included.
static inline uint64_t hd_heap_extent(const struct hd_heap *h, size_t id)
{
	return (uint64_t)h->span[id] << h->span_shift;
}
static inline uint64_t hd_heap_extent_start(const struct hd_heap *h, size_t id)
{
	return h->addr[id] - hd_heap_shape(h, id)->head;
}
static inline uint64_t hd_heap_extent_end(const struct hd_heap *h, size_t id)
{
	return hd_heap_extent_start(h, id) + hd_heap_extent(h, id);
}
// What malloc_usable_size says for block id.
static inline uint64_t hd_heap_usable(const struct hd_heap *h, size_t id)
{
	const struct hd_heap_shape *s = hd_heap_shape(h, id);
	int64_t u = (int64_t)hd_heap_extent(h, id) - (int64_t)s->head + s->tail;
	if (h->reserved)
		u -= h->reserved[id];
	return u < 0 ? 0 : (uint64_t)u;
}
// The smallest request that could have made block id: the block says how
// much room the allocator gave, not how much was asked, so a request
// between this and hd_heap_usable() made it. 0 when the backend cannot
// narrow it (backend.h: min_request).
uint64_t hd_heap_min_request(const struct hd_heap *h, size_t id);
// The most the allocator rounds a request up by (backend.h).
uint32_t hd_heap_request_slack(const struct hd_heap *h, size_t id);

// Records a problem (message formatted); the walk goes on.
void hd_heap_problem_add(struct hd_heap *h, uint64_t address,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

// -------------------------------------------- what a backend describes

// Declares the backend, its extent alignment, shapes and lists (lists[0]
// is "none", the list of every block not free); before the first block.
void hd_heap_declare(struct hd_heap *h, const struct hd_heap_backend *b,
		     unsigned span_shift, const struct hd_heap_shape *shapes,
		     unsigned num_shapes, const struct hd_free_list *lists,
		     unsigned num_lists);
// Appends a region; its index, or HD_REGION_NONE without memory.
uint16_t hd_heap_add_region(struct hd_heap *h, const struct hd_region *r);
bool hd_heap_add_segment(struct hd_heap *h, const struct hd_heap_segment *s);
// Allocator bookkeeping outside every block (name copied).
bool hd_heap_add_metadata(struct hd_heap *h, uint64_t start, uint64_t end,
			  const char *name, uint32_t region);
// Facts for reports: of the allocator (region HD_NO_REGION) or a region.
bool hd_heap_fact_bool(struct hd_heap *h, uint32_t region, const char *key,
		       bool v);
bool hd_heap_fact_uint(struct hd_heap *h, uint32_t region, const char *key,
		       uint64_t v);
bool hd_heap_fact_addr(struct hd_heap *h, uint32_t region, const char *key,
		       uint64_t v);
bool hd_heap_fact_string(struct hd_heap *h, uint32_t region, const char *key,
			 const char *v);

// ------------------------------------------------------ several allocators

// One heap of the walks of several allocators (merge.c): parts[0] is the
// primary. Blocks are merged in address order; lists, shapes, regions,
// segments, metadata, facts and problems are kept per allocator. Blocks
// of two allocators that overlap are problems naming both, and the later
// one is left out. Takes the parts (destroyed on error too).
struct hd_error *hd_heap_merge(struct hd_heap **parts, size_t n,
			       struct hd_heap **ret);
// Fills h->allocs[0]'s totals from h's blocks (one allocator's walk).
void hd_heap_count_totals(struct hd_heap *h);
// The same, the rows split between up to threads threads.
void hd_heap_count_totals_threads(struct hd_heap *h, unsigned threads);

// ------------------------------------------------------ other allocators

// An allocator heapdom does not walk, found in the target (allocator.c).
struct hd_foreign_alloc {
	const char *name;    // "jemalloc", "tcmalloc", "mimalloc"
	char evidence[256];  // "libjemalloc.so.2", "statically linked: symbol ..."
};
// True (and *ret filled) if the target loaded or links such an allocator.
bool hd_heap_find_foreign(struct hd_target *t, struct hd_debuginfo *di,
			  struct hd_foreign_alloc *ret);

#endif
