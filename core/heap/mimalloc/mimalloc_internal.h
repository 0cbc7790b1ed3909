// mimalloc 2.x as heapdom reads it: the layouts of a release build of
// mimalloc 2.0.9 on x86-64 (Debian 12's libmimalloc2.0), learnt from its
// include/mimalloc-types.h and src/segment.c and checked against the
// library itself. Nothing here is mimalloc's code: only offsets and sizes.
//
// A segment is MI_SEGMENT_SIZE (32 MiB) aligned and starts with its header
// (struct mi_segment_s), whose `cookie` is the segment's address xor the
// main heap's cookie. The header ends with an array of slices (64 KiB
// each); a run of slices is a span, free (block size 0) or a page (struct
// mi_page_s, 80 bytes, one block size, blocks from the page start up to
// `capacity`, with `reserved` blocks' room). Huge segments hold one page
// bigger than 32 MiB.
#ifndef HD_MIMALLOC_INTERNAL_H
#define HD_MIMALLOC_INTERNAL_H

#include <stdint.h>

#include "heap/backend.h"

// The one version whose layout this is.
#define MI_KNOWN_VERSION "2.0.9"

#define MI_SEGMENT_SHIFT 25
#define MI_SEGMENT_SIZE (1ULL << MI_SEGMENT_SHIFT)
#define MI_SLICE_SHIFT 16
#define MI_SLICE_SIZE (1ULL << MI_SLICE_SHIFT)
#define MI_SLICES_PER_SEGMENT 512
#define MI_HUGE_BLOCK_SIZE 0x80000000ULL
// Small blocks (8 to 1024 bytes) start 3 * 128 bytes into their page.
#define MI_SMALL_START_OFFSET 384
#define MI_MEDIUM_OBJ_SIZE_MAX (128ULL << 10)
// A huge segment is never bigger than this here: a bound for corrupt data.
#define MI_MAX_SEGMENT_SLICES (1ULL << 24) // 1 TiB

// struct mi_segment_s
#define SEG_ABANDONED 192
#define SEG_USED 208
#define SEG_COOKIE 216
#define SEG_SEGMENT_SLICES 224
#define SEG_INFO_SLICES 232
#define SEG_KIND 240
#define SEG_SLICE_ENTRIES 248
#define SEG_THREAD_ID 256
#define SEG_SLICES 264
#define SEG_HEADER_SIZE (SEG_SLICES + (MI_SLICES_PER_SEGMENT + 1) * PAGE_SIZE)

// struct mi_page_s (a slice)
#define PAGE_SIZE 80
#define PAGE_SLICE_COUNT 0
#define PAGE_SLICE_OFFSET 4
#define PAGE_CAPACITY 10
#define PAGE_RESERVED 12
#define PAGE_FLAGS 14
#define PAGE_FREE 16
#define PAGE_USED 24
#define PAGE_BLOCK_SIZE 28
#define PAGE_LOCAL_FREE 32
#define PAGE_THREAD_FREE 40
#define PAGE_HEAP 48

// struct mi_heap_s
#define HEAP_TLD 0
#define HEAP_DELAYED_FREE 2840
#define HEAP_THREAD_ID 2848
#define HEAP_COOKIE 2864
#define HEAP_PAGE_COUNT 3024
#define HEAP_NEXT 3048
#define HEAP_SIZE 3064
// struct mi_tld_s
#define TLD_HEAP_BACKING 16
#define TLD_HEAPS 24

// Lists of the block table: the allocator's names.
enum {
	MI_LIST_NONE,
	MI_LIST_FREE,        // page->free: malloc takes from it
	MI_LIST_LOCAL_FREE,  // page->local_free: freed by the owning thread
	MI_LIST_THREAD_FREE, // page->xthread_free: freed by another thread
	MI_LIST_DELAYED,     // heap->thread_delayed_free: ditto, page full
	MI_LIST_UNEXTENDED,  // past capacity: not carved into blocks yet
	MI_NUM_LISTS,
};

