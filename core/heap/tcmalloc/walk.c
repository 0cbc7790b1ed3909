// tcmalloc's heap: every span from the page map, in page order. An in-use
// span of a size class is carved into objects of that class (a block each,
// used until a free list names it); an in-use span of class 0 (a large
// allocation) is one block; a free span of the page heap is one free block
// ("page heap", or "returned" when its pages went back to the system:
// reserve). Then the free lists name the free objects: each thread cache's
// per-class lists ("thread cache"), the central free lists' transfer
// cache slots ("transfer cache") and each span's own object list
// ("central"). Every list is followed at most as far as its own count
// says; an entry that is no object of its class, or an object listed
// twice, is a problem naming its address.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/tcmalloc/tcmalloc_internal.h"

// A small span, kept for its object list.
struct tc_span {
	uint64_t addr, objects;
	uint32_t count, refcount;
	unsigned sc;
};

struct tc_walker {
	struct hd_target *t;
	struct hd_heap *h;
	const struct tc_globals *g;
	uint16_t class_region[TC_CLASSES_MAX];
	uint16_t heap_region;
	struct tc_span *spans;
	size_t nspans, capspans;
	struct hd_heap_segment seg;
	bool seg_open;
	uint64_t large, free_spans, returned_spans, leaves, caches;
	uint64_t bytes[TC_LIST_COUNT]; // free bytes by list
	uint64_t overhead;             // tails of small spans (central's)
	uint64_t sampled, sampled_tail; // sampled spans, bytes past their block
	uint64_t listed[TC_LIST_COUNT];
};

static uint16_t class_region(struct tc_walker *w, unsigned sc)
{
	if (w->class_region[sc] != HD_REGION_NONE)
		return w->class_region[sc];
	struct hd_region r = {
		.addr = w->g->central + (uint64_t)TC_CFL_SIZE * sc,
		.kind = "size class",
	};
	uint16_t id = hd_heap_add_region(w->h, &r);
	if (id != HD_REGION_NONE &&
	    (!hd_heap_fact_uint(w->h, id, "class", sc) ||
	     !hd_heap_fact_uint(w->h, id, "object_size", w->g->size[sc]) ||
	     !hd_heap_fact_uint(w->h, id, "span_pages", w->g->pages[sc]) ||
	     !hd_heap_fact_uint(w->h, id, "batch", w->g->move[sc])))
		return HD_REGION_NONE;
	return w->class_region[sc] = id;
}

static bool seg_add(struct tc_walker *w, uint64_t start, uint64_t end)
{
	if (w->seg_open && w->seg.end == start) {
		w->seg.end = end;
		return true;
	}
	if (w->seg_open && !hd_heap_add_segment(w->h, &w->seg))
		return false;
	w->seg = (struct hd_heap_segment){.start = start, .end = end,
					  .region = w->heap_region};
	w->seg_open = true;
	w->h->regions[w->heap_region].num_segments++;
	return true;
}

// What tcmalloc gives for a request of n bytes: the smallest class that
// holds it, or whole pages past the largest class.
static uint64_t nallocx(const struct tc_globals *g, uint64_t n)
{
	for (unsigned c = 1; c < g->num_classes; c++)
		if (g->size[c] >= n)
			return g->size[c];
	return (n + (1u << TC_PAGE_SHIFT) - 1) & ~((1ull << TC_PAGE_SHIFT) - 1);
}

// The page map's entry for page p (0 if none or unreadable).
static uint64_t pagemap_get(struct tc_walker *w, uint64_t p)
{
	uint64_t leaf, v;
	if (p >> TC_LEAF_BITS >= TC_ROOT_LEN ||
	    !tc_read64(w->t, w->g->pageheap + TC_PH_ROOT + 8 * (p >> TC_LEAF_BITS), &leaf) ||
	    !leaf || !tc_read64(w->t, leaf + 8 * (p & (TC_LEAF_LEN - 1)), &v))
		return 0;
	return v;
}

