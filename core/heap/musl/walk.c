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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/musl/musl_internal.h"
#include "util/sort.h"
#include "util/vec.h"

#define MAX_AREAS (1u << 22)          // 16 GiB of meta areas
// Pages of one group's mapping: the block table's extents stop short of
// 64 GiB (2^32 units of 16 bytes).
#define MAX_MAPLEN ((1ull << 24) - 1)
#define MAX_VIEW (1u << 20)           // groups up to this are read at once
#define CONTAINER_CODE 6              // reserved code of a slot holding a group
#define OFFSET_CODE 7                 // header at a slot's start: the offset

const uint16_t musl_size_classes[MUSL_CLASSES] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 31,
	36, 42, 50, 63, 72, 84, 102, 127, 146, 170, 204, 255, 292, 340, 409, 511,
	584, 682, 818, 1023, 1169, 1364, 1637, 2047, 2340, 2730, 3276, 4095,
	4680, 5460, 6552, 8191,
};

struct group {
	uint64_t meta, mem, end; // the group's memory [mem, end)
	uint64_t stride;         // bytes a slot takes
	uint64_t maplen;         // pages of its own mapping, 0 if none
	uint32_t avail, freed;   // the meta's masks
	uint32_t containers;     // slots holding a nested group
	unsigned cnt, sc, active_idx;
	bool freeable, skip;
	int parent;              // group whose slot holds it, -1 if none
	uint16_t region;
};

struct walker {
	struct hd_target *t;
	struct hd_heap *h;
	const struct musl_ctx *ctx;
	uint64_t secret;
	struct group *g;
	size_t ng, capg;
	uint64_t last_end; // of the last block added
	size_t areas, nested, mapped, donated;
	uint16_t class_region[MUSL_CLASSES];
	// The memory of the top-level group being walked (nested groups lie
	// inside it), or none.
	struct hd_view v;
	bool have_view;
};

static bool rd(struct walker *w, uint64_t addr, void *buf, size_t n)
{
	if (w->have_view && addr >= w->v.addr && addr - w->v.addr <= w->v.len &&
	    n <= w->v.len - (addr - w->v.addr)) {
		memcpy(buf, w->v.data + (addr - w->v.addr), n);
		return true;
	}
	struct hd_error *err = hd_target_read(w->t, addr, buf, n);
	hd_error_destroy(err);
	return !err;
}

// ------------------------------------------------------------ meta areas

// A meta in use: one group, checked against its own header and sizes.
static bool add_meta(struct walker *w, uint64_t addr, const uint8_t *m)
{
	struct group g = {.meta = addr, .mem = musl_u64(m + 16),
			  .avail = musl_u32(m + 24), .freed = musl_u32(m + 28),
			  .parent = -1, .region = HD_REGION_NONE};
	if (!g.mem)
		return true; // a free meta (zeroed), or never handed out
	uint64_t bits = musl_u64(m + 32);
	g.cnt = (unsigned)(bits & 31) + 1;
	g.freeable = (bits >> 5) & 1;
	g.sc = (unsigned)(bits >> 6) & 63;
	g.maplen = bits >> 12;
	struct hd_heap *h = w->h;
	const char *bad = NULL;
	if (g.mem & (MUSL_UNIT - 1))
		bad = "is not 16-byte aligned";
	else if (g.sc >= MUSL_CLASSES &&
		 (g.sc != MUSL_CLASS_MMAP || g.cnt != 1 || !g.maplen))
		bad = "has an impossible size class";
	else if (g.maplen > MAX_MAPLEN)
		bad = "is mapped with 64 GiB or more (beyond the block table's extents, or damaged)";
	if (bad) {
		hd_heap_problem_add(h, addr,
				    "meta 0x%llx: its group 0x%llx %s (class %u, %u slots, %llu pages); the group is skipped",
				    (unsigned long long)addr, (unsigned long long)g.mem,
				    bad, g.sc, g.cnt, (unsigned long long)g.maplen);
		return true;
	}
	g.stride = g.cnt == 1 && g.maplen ? g.maplen * MUSL_PAGE - MUSL_UNIT
					  : (uint64_t)MUSL_UNIT * musl_size_classes[g.sc];
	uint64_t used = MUSL_UNIT + g.stride * g.cnt;
	if (g.maplen && used > g.maplen * MUSL_PAGE) {
		hd_heap_problem_add(h, addr,
				    "meta 0x%llx: %u slots of %llu bytes do not fit the %llu pages of its group 0x%llx; the group is skipped",
				    (unsigned long long)addr, g.cnt,
				    (unsigned long long)g.stride,
				    (unsigned long long)g.maplen, (unsigned long long)g.mem);
		return true;
	}
	g.end = g.mem + (g.maplen ? g.maplen * MUSL_PAGE : used);
	uint8_t hdr[MUSL_UNIT];
	if (!rd(w, g.mem, hdr, sizeof(hdr)) || musl_u64(hdr) != addr) {
		hd_heap_problem_add(h, g.mem,
				    "group 0x%llx does not point back at its meta 0x%llx (or is unreadable); its slots are skipped",
				    (unsigned long long)g.mem, (unsigned long long)addr);
		return true;
	}
	g.active_idx = hdr[8] & 31;
	uint32_t all = (uint32_t)((2ull << (g.cnt - 1)) - 1);
	if ((g.avail | g.freed) & ~all || g.avail & g.freed) {
		hd_heap_problem_add(h, addr,
				    "meta 0x%llx: masks avail 0x%x freed 0x%x are impossible for %u slots; slots in both or past the last are taken as freed",
				    (unsigned long long)addr, g.avail, g.freed, g.cnt);
		g.avail &= all & ~g.freed;
		g.freed &= all;
	}
	return HD_VEC_PUSH(w->g, w->ng, w->capg, g);
}

