// Unit tests of the block table (core/heap/blocks.c): lookups by interior
// and exact address, the packed per-block fields, and a large table.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "check_util.h"

static struct hd_heap *heap_new(void)
{
	struct hd_heap *h = NULL;
	ck_assert_no_error(hd_heap_alloc(&h));
	ck_assert_ptr_nonnull(h);
	// The table as the glibc backend declares it (shapes, lists).
	glibc_heap_declare(h);
	return h;
}

// ------------------------------------------------------------ small table

// Chunk addresses and sizes; blocks 0/1 and 3/4 are adjacent, the others
// have gaps between them.
struct spec {
	uint64_t chunk, size;
	uint16_t arena;
	bool mmapped;
};
static const struct spec small[] = {
	{0x555555559000, 0x290, 0, false},          // 0 (tcache struct size)
	{0x555555559290, 0x20, 0, false},           // 1 adjacent to 0
	{0x555555559400, 0x410, 0, false},          // 2 gap before
	{0x7ffff0000900, 0x30, 1, false},           // 3 another arena
	{0x7ffff0000930, 0x1000, 1, false},         // 4 adjacent to 3
	{0x7ffff7d00000, 0x22000, HD_ARENA_NONE, true}, // 5 mmapped
	{0x7ffff7e00000, 0x4000000, HD_ARENA_NONE, true}, // 6 64 MiB mmapped
};
#define NSMALL (sizeof(small) / sizeof(small[0]))

static struct hd_heap *small_heap(void)
{
	struct hd_heap *h = heap_new();
	for (size_t i = 0; i < NSMALL; i++)
		ck_assert(hd_heap_push(h, small[i].chunk, small[i].size,
				       HD_STATE_USED, HD_LIST_NONE,
				       small[i].arena, small[i].mmapped));
	ck_assert_uint_eq(hd_heap_num_blocks(h), NSMALL);
	return h;
}

START_TEST(test_empty)
{
	struct hd_heap *h = heap_new();
	ck_assert_uint_eq(hd_heap_num_blocks(h), 0);
	ck_assert_int_eq(hd_heap_find_chunk(h, 0), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x1000), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, UINT64_MAX), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, 0x1010), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, 0), -1);
	ck_assert_uint_eq(hd_heap_num_regions(h), 0);
	ck_assert_ptr_null(hd_heap_region(h, 0));
	ck_assert_uint_eq(hd_heap_num_problems(h), 0);
	ck_assert(!hd_heap_partial(h));
	hd_heap_destroy(h);
	hd_heap_destroy(NULL);
}
END_TEST

