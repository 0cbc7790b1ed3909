// The glibc walker's shared state: structure layouts, segments, and the
// stages of the walk (layout, arenas, chunks, free lists).
#ifndef HD_GLIBC_INTERNAL_H
#define HD_GLIBC_INTERNAL_H

#include "heap/backend.h"

// glibc's lists: indices of the backend's list table (backend.c declares
// their names), kept in the neutral table's flags.
enum glibc_list {
	HD_LIST_NONE = 0,
	HD_LIST_TCACHE,
	HD_LIST_FASTBIN,
	HD_LIST_UNSORTED,
	HD_LIST_SMALL,
	HD_LIST_LARGE,
	HD_LIST_TOP,
	HD_LIST_UNKNOWN, // free by its neighbour's header, on no list we found
	HD_LIST_COUNT,
};

// glibc's shapes: a chunk's extent starts at its 16-byte header (prev_size
// and size); an arena chunk's usable bytes run 8 bytes into the next
// chunk (its prev_size word), an mmapped chunk's stop at its end.
enum { GLIBC_SHAPE_ARENA = 0, GLIBC_SHAPE_MMAPPED = 1 };
#define HD_ARENA_NONE HD_REGION_NONE

// An arena as the walk reads it; each becomes a region of the table.
struct hd_arena {
	uint64_t addr;        // address of its struct malloc_state
	bool is_main;
	uint64_t system_mem;  // malloc_state.system_mem
	uint64_t top;         // top chunk address
	size_t num_heaps;     // heap segments (1 for the main arena)
};

// Declares glibc's shapes and lists in h (before the first chunk).
void glibc_heap_declare(struct hd_heap *h);
// "tcache", "fastbin", ...: list l's name in reports.
const char *glibc_list_name(enum glibc_list l);

// Appends the chunk [chunk_addr, chunk_addr + chunk_size) as a block.
static inline bool hd_heap_push(struct hd_heap *h, uint64_t chunk_addr,
				uint64_t chunk_size, enum hd_block_state state,
				enum glibc_list list, uint16_t arena,
				bool mmapped)
{
	return hd_heap_add(h, chunk_addr + 16, chunk_size, state, list, arena,
			   mmapped ? GLIBC_SHAPE_MMAPPED : GLIBC_SHAPE_ARENA);
}
static inline int64_t hd_heap_find_chunk(const struct hd_heap *h, uint64_t p)
{
	return hd_heap_find_extent(h, p);
}
static inline enum glibc_list hd_heap_list(const struct hd_heap *h, size_t id)
{
	return (enum glibc_list)hd_heap_block_list(h, id);
}
static inline uint64_t glibc_chunk_size(const struct hd_heap *h, size_t id)
{
	return hd_heap_extent(h, id);
}
static inline bool glibc_chunk_mmapped(const struct hd_heap *h, size_t id)
{
	return (h->flags[id] >> HD_FLAG_SHAPE_SHIFT) == GLIBC_SHAPE_MMAPPED;
}

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
	// glibc 2.42+: counts[] became num_slots[], the room left in each bin,
	// and bins from tcache_small_bins on hold a range of sizes.
	bool tcache_slots;
	unsigned tcache_small_bins;
	// mp_ (only with debug info)
	bool mp_known;
	uint64_t mp_addr, mp_size;
	uint64_t mp_off_sbrk_base, mp_off_n_mmaps, mp_off_mmap_threshold;
};

// One row of the version table (versions.c): the layouts of glibc 2.lo
// to 2.hi on x86-64, taken from each release's malloc/malloc.c and
// malloc/arena.c. Rows whose layouts are identical share one entry.
enum glibc_tcache_key {
	GLIBC_KEY_NONE,    // tcache_entry is {next} (2.26-2.28)
	GLIBC_KEY_TCACHE,  // key = the owning tcache_perthread_struct (2.29-2.33)
	GLIBC_KEY_RANDOM,  // key = the process-wide tcache_key (2.34+)
};
struct glibc_version {
	unsigned lo, hi;     // minor versions of glibc 2.x
	uint64_t off_fastbins;
	unsigned nfastbins;  // 0: no fastbins (2.43)
	uint64_t off_top, off_bins, off_next, off_system_mem, state_size;
	uint64_t heap_info_size;
	unsigned tcache_count_size; // 0: no tcache
	unsigned tcache_nbins;
	uint64_t tcache_off_entries;
	uint64_t tcache_struct_chunk;
	bool tcache_slots;
	enum glibc_tcache_key key;
	bool safe_linking;
};
extern const struct glibc_version glibc_versions[];
extern const size_t glibc_num_versions;
// Copies row v's offsets into lay (keeping what the row does not hold).
void glibc_layout_from_version(struct glibc_layout *lay,
			       const struct glibc_version *v);

