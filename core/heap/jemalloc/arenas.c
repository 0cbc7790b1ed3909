// The arenas: their regions, their bases (the allocator's own metadata
// mappings) and the thread caches associated with them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/jemalloc/jemalloc_internal.h"

// Bounds over all arenas, so damaged lists cost no more than real ones.
#define MAX_TCACHES 65536
#define MAX_BASE_BLOCKS 65536

struct hd_error *je_read_arenas(struct je_walk *w)
{
	const struct je_layout *l = w->l;
	struct hd_target *t = w->src->t;
	w->arena_pos = calloc(l->arena_limit, sizeof(*w->arena_pos));
	w->arenas = calloc(l->arena_limit, sizeof(*w->arenas));
	if (!w->arena_pos || !w->arenas)
		return &hd_error_no_memory;
	for (unsigned i = 0; i < l->arena_limit; i++) {
		uint64_t a, base;
		uint32_t ind;
		if (!je_read64(t, w->g.arenas + 8ULL * i, &a))
			break;
		if (!a)
			continue;
		// locate.c checked each entry's shape.
		if (!je_read32(t, a + l->arena_ind, &ind) || ind != i ||
		    !je_read64(t, a + l->arena_base, &base)) {
			hd_heap_problem_add(w->h, a, "arenas[%u] = 0x%llx is not arena %u",
					    i, (unsigned long long)a, i);
			continue;
		}
		struct je_arena *ar = &w->arenas[w->num_arenas];
		*ar = (struct je_arena){.addr = a, .ind = i, .base = base};
		struct hd_region r = {.addr = a, .kind = "arena", .primary = i == 0};
		ar->region = hd_heap_add_region(w->h, &r);
		if (ar->region == HD_REGION_NONE)
			return &hd_error_no_memory;
		w->arena_pos[i] = (uint32_t)++w->num_arenas;
	}
	return NULL;
}

// The blocks of a base: [block, block + size) each, from base->blocks.
static struct hd_error *walk_base(struct je_walk *w, uint64_t base,
				  uint32_t region, const char *name,
				  uint64_t *mapped)
{
	const struct je_layout *l = w->l;
	struct hd_target *t = w->src->t;
	uint64_t b;
	*mapped = 0;
	size_t *n = &w->base_blocks;
	if (!je_read64(t, base + l->base_blocks, &b)) {
		hd_heap_problem_add(w->h, base, "base 0x%llx is unreadable",
				    (unsigned long long)base);
		return NULL;
	}
	for (; b; ++*n) {
		uint64_t size, next;
		if (*n == MAX_BASE_BLOCKS || !je_read64(t, b, &size) ||
		    !je_read64(t, b + l->base_block_next, &next) || !size ||
		    size > (1ULL << 40)) {
			hd_heap_problem_add(w->h, b,
					    "base 0x%llx: block 0x%llx is unreadable or damaged; the rest of its blocks are not claimed as metadata",
					    (unsigned long long)base,
					    (unsigned long long)b);
			break;
		}
		if (!hd_heap_add_metadata(w->h, b, b + size, name, region))
			return &hd_error_no_memory;
		*mapped += size;
		b = next;
	}
	return NULL;
}

struct hd_error *je_walk_bases(struct je_walk *w)
{
	uint64_t total = 0;
	for (size_t i = 0; i < w->num_arenas; i++) {
		struct je_arena *a = &w->arenas[i];
		char name[64];
		snprintf(name, sizeof(name), "jemalloc base of arena %u", a->ind);
		uint64_t mapped;
		struct hd_error *err = walk_base(w, a->base, a->region, name, &mapped);
		if (err)
			return err;
		total += mapped;
		if (!hd_heap_fact_uint(w->h, a->region, "base_bytes", mapped))
			return &hd_error_no_memory;
	}
	if (!hd_heap_fact_uint(w->h, HD_NO_REGION, "metadata_bytes", total))
		return &hd_error_no_memory;
	return NULL;
}