START_TEST(test_find_small)
{
	struct hd_heap *h = small_heap();
	for (size_t i = 0; i < NSMALL; i++) {
		uint64_t c = small[i].chunk, end = c + small[i].size;
		int64_t id = (int64_t)i;
		// The user pointer, the chunk header, interior, last byte.
		ck_assert_int_eq(hd_heap_find_chunk(h, c + 16), id);
		ck_assert_int_eq(hd_heap_find_chunk(h, c), id);
		ck_assert_int_eq(hd_heap_find_chunk(h, c + 8), id);
		ck_assert_int_eq(hd_heap_find_chunk(h, c + small[i].size / 2), id);
		ck_assert_int_eq(hd_heap_find_chunk(h, end - 1), id);
		// One past the end: the next block if adjacent, else nothing.
		int64_t want = -1;
		if (i + 1 < NSMALL && small[i + 1].chunk == end)
			want = id + 1;
		ck_assert_int_eq(hd_heap_find_chunk(h, end), want);
	}
	// Below the first, above the last, in the gaps.
	ck_assert_int_eq(hd_heap_find_chunk(h, 0), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, 15), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, small[0].chunk - 1), -1);
	uint64_t last_end = small[NSMALL - 1].chunk + small[NSMALL - 1].size;
	ck_assert_int_eq(hd_heap_find_chunk(h, last_end), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, last_end + 0x1000), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, UINT64_MAX), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x5555555592b0), -1); // after 1
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x5555555593ff), -1); // before 2
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x555555559810), -1); // after 2
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x7ffff00008ff), -1); // before 3
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x7ffff0001930), -1); // after 4
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x7ffff7d22000), -1); // after 5
	ck_assert_int_eq(hd_heap_find_chunk(h, 0x7ffff7dfffff), -1); // before 6
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_find_exact)
{
	struct hd_heap *h = small_heap();
	for (size_t i = 0; i < NSMALL; i++) {
		uint64_t c = small[i].chunk;
		ck_assert_int_eq(hd_heap_find_exact(h, c + 16), (int64_t)i);
		ck_assert_int_eq(hd_heap_find_exact(h, c), -1);
		ck_assert_int_eq(hd_heap_find_exact(h, c + 8), -1);
		ck_assert_int_eq(hd_heap_find_exact(h, c + 15), -1);
		ck_assert_int_eq(hd_heap_find_exact(h, c + 17), -1);
		ck_assert_int_eq(hd_heap_find_exact(h, c + 32), -1);
		ck_assert_int_eq(hd_heap_find_exact(h, c + small[i].size - 1),
				 -1);
	}
	ck_assert_int_eq(hd_heap_find_exact(h, 0), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, 8), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, 16), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, UINT64_MAX), -1);
	ck_assert_int_eq(hd_heap_find_exact(h, 0x555555559300), -1); // gap
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_block_fields)
{
	struct hd_heap *h = small_heap();
	for (size_t i = 0; i < NSMALL; i++) {
		struct hd_block b;
		memset(&b, 0xaa, sizeof(b));
		hd_heap_block(h, i, &b);
		ck_assert_uint_eq(b.addr, small[i].chunk + 16);
		ck_assert_uint_eq(b.extent, small[i].size);
		ck_assert_int_eq(b.state, HD_STATE_USED);
		ck_assert_int_eq(b.list, HD_LIST_NONE);
		ck_assert_int_eq(b.mmapped, small[i].mmapped);
		if (small[i].mmapped) {
			ck_assert_uint_eq(b.region, HD_NO_REGION);
			ck_assert_uint_eq(b.usable, small[i].size - 16);
		} else {
			ck_assert_uint_eq(b.region, small[i].arena);
			ck_assert_uint_eq(b.usable, small[i].size - 8);
		}
	}
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_state_round_trip)
{
	struct hd_heap *h = small_heap();
	for (size_t i = 0; i < NSMALL; i++) {
		for (int s = HD_STATE_USED; s <= HD_STATE_INTERNAL; s++) {
			for (int l = HD_LIST_NONE; l < HD_LIST_COUNT; l++) {
				hd_heap_set(h, i, (enum hd_block_state)s,
					    (enum glibc_list)l);
				ck_assert_int_eq(hd_heap_state(h, i), s);
				ck_assert_int_eq(hd_heap_list(h, i), l);
				struct hd_block b;
				hd_heap_block(h, i, &b);
				ck_assert_int_eq(b.state, s);
				// The list means something for free blocks only.
				ck_assert_int_eq(b.list, s == HD_STATE_FREE
								 ? l
								 : HD_LIST_NONE);
				// Nothing else moves.
				ck_assert_int_eq(b.mmapped, small[i].mmapped);
				ck_assert_uint_eq(b.addr, small[i].chunk + 16);
				ck_assert_uint_eq(b.extent, small[i].size);
				ck_assert_uint_eq(b.region,
						  small[i].mmapped
							  ? HD_NO_REGION
							  : small[i].arena);
			}
		}
	}
	// Neighbours are independent.
	hd_heap_set(h, 1, HD_STATE_FREE, HD_LIST_TCACHE);
	hd_heap_set(h, 2, HD_STATE_FREE, HD_LIST_LARGE);
	hd_heap_set(h, 3, HD_STATE_INTERNAL, HD_LIST_NONE);
	ck_assert_int_eq(hd_heap_list(h, 1), HD_LIST_TCACHE);
	ck_assert_int_eq(hd_heap_list(h, 2), HD_LIST_LARGE);
	ck_assert_int_eq(hd_heap_state(h, 3), HD_STATE_INTERNAL);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_push_state)
{
	// State, list and flags given at push time come back.
	struct hd_heap *h = heap_new();
	ck_assert(hd_heap_push(h, 0x1000, 0x20, HD_STATE_FREE, HD_LIST_FASTBIN,
			       0, false));
	ck_assert(hd_heap_push(h, 0x1020, 0x30, HD_STATE_FREE, HD_LIST_UNKNOWN,
			       7, false));
	ck_assert(hd_heap_push(h, 0x1050, 0x290, HD_STATE_INTERNAL,
			       HD_LIST_NONE, HD_REGION_LIMIT - 1, false));
	ck_assert(hd_heap_push(h, 0x2000, 0x1000, HD_STATE_FREE, HD_LIST_TOP,
			       HD_ARENA_NONE, true));
	struct hd_block b;
	hd_heap_block(h, 0, &b);
	ck_assert_int_eq(b.state, HD_STATE_FREE);
	ck_assert_int_eq(b.list, HD_LIST_FASTBIN);
	ck_assert_uint_eq(b.region, 0);
	hd_heap_block(h, 1, &b);
	ck_assert_int_eq(b.list, HD_LIST_UNKNOWN);
	ck_assert_uint_eq(b.region, 7);
	hd_heap_block(h, 2, &b);
	ck_assert_int_eq(b.state, HD_STATE_INTERNAL);
	ck_assert_int_eq(b.list, HD_LIST_NONE);
	ck_assert_uint_eq(b.region, HD_REGION_LIMIT - 1);
	ck_assert_uint_eq(b.usable, 0x290 - 8);
	hd_heap_block(h, 3, &b);
	ck_assert(b.mmapped);
	ck_assert_int_eq(b.list, HD_LIST_TOP);
	ck_assert_uint_eq(b.region, HD_NO_REGION);
	ck_assert_uint_eq(b.usable, 0x1000 - 16);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(hd_block_state_name(HD_STATE_USED), "used");
	ck_assert_str_eq(hd_block_state_name(HD_STATE_FREE), "free");
	ck_assert_str_eq(hd_block_state_name(HD_STATE_INTERNAL), "internal");
	ck_assert_str_eq(glibc_list_name(HD_LIST_TCACHE), "tcache");
	ck_assert_str_eq(glibc_list_name(HD_LIST_UNKNOWN), "unknown");
	ck_assert_str_eq(glibc_list_name(HD_LIST_COUNT), "?");
	for (int l = 0; l < HD_LIST_COUNT; l++)
		ck_assert_ptr_nonnull(glibc_list_name((enum glibc_list)l));
}
END_TEST

