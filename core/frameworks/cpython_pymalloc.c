// pymalloc in the cpython framework module: the blocks phase. Arenas are
// found by their pool headers (the arena table is a static of obmalloc.c,
// reachable from no exported symbol), each pool's slots become blocks.
#include <inttypes.h>
#include <stdlib.h>

#include "frameworks/cpython_internal.h"
#include "util/sort.h"

struct pool {
	uint64_t addr;
	uint32_t arenaindex;
};

// A pool header that says what 3.11's pymalloc writes: every field
// consistent with the size class (see pymalloc_pool_extend and
// allocate_from_new_pool in obmalloc.c).
static bool pool_header_valid(const uint8_t *h, uint64_t p)
{
	uint32_t szidx = cpy_ld32(h + HD_PYMALLOC_POOL_SZIDX);
	if (szidx >= HD_PYMALLOC_SIZE_CLASSES)
		return false;
	uint32_t size = (szidx + 1) * HD_PYMALLOC_ALIGNMENT;
	uint32_t next = cpy_ld32(h + HD_PYMALLOC_POOL_NEXTOFFSET);
	uint32_t maxnext = cpy_ld32(h + HD_PYMALLOC_POOL_MAXNEXTOFFSET);
	if (maxnext != HD_PYMALLOC_POOL_SIZE - size)
		return false;
	// A new pool hands out its first block and sets nextoffset past the
	// second; it grows by one block at a time up to one past maxnext.
	if (next < HD_PYMALLOC_POOL_OVERHEAD + 2 * size ||
	    next > maxnext + size ||
	    (next - HD_PYMALLOC_POOL_OVERHEAD) % size != 0)
		return false;
	uint64_t nslots = (next - HD_PYMALLOC_POOL_OVERHEAD) / size;
	uint64_t count = cpy_ld32(h + HD_PYMALLOC_POOL_COUNT);
	if (count > nslots)
		return false;
	uint64_t fb = cpy_ld64(h + HD_PYMALLOC_POOL_FREEBLOCK);
	if (fb && (fb < p + HD_PYMALLOC_POOL_OVERHEAD || fb >= p + next ||
		   (fb - p - HD_PYMALLOC_POOL_OVERHEAD) % size != 0))
		return false;
	// A full pool has no free block, a pool with a free block is not full.
	if (!fb && count != nslots && next <= maxnext)
		return false;
	return true;
}

static int pool_cmp(const void *a, const void *b)
{
	const struct pool *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

// Pools: every POOL_SIZE-aligned address of anonymous writable memory
// whose header validates. The arena table (arenas, maxarenas) is a static
// of obmalloc.c, reachable from no exported symbol, so this is how the
// arenas are found without debug info.
static struct hd_error *find_pools(struct hd_fw *fw, struct pool **ret,
				   size_t *num)
{
	struct hd_target *t = hd_fw_target(fw);
	struct pool *pools = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		if (!m->readable || (m->prot & (HD_PROT_READ | HD_PROT_WRITE)) !=
					    (HD_PROT_READ | HD_PROT_WRITE) ||
		    (m->path && m->path[0]))
			continue;
		uint64_t p = (m->start + HD_PYMALLOC_POOL_SIZE - 1) &
			     ~(uint64_t)(HD_PYMALLOC_POOL_SIZE - 1);
		for (; p + HD_PYMALLOC_POOL_SIZE <= m->end;
		     p += HD_PYMALLOC_POOL_SIZE) {
			uint8_t h[HD_PYMALLOC_POOL_OVERHEAD];
			if (!cpy_read_ok(fw, p, h, sizeof(h)) ||
			    !pool_header_valid(h, p))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				struct pool *np = realloc(pools,
							  cap * sizeof(*np));
				if (!np) {
					free(pools);
					return &hd_error_no_memory;
				}
				pools = np;
			}
			pools[n].addr = p;
			pools[n].arenaindex =
				cpy_ld32(h + HD_PYMALLOC_POOL_ARENAINDEX);
			n++;
		}
	}
	hd_qsort(pools, n, sizeof(*pools), pool_cmp);
	*ret = pools;
	*num = n;
	return NULL;
}

static struct hd_error *add_arena(struct hd_fw *fw, uint64_t start,
				  uint64_t end)
{
	struct cpy_priv *p = cpy_priv_of(fw);
	if (p->num_arenas == p->cap_arenas) {
		size_t cap = p->cap_arenas ? 2 * p->cap_arenas : 16;
		struct cpy_priv *np = realloc(p, sizeof(*p) +
						 cap * sizeof(p->arenas[0]));
		if (!np)
			return &hd_error_no_memory;
		np->cap_arenas = cap;
		*hd_fw_private(fw) = np;
		p = np;
	}
	p->arenas[p->num_arenas].start = start;
	p->arenas[p->num_arenas].end = end;
	p->num_arenas++;
	return hd_fw_add_region(fw, start, end, "pymalloc arenas");
}

