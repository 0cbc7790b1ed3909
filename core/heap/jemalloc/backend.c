// jemalloc 5.x as a backend of the allocator seam (backend.h): detection
// (a loaded libjemalloc, or a program linking a copy of its own), the
// version, and the walk's order: arenas, extents from the emap, thread
// caches, bases; then the facts reports print.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/elf_symbols.h"
#include "heap/jemalloc/jemalloc_internal.h"

static const struct hd_free_list lists[JE_LIST_COUNT] = {
	[JE_LIST_NONE] = {"none", NULL, false},
	[JE_LIST_SLAB] = {"slab", "free: slab regions", false},
	[JE_LIST_TCACHE] = {"tcache", "free: thread caches", false},
	[JE_LIST_DIRTY] = {"dirty", "free: dirty extents", false},
	[JE_LIST_MUZZY] = {"muzzy", "free: muzzy extents", false},
	// Address space kept for later extents, its pages given back.
	[JE_LIST_RETAINED] = {"retained", "free: retained extents", true},
};

static const struct hd_heap_shape shapes[] = {
	[JE_SHAPE_PLAIN] = {.head = 0, .tail = 0},
};

extern const struct hd_heap_backend hd_heap_backend_jemalloc;

// Symbols only jemalloc defines, for a copy linked into the executable.
static const char *const static_symbols[] = {
	"je_arena_emap_global", "je_malloc", "je_mallocx", "mallocx",
	"je_malloc_stats_print", "malloc_stats_print",
};
#define N_STATIC (sizeof(static_symbols) / sizeof(static_symbols[0]))

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

// The module holding jemalloc: a loaded libjemalloc.so*, else the
// executable when it defines jemalloc's symbols.
static const struct hd_module *find_module(const struct hd_heap_source *src,
					   char *evidence, size_t len)
{
	size_t n = hd_target_num_modules(src->t);
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(src->t, i);
		if (strncmp(base_name(m->name), "libjemalloc.so", 14) == 0) {
			snprintf(evidence, len, "%s", base_name(m->name));
			return m;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(src->t, i);
		if (!m->is_exe)
			continue;
		const char *files[2] = {m->file, hd_debuginfo_debug_file(src->di, m)};
		bool found[N_STATIC];
		for (size_t f = 0; f < 2; f++) {
			if (!files[f] ||
			    !hd_elf_defines_any(files[f], static_symbols, N_STATIC, found))
				continue;
			for (size_t k = 0; k < N_STATIC; k++)
				if (found[k]) {
					snprintf(evidence, len,
						 "statically linked: symbol %s in %s",
						 static_symbols[k], files[f]);
					return m;
				}
		}
	}
	return NULL;
}

static bool detect(const struct hd_heap_source *src, char *evidence,
		   size_t len)
{
	return find_module(src, evidence, len) != NULL;
}

static const struct je_layout *const layouts[] = {&je_layout_5_3_0};