// ------------------------------------------------------------- merging

// A second allocator as a slab allocator declares it: extents of 8-byte
// units, no header, one list of its own.
static const struct hd_heap_backend slab_backend = {.name = "slab"};

static struct hd_heap *slab_heap(const uint64_t *addr, size_t n,
				 uint64_t extent)
{
	static const struct hd_heap_shape shapes[] = {{0, 0}};
	static const struct hd_free_list lists[] = {
		{"none", NULL, false}, {"slab free", "free: slabs", false}};
	struct hd_heap *h = NULL;
	ck_assert_no_error(hd_heap_alloc(&h));
	hd_heap_declare(h, &slab_backend, 3, shapes, 1, lists, 2);
	struct hd_region r = {.addr = addr[0], .kind = "slab"};
	ck_assert_uint_eq(hd_heap_add_region(h, &r), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(hd_heap_add(h, addr[i], extent,
				      i % 2 ? HD_STATE_FREE : HD_STATE_USED,
				      i % 2, i == 2 ? HD_REGION_NONE : 0, 0));
	ck_assert(hd_heap_fact_uint(h, HD_NO_REGION, "slabs", 1));
	hd_heap_count_totals(h);
	return h;
}

START_TEST(test_merge)
{
	// glibc: blocks 0, 1 (arena 0, region 0) and 5 (mmapped).
	struct hd_heap *g = small_heap();
	struct hd_region arena = {.addr = 0x1234, .kind = "arena"};
	ck_assert_uint_eq(hd_heap_add_region(g, &arena), 0);
	ck_assert_uint_eq(hd_heap_add_region(g, &arena), 1);
	hd_heap_set(g, 1, HD_STATE_FREE, HD_LIST_TOP);
	hd_heap_count_totals(g);
	// The slab allocator: between glibc's blocks 2 and 3, the last one
	// overlapping glibc's block 3 (left out, a problem).
	const uint64_t slab[] = {0x600000000000, 0x600000000040,
				 0x600000000080, 0x7ffff0000920};
	struct hd_heap *sl = slab_heap(slab, 4, 0x40);
	uint64_t g_used = g->allocs[0].used.bytes;
	struct hd_heap *parts[2] = {g, sl}, *h = NULL;
	ck_assert_no_error(hd_heap_merge(parts, 2, &h));
	ck_assert_uint_eq(hd_heap_num_allocators(h), 2);
	ck_assert_uint_eq(hd_heap_num_blocks(h), NSMALL + 3);
	ck_assert_uint_eq(h->span_shift, 3);
	for (size_t i = 1; i < hd_heap_num_blocks(h); i++)
		ck_assert_uint_lt(h->addr[i - 1], h->addr[i]);
	// Lists: glibc's, then the slab's; regions renumbered.
	ck_assert_uint_eq(hd_heap_num_free_lists(h), HD_LIST_COUNT + 1);
	ck_assert_uint_eq(hd_heap_num_regions(h), 3);
	ck_assert_uint_eq(hd_heap_region(h, 2)->allocator, 1);
	struct hd_block b;
	hd_heap_block(h, 1, &b);
	ck_assert_uint_eq(b.allocator, 0);
	ck_assert_uint_eq(b.list, HD_LIST_TOP);
	ck_assert_uint_eq(b.usable, small[1].size - 8);
	hd_heap_block(h, 3, &b); // slab block 0
	ck_assert_uint_eq(b.addr, slab[0]);
	ck_assert_uint_eq(b.allocator, 1);
	ck_assert_uint_eq(b.start, slab[0]);
	ck_assert_uint_eq(b.usable, 0x40);
	ck_assert_uint_eq(b.region, 2);
	hd_heap_block(h, 4, &b); // slab block 1: free on its list
	ck_assert_int_eq(b.state, HD_STATE_FREE);
	ck_assert_uint_eq(b.list, HD_LIST_COUNT);
	ck_assert_str_eq(b.list_name, "slab free");
	hd_heap_block(h, 5, &b); // slab block 2: no region, its allocator kept
	ck_assert(b.mmapped);
	ck_assert_uint_eq(b.allocator, 1);
	ck_assert_uint_eq(b.usable, 0x40);
	// glibc's mmapped chunk stays glibc's: its shape, head 16.
	hd_heap_block(h, 8, &b);
	ck_assert(b.mmapped);
	ck_assert_uint_eq(b.allocator, 0);
	ck_assert_uint_eq(b.start, small[5].chunk);
	ck_assert_int_eq(hd_heap_find(h, slab[0] + 8), 3);
	ck_assert_int_eq(hd_heap_find(h, small[3].chunk + 16), 6);
	// The overlapping slab block: one problem naming both, not counted.
	ck_assert_uint_eq(hd_heap_num_problems(h), 1);
	ck_assert_ptr_nonnull(strstr(hd_heap_problem(h, 0)->message,
				     "slab block 0x7ffff0000920"));
	struct hd_allocator_totals t;
	hd_heap_allocator_totals(h, 1, &t);
	ck_assert_uint_eq(t.used_blocks + t.free_blocks, 3);
	hd_heap_allocator_totals(h, 0, &t);
	ck_assert_uint_eq(t.used_bytes, g_used);
	struct hd_heap_info info;
	hd_heap_allocator_info(h, 1, &info);
	ck_assert_str_eq(info.allocator, "slab");
	ck_assert_uint_eq(hd_heap_fact(h, hd_heap_num_facts(h) - 1)->allocator, 1);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_memory_per_block)
{
	struct hd_heap *h = heap_new();
	size_t per_block = sizeof(*h->addr) + sizeof(*h->span) +
			   sizeof(*h->flags) + sizeof(*h->region);
	ck_assert_uint_eq(sizeof(*h->addr), 8);
	ck_assert_uint_eq(sizeof(*h->span), 4);
	ck_assert_uint_eq(sizeof(*h->flags), 1);
	ck_assert_uint_eq(sizeof(*h->region), 2);
	ck_assert_uint_eq(per_block, 15);
	// The flag bits hold every state, list and shape.
	ck_assert_uint_eq(HD_STATE_INTERNAL & ~HD_FLAG_STATE_MASK, 0);
	ck_assert_uint_eq(((HD_HEAP_MAX_LISTS - 1) << HD_FLAG_LIST_SHIFT) &
				  ~HD_FLAG_LIST_MASK,
			  0);
	ck_assert_uint_le(HD_LIST_COUNT, HD_HEAP_MAX_LISTS);
	ck_assert_uint_eq(((HD_HEAP_MAX_SHAPES - 1) << HD_FLAG_SHAPE_SHIFT) &
				  (HD_FLAG_STATE_MASK | HD_FLAG_LIST_MASK),
			  0);
	ck_assert_uint_eq((HD_HEAP_MAX_SHAPES - 1) << HD_FLAG_SHAPE_SHIFT, 0xc0);
	hd_heap_destroy(h);
}
END_TEST

// A backend of exact sizes (musl's mallocng) asks for a 4-byte column of
// reserved bytes: 19 bytes a block for it, still 15 for the others, and
// usable sizes (and lookups by address) follow the column.
START_TEST(test_exact_sizes)
{
	struct hd_heap *h = heap_new();
	ck_assert(hd_heap_reserve(h, 100));
	size_t plain = hd_heap_table_bytes(h);
	ck_assert_uint_eq(plain, 100 * 15);
	ck_assert_ptr_null(h->reserved);
	hd_heap_destroy(h);

	ck_assert_no_error(hd_heap_alloc(&h));
	static const struct hd_heap_shape slot[] = {{.head = 4, .tail = 0}};
	static const struct hd_free_list lists[] = {{"none", NULL, false}};
	hd_heap_declare(h, NULL, 4, slot, 1, lists, 1);
	ck_assert(hd_heap_exact_sizes(h));
	ck_assert(hd_heap_reserve(h, 100));
	ck_assert_uint_eq(hd_heap_table_bytes(h), 100 * 19);
	// Three slots of 48 bytes: 44 usable by shape, of which 44, 31 and 0
	// are asked for.
	static const uint32_t reserved[] = {0, 13, 44};
	for (size_t i = 0; i < 3; i++) {
		ck_assert(hd_heap_add(h, 0x1000 + 48 * i + 4, 48, HD_STATE_USED, 0,
				      HD_REGION_NONE, 0));
		hd_heap_set_reserved(h, i, reserved[i]);
	}
	// Growing keeps the column.
	ck_assert(hd_heap_reserve(h, 5000));
	for (size_t i = 0; i < 3; i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		ck_assert_uint_eq(b.usable, 44 - reserved[i]);
		ck_assert_uint_eq(b.extent, 48);
	}
	ck_assert_int_eq(hd_heap_find(h, 0x1000 + 48 + 4 + 30), 1);
	ck_assert_int_eq(hd_heap_find(h, 0x1000 + 48 + 4 + 31), -1);
	ck_assert_int_eq(hd_heap_find(h, 0x1000 + 96 + 4), -1);
	hd_heap_destroy(h);
}
END_TEST

// ------------------------------------------------------------ large table

#define NBIG 1000000
#define NSAMPLES 100000

static uint64_t rng_state;
static uint64_t rng(void)
{
	// xorshift64*, fixed seed: reproducible.
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

// Regular layout: block i's chunk at BASE + i * 0x40, size 0x40 for even
// i (adjacent to the next) and 0x20 for odd i (a 0x20 gap follows).
#define BIG_BASE 0x7f0000000000ULL
#define BIG_STRIDE 0x40

static uint64_t regular_size(size_t i) { return i % 2 ? 0x20 : 0x40; }

START_TEST(test_large_regular)
{
	struct hd_heap *h = heap_new();
	for (size_t i = 0; i < NBIG; i++)
		ck_assert(hd_heap_push(h, BIG_BASE + i * BIG_STRIDE,
				       regular_size(i),
				       i % 3 ? HD_STATE_USED : HD_STATE_FREE,
				       i % 3 ? HD_LIST_NONE : HD_LIST_SMALL,
				       (uint16_t)(i % 5), false));
	ck_assert_uint_eq(hd_heap_num_blocks(h), NBIG);
	rng_state = 0x9e3779b97f4a7c15ULL;
	uint64_t span = (uint64_t)NBIG * BIG_STRIDE;
	for (size_t k = 0; k < NSAMPLES; k++) {
		uint64_t off = rng() % span;
		uint64_t p = BIG_BASE + off;
		size_t i = off / BIG_STRIDE;
		int64_t want = off % BIG_STRIDE < regular_size(i) ? (int64_t)i
								  : -1;
		int64_t got = hd_heap_find_chunk(h, p);
		ck_assert_msg(got == want, "find(0x%" PRIx64 ") = %" PRId64
			      ", want %" PRId64, p, got, want);
		// The exact lookup of the block's user pointer.
		uint64_t user = BIG_BASE + i * BIG_STRIDE + 16;
		ck_assert_int_eq(hd_heap_find_exact(h, user), (int64_t)i);
		if (p != user)
			ck_assert_int_eq(hd_heap_find_exact(h, p), -1);
	}
	// Ends of the table.
	ck_assert_int_eq(hd_heap_find_chunk(h, BIG_BASE), 0);
	ck_assert_int_eq(hd_heap_find_chunk(h, BIG_BASE - 1), -1);
	ck_assert_int_eq(hd_heap_find_chunk(h, BIG_BASE + (NBIG - 1) * BIG_STRIDE),
			 NBIG - 1);
	ck_assert_int_eq(hd_heap_find_chunk(h, BIG_BASE + (NBIG - 1) * BIG_STRIDE +
						 regular_size(NBIG - 1)),
			 -1);
	struct hd_block b;
	hd_heap_block(h, 123456, &b);
	ck_assert_uint_eq(b.addr, BIG_BASE + 123456 * BIG_STRIDE + 16);
	ck_assert_int_eq(b.state, HD_STATE_FREE);
	ck_assert_int_eq(b.list, HD_LIST_SMALL);
	ck_assert_uint_eq(b.region, 123456 % 5);
	hd_heap_destroy(h);
}
END_TEST

// hd_heap_find: the block whose usable bytes hold p. An arena block's
// last 8 usable bytes are the next chunk's prev_size word, so an address
// there is the block's own, not the next block's; the size word is no
// block's; an mmapped block's usable bytes end with its chunk.
static int64_t linear_usable(const uint64_t *chunk, const uint64_t *size,
			     const bool *mm, size_t n, uint64_t p)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t user = chunk[i] + 16, usable = size[i] - (mm[i] ? 16 : 8);
		if (p >= user && p - user < usable)
			return (int64_t)i;
	}
	return -1;
}

