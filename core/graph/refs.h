// The heap's references: every aligned word of a used block that holds an
// address inside a used block, found by one pass over the heap in address
// order. Typing follows them (a typed pointer member is a word of its
// block) and the graph's block edges are them, deduplicated: each heap word
// is read and each pointer looked up once, in the order memory lies.
#ifndef HD_GRAPH_REFS_H
#define HD_GRAPH_REFS_H

#include <stdint.h>

#include "graph/graph_internal.h"

// Blocks of this many words and more (32 GiB) are not scanned here (word
// indexes are 32-bit): typing and the graph read them themselves.
#define HD_REF_FAR_WORD UINT32_MAX

// The references of the blocks [first, end) (one per thread that found
// them): block id's are [offsets[id - first], offsets[id - first + 1]).
struct hd_refs_part {
	size_t first, end;
	uint32_t *offsets;
	// Target block id, | HD_EDGE_INTERIOR when the word is not the
	// target's start; a block's reference to itself is kept (typing may
	// use it; the graph drops it).
	uint32_t *targets;
	uint32_t *words; // the word of the source block that holds it
	uint64_t num;
};

struct hd_refs {
	size_t num_blocks;
	struct hd_refs_part *parts;
	unsigned num_parts;
	uint64_t num;                     // references in all
	size_t far_blocks; // blocks of HD_REF_FAR_WORD words and more, not scanned
	uint64_t words_scanned, words_skipped; // skipped: never populated
	double seconds;
	unsigned threads;
	// Segments whose memory could not be viewed whole (a truncated core):
	// their blocks have no references here, but may be read word by word.
	const struct hd_heap *h;
	bool *unread; // per heap segment, or NULL when every one was read
};

// Whether block id's bytes were scanned (its segment could be viewed).
bool hd_refs_block_scanned(const struct hd_refs *r, size_t id);

// Scans h's used blocks with up to threads threads (0: one per CPU). The
// result does not depend on the number of threads.
struct hd_error *hd_refs_init(struct hd_refs *r, struct hd_target *t,
			      const struct hd_heap *h,
			      const struct hd_index *ix, unsigned threads);
void hd_refs_deinit(struct hd_refs *r);

// Fetches the start of block id's row of offsets (the first stage of a
// prefetch of its references; hd_refs_row_prefetch is the second).
static inline void hd_refs_offsets_prefetch(const struct hd_refs *r, size_t id)
{
	const struct hd_refs_part *p = r->parts;
	while (id >= p->end)
		p++;
	__builtin_prefetch(&p->offsets[id - p->first]);
}

// Fetches the start of block id's references, reading its offsets.
static inline void hd_refs_row_prefetch(const struct hd_refs *r, size_t id)
{
	const struct hd_refs_part *p = r->parts;
	while (id >= p->end)
		p++;
	size_t k = id - p->first;
	uint32_t at = p->offsets[k];
	if (p->offsets[k + 1] != at) {
		__builtin_prefetch(p->targets + at);
		__builtin_prefetch(p->words + at);
	}
}

// The references of block id.
static inline uint32_t hd_refs_row(const struct hd_refs *r, size_t id,
				   const uint32_t **targets,
				   const uint32_t **words)
{
	const struct hd_refs_part *p = r->parts;
	while (id >= p->end)
		p++;
	size_t k = id - p->first;
	uint32_t at = p->offsets[k], n = p->offsets[k + 1] - at;
	// A part without references has no arrays (NULL + 0 is undefined).
	*targets = n ? p->targets + at : NULL;
	*words = n ? p->words + at : NULL;
	return n;
}

// Frees part j's references (hd_refs_row must not ask for its blocks
// again), or all of them; the counts stay.
void hd_refs_free_part(struct hd_refs *r, unsigned j);
void hd_refs_deinit_parts(struct hd_refs *r);

// Threads an analysis uses: n if nonzero, else HEAPDOM_JOBS from the
// environment, else the CPUs this process may run on (at most 8).
unsigned hd_threads_wanted(unsigned n);

#endif