// One span whose first page is key (read at addr).
static struct hd_error *span(struct tc_walker *w, uint64_t addr,
			     const uint64_t *s, uint64_t *next_key)
{
	struct hd_heap *h = w->h;
	uint64_t start = s[0], len = s[1];
	uint32_t bits = (uint32_t)s[5];
	unsigned refcount = bits & 0xffff, sc = (bits >> 16) & 0xff,
		 loc = (bits >> 24) & 3;
	*next_key = start + (len ? len : 1);
	if (!len || len > (1ull << 35) - start || loc > TC_ON_RETURNED) {
		hd_heap_problem_add(h, addr,
				    "tcmalloc span at 0x%llx (page 0x%llx) has length %llu and location %u: damaged, its pages are skipped",
				    (unsigned long long)addr, (unsigned long long)start,
				    (unsigned long long)len, loc);
		return NULL;
	}
	// Its last page maps to it too (in use: every page; free: the
	// first and last): else its length is damaged, and jumping over it
	// would hide the spans it claims.
	if (len > 1 && pagemap_get(w, start + len - 1) != addr) {
		hd_heap_problem_add(h, addr,
				    "tcmalloc span at 0x%llx (page 0x%llx) says %llu pages, but the page map does not name it for its last page: damaged, skipped",
				    (unsigned long long)addr, (unsigned long long)start,
				    (unsigned long long)len);
		*next_key = start + 1;
		return NULL;
	}
	uint64_t base = start << TC_PAGE_SHIFT, bytes = len << TC_PAGE_SHIFT;
	if (!hd_heap_add_metadata(h, addr, addr + TC_SPAN_SIZE, "tcmalloc Span",
				  HD_NO_REGION) ||
	    !seg_add(w, base, base + bytes))
		return &hd_error_no_memory;
	h->regions[w->heap_region].system_bytes += bytes;
	if (loc != TC_IN_USE) {
		unsigned list = loc == TC_ON_NORMAL ? TC_LIST_PAGEHEAP : TC_LIST_RETURNED;
		w->bytes[list] += bytes;
		w->listed[list]++;
		if (loc == TC_ON_NORMAL)
			w->free_spans++;
		else
			w->returned_spans++;
		if (!hd_heap_add(h, base, bytes, HD_STATE_FREE, list,
				 w->heap_region, 0))
			return &hd_error_no_memory;
		return NULL;
	}
	if (sc == 0) {
		w->large++;
		uint64_t usable = bytes;
		// A sampled allocation (the heap profiler's, libtcmalloc's
		// TCMALLOC_SAMPLE_PARAMETER) has a span of its own whose
		// objects word points to its StackTrace, whose first word is
		// the size asked; malloc_usable_size says that size rounded
		// as an unsampled request would be (tc_nallocx).
		if ((bits >> 26) & 1) {
			uint64_t asked;
			w->sampled++;
			if (!tc_read64(w->t, s[4], &asked) ||
			    (usable = nallocx(w->g, asked)) > bytes) {
				hd_heap_problem_add(h, addr,
						    "tcmalloc sampled span at 0x%llx: its stack trace at 0x%llx is unreadable or asks more than the span's %llu bytes; the whole span is shown as the block",
						    (unsigned long long)addr,
						    (unsigned long long)s[4],
						    (unsigned long long)bytes);
				usable = bytes;
			}
			w->sampled_tail += bytes - usable;
		}
		if (!hd_heap_add(h, base, usable, HD_STATE_USED, TC_LIST_NONE,
				 w->heap_region, 0))
			return &hd_error_no_memory;
		return NULL;
	}
	if (sc >= w->g->num_classes || len != w->g->pages[sc]) {
		hd_heap_problem_add(h, addr,
				    "tcmalloc span at 0x%llx says size class %u and %llu pages, which the size map (%u classes) does not give: its objects are not walked",
				    (unsigned long long)addr, sc,
				    (unsigned long long)len, w->g->num_classes);
		return NULL;
	}
	uint16_t r = class_region(w, sc);
	if (r == HD_REGION_NONE)
		return &hd_error_no_memory;
	uint64_t size = w->g->size[sc], count = bytes / size;
	w->overhead += bytes - count * size;
	if (!hd_heap_reserve(h, h->num_blocks + count))
		return &hd_error_no_memory;
	for (uint64_t i = 0; i < count; i++)
		if (!hd_heap_add(h, base + i * size, size, HD_STATE_USED,
				 TC_LIST_NONE, r, 0))
			return &hd_error_no_memory;
	if (w->nspans == w->capspans) {
		size_t cap = w->capspans ? 2 * w->capspans : 256;
		struct tc_span *n = realloc(w->spans, cap * sizeof(*n));
		if (!n)
			return &hd_error_no_memory;
		w->spans = n;
		w->capspans = cap;
	}
	w->spans[w->nspans++] = (struct tc_span){.addr = addr, .objects = s[4],
						 .count = (uint32_t)count,
						 .refcount = refcount, .sc = sc};
	return NULL;
}

