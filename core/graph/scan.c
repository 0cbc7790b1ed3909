// The conservative scanner: every aligned word of a root or a used block
// that points into a used block is an edge. Vertices are visited in order
// (super-root, roots, blocks), so the forward CSR is written in one pass.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/refs.h"
#include "graph/scan_internal.h"
#include "graph/suballoc.h"
#include "heap/heap_internal.h"
#include "util/sort.h"
#include "util/thread.h"

bool hd_scan_reserve(struct hd_scan_builder *b, uint64_t more)
{
	if (b->n + more <= b->cap)
		return true;
	uint64_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->n + more)
		cap += cap / 2;
	uint32_t *p = realloc(b->targets, cap * sizeof(*p));
	if (!p)
		return false;
	b->targets = p;
	b->cap = cap;
	return true;
}

// Sorts and deduplicates one vertex's edges. The interior flag is the high
// bit, so flagged edges sort after all plain ones; an exact pointer wins
// over an interior one to the same block.
uint64_t hd_scan_dedupe(uint32_t *t, uint64_t n)
{
	if (n < 2)
		return n;
	hd_sort_u32(t, n);
	uint64_t plain = 0;
	while (plain < n && !(t[plain] & HD_EDGE_INTERIOR))
		plain++;
	uint64_t out = 0;
	for (uint64_t i = 0; i < plain; i++)
		if (out == 0 || t[out - 1] != t[i])
			t[out++] = t[i];
	uint64_t nplain = out, k = 0;
	for (uint64_t i = plain; i < n; i++) {
		uint32_t id = HD_EDGE_TARGET(t[i]);
		if (i > plain && t[i] == t[i - 1])
			continue;
		while (k < nplain && t[k] < id)
			k++;
		if (k < nplain && t[k] == id)
			continue;
		t[out++] = t[i];
	}
	return out;
}

// The page directory of b->sa's blocks; false without memory.
static bool sub_pages(struct hd_scan_builder *b)
{
	const struct hd_suballoc *sa = b->sa;
	size_t cap = 0;
	for (size_t i = 0; i < sa->num_blocks; i++) {
		const struct hd_subblock *sb = &sa->blocks[i];
		uint64_t first = sb->addr >> SUB_PAGE_SHIFT;
		uint64_t last = (sb->addr + (sb->size ? sb->size - 1 : 0)) >> SUB_PAGE_SHIFT;
		cap += last - first + 1;
	}
	b->pages = malloc((cap ? cap : 1) * sizeof(*b->pages));
	b->page_first = malloc((cap ? cap : 1) * sizeof(*b->page_first));
	if (!b->pages || !b->page_first)
		return false;
	size_t n = 0;
	for (size_t i = 0; i < sa->num_blocks; i++) {
		const struct hd_subblock *sb = &sa->blocks[i];
		uint64_t first = sb->addr >> SUB_PAGE_SHIFT;
		uint64_t last = (sb->addr + (sb->size ? sb->size - 1 : 0)) >> SUB_PAGE_SHIFT;
		for (uint64_t pg = first; pg <= last; pg++) {
			// Blocks are sorted and disjoint: pages come in order.
			if (n && b->pages[n - 1] >= pg)
				continue;
			b->pages[n] = pg;
			b->page_first[n++] = (uint32_t)i;
		}
	}
	b->num_pages = n;
	if (n >= UINT32_MAX / 2)
		return true; // binary search instead
	size_t slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	b->page_slots = calloc(slots, sizeof(*b->page_slots));
	if (!b->page_slots)
		return false;
	b->num_slots = slots;
	for (size_t k = 0; k < n; k++) {
		size_t h = page_hash(b->pages[k]) & (slots - 1);
		while (b->page_slots[h])
			h = (h + 1) & (slots - 1);
		b->page_slots[h] = (uint32_t)k + 1;
	}
	return true;
}

