// Pages and their blocks: a span's slice decoded into a page, the page's
// lists followed, its blocks added to the table (walk.c drives it over
// every segment).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/mimalloc/mimalloc_internal.h"

const struct hd_free_list hd_mi_lists[MI_NUM_LISTS] = {
	[MI_LIST_NONE] = {"none", NULL, false},
	[MI_LIST_FREE] = {"free", "free: page free lists", false},
	[MI_LIST_LOCAL_FREE] = {"local_free", "free: page local_free lists", false},
	[MI_LIST_THREAD_FREE] = {"thread_free", "free: page thread_free lists", false},
	// The heap's thread_delayed_free list: mimalloc's "delayed free".
	[MI_LIST_DELAYED] = {"delayed_free", "free: heap thread_delayed_free lists", false},
	[MI_LIST_UNEXTENDED] = {"unextended", "reserve: pages past their capacity", true},
};

static const char *list_name(unsigned l)
{
	return hd_mi_lists[l].name;
}

static bool decode_page(struct mi_walk *w, const struct mi_segment_info *s,
			size_t idx, const uint8_t *sl, struct mi_page *p)
{
	uint32_t count = hd_mi_u32(sl + PAGE_SLICE_COUNT);
	uint32_t bs = hd_mi_u32(sl + PAGE_BLOCK_SIZE);
	memset(p, 0, sizeof(*p));
	p->addr = s->addr + SEG_SLICES + idx * PAGE_SIZE;
	uint64_t offset = bs >= 8 && bs <= 1024 ? MI_SMALL_START_OFFSET : 0;
	p->start = s->addr + (idx << MI_SLICE_SHIFT) + offset;
	p->size = ((uint64_t)count << MI_SLICE_SHIFT) - offset;
	p->bsize = bs >= MI_HUGE_BLOCK_SIZE ? p->size : bs;
	p->capacity = hd_mi_u16(sl + PAGE_CAPACITY);
	p->reserved = hd_mi_u16(sl + PAGE_RESERVED);
	p->used = hd_mi_u32(sl + PAGE_USED);
	p->free = hd_mi_u64(sl + PAGE_FREE);
	p->local_free = hd_mi_u64(sl + PAGE_LOCAL_FREE);
	p->thread_free = hd_mi_u64(sl + PAGE_THREAD_FREE) & ~3ULL;
	p->heap = hd_mi_u64(sl + PAGE_HEAP);
	if (p->start + p->size > s->addr + s->size || p->bsize < 8 ||
	    p->bsize % 8 || p->capacity > p->reserved ||
	    (uint64_t)p->reserved * p->bsize > p->size ||
	    p->size >> 3 > UINT32_MAX) {
		hd_heap_problem_add(w->h, p->addr,
				    "mimalloc page 0x%llx (segment 0x%llx): block size %llu, capacity %u, reserved %u do not fit its %llu bytes; its blocks are missing",
				    (unsigned long long)p->addr,
				    (unsigned long long)s->addr,
				    (unsigned long long)p->bsize, p->capacity,
				    p->reserved, (unsigned long long)p->size);
		return false;
	}
	return true;
}

bool hd_mi_for_each_page(struct mi_walk *w, const struct mi_segment_info *s,
			 bool report, mi_page_fn fn, void *arg,
			 struct mi_counts *c)
{
	if (!s->header)
		return true;
	size_t idx = s->info_slices;
	const uint8_t *first = s->header + SEG_SLICES;
	if (hd_mi_u32(first + PAGE_SLICE_COUNT) != s->info_slices && report)
		hd_heap_problem_add(w->h, s->addr,
				    "mimalloc segment 0x%llx: its first span is not its %llu info slices",
				    (unsigned long long)s->addr,
				    (unsigned long long)s->info_slices);
	while (idx < s->slice_entries) {
		const uint8_t *sl = s->header + SEG_SLICES + idx * PAGE_SIZE;
		uint32_t count = hd_mi_u32(sl + PAGE_SLICE_COUNT);
		if (!count || hd_mi_u32(sl + PAGE_SLICE_OFFSET) != 0 ||
		    (s->kind == 0 && idx + count > s->slice_entries)) {
			if (report)
				hd_heap_problem_add(w->h, s->addr + SEG_SLICES + idx * PAGE_SIZE,
						    "mimalloc segment 0x%llx: slice %zu starts no span (count %u); the rest of the segment is skipped",
						    (unsigned long long)s->addr, idx, count);
			return true;
		}
		if (!hd_mi_u32(sl + PAGE_BLOCK_SIZE)) {
			if (c) {
				c->free_spans++;
				c->free_span_bytes += (uint64_t)count << MI_SLICE_SHIFT;
			}
		} else {
			// Without report, only the page's heap is wanted (and no
			// problem is recorded twice).
			struct mi_page p = {.heap = hd_mi_u64(sl + PAGE_HEAP)};
			bool ok = !report || decode_page(w, s, idx, sl, &p);
			if (ok && !fn(w, s, &p, arg))
				return false;
		}
		idx += count;
	}
	return true;
}