// The blocks of one pool: its header, then one block per carved slot (free
// when on the pool's free list), then the never-carved rest as one free
// block. A free list that leaves the pool or loops, or a count that does
// not match it, makes the whole pool suspect: it is skipped.
static struct hd_error *pool_blocks(struct hd_fw *fw, uint64_t p)
{
	uint8_t h[HD_PYMALLOC_POOL_OVERHEAD];
	if (!cpy_read_ok(fw, p, h, sizeof(h)) || !pool_header_valid(h, p)) {
		hd_fw_warn(fw, p, "pymalloc pool header does not validate");
		return NULL;
	}
	uint32_t size = (cpy_ld32(h + HD_PYMALLOC_POOL_SZIDX) + 1) *
			HD_PYMALLOC_ALIGNMENT;
	uint32_t next = cpy_ld32(h + HD_PYMALLOC_POOL_NEXTOFFSET);
	uint32_t carved = (next - HD_PYMALLOC_POOL_OVERHEAD) / size;
	uint32_t nslots = (HD_PYMALLOC_POOL_SIZE - HD_PYMALLOC_POOL_OVERHEAD) /
			  size;
	if (carved > nslots)
		carved = nslots;
	uint8_t is_free[(HD_PYMALLOC_POOL_SIZE - HD_PYMALLOC_POOL_OVERHEAD) /
			HD_PYMALLOC_ALIGNMENT] = {0};
	uint32_t nfree = 0;
	uint64_t f = cpy_ld64(h + HD_PYMALLOC_POOL_FREEBLOCK);
	uint64_t base = p + HD_PYMALLOC_POOL_OVERHEAD;
	while (f) {
		if (f < base || f >= base + (uint64_t)carved * size ||
		    (f - base) % size != 0) {
			hd_fw_warn(fw, p, "pymalloc pool free list leaves the "
				   "pool at 0x%" PRIx64 "; pool skipped", f);
			return NULL;
		}
		uint32_t k = (uint32_t)((f - base) / size);
		if (is_free[k]) {
			hd_fw_warn(fw, p, "pymalloc pool free list loops; pool "
				   "skipped");
			return NULL;
		}
		is_free[k] = 1;
		nfree++;
		if (!cpy_read_u64(fw, f, &f)) {
			hd_fw_warn(fw, p, "pymalloc pool free list unreadable; "
				   "pool skipped");
			return NULL;
		}
	}
	uint32_t count = cpy_ld32(h + HD_PYMALLOC_POOL_COUNT);
	if (count != carved - nfree) {
		hd_fw_warn(fw, p, "pymalloc pool counts %u blocks, its free "
			   "list leaves %u; pool skipped", count,
			   carved - nfree);
		return NULL;
	}
	struct hd_error *err = hd_fw_add_block(fw, p, HD_PYMALLOC_POOL_OVERHEAD,
					       HD_STATE_INTERNAL,
					       "pymalloc pool header");
	for (uint32_t k = 0; !err && k < carved; k++)
		err = hd_fw_add_block(fw, base + (uint64_t)k * size, size,
				      is_free[k] ? HD_STATE_FREE :
						   HD_STATE_USED, NULL);
	// Never-carved slots are handed out lazily by pymalloc_pool_extend:
	// one free block rather than one per slot that was never a block.
	if (!err && carved < nslots)
		err = hd_fw_add_block(fw, base + (uint64_t)carved * size,
				      (uint64_t)(nslots - carved) * size,
				      HD_STATE_FREE, NULL);
	if (!err)
		cpy_priv_of(fw)->pools++;
	return err;
}

struct hd_error *cpy_blocks(struct hd_fw *fw)
{
	struct pool *pools;
	size_t n;
	struct hd_error *err = find_pools(fw, &pools, &n);
	if (err)
		return err;
	// An arena: consecutive pools with the same arenaindex within
	// ARENA_SIZE. Its mmap may start up to a pool before the first pool
	// (pools are POOL_SIZE-aligned inside it); those bytes stay outside.
	size_t i = 0;
	while (!err && i < n) {
		size_t j = i + 1;
		while (j < n && pools[j].arenaindex == pools[i].arenaindex &&
		       pools[j].addr + HD_PYMALLOC_POOL_SIZE - pools[i].addr <=
			       HD_PYMALLOC_ARENA_SIZE)
			j++;
		err = add_arena(fw, pools[i].addr,
				pools[j - 1].addr + HD_PYMALLOC_POOL_SIZE);
		for (size_t k = i; !err && k < j; k++)
			err = pool_blocks(fw, pools[k].addr);
		i = j;
	}
	free(pools);
	if (err)
		return err;
	struct cpy_priv *p = cpy_priv_of(fw);
	hd_fw_note(fw, "pymalloc: %zu arenas, %" PRIu64 " pools (found by "
		   "their headers: the arena table is not reachable from "
		   "exported symbols)", p->num_arenas, p->pools);
	if (!n)
		hd_fw_warn(fw, 0, "no pymalloc pool found (PYTHONMALLOC=malloc?)");
	return NULL;
}

// Binary search of the arenas, which cpy_blocks added in address order.
bool cpy_in_arena(struct hd_fw *fw, uint64_t addr)
{
	struct cpy_priv *p = cpy_priv_of(fw);
	size_t lo = 0, hi = p->num_arenas;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < p->arenas[mid].start)
			hi = mid;
		else if (addr >= p->arenas[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}