static inline void add_word(struct hd_scan_builder *b, uint64_t w, int64_t self)
{
	const struct hd_heap *h = b->h;
	const struct hd_suballoc *sa = b->sa;
	if (sa && w - sa->lo < sa->hi - sa->lo) {
		// A sub-allocator's block: the pointer leads to it, not to
		// the pool around it. A free slot holds nothing; a pointer to
		// the sub-allocator's own header (a pool list's link) holds
		// the malloc'd block the pool lives in.
		int64_t k = sub_find(b, w);
		if (k >= 0) {
			const struct hd_subblock *sb = &sa->blocks[k];
			if (sb->state == HD_STATE_INTERNAL && sb->container >= 0)
				goto heap;
			if (k == b->self_sub || sb->state != HD_STATE_USED)
				return;
			uint32_t t = b->first_sub_vertex + (uint32_t)k;
			if (w != sb->addr)
				t |= HD_EDGE_INTERIOR;
			b->targets[b->n++] = t;
			return;
		}
	}
heap:;
	// Like valgrind, a pointer just past a block's usable bytes does not
	// point into it.
	bool exact;
	int64_t id = hd_index_find(b->ix, w, &exact);
	if (id < 0)
		return;
	if (id == self || hd_heap_state(h, (size_t)id) != HD_STATE_USED)
		return;
	uint32_t t = b->first_block_vertex + (uint32_t)id;
	if (!exact)
		t |= HD_EDGE_INTERIOR;
	b->targets[b->n++] = t;
}

#define SCAN_BATCH 64

// add_word for n candidate words at once, in order (wi: their word
// indexes, for typed), the memory of their index look-ups fetched
// together; the edges are add_word's.
static void add_batch(struct hd_scan_builder *b, const uint64_t *vals,
		      const uint64_t *wi, size_t n, int64_t self,
		      const uint8_t *typed)
{
	const struct hd_heap *h = b->h;
	const struct hd_suballoc *sa = b->sa;
	int64_t sub[SCAN_BATCH], ids[SCAN_BATCH];
	uint64_t hv[SCAN_BATCH];
	bool exact[SCAN_BATCH];
	size_t nh = 0;
	for (size_t i = 0; i < n; i++) {
		sub[i] = -1;
		if (sa && vals[i] - sa->lo < sa->hi - sa->lo) {
			// A sub-allocator's block: the pointer leads to it,
			// not to the pool around it; an internal block inside
			// a malloc'd block is part of that block.
			int64_t k = sub_find(b, vals[i]);
			if (k >= 0 && !(sa->blocks[k].state == HD_STATE_INTERNAL &&
					sa->blocks[k].container >= 0)) {
				sub[i] = k;
				continue;
			}
		}
		hv[nh++] = vals[i];
	}
	if (nh)
		hd_index_find_batch(b->ix, hv, nh, ids, exact);
	size_t hk = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t t;
		if (sub[i] >= 0) {
			// A free slot holds nothing.
			const struct hd_subblock *sb = &sa->blocks[sub[i]];
			if (sub[i] == b->self_sub || sb->state != HD_STATE_USED)
				continue;
			t = b->first_sub_vertex + (uint32_t)sub[i];
			if (vals[i] != sb->addr)
				t |= HD_EDGE_INTERIOR;
		} else {
			int64_t id = ids[hk];
			bool ex = exact[hk++];
			if (id < 0 || id == self ||
			    hd_heap_state(h, (size_t)id) != HD_STATE_USED)
				continue;
			t = b->first_block_vertex + (uint32_t)id;
			if (!ex)
				t |= HD_EDGE_INTERIOR;
		}
		b->targets[b->n++] = t;
		if (typed && (typed[wi[i] / 8] & (1u << (wi[i] % 8))))
			b->typed_found++;
	}
}

// Adds the edges of words [first, end) of d, counting edges from words
// typed as pointers apart (typed is indexed from d's first word). Words
// that may point into a block are looked up in batches.
static bool scan_stretch(struct hd_scan_builder *b, const uint8_t *d, uint64_t first,
			 uint64_t end, int64_t self, const uint8_t *typed)
{
	const struct hd_suballoc *sa = b->sa;
	uint64_t slo = sa ? sa->lo : 0, sspan = sa ? sa->hi - sa->lo : 0;
	uint64_t hlo = b->ix->lo, hspan = b->ix->hi - b->ix->lo;
	uint64_t vals[SCAN_BATCH], wi[SCAN_BATCH];
	size_t np = 0;
	// Reserve per stretch: a large root region holds few pointers.
	for (uint64_t i = first; i < end;) {
		uint64_t stop = end - i > 65536 ? i + 65536 : end;
		if (!hd_scan_reserve(b, stop - i))
			return false;
		for (; i < stop; i++) {
			uint64_t w;
			memcpy(&w, d + 8 * i, 8);
			if (w - slo >= sspan && w - hlo >= hspan)
				continue;
			vals[np] = w;
			wi[np] = i;
			if (++np == SCAN_BATCH) {
				add_batch(b, vals, wi, np, self, typed);
				np = 0;
			}
		}
		if (np) {
			add_batch(b, vals, wi, np, self, typed);
			np = 0;
		}
	}
	return true;
}

