// The allocator seam: what a backend (core/heap/<allocator>/) gives the
// rest of heapdom. docs/allocators.md describes it for whoever writes the
// next one; registry.c lists the backends in the order they are tried.
//
// A backend turns one allocator's memory into the neutral block table of
// heap_internal.h. It is written for the allocators of Linux processes:
// - glibc: chunks with a 16-byte header in arenas and mmapped chunks, free
//   state from lists (tcache, fastbins, bins) and the next chunk's header;
// - jemalloc: slabs of one size class with no header per block, free
//   state in each slab's bitmap, large extents; metadata (arenas, bins,
//   extent descriptors, the rtree) in base allocations outside the blocks;
// - tcmalloc: spans of pages carved into one size class, free objects on
//   per-thread/per-cpu and central free lists, the pagemap outside;
// - mimalloc: segments of pages, each page one block size with no header,
//   free lists per page (local, thread-free, free), the segment header in
//   the segment's first bytes;
// - musl mallocng: groups of slots sized by class, a 4-byte in-band header
//   before each slot's user area, free state in the group's meta bitmaps
//   (avail_mask, freed_mask), the meta areas outside the groups.
// So: an extent may have no header (shape head 0); usable sizes may be a
// size class (shape) or exact; free state may come from bitmaps, and the
// list name is then the allocator's word for it ("slab free", "avail");
// the regions are arenas, spans, segments or groups; metadata outside the
// blocks is declared so the graph claims it and never scans it as a root.
#ifndef HD_HEAP_BACKEND_H
#define HD_HEAP_BACKEND_H

#include "heap/heap_internal.h"

// What a walk starts from.
struct hd_heap_source {
	struct hd_target *t;
	struct hd_debuginfo *di; // may be NULL
	const struct hd_heap_options *opts; // may be NULL
	// Threads a walk may use (hd_heap_walk_threads); threads_asked: the
	// user chose them (--jobs), so a small heap is split too. The heap
	// does not depend on either.
	unsigned threads;
	bool threads_asked;
};

struct hd_heap_backend {
	// "glibc": the allocator's name in reports and in JSON's allocator
	// object.
	const char *name;
	// Whether the target allocates with this allocator: cheap evidence
	// (a module, a symbol, a magic word in a known place) written to
	// evidence for messages. The registry walks every backend that says
	// yes (a process may use several allocators) and merges their heaps
	// (merge.c); --allocator NAME walks the named ones only, whatever
	// their detect says.
	bool (*detect)(const struct hd_heap_source *src, char *evidence,
		       size_t len);
	// Fills h (allocated, empty): calls hd_heap_declare, then adds
	// blocks in address order, regions, segments, metadata, facts, and
	// problems found on the way; sets h->info.method (and h->version
	// when known). An error means no heap of this allocator was found;
	// a damaged heap is a heap with problems. A heap the allocator never
	// initialised is empty with info.no_allocation_yet and
	// info.empty_reason set.
	struct hd_error *(*walk)(const struct hd_heap_source *src,
				 struct hd_heap *h);
	// The smallest request that could have made block id (for typing's
	// array-length ranges); NULL when the allocator keeps no rounding
	// that narrows it (0 is then assumed). This and block_label get the
	// heap's table, which on a merged heap holds other allocators'
	// blocks too: read block id through the accessors of
	// heap_internal.h (hd_heap_extent, hd_heap_state, hd_heap_block_list
	// gives the backend's own list number), not h->lists or h->shapes.
	uint64_t (*min_request)(const struct hd_heap *h, size_t id);
	// The allocator rounds a request up by less than this (glibc: 24,
	// chunk alignment and the size word borrowed from the next chunk):
	// a block whose usable size is within it of an object's size holds
	// one object, not an array. 0 for an allocator of exact sizes.
	uint32_t request_slack;
	// The allocator's own name for a block it keeps (state internal or
	// free): "struct tcache_perthread_struct", "free chunk". NULL: the
	// state's name.
	const char *(*block_label)(const struct hd_heap *h, size_t id);
	// Labels of the allocator's node and groups in semantic reports.
	struct hd_allocator_labels labels;
};

// Backends, most specific first (registry.c).
extern const struct hd_heap_backend *const hd_heap_backends[];
extern const size_t hd_heap_num_backends;

#endif