// What the walk learned about the version: the rows still possible and
// why each evidence narrowed them.
struct glibc_evidence {
	bool from_dwarf;
	// tcache entries seen and what their key word held.
	size_t entries, keys_tcache, keys_zero, keys_same;
	uint64_t first_key;
	int safe_votes;       // > 0 safe-linked, < 0 plain
	uint64_t heap_info;   // measured from a thread arena, 0 if none
	uint64_t tcache_chunk; // tcache struct's chunk size seen, 0 if none
	bool arena_by_symbol;  // main_arena's symbol without its type's DWARF
};

struct glibc_segment {
	uint64_t start, end; // chunks lie in [start, end)
	uint64_t map_start;  // where the allocator's memory begins
	uint16_t arena;      // HD_ARENA_NONE for mmapped chunks
	uint64_t top;        // the arena's top chunk if it lies here, else 0
	bool mmapped;
	// The arena's top lies in none of its heaps (damaged): a chunk that
	// ends this heap exactly is its top.
	bool top_lost;
};

// Bytes of a heap the chunk walk could not read as chunks.
struct glibc_gap {
	uint64_t start, end;
};

struct glibc_walk {
	struct hd_target *t;
	struct hd_debuginfo *di;
	struct hd_heap *h;
	// Arenas in ring order; block and segment arena indices point here.
	struct hd_arena *arenas;
	size_t num_arenas, cap_arenas;
	// What the free lists showed (facts of the glibc backend).
	bool safe_linking;
	size_t num_tcaches;
	struct glibc_layout lay;
	struct glibc_segment *segs;
	size_t num_segs, cap_segs;
	// In address order (segments are walked in order).
	struct glibc_gap *gaps;
	size_t num_gaps, cap_gaps;
	// Views of the arena heaps, kept for fast word reads.
	struct hd_view *views;
	size_t num_views, cap_views;
	// Rows of glibc_versions[] the layout and the data allow (bit i).
	uint32_t candidates;
	struct glibc_evidence ev;
	// Set while main_arena is searched again with its ring not required
	// to close (a damaged ring).
	bool loose_ring;
	// The version decided ("2.27-2.28", "2.36") and how, empty if
	// unknown: walk.c hands them to the table (info.version).
	char version[32];
	char version_source[256];
	// Threads the chunk walk may use, and whether the user chose them
	// (hd_heap_source).
	unsigned threads;
	bool threads_asked;
};

// A piece of an arena heap that a thread walks ahead of the sequential
// walk (split.c). Chunks that start in [lo, hi) (offsets in the heap)
// are its share; it starts at the first offset from lo where a run of
// headers chains validly (lo itself when lo is 0) and walks plain chunks
// only: any chunk the sequential walk would report, or the heap's top
// and its last 32 bytes, end it.
#define GLIBC_SYNC_RUN 32
struct glibc_piece {
	size_t seg; // its segment's index
	uint64_t lo, hi;
	// The offsets of the first chunks it walked (the run that found its
	// start), the chunks walked, the last one's offset, and where it
	// stopped: the first chunk at or past hi, or one it leaves to the
	// sequential walk.
	uint64_t sync[GLIBC_SYNC_RUN];
	unsigned num_sync;
	uint64_t count, last, end;
	// Taken by the sequential walk, which landed on sync[from]: the
	// chunks from there are the table's rows base to base + rows - 1,
	// written after the walk (glibc_fill_pieces).
	bool joined;
	unsigned from;
	size_t base, rows;
};