START_TEST(test_find_usable)
{
	struct hd_heap *h = small_heap();
	uint64_t chunk[NSMALL], size[NSMALL];
	bool mm[NSMALL];
	for (size_t i = 0; i < NSMALL; i++) {
		chunk[i] = small[i].chunk;
		size[i] = small[i].size;
		mm[i] = small[i].mmapped;
		uint64_t user = chunk[i] + 16, end = chunk[i] + size[i];
		int64_t id = (int64_t)i;
		ck_assert_int_eq(hd_heap_find(h, user), id);
		ck_assert_int_eq(hd_heap_find(h, end - 1), id);
		// The chunk header's words are not the block's.
		ck_assert_int_ne(hd_heap_find(h, chunk[i]), id);
		ck_assert_int_eq(hd_heap_find(h, chunk[i] + 8), -1);
		ck_assert_int_eq(hd_heap_find(h, user - 1), -1);
		// Past the chunk: an arena block owns the next 8 bytes (the
		// next chunk's prev_size), an mmapped one nothing.
		ck_assert_int_eq(hd_heap_find(h, end), mm[i] ? -1 : id);
		ck_assert_int_eq(hd_heap_find(h, end + 7), mm[i] ? -1 : id);
		ck_assert_int_eq(hd_heap_find(h, end + 8), -1);
	}
	// Every address around every block, against the linear reference.
	for (size_t i = 0; i < NSMALL; i++)
		for (uint64_t p = chunk[i] - 48; p < chunk[i] + 96; p++)
			ck_assert_int_eq(hd_heap_find(h, p),
					 linear_usable(chunk, size, mm, NSMALL, p));
	hd_heap_destroy(h);
}
END_TEST