// Scans the len bytes at addr (whole words), which view v holds, for the
// vertex being built. Every word is scanned, typed or not: an address held
// in an integer, a byte buffer or a union member keeps its block alive as
// much as a typed pointer does (valgrind's rule), so the leak verdict never
// depends on the typing. Words the view knows were never populated are
// zeros, which point nowhere: they are skipped unread.
static bool scan_words(struct hd_scan_builder *b, const struct hd_view *v,
		       uint64_t addr, uint64_t len, int64_t self,
		       const uint8_t *typed)
{
	uint64_t words = len / 8, scanned = 0;
	uint64_t start = b->n, end = addr + words * 8, p = addr, lo, hi;
	const uint8_t *d = v->data + (addr - v->addr);
	while (p < end && hd_view_next_data(v, p, end, &lo, &hi)) {
		uint64_t first = (lo - addr) / 8, last = (hi - addr + 7) / 8;
		if (!scan_stretch(b, d, first, last, self, typed))
			return false;
		scanned += last - first;
		p = addr + last * 8;
	}
	b->g->info.words_scanned += scanned;
	b->g->info.words_skipped += words - scanned;
	b->n = start + hd_scan_dedupe(b->targets + start, b->n - start);
	return true;
}

static struct hd_error *scan_roots(struct hd_scan_builder *b, struct hd_target *t)
{
	struct hd_graph *g = b->g;
	size_t reg = 0;
	for (size_t i = 0; i < g->num_roots; i++) {
		b->offsets[1 + i] = b->n;
		const struct hd_root *r = &g->roots[i];
		if (r->kind == HD_ROOT_REGISTERS) {
			while (reg < g->num_reg_roots && g->reg_roots[reg].root < i)
				reg++;
			if (reg < g->num_reg_roots && g->reg_roots[reg].root == i) {
				struct hd_view regs = {
					.data = (const uint8_t *)&g->reg_roots[reg].regs,
					.len = sizeof(struct hd_regs),
				};
				if (!scan_words(b, &regs, 0, regs.len, -1, NULL))
					return &hd_error_no_memory;
			}
			continue;
		}
		struct hd_view v;
		struct hd_error *err = hd_target_view(t, r->start, r->end - r->start, &v);
		if (err) {
			// A root whose memory is missing holds nothing we can see.
			if (err->code == HD_ERROR_NO_MEMORY)
				return err;
			hd_error_destroy(err);
			g->info.unreadable_roots++;
			continue;
		}
		bool ok = scan_words(b, &v, v.addr, v.len, -1, NULL);
		hd_view_deinit(&v);
		if (!ok)
			return &hd_error_no_memory;
		// A large root (an anonymous mapping: a Python heap's arenas
		// are hundreds of MiB of them) counts toward RSS until its
		// core pages are given back.
		if (r->end - r->start >= (1u << 20))
			hd_target_release(t, r->start, r->end - r->start);
	}
	return NULL;
}

