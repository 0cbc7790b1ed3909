// The block table: sorted, dense ids, 15 bytes per block.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap_internal.h"
#include "util/vec.h"

#define MAX_PROBLEMS 1000

struct hd_error *hd_heap_alloc(struct hd_heap **ret)
{
	struct hd_heap *h = calloc(1, sizeof(*h));
	if (!h)
		return &hd_error_no_memory;
	*ret = h;
	return NULL;
}

void hd_heap_destroy(struct hd_heap *h)
{
	if (!h)
		return;
	free(h->addr);
	free(h->chunk16);
	free(h->flags);
	free(h->arena);
	free(h->arenas);
	free(h->segments);
	for (size_t i = 0; i < h->num_problems; i++)
		free(h->problems[i].message);
	free(h->problems);
	free(h);
}

bool hd_heap_reserve(struct hd_heap *h, size_t cap)
{
	if (cap <= h->cap_blocks)
		return true;
	uint64_t *a = realloc(h->addr, cap * sizeof(*a));
	if (a)
		h->addr = a;
	uint32_t *c = realloc(h->chunk16, cap * sizeof(*c));
	if (c)
		h->chunk16 = c;
	uint8_t *f = realloc(h->flags, cap * sizeof(*f));
	if (f)
		h->flags = f;
	uint16_t *r = realloc(h->arena, cap * sizeof(*r));
	if (r)
		h->arena = r;
	if (!a || !c || !f || !r)
		return false;
	h->cap_blocks = cap;
	return true;
}

static bool grow(struct hd_heap *h)
{
	return hd_heap_reserve(h, h->cap_blocks ? h->cap_blocks * 2 : 4096);
}

bool hd_heap_push(struct hd_heap *h, uint64_t chunk_addr, uint64_t chunk_size,
		  enum hd_block_state state, enum hd_free_list list,
		  uint16_t arena, bool mmapped)
{
	if (h->num_blocks == h->cap_blocks && !grow(h))
		return false;
	size_t i = h->num_blocks++;
	h->addr[i] = chunk_addr + 16;
	// Chunks are 16-byte multiples; 2^32 units cover 64 GiB.
	h->chunk16[i] = chunk_size >> 4 > UINT32_MAX ? UINT32_MAX
						      : (uint32_t)(chunk_size >> 4);
	h->flags[i] = (uint8_t)(state | (list << HD_FLAG_LIST_SHIFT) |
				(mmapped ? HD_FLAG_MMAPPED : 0));
	h->arena[i] = arena;
	return true;
}

void hd_heap_problem_add(struct hd_heap *h, uint64_t address, const char *fmt,
			 ...)
{
	if (h->num_problems >= MAX_PROBLEMS) {
		h->dropped_problems++;
		return;
	}
	struct hd_heap_problem p = {.address = address};
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&p.message, fmt, ap);
	va_end(ap);
	if (r < 0)
		p.message = NULL;
	if (!p.message ||
	    !HD_VEC_PUSH(h->problems, h->num_problems, h->cap_problems, p)) {
		free(p.message);
		h->dropped_problems++;
	}
}

size_t hd_heap_num_blocks(const struct hd_heap *h) { return h->num_blocks; }

void hd_heap_block(const struct hd_heap *h, size_t id, struct hd_block *ret)
{
	ret->addr = h->addr[id];
	ret->chunk = (uint64_t)h->chunk16[id] << 4;
	ret->state = hd_heap_state(h, id);
	ret->list = ret->state == HD_STATE_FREE ? hd_heap_list(h, id)
						: HD_LIST_NONE;
	ret->mmapped = h->flags[id] & HD_FLAG_MMAPPED;
	ret->arena = h->arena[id] == HD_ARENA_NONE ? HD_NO_ARENA : h->arena[id];
	ret->usable = ret->chunk < 16 ? 0 : hd_heap_usable(h, id);
}

// Last block whose user address (or, with chunk, chunk start) is at or
// below p, or -1.
static int64_t last_at_or_below(const struct hd_heap *h, uint64_t p, bool chunk)
{
	size_t lo = 0, hi = h->num_blocks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->addr[mid] - (chunk ? 16 : 0) <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t)lo - 1;
}

int64_t hd_heap_find_chunk(const struct hd_heap *h, uint64_t p)
{
	int64_t i = last_at_or_below(h, p, true);
	if (i >= 0 && p - (h->addr[i] - 16) < ((uint64_t)h->chunk16[i] << 4))
		return i;
	return -1;
}

int64_t hd_heap_find(const struct hd_heap *h, uint64_t p)
{
	// Usable ranges do not overlap one another: an arena chunk's last
	// usable word is the next chunk's prev_size, which precedes the next
	// block's user address, so the block starting at or below p is the
	// only candidate.
	int64_t i = last_at_or_below(h, p, false);
	if (i >= 0 && p - h->addr[i] < hd_heap_usable(h, (size_t)i))
		return i;
	return -1;
}

int64_t hd_heap_find_exact(const struct hd_heap *h, uint64_t addr)
{
	int64_t i = hd_heap_find_chunk(h, addr - 16);
	return i >= 0 && h->addr[i] == addr ? i : -1;
}

size_t hd_heap_num_segments(const struct hd_heap *h)
{
	return h->num_segments;
}

const struct hd_heap_segment *hd_heap_segment(const struct hd_heap *h,
					      size_t i)
{
	return i < h->num_segments ? &h->segments[i] : NULL;
}

size_t hd_heap_table_bytes(const struct hd_heap *h)
{
	return h->cap_blocks * (sizeof(*h->addr) + sizeof(*h->chunk16) +
				sizeof(*h->flags) + sizeof(*h->arena));
}

size_t hd_heap_num_arenas(const struct hd_heap *h) { return h->num_arenas; }

const struct hd_arena *hd_heap_arena(const struct hd_heap *h, size_t i)
{
	return i < h->num_arenas ? &h->arenas[i] : NULL;
}

size_t hd_heap_num_problems(const struct hd_heap *h)
{
	return h->num_problems;
}

const struct hd_heap_problem *hd_heap_problem(const struct hd_heap *h,
					      size_t i)
{
	return i < h->num_problems ? &h->problems[i] : NULL;
}

bool hd_heap_partial(const struct hd_heap *h)
{
	return h->num_problems || h->dropped_problems || h->info.other_allocator;
}

void hd_heap_get_info(const struct hd_heap *h, struct hd_heap_info *ret)
{
	*ret = h->info;
}

const char *hd_block_state_name(enum hd_block_state s)
{
	switch (s) {
	case HD_STATE_USED: return "used";
	case HD_STATE_FREE: return "free";
	case HD_STATE_INTERNAL: return "internal";
	}
	return "?";
}

const char *hd_free_list_name(enum hd_free_list l)
{
	static const char *const names[HD_LIST_COUNT] = {
		"none", "tcache", "fastbin", "unsorted", "small", "large",
		"top", "unknown",
	};
	return l < HD_LIST_COUNT ? names[l] : "?";
}
