// mallocng's meta areas (each a page of metas, linked from the context)
// and the groups their metas describe, checked against each group's own
// header; then which group's slot holds each nested group.
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

const uint16_t musl_size_classes[MUSL_CLASSES] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 31,
	36, 42, 50, 63, 72, 84, 102, 127, 146, 170, 204, 255, 292, 340, 409, 511,
	584, 682, 818, 1023, 1169, 1364, 1637, 2047, 2340, 2730, 3276, 4095,
	4680, 5460, 6552, 8191,
};


// A meta in use: one group, checked against its own header and sizes.
static bool add_meta(struct musl_walker *w, uint64_t addr, const uint8_t *m)
{
	struct musl_group g = {.meta = addr, .mem = musl_u64(m + 16),
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
	if (!musl_read(w, g.mem, hdr, sizeof(hdr)) || musl_u64(hdr) != addr) {
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

struct hd_error *musl_read_areas(struct musl_walker *w)
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
		if ((a & (MUSL_PAGE - 1)) || !musl_read(w, a, page, sizeof(page)) ||
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


static int group_cmp(const void *x, const void *y)
{
	const struct musl_group *a = x, *b = y;
	return a->mem < b->mem ? -1 : a->mem > b->mem;
}

// Which group's slot holds each group: with the groups in address order,
// the enclosing ones form a stack.
struct hd_error *musl_nest(struct musl_walker *w)
{
	hd_qsort(w->g, w->ng, sizeof(*w->g), group_cmp);
	int *stack = malloc((w->ng + 1) * sizeof(*stack));
	if (!stack)
		return &hd_error_no_memory;
	size_t depth = 0;
	for (size_t i = 0; i < w->ng; i++) {
		struct musl_group *g = &w->g[i];
		// A meta read twice (a meta area list that loops, reported).
		if (i && g->meta == w->g[i - 1].meta && g->mem == w->g[i - 1].mem) {
			g->skip = true;
			continue;
		}
		while (depth && w->g[stack[depth - 1]].end <= g->mem)
			depth--;
		if (depth) {
			struct musl_group *p = &w->g[stack[depth - 1]];
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
