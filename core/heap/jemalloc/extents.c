// The extents of the emap's rtree, in address order: a slab's regions
// (free when its bitmap says so), a large extent's one block, the dirty,
// muzzy and retained extents the arenas keep, and the segments they tile.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/jemalloc/jemalloc_internal.h"
#include "util/sort.h"

// Leaves of the rtree read at most: each maps 1 GiB of address space.
#define JE_MAX_LEAVES 4096

static uint16_t region_of(struct je_walk *w, unsigned ind, uint64_t edata)
{
	uint32_t pos = ind < w->l->arena_limit ? w->arena_pos[ind] : 0;
	if (pos)
		return w->arenas[pos - 1].region;
	if (!w->missing_arena_reported) {
		w->missing_arena_reported = true;
		hd_heap_problem_add(w->h, edata,
				    "extent descriptor 0x%llx names arena %u, which arenas[] does not hold: its thread caches are not read",
				    (unsigned long long)edata, ind);
	}
	return HD_REGION_NONE;
}

static struct je_arena *arena_of(struct je_walk *w, unsigned ind)
{
	uint32_t pos = ind < w->l->arena_limit ? w->arena_pos[ind] : 0;
	return pos ? &w->arenas[pos - 1] : NULL;
}

static bool flush_segment(struct je_walk *w)
{
	if (!w->seg_open)
		return true;
	w->seg_open = false;
	return hd_heap_add_segment(w->h, &w->seg);
}

// Adjacent extents of one arena make one segment.
static bool add_segment(struct je_walk *w, uint64_t start, uint64_t end,
			uint16_t region)
{
	uint32_t r = region == HD_REGION_NONE ? HD_NO_REGION : region;
	if (w->seg_open && w->seg.end == start && w->seg.region == r) {
		w->seg.end = end;
		return true;
	}
	if (!flush_segment(w))
		return false;
	w->seg = (struct hd_heap_segment){.start = start, .end = end, .region = r};
	w->seg_open = true;
	return true;
}

struct extent {
	uint64_t edata, bits, addr, base, size;
	unsigned arena, state, szind, nfree;
	bool slab;
	uint64_t bitmap[8];
};

static struct hd_error *add(struct je_walk *w, uint64_t addr, uint64_t extent,
			    enum hd_block_state state, unsigned list,
			    uint16_t region)
{
	if (!hd_heap_add(w->h, addr, extent, state, list, region, JE_SHAPE_PLAIN))
		return &hd_error_no_memory;
	return NULL;
}

static struct hd_error *slab(struct je_walk *w, const struct extent *e,
			     uint16_t region)
{
	const struct je_layout *l = w->l;
	uint64_t reg = je_index2size(l, e->szind);
	if (e->szind >= l->nbins || !reg || e->size % reg ||
	    e->size / reg > l->slab_maxregs) {
		hd_heap_problem_add(w->h, e->base,
				    "slab 0x%llx (descriptor 0x%llx): size %llu and size class %u do not fit; its regions are skipped",
				    (unsigned long long)e->base,
				    (unsigned long long)e->edata,
				    (unsigned long long)e->size, e->szind);
		return NULL;
	}
	unsigned nregs = (unsigned)(e->size / reg), nfree = 0;
	for (unsigned i = 0; i < nregs; i++)
		nfree += (e->bitmap[i / 64] >> (i % 64)) & 1;
	if (nfree != e->nfree)
		hd_heap_problem_add(w->h, e->base,
				    "slab 0x%llx: its bitmap shows %u free regions, its descriptor 0x%llx counts %u",
				    (unsigned long long)e->base, nfree,
				    (unsigned long long)e->edata, e->nfree);
	struct je_arena *a = arena_of(w, e->arena);
	if (a) {
		a->slabs++;
		a->slab_bytes += e->size;
		a->used_regions += nregs - nfree;
	}
	w->slabs++;
	for (unsigned i = 0; i < nregs; i++) {
		// The bitmap stores 1 for a free region.
		bool is_free = (e->bitmap[i / 64] >> (i % 64)) & 1;
		struct hd_error *err = add(w, e->base + i * reg, reg,
					   is_free ? HD_STATE_FREE : HD_STATE_USED,
					   is_free ? JE_LIST_SLAB : JE_LIST_NONE,
					   region);
		if (err)
			return err;
	}
	return NULL;
}