// Marks the blocks of one list of page p; a pointer outside the page or a
// loop is a problem and ends the list (its other blocks are taken for used).
static size_t mark_list(struct mi_walk *w, const struct mi_page *p,
			const struct hd_view *v, uint64_t b, unsigned list,
			uint8_t *state)
{
	size_t n = 0;
	uint64_t end = p->start + (uint64_t)p->capacity * p->bsize;
	while (b) {
		if (b < p->start || b >= end || (b - p->start) % p->bsize ||
		    state[(b - p->start) / p->bsize]) {
			hd_heap_problem_add(w->h, b,
					    "mimalloc page 0x%llx: its %s list holds 0x%llx, which is not a block of the page or is listed twice; the rest of the list is taken for used",
					    (unsigned long long)p->addr, list_name(list),
					    (unsigned long long)b);
			break;
		}
		state[(b - p->start) / p->bsize] = (uint8_t)list;
		n++;
		if (v && b + 8 <= v->addr + v->len) {
			memcpy(&b, v->data + (b - v->addr), 8);
		} else if (!hd_mi_read64(w->t, b, &b)) {
			hd_heap_problem_add(w->h, b,
					    "mimalloc page 0x%llx: %s list entry unreadable; the rest of the list is taken for used",
					    (unsigned long long)p->addr, list_name(list));
			break;
		}
	}
	return n;
}

bool hd_mi_walk_page(struct mi_walk *w, const struct mi_segment_info *s,
		     const struct mi_page *p, void *arg)
{
	struct mi_block_walk *bw = arg;
	struct mi_counts *c = bw->c;
	uint16_t region = hd_mi_page_region(w, s, p->heap);
	uint64_t end = p->start + (uint64_t)p->capacity * p->bsize;
	c->pages++;
	memset(bw->state, 0, p->capacity);
	// The blocks' bytes, for the lists' next pointers: a zero-copy view
	// of a core, one read of a live process.
	struct hd_view v = {0};
	bool view = false;
	if ((p->free || p->local_free || p->thread_free) && end - p->start <= (4u << 20)) {
		struct hd_error *err = hd_target_view(w->t, p->start, end - p->start, &v);
		view = !err;
		hd_error_destroy(err);
	}
	size_t nfree = mark_list(w, p, view ? &v : NULL, p->free, MI_LIST_FREE, bw->state);
	size_t nlocal = mark_list(w, p, view ? &v : NULL, p->local_free,
				  MI_LIST_LOCAL_FREE, bw->state);
	mark_list(w, p, view ? &v : NULL, p->thread_free, MI_LIST_THREAD_FREE,
		  bw->state);
	if (view)
		hd_view_deinit(&v);
	// Blocks on a heap's thread_delayed_free list in this page.
	size_t lo = 0, hi = w->num_delayed;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->delayed[mid] < p->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < w->num_delayed && w->delayed[lo] < end; lo++) {
		uint64_t b = w->delayed[lo];
		size_t i = (b - p->start) / p->bsize;
		if ((b - p->start) % p->bsize || bw->state[i]) {
			hd_heap_problem_add(w->h, b,
					    "mimalloc page 0x%llx: thread_delayed_free entry 0x%llx is not a block of the page or is on another list too",
					    (unsigned long long)p->addr,
					    (unsigned long long)b);
			continue;
		}
		bw->state[i] = MI_LIST_DELAYED;
		c->delayed_matched++;
	}
	// `used` counts every block not on free or local_free (thread_free and
	// delayed blocks are taken off it when the owner collects them).
	if ((uint64_t)p->capacity - nfree - nlocal != p->used)
		hd_heap_problem_add(w->h, p->addr,
				    "mimalloc page 0x%llx: %u blocks, %zu on free and %zu on local_free, but the page counts %u used; some verdicts on its blocks may be wrong",
				    (unsigned long long)p->addr, p->capacity, nfree,
				    nlocal, p->used);
	for (uint32_t i = 0; i < p->capacity; i++) {
		unsigned l = bw->state[i];
		c->lists[l]++;
		if (!hd_heap_add(w->h, p->start + (uint64_t)i * p->bsize, p->bsize,
				 l ? HD_STATE_FREE : HD_STATE_USED, l, region, 0))
			return false;
	}
	if (p->size - (end - p->start) >= 8) {
		c->lists[MI_LIST_UNEXTENDED]++;
		c->unextended_bytes += p->size - (end - p->start);
		if (!hd_heap_add(w->h, end, p->size - (end - p->start),
				 HD_STATE_FREE, MI_LIST_UNEXTENDED, region, 0))
			return false;
	}
	return true;
}