// Every span, from the page map's leaves in page order.
static struct hd_error *walk_pagemap(struct tc_walker *w)
{
	uint64_t root = w->g->pageheap + TC_PH_ROOT;
	struct hd_view rv;
	struct hd_error *err = hd_target_view(w->t, root, 8ull * TC_ROOT_LEN, &rv);
	if (err)
		return err;
	uint64_t next_key = 0;
	for (uint64_t i = 0; i < TC_ROOT_LEN && !err; i++) {
		uint64_t leaf;
		memcpy(&leaf, rv.data + 8 * i, 8);
		if (!leaf)
			continue;
		struct hd_view lv;
		err = hd_target_view(w->t, leaf, 8ull * TC_LEAF_LEN, &lv);
		if (err) {
			hd_error_destroy(err);
			err = NULL;
			hd_heap_problem_add(w->h, root + 8 * i,
					    "tcmalloc's page map leaf %llu at 0x%llx is unreadable: the spans of pages 0x%llx to 0x%llx are missing",
					    (unsigned long long)i, (unsigned long long)leaf,
					    (unsigned long long)(i << TC_LEAF_BITS),
					    (unsigned long long)(((i + 1) << TC_LEAF_BITS) - 1));
			continue;
		}
		w->leaves++;
		if (!hd_heap_add_metadata(w->h, leaf, leaf + 8ull * TC_LEAF_LEN,
					  "tcmalloc page map leaf", HD_NO_REGION)) {
			hd_view_deinit(&lv);
			err = &hd_error_no_memory;
			break;
		}
		for (uint64_t k = 0; k < TC_LEAF_LEN && !err; k++) {
			uint64_t key = (i << TC_LEAF_BITS) | k;
			if (key < next_key) {
				k += (next_key - key < TC_LEAF_LEN ? next_key - key : TC_LEAF_LEN) - 1;
				continue;
			}
			uint64_t lo, hi, sp;
			uint64_t a = leaf + 8 * k;
			if (!hd_view_next_data(&lv, a, leaf + 8ull * TC_LEAF_LEN, &lo, &hi))
				break;
			if (lo > a) {
				k = (lo - leaf) / 8 - 1;
				continue;
			}
			memcpy(&sp, lv.data + 8 * k, 8);
			if (!sp)
				continue;
			uint64_t s[6];
			struct hd_error *e = hd_target_read(w->t, sp, s, sizeof(s));
			if (e) {
				hd_error_destroy(e);
				hd_heap_problem_add(w->h, a,
						    "tcmalloc's page map maps page 0x%llx to 0x%llx, which is unreadable",
						    (unsigned long long)key, (unsigned long long)sp);
				continue;
			}
			// A page inside a span freed and merged keeps a
			// stale entry; only a span's first page starts it.
			if (s[0] != key)
				continue;
			err = span(w, sp, s, &next_key);
		}
		hd_view_deinit(&lv);
	}
	hd_view_deinit(&rv);
	if (!err && w->seg_open && !hd_heap_add_segment(w->h, &w->seg))
		err = &hd_error_no_memory;
	return err;
}

