// mallocng's heap: every meta area from the context's list, every meta in
// use (one per group), every slot of every group. A slot is a block: free
// when its bit is set in the group's avail_mask ("avail") or freed_mask
// ("freed", or "inactive" past the group's active_idx: never handed out),
// used otherwise, with the exact size its in-band header records.
//
// A group of small slots may live inside a slot of a larger class (the
// slot's header says so, reserved code 6): that slot is the allocator's,
// not a block, and the nested group's slots are the blocks there. Groups
// of their own mapping (large allocations, and single-slot groups of a
// class) are blocks in a mapping of their own; groups the dynamic loader
// donated live in an ELF's data. Meta areas, the context and each group's
// header are metadata: the graph never scans them as roots.
//
// This file drives the walk (areas.c reads the meta areas and groups,
// slots.c adds the blocks) and describes what it found: a region per size
// class, a segment per group with memory of its own, metadata, facts.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/musl/musl_internal.h"


static uint16_t class_region(struct musl_walker *w, unsigned sc)
{
	if (w->class_region[sc] != HD_REGION_NONE)
		return w->class_region[sc];
	struct hd_region r = {
		.addr = w->ctx->addr + MUSL_CTX_ACTIVE + 8ull * sc,
		.kind = "size class",
	};
	uint16_t id = hd_heap_add_region(w->h, &r);
	if (id != HD_REGION_NONE &&
	    (!hd_heap_fact_uint(w->h, id, "class", sc) ||
	     !hd_heap_fact_uint(w->h, id, "slot_size",
				(uint64_t)MUSL_UNIT * musl_size_classes[sc]) ||
	     !hd_heap_fact_uint(w->h, id, "usage_by_class",
				musl_u64(w->ctx->raw + MUSL_CTX_USAGE + 8 * sc))))
		return HD_REGION_NONE;
	return w->class_region[sc] = id;
}

// Regions (one per size class, in class order), segments (each group not
// nested in another), metadata (each group's header).
static bool describe_groups(struct musl_walker *w)
{
	struct hd_heap *h = w->h;
	bool any[MUSL_CLASSES] = {0};
	for (size_t i = 0; i < w->ng; i++)
		if (!w->g[i].skip && !(w->g[i].maplen && w->g[i].cnt == 1))
			any[w->g[i].sc] = true;
	for (unsigned sc = 0; sc < MUSL_CLASSES; sc++)
		if (any[sc] && class_region(w, sc) == HD_REGION_NONE)
			return false;
	uint64_t slots[MUSL_CLASSES] = {0};
	for (size_t i = 0; i < w->ng; i++) {
		struct musl_group *g = &w->g[i];
		if (g->skip)
			continue;
		bool own = g->maplen && g->cnt == 1;
		g->region = own ? HD_REGION_NONE : w->class_region[g->sc];
		if (g->sc < MUSL_CLASSES && g->freeable)
			slots[g->sc] += g->cnt;
		w->mapped += own;
		w->donated += !g->freeable;
		if (!hd_heap_add_metadata(h, g->mem, g->mem + MUSL_UNIT - MUSL_IB,
					  "group header",
					  own ? HD_NO_REGION : g->region))
			return false;
		if (g->parent >= 0)
			continue;
		struct hd_heap_segment s = {.start = g->mem, .end = g->end,
					    .region = own ? HD_NO_REGION : g->region,
					    .mmapped = own};
		if (!hd_heap_add_segment(h, &s))
			return false;
		if (!own) {
			h->regions[g->region].num_segments++;
			h->regions[g->region].system_bytes += g->end - g->mem;
		}
	}
	// The context counts the slots of each class's groups (donated ones
	// aside): a difference means groups this walk did not see.
	for (unsigned sc = 0; sc < MUSL_CLASSES; sc++) {
		uint64_t want = musl_u64(w->ctx->raw + MUSL_CTX_USAGE + 8 * sc);
		if (want != slots[sc])
			hd_heap_problem_add(h, w->ctx->addr + MUSL_CTX_USAGE + 8 * sc,
					    "size class %u: the context counts %llu slots, the groups found hold %llu; some groups are missing or damaged",
					    sc, (unsigned long long)want,
					    (unsigned long long)slots[sc]);
	}
	return true;
}

static bool facts(struct musl_walker *w)
{
	struct hd_heap *h = w->h;
	const uint8_t *raw = w->ctx->raw;
	return hd_heap_fact_addr(h, HD_NO_REGION, "context", w->ctx->addr) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "meta_areas", w->areas) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "groups", w->ng) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "nested_groups", w->nested) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "mmapped_groups", w->mapped) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "donated_groups", w->donated) &&
	       hd_heap_fact_uint(h, HD_NO_REGION, "mmap_counter",
				 musl_u32(raw + MUSL_CTX_MMAP_COUNTER));
}

struct hd_error *musl_walk(const struct hd_heap_source *src,
			   struct hd_heap *h)
{
	struct musl_ctx ctx = {0};
	struct hd_error *err = musl_find_ctx(src, &ctx);
	if (err)
		return err;
	h->info.method = ctx.method;
	// The layout is the same from 1.2.1 to 1.2.5; the release, when
	// musl's libc file says it, is the version.
	snprintf(h->version, sizeof(h->version), "%s",
		 ctx.version[0] ? ctx.version : "1.2.1-1.2.5");
	snprintf(h->version_source, sizeof(h->version_source),
		 "mallocng's layout (unchanged from musl 1.2.1 to 1.2.5); %s%s",
		 ctx.how,
		 ctx.version[0] ? "; the release from libc's version string" : "");
	if (!hd_heap_add_metadata(h, ctx.addr, ctx.addr + MUSL_CTX_SIZE,
				  "struct malloc_context (__malloc_context)",
				  HD_NO_REGION))
		return &hd_error_no_memory;
	if (musl_u32(ctx.raw + MUSL_CTX_INIT_DONE) == 0) {
		h->info.no_allocation_yet = true;
		snprintf(h->empty_reason, sizeof(h->empty_reason),
			 "musl's malloc was never initialised (mallocng's context at 0x%llx has init_done 0)",
			 (unsigned long long)ctx.addr);
		h->info.empty_reason = h->empty_reason;
		return NULL;
	}
	struct musl_walker w = {.t = src->t, .h = h, .ctx = &ctx,
			   .secret = musl_u64(ctx.raw + MUSL_CTX_SECRET)};
	memset(w.class_region, 0xff, sizeof(w.class_region));
	err = musl_read_areas(&w);
	if (!err)
		err = musl_nest(&w);
	if (!err && !describe_groups(&w))
		err = &hd_error_no_memory;
	if (!err)
		err = musl_emit(&w);
	if (!err && !facts(&w))
		err = &hd_error_no_memory;
	free(w.g);
	return err;
}
