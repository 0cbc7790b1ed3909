// gperftools' tcmalloc (2.10, as Debian 12 ships it in
// libtcmalloc_minimal.so.4 and libtcmalloc.so.4) as a backend of the
// allocator seam (backend.h): what the files of this folder share.
//
// tcmalloc keeps no header before a block. Its state, as heapdom reads it
// (x86-64, the layouts of gperftools 2.10's sources):
// - the page heap (Static::pageheap_): a packed size-class cache, then the
//   page map, a two-level radix tree of 2^17 root entries, each a leaf of
//   2^18 Span pointers, keyed by page number (8 KiB pages); an in-use span
//   is mapped on every page, a free span on its first and last; then the
//   sets of large free spans and free_[128], the lists of free spans of
//   each length (a dummy Span "normal" and a dummy "returned" each);
// - a Span (48 bytes): start page, length in pages, next, prev, objects
//   (the span's own list of free objects), then a word of bit-fields:
//   refcount:16 (objects handed out of the span), sizeclass:8,
//   location:2 (in use, on the normal or the returned free lists);
// - the central free lists (Static::central_cache_[128], 1216 bytes each):
//   lock, size class, the dummy heads of its empty and non-empty spans,
//   counters, then the transfer cache: 64 slots of (head, tail) chains of
//   num_objects_to_move objects each, used_slots_ of them filled;
// - the size map (Static::sizemap_): num_objects_to_move_[128],
//   class_to_size_[128], class_to_pages_[128], num_size_classes;
// - the thread caches, a list from ThreadCache::thread_heaps_ (exported):
//   each holds per size class a FreeList (list head, length, ...), then
//   its size, owner thread and next/prev links.
// Debian ships no debug info and exports only thread_heaps_: the page
// heap, central free lists and size map are found by their shapes in the
// library's data (locate.c).
#ifndef HD_HEAP_TCMALLOC_INTERNAL_H
#define HD_HEAP_TCMALLOC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "heap/backend.h"

#define TC_PAGE_SHIFT 13
#define TC_CLASSES_MAX 128
#define TC_MAX_SIZE (256u * 1024)  // kMaxSize: the largest small class
#define TC_MAX_PAGES 128           // kMaxPages: free_[] lists

// The page map (TCMalloc_PageMap2<35>).
#define TC_LEAF_BITS 18
#define TC_ROOT_LEN (1u << 17)
#define TC_LEAF_LEN (1u << TC_LEAF_BITS)

// PageHeap: pagemap_cache_ (PackedCache<35>, 2^16 words), pagemap_ (root_
// then allocator_), large_normal_ and large_returned_ (std::set, 48 bytes
// each), free_[kMaxPages] (two dummy Spans each), stats_.
#define TC_PH_ROOT 0x80000
#define TC_PH_ALLOCATOR (TC_PH_ROOT + 8 * TC_ROOT_LEN)
#define TC_PH_FREE (TC_PH_ALLOCATOR + 8 + 2 * 48)
#define TC_PH_STATS (TC_PH_FREE + TC_MAX_PAGES * 2 * TC_SPAN_SIZE)
#define TC_PH_SIZE (TC_PH_STATS + 11 * 8)

// Span
#define TC_SPAN_SIZE 48
#define TC_SPAN_START 0
#define TC_SPAN_LENGTH 8
#define TC_SPAN_NEXT 16
#define TC_SPAN_PREV 24
#define TC_SPAN_OBJECTS 32
#define TC_SPAN_BITS 40
enum tc_location { TC_IN_USE, TC_ON_NORMAL, TC_ON_RETURNED };

// CentralFreeListPadded
#define TC_CFL_SIZE 1216
#define TC_CFL_CLASS 8
#define TC_CFL_EMPTY 16
#define TC_CFL_NONEMPTY 64
#define TC_CFL_NUM_SPANS 112
#define TC_CFL_COUNTER 120
#define TC_CFL_SLOTS 128
#define TC_CFL_MAX_SLOTS 64
#define TC_CFL_USED_SLOTS 1152

// SizeMap, from class_to_size_
#define TC_SM_MOVE (-4 * TC_CLASSES_MAX)

// ThreadCache
#define TC_TC_SIZE 4160
#define TC_FL_SIZE 32     // FreeList: list_, length_ (u32), ...
#define TC_TC_BYTES 4096  // size_ (int32)
#define TC_TC_TID 4128
#define TC_TC_NEXT 4144

enum tc_list {
	TC_LIST_NONE,
	TC_LIST_THREAD,   // in a thread cache's free list
	TC_LIST_TRANSFER, // in a transfer cache slot of a central free list
	TC_LIST_CENTRAL,  // on its span's object list (central free list)
	TC_LIST_PAGEHEAP, // a free span of the page heap, its pages mapped
	TC_LIST_RETURNED, // a free span whose pages went back to the system
	TC_LIST_COUNT
};

// What locate.c found.
struct tc_globals {
	uint64_t pageheap;      // Static::pageheap_
	uint64_t central;       // Static::central_cache_
	uint64_t class_to_size; // Static::sizemap_.class_to_size_
	uint64_t class_to_pages;
	uint64_t thread_heaps;  // &ThreadCache::thread_heaps_
	unsigned num_classes;
	uint32_t size[TC_CLASSES_MAX];
	uint32_t move[TC_CLASSES_MAX];
	uint64_t pages[TC_CLASSES_MAX];
	char method[192];
};

// The library's "gperftools X.Y" string, as "X.Y" in ret.
bool tc_find_version(const char *file, char *ret, size_t len);

// Finds the globals in module m's data by their shapes. *inited is
// Static::inited_ (false: tcmalloc never initialised, nothing to find).
struct hd_error *tc_locate(const struct hd_heap_source *src,
			   const struct hd_module *m, struct tc_globals *ret,
			   bool *inited);

bool tc_read64(struct hd_target *t, uint64_t addr, uint64_t *ret);

struct hd_error *tc_walk(const struct hd_heap_source *src, struct hd_heap *h,
			 const struct tc_globals *g);

#endif