// A malloc'd block holding a sub-allocator's blocks: only the words no
// used or free sub-block covers are its own (the pool's header and slack).
static bool scan_container(struct hd_scan_builder *b, const uint8_t *d,
			   const struct hd_block *blk, int64_t self)
{
	const struct hd_suballoc *sa = b->sa;
	uint64_t start = b->n, words = 0;
	uint64_t p = blk->addr, end = blk->addr + blk->usable;
	size_t k = hd_suballoc_lower(sa, p);
	while (p < end) {
		// Internal blocks (the pool's header) are scanned as the
		// container's own words.
		while (k < sa->num_blocks && sa->blocks[k].addr < end &&
		       sa->blocks[k].state == HD_STATE_INTERNAL)
			k++;
		uint64_t stop = end;
		if (k < sa->num_blocks && sa->blocks[k].addr < end)
			stop = sa->blocks[k].addr;
		if (stop > p) {
			uint64_t n = (stop - p) / 8;
			if (!hd_scan_reserve(b, n))
				return false;
			for (uint64_t i = 0; i < n; i++) {
				uint64_t w;
				memcpy(&w, d + (p - blk->addr) + 8 * i, 8);
				add_word(b, w, self);
			}
			words += n;
		}
		if (k >= sa->num_blocks || sa->blocks[k].addr >= end)
			break;
		p = sa->blocks[k].addr + sa->blocks[k].size;
		p = (p + 7) & ~7ull;
		k++;
	}
	b->g->info.words_scanned += words;
	b->n = start + hd_scan_dedupe(b->targets + start, b->n - start);
	return true;
}

static struct hd_error *scan_blocks(struct hd_scan_builder *b, struct hd_target *t)
{
	const struct hd_heap *h = b->h;
	size_t id = 0, n = h->num_blocks;
	uint32_t v0 = b->first_block_vertex;
	for (size_t s = 0; s < hd_heap_num_segments(h) && id < n; s++) {
		const struct hd_heap_segment *seg = hd_heap_segment(h, s);
		// Blocks before this segment (none normally) get no edges.
		while (id < n && hd_heap_extent_start(h, id) < seg->start)
			b->offsets[v0 + id++] = b->n;
		struct hd_view v = {0};
		struct hd_error *err =
			hd_target_view(t, seg->start, seg->end - seg->start, &v);
		if (err) {
			if (err->code == HD_ERROR_NO_MEMORY)
				return err;
			hd_error_destroy(err);
			v.data = NULL;
		}
		for (; id < n && hd_heap_extent_start(h, id) < seg->end; id++) {
			b->offsets[v0 + id] = b->n;
			if (!v.data || hd_heap_state(h, id) != HD_STATE_USED)
				continue;
			struct hd_block blk;
			hd_heap_block(h, id, &blk);
			if (blk.addr + blk.usable > seg->end)
				continue;
			if (b->sa && hd_suballoc_container(b->sa, id) >= 0) {
				if (!scan_container(b, v.data + (blk.addr - seg->start),
						    &blk, (int64_t)id)) {
					hd_view_deinit(&v);
					return &hd_error_no_memory;
				}
				continue;
			}
			const uint8_t *typed = b->g->pointer_map
				? b->g->pointer_map(b->g->pointer_map_arg, id,
						    blk.usable / 8)
				: NULL;
			if (!scan_words(b, &v, blk.addr, blk.usable, (int64_t)id,
					typed)) {
				hd_view_deinit(&v);
				return &hd_error_no_memory;
			}
		}
		hd_view_deinit(&v);
	}
	while (id < n)
		b->offsets[v0 + id++] = b->n;
	return NULL;
}

// One part of the references made into edges by its own thread, written
// from base (its references' place in an array as long as all of them
// with the roots' edges before them: a block has no more edges than
// references), then moved down to follow the previous part.
struct edge_worker {
	const struct hd_scan_builder *b;
	struct hd_refs *r;
	unsigned part;
	uint64_t base, end;
	uint64_t typed_found;
};

static void *edges_of_part(void *arg)
{
	struct edge_worker *ew = arg;
	const struct hd_scan_builder *b = ew->b;
	const struct hd_heap *h = b->h;
	const struct hd_graph *g = b->g;
	struct hd_refs_part *p = &ew->r->parts[ew->part];
	uint32_t v0 = b->first_block_vertex;
	uint32_t *out = b->targets;
	uint64_t n = ew->base;
	for (size_t id = p->first; id < p->end; id++) {
		b->offsets[v0 + id] = n;
		if (hd_heap_state(h, id) != HD_STATE_USED)
			continue;
		const uint32_t *targets, *words;
		uint32_t m = hd_refs_row(ew->r, id, &targets, &words);
		uint64_t start = n;
		for (uint32_t j = 0; j < m; j++) {
			uint32_t to = targets[j] & ~HD_EDGE_INTERIOR;
			if (to == id)
				continue;
			out[n++] = (v0 + to) | (targets[j] & HD_EDGE_INTERIOR);
			if (g->word_typed && g->word_typed(g->pointer_map_arg, id, words[j]))
				ew->typed_found++;
		}
		n = start + hd_scan_dedupe(out + start, n - start);
	}
	ew->end = n;
	hd_refs_free_part(ew->r, ew->part);
	return NULL;
}

