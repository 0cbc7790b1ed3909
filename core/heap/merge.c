// Several allocators in one process (a program's own pool allocator and
// glibc's malloc; jemalloc for most blocks and glibc for a library's):
// each backend walks its heap into a table of its own, and this merges
// them into the one table the rest of heapdom reads. Blocks are copied
// once, in address order, run by run; every other table is kept per
// allocator (heap_internal.h: how list and shape stay 6 bits a block).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/backend.h"
#include "util/sort.h"
#include "util/vec.h"

// Moves part a's problems into h, each prefixed with its allocator's name
// (a message alone does not say whose heap it is about).
static void move_problems(struct hd_heap *h, struct hd_heap *p)
{
	const char *name = p->backend ? p->backend->name : "?";
	for (size_t i = 0; i < p->num_problems; i++) {
		hd_heap_problem_add(h, p->problems[i].address, "%s: %s", name,
				    p->problems[i].message);
		free(p->problems[i].message);
	}
	h->dropped_problems += p->dropped_problems;
	p->num_problems = 0;
	p->dropped_problems = 0;
}

// Part a's regions, segments, metadata and facts, their region indexes
// moved by base.
static bool move_tables(struct hd_heap *h, struct hd_heap *p, unsigned a,
			uint32_t base)
{
	for (size_t i = 0; i < p->num_regions; i++) {
		struct hd_region r = p->regions[i];
		r.allocator = a;
		h->region_alloc[h->num_regions] = (uint8_t)a;
		if (!HD_VEC_PUSH(h->regions, h->num_regions, h->cap_regions, r))
			return false;
	}
	for (size_t i = 0; i < p->num_segments; i++) {
		struct hd_heap_segment s = p->segments[i];
		s.allocator = a;
		if (s.region != HD_NO_REGION)
			s.region += base;
		if (!HD_VEC_PUSH(h->segments, h->num_segments, h->cap_segments, s))
			return false;
	}
	for (size_t i = 0; i < p->num_metadata; i++) {
		struct hd_heap_metadata m = p->metadata[i];
		m.allocator = a;
		if (m.region != HD_NO_REGION)
			m.region += base;
		if (!HD_VEC_PUSH(h->metadata, h->num_metadata, h->cap_metadata, m))
			return false;
	}
	for (size_t i = 0; i < p->num_facts; i++) {
		struct hd_fact f = p->facts[i];
		f.allocator = a;
		if (f.region != HD_NO_REGION)
			f.region += base;
		if (!HD_VEC_PUSH(h->facts, h->num_facts, h->cap_facts, f))
			return false;
	}
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct hd_heap_segment *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

// What the merge needs of each part while copying blocks.
struct cursor {
	const struct hd_heap *p;
	size_t next;       // its next block
	unsigned shift;    // its span_shift - the heap's
	uint16_t base;     // its regions' first index in the heap
	uint16_t none;     // its blocks without a region: HD_REGION_NONE - a
};

static uint64_t head_addr(const struct cursor *c)
{
	return c->next < c->p->num_blocks ? c->p->addr[c->next] : UINT64_MAX;
}

static const char *part_name(const struct hd_heap *h, unsigned a)
{
	return h->allocs[a].backend ? h->allocs[a].backend->name : "?";
}

// Takes back a left-out block from its allocator's totals.
static void uncount(struct hd_heap_alloc *al, const struct hd_heap *p,
		    size_t id)
{
	uint64_t e = hd_heap_extent(p, id);
	struct hd_heap_count *c = &al->internal;
	if (hd_heap_state(p, id) == HD_STATE_USED) {
		c = &al->used;
		al->usable -= hd_heap_usable(p, id);
	} else if (hd_heap_state(p, id) == HD_STATE_FREE) {
		unsigned l = hd_heap_block_list(p, id);
		c = l < p->num_lists && p->lists[l].reserve ? &al->reserve
							    : &al->free;
	}
	c->blocks--;
	c->bytes -= e;
}

// The first block of p from i on whose address is at or above limit.
static size_t run_end(const struct hd_heap *p, size_t i, uint64_t limit)
{
	// Runs are long (a pool, an arena): gallop, then bisect.
	size_t lo = i, step = 1, hi = i;
	while (hi < p->num_blocks && p->addr[hi] < limit) {
		lo = hi + 1;
		hi += step;
		step *= 2;
	}
	if (hi > p->num_blocks)
		hi = p->num_blocks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->addr[mid] < limit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void copy_blocks(struct hd_heap *h, struct cursor *cur, unsigned n)
{
	// The last block kept, to check a block of another allocator
	// against it: within one allocator the backend keeps extents apart.
	bool have_last = false;
	unsigned last_a = 0;
	uint64_t last_addr = 0, last_start = 0, last_end = 0;
	for (;;) {
		// The allocator with the lowest next block, and where the next
		// allocator's next block is: its run goes up to there.
		unsigned a = n;
		uint64_t lo = UINT64_MAX, second = UINT64_MAX;
		for (unsigned k = 0; k < n; k++) {
			uint64_t x = head_addr(&cur[k]);
			if (a == n || x < lo) {
				second = lo;
				lo = x;
				a = k;
			} else if (x < second) {
				second = x;
			}
		}
		struct cursor *c = &cur[a];
		const struct hd_heap *p = c->p;
		if (c->next >= p->num_blocks)
			return;
		// A block that overlaps the last block of another allocator:
		// both claim the memory; the later one is left out, named.
		if (have_last && last_a != a) {
			size_t id = c->next;
			uint64_t start = hd_heap_extent_start(p, id);
			if (start < last_end) {
				hd_heap_problem_add(h, p->addr[id],
						    "%s block 0x%llx (extent 0x%llx-0x%llx) overlaps %s block 0x%llx (extent 0x%llx-0x%llx): two allocators claim the same memory; the %s block is left out",
						    part_name(h, a),
						    (unsigned long long)p->addr[id],
						    (unsigned long long)start,
						    (unsigned long long)hd_heap_extent_end(p, id),
						    part_name(h, last_a),
						    (unsigned long long)last_addr,
						    (unsigned long long)last_start,
						    (unsigned long long)last_end,
						    part_name(h, a));
				uncount(&h->allocs[a], p, id);
				c->next++;
				continue;
			}
		}
		// The run: its end found by a binary search, then a plain
		// copy, the region renumbered.
		size_t i = c->next, end = run_end(p, i, second);
		if (end == i)
			end = i + 1; // equal addresses: the overlap check decides
		size_t o = h->num_blocks;
		uint16_t nr = (uint16_t)p->num_regions;
		memcpy(&h->addr[o], &p->addr[i], (end - i) * sizeof(*h->addr));
		memcpy(&h->flags[o], &p->flags[i], (end - i) * sizeof(*h->flags));
		// Exact sizes (hd_heap_exact_sizes): kept for the allocators
		// that record them, none for the others.
		if (h->reserved) {
			if (p->reserved)
				memcpy(&h->reserved[o], &p->reserved[i],
				       (end - i) * sizeof(*h->reserved));
			else
				memset(&h->reserved[o], 0,
				       (end - i) * sizeof(*h->reserved));
		}
		if (c->shift) {
			for (size_t k = i; k < end; k++) {
				uint64_t s = (uint64_t)p->span[k] << c->shift;
				h->span[o + k - i] = s > UINT32_MAX ? UINT32_MAX
								    : (uint32_t)s;
			}
		} else {
			memcpy(&h->span[o], &p->span[i],
			       (end - i) * sizeof(*h->span));
		}
		if (c->base == 0 && c->none == HD_REGION_NONE) {
			// The first allocator's numbers do not change.
			memcpy(&h->region[o], &p->region[i],
			       (end - i) * sizeof(*h->region));
		} else {
			for (size_t k = i; k < end; k++) {
				uint16_t r = p->region[k];
				h->region[o + k - i] = r < nr ? (uint16_t)(r + c->base)
							      : c->none;
			}
		}
		h->num_blocks += end - i;
		c->next = end;
		have_last = true;
		last_a = a;
		last_addr = h->addr[h->num_blocks - 1];
		last_start = hd_heap_extent_start(h, h->num_blocks - 1);
		last_end = hd_heap_extent_end(h, h->num_blocks - 1);
	}
}

struct hd_error *hd_heap_merge(struct hd_heap **parts, size_t n,
			       struct hd_heap **ret)
{
	struct hd_heap *h = NULL;
	struct hd_error *err = NULL;
	// One allocator: its table is the heap's, nothing to copy.
	if (n == 1) {
		*ret = parts[0];
		parts[0] = NULL;
		return NULL;
	}
	if (n > HD_HEAP_MAX_ALLOCATORS) {
		err = hd_error_create(HD_ERROR_UNSUPPORTED,
				      "%zu allocators in one process: heapdom merges at most %d",
				      n, HD_HEAP_MAX_ALLOCATORS);
		goto out;
	}
	err = hd_heap_alloc(&h);
	if (err)
		goto out;
	size_t nblocks = 0, nregions = 0;
	unsigned shift = 32;
	for (size_t a = 0; a < n; a++) {
		nblocks += parts[a]->num_blocks;
		nregions += parts[a]->num_regions;
		if (parts[a]->span_shift < shift)
			shift = parts[a]->span_shift;
	}
	if (nregions >= HD_REGION_LIMIT) {
		err = hd_error_create(HD_ERROR_UNSUPPORTED,
				      "the allocators declare %zu regions together: one heap holds at most %d",
				      nregions, HD_REGION_LIMIT - 1);
		goto out;
	}
	h->span_shift = shift;
	h->backend = parts[0]->backend;
	h->info = parts[0]->info;
	h->num_allocs = (unsigned)n;
	h->region_alloc = malloc(nregions ? nregions : 1);
	bool exact = false;
	for (size_t a = 0; a < n; a++)
		exact |= parts[a]->reserved != NULL;
	if (!h->region_alloc || (exact && !hd_heap_exact_sizes(h)) ||
	    !hd_heap_reserve(h, nblocks ? nblocks : 1)) {
		err = &hd_error_no_memory;
		goto out;
	}
	struct cursor cur[HD_HEAP_MAX_ALLOCATORS];
	for (unsigned a = 0; a < n; a++) {
		struct hd_heap *p = parts[a];
		struct hd_heap_alloc *al = &h->allocs[a];
		*al = p->allocs[0];
		al->own = p;
		al->list_base = h->num_lists - 1;
		al->num_lists = p->num_lists;
		for (unsigned k = 1; k < p->num_lists; k++)
			h->lists[h->num_lists++] = p->lists[k];
		memcpy(&h->shapes[a * HD_HEAP_MAX_SHAPES], p->shapes,
		       HD_HEAP_MAX_SHAPES * sizeof(*p->shapes));
		cur[a] = (struct cursor){
			.p = p,
			.shift = p->span_shift - shift,
			.base = (uint16_t)h->num_regions,
			.none = (uint16_t)(HD_REGION_NONE - a),
		};
		if (!move_tables(h, p, a, (uint32_t)h->num_regions)) {
			err = &hd_error_no_memory;
			goto out;
		}
		move_problems(h, p);
	}
	// Readers walk the segments beside the blocks, both in address order.
	hd_qsort(h->segments, h->num_segments, sizeof(*h->segments), by_start);
	copy_blocks(h, cur, (unsigned)n);
	// Each walk's heap keeps its info and strings; its blocks are here.
	for (size_t a = 0; a < n; a++) {
		struct hd_heap *p = parts[a];
		free(p->addr);
		free(p->span);
		free(p->flags);
		free(p->region);
		free(p->reserved);
		p->reserved = NULL;
		p->addr = NULL;
		p->span = NULL;
		p->flags = NULL;
		p->region = NULL;
		p->num_blocks = p->cap_blocks = 0;
		parts[a] = NULL;
	}
	*ret = h;
	return NULL;
out:
	if (h) {
		// The parts not yet owned by h.
		for (unsigned a = 0; a < h->num_allocs; a++)
			h->allocs[a].own = NULL;
		hd_heap_destroy(h);
	}
	for (size_t a = 0; a < n; a++)
		hd_heap_destroy(parts[a]);
	return err;
}
