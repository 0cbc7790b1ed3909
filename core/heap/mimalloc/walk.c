// mimalloc 2.x as a backend of the allocator seam (backend.h): every
// segment (find.c) → every span of its slices → every page → its blocks
// (pages.c).
//
// A page's blocks are the `capacity` blocks of `xblock_size` bytes from
// the page start; a block is free when it is on the page's `free`,
// `local_free` or `thread_free` list or on its heap's
// `thread_delayed_free` list, used otherwise. The page's room past
// `capacity` (never handed out: mimalloc extends a page's free list into
// it later, up to `reserved` blocks) is one reserve block of the list
// "unextended", like glibc's top chunk: not a free block, not used.
// Regions are heaps (struct mi_heap_s: a thread's default heap, heaps made
// with mi_heap_new), plus one region "abandoned" for the pages of exited
// threads, whose segments wait for another thread to reclaim them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/mimalloc/mimalloc_internal.h"
#include "util/sort.h"

// Bounds for corrupt data: a delayed-free list longer than this is cut.
#define MAX_DELAYED (1u << 24)


static const struct hd_heap_shape shapes[] = {{.head = 0, .tail = 0}};

extern const struct hd_heap_backend hd_heap_backend_mimalloc;

// mimalloc is loaded and holds memory: its main heap was initialised and
// some segment has a page in use. A library loaded but never used (a
// plugin's, dlopen'ed privately) leaves the process to glibc's malloc.
static bool detect(const struct hd_heap_source *src, char *evidence,
		   size_t len)
{
	struct mi_walk w = {.t = src->t};
	w.lib = hd_mi_find_lib(src->t, evidence, len);
	if (!w.lib)
		return false;
	// A version whose layout heapdom does not know, or a main heap it
	// cannot find: mimalloc's walk says so, rather than glibc's showing
	// an empty heap.
	hd_mi_version(&w);
	size_t n = strlen(evidence);
	if (w.version[0] && strcmp(w.version, MI_KNOWN_VERSION) != 0) {
		snprintf(evidence + n, len - n, " (mimalloc %s)", w.version);
		return true;
	}
	struct hd_error *err = hd_mi_find_main_heap(&w);
	if (err) {
		hd_error_destroy(err);
		return true;
	}
	if (!w.main_cookie || !hd_mi_in_use(&w))
		return false;
	snprintf(evidence + n, len - n, ", its segments hold pages in use");
	return true;
}


// ------------------------------------------------------------ heaps

static bool collect_heap(struct mi_walk *w, const struct mi_segment_info *s,
			 const struct mi_page *p, void *arg)
{
	(void)s;
	(void)arg;
	if (p->heap && !hd_mi_add_heap(w, p->heap, false))
		return false;
	return true;
}

static struct mi_heap_info *heap_of(struct mi_walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->num_heaps; i++)
		if (w->heaps[i].addr == addr)
			return &w->heaps[i];
	return NULL;
}