// Marks the object at p, listed on list for class sc, free.
static bool mark(struct tc_walker *w, uint64_t p, unsigned sc, unsigned list,
		 const char *where, uint64_t owner)
{
	struct hd_heap *h = w->h;
	int64_t id = hd_heap_find_exact(h, p);
	if (id < 0 || h->region[id] != w->class_region[sc]) {
		hd_heap_problem_add(h, p,
				    "tcmalloc's %s at 0x%llx lists 0x%llx for size class %u, which is no object of an in-use span of that class: the list is damaged and the rest of it is not followed",
				    where, (unsigned long long)owner,
				    (unsigned long long)p, sc);
		return false;
	}
	if (hd_heap_state(h, (size_t)id) == HD_STATE_FREE) {
		hd_heap_problem_add(h, p,
				    "tcmalloc's %s at 0x%llx lists 0x%llx (size class %u), which another free list already holds: the rest of the list is not followed",
				    where, (unsigned long long)owner,
				    (unsigned long long)p, sc);
		return false;
	}
	hd_heap_set(h, (size_t)id, HD_STATE_FREE, list);
	w->bytes[list] += w->g->size[sc];
	w->listed[list]++;
	return true;
}

// Follows a chain of objects linked by their first word from p, at most
// max of them; the number followed.
static uint64_t follow(struct tc_walker *w, uint64_t p, uint64_t max,
		       unsigned sc, unsigned list, const char *where,
		       uint64_t owner, uint64_t *last)
{
	uint64_t n = 0;
	*last = 0;
	while (p && n < max) {
		if (!mark(w, p, sc, list, where, owner))
			return n;
		*last = p;
		n++;
		if (!tc_read64(w->t, p, &p)) {
			hd_heap_problem_add(w->h, *last,
					    "tcmalloc's %s at 0x%llx: the free object 0x%llx is unreadable",
					    where, (unsigned long long)owner,
					    (unsigned long long)*last);
			return n;
		}
	}
	if (p && n == max)
		hd_heap_problem_add(w->h, *last,
				    "tcmalloc's %s at 0x%llx: the list for size class %u goes on past the %llu objects it can hold (after 0x%llx)",
				    where, (unsigned long long)owner, sc,
				    (unsigned long long)max, (unsigned long long)*last);
	return n;
}

static void walk_central(struct tc_walker *w)
{
	for (size_t i = 0; i < w->nspans; i++) {
		struct tc_span *s = &w->spans[i];
		uint64_t last;
		uint64_t n = follow(w, s->objects, s->count, s->sc, TC_LIST_CENTRAL,
				    "span object list", s->addr, &last);
		if (n + s->refcount != s->count)
			hd_heap_problem_add(w->h, s->addr,
					    "tcmalloc span at 0x%llx (size class %u): %llu objects on its free list and a refcount of %u do not make its %u objects",
					    (unsigned long long)s->addr, s->sc,
					    (unsigned long long)n, s->refcount, s->count);
	}
}

static struct hd_error *walk_transfer(struct tc_walker *w)
{
	const struct tc_globals *g = w->g;
	for (unsigned sc = 1; sc < g->num_classes; sc++) {
		uint64_t c = g->central + (uint64_t)TC_CFL_SIZE * sc;
		uint32_t used;
		struct hd_error *err = hd_target_read(w->t, c + TC_CFL_USED_SLOTS, &used, 4);
		if (err)
			return err;
		if (used > TC_CFL_MAX_SLOTS) {
			hd_heap_problem_add(w->h, c + TC_CFL_USED_SLOTS,
					    "tcmalloc's central free list of class %u says %u transfer cache slots are used, past the %u it has",
					    sc, used, TC_CFL_MAX_SLOTS);
			continue;
		}
		for (uint32_t k = 0; k < used; k++) {
			uint64_t slot[2], last;
			err = hd_target_read(w->t, c + TC_CFL_SLOTS + 16ull * k, slot, 16);
			if (err)
				return err;
			uint64_t n = follow(w, slot[0], g->move[sc], sc,
					    TC_LIST_TRANSFER, "transfer cache slot",
					    c + TC_CFL_SLOTS + 16ull * k, &last);
			if (n != g->move[sc] || last != slot[1])
				hd_heap_problem_add(w->h, c + TC_CFL_SLOTS + 16ull * k,
						    "tcmalloc's transfer cache slot at 0x%llx (class %u) holds %llu objects ending at 0x%llx, not the batch of %u ending at its tail 0x%llx",
						    (unsigned long long)(c + TC_CFL_SLOTS + 16ull * k),
						    sc, (unsigned long long)n,
						    (unsigned long long)last, g->move[sc],
						    (unsigned long long)slot[1]);
		}
	}
	return NULL;
}