static struct hd_error *read_areas(struct walker *w)
{
	const uint8_t *raw = w->ctx->raw;
	uint64_t a = musl_u64(raw + MUSL_CTX_META_AREA_HEAD);
	uint64_t tail = musl_u64(raw + MUSL_CTX_META_AREA_TAIL);
	uint64_t mark = 0; // Brent's cycle check: the area 2^k steps back
	size_t power = 1;
	uint8_t page[MUSL_PAGE];
	while (a) {
		if ((a == mark && w->areas) || w->areas == MAX_AREAS) {
			hd_heap_problem_add(w->h, a,
					    "the meta area list loops at 0x%llx (or passes %u areas); the rest is skipped",
					    (unsigned long long)a, MAX_AREAS);
			break;
		}
		if (w->areas + 1 == power) {
			mark = a;
			power *= 2;
		}
		if ((a & (MUSL_PAGE - 1)) || !rd(w, a, page, sizeof(page)) ||
		    musl_u64(page) != w->secret) {
			hd_heap_problem_add(w->h, a,
					    "meta area 0x%llx is unreadable or its check word is not the context's secret; it and later meta areas (with their groups) are missing",
					    (unsigned long long)a);
			break;
		}
		if (!hd_heap_add_metadata(w->h, a, a + MUSL_PAGE, "meta area",
					  HD_NO_REGION))
			return &hd_error_no_memory;
		w->areas++;
		uint32_t nslots = musl_u32(page + 16);
		if (nslots > MUSL_AREA_SLOTS) {
			hd_heap_problem_add(w->h, a,
					    "meta area 0x%llx claims %u metas, room for %u; the first %u are read",
					    (unsigned long long)a, nslots,
					    (unsigned)MUSL_AREA_SLOTS, (unsigned)MUSL_AREA_SLOTS);
			nslots = MUSL_AREA_SLOTS;
		}
		for (uint32_t j = 0; j < nslots; j++) {
			uint64_t off = MUSL_AREA_HEADER + (uint64_t)j * MUSL_META_SIZE;
			if (!add_meta(w, a + off, page + off))
				return &hd_error_no_memory;
		}
		if (a == tail)
			break;
		a = musl_u64(page + 8);
	}
	return NULL;
}

// ------------------------------------------------------------ nesting

static int group_cmp(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	return a->mem < b->mem ? -1 : a->mem > b->mem;
}