// refs_blocks with a thread per part of the references. Only when no
// block was left to be read again (HD_REF_FAR_WORD) and the typing (if
// any) answers from any thread.
static struct hd_error *refs_blocks_parallel(struct hd_scan_builder *b)
{
	struct hd_refs *r = b->g->refs;
	unsigned k = r->num_parts;
	if (!hd_scan_reserve(b, r->num))
		return &hd_error_no_memory;
	struct edge_worker *ew = calloc(k, sizeof(*ew));
	if (!ew)
		return &hd_error_no_memory;
	uint64_t base = b->n;
	for (unsigned j = 0; j < k; j++) {
		ew[j] = (struct edge_worker){.b = b, .r = r, .part = j, .base = base};
		base += r->parts[j].num;
	}
	hd_threads_run(edges_of_part, ew, sizeof(*ew), k);
	// Each part's edges follow the previous part's.
	uint32_t v0 = b->first_block_vertex;
	uint64_t at = ew[0].end;
	for (unsigned j = 1; j < k; j++) {
		uint64_t shift = ew[j].base - at, len = ew[j].end - ew[j].base;
		memmove(b->targets + at, b->targets + ew[j].base, len * sizeof(*b->targets));
		for (size_t id = r->parts[j].first; id < r->parts[j].end; id++)
			b->offsets[v0 + id] -= shift;
		at += len;
	}
	b->n = at;
	for (unsigned j = 0; j < k; j++)
		b->typed_found += ew[j].typed_found;
	free(ew);
	return NULL;
}

// scan_blocks from the heap's references: each block's edges are its
// references but the one to itself, deduplicated.
static struct hd_error *refs_blocks(struct hd_scan_builder *b, struct hd_target *t)
{
	if (b->g->refs->num_parts > 1 && !b->g->refs->far_blocks &&
	    (b->g->word_typed || !b->g->pointer_map)) {
		struct hd_refs *r = b->g->refs;
		struct hd_error *err = refs_blocks_parallel(b);
		hd_refs_deinit_parts(r);
		if (!err) {
			b->g->info.words_scanned += r->words_scanned;
			b->g->info.words_skipped += r->words_skipped;
		}
		return err;
	}
	const struct hd_heap *h = b->h;
	struct hd_refs *r = b->g->refs;
	uint32_t v0 = b->first_block_vertex;
	unsigned part = 0;
	for (size_t id = 0; id < h->num_blocks; id++) {
		// A part whose blocks all have their edges is given back.
		while (part < r->num_parts && id >= r->parts[part].end)
			hd_refs_free_part(r, part++);
		b->offsets[v0 + id] = b->n;
		const uint32_t *targets, *words;
		uint32_t n = hd_refs_row(r, id, &targets, &words);
		if (hd_heap_state(h, id) != HD_STATE_USED)
			continue;
		struct hd_block blk = {.addr = h->addr[id],
				       .usable = hd_heap_usable(h, id)};
		if (blk.usable / 8 >= HD_REF_FAR_WORD) {
			// Words past 2^32 are not told apart: read it again.
			struct hd_view v;
			struct hd_error *err = hd_target_view(t, blk.addr, blk.usable, &v);
			if (err) {
				if (err->code == HD_ERROR_NO_MEMORY)
					return err;
				hd_error_destroy(err);
				continue;
			}
			const uint8_t *typed = b->g->pointer_map
				? b->g->pointer_map(b->g->pointer_map_arg, id,
						    blk.usable / 8)
				: NULL;
			bool ok = scan_words(b, &v, blk.addr, blk.usable,
					     (int64_t)id, typed);
			hd_view_deinit(&v);
			if (!ok)
				return &hd_error_no_memory;
			continue;
		}
		if (!n)
			continue;
		if (!hd_scan_reserve(b, n))
			return &hd_error_no_memory;
		const uint8_t *typed = b->g->pointer_map
			? b->g->pointer_map(b->g->pointer_map_arg, id, blk.usable / 8)
			: NULL;
		uint64_t start = b->n;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t to = targets[j] & ~HD_EDGE_INTERIOR;
			if (to == id)
				continue;
			b->targets[b->n++] = (v0 + to) | (targets[j] & HD_EDGE_INTERIOR);
			if (typed && (typed[words[j] / 8] & (1u << (words[j] % 8))))
				b->typed_found++;
		}
		b->n = start + hd_scan_dedupe(b->targets + start, b->n - start);
	}
	hd_refs_deinit_parts(r);
	b->g->info.words_scanned += r->words_scanned;
	b->g->info.words_skipped += r->words_skipped;
	return NULL;
}

