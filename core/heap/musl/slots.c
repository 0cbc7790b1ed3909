// mallocng's slots as blocks: a slot's state from its group's masks, a
// used slot's block and exact size from its in-band header, and a nested
// group's slots in place of the slot that holds it, all in address order.
#include <stdio.h>
#include <string.h>

#include "heap/musl/musl_internal.h"

#define MAX_VIEW (1u << 20)           // groups up to this are read at once
#define CONTAINER_CODE 6              // reserved code of a slot holding a group
#define OFFSET_CODE 7                 // header at a slot's start: the offset

bool musl_read(struct musl_walker *w, uint64_t addr, void *buf, size_t n)
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

// Adds a slot's block: slots come in address order (the nested groups'
// in their container's place); one overlapping the last is a problem.
static bool push_slot(struct musl_walker *w, uint64_t addr, uint64_t extent,
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
static bool used_slot(struct musl_walker *w, const struct musl_group *g, unsigned i,
		      bool container)
{
	uint64_t storage = g->mem + MUSL_UNIT;
	uint64_t start = storage + g->stride * i;
	uint64_t end = start + g->stride - MUSL_IB;
	uint8_t hdr[8];
	const char *bad = NULL;
	uint64_t p = start;
	if (!musl_read(w, start - 4, hdr, 4)) {
		bad = "its header is unreadable";
	} else if (hdr[1] == OFFSET_CODE << 5) {
		// The block starts further in (cycled or aligned).
		p = start + MUSL_UNIT * (uint64_t)(hdr[2] | hdr[3] << 8);
		if (p >= end)
			bad = "its offset record points past the slot";
	}
	unsigned code = 0;
	uint64_t reserved = 0;
	if (!bad && !musl_read(w, p - 8, hdr, 8))
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
			if (!musl_read(w, end - 5, r, 5))
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
static bool group_slots(struct musl_walker *w, size_t gi)
{
	const struct musl_group *g = &w->g[gi];
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

struct hd_error *musl_emit(struct musl_walker *w)
{
	// Every slot is a block but those holding a nested group.
	size_t total = 0;
	for (size_t i = 0; i < w->ng; i++)
		total += w->g[i].skip ? 0 : w->g[i].cnt - (w->g[i].parent >= 0);
	if (!hd_heap_reserve(w->h, total))
		return &hd_error_no_memory;
	for (size_t i = 0; i < w->ng; i++) {
		const struct musl_group *g = &w->g[i];
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
