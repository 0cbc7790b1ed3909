// poolalloc: the pool allocator of tests/fixtures/pool_fixture.c, as a
// backend of the allocator seam (backend.h). It exists to prove the seam:
// adding it touched nothing outside this folder but its line in
// core/heap/registry.c and core/meson.build.
//
// The allocator: a global `struct pool *poolalloc_pools` lists its pools,
// newest first. A pool is one mapping that starts with
//   struct pool { u64 magic; struct pool *next; u64 size; u64 top;
//                 struct block *free_list; u64 nblocks; u64 reserved[2]; }
// (64 bytes); blocks are carved from offset 64 up to top, each with a
// 16-byte header { u32 size (header included, 16-aligned); u32 state;
// struct pool *pool; } before its data. A free block's data starts with
// the next free block of its pool's free list.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/backend.h"
#include "util/sort.h"

#define POOL_MAGIC 0x6c6f6f7050444850ULL
#define POOL_HEADER 64
#define BLOCK_HEADER 16
#define BLOCK_USED 0xa110c8edu
#define BLOCK_FREE 0xf4eeb10cu
#define MAX_POOLS 4096
#define MAX_POOL_SIZE (1ULL << 32)
#define POOLS_SYMBOL "poolalloc_pools"

enum { LIST_NONE, LIST_FREE, LIST_UNLISTED, NUM_LISTS };

static const struct hd_free_list lists[NUM_LISTS] = {
	[LIST_NONE] = {"none", NULL, false},
	[LIST_FREE] = {"free list", "free: pool free lists", false},
	// Free by its header, but on no free list: the allocator lost it.
	[LIST_UNLISTED] = {"unlisted", "free: on no free list", false},
};

static const struct hd_heap_shape shapes[] = {
	{.head = BLOCK_HEADER, .tail = 0},
};

extern const struct hd_heap_backend hd_heap_backend_poolalloc;

static bool read64(struct hd_target *t, uint64_t addr, uint64_t *ret)
{
	struct hd_error *err = hd_target_read(t, addr, ret, 8);
	hd_error_destroy(err);
	return !err;
}

// The first pool, if the executable defines the allocator's global and
// it points at a pool header.
static bool first_pool(const struct hd_heap_source *src, uint64_t *pool,
		       uint64_t *global)
{
	uint64_t size, magic;
	if (!src->di)
		return false;
	struct hd_error *err = hd_debuginfo_find_symbol(src->di, NULL, POOLS_SYMBOL,
							global, &size);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return read64(src->t, *global, pool) && *pool &&
	       read64(src->t, *pool, &magic) && magic == POOL_MAGIC;
}

static bool detect(const struct hd_heap_source *src, char *evidence,
		   size_t len)
{
	uint64_t pool, global;
	if (!first_pool(src, &pool, &global))
		return false;
	snprintf(evidence, len, "%s at 0x%llx points at a pool", POOLS_SYMBOL,
		 (unsigned long long)global);
	return true;
}

struct pool {
	uint64_t addr, size, top, free_list, nblocks;
};

static int pool_cmp(const void *a, const void *b)
{
	const struct pool *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

// The pools in address order (blocks are added in address order).
static struct hd_error *read_pools(const struct hd_heap_source *src,
				   struct hd_heap *h, struct pool **ret,
				   size_t *n)
{
	uint64_t p, global;
	*n = 0;
	*ret = NULL;
	if (!first_pool(src, &p, &global))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: no poolalloc pool found",
				       hd_target_name(src->t));
	struct pool *pools = calloc(MAX_POOLS, sizeof(*pools));
	if (!pools)
		return &hd_error_no_memory;
	while (p) {
		uint64_t w[6];
		struct hd_error *err = hd_target_read(src->t, p, w, sizeof(w));
		if (err || w[0] != POOL_MAGIC) {
			hd_error_destroy(err);
			hd_heap_problem_add(h, p,
					    "pool 0x%llx is unreadable or has no pool magic; later pools are missing",
					    (unsigned long long)p);
			break;
		}
		if (*n == MAX_POOLS) {
			hd_heap_problem_add(h, p, "more than %d pools; the rest are skipped",
					    MAX_POOLS);
			break;
		}
		bool seen = false;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = pools[i].addr == p;
		if (seen) {
			hd_heap_problem_add(h, p, "the pool list loops at 0x%llx",
					    (unsigned long long)p);
			break;
		}
		struct pool pl = {.addr = p, .size = w[2], .top = w[3],
				  .free_list = w[4], .nblocks = w[5]};
		if (pl.size > MAX_POOL_SIZE || pl.top > pl.size ||
		    pl.top < POOL_HEADER) {
			hd_heap_problem_add(h, p,
					    "pool 0x%llx: size %llu or top %llu is impossible; its blocks are skipped",
					    (unsigned long long)p,
					    (unsigned long long)pl.size,
					    (unsigned long long)pl.top);
			pl.top = POOL_HEADER;
		}
		pools[(*n)++] = pl;
		p = w[1];
	}
	hd_qsort(pools, *n, sizeof(*pools), pool_cmp);
	*ret = pools;
	return NULL;
}