static bool add_facts(struct je_walk *w)
{
	struct hd_heap *h = w->h;
	bool ok = hd_heap_fact_addr(h, HD_NO_REGION, "emap", w->g.emap) &&
		  hd_heap_fact_addr(h, HD_NO_REGION, "arenas_array", w->g.arenas) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "arenas", w->num_arenas) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "extents", w->extents) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "slabs", w->slabs) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "large_extents", w->large) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "size_classes", w->l->nsizes) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "small_classes", w->l->nbins) &&
		  hd_heap_fact_uint(h, HD_NO_REGION, "page_size", 1ULL << w->l->lg_page);
	uint64_t tb = 0, tn = 0, dirty = 0, muzzy = 0, active = 0;
	uint64_t all_curregs = 0, all_used = 0;
	for (size_t i = 0; i < w->num_arenas && ok; i++) {
		struct je_arena *a = &w->arenas[i];
		tb += a->tcache_bytes;
		tn += a->tcache_blocks;
		dirty += a->dirty;
		muzzy += a->muzzy;
		// jemalloc's "active": the pages of its slabs and large extents
		// (a large extent's with its cache-oblivious pad page).
		uint64_t act = a->slab_bytes + a->large_extent_bytes;
		active += act;
		uint32_t r = a->region;
		// The bins' own count of allocated regions (thread-cached
		// ones included), read beside the bitmaps' count.
		uint64_t curregs = 0;
		for (unsigned b = 0; b < w->l->nbins; b++) {
			uint64_t v;
			if (je_read64(w->src->t, a->addr + w->l->arena_bins +
					    (uint64_t)b * w->l->bin_size + w->l->bin_curregs, &v))
				curregs += v;
		}
		all_curregs += curregs;
		all_used += a->used_regions;
		ok = hd_heap_fact_uint(h, r, "index", a->ind) &&
		     hd_heap_fact_uint(h, r, "slabs", a->slabs) &&
		     hd_heap_fact_uint(h, r, "slab_bytes", a->slab_bytes) &&
		     hd_heap_fact_uint(h, r, "slab_regions_allocated", a->used_regions) &&
		     hd_heap_fact_uint(h, r, "bins_curregs", curregs) &&
		     hd_heap_fact_uint(h, r, "large_extents", a->large) &&
		     hd_heap_fact_uint(h, r, "large_bytes", a->large_bytes) &&
		     hd_heap_fact_uint(h, r, "active_bytes", act) &&
		     hd_heap_fact_uint(h, r, "dirty_bytes", a->dirty) &&
		     hd_heap_fact_uint(h, r, "muzzy_bytes", a->muzzy) &&
		     hd_heap_fact_uint(h, r, "retained_bytes", a->retained) &&
		     hd_heap_fact_uint(h, r, "tcaches", a->tcaches) &&
		     hd_heap_fact_uint(h, r, "tcache_blocks", a->tcache_blocks) &&
		     hd_heap_fact_uint(h, r, "tcache_bytes", a->tcache_bytes);
		// Its pages: active ones (large extents with their pad page, so
		// the held-but-unused figure of `stats` counts the pads) and
		// the dirty and muzzy ones it keeps; retained ones are given back.
		h->regions[r].system_bytes = act + a->dirty + a->muzzy;
	}
	// Without statistics (--disable-stats) jemalloc neither counts its
	// bins' regions nor lists its thread caches in the arenas: the
	// regions the caches hold cannot be found, so the verdicts are
	// partial, and say so.
	if (all_used && !all_curregs)
		hd_heap_problem_add(h, w->g.arenas,
				    "jemalloc keeps no statistics (its bins count no allocated region): its thread caches are not listed, and the regions they hold are shown used");
	for (size_t i = 0; i < h->num_segments; i++)
		if (h->segments[i].region < h->num_regions)
			h->regions[h->segments[i].region].num_segments++;
	// jemalloc's "allocated" (stats.allocated, redis's allocator_allocated):
	// every region handed out of a bin or large extent, thread-cached and
	// internal ones included.
	uint64_t allocated = 0;
	for (size_t i = 0; i < h->num_blocks; i++)
		if (hd_heap_state(h, i) != HD_STATE_FREE ||
		    hd_heap_block_list(h, i) == JE_LIST_TCACHE)
			allocated += hd_heap_usable(h, i);
	// Fragmentation in jemalloc's sense: active pages not allocated (free
	// slab regions, large extents' pad pages); redis shows active /
	// allocated as allocator_frag_ratio.
	return ok && hd_heap_fact_uint(h, HD_NO_REGION, "allocated_bytes", allocated) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "fragmentation_bytes",
				 active > allocated ? active - allocated : 0) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "tcache_blocks", tn) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "tcache_bytes", tb) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "active_bytes", active) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "dirty_bytes", dirty) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "muzzy_bytes", muzzy);
}