#define TC_MAX_CACHES 65536

static struct hd_error *walk_thread_caches(struct tc_walker *w)
{
	const struct tc_globals *g = w->g;
	uint64_t tc;
	if (!tc_read64(w->t, g->thread_heaps, &tc))
		return hd_error_create(HD_ERROR_FAULT,
				       "tcmalloc's ThreadCache::thread_heaps_ at 0x%llx is unreadable",
				       (unsigned long long)g->thread_heaps);
	uint8_t buf[TC_TC_SIZE];
	while (tc) {
		if (w->caches == TC_MAX_CACHES) {
			hd_heap_problem_add(w->h, tc,
					    "tcmalloc's list of thread caches goes on past %u caches (a loop?): the rest is not walked",
					    TC_MAX_CACHES);
			break;
		}
		struct hd_error *err = hd_target_read(w->t, tc, buf, sizeof(buf));
		if (err) {
			hd_error_destroy(err);
			hd_heap_problem_add(w->h, tc,
					    "tcmalloc thread cache at 0x%llx is unreadable: the objects it holds, and the caches after it, are shown used",
					    (unsigned long long)tc);
			break;
		}
		w->caches++;
		uint64_t before = w->bytes[TC_LIST_THREAD];
		if (!hd_heap_add_metadata(w->h, tc, tc + TC_TC_SIZE,
					  "tcmalloc ThreadCache", HD_NO_REGION))
			return &hd_error_no_memory;
		for (unsigned sc = 1; sc < g->num_classes; sc++) {
			uint64_t head, last;
			uint32_t len;
			memcpy(&head, buf + TC_FL_SIZE * sc, 8);
			memcpy(&len, buf + TC_FL_SIZE * sc + 8, 4);
			uint64_t n = follow(w, head, len, sc, TC_LIST_THREAD,
					    "thread cache", tc, &last);
			if (n != len && !(n < len && head == 0))
				continue; // follow() said why
			if (n != len)
				hd_heap_problem_add(w->h, tc + TC_FL_SIZE * sc,
						    "tcmalloc thread cache at 0x%llx: the list of class %u says %u objects and holds %llu",
						    (unsigned long long)tc, sc, len,
						    (unsigned long long)n);
		}
		// The cache's own count of the bytes its lists hold.
		int32_t size;
		memcpy(&size, buf + TC_TC_BYTES, 4);
		if ((uint64_t)(int64_t)size != w->bytes[TC_LIST_THREAD] - before)
			hd_heap_problem_add(w->h, tc + TC_TC_BYTES,
					    "tcmalloc thread cache at 0x%llx counts %d bytes on its lists; they hold %llu",
					    (unsigned long long)tc, size,
					    (unsigned long long)(w->bytes[TC_LIST_THREAD] - before));
		memcpy(&tc, buf + TC_TC_NEXT, 8);
	}
	return NULL;
}