// The region of a page's blocks: its heap's, or "abandoned".
uint16_t hd_mi_page_region(struct mi_walk *w, const struct mi_segment_info *s,
			    uint64_t heap)
{
	if (heap) {
		struct mi_heap_info *hi = heap_of(w, heap);
		return hi ? hi->region : HD_REGION_NONE;
	}
	if (w->abandoned_region == HD_REGION_NONE) {
		struct hd_region r = {.addr = s->addr, .kind = "abandoned"};
		w->abandoned_region = hd_heap_add_region(w->h, &r);
	}
	return w->abandoned_region;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

// Every heap's thread_delayed_free list: blocks other threads freed into
// a full page, waiting for the owner to take them.
static struct hd_error *collect_delayed(struct mi_walk *w)
{
	size_t cap = 0;
	for (size_t i = 0; i < w->num_heaps; i++) {
		uint64_t b = w->heaps[i].delayed;
		// Brent's cycle check: a list that comes back to the block it
		// was at 2^n steps ago loops.
		uint64_t mark = 0;
		for (size_t k = 0; b; k++) {
			if (b == mark) {
				hd_heap_problem_add(w->h, b,
						    "mimalloc heap 0x%llx: its thread_delayed_free list loops at 0x%llx; the rest is cut",
						    (unsigned long long)w->heaps[i].addr,
						    (unsigned long long)b);
				break;
			}
			if (!(k & (k - 1)))
				mark = b;
			if (w->num_delayed >= MAX_DELAYED) {
				hd_heap_problem_add(w->h, w->heaps[i].addr,
						    "mimalloc heap 0x%llx: more than %u blocks on thread_delayed_free lists; the rest are taken for used",
						    (unsigned long long)w->heaps[i].addr,
						    MAX_DELAYED);
				break;
			}
			if (w->num_delayed == cap) {
				cap = cap ? 2 * cap : 64;
				uint64_t *n = realloc(w->delayed, cap * sizeof(*n));
				if (!n)
					return &hd_error_no_memory;
				w->delayed = n;
			}
			w->delayed[w->num_delayed++] = b;
			if (!hd_mi_read64(w->t, b, &b)) {
				hd_heap_problem_add(w->h, b,
						    "mimalloc heap 0x%llx: thread_delayed_free entry 0x%llx is unreadable; the rest of the list is taken for used",
						    (unsigned long long)w->heaps[i].addr,
						    (unsigned long long)b);
				break;
			}
		}
	}
	hd_qsort(w->delayed, w->num_delayed, sizeof(*w->delayed), u64_cmp);
	// A block on two heaps' lists (or twice on a looping one) counts once.
	size_t n = 0;
	for (size_t i = 0; i < w->num_delayed; i++)
		if (!n || w->delayed[n - 1] != w->delayed[i])
			w->delayed[n++] = w->delayed[i];
	w->num_delayed = n;
	return NULL;
}


// The region a segment belongs to: the heap of its first page.
static bool first_heap(struct mi_walk *w, const struct mi_segment_info *s,
		       const struct mi_page *p, void *arg)
{
	(void)w;
	(void)s;
	*(uint64_t *)arg = p->heap;
	return false;
}

static struct hd_error *add_regions(struct mi_walk *w)
{
	// The main heap first: it is the primary region.
	for (size_t i = 0; i < w->num_heaps; i++) {
		if (w->heaps[i].main && i) {
			struct mi_heap_info t = w->heaps[0];
			w->heaps[0] = w->heaps[i];
			w->heaps[i] = t;
		}
	}
	for (size_t i = 0; i < w->num_heaps; i++) {
		struct mi_heap_info *hi = &w->heaps[i];
		struct hd_region r = {.addr = hi->addr, .kind = "heap",
				      .primary = hi->main};
		hi->region = hd_heap_add_region(w->h, &r);
		if (hi->region == HD_REGION_NONE ||
		    !hd_heap_fact_addr(w->h, hi->region, "thread", hi->thread_id) ||
		    !hd_heap_fact_bool(w->h, hi->region, "thread_default_heap", hi->tls) ||
		    !hd_heap_add_metadata(w->h, hi->addr, hi->addr + HEAP_SIZE,
					  "struct mi_heap_s", hi->region))
			return &hd_error_no_memory;
		if (hi->bad)
			hd_heap_problem_add(w->h, hi->addr,
					    "mimalloc heap 0x%llx is unreadable; its thread_delayed_free list is not seen",
					    (unsigned long long)hi->addr);
	}
	return NULL;
}

static struct hd_error *walk_segments(struct mi_walk *w, struct mi_counts *c)
{
	struct mi_block_walk bw = {.c = c, .state = malloc(1 << 16)};
	if (!bw.state)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	size_t abandoned = 0, huge = 0;
	size_t idle = 0;
	for (size_t i = 0; i < w->num_segs && !err; i++) {
		struct mi_segment_info *s = &w->segs[i];
		uint64_t heap = 0;
		// No page in use: a segment freed into a cache (its header
		// stays), whose slices say nothing any more.
		if (s->header && !s->used) {
			idle++;
			continue;
		}
		uint16_t region = HD_REGION_NONE;
		if (s->header) {
			hd_mi_for_each_page(w, s, false, first_heap, &heap, NULL);
			region = hd_mi_page_region(w, s, heap);
			abandoned += s->thread_id == 0;
			huge += s->kind == 1;
			if (region != HD_REGION_NONE) {
				w->h->regions[region].num_segments++;
				w->h->regions[region].system_bytes += s->size;
			}
		}
		struct hd_heap_segment seg = {.start = s->addr,
					      .end = s->addr + s->size,
					      .region = region == HD_REGION_NONE ?
								HD_NO_REGION : region};
		if (!hd_heap_add_segment(w->h, &seg) ||
		    (s->header &&
		     !hd_heap_add_metadata(w->h, s->addr,
					   s->addr + (s->info_slices << MI_SLICE_SHIFT),
					   "struct mi_segment_s", seg.region)))
			err = &hd_error_no_memory;
		else if (!hd_mi_for_each_page(w, s, true, hd_mi_walk_page, &bw, c))
			err = &hd_error_no_memory;
	}
	free(bw.state);
	if (!err && c->delayed_matched < w->num_delayed)
		hd_heap_problem_add(w->h, w->num_delayed ? w->delayed[0] : 0,
				    "%zu blocks on mimalloc thread_delayed_free lists lie in no page of a segment found",
				    w->num_delayed - c->delayed_matched);
	if (!err &&
	    (!hd_heap_fact_uint(w->h, HD_NO_REGION, "segments", w->num_segs) ||
	     !hd_heap_fact_uint(w->h, HD_NO_REGION, "abandoned_segments", abandoned) ||
	     !hd_heap_fact_uint(w->h, HD_NO_REGION, "huge_segments", huge) ||
	     !hd_heap_fact_uint(w->h, HD_NO_REGION, "idle_segments", idle)))
		err = &hd_error_no_memory;
	return err;
}

static void walk_deinit(struct mi_walk *w)
{
	for (size_t i = 0; i < w->num_segs; i++)
		free(w->segs[i].header);
	free(w->segs);
	free(w->heaps);
	free(w->delayed);
}

static struct hd_error *walk(const struct hd_heap_source *src,
			     struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_mimalloc, 3, shapes, 1, hd_mi_lists,
			MI_NUM_LISTS);
	h->info.method = "heuristic";
	struct mi_walk w = {.t = src->t, .h = h,
			    .abandoned_region = HD_REGION_NONE};
	char evidence[256];
	w.lib = hd_mi_find_lib(src->t, evidence, sizeof(evidence));
	if (!w.lib)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: mimalloc is not loaded",
				       hd_target_name(src->t));
	hd_mi_version(&w);
	if (w.version[0]) {
		snprintf(h->version, sizeof(h->version), "%s", w.version);
		h->info.version = h->version;
	}
	if (w.version[0] && strcmp(w.version, MI_KNOWN_VERSION) != 0)
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%s: this process allocates with mimalloc %s (%s), whose layout heapdom does not know: it reads mimalloc %s's",
				       hd_target_name(src->t), w.version, evidence,
				       MI_KNOWN_VERSION);
	struct hd_error *err = hd_mi_find_main_heap(&w);
	if (err)
		return err;
	if (!w.main_cookie) {
		// mi_heap_main_init sets the cookie at the first allocation.
		h->info.no_allocation_yet = true;
		snprintf(h->empty_reason, sizeof(h->empty_reason),
			 "mimalloc's main heap (0x%llx) has no cookie yet: nothing was allocated",
			 (unsigned long long)w.main_heap);
		h->info.empty_reason = h->empty_reason;
		return NULL;
	}
	snprintf(h->version_source, sizeof(h->version_source),
		 "%.150s; _mi_heap_main at 0x%llx (.data); segments by cookie",
		 w.version_how, (unsigned long long)w.main_heap);
	h->info.version_source = h->version_source;
	if (!hd_mi_add_heap(&w, w.main_heap, false)) {
		err = &hd_error_no_memory;
		goto out;
	}
	hd_mi_find_tls_heaps(&w);
	err = hd_mi_find_segments(&w);
	for (size_t i = 0; i < w.num_segs && !err; i++)
		if (w.segs[i].used &&
		    !hd_mi_for_each_page(&w, &w.segs[i], false, collect_heap, NULL, NULL))
			err = &hd_error_no_memory;
	if (!err)
		err = add_regions(&w);
	if (!err)
		err = collect_delayed(&w);
	struct mi_counts c = {0};
	if (!err)
		err = walk_segments(&w, &c);
	if (!err &&
	    (!hd_heap_fact_string(h, HD_NO_REGION, "library",
				  strrchr(w.lib->name, '/') ? strrchr(w.lib->name, '/') + 1
							    : w.lib->name) ||
	     !hd_heap_fact_addr(h, HD_NO_REGION, "main_heap", w.main_heap) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "heaps", w.num_heaps) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "pages", c.pages) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "free_spans", c.free_spans) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "free_span_bytes", c.free_span_bytes) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "unextended_bytes", c.unextended_bytes) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "thread_free_blocks",
				c.lists[MI_LIST_THREAD_FREE]) ||
	     !hd_heap_fact_uint(h, HD_NO_REGION, "delayed_free_blocks",
				c.lists[MI_LIST_DELAYED])))
		err = &hd_error_no_memory;
out:
	walk_deinit(&w);
	return err;
}

static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	return hd_mi_min_request(hd_heap_extent(h, id));
}

static const char *block_label(const struct hd_heap *h, size_t id)
{
	switch (hd_heap_block_list(h, id)) {
	case MI_LIST_UNEXTENDED:
		return "unextended page area";
	default:
		return "free mimalloc block";
	}
}

const struct hd_heap_backend hd_heap_backend_mimalloc = {
	.name = "mimalloc",
	.detect = detect,
	.walk = walk,
	.min_request = min_request,
	// Requests of up to 64 bytes are rounded up to 16 bytes (8 for the
	// smallest); above, to the next of four bins per power of two, which
	// leaves less than one more object.
	.request_slack = 16,
	.block_label = block_label,
	.labels = {
		.allocator = "mimalloc",
		.metadata = "segment headers and heaps",
		.internal = "mimalloc internals",
		.free = "free mimalloc blocks",
		.free_block = "free mimalloc block",
	},
};