struct hd_error *hd_graph_number(struct hd_graph *g, const struct hd_heap *h)
{
	g->num_blocks = h->num_blocks;
	g->num_sub = g->sub ? g->sub->num_blocks : 0;
	uint64_t nv = 1 + (uint64_t)g->num_roots + h->num_blocks + g->num_sub;
	if (nv >= HD_EDGE_INTERIOR)
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%llu blocks and roots: more than the graph's 2^31 vertices",
				       (unsigned long long)nv);
	g->num_vertices = (uint32_t)nv;
	return NULL;
}

struct hd_error *hd_graph_scan(struct hd_graph *g, struct hd_target *t,
			       const struct hd_heap *h,
			       const struct hd_index *ix)
{
	struct hd_scan_builder b = {.g = g, .h = h, .ix = ix, .sa = g->sub, .self_sub = -1};
	struct hd_error *err = hd_graph_number(g, h);
	if (err)
		return err;
	uint64_t nv = g->num_vertices;
	b.first_block_vertex = 1 + (uint32_t)g->num_roots;
	b.first_sub_vertex = b.first_block_vertex + (uint32_t)h->num_blocks;
	b.offsets = malloc((nv + 1) * sizeof(*b.offsets));
	if (!b.offsets || !hd_scan_reserve(&b, g->num_roots + 1024)) {
		free(b.offsets);
		free(b.targets);
		return &hd_error_no_memory;
	}
	// The super-root points at every root, strongest class first
	// (hd_root_rank): the ranked dominators take them in this order.
	b.offsets[0] = 0;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++)
		for (size_t i = 0; i < g->num_roots; i++)
			if (hd_root_rank(g->roots[i].kind) == r)
				b.targets[b.n++] = 1 + (uint32_t)i;
	if (b.sa && b.sa->num_blocks > 1024 && b.sa->num_blocks < UINT32_MAX &&
	    !b.sa->dense && !sub_pages(&b))
		err = &hd_error_no_memory;
	if (!err)
		err = scan_roots(&b, t);
	if (!err)
		err = g->refs && !b.sa ? refs_blocks(&b, t) : scan_blocks(&b, t);
	if (!err && b.sa)
		err = hd_scan_subblocks(&b, t);
	free(b.pages);
	free(b.page_first);
	free(b.page_slots);
	if (err) {
		free(b.offsets);
		free(b.targets);
		return err;
	}
	if (b.n > HD_CSR_MAX_EDGES) {
		free(b.offsets);
		free(b.targets);
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%" PRIu64 " references: more than the "
				       "object graph's 2^32 - 1", b.n);
	}
	b.offsets[nv] = (uint32_t)b.n;
	// Give back the slack of the geometric growth.
	uint32_t *shrunk = realloc(b.targets, (b.n ? b.n : 1) * sizeof(*b.targets));
	if (shrunk)
		b.targets = shrunk;
	g->fwd = (struct hd_csr){.n = (uint32_t)nv, .offsets = b.offsets,
				 .targets = b.targets};
	for (uint64_t i = 0; i < b.n; i++)
		g->info.interior_edges += (b.targets[i] & HD_EDGE_INTERIOR) != 0;
	g->info.edges = b.n;
	// Deduplication may merge a typed and an untyped word's edge: the
	// typed count is of words, capped by the edges that exist.
	uint64_t block_edges = b.n - b.offsets[b.first_block_vertex];
	g->info.typed_edges = b.typed_found < block_edges ? b.typed_found : block_edges;
	g->info.conservative_edges = b.n - g->num_roots - g->info.typed_edges;
	return NULL; // the reverse graph: on demand (hd_graph_reverse)
}