static bool facts(struct tc_walker *w)
{
	struct hd_heap *h = w->h;
	const struct tc_globals *g = w->g;
	// tcmalloc counts a sampled span's pages past its block allocated.
	uint64_t used = w->sampled_tail;
	for (size_t i = 0; i < h->num_blocks; i++)
		if (hd_heap_state(h, i) == HD_STATE_USED)
			used += hd_heap_extent(h, i);
	uint64_t stats[4] = {0};
	struct hd_error *err = hd_target_read(w->t, g->pageheap + TC_PH_STATS,
					      stats, sizeof(stats));
	// Every byte the page heap got from the system is in a span the
	// page map names: a difference means spans this walk did not see.
	if (!err && stats[0] != h->regions[w->heap_region].system_bytes)
		hd_heap_problem_add(h, g->pageheap + TC_PH_STATS,
				    "tcmalloc's page heap counts %llu bytes from the system; the spans its page map names hold %llu",
				    (unsigned long long)stats[0],
				    (unsigned long long)h->regions[w->heap_region].system_bytes);
	hd_error_destroy(err);
	return hd_heap_fact_addr(h, HD_NO_REGION, "pageheap", g->pageheap) &&
	       hd_heap_fact_addr(h, HD_NO_REGION, "central_cache", g->central) &&
	       hd_heap_fact_addr(h, HD_NO_REGION, "thread_heaps", g->thread_heaps) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "page_size", 1u << TC_PAGE_SHIFT) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "size_classes", g->num_classes) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "pagemap_leaves", w->leaves) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "small_spans", w->nspans) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "large_spans", w->large) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "free_spans", w->free_spans) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "returned_spans", w->returned_spans) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "thread_caches", w->caches) &&
	       // Named as MallocExtension names its properties.
	       hd_heap_fact_uint(h, HD_NO_REGION, "current_allocated_bytes", used) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "thread_cache_free_bytes",
				 w->bytes[TC_LIST_THREAD]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "central_cache_free_bytes",
				 w->bytes[TC_LIST_CENTRAL] + w->overhead) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "transfer_cache_free_bytes",
				 w->bytes[TC_LIST_TRANSFER]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "pageheap_free_bytes",
				 w->bytes[TC_LIST_PAGEHEAP]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "pageheap_unmapped_bytes",
				 w->bytes[TC_LIST_RETURNED]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "span_tail_bytes", w->overhead) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "sampled_spans", w->sampled) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "sampled_tail_bytes", w->sampled_tail) &&
	       // The page heap's own counters (PageHeap::Stats).
	       hd_heap_fact_uint(h, HD_NO_REGION, "pageheap_system_bytes", stats[0]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "pageheap_stats_free_bytes", stats[1]) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "pageheap_stats_unmapped_bytes", stats[2]);
}

struct hd_error *tc_walk(const struct hd_heap_source *src, struct hd_heap *h,
			 const struct tc_globals *g)
{
	struct tc_walker w = {.t = src->t, .h = h, .g = g};
	memset(w.class_region, 0xff, sizeof(w.class_region));
	struct hd_region r = {.addr = g->pageheap, .kind = "page heap",
			      .primary = true};
	w.heap_region = hd_heap_add_region(h, &r);
	if (w.heap_region == HD_REGION_NONE)
		return &hd_error_no_memory;
	uint64_t move = g->class_to_size + TC_SM_MOVE;
	if (!hd_heap_add_metadata(h, g->pageheap, g->pageheap + TC_PH_SIZE,
				  "tcmalloc PageHeap (Static::pageheap_)", HD_NO_REGION) ||
	    !hd_heap_add_metadata(h, g->central,
				  g->central + (uint64_t)TC_CFL_SIZE * TC_CLASSES_MAX,
				  "tcmalloc central free lists (Static::central_cache_)",
				  HD_NO_REGION) ||
	    !hd_heap_add_metadata(h, move, g->class_to_pages + 8 * TC_CLASSES_MAX + 8,
				  "tcmalloc size map (Static::sizemap_)", HD_NO_REGION))
		return &hd_error_no_memory;
	struct hd_error *err = walk_pagemap(&w);
	if (!err) {
		walk_central(&w);
		err = walk_transfer(&w);
	}
	if (!err)
		err = walk_thread_caches(&w);
	if (!err && !facts(&w))
		err = &hd_error_no_memory;
	free(w.spans);
	return err;
}
