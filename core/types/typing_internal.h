// The typing propagation's state and what its two files share: typing.c
// (the propagation on one thread, and the rest of the typing) and
// typing_threads.c (large levels followed on threads, --jobs). Nothing
// else may use them.
#ifndef HD_TYPING_INTERNAL_H
#define HD_TYPING_INTERNAL_H

#include "heap/heap_internal.h"
#include "target/views.h"
#include "types/typing.h"

// The module of an entry with no DWARF (a class name from a vtable).
#define NO_MODULE UINT16_MAX

#define MAX_WINDOWS 4

// Word reads from the heap segments, each viewed when first read (zero-copy
// for cores; a live process's segment is read whole, so only the segments
// typing reads from are: with the heap's references, few or none).
struct memory {
	struct hd_target *t;
	const struct hd_heap *h;
	struct hd_view *views; // per segment
	uint8_t *state;        // per segment: 0 not viewed, 1 viewed, 2 unreadable
	size_t n;
	bool no_memory;
	// Globals and locals are read through windows over their mappings,
	// each read whole when first needed: libc's thousands of globals
	// are a few reads, not one per pointer member.
	struct hd_view windows[MAX_WINDOWS];
	size_t num_windows, next_window;
};

// The propagation's state: its pass on one thread (typing.c) and a
// level's threads (typing_threads.c) work on it.
struct propagation {
	struct hd_typing *ty;
	const struct hd_heap *h;
	const struct hd_index *ix;
	const struct hd_refs *refs; // or NULL: read each member from memory
	struct memory mem;
	// The blocks to follow next (the next level: head stays 0).
	uint32_t *queue;
	size_t head, tail, cap;
	uint64_t *bits; // scratch for sorting a level, a bit per block
	size_t conflicts; // blocks whose typings contradicted each other
	uint64_t ambiguous; // blocks reached with two typings
	// Levels of min_level blocks or more are followed on threads
	// (hd_typing_follow_level_threads); threads_used: the most any level
	// had.
	unsigned threads, threads_used;
	size_t min_level;
	struct level_part *parts;
	// While a batch of a level is applied: the blocks whose typing went
	// from one entry to another (a bit per block, and their list).
	bool track;
	uint64_t *retyped;
	uint32_t *retyped_ids;
	size_t num_retyped, cap_retyped;
	uint64_t *batch; // a bit per block of the batch being followed
};

// The most threads a level is followed on.
#define HD_TYPING_MAX_THREADS 64
// Levels of fewer blocks are followed on one thread (a list's levels are
// its length's worth of a few blocks each), fewer still on small heaps, so
// that asked-for threads follow some levels of any heap.
#define THREADED_LEVEL 4096

// How many objects of size bytes a pointer says a block of usable bytes
// holds (0: it is too small to be one, the pointer lies about it): one
// when the rest is only malloc's rounding or the object is allocated one
// by one, an array when the block holds more. Characters are strings:
// always an array.
static inline uint32_t element_count(const struct hd_heap *h, size_t id,
				     uint64_t size, bool chars, bool one)
{
	uint64_t usable = hd_heap_usable(h, id);
	if (!size || usable < size)
		return 0;
	// The allocator rounds a request up by less than its slack.
	if (!chars && (one || usable - size < hd_heap_request_slack(h, id)))
		return 1;
	// An allocator of exact sizes (musl's) says what was asked: a block
	// that is no whole number of objects is one with bytes after it (a
	// flexible array member), not an array.
	if (!chars && h->exact_sizes && usable % size)
		return 1;
	uint64_t n = usable / size;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

// How many elements of an array entry block id surely holds: the block
// says how much room malloc gave, so an array typed by its usable size
// (count elements) may have been asked for with fewer, down to the
// smallest request that gives this block (hd_heap_min_request).
static inline uint32_t sure_count(const struct hd_heap *h,
				  const struct hd_type_entry *e, size_t id)
{
	if (e->count <= 1 || !e->size)
		return e->count;
	uint64_t esize = e->size / e->count;
	uint64_t lo = (hd_heap_min_request(h, id) + esize - 1) / esize;
	return lo < 1 ? 1 : lo < e->count ? (uint32_t)lo : e->count;
}

// The words of block id (typed by e) whose members type what they point
// at: elements past the ones the request surely held may be malloc's
// rounding, with stale bytes in it, and type nothing.
static inline uint64_t typed_words(const struct hd_heap *h,
				   const struct hd_type_entry *e, uint32_t id)
{
	uint64_t count = sure_count(h, e, id);
	uint64_t whole = hd_heap_usable(h, id) / ((uint64_t)e->element_words * 8);
	return (count < whole ? count : whole) * e->element_words;
}

// The blocks a block's references lead to are scattered: their typing and
// block-table entries are fetched a few blocks ahead of following them.
#define PREFETCH_AHEAD 8
static inline void prefetch_targets(const struct propagation *p, uint32_t id)
{
	const uint32_t *targets, *words;
	uint32_t n = hd_refs_row(p->refs, id, &targets, &words);
	if (n > 16)
		n = 16;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t t = targets[j] & ~HD_EDGE_INTERIOR;
		__builtin_prefetch(&p->ty->block_entry[t]);
		__builtin_prefetch(&p->ty->strength[t]);
		__builtin_prefetch(&p->h->span[t]);
		__builtin_prefetch(&p->h->flags[t]);
	}
}

// typing.c: entries and the propagation on one thread.
uint32_t hd_typing_find_entry(const struct hd_typing *ty, uint16_t module,
			      uint32_t type, uint32_t count, const char *vtable_name);
struct hd_error *hd_typing_entry_slots(struct hd_typing *ty, uint32_t ei);
struct hd_error *hd_typing_slot_entry(struct hd_typing *ty, uint32_t ei,
				      size_t i, uint32_t n, uint32_t *ret);
struct hd_error *hd_typing_push(struct propagation *p, uint32_t id);
struct hd_error *hd_typing_assign(struct propagation *p, uint32_t id,
				  uint32_t entry, uint8_t strength);
struct hd_error *hd_typing_follow_block(struct propagation *p, uint32_t id);

// typing_threads.c: a level of n blocks (sorted) on p->threads threads,
// typed as hd_typing_follow_block on each in turn would have.
struct hd_error *hd_typing_follow_level_threads(struct propagation *p,
						const uint32_t *ids, size_t n);
// Frees what hd_typing_follow_level_threads made (nothing if it never ran).
void hd_typing_level_parts_deinit(struct propagation *p);

#endif