// Linear reference lookup.
static int64_t linear_find(const uint64_t *chunk, const uint64_t *size,
			   size_t n, uint64_t p)
{
	for (size_t i = 0; i < n; i++)
		if (p >= chunk[i] && p - chunk[i] < size[i])
			return (int64_t)i;
	return -1;
}

START_TEST(test_large_random)
{
	// Random sizes (16-byte multiples) and random gaps, some mmapped.
	uint64_t *chunk = malloc(NBIG * sizeof(*chunk));
	uint64_t *size = malloc(NBIG * sizeof(*size));
	ck_assert(chunk && size);
	rng_state = 0x1234567887654321ULL;
	struct hd_heap *h = heap_new();
	uint64_t a = 0x555555559000;
	for (size_t i = 0; i < NBIG; i++) {
		uint64_t r = rng();
		bool mm = r % 1000 == 0;
		uint64_t sz = mm ? 0x1000 * (1 + (r >> 10) % 64)
				 : 0x20 + 16 * ((r >> 10) % 64);
		if ((r >> 20) % 4 == 0)
			a += 16 * (1 + (r >> 24) % 16); // gap
		chunk[i] = a;
		size[i] = sz;
		ck_assert(hd_heap_push(h, a, sz, HD_STATE_USED, HD_LIST_NONE,
				       mm ? HD_ARENA_NONE : 0, mm));
		a += sz;
	}
	uint64_t lo = chunk[0] - 0x100, hi = a + 0x100;
	size_t hits = 0;
	for (size_t k = 0; k < NSAMPLES; k++) {
		uint64_t p = lo + rng() % (hi - lo);
		int64_t got = hd_heap_find_chunk(h, p);
		if (got >= 0) {
			hits++;
			size_t i = (size_t)got;
			ck_assert_msg(p >= chunk[i] && p - chunk[i] < size[i],
				      "find(0x%" PRIx64 ") = %zu [0x%" PRIx64
				      ", +0x%" PRIx64 ")",
				      p, i, chunk[i], size[i]);
		} else {
			// Must be in a gap: neither neighbour covers p. Find
			// the neighbours by binary search over the reference.
			size_t l = 0, r = NBIG;
			while (l < r) {
				size_t m = l + (r - l) / 2;
				if (chunk[m] <= p)
					l = m + 1;
				else
					r = m;
			}
			ck_assert_msg(l == 0 || p - chunk[l - 1] >= size[l - 1],
				      "find(0x%" PRIx64 ") = -1 but block %zu "
				      "covers it", p, l - 1);
		}
		// A few against the linear reference over the whole table.
		if (k % 10000 == 0)
			ck_assert_int_eq(got, linear_find(chunk, size, NBIG, p));
	}
	// Most samples land in blocks (gaps are small).
	ck_assert_uint_gt(hits, NSAMPLES / 2);
	// Every block found from its first and last bytes, exact by user
	// pointer.
	for (size_t i = 0; i < NBIG; i += 997) {
		ck_assert_int_eq(hd_heap_find_chunk(h, chunk[i]), (int64_t)i);
		ck_assert_int_eq(hd_heap_find_chunk(h, chunk[i] + size[i] - 1),
				 (int64_t)i);
		ck_assert_int_eq(hd_heap_find_exact(h, chunk[i] + 16),
				 (int64_t)i);
		struct hd_block b;
		hd_heap_block(h, i, &b);
		ck_assert_uint_eq(b.extent, size[i]);
		ck_assert_uint_eq(b.usable, size[i] - (b.mmapped ? 16 : 8));
	}
	hd_heap_destroy(h);
	free(chunk);
	free(size);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blocks");
	TCase *tc = tcase_create("small");
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_find_small);
	tcase_add_test(tc, test_find_usable);
	tcase_add_test(tc, test_find_exact);
	tcase_add_test(tc, test_block_fields);
	tcase_add_test(tc, test_state_round_trip);
	tcase_add_test(tc, test_push_state);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_memory_per_block);
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_exact_sizes);
	suite_add_tcase(s, tc);

	tc = tcase_create("large");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_large_regular);
	tcase_add_test(tc, test_large_random);
	suite_add_tcase(s, tc);

	int failed = hd_run_suite(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