// One thread cache: each bin's stack of cached regions.
static void walk_tcache(struct je_walk *w, struct je_arena *a, uint64_t slow)
{
	const struct je_layout *l = w->l;
	struct hd_target *t = w->src->t;
	struct hd_heap *h = w->h;
	uint64_t tcache, dyn;
	if (!je_read64(t, slow + l->tslow_tcache, &tcache) ||
	    !je_read64(t, slow + l->tslow_dyn_alloc, &dyn)) {
		hd_heap_problem_add(h, slow,
				    "thread cache 0x%llx is unreadable: the regions it holds are shown used",
				    (unsigned long long)slow);
		return;
	}
	// The bins' stacks live in one allocation of the cache's own.
	int64_t stacks = hd_heap_find_extent(h, dyn);
	if (stacks < 0 || hd_heap_state(h, (size_t)stacks) != HD_STATE_USED) {
		hd_heap_problem_add(h, dyn,
				    "thread cache 0x%llx: its stacks 0x%llx are no allocated block; the regions it holds are shown used",
				    (unsigned long long)tcache,
				    (unsigned long long)dyn);
		return;
	}
	uint64_t lo = hd_heap_extent_start(h, (size_t)stacks);
	uint64_t hi = lo + hd_heap_usable(h, (size_t)stacks);
	hd_heap_set(h, (size_t)stacks, HD_STATE_INTERNAL, JE_LIST_NONE);
	a->tcaches++;
	for (unsigned i = 0; i < l->tcache_nbins_max; i++) {
		uint8_t bin[32];
		uint64_t at = tcache + l->tcache_bins + (uint64_t)i * l->cache_bin_size;
		struct hd_error *err = hd_target_read(t, at, bin, l->cache_bin_size);
		if (err) {
			hd_error_destroy(err);
			hd_heap_problem_add(h, at,
					    "thread cache 0x%llx: bin %u is unreadable; the regions it holds are shown used",
					    (unsigned long long)tcache, i);
			return;
		}
		uint64_t head;
		uint16_t full, empty;
		memcpy(&head, bin, 8);
		memcpy(&full, bin + l->cache_bin_full, 2);
		memcpy(&empty, bin + l->cache_bin_empty, 2);
		if (!head) // bins past the cache's last are never set up
			break;
		unsigned n = (uint16_t)(empty - (uint16_t)head) / 8;
		unsigned cap = (uint16_t)(empty - full) / 8;
		if (!n)
			continue;
		if (n > cap || head < lo || head + 8ULL * n > hi) {
			hd_heap_problem_add(h, at,
					    "thread cache 0x%llx: bin %u's stack 0x%llx (%u of %u cached) lies outside its stacks 0x%llx-0x%llx; the regions it holds are shown used",
					    (unsigned long long)tcache, i,
					    (unsigned long long)head, n, cap,
					    (unsigned long long)lo,
					    (unsigned long long)hi);
			continue;
		}
		uint64_t size = je_index2size(l, i);
		for (unsigned k = 0; k < n; k++) {
			uint64_t p;
			int64_t id = -1;
			if (je_read64(t, head + 8ULL * k, &p))
				id = hd_heap_find_exact(h, p);
			if (id < 0 || hd_heap_state(h, (size_t)id) != HD_STATE_USED ||
			    hd_heap_usable(h, (size_t)id) != size) {
				hd_heap_problem_add(h, head + 8ULL * k,
						    "thread cache 0x%llx: bin %u (%llu bytes) holds 0x%llx, which is not an allocated region of that size",
						    (unsigned long long)tcache, i,
						    (unsigned long long)size,
						    (unsigned long long)p);
				continue;
			}
			hd_heap_set(h, (size_t)id, HD_STATE_FREE, JE_LIST_TCACHE);
			a->tcache_blocks++;
			a->tcache_bytes += size;
		}
	}
}

// The thread caches of each arena: its tcache_ql, a ring of tcache_slow_t
// (kept when jemalloc is built with statistics, as Debian's is).
struct hd_error *je_walk_tcaches(struct je_walk *w)
{
	const struct je_layout *l = w->l;
	struct hd_target *t = w->src->t;
	for (size_t i = 0; i < w->num_arenas; i++) {
		struct je_arena *a = &w->arenas[i];
		uint64_t first, p;
		if (!je_read64(t, a->addr + l->arena_tcache_ql, &first)) {
			hd_heap_problem_add(w->h, a->addr,
					    "arena %u: its list of thread caches is unreadable; the regions they hold are shown used",
					    a->ind);
			continue;
		}
		p = first;
		for (; p; w->tcaches++) {
			uint64_t arena;
			if (w->tcaches == MAX_TCACHES || p % 8 ||
			    !je_read64(t, p + l->tslow_arena, &arena) ||
			    arena != a->addr) {
				hd_heap_problem_add(w->h, p,
						    "arena %u: thread cache 0x%llx is damaged or the list does not close; the regions of the rest are shown used",
						    a->ind, (unsigned long long)p);
				break;
			}
			walk_tcache(w, a, p);
			if (!je_read64(t, p, &p) || p == first)
				break;
		}
	}
	return NULL;
}
