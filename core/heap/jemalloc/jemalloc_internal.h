// jemalloc 5.x as a backend of the allocator seam (backend.h): what the
// files of this folder share.
//
// jemalloc keeps no header before a block. Its state, as heapdom reads it:
// - the global extent map (emap, an rtree keyed by page) maps every page
//   of an active slab, and the first and last page of every other extent
//   (large, dirty, muzzy, retained), to the extent's descriptor (edata);
// - an edata says its arena, whether it is a slab, its state, its size
//   class and, for a slab, the bitmap of its free regions;
// - the arenas (`arenas[]`) hold their bins, the list of the thread caches
//   associated with them (when jemalloc keeps statistics), and their base,
//   the allocator's own metadata mappings;
// - a thread cache (tcache) holds, per size class, a stack of regions the
//   slab bitmaps count as allocated but the program freed.
// The layouts are per version (layout.c), learned from jemalloc's sources;
// Debian ships no debug info, so the globals are found from symbols when
// the build has them and from the code of exported functions otherwise
// (locate.c), each checked by the shape of what it points at.
#ifndef HD_HEAP_JEMALLOC_INTERNAL_H
#define HD_HEAP_JEMALLOC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "heap/backend.h"

enum je_list {
	JE_LIST_NONE,
	JE_LIST_SLAB,     // free in its slab's bitmap
	JE_LIST_TCACHE,   // in a thread cache's bin: the program freed it
	JE_LIST_DIRTY,    // a dirty extent (pages not yet purged)
	JE_LIST_MUZZY,    // a muzzy extent (lazily purged)
	JE_LIST_RETAINED, // retained address space: reserve
	JE_LIST_COUNT
};

enum { JE_SHAPE_PLAIN };

// Offsets and constants of one jemalloc version and configuration.
struct je_layout {
	const char *version;     // "5.3.0"
	unsigned lg_page, lg_quantum, lg_vaddr;
	unsigned nsizes, nbins, tcache_nbins_max;
	unsigned arena_limit;    // entries of arenas[]
	// edata_t
	unsigned edata_size, edata_addr, edata_size_esn, edata_slab_bitmap;
	unsigned bitmap_groups;  // u64 groups of a slab's bitmap
	unsigned slab_maxregs;
	// e_bits
	unsigned bits_arena_width, bits_slab_shift, bits_state_shift,
		bits_szind_shift, bits_szind_width, bits_nfree_shift,
		bits_nfree_width;
	// rtree inside the emap
	unsigned rtree_base, rtree_root;
	unsigned rtree_bits0, rtree_bits1; // key bits of the two levels
	unsigned edata_align;
	// arena_t
	unsigned arena_size, arena_tcache_ql, arena_ind, arena_base,
		arena_bins, arena_mapped;
	unsigned bin_size, bin_curregs, bin_curslabs;
	// base_t, base_block_t
	unsigned base_blocks, base_allocated, base_resident, base_mapped;
	unsigned base_block_next;
	// tcache_slow_t, tcache_t, cache_bin_t
	unsigned tslow_arena, tslow_dyn_alloc, tslow_tcache, tslow_size;
	unsigned tcache_bins, cache_bin_size, cache_bin_full,
		cache_bin_empty;
};

extern const struct je_layout je_layout_5_3_0;

// Extent states (edata.h).
enum je_state {
	JE_ACTIVE = 0,
	JE_DIRTY = 1,
	JE_MUZZY = 2,
	JE_RETAINED = 3,
};

// Size class szind's size (sc.c's classes for the layout's quantum and
// page); 0 past the table.
uint64_t je_index2size(const struct je_layout *l, unsigned szind);

// The version string of jemalloc ("5.3.0-0-g<sha>") found in file, or
// false.
bool je_find_version(const char *file, char *ret, size_t len);

// What the walk found of jemalloc's globals.
struct je_globals {
	const struct je_layout *l;
	uint64_t emap;     // the emap / its rtree
	uint64_t b0;       // the base of arena 0 (the rtree's base)
	uint64_t arenas;   // arenas[]
	char method[192];  // how the globals were found
};

// Finds the emap and arenas[] of the jemalloc in module (NULL: search
// every module's symbols) from symbols, or from the code of its exported
// functions; each candidate is checked by its shape.
struct hd_error *je_locate(const struct hd_heap_source *src,
			   const struct hd_module *m,
			   const struct je_layout *l, struct je_globals *ret);

// True if the module's .bss is all zeros: jemalloc never initialised.
bool je_never_initialised(struct hd_target *t, const struct hd_module *m);

// True if the word at emap looks like jemalloc's emap: a base of index 0,
// and a root whose first leaf maps a page to a descriptor of that page.
bool je_emap_shape(struct hd_target *t, const struct je_layout *l,
		   uint64_t emap, uint64_t *b0);

// One arena.
struct je_arena {
	uint64_t addr;   // arena_t
	unsigned ind;
	uint16_t region;
	uint64_t base;   // its base_t
	uint64_t slabs, large, slab_bytes, large_bytes, large_extent_bytes,
		dirty, muzzy,
		retained, tcaches, tcache_blocks, tcache_bytes, used_regions;
};

// The walk's state.
struct je_walk {
	const struct hd_heap_source *src;
	struct hd_heap *h;
	const struct je_layout *l;
	struct je_globals g;
	struct je_arena *arenas;
	size_t num_arenas;
	// Indexed by arena index: position in arenas + 1 (0: none).
	uint32_t *arena_pos;
	// Segment being built (adjacent extents of one arena merge).
	struct hd_heap_segment seg;
	bool seg_open;
	uint64_t extents, slabs, large;
	size_t tcaches, base_blocks; // read so far, over all arenas
	bool missing_arena_reported;
};

// Reads arenas[] (found by locate) into w->arenas and declares their
// regions.
struct hd_error *je_read_arenas(struct je_walk *w);
// Walks the rtree: every extent in address order, its blocks and segments.
struct hd_error *je_walk_extents(struct je_walk *w);
// Marks the regions every thread cache holds free (list tcache) and each
// tcache's stack allocation internal.
struct hd_error *je_walk_tcaches(struct je_walk *w);
// Declares the bases (the allocator's metadata mappings).
struct hd_error *je_walk_bases(struct je_walk *w);

bool je_read64(struct hd_target *t, uint64_t addr, uint64_t *ret);
bool je_read32(struct hd_target *t, uint64_t addr, uint32_t *ret);

#endif