// Which group's slot holds each group: with the groups in address order,
// the enclosing ones form a stack.
static struct hd_error *nest(struct walker *w)
{
	hd_qsort(w->g, w->ng, sizeof(*w->g), group_cmp);
	int *stack = malloc((w->ng + 1) * sizeof(*stack));
	if (!stack)
		return &hd_error_no_memory;
	size_t depth = 0;
	for (size_t i = 0; i < w->ng; i++) {
		struct group *g = &w->g[i];
		// A meta read twice (a meta area list that loops, reported).
		if (i && g->meta == w->g[i - 1].meta && g->mem == w->g[i - 1].mem) {
			g->skip = true;
			continue;
		}
		while (depth && w->g[stack[depth - 1]].end <= g->mem)
			depth--;
		if (depth) {
			struct group *p = &w->g[stack[depth - 1]];
			uint64_t storage = p->mem + MUSL_UNIT;
			uint64_t idx = g->mem >= storage ? (g->mem - storage) / p->stride
							 : p->cnt;
			uint64_t start = storage + idx * p->stride;
			uint32_t bit = idx < p->cnt ? 1u << idx : 0;
			if (g->maplen || idx >= p->cnt || g->mem != start ||
			    g->end > start + p->stride ||
			    (p->avail | p->freed | p->containers) & bit) {
				hd_heap_problem_add(w->h, g->mem,
						    "group 0x%llx (meta 0x%llx) overlaps group 0x%llx but is not in a used slot of it; it is skipped",
						    (unsigned long long)g->mem,
						    (unsigned long long)g->meta,
						    (unsigned long long)p->mem);
				g->skip = true;
				continue;
			}
			p->containers |= bit;
			g->parent = stack[depth - 1];
			w->nested++;
		} else if (!g->maplen && g->freeable) {
			// Not mapped, not donated: it was carved from a slot of
			// a group whose meta was not found.
			hd_heap_problem_add(w->h, g->mem,
					    "group 0x%llx (meta 0x%llx) lies in no slot of a known group",
					    (unsigned long long)g->mem,
					    (unsigned long long)g->meta);
		}
		stack[depth++] = (int)i;
	}
	free(stack);
	return NULL;
}

// --------------------------------------------------------------- slots

// Adds a slot's block: slots come in address order (the nested groups'
// in their container's place); one overlapping the last is a problem.
static bool push_slot(struct walker *w, uint64_t addr, uint64_t extent,
		      enum hd_block_state state, unsigned list,
		      uint32_t reserved, uint16_t region)
{
	struct hd_heap *h = w->h;
	if (addr - MUSL_IB < w->last_end) {
		hd_heap_problem_add(h, addr,
				    "slot 0x%llx overlaps the slot before it; it is skipped",
				    (unsigned long long)addr);
		return true;
	}
	w->last_end = addr - MUSL_IB + extent;
	if (!hd_heap_add(h, addr, extent, state, list, region, 0))
		return false;
	hd_heap_set_reserved(h, h->num_blocks - 1, reserved);
	return true;
}

// A used slot: where its block starts (the slot's start, or an offset the
// header at the start records) and how many of its bytes it keeps back.
static bool used_slot(struct walker *w, const struct group *g, unsigned i,
		      bool container)
{
	uint64_t storage = g->mem + MUSL_UNIT;
	uint64_t start = storage + g->stride * i;
	uint64_t end = start + g->stride - MUSL_IB;
	uint8_t hdr[8];
	const char *bad = NULL;
	uint64_t p = start;
	if (!rd(w, start - 4, hdr, 4)) {
		bad = "its header is unreadable";
	} else if (hdr[1] == OFFSET_CODE << 5) {
		// The block starts further in (cycled or aligned).
		p = start + MUSL_UNIT * (uint64_t)(hdr[2] | hdr[3] << 8);
		if (p >= end)
			bad = "its offset record points past the slot";
	}
	unsigned code = 0;
	uint64_t reserved = 0;
	if (!bad && !rd(w, p - 8, hdr, 8))
		bad = "its header is unreadable";
	if (!bad) {
		uint64_t off = hdr[4] ? musl_u32(hdr) : (uint64_t)(hdr[6] | hdr[7] << 8);
		code = hdr[5] >> 5;
		if ((hdr[5] & 31) != i || off * MUSL_UNIT != p - storage ||
		    (hdr[4] && (hdr[6] | hdr[7])))
			bad = "its header names another slot or offset";
		else if (code == OFFSET_CODE)
			bad = "its header has no size";
	}
	if (!bad && container != (code == CONTAINER_CODE))
		bad = container ? "it holds a group but its header does not say so"
				: "its header says it holds a group no meta describes";
	if (!bad && container)
		return true; // the nested group's slots are the blocks
	if (!bad) {
		reserved = code;
		uint8_t r[5];
		if (code == 5) {
			if (!rd(w, end - 5, r, 5))
				bad = "its size trailer is unreadable";
			else if ((reserved = musl_u32(r + 1)) < 5 || r[0])
				bad = "its size trailer is damaged";
		}
		if (!bad && reserved > end - p)
			bad = "it reserves more bytes than it has";
	}
	if (bad) {
		hd_heap_problem_add(w->h, start,
				    "group 0x%llx slot %u (0x%llx) is in use but %s; its block is missing",
				    (unsigned long long)g->mem, i,
				    (unsigned long long)start, bad);
		return true;
	}
	return push_slot(w, p, end + MUSL_IB - p, HD_STATE_USED, MUSL_LIST_NONE,
			 (uint32_t)reserved, g->region);
}