// Blocks of one pool, from its headers.
static struct hd_error *walk_pool(struct hd_target *t, struct hd_heap *h,
				  const struct pool *pl, uint16_t region)
{
	struct hd_view v;
	struct hd_error *err = hd_target_view(t, pl->addr, pl->top, &v);
	if (err) {
		hd_heap_problem_add(h, pl->addr, "pool 0x%llx is unreadable: %s",
				    (unsigned long long)pl->addr, err->message);
		hd_error_destroy(err);
		return NULL;
	}
	uint64_t off = POOL_HEADER;
	while (off + BLOCK_HEADER <= pl->top) {
		uint32_t size, state;
		memcpy(&size, v.data + off, 4);
		memcpy(&state, v.data + off + 4, 4);
		if (size < 2 * BLOCK_HEADER || size % 16 || size > pl->top - off ||
		    (state != BLOCK_USED && state != BLOCK_FREE)) {
			hd_heap_problem_add(h, pl->addr + off,
					    "pool 0x%llx: block header at 0x%llx is damaged (size %u, state 0x%x); the rest of the pool is skipped",
					    (unsigned long long)pl->addr,
					    (unsigned long long)(pl->addr + off), size, state);
			break;
		}
		bool used = state == BLOCK_USED;
		if (!hd_heap_add(h, pl->addr + off + BLOCK_HEADER, size,
				 used ? HD_STATE_USED : HD_STATE_FREE,
				 used ? LIST_NONE : LIST_UNLISTED, region, 0)) {
			hd_view_deinit(&v);
			return &hd_error_no_memory;
		}
		off += size;
	}
	hd_view_deinit(&v);
	return NULL;
}

// Marks the blocks on each pool's free list; a free block on none stays
// "unlisted" and is a problem.
static void walk_free_lists(struct hd_target *t, struct hd_heap *h,
			    const struct pool *pools, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t b = pools[i].free_list;
		for (uint64_t k = 0; b; k++) {
			int64_t id = hd_heap_find_exact(h, b + BLOCK_HEADER);
			if (k > pools[i].nblocks || id < 0 ||
			    hd_heap_state(h, (size_t)id) != HD_STATE_FREE ||
			    hd_heap_block_list(h, (size_t)id) != LIST_UNLISTED) {
				hd_heap_problem_add(h, b,
						    "pool 0x%llx: free list entry 0x%llx is not a free block of it (or the list loops); the rest of the list is skipped",
						    (unsigned long long)pools[i].addr,
						    (unsigned long long)b);
				break;
			}
			hd_heap_set(h, (size_t)id, HD_STATE_FREE, LIST_FREE);
			if (!read64(t, b + BLOCK_HEADER, &b))
				break;
		}
	}
	for (size_t id = 0; id < h->num_blocks; id++)
		if (hd_heap_state(h, id) == HD_STATE_FREE &&
		    hd_heap_block_list(h, id) == LIST_UNLISTED)
			hd_heap_problem_add(h, h->addr[id],
					    "block 0x%llx is free but on no free list",
					    (unsigned long long)h->addr[id]);
}

static struct hd_error *walk(const struct hd_heap_source *src,
			     struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_poolalloc, 4, shapes, 1, lists,
			NUM_LISTS);
	h->info.method = "symbol";
	struct pool *pools;
	size_t n;
	struct hd_error *err = read_pools(src, h, &pools, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		const struct pool *pl = &pools[i];
		struct hd_region r = {.addr = pl->addr, .kind = "pool",
				      .primary = i == 0, .system_bytes = pl->size,
				      .num_segments = 1};
		uint16_t region = hd_heap_add_region(h, &r);
		struct hd_heap_segment s = {.start = pl->addr,
					    .end = pl->addr + pl->size,
					    .region = region};
		if (region == HD_REGION_NONE || !hd_heap_add_segment(h, &s) ||
		    !hd_heap_add_metadata(h, pl->addr, pl->addr + POOL_HEADER,
					  "struct pool", region) ||
		    !hd_heap_fact_uint(h, region, "unused_bytes", pl->size - pl->top))
			err = &hd_error_no_memory;
		if (!err)
			err = walk_pool(src->t, h, pl, region);
	}
	if (!err) {
		walk_free_lists(src->t, h, pools, n);
		if (!hd_heap_fact_uint(h, HD_NO_REGION, "pools", n))
			err = &hd_error_no_memory;
	}
	free(pools);
	return err;
}

// my_alloc rounds a request n up to (n + 16 + 15) & ~15, at least 32.
static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	uint64_t e = hd_heap_extent(h, id);
	return e <= 32 ? 0 : e - 31;
}

static const char *block_label(const struct hd_heap *h, size_t id)
{
	(void)h;
	(void)id;
	return "free pool block";
}

const struct hd_heap_backend hd_heap_backend_poolalloc = {
	.name = "poolalloc",
	.detect = detect,
	.walk = walk,
	.min_request = min_request,
	.request_slack = 16,
	.block_label = block_label,
	.labels = {
		.allocator = "poolalloc",
		.metadata = "pool headers",
		.internal = "pool internals",
		.free = "free pool blocks",
		.free_block = "free pool block",
	},
};
