// The glibc walker's shared state: structure layouts, segments, and the
// stages of the walk (layout, arenas, chunks, free lists).
#ifndef HD_GLIBC_INTERNAL_H
#define HD_GLIBC_INTERNAL_H

#include "heap/heap_internal.h"

// Offsets of the glibc structures the walker reads, from DWARF or from
// what the data shows.
struct glibc_layout {
	uint64_t state_size;
	uint64_t off_fastbins;
	unsigned nfastbins;
	uint64_t off_top;
	uint64_t off_bins;
	unsigned nbins; // entries of bins[] (2 per bin)
	uint64_t off_next;
	uint64_t off_system_mem;
	uint64_t heap_info_size; // 0 until known
	uint64_t heap_off_ar_ptr, heap_off_prev, heap_off_size;
	uint64_t heap_max_size;
	uint64_t tcache_off_counts, tcache_off_entries;
	unsigned tcache_count_size; // bytes per counts[] element
	unsigned tcache_nbins;
	uint64_t tcache_struct_chunk; // chunk size of tcache_perthread_struct
	// mp_ (only with debug info)
	bool mp_known;
	uint64_t mp_addr, mp_size;
	uint64_t mp_off_sbrk_base, mp_off_n_mmaps, mp_off_mmap_threshold;
};

struct glibc_segment {
	uint64_t start, end; // chunks lie in [start, end)
	uint64_t map_start;  // where the allocator's memory begins
	uint16_t arena;      // HD_ARENA_NONE for mmapped chunks
	uint64_t top;        // the arena's top chunk if it lies here, else 0
	bool mmapped;
};

struct glibc_walk {
	struct hd_target *t;
	struct hd_debuginfo *di;
	struct hd_heap *h;
	struct glibc_layout lay;
	struct glibc_segment *segs;
	size_t num_segs, cap_segs;
	// Views of the arena heaps, kept for fast word reads.
	struct hd_view *views;
	size_t num_views, cap_views;
};

// Reads a word, from a kept view if possible.
bool glibc_read64(struct glibc_walk *w, uint64_t addr, uint64_t *ret);

void glibc_layout_default(struct glibc_layout *lay);
// Fills the layout and main_arena/mp_ addresses from libc's debug info;
// HD_ERROR_NOT_FOUND if libc has none.
struct hd_error *glibc_layout_from_debuginfo(struct glibc_walk *w,
					     uint64_t *main_arena);
// Finds main_arena from the data of the modules' writable mappings and
// fixes the layout offsets that the data reveals.
struct hd_error *glibc_find_main_arena(struct glibc_walk *w,
				       uint64_t *main_arena);
// Finds a main_arena that malloc never initialised (as libc's data holds
// it before the first allocation: all zero but its next pointer, which
// points at itself) in libc's writable data; false if there is none.
bool glibc_find_fresh_main_arena(struct glibc_walk *w, uint64_t *main_arena);
// Follows the arena ring and adds every arena and its heap segments.
struct hd_error *glibc_collect_arenas(struct glibc_walk *w,
				      uint64_t main_arena);
// Adds a segment for every mmapped chunk found in anonymous mappings.
struct hd_error *glibc_find_mmapped(struct glibc_walk *w);
// Walks the chunks of every segment, appending blocks in address order.
struct hd_error *glibc_walk_chunks(struct glibc_walk *w);
// Marks the chunks held by tcache, fastbins and bins.
struct hd_error *glibc_walk_free_lists(struct glibc_walk *w);

#endif
