// hd_heap_walk: find the arenas (by symbol or by shape), the heaps and
// mmapped chunks, walk the chunks, then the free lists.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/vec.h"

bool glibc_read64(struct glibc_walk *w, uint64_t addr, uint64_t *ret)
{
	// Views are sorted by address (segments are walked in order).
	size_t lo = 0, hi = w->num_views;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->views[mid].addr + w->views[mid].len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->num_views && w->views[lo].addr <= addr &&
	    addr + 8 <= w->views[lo].addr + w->views[lo].len) {
		memcpy(ret, w->views[lo].data + (addr - w->views[lo].addr), 8);
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
	h->info.n_mmaps = n_mmaps;
	h->info.mmap_threshold = threshold;
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
	snprintf(w->h->version, sizeof(w->h->version), "%s", w->version);
	snprintf(w->h->version_source, sizeof(w->h->version_source), "%s",
		 w->version_source);
	w->h->info.version = w->h->version;
	w->h->info.version_source = w->h->version_source;
}

struct hd_error *hd_heap_walk(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap_options *opts,
			      struct hd_heap **ret)
{
	struct glibc_walk w = {.t = t, .di = di};
	struct hd_error *err = hd_heap_alloc(&w.h);
	if (err)
		return err;
	glibc_layout_default(&w.lay);
	uint64_t main_arena = 0;
	bool use_di = di && (!opts || opts->use_debuginfo);
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
				di, NULL, "main_arena", &sym, NULL);
			if (!serr && glibc_main_arena_at(&w, sym)) {
				main_arena = sym;
				w.ev.arena_by_symbol = true;
			}
			hd_error_destroy(serr);
		}
	}
	w.h->info.method = main_arena && !w.ev.arena_by_symbol ? "debuginfo"
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
	// Another allocator: when glibc's heap is missing or was never
	// initialised, it is the process's malloc; beside a glibc heap in use
	// (a library loaded privately, a prefixed static build), its blocks
	// are what this walk cannot see.
	struct hd_foreign_alloc fa;
	if (hd_heap_find_foreign(t, di, &fa)) {
		if (err || fresh) {
			hd_error_destroy(err);
			err = hd_error_create(HD_ERROR_UNSUPPORTED,
					      "%s: this process allocates with %s (%s), which heapdom does not walk yet%s",
					      hd_target_name(t), fa.name, fa.evidence,
					      fresh ? "; glibc's malloc holds nothing (never initialised)" : "");
			goto out;
		}
		snprintf(w.h->other_allocator, sizeof(w.h->other_allocator),
			 "%s (%s)", fa.name, fa.evidence);
		w.h->info.other_allocator = w.h->other_allocator;
	}
	if (err)
		goto out;
	if (fresh) {
		// Nothing allocated yet: an empty heap, and nothing missing.
		w.h->info.no_allocation_yet = true;
		set_version(&w);
		w.h->info.main_arena = main_arena;
		w.h->info.main_arena_size = w.lay.state_size;
		struct hd_arena a = {.addr = main_arena, .is_main = true};
		if (!HD_VEC_PUSH(w.h->arenas, w.h->num_arenas, w.h->cap_arenas, a)) {
			err = &hd_error_no_memory;
			goto out;
		}
		*ret = w.h;
		w.h = NULL;
		goto out;
	}
	w.h->info.main_arena = main_arena;
	w.h->info.main_arena_size = w.lay.state_size;
	w.h->info.mp_size = w.lay.mp_size;
	w.h->info.mp = w.lay.mp_known ? w.lay.mp_addr : 0;
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
	w.h->segments = calloc(w.num_segs ? w.num_segs : 1, sizeof(*w.h->segments));
	if (!w.h->segments) {
		err = &hd_error_no_memory;
		goto out;
	}
	for (size_t i = 0; i < w.num_segs; i++) {
		const struct glibc_segment *s = &w.segs[i];
		w.h->segments[i] = (struct hd_heap_segment){
			.start = s->map_start,
			.end = s->end,
			.arena = s->arena == HD_ARENA_NONE ? HD_NO_ARENA : s->arena,
			.mmapped = s->mmapped,
		};
	}
	w.h->num_segments = w.num_segs;
	*ret = w.h;
	w.h = NULL;
out:
	for (size_t i = 0; i < w.num_views; i++)
		hd_view_deinit(&w.views[i]);
	free(w.views);
	free(w.segs);
	hd_heap_destroy(w.h);
	return err;
}