static struct hd_error *walk(const struct hd_heap_source *src,
			     struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_jemalloc, 3, shapes, 1, lists,
			JE_LIST_COUNT);
	char evidence[256] = "";
	const struct hd_module *m = find_module(src, evidence, sizeof(evidence));
	if (!m)
		return hd_error_create(HD_ERROR_NOT_FOUND, "%s: no jemalloc found",
				       hd_target_name(src->t));
	char version[96];
	if (!m->file || !je_find_version(m->file, version, sizeof(version)))
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%s: this process allocates with jemalloc (%s), but its version string was not found in %s; heapdom walks jemalloc 5.3.0",
				       hd_target_name(src->t), evidence,
				       m->file ? m->file : "(no file on this machine)");
	const struct je_layout *l = NULL;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		size_t n = strlen(layouts[i]->version);
		if (strncmp(version, layouts[i]->version, n) == 0 && version[n] == '-')
			l = layouts[i];
	}
	if (!l)
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%s: this process allocates with jemalloc %s (%s), whose layout heapdom does not know (it walks 5.3.0)",
				       hd_target_name(src->t), version, evidence);
	struct je_walk w = {.src = src, .h = h, .l = l};
	struct hd_error *err = je_locate(src, m, l, &w.g);
	if (err && je_never_initialised(src->t, m)) {
		hd_error_destroy(err);
		h->info.no_allocation_yet = true;
		snprintf(h->empty_reason, sizeof(h->empty_reason),
			 "jemalloc %s (%s) is not initialised yet: nothing was allocated",
			 l->version, evidence);
		h->info.empty_reason = h->empty_reason;
		snprintf(h->version, sizeof(h->version), "%s", l->version);
		h->info.version = h->version;
		h->info.method = "code";
		return NULL;
	}
	if (!err)
		err = je_read_arenas(&w);
	if (!err)
		err = je_walk_extents(&w);
	if (!err)
		err = je_walk_tcaches(&w);
	if (!err)
		err = je_walk_bases(&w);
	if (!err && (!add_facts(&w) ||
		     !hd_heap_fact_string(h, HD_NO_REGION, "version_string", version)))
		err = &hd_error_no_memory;
	if (!err) {
		h->info.method = strncmp(w.g.method, "symbols", 7) == 0 ? "symbols" : "code";
		snprintf(h->version, sizeof(h->version), "%s", l->version);
		h->info.version = h->version;
		snprintf(h->version_source, sizeof(h->version_source),
			 "version string %.56s in %.60s; %.118s", version, m->file,
			 w.g.method);
		h->info.version_source = h->version_source;
	}
	free(w.arenas);
	free(w.arena_pos);
	return err;
}

// jemalloc rounds a request up to its size class: the block's class was
// chosen by a request above the class below.
static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	uint64_t u = hd_heap_usable(h, id), prev = 0;
	for (unsigned i = 0; i < je_layout_5_3_0.nsizes; i++) {
		uint64_t s = je_index2size(&je_layout_5_3_0, i);
		if (s >= u)
			return s == u ? prev + 1 : 0;
		prev = s;
	}
	return 0;
}

static const char *block_label(const struct hd_heap *h, size_t id)
{
	if (hd_heap_state(h, id) == HD_STATE_INTERNAL)
		return "thread cache stacks";
	switch (hd_heap_block_list(h, id)) {
	case JE_LIST_SLAB: return "free slab region";
	case JE_LIST_TCACHE: return "region in a thread cache";
	case JE_LIST_DIRTY: return "dirty extent";
	case JE_LIST_MUZZY: return "muzzy extent";
	case JE_LIST_RETAINED: return "retained extent";
	}
	return NULL;
}

const struct hd_heap_backend hd_heap_backend_jemalloc = {
	.name = "jemalloc",
	.detect = detect,
	.walk = walk,
	.min_request = min_request,
	// Classes are a quarter of their group apart: a request is rounded
	// up by less than a quarter of its size; the quantum bounds the small
	// classes typing cares about.
	.request_slack = 16,
	.block_label = block_label,
	.labels = {
		.allocator = "jemalloc",
		.metadata = "jemalloc bases (arenas, extent descriptors, rtree)",
		.internal = "jemalloc internals",
		.free = "free jemalloc regions and extents",
		.free_block = "free jemalloc region",
	},
};