// The pieces of every heap, in address order: segment i's are
// pieces[first[i]] to pieces[first[i + 1] - 1].
struct glibc_split {
	struct glibc_piece *pieces;
	size_t num;
	size_t *first;
	unsigned threads;
};

// Keeps only the rows in mask if any remains; true if it narrowed.
bool glibc_narrow(struct glibc_walk *w, uint32_t mask);
// Rows whose layout matches w->lay's structure offsets (DWARF).
uint32_t glibc_rows_matching_layout(const struct glibc_layout *lay);
// Decides w->version from the rows left, the data and libc's name.
void glibc_decide_version(struct glibc_walk *w);

// Reads a word, from a kept view if possible.
bool glibc_read64(struct glibc_walk *w, uint64_t addr, uint64_t *ret);

void glibc_layout_default(struct glibc_layout *lay);
// Whether path names glibc's libc ("libc.so.6", "libc-2.17.so").
bool glibc_is_libc_path(const char *path);
// The target's libc module, or NULL.
const struct hd_module *glibc_libc_module(struct hd_target *t);
// Fills the layout and main_arena/mp_ addresses from libc's debug info;
// HD_ERROR_NOT_FOUND if libc has none.
struct hd_error *glibc_layout_from_debuginfo(struct glibc_walk *w,
					     uint64_t *main_arena);
// Finds main_arena from the data of the modules' writable mappings and
// fixes the layout offsets that the data reveals.
struct hd_error *glibc_find_main_arena(struct glibc_walk *w,
				       uint64_t *main_arena);
// Checks that addr (main_arena's symbol, without DWARF for its type) holds
// a malloc_state of a known layout, and sets the layout from the data.
bool glibc_main_arena_at(struct glibc_walk *w, uint64_t addr);
// Finds a main_arena that malloc never initialised (as libc's data holds
// it before the first allocation: all zero but its next pointer, which
// points at itself) in libc's writable data; false if there is none.
bool glibc_find_fresh_main_arena(struct glibc_walk *w, uint64_t *main_arena);
// Adds the heap segment of arena idx (main_arena) or its chain of heaps
// (a thread arena), reporting what is damaged (heaps.c).
struct hd_error *glibc_main_heap(struct glibc_walk *w, uint16_t idx);
struct hd_error *glibc_arena_heaps(struct glibc_walk *w, uint16_t idx);
// A thread arena follows the heap_info at the start of its HEAP_MAX_SIZE
// aligned heap, whose ar_ptr points back at it: is a such an arena?
bool glibc_thread_arena_shape(struct glibc_walk *w, uint64_t a,
			      const struct glibc_layout *lay);
// Follows the arena ring and adds every arena and its heap segments.
struct hd_error *glibc_collect_arenas(struct glibc_walk *w,
				      uint64_t main_arena);
// Adds a segment for every mmapped chunk found in anonymous mappings.
struct hd_error *glibc_find_mmapped(struct glibc_walk *w);
// Walks the chunks of every segment, appending blocks in address order.
struct hd_error *glibc_walk_chunks(struct glibc_walk *w);
// Cuts the arena heaps (data[i]: segment i's bytes, NULL when it is not
// walked) into pieces when the heap is large enough and threads are
// allowed, and walks them on the threads; sp->num is 0 when the walk is
// sequential.
struct hd_error *glibc_split_heaps(struct glibc_walk *w,
				   const uint8_t *const *data,
				   struct glibc_split *sp);
// Writes the rows of the pieces the sequential walk took, on the threads.
void glibc_fill_pieces(struct glibc_walk *w, const uint8_t *const *data,
		       struct glibc_split *sp);
void glibc_split_deinit(struct glibc_split *sp);
// Marks the chunks held by tcache, fastbins and bins.
struct hd_error *glibc_walk_free_lists(struct glibc_walk *w);
// The backend's walk (walk.c): every stage above, then the regions,
// segments, metadata and facts handed to the neutral table.
struct hd_error *glibc_walk_heap(const struct hd_heap_source *src,
				 struct hd_heap *h);

#endif