static struct hd_error *large(struct je_walk *w, const struct extent *e,
			      uint16_t region)
{
	uint64_t usize = je_index2size(w->l, e->szind);
	if (e->szind < w->l->nbins || !usize || e->addr < e->base ||
	    e->addr + usize > e->base + e->size ||
	    (usize >> w->h->span_shift) > UINT32_MAX) {
		hd_heap_problem_add(w->h, e->addr,
				    "large extent 0x%llx (descriptor 0x%llx): size class %u (%llu bytes) does not fit its %llu bytes; skipped",
				    (unsigned long long)e->addr,
				    (unsigned long long)e->edata, e->szind,
				    (unsigned long long)usize,
				    (unsigned long long)e->size);
		return NULL;
	}
	struct je_arena *a = arena_of(w, e->arena);
	if (a) {
		a->large++;
		a->large_bytes += usize;
		a->large_extent_bytes += e->size;
	}
	w->large++;
	return add(w, e->addr, usize, HD_STATE_USED, JE_LIST_NONE, region);
}

// Free extents: whole, as the allocator keeps them.
static struct hd_error *unused(struct je_walk *w, const struct extent *e,
			       uint16_t region)
{
	struct je_arena *a = arena_of(w, e->arena);
	unsigned list = e->state == JE_DIRTY ? JE_LIST_DIRTY :
			e->state == JE_MUZZY ? JE_LIST_MUZZY : JE_LIST_RETAINED;
	if (a)
		*(list == JE_LIST_DIRTY ? &a->dirty :
		  list == JE_LIST_MUZZY ? &a->muzzy : &a->retained) += e->size;
	if ((e->size >> w->h->span_shift) > UINT32_MAX) {
		hd_heap_problem_add(w->h, e->base,
				    "extent 0x%llx of %llu bytes is too large for one block; not shown",
				    (unsigned long long)e->base,
				    (unsigned long long)e->size);
		return NULL;
	}
	return add(w, e->base, e->size, HD_STATE_FREE, list, region);
}

static bool read_extent(struct je_walk *w, uint64_t edata, struct extent *e)
{
	const struct je_layout *l = w->l;
	uint8_t buf[256];
	struct hd_error *err = hd_target_read(w->src->t, edata, buf, l->edata_size);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	uint64_t pmask = (1ULL << l->lg_page) - 1;
	e->edata = edata;
	memcpy(&e->bits, buf, 8);
	memcpy(&e->addr, buf + l->edata_addr, 8);
	memcpy(&e->size, buf + l->edata_size_esn, 8);
	memcpy(e->bitmap, buf + l->edata_slab_bitmap, 8 * l->bitmap_groups);
	e->size &= ~pmask;
	e->base = e->addr & ~pmask;
	e->arena = (unsigned)(e->bits & ((1u << l->bits_arena_width) - 1));
	e->slab = (e->bits >> l->bits_slab_shift) & 1;
	e->state = (unsigned)(e->bits >> l->bits_state_shift) & 7;
	e->szind = (unsigned)(e->bits >> l->bits_szind_shift) &
		   ((1u << l->bits_szind_width) - 1);
	e->nfree = (unsigned)(e->bits >> l->bits_nfree_shift) &
		   ((1u << l->bits_nfree_width) - 1);
	return true;
}