// The blocks of group gi, and in each slot holding a group, that group's.
// Recursion is at most 48 deep: a nested group fits one slot of its
// container (nest() checks it), so its slots are of a smaller class.
static bool group_slots(struct walker *w, size_t gi)
{
	const struct group *g = &w->g[gi];
	uint64_t storage = g->mem + MUSL_UNIT;
	size_t next = gi + 1; // the nested groups follow it in address order
	for (unsigned i = 0; i < g->cnt; i++) {
		uint32_t bit = 1u << i;
		uint64_t start = storage + g->stride * i;
		bool ok = true;
		if (g->avail & bit) {
			ok = push_slot(w, start, g->stride, HD_STATE_FREE,
				       MUSL_LIST_AVAIL, 0, g->region);
		} else if (g->freed & bit) {
			ok = push_slot(w, start, g->stride, HD_STATE_FREE,
				       i > g->active_idx ? MUSL_LIST_INACTIVE
							 : MUSL_LIST_FREED,
				       0, g->region);
		} else if (!(g->containers & bit)) {
			ok = used_slot(w, g, i, false);
		} else {
			ok = used_slot(w, g, i, true);
			while (next < w->ng && w->g[next].mem < g->end &&
			       (w->g[next].parent != (int)gi || w->g[next].mem != start))
				next++;
			if (ok && next < w->ng && w->g[next].mem == start)
				ok = group_slots(w, next++);
		}
		if (!ok)
			return false;
	}
	return true;
}

// ------------------------------------------------------------- regions

static uint16_t class_region(struct walker *w, unsigned sc)
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
static bool describe_groups(struct walker *w)
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
		struct group *g = &w->g[i];
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

static struct hd_error *emit(struct walker *w)
{
	// Every slot is a block but those holding a nested group.
	size_t total = 0;
	for (size_t i = 0; i < w->ng; i++)
		total += w->g[i].skip ? 0 : w->g[i].cnt - (w->g[i].parent >= 0);
	if (!hd_heap_reserve(w->h, total))
		return &hd_error_no_memory;
	for (size_t i = 0; i < w->ng; i++) {
		const struct group *g = &w->g[i];
		if (g->skip || g->parent >= 0)
			continue;
		w->have_view = false;
		if (g->end - g->mem <= MAX_VIEW) {
			struct hd_error *err =
				hd_target_view(w->t, g->mem, g->end - g->mem, &w->v);
			if (err && err->code == HD_ERROR_NO_MEMORY)
				return err;
			hd_error_destroy(err);
			w->have_view = !err;
		}
		bool ok = group_slots(w, i);
		if (w->have_view)
			hd_view_deinit(&w->v);
		w->have_view = false;
		if (!ok)
			return &hd_error_no_memory;
	}
	return NULL;
}

static bool facts(struct walker *w)
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
	struct walker w = {.t = src->t, .h = h, .ctx = &ctx,
			   .secret = musl_u64(ctx.raw + MUSL_CTX_SECRET)};
	memset(w.class_region, 0xff, sizeof(w.class_region));
	err = read_areas(&w);
	if (!err)
		err = nest(&w);
	if (!err && !describe_groups(&w))
		err = &hd_error_no_memory;
	if (!err)
		err = emit(&w);
	if (!err && !facts(&w))
		err = &hd_error_no_memory;
	free(w.g);
	return err;
}
