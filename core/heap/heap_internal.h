// The block table and the glibc walker's shared state.
#ifndef HD_HEAP_INTERNAL_H
#define HD_HEAP_INTERNAL_H

#include "heapdom.h"

// Block table, struct-of-arrays: 8 (addr) + 4 (chunk/16) + 1 (flags)
// + 2 (arena) = 15 bytes per block.
#define HD_FLAG_STATE_MASK 0x3
#define HD_FLAG_LIST_SHIFT 2
#define HD_FLAG_LIST_MASK (0xf << HD_FLAG_LIST_SHIFT)
#define HD_FLAG_MMAPPED 0x80
#define HD_ARENA_NONE 0xffff

struct hd_heap {
	uint64_t *addr;     // user pointer = chunk + 16
	uint32_t *chunk16;  // chunk size / 16
	uint8_t *flags;     // state | list << 2 | mmapped
	uint16_t *arena;
	size_t num_blocks, cap_blocks;

	struct hd_arena *arenas;
	size_t num_arenas, cap_arenas;
	struct hd_heap_segment *segments;
	size_t num_segments;
	struct hd_heap_problem *problems;
	size_t num_problems, cap_problems;
	size_t dropped_problems; // beyond the cap, counted only
	struct hd_heap_info info;
	// info.other_allocator points here.
	char other_allocator[320];
	// info.version and info.version_source point here.
	char version[32];
	char version_source[256];
};

struct hd_error *hd_heap_alloc(struct hd_heap **ret);
// Makes room for cap blocks in total, so a counted walk allocates exactly.
bool hd_heap_reserve(struct hd_heap *h, size_t cap);
// Appends a block; blocks must be appended in address order.
bool hd_heap_push(struct hd_heap *h, uint64_t chunk_addr, uint64_t chunk_size,
		  enum hd_block_state state, enum hd_free_list list,
		  uint16_t arena, bool mmapped);
// Id of the block whose chunk [addr-16, addr-16+chunk) contains p, or -1
// (the walker's view; analyses ask hd_heap_find for usable bytes).
int64_t hd_heap_find_chunk(const struct hd_heap *h, uint64_t p);
// Id of the block whose user pointer is exactly addr, or -1.
int64_t hd_heap_find_exact(const struct hd_heap *h, uint64_t addr);
static inline void hd_heap_set(struct hd_heap *h, size_t id,
			       enum hd_block_state state,
			       enum hd_free_list list)
{
	h->flags[id] = (uint8_t)((h->flags[id] & HD_FLAG_MMAPPED) | state |
				 (list << HD_FLAG_LIST_SHIFT));
}
static inline enum hd_block_state hd_heap_state(const struct hd_heap *h,
						size_t id)
{
	return (enum hd_block_state)(h->flags[id] & HD_FLAG_STATE_MASK);
}
static inline enum hd_free_list hd_heap_list(const struct hd_heap *h,
					     size_t id)
{
	return (enum hd_free_list)((h->flags[id] & HD_FLAG_LIST_MASK) >>
				   HD_FLAG_LIST_SHIFT);
}
// What malloc_usable_size says for block id: an mmapped chunk has no next
// chunk whose prev_size field it could borrow.
static inline uint64_t hd_heap_usable(const struct hd_heap *h, size_t id)
{
	uint64_t chunk = (uint64_t)h->chunk16[id] << 4;
	uint64_t header = (h->flags[id] & HD_FLAG_MMAPPED) ? 16 : 8;
	return chunk < header ? 0 : chunk - header;
}
// The smallest malloc request that could have made block id: the block
// says how much room malloc gave, not how much was asked, so a request
// between this and hd_heap_usable() made it. glibc rounds a request r up
// to the chunk (r + 8 + 15) & ~15 (at least 32), and an mmapped chunk
// further up to a page (nb + 8 rounded to 4096).
static inline uint64_t hd_heap_min_request(const struct hd_heap *h, size_t id)
{
	uint64_t chunk = (uint64_t)h->chunk16[id] << 4;
	if (h->flags[id] & HD_FLAG_MMAPPED)
		return chunk > 4096 + 32 ? chunk - 4096 - 32 : 0;
	return chunk <= 32 ? 0 : chunk - 23;
}
// Records a problem (message formatted); the walk goes on.
void hd_heap_problem_add(struct hd_heap *h, uint64_t address,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

// ------------------------------------------------------ other allocators

// An allocator heapdom does not walk, found in the target (allocator.c).
struct hd_foreign_alloc {
	const char *name;    // "jemalloc", "tcmalloc", "mimalloc", "musl's malloc"
	char evidence[256];  // "libjemalloc.so.2", "statically linked: symbol ..."
};
// True (and *ret filled) if the target loaded or links such an allocator.
bool hd_heap_find_foreign(struct hd_target *t, struct hd_debuginfo *di,
			  struct hd_foreign_alloc *ret);

#endif