// One leaf of the rtree: 1 << rtree_bits1 pages from leaf_base.
static struct hd_error *walk_leaf(struct je_walk *w, uint64_t leaf,
				  uint64_t leaf_base, uint64_t *next)
{
	const struct je_layout *l = w->l;
	size_t n = (size_t)1 << l->rtree_bits1;
	struct hd_view v;
	struct hd_error *err = hd_target_view(w->src->t, leaf, n * 8, &v);
	if (err) {
		hd_heap_problem_add(w->h, leaf,
				    "rtree leaf 0x%llx (pages 0x%llx-) is unreadable: %s; its extents are missing",
				    (unsigned long long)leaf,
				    (unsigned long long)leaf_base, err->message);
		hd_error_destroy(err);
		return NULL;
	}
	unsigned nhib = 64 - l->lg_vaddr;
	for (size_t k = 0; k < n && !err; k++) {
		uint64_t page = leaf_base + ((uint64_t)k << l->lg_page);
		if (page < *next)
			continue;
		uint64_t bits;
		memcpy(&bits, v.data + k * 8, 8);
		if (!bits)
			continue;
		uint64_t edata = (uint64_t)((int64_t)(bits << nhib) >> nhib) &
				 ~(uint64_t)(l->edata_align - 1);
		struct extent e;
		if (!edata || !read_extent(w, edata, &e) || !e.size ||
		    page < e.base || page >= e.base + e.size || e.base < *next) {
			hd_heap_problem_add(w->h, page,
					    "rtree entry of page 0x%llx names descriptor 0x%llx, which does not describe that page; skipped",
					    (unsigned long long)page,
					    (unsigned long long)edata);
			*next = page + (1ULL << l->lg_page);
			continue;
		}
		*next = e.base + e.size;
		w->extents++;
		uint16_t region = region_of(w, e.arena, edata);
		if (!add_segment(w, e.base, e.base + e.size, region)) {
			err = &hd_error_no_memory;
			break;
		}
		switch (e.state) {
		case JE_ACTIVE:
			err = e.slab ? slab(w, &e, region) : large(w, &e, region);
			break;
		case JE_DIRTY:
		case JE_MUZZY:
		case JE_RETAINED:
			err = unused(w, &e, region);
			break;
		default:
			hd_heap_problem_add(w->h, e.base,
					    "extent 0x%llx (descriptor 0x%llx) is being split or merged (state %u): its blocks are not shown",
					    (unsigned long long)e.base,
					    (unsigned long long)edata, e.state);
		}
	}
	hd_view_deinit(&v);
	return err;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct hd_error *je_walk_extents(struct je_walk *w)
{
	const struct je_layout *l = w->l;
	size_t nroot = (size_t)1 << l->rtree_bits0;
	struct hd_view root;
	struct hd_error *err = hd_target_view(w->src->t, w->g.emap + l->rtree_root,
					      nroot * 8, &root);
	if (err)
		return err;
	// Each leaf maps its own GiB: a leaf named twice is damage, and more
	// leaves than JE_MAX_LEAVES (TiBs of heap) are not read, so a corrupt
	// root costs no more than a real one.
	uint64_t *leaves = malloc(nroot * sizeof(*leaves));
	size_t nleaves = 0;
	if (!leaves) {
		hd_view_deinit(&root);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < nroot; i++) {
		uint64_t leaf;
		memcpy(&leaf, root.data + i * 8, 8);
		if (leaf)
			leaves[nleaves++] = leaf;
	}
	hd_qsort(leaves, nleaves, sizeof(*leaves), u64_cmp);
	uint64_t next = 0;
	size_t walked = 0;
	for (size_t i = 0; i < nroot && !err; i++) {
		uint64_t leaf;
		memcpy(&leaf, root.data + i * 8, 8);
		if (!leaf)
			continue;
		uint64_t leaf_base = (uint64_t)i << (l->rtree_bits1 + l->lg_page);
		uint64_t *at = bsearch(&leaf, leaves, nleaves, sizeof(*leaves), u64_cmp);
		bool twice = (at > leaves && at[-1] == leaf) ||
			     (at && at + 1 < leaves + nleaves && at[1] == leaf);
		if (leaf % 8 || twice) {
			hd_heap_problem_add(w->h, leaf,
					    "rtree leaf 0x%llx (pages 0x%llx-) is misaligned or named for two ranges; skipped",
					    (unsigned long long)leaf,
					    (unsigned long long)leaf_base);
			continue;
		}
		if (walked++ == JE_MAX_LEAVES) {
			hd_heap_problem_add(w->h, leaf,
					    "more than %d rtree leaves; the extents of pages 0x%llx and up are not shown",
					    JE_MAX_LEAVES, (unsigned long long)leaf_base);
			break;
		}
		err = walk_leaf(w, leaf, leaf_base, &next);
	}
	free(leaves);
	hd_view_deinit(&root);
	if (!err && !flush_segment(w))
		err = &hd_error_no_memory;
	return err;
}
