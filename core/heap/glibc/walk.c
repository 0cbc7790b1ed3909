// glibc_walk_heap: find the arenas (by symbol or by shape), the heaps and
// mmapped chunks, walk the chunks, then the free lists; then hand the
// arenas, heaps, malloc's own structures and what was found to the
// neutral table.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "target/views.h"
#include "util/vec.h"

bool glibc_read64(struct glibc_walk *w, uint64_t addr, uint64_t *ret)
{
	// Views are sorted by address (segments are walked in order).
	const struct hd_view *v = hd_views_find(w->views, w->num_views, addr, 8);
	if (v) {
		memcpy(ret, v->data + (addr - v->addr), 8);
		return true;
	}
	struct hd_error *err = hd_target_read(w->t, addr, ret, 8);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

static void check_mmaps(struct glibc_walk *w)
{
	struct hd_heap *h = w->h;
	if (!w->lay.mp_known)
		return;
	uint64_t n_mmaps = 0, threshold = 0;
	glibc_read64(w, w->lay.mp_addr + w->lay.mp_off_n_mmaps, &n_mmaps);
	glibc_read64(w, w->lay.mp_addr + w->lay.mp_off_mmap_threshold, &threshold);
	// n_mmaps is an int in malloc_par.
	n_mmaps &= 0xffffffff;
	hd_heap_fact_uint(h, HD_NO_REGION, "n_mmaps", n_mmaps);
	hd_heap_fact_uint(h, HD_NO_REGION, "mmap_threshold", threshold);
	uint64_t found = 0;
	for (size_t i = 0; i < w->num_segs; i++)
		found += w->segs[i].mmapped;
	if (found != n_mmaps)
		hd_heap_problem_add(h, w->lay.mp_addr,
				    "malloc counts %llu mmapped chunks but %llu were found",
				    (unsigned long long)n_mmaps,
				    (unsigned long long)found);
}

// Records the version decided from the layout, the data and libc's name.
static void set_version(struct glibc_walk *w)
{
	glibc_decide_version(w);
	struct hd_heap *h = w->h;
	if (w->version[0]) {
		snprintf(h->version, sizeof(h->version), "%s", w->version);
		h->info.version = h->version;
	}
	if (w->version_source[0]) {
		snprintf(h->version_source, sizeof(h->version_source), "%s",
			 w->version_source);
		h->info.version_source = h->version_source;
	}
}

// Arenas become regions (block arena indices are region indices), and
// main_arena, mp_ and each non-main heap's header before its first chunk
// are the allocator's metadata.
static struct hd_error *hand_over(struct glibc_walk *w, uint64_t main_arena)
{
	struct hd_heap *h = w->h;
	bool ok = true;
	for (size_t i = 0; i < w->num_arenas && ok; i++) {
		const struct hd_arena *a = &w->arenas[i];
		struct hd_region r = {
			.addr = a->addr,
			.kind = "arena",
			.primary = a->is_main,
			.system_bytes = a->system_mem,
			.num_segments = a->num_heaps,
		};
		uint16_t idx = hd_heap_add_region(h, &r);
		ok = idx != HD_REGION_NONE &&
		     hd_heap_fact_addr(h, idx, "top", a->top);
	}
	if (ok && main_arena)
		ok = hd_heap_add_metadata(h, main_arena, main_arena + w->lay.state_size,
					  "struct malloc_state (main_arena)", 0);
	if (ok && w->lay.mp_known && w->lay.mp_size)
		ok = hd_heap_add_metadata(h, w->lay.mp_addr,
					  w->lay.mp_addr + w->lay.mp_size,
					  "struct malloc_par (mp_)", HD_NO_REGION);
	for (size_t i = 0; i < w->num_segs && ok; i++) {
		const struct glibc_segment *s = &w->segs[i];
		struct hd_heap_segment seg = {
			.start = s->map_start,
			.end = s->end,
			.region = s->arena == HD_ARENA_NONE ? HD_NO_REGION : s->arena,
			.mmapped = s->mmapped,
		};
		// Bytes the walk could not read as chunks are left out of
		// the segment: the graph scans them as a region, so a block
		// only they point at is not called leaked.
		for (size_t g = 0; g < w->num_gaps && ok; g++) {
			const struct glibc_gap *gap = &w->gaps[g];
			if (gap->end <= seg.start || gap->start >= seg.end)
				continue;
			struct hd_heap_segment before = seg;
			before.end = gap->start;
			if (before.end > before.start)
				ok = hd_heap_add_segment(h, &before);
			seg.start = gap->end < seg.end ? gap->end : seg.end;
		}
		if (ok && seg.end > seg.start)
			ok = hd_heap_add_segment(h, &seg);
		if (!ok || s->mmapped || s->arena == HD_ARENA_NONE ||
		    w->arenas[s->arena].is_main)
			continue;
		// A non-main heap starts with its heap_info (and, for the
		// arena's first heap, its malloc_state) before the first chunk.
		int64_t id = hd_heap_find_extent(h, s->start);
		if (id < 0)
			continue;
		uint64_t first = hd_heap_extent_start(h, (size_t)id);
		if (first <= s->map_start || first >= s->end)
			continue;
		uint64_t a = w->arenas[s->arena].addr;
		bool has_state = a >= s->map_start && a < first;
		ok = hd_heap_add_metadata(h, s->map_start, first,
					  has_state ? "heap_info + struct malloc_state"
						    : "heap_info",
					  s->arena);
	}
	if (ok && main_arena)
		ok = hd_heap_fact_addr(h, HD_NO_REGION, "main_arena", main_arena);
	if (ok && w->lay.mp_known)
		ok = hd_heap_fact_addr(h, HD_NO_REGION, "mp", w->lay.mp_addr);
	if (ok && !h->info.no_allocation_yet) {
		ok = hd_heap_fact_bool(h, HD_NO_REGION, "safe_linking", w->safe_linking) &&
		     hd_heap_fact_bool(h, HD_NO_REGION, "tcache", w->num_tcaches > 0) &&
		     hd_heap_fact_uint(h, HD_NO_REGION, "tcaches", w->num_tcaches);
	}
	return ok ? NULL : &hd_error_no_memory;
}

struct hd_error *glibc_walk_heap(const struct hd_heap_source *src,
				 struct hd_heap *h)
{
	struct glibc_walk w = {.t = src->t, .di = src->di, .h = h,
			       .threads = src->threads,
			       .threads_asked = src->threads_asked};
	struct hd_error *err = NULL;
	glibc_heap_declare(h);
	glibc_layout_default(&w.lay);
	uint64_t main_arena = 0;
	bool use_di = w.di && (!src->opts || src->opts->use_debuginfo);
	if (use_di) {
		err = glibc_layout_from_debuginfo(&w, &main_arena);
		if (err) {
			// No libc debug info: fall back to the data.
			hd_error_destroy(err);
			err = NULL;
			glibc_layout_default(&w.lay);
			w.candidates = 0;
			memset(&w.ev, 0, sizeof(w.ev));
			main_arena = 0;
			// A symbol table without DWARF for malloc_state (a
			// static program: libc.a has none): the symbol says
			// where, the data which layout.
			uint64_t sym;
			struct hd_error *serr = hd_debuginfo_find_symbol(
				w.di, NULL, "main_arena", &sym, NULL);
			if (!serr && glibc_main_arena_at(&w, sym)) {
				main_arena = sym;
				w.ev.arena_by_symbol = true;
			}
			hd_error_destroy(serr);
		}
	}
	h->info.method = main_arena && !w.ev.arena_by_symbol ? "debuginfo"
							   : "heuristic";
	bool fresh = false;
	if (main_arena && !w.ev.arena_by_symbol) {
		// Before the first malloc, main_arena is as libc's data
		// initialises it: no top chunk, empty (zero) bins.
		uint64_t top = 0;
		fresh = glibc_read64(&w, main_arena + w.lay.off_top, &top) && !top;
	} else if (!main_arena) {
		err = glibc_find_main_arena(&w, &main_arena);
		if (err && glibc_find_fresh_main_arena(&w, &main_arena)) {
			hd_error_destroy(err);
			err = NULL;
			fresh = true;
		}
	}
	if (err)
		goto out;
	if (fresh) {
		// Nothing allocated yet: an empty heap, and nothing missing.
		h->info.no_allocation_yet = true;
		snprintf(h->empty_reason, sizeof(h->empty_reason),
			 "glibc's malloc was never initialised (main_arena at 0x%llx has no top chunk)",
			 (unsigned long long)main_arena);
		h->info.empty_reason = h->empty_reason;
		set_version(&w);
		struct hd_arena a = {.addr = main_arena, .is_main = true};
		if (!HD_VEC_PUSH(w.arenas, w.num_arenas, w.cap_arenas, a)) {
			err = &hd_error_no_memory;
			goto out;
		}
		err = hand_over(&w, main_arena);
		goto out;
	}
	err = glibc_collect_arenas(&w, main_arena);
	if (!err)
		err = glibc_find_mmapped(&w);
	if (!err)
		err = glibc_walk_chunks(&w);
	if (!err)
		err = glibc_walk_free_lists(&w);
	if (err)
		goto out;
	check_mmaps(&w);
	set_version(&w);
	err = hand_over(&w, main_arena);
out:
	for (size_t i = 0; i < w.num_views; i++)
		hd_view_deinit(&w.views[i]);
	free(w.views);
	free(w.segs);
	free(w.gaps);
	free(w.arenas);
	return err;
}