// A heap (struct mi_heap_s) heapdom found: the main heap in the library's
// data, a thread's default heap through its TLS, a page's owner.
struct mi_heap_info {
	uint64_t addr;
	uint64_t thread_id;  // the owning thread's thread pointer
	uint64_t delayed;    // thread_delayed_free
	uint16_t region;
	bool main, tls, bad;
};

// A segment found by its cookie; header is its first SEG_HEADER_SIZE bytes.
struct mi_segment_info {
	uint64_t addr, size;
	uint8_t *header;
	uint64_t thread_id, info_slices, slice_entries, used, abandoned;
	unsigned kind;
};

struct mi_walk {
	struct hd_target *t;
	struct hd_heap *h;
	const struct hd_module *lib; // the module that is mimalloc
	uint64_t main_heap, main_cookie;
	char version[16];
	char version_how[200];
	struct mi_heap_info *heaps;
	size_t num_heaps, cap_heaps;
	struct mi_segment_info *segs;
	size_t num_segs;
	// Blocks on heaps' thread_delayed_free lists, sorted.
	uint64_t *delayed;
	size_t num_delayed;
	uint16_t abandoned_region;
};

// What one page is, decoded from its slice.
struct mi_page {
	uint64_t addr;     // the slice's address in the segment header
	uint64_t start;    // first block
	uint64_t size;     // bytes from start to the page's end
	uint64_t bsize;
	uint32_t capacity, reserved, used;
	uint64_t free, local_free, thread_free, heap;
};

// What the walk counted, for facts.
struct mi_counts {
	size_t pages, free_spans, lists[MI_NUM_LISTS], used;
	uint64_t free_span_bytes, unextended_bytes;
	size_t delayed_matched;
};

struct mi_block_walk {
	struct mi_counts *c;
	uint8_t *state; // per block of the page: its list, 0 = used
};

// pages.c: the lists of the table; every page of a segment; one page's
// blocks.
extern const struct hd_free_list hd_mi_lists[MI_NUM_LISTS];
typedef bool (*mi_page_fn)(struct mi_walk *w, const struct mi_segment_info *s,
			   const struct mi_page *p, void *arg);
// Calls fn for every page of segment s (false stops: returns false). With
// report, pages are decoded and checked (problems recorded); without,
// only p->heap is set. Free spans are counted in c when not NULL.
bool hd_mi_for_each_page(struct mi_walk *w, const struct mi_segment_info *s,
			 bool report, mi_page_fn fn, void *arg,
			 struct mi_counts *c);
// A mi_page_fn: the page's blocks and its unextended room into the table
// (arg: a struct mi_block_walk).
bool hd_mi_walk_page(struct mi_walk *w, const struct mi_segment_info *s,
		     const struct mi_page *p, void *arg);
// walk.c: the region of a page's blocks (its heap's, or "abandoned").
uint16_t hd_mi_page_region(struct mi_walk *w, const struct mi_segment_info *s,
			   uint64_t heap);

// find.c: the library, its version, the main heap, the threads' heaps and
// the segments.
const struct hd_module *hd_mi_find_lib(struct hd_target *t, char *evidence,
				       size_t len);
void hd_mi_version(struct mi_walk *w);
struct hd_error *hd_mi_find_main_heap(struct mi_walk *w);
void hd_mi_find_tls_heaps(struct mi_walk *w);
struct mi_heap_info *hd_mi_add_heap(struct mi_walk *w, uint64_t addr,
				    bool tls);
struct hd_error *hd_mi_find_segments(struct mi_walk *w);
// Whether some segment has a page in use (w->main_cookie known).
bool hd_mi_in_use(struct mi_walk *w);

// The smallest request mimalloc serves with a block of bsize bytes.
uint64_t hd_mi_min_request(uint64_t bsize);

// 8 bytes of the target at addr; false (the error dropped) if unreadable.
static inline bool hd_mi_read64(struct hd_target *t, uint64_t addr,
				uint64_t *ret)
{
	struct hd_error *err = hd_target_read_u64(t, addr, ret);
	hd_error_destroy(err);
	return !err;
}

static inline uint64_t hd_mi_u64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}
static inline uint32_t hd_mi_u32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}
static inline uint16_t hd_mi_u16(const uint8_t *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, 2);
	return v;
}

#endif
