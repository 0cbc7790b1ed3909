// Unit tests of core/graph (address index, roots, conservative scanner) and
// of the dominators computed over its graph (core/dom/analysis.c), on
// synthetic address spaces: a callback target whose memory is buffers this
// file owns at fake addresses, and a block table built with hd_heap_push.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapdom.h"
#include "graph/graph_internal.h"
#include "graph/refs.h"
#include "heap/glibc/glibc_internal.h"
#include "util/sort.h"
#include "check_util.h"

// Check records every passing ck_assert through a pipe; loops over millions
// of addresses use these, which report only failures.
#define expect_msg(cond, ...)                                                 \
	do {                                                                  \
		if (!(cond))                                                  \
			ck_abort_msg(__VA_ARGS__);                            \
	} while (0)

// ------------------------------------------------------------------ random

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
}

// splitmix64: the same sequence everywhere.
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t n)
{
	return rng_next() % n;
}

// ------------------------------------------------------- synthetic memory

#define HEAP 0x10000000ull        // arena heap segment
#define HEAP_SIZE 0x10000ull
#define MMAP 0x20000000ull        // two adjacent mmapped chunks
#define MMAP_SIZE 0x3000ull
#define ANON 0x30000000ull        // anonymous writable data
#define ANON_SIZE 0x1000ull
#define RO 0x40000000ull          // read-only file mapping
#define RO_SIZE 0x1000ull
#define NOREAD 0x50000000ull      // writable, but the "core" lacks it
#define NOREAD_SIZE 0x1000ull
#define STK 0x7ff000000000ull     // a thread's stack
#define STK_SIZE 0x10000ull
#define RSP (STK + 0x8000)
// Bytes below rsp the stack root still covers, as core/graph/roots.c has
// it: the x86-64 red zone, where leaf functions keep locals (docs/cli.md).
// LIVE is where a thread's live stack begins.
#define RED_ZONE 128
#define LIVE (RSP - RED_ZONE)
#define TID 1234

struct region {
	uint64_t addr;
	size_t len;
	uint8_t *buf;
};

struct world {
	struct region regions[8];
	size_t num_regions;
	struct hd_target *t;
	struct hd_heap *h;
	struct hd_debuginfo *di;
	struct hd_graph *g;
	struct hd_dom *d;
};

// An empty directory for separate debug files (made once by main, so a
// failing test leaves nothing behind): no module, no debug info.
static char debug_dir[64];

// Serves bytes from the regions; anything else is a fault, as the embedding
// program's reader would say.
static struct hd_error *world_read(void *arg, uint64_t addr, void *buf,
				   size_t len)
{
	struct world *w = arg;
	for (size_t i = 0; i < w->num_regions; i++) {
		const struct region *r = &w->regions[i];
		if (addr >= r->addr && addr - r->addr <= r->len &&
		    len <= r->len - (addr - r->addr)) {
			memcpy(buf, r->buf + (addr - r->addr), len);
			return NULL;
		}
	}
	return hd_error_at(HD_ERROR_FAULT, addr, "no memory at 0x%" PRIx64,
			   addr);
}

static void add_region(struct world *w, uint64_t addr, size_t len)
{
	ck_assert_uint_lt(w->num_regions, 8);
	struct region *r = &w->regions[w->num_regions++];
	r->addr = addr;
	r->len = len;
	r->buf = calloc(1, len);
	ck_assert_ptr_nonnull(r->buf);
}

static void add_mapping(struct world *w, uint64_t start, uint64_t len,
			uint32_t prot, const char *path, bool readable)
{
	struct hd_mapping m = {.start = start, .end = start + len, .prot = prot,
			       .path = (char *)path, .readable = readable};
	ck_assert_no_error(hd_target_add_mapping(w->t, &m));
	if (readable)
		add_region(w, start, len);
}

// Writes len bytes at any (even unaligned) address of a region.
static void put_bytes(struct world *w, uint64_t addr, const void *val, size_t len)
{
	for (size_t i = 0; i < w->num_regions; i++) {
		struct region *r = &w->regions[i];
		if (addr >= r->addr && addr + len <= r->addr + r->len) {
			memcpy(r->buf + (addr - r->addr), val, len);
			return;
		}
	}
	ck_abort_msg("put: 0x%" PRIx64 " is in no region", addr);
}

static void put64(struct world *w, uint64_t addr, uint64_t val)
{
	put_bytes(w, addr, &val, 8);
}

static void put32(struct world *w, uint64_t addr, uint32_t val)
{
	put_bytes(w, addr, &val, 4);
}

// The address space every scenario shares: an arena heap, two mmapped
// chunks, anonymous data, a read-only file, an unreadable writable range
// and a stack, plus one thread whose rsp is RSP.
static void world_init(struct world *w, uint64_t rbx)
{
	memset(w, 0, sizeof(*w));
	ck_assert_no_error(hd_target_create_callback(world_read, w, &w->t));
	enum { RW = HD_PROT_READ | HD_PROT_WRITE };
	add_mapping(w, HEAP, HEAP_SIZE, RW, "[heap]", true);
	add_mapping(w, MMAP, MMAP_SIZE, RW, NULL, true);
	add_mapping(w, ANON, ANON_SIZE, RW, NULL, true);
	add_mapping(w, RO, RO_SIZE, HD_PROT_READ, "/fake/ro.so", true);
	add_mapping(w, NOREAD, NOREAD_SIZE, RW, NULL, false);
	add_mapping(w, STK, STK_SIZE, RW, "[stack]", true);
	struct hd_thread th = {.tid = TID, .has_regs = true};
	th.regs.rsp = RSP;
	th.regs.rbx = rbx;
	th.regs.fs_base = 0;
	ck_assert_no_error(hd_target_add_thread(w->t, &th));
	ck_assert_no_error(hd_heap_alloc(&w->h));
	glibc_heap_declare(w->h);
	w->h->num_segments = 2;
	w->h->segments = calloc(2, sizeof(*w->h->segments));
	ck_assert_ptr_nonnull(w->h->segments);
	w->h->segments[0] = (struct hd_heap_segment){HEAP, HEAP + HEAP_SIZE, 0,
						     false};
	w->h->segments[1] = (struct hd_heap_segment){MMAP, MMAP + MMAP_SIZE,
						     HD_NO_REGION, true};
}

static void add_frame(struct world *w, unsigned level, uint64_t sp,
		      uint64_t caller_sp, const char *name)
{
	struct hd_frame f = {.tid = TID, .level = level, .sp = sp,
			     .caller_sp = caller_sp, .name = (char *)name};
	ck_assert_no_error(hd_target_add_frame(w->t, &f));
}

// Blocks must be pushed in address order.
static size_t push_block(struct world *w, uint64_t chunk, uint64_t size,
			 enum hd_block_state state)
{
	bool mm = chunk >= MMAP && chunk < MMAP + MMAP_SIZE;
	enum glibc_list list = state == HD_STATE_FREE ? HD_LIST_TCACHE
							: HD_LIST_NONE;
	ck_assert(hd_heap_push(w->h, chunk, size, state, list,
			       mm ? HD_ARENA_NONE : 0, mm));
	return hd_heap_num_blocks(w->h) - 1;
}

static void world_build(struct world *w)
{
	ck_assert_no_error(hd_debuginfo_create(
		w->t, &(struct hd_debuginfo_options){.debug_dir = debug_dir},
		&w->di));
	ck_assert_no_error(hd_graph_build(w->t, w->di, w->h, &w->g));
	struct hd_graph_info info;
	hd_graph_get_info(w->g, &info);
	ck_assert_uint_eq(info.unreadable_roots, 0);
	ck_assert_uint_eq(hd_graph_num_vertices(w->g),
			  1 + hd_graph_num_roots(w->g) + hd_heap_num_blocks(w->h));
}

static void world_destroy(struct world *w)
{
	hd_dom_destroy(w->d);
	hd_graph_destroy(w->g);
	hd_debuginfo_destroy(w->di);
	hd_heap_destroy(w->h);
	hd_target_destroy(w->t);
	for (size_t i = 0; i < w->num_regions; i++)
		free(w->regions[i].buf);
}

static uint64_t baddr(const struct world *w, size_t id)
{
	struct hd_block b;
	hd_heap_block(w->h, id, &b);
	return b.addr;
}

static uint64_t busable(const struct world *w, size_t id)
{
	struct hd_block b;
	hd_heap_block(w->h, id, &b);
	return b.usable;
}

static uint64_t bchunk(const struct world *w, size_t id)
{
	struct hd_block b;
	hd_heap_block(w->h, id, &b);
	return b.extent;
}

static uint32_t bv(const struct world *w, size_t id)
{
	return hd_graph_block_vertex(w->g, id);
}

// The root called name whose range starts at start (any start if
// start == 0); aborts if there is none.
static size_t find_root(const struct world *w, const char *name,
			uint64_t start)
{
	for (size_t i = 0; i < hd_graph_num_roots(w->g); i++) {
		const struct hd_root *r = hd_graph_root(w->g, i);
		if (strcmp(r->name, name) == 0 && (!start || r->start == start))
			return i;
	}
	ck_abort_msg("no root \"%s\" at 0x%" PRIx64, name, start);
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

// The successors of v are exactly exp[0..n) (in any order, no duplicates).
static void check_succ_at(const struct world *w, uint32_t v,
			  const uint32_t *exp, size_t n, const char *what,
			  int line)
{
	const uint32_t *got;
	size_t m;
	hd_graph_successors(w->g, v, &got, &m);
	uint32_t a[64], b[64];
	ck_assert_uint_le(m, 64);
	ck_assert_uint_le(n, 64);
	if (m)
		memcpy(a, got, m * sizeof(*a));
	if (n)
		memcpy(b, exp, n * sizeof(*b));
	qsort(a, m, sizeof(*a), u32_cmp);
	qsort(b, n, sizeof(*b), u32_cmp);
	char gs[512] = "", es[512] = "";
	for (size_t i = 0; i < m; i++)
		snprintf(gs + strlen(gs), sizeof(gs) - strlen(gs), " %u%s",
			 a[i] & ~HD_GRAPH_INTERIOR,
			 a[i] & HD_GRAPH_INTERIOR ? "i" : "");
	for (size_t i = 0; i < n; i++)
		snprintf(es + strlen(es), sizeof(es) - strlen(es), " %u%s",
			 b[i] & ~HD_GRAPH_INTERIOR,
			 b[i] & HD_GRAPH_INTERIOR ? "i" : "");
	ck_assert_msg(m == n && memcmp(a, b, n * sizeof(*a)) == 0,
		      "line %d: %s (vertex %u): successors {%s } expected {%s }",
		      line, what, v, gs, es);
}
#define check_succ(w, v, what, ...)                                           \
	do {                                                                  \
		const uint32_t _e[] = {__VA_ARGS__};                          \
		check_succ_at(w, v, _e, sizeof(_e) / sizeof(_e[0]), what,     \
			      __LINE__);                                      \
	} while (0)
#define check_no_succ(w, v, what) check_succ_at(w, v, NULL, 0, what, __LINE__)

// ------------------------------------------------------------------ index

// Every address from lo to hi: the index agrees with hd_heap_find.
static void check_index_range(const struct hd_index *ix,
			      const struct hd_heap *h, uint64_t lo, uint64_t hi)
{
	for (uint64_t p = lo; p < hi; p++) {
		int64_t a = hd_index_lookup(ix, p), b = hd_heap_find(h, p);
		expect_msg(a == b, "lookup 0x%" PRIx64 ": index %" PRId64
			   ", hd_heap_find %" PRId64, p, a, b);
	}
}

START_TEST(test_index_empty)
{
	struct hd_heap *h;
	ck_assert_no_error(hd_heap_alloc(&h));
	glibc_heap_declare(h);
	struct hd_index ix;
	ck_assert_no_error(hd_index_init(&ix, h));
	ck_assert_uint_eq(ix.num_ranges, 0);
	const uint64_t probes[] = {0, 1, 16, 0x10000000, UINT64_MAX};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		ck_assert_int_eq(hd_index_lookup(&ix, probes[i]), -1);
	hd_index_deinit(&ix);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_index_small)
{
	// Adjacent runs, gaps of various sizes (smaller and larger than a
	// granule), minimum-size chunks, big chunks spanning many granules,
	// mmapped chunks (adjacent to each other and alone), free and
	// internal blocks.
	static const struct {
		uint64_t chunk, size;
		enum hd_block_state state;
		bool mmapped;
	} spec[] = {
		{0x10000000, 0x20, HD_STATE_USED, false},
		{0x10000020, 0x20, HD_STATE_USED, false},
		{0x10000040, 0x20, HD_STATE_FREE, false},
		{0x10000060, 0x20, HD_STATE_USED, false},
		{0x10000080, 0x290, HD_STATE_INTERNAL, false},
		{0x10000310, 0x30, HD_STATE_USED, false},
		{0x10000350, 0x20, HD_STATE_USED, false},  // 16-byte gap before
		{0x10000400, 0x1010, HD_STATE_USED, false}, // sub-granule gap
		{0x10001410, 0x20, HD_STATE_USED, false},
		{0x10001430, 0x20, HD_STATE_FREE, false},
		{0x10002000, 0x80, HD_STATE_USED, false},   // granule-aligned
		{0x10002080, 0x80, HD_STATE_USED, false},
		{0x10002100, 0x10, HD_STATE_INTERNAL, false}, // fencepost
		{0x10002110, 0x10, HD_STATE_INTERNAL, false},
		{0x20000000, 0x2000, HD_STATE_USED, true},
		{0x20002000, 0x1000, HD_STATE_USED, true},  // adjacent mmapped
		{0x20010000, 0x21000, HD_STATE_USED, true},
		{0x30000010, 0x20, HD_STATE_USED, false},   // 16 mod granule
		{0x30000030, 0x40, HD_STATE_USED, false},
	};
	size_t n = sizeof(spec) / sizeof(spec[0]);
	struct hd_heap *h;
	ck_assert_no_error(hd_heap_alloc(&h));
	glibc_heap_declare(h);
	for (size_t i = 0; i < n; i++)
		ck_assert(hd_heap_push(h, spec[i].chunk, spec[i].size,
				       spec[i].state, HD_LIST_NONE,
				       spec[i].mmapped ? HD_ARENA_NONE : 0,
				       spec[i].mmapped));
	struct hd_index ix;
	ck_assert_no_error(hd_index_init(&ix, h));
	// 0x10000000-0x10000350, 0x10000350-, 0x10000400-, 0x10002000-,
	// mmapped 0x20000000-0x20003000, 0x20010000-, 0x30000010-.
	ck_assert_uint_eq(ix.num_ranges, 7);
	for (size_t i = 0; i < n; i++) {
		// Every byte of every chunk, and the bytes around it.
		uint64_t lo = spec[i].chunk - 0x200, hi = spec[i].chunk + spec[i].size + 0x200;
		check_index_range(&ix, h, lo, hi);
		// A block's first usable byte and its chunk's last (a 16-byte
		// fencepost has no usable byte inside its chunk).
		if (spec[i].size < 0x20)
			continue;
		ck_assert_int_eq(hd_index_lookup(&ix, spec[i].chunk + 16), (int64_t)i);
		ck_assert_int_eq(hd_index_lookup(&ix, spec[i].chunk + spec[i].size - 1),
				 (int64_t)i);
	}
	check_index_range(&ix, h, 0x0fffff00, 0x10003000);
	const uint64_t far[] = {0, 1, 0xffff, 0x0fffffff, 0x2fffffff,
				0x30000070, 0x40000000, UINT64_MAX - 1,
				UINT64_MAX};
	for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++)
		ck_assert_int_eq(hd_index_lookup(&ix, far[i]), hd_heap_find(h, far[i]));
	hd_index_deinit(&ix);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_index_random)
{
	// 1M blocks with random sizes (mostly small, some spanning many
	// granules) and random gaps (mostly none, some small, a few huge).
	enum { N = 1000000, PROBES = 200000 };
	rng_seed(42);
	struct hd_heap *h;
	ck_assert_no_error(hd_heap_alloc(&h));
	glibc_heap_declare(h);
	ck_assert(hd_heap_reserve(h, N));
	uint64_t p = 0x100000000ull;
	for (size_t i = 0; i < N; i++) {
		uint64_t r = rng_below(1000), size;
		if (r < 800)
			size = 32 + 16 * rng_below(31);
		else if (r < 990)
			size = 512 + 16 * rng_below(224);
		else
			size = 4096 + 16 * rng_below(3840);
		uint64_t g = rng_below(1000), gap = 0;
		if (g >= 950 && g < 995)
			gap = 16 * (1 + rng_below(256));
		else if (g >= 995)
			gap = 16 * (1 + rng_below(1 << 26));
		p += gap;
		bool mm = rng_below(200) == 0;
		enum hd_block_state st = (enum hd_block_state)rng_below(3);
		ck_assert(hd_heap_push(h, p, size, st, HD_LIST_NONE,
				       mm ? HD_ARENA_NONE : 0, mm));
		p += size;
	}
	uint64_t lo = h->addr[0] - 16, hi = p;
	struct hd_index ix;
	ck_assert_no_error(hd_index_init(&ix, h));
	ck_assert_uint_gt(ix.num_ranges, 1000);
	// Every block's first usable byte, its chunk's last byte and the
	// bytes just outside the chunk.
	for (size_t i = 0; i < N; i++) {
		uint64_t c = h->addr[i] - 16, e = c + hd_heap_extent(h, i);
		expect_msg(hd_index_lookup(&ix, c + 16) == (int64_t)i &&
			   hd_index_lookup(&ix, e - 1) == (int64_t)i &&
			   hd_index_lookup(&ix, c - 1) == hd_heap_find(h, c - 1) &&
			   hd_index_lookup(&ix, e) == hd_heap_find(h, e),
			   "block %zu at 0x%" PRIx64 ": boundaries disagree", i, c);
	}
	// Random addresses: half near a random block, half anywhere in (and a
	// little around) the span.
	for (size_t k = 0; k < PROBES; k++) {
		uint64_t q;
		if (k & 1) {
			size_t i = rng_below(N);
			uint64_t c = h->addr[i] - 16, len = hd_heap_extent(h, i);
			q = c - 64 + rng_below(len + 128);
		} else {
			q = lo - 4096 + rng_below(hi - lo + 8192);
		}
		int64_t a = hd_index_lookup(&ix, q), b = hd_heap_find(h, q);
		expect_msg(a == b, "lookup 0x%" PRIx64 ": index %" PRId64
			   ", hd_heap_find %" PRId64, q, a, b);
		bool exact;
		a = hd_index_find(&ix, q, &exact);
		expect_msg(a < 0 || exact == (q == h->addr[a]),
			   "lookup 0x%" PRIx64 ": exact %d", q, exact);
	}
	// Batches (the scan's look-ups) agree with one-by-one look-ups, at
	// block starts (the cells alone), inside blocks and around them.
	for (size_t k = 0; k < PROBES / HD_INDEX_BATCH; k++) {
		uint64_t vals[HD_INDEX_BATCH];
		int64_t ids[HD_INDEX_BATCH];
		bool ex[HD_INDEX_BATCH];
		size_t n = 1 + rng_below(HD_INDEX_BATCH);
		for (size_t j = 0; j < n; j++) {
			size_t i = rng_below(N);
			vals[j] = rng_below(2) ? h->addr[i]
				  : h->addr[i] - 64 + rng_below(hd_heap_extent(h, i) + 128);
		}
		hd_index_find_batch(&ix, vals, n, ids, ex);
		for (size_t j = 0; j < n; j++) {
			int64_t b = hd_heap_find(h, vals[j]);
			expect_msg(ids[j] == b && (b < 0 || ex[j] == (vals[j] == h->addr[b])),
				   "batch lookup 0x%" PRIx64 ": %" PRId64 " (exact %d), hd_heap_find %" PRId64,
				   vals[j], ids[j], ex[j], b);
		}
	}
	hd_index_deinit(&ix);
	hd_heap_destroy(h);
}
END_TEST

START_TEST(test_index_other_shapes)
{
	// A table as another allocator's backend declares it: extents in
	// 8-byte units, slab blocks with no header (jemalloc, mimalloc) and
	// blocks with a 4-byte header and an 8-byte trailer; the index and
	// hd_heap_find agree on every address, and extents start where the
	// shape says.
	static const struct hd_heap_shape shapes[] = {
		{.head = 0, .tail = 0}, {.head = 4, .tail = -8},
	};
	static const struct hd_free_list lists[] = {
		{"none", NULL, false}, {"slab free", "free: slabs", false},
	};
	enum { N = 20000 };
	rng_seed(7);
	struct hd_heap *h;
	ck_assert_no_error(hd_heap_alloc(&h));
	hd_heap_declare(h, NULL, 3, shapes, 2, lists, 2);
	uint64_t p = 0x7f0000000000ull;
	for (size_t i = 0; i < N; i++) {
		unsigned shape = rng_below(4) == 0;
		uint64_t size = 8 * (1 + rng_below(shape ? 64 : 8));
		if (shape && size < 16)
			size = 16;
		if (i && rng_below(50) == 0)
			p += 8 * (1 + rng_below(1000));
		bool free_b = rng_below(5) == 0;
		ck_assert(hd_heap_add(h, p + shapes[shape].head, size,
				      free_b ? HD_STATE_FREE : HD_STATE_USED,
				      free_b ? 1 : 0, 0, shape));
		p += size;
	}
	struct hd_block b;
	hd_heap_block(h, 0, &b);
	ck_assert_uint_eq(b.start, 0x7f0000000000ull);
	ck_assert_uint_eq(b.start + shapes[h->flags[0] >> HD_FLAG_SHAPE_SHIFT].head,
			  b.addr);
	ck_assert_uint_eq(hd_heap_min_request(h, 0), 0); // no backend: unknown
	struct hd_index ix;
	ck_assert_no_error(hd_index_init(&ix, h));
	for (size_t i = 0; i < N; i++) {
		hd_heap_block(h, i, &b);
		uint64_t want_usable = (h->flags[i] >> HD_FLAG_SHAPE_SHIFT)
			? b.extent - 12 : b.extent;
		expect_msg(b.usable == want_usable && b.start == hd_heap_extent_start(h, i) &&
			   (b.state != HD_STATE_FREE || !strcmp(b.list_name, "slab free")),
			   "block %zu: usable %" PRIu64 " extent %" PRIu64, i, b.usable, b.extent);
		for (uint64_t q = b.start - 1; q <= b.start + b.extent; q++) {
			int64_t x = hd_index_lookup(&ix, q), y = hd_heap_find(h, q);
			bool in = q >= b.addr && q < b.addr + b.usable;
			expect_msg(x == y && (!in || x == (int64_t)i),
				   "lookup 0x%" PRIx64 " (block %zu): index %" PRId64
				   ", hd_heap_find %" PRId64, q, i, x, y);
		}
		expect_msg(hd_heap_find_extent(h, b.start) == (int64_t)i &&
			   hd_heap_find_exact(h, b.addr) == (int64_t)i,
			   "block %zu: extent or exact lookup", i);
	}
	hd_index_deinit(&ix);
	hd_heap_destroy(h);
}
END_TEST

// ---------------------------------------------------------------- scanner

// Targets, then one source block per rule (0x50 chunks: 9 scanned words).
enum {
	T0, T1, FREE_B, INTERNAL_B,
	S_EXACT, S_INTERIOR, S_ONEPAST, S_SIZEFIELD, S_FREE, S_SELF, S_DUP,
	S_MIXED, S_UNALIGNED, S_OUTSIDE, S_LASTWORD, S_MM, S_MMHDR, S_MULTI,
	MM1, MM2,
	NUM_SCAN_BLOCKS
};

static void scan_world(struct world *w)
{
	world_init(w, 0);
	ck_assert_uint_eq(push_block(w, HEAP + 0x000, 0x30, HD_STATE_USED), T0);
	ck_assert_uint_eq(push_block(w, HEAP + 0x030, 0x40, HD_STATE_USED), T1);
	ck_assert_uint_eq(push_block(w, HEAP + 0x070, 0x30, HD_STATE_FREE), FREE_B);
	ck_assert_uint_eq(push_block(w, HEAP + 0x0a0, 0x30, HD_STATE_INTERNAL),
			  INTERNAL_B);
	// A gap 0x0d0-0x100, then the sources.
	for (size_t i = S_EXACT; i <= S_MULTI; i++)
		ck_assert_uint_eq(push_block(w, HEAP + 0x100 + 0x50 * (i - S_EXACT),
					     0x50, HD_STATE_USED), i);
	ck_assert_uint_eq(push_block(w, MMAP, 0x2000, HD_STATE_USED), MM1);
	ck_assert_uint_eq(push_block(w, MMAP + 0x2000, 0x1000, HD_STATE_USED), MM2);

	uint64_t t0 = baddr(w, T0), t1 = baddr(w, T1);
	uint64_t c1 = t1 - 16; // T1's chunk
	ck_assert_uint_eq(busable(w, T0), 0x28);
	ck_assert_uint_eq(busable(w, MM1), 0x2000 - 16);
#define SRC(id, k) (baddr(w, id) + 8 * (k))
	put64(w, SRC(S_EXACT, 3), t1);
	put64(w, SRC(S_INTERIOR, 0), t1 + 0x18);
	// T0's one-past-the-end is T1's chunk + 8; T1's is the free block's
	// chunk + 8; T1's chunk itself lies in T0's usable bytes.
	put64(w, SRC(S_ONEPAST, 1), t0 + busable(w, T0));
	put64(w, SRC(S_ONEPAST, 2), t1 + busable(w, T1));
	put64(w, SRC(S_ONEPAST, 4), c1);
	// T1's size field.
	put64(w, SRC(S_SIZEFIELD, 0), c1 + 9);
	put64(w, SRC(S_SIZEFIELD, 1), c1 + 12);
	put64(w, SRC(S_SIZEFIELD, 2), t1 - 1);
	put64(w, SRC(S_FREE, 0), baddr(w, FREE_B));
	put64(w, SRC(S_FREE, 1), baddr(w, FREE_B) + 8);
	put64(w, SRC(S_FREE, 2), baddr(w, INTERNAL_B));
	put64(w, SRC(S_FREE, 3), baddr(w, INTERNAL_B) + 0x10);
	// The internal block's header follows the free block: its one-past.
	put64(w, SRC(S_FREE, 4), baddr(w, INTERNAL_B) - 16);
	put64(w, SRC(S_SELF, 0), baddr(w, S_SELF));
	put64(w, SRC(S_SELF, 5), baddr(w, S_SELF) + 0x30);
	put64(w, SRC(S_DUP, 0), t0);
	put64(w, SRC(S_DUP, 2), t0);
	put64(w, SRC(S_DUP, 3), t1 + 8);
	put64(w, SRC(S_DUP, 5), t0);
	put64(w, SRC(S_DUP, 6), t1 + 8);
	put64(w, SRC(S_DUP, 8), t1 + 16);
	put64(w, SRC(S_MIXED, 0), t1 + 8);
	put64(w, SRC(S_MIXED, 4), t1);
	put64(w, SRC(S_MIXED, 7), t1 + 0x20);
	put64(w, SRC(S_UNALIGNED, 0) + 1, t0);
	put64(w, SRC(S_UNALIGNED, 4) + 4, t1);
	put64(w, SRC(S_OUTSIDE, 0), HEAP + 0x0d0);  // the gap
	put64(w, SRC(S_OUTSIDE, 1), HEAP + 0x0f8);
	put64(w, SRC(S_OUTSIDE, 2), t0 - 16);       // header of block 0
	put64(w, SRC(S_OUTSIDE, 3), t0 - 8);
	put64(w, SRC(S_OUTSIDE, 4), MMAP);          // MM1's header
	put64(w, SRC(S_OUTSIDE, 5), RSP);
	put64(w, SRC(S_OUTSIDE, 6), HEAP - 8);
	put64(w, SRC(S_OUTSIDE, 7), 1);
	put64(w, SRC(S_OUTSIDE, 8), UINT64_MAX);
	// The last usable word is the next chunk's prev_size.
	put64(w, SRC(S_LASTWORD, 8), t0);
	ck_assert_uint_eq(SRC(S_LASTWORD, 8), baddr(w, S_MM) - 16);
	put64(w, SRC(S_MM, 1), baddr(w, MM1) + 0x1000);
	put64(w, SRC(S_MM, 2), baddr(w, MM1) + busable(w, MM1) - 1);
	// MM2's header, though MM1 ends where it starts: a header word counts
	// only for a preceding non-mmapped block (whose usable bytes reach
	// into it; MM1's end at MM2's chunk + 0 is left unspecified here).
	ck_assert_uint_eq(baddr(w, MM1) - 16 + bchunk(w, MM1), baddr(w, MM2) - 16);
	put64(w, SRC(S_MMHDR, 4), baddr(w, MM2) - 8);
	put64(w, SRC(S_MMHDR, 5), baddr(w, MM2) - 12);
	put64(w, SRC(S_MULTI, 0), t1 + 8);
	put64(w, SRC(S_MULTI, 1), baddr(w, MM2));
	put64(w, SRC(S_MULTI, 2), baddr(w, S_EXACT) + 0x40);
	put64(w, SRC(S_MULTI, 3), t0);
	put64(w, SRC(S_MULTI, 4), baddr(w, S_EXACT));
	put64(w, SRC(S_MULTI, 5), t0);
	put64(w, SRC(S_MULTI, 6), baddr(w, MM1) + 0x20);
	// Pointers in blocks that are not scanned.
	put64(w, baddr(w, FREE_B), t0);
	put64(w, baddr(w, INTERNAL_B), t0);
	put64(w, baddr(w, T0), baddr(w, MM1));
	// MM1 points back at T1 from its last usable word.
	put64(w, baddr(w, MM1) + busable(w, MM1) - 8, t1);
	// MM2 points at MM1's one-past-the-end word and its last byte.
	put64(w, baddr(w, MM2) + 0x100, baddr(w, MM1) + busable(w, MM1) - 8);
#undef SRC
	world_build(w);
}

// A typing that calls no word of a block a pointer (integers, byte
// buffers, unions...), or only some of them: every word is scanned all the
// same, so the edges are those of the untyped graph, and only the words
// typed as pointers count as typed edges.
static const uint8_t *no_pointers(void *arg, size_t block, size_t nwords)
{
	static uint8_t zeros[64];
	(void)arg;
	(void)block;
	(void)nwords;
	return zeros;
}

static const uint8_t *first_word_typed(void *arg, size_t block, size_t nwords)
{
	static const uint8_t first[64] = {1};
	(void)arg;
	(void)block;
	(void)nwords;
	return first;
}

// first_word_typed as one bit.
static bool first_word_bit(void *arg, size_t block, uint64_t word)
{
	(void)arg;
	(void)block;
	return word == 0;
}

START_TEST(test_scan_typing_keeps_edges)
{
	struct world w;
	scan_world(&w);
	hd_pointer_map_fn maps[] = {no_pointers, first_word_typed};
	for (size_t m = 0; m < 2; m++) {
		struct hd_index ix;
		ck_assert_no_error(hd_index_init(&ix, w.h));
		struct hd_graph *g;
		ck_assert_no_error(hd_graph_build_with(w.t, w.di, w.h, &ix, maps[m],
						       NULL, NULL, &g));
		ck_assert_uint_eq(hd_graph_num_vertices(g), hd_graph_num_vertices(w.g));
		for (uint32_t v = 0; v < hd_graph_num_vertices(g); v++) {
			const uint32_t *a, *b;
			size_t na, nb;
			hd_graph_successors(w.g, v, &a, &na);
			hd_graph_successors(g, v, &b, &nb);
			ck_assert_msg(na == nb && (na == 0 || !memcmp(a, b, na * sizeof(*a))),
				      "map %zu: vertex %u has %zu edges typed, %zu untyped",
				      m, v, nb, na);
		}
		// Several sources hold a pointer in word 0 (S_INTERIOR, S_DUP,
		// S_MULTI...): typed edges with the second map only.
		struct hd_graph_info info;
		hd_graph_get_info(g, &info);
		if (m == 0)
			ck_assert_uint_eq(info.typed_edges, 0);
		else
			ck_assert_uint_gt(info.typed_edges, 0);
		hd_graph_destroy(g);
		hd_index_deinit(&ix);
	}
	world_destroy(&w);
}
END_TEST

// The heap's references (graph/refs.c) by their definition: every aligned
// word of a used block whose value hd_heap_find places in a used block, in
// word order, flagged interior unless it is the block's start.
static void check_refs(const struct world *w, const struct hd_refs *r)
{
	const struct hd_heap *h = w->h;
	for (size_t id = 0; id < hd_heap_num_blocks(h); id++) {
		const uint32_t *tg, *wd;
		uint32_t n = hd_refs_row(r, id, &tg, &wd), k = 0;
		struct hd_block b;
		hd_heap_block(h, id, &b);
		if (b.state == HD_STATE_USED) {
			for (uint64_t i = 0; i < b.usable / 8; i++) {
				uint64_t v;
				if (world_read((void *)w, b.addr + 8 * i, &v, 8))
					break;
				int64_t t = hd_heap_find(h, v);
				if (t < 0 || hd_heap_state(h, (size_t)t) != HD_STATE_USED)
					continue;
				uint32_t want = (uint32_t)t |
					(v == h->addr[t] ? 0 : HD_EDGE_INTERIOR);
				expect_msg(k < n && tg[k] == want && wd[k] == i,
					   "block %zu word %" PRIu64 ": reference %u not found",
					   id, i, want);
				k++;
			}
		}
		expect_msg(k == n, "block %zu: %u references, %u expected", id, n, k);
	}
}

// The graph made from the references is the one the scan makes, whatever
// the number of threads.
static void check_refs_graph(struct world *w)
{
	struct hd_index ix;
	ck_assert_no_error(hd_index_init(&ix, w->h));
	for (unsigned threads = 1; threads <= 3; threads++) {
		struct hd_refs r;
		ck_assert_no_error(hd_refs_init(&r, w->t, w->h, &ix, threads));
		check_refs(w, &r);
		struct hd_graph *g;
		ck_assert_no_error(hd_graph_build_refs(w->t, w->di, w->h, &ix, &r,
						       first_word_typed,
						       threads > 1 ? first_word_bit : NULL,
						       NULL, &g));
		struct hd_graph *old;
		ck_assert_no_error(hd_graph_build_with(w->t, w->di, w->h, &ix,
						       first_word_typed, NULL, NULL,
						       &old));
		ck_assert_uint_eq(hd_graph_num_vertices(g), hd_graph_num_vertices(old));
		for (uint32_t v = 0; v < hd_graph_num_vertices(g); v++) {
			const uint32_t *a, *b;
			size_t na, nb;
			hd_graph_successors(old, v, &a, &na);
			hd_graph_successors(g, v, &b, &nb);
			expect_msg(na == nb && (na == 0 || !memcmp(a, b, na * sizeof(*a))),
				   "%u threads: vertex %u has %zu edges from the references, %zu from the scan",
				   threads, v, nb, na);
		}
		struct hd_graph_info x, y;
		hd_graph_get_info(old, &x);
		hd_graph_get_info(g, &y);
		ck_assert_uint_eq(x.edges, y.edges);
		ck_assert_uint_eq(x.typed_edges, y.typed_edges);
		ck_assert_uint_eq(x.interior_edges, y.interior_edges);
		ck_assert_uint_eq(x.words_scanned, y.words_scanned);
		hd_graph_destroy(g);
		hd_graph_destroy(old);
		hd_refs_deinit(&r);
	}
	hd_index_deinit(&ix);
}

START_TEST(test_refs_scan_world)
{
	struct world w;
	scan_world(&w);
	check_refs_graph(&w);
	world_destroy(&w);
}
END_TEST

START_TEST(test_refs_random)
{
	// Blocks of random sizes and states filling the arena heap, their
	// words random: pointers to starts, inside, just past, to themselves,
	// to free blocks, and noise.
	rng_seed(7);
	struct world w;
	world_init(&w, 0);
	uint64_t p = HEAP;
	while (p + 0x400 < HEAP + HEAP_SIZE) {
		uint64_t size = 32 + 16 * rng_below(rng_below(8) ? 8 : 48);
		enum hd_block_state st = rng_below(5) ? HD_STATE_USED
				       : (enum hd_block_state)rng_below(3);
		push_block(&w, p, size, st);
		p += size;
	}
	size_t n = hd_heap_num_blocks(w.h);
	for (size_t id = 0; id < n; id++) {
		uint64_t a = w.h->addr[id], u = hd_heap_usable(w.h, id);
		for (uint64_t o = 0; o + 8 <= u; o += 8) {
			size_t t = rng_below(n);
			uint64_t v, k = rng_below(8);
			if (k < 3)
				v = w.h->addr[t];
			else if (k < 5)
				v = w.h->addr[t] + rng_below(hd_heap_extent(w.h, t) + 16) - 16;
			else if (k == 5)
				v = a + 8 * rng_below(4);
			else
				v = rng_next();
			// The last word of a block is also the next chunk's
			// prev_size: glibc's usable bytes reach into it.
			if (a + o + 8 <= HEAP + HEAP_SIZE)
				put64(&w, a + o, v);
		}
	}
	world_build(&w);
	check_refs_graph(&w);
	world_destroy(&w);
}
END_TEST

START_TEST(test_scan_edges)
{
	struct world w;
	scan_world(&w);
	const uint32_t I = HD_GRAPH_INTERIOR;
	uint32_t vt0 = bv(&w, T0), vt1 = bv(&w, T1);
	check_succ(&w, bv(&w, S_EXACT), "exact pointer", vt1);
	check_succ(&w, bv(&w, S_INTERIOR), "interior pointer", vt1 | I);
	// Like valgrind: a pointer just past a block's usable bytes is no
	// pointer into it; T1's chunk start lies in T0's usable bytes.
	check_succ(&w, bv(&w, S_ONEPAST), "one past the end", vt0 | I);
	check_no_succ(&w, bv(&w, S_SIZEFIELD), "size field");
	check_no_succ(&w, bv(&w, S_FREE), "free and internal blocks");
	check_no_succ(&w, bv(&w, S_SELF), "self pointers");
	check_succ(&w, bv(&w, S_DUP), "duplicates", vt0, vt1 | I);
	check_succ(&w, bv(&w, S_MIXED), "exact beats interior", vt1);
	check_no_succ(&w, bv(&w, S_UNALIGNED), "unaligned words");
	check_no_succ(&w, bv(&w, S_OUTSIDE), "no block there");
	check_succ(&w, bv(&w, S_LASTWORD), "last usable word", vt0);
	check_succ(&w, bv(&w, S_MM), "mmapped blocks", bv(&w, MM1) | I);
	check_no_succ(&w, bv(&w, S_MMHDR), "mmapped block's header");
	check_succ(&w, bv(&w, S_MULTI), "several targets", vt0, vt1 | I,
		   bv(&w, S_EXACT), bv(&w, MM1) | I, bv(&w, MM2));
	check_no_succ(&w, bv(&w, FREE_B), "a free block is not scanned");
	check_no_succ(&w, bv(&w, INTERNAL_B), "an internal block is not scanned");
	check_succ(&w, bv(&w, T0), "T0", bv(&w, MM1));
	check_succ(&w, bv(&w, T1), "T1");
	check_succ(&w, bv(&w, MM1), "mmapped block's last word", vt1);
	check_succ(&w, bv(&w, MM2), "MM2", bv(&w, MM1) | I);

	// Sources are plain vertex ids without the flag; everything above is
	// there in reverse too.
	const uint32_t *src;
	size_t n;
	hd_graph_predecessors(w.g, vt1, &src, &n);
	uint32_t exp[] = {bv(&w, S_EXACT), bv(&w, S_INTERIOR),
			  bv(&w, S_DUP), bv(&w, S_MIXED), bv(&w, S_MULTI),
			  bv(&w, MM1)};
	ck_assert_uint_eq(n, sizeof(exp) / sizeof(exp[0]));
	uint32_t got[16];
	memcpy(got, src, n * sizeof(*got));
	qsort(got, n, sizeof(*got), u32_cmp);
	qsort(exp, n, sizeof(*exp), u32_cmp);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(got[i], exp[i]);

	// Vertex numbering round trips.
	for (size_t id = 0; id < NUM_SCAN_BLOCKS; id++) {
		ck_assert_int_eq(hd_graph_vertex_block(w.g, bv(&w, id)), (int64_t)id);
		ck_assert_int_eq(hd_graph_vertex_root(w.g, bv(&w, id)), -1);
	}
	for (size_t i = 0; i < hd_graph_num_roots(w.g); i++) {
		ck_assert_uint_eq(hd_graph_root_vertex(w.g, i), 1 + i);
		ck_assert_int_eq(hd_graph_vertex_root(w.g, 1 + i), (int64_t)i);
		ck_assert_int_eq(hd_graph_vertex_block(w.g, 1 + i), -1);
	}
	ck_assert_int_eq(hd_graph_vertex_root(w.g, 0), -1);
	ck_assert_int_eq(hd_graph_vertex_block(w.g, 0), -1);
	world_destroy(&w);
}
END_TEST

START_TEST(test_scan_counts)
{
	struct world w;
	scan_world(&w);
	// The super-root points at every root; no root holds anything here.
	size_t r = hd_graph_num_roots(w.g);
	uint32_t all[16];
	ck_assert_uint_le(r, 16);
	for (size_t i = 0; i < r; i++)
		all[i] = 1 + (uint32_t)i;
	check_succ_at(&w, 0, all, r, "super-root", __LINE__);
	for (size_t i = 0; i < r; i++)
		check_no_succ(&w, 1 + (uint32_t)i, hd_graph_root(w.g, i)->name);
	// Edges: super-root r, S_EXACT 1, S_INTERIOR 1, S_ONEPAST 1, S_DUP 2,
	// S_MIXED 1, S_LASTWORD 1, S_MM 1, S_MULTI 5, T0 1, MM1 1, MM2 1;
	// interior: 1 + 1 + 1 + 1 + 2 + 1.
	struct hd_graph_info info;
	hd_graph_get_info(w.g, &info);
	ck_assert_uint_eq(hd_graph_num_edges(w.g), r + 16);
	ck_assert_uint_eq(info.edges, r + 16);
	ck_assert_uint_eq(info.interior_edges, 7);
	ck_assert_uint_gt(info.words_scanned, 0);
	world_destroy(&w);
}
END_TEST

// ------------------------------------------------------------------ roots

static bool root_overlaps(const struct hd_root *r, uint64_t lo, uint64_t hi)
{
	return r->start < hi && lo < r->end;
}

// No two roots overlap, none touches the allocator's segments, unreadable
// or read-only mappings, and every range is 8-byte aligned and non-empty
// (registers roots are empty).
static void check_root_invariants(const struct world *w)
{
	size_t n = hd_graph_num_roots(w->g);
	for (size_t i = 0; i < n; i++) {
		const struct hd_root *a = hd_graph_root(w->g, i);
		if (a->kind == HD_ROOT_REGISTERS) {
			ck_assert_uint_eq(a->start, 0);
			ck_assert_uint_eq(a->end, 0);
			continue;
		}
		ck_assert_msg(a->start < a->end, "root %s is empty", a->name);
		ck_assert_uint_eq(a->start % 8, 0);
		for (size_t s = 0; s < hd_heap_num_segments(w->h); s++) {
			const struct hd_heap_segment *seg = hd_heap_segment(w->h, s);
			ck_assert_msg(!root_overlaps(a, seg->start, seg->end),
				      "root %s covers a heap segment", a->name);
		}
		ck_assert_msg(!root_overlaps(a, RO, RO + RO_SIZE),
			      "root %s covers read-only memory", a->name);
		ck_assert_msg(!root_overlaps(a, NOREAD, NOREAD + NOREAD_SIZE),
			      "root %s covers unreadable memory", a->name);
		ck_assert_msg(!root_overlaps(a, STK, LIVE),
			      "root %s covers dead stack", a->name);
		for (size_t j = i + 1; j < n; j++) {
			const struct hd_root *b = hd_graph_root(w->g, j);
			if (b->kind == HD_ROOT_REGISTERS)
				continue;
			ck_assert_msg(!root_overlaps(a, b->start, b->end),
				      "roots %s and %s overlap", a->name, b->name);
		}
	}
}

static void check_root(const struct world *w, size_t i, const char *name,
		       enum hd_root_kind kind, uint64_t start, uint64_t end,
		       int tid)
{
	ck_assert_uint_lt(i, hd_graph_num_roots(w->g));
	const struct hd_root *r = hd_graph_root(w->g, i);
	ck_assert_str_eq(r->name, name);
	ck_assert_int_eq(r->kind, kind);
	ck_assert_uint_eq(r->start, start);
	ck_assert_uint_eq(r->end, end);
	ck_assert_int_eq(r->tid, tid);
}

enum { RB_REG, RB_STACK, RB_REDZONE, RB_DEAD, RB_ANON, RB_RO, RB_F0,
       RB_F0END, RB_F1, RB_TOP, RB_ALL };

// One block per root-held pointer: from registers, the stack near its top,
// the red zone, below it, anonymous data, read-only memory; frames.
static void roots_world(struct world *w, bool frames)
{
	world_init(w, HEAP + 0x10 + 0x40 * RB_REG);
	for (size_t i = 0; i < RB_ALL; i++)
		push_block(w, HEAP + 0x40 * i, 0x40, HD_STATE_USED);
	put64(w, STK + STK_SIZE - 8, baddr(w, RB_STACK));
	put64(w, RSP - 128, baddr(w, RB_REDZONE));
	put64(w, RSP - 136, baddr(w, RB_DEAD));
	put64(w, STK, baddr(w, RB_DEAD));
	put64(w, ANON + 0x800, baddr(w, RB_ANON) + 8);
	put64(w, RO, baddr(w, RB_RO));
	put64(w, RSP, baddr(w, RB_F0));
	put64(w, RSP + 0xf8, baddr(w, RB_F0END) + 0x10);
	put64(w, RSP + 0x100, baddr(w, RB_F1));
	put64(w, RSP + 0x2f8, baddr(w, RB_F1));
	put64(w, RSP + 0x300, baddr(w, RB_TOP));
	if (frames) {
		add_frame(w, 0, RSP, RSP + 0x100, "#0 f0");
		add_frame(w, 1, RSP + 0x100, RSP + 0x300, "#1 f1");
		// Another thread's frame changes nothing here.
		struct hd_frame f = {.tid = TID + 1, .level = 0, .sp = RSP,
				     .caller_sp = STK + STK_SIZE, .name = "#0 other"};
		ck_assert_no_error(hd_target_add_frame(w->t, &f));
	}
	world_build(w);
	check_root_invariants(w);
}

START_TEST(test_roots_thread)
{
	struct world w;
	roots_world(&w, false);
	char anon[64];
	snprintf(anon, sizeof(anon), "anon 0x%llx-0x%llx",
		 (unsigned long long)ANON, (unsigned long long)(ANON + ANON_SIZE));
	ck_assert_uint_eq(hd_graph_num_roots(w.g), 3);
	check_root(&w, 0, "thread 1234 registers", HD_ROOT_REGISTERS, 0, 0, TID);
	check_root(&w, 1, "thread 1234 stack", HD_ROOT_STACK, LIVE,
		   STK + STK_SIZE, TID);
	check_root(&w, 2, anon, HD_ROOT_REGION, ANON, ANON + ANON_SIZE, 0);
	ck_assert_str_eq(hd_root_kind_name(HD_ROOT_REGION), "region");
	ck_assert_str_eq(hd_root_kind_name(HD_ROOT_FRAME), "frame");

	const uint32_t I = HD_GRAPH_INTERIOR;
	check_succ(&w, hd_graph_root_vertex(w.g, 0), "registers",
		   bv(&w, RB_REG));
	uint32_t stack[] = {bv(&w, RB_STACK), bv(&w, RB_F0),
			    bv(&w, RB_F0END) | I, bv(&w, RB_F1), bv(&w, RB_TOP),
			    bv(&w, RB_REDZONE)};
	// The word at rsp - 128 is live only with the red zone.
	check_succ_at(&w, hd_graph_root_vertex(w.g, 1), stack,
		      RED_ZONE >= 128 ? 6 : 5, "stack", __LINE__);
	check_succ(&w, hd_graph_root_vertex(w.g, 2), "anon", bv(&w, RB_ANON) | I);
	check_succ(&w, 0, "super-root", 1, 2, 3);
	// Nothing holds the blocks pointed at from below the live stack or
	// from read-only memory.
	const uint32_t *src;
	size_t n;
	hd_graph_predecessors(w.g, bv(&w, RB_DEAD), &src, &n);
	ck_assert_uint_eq(n, 0);
	hd_graph_predecessors(w.g, bv(&w, RB_RO), &src, &n);
	ck_assert_uint_eq(n, 0);
	hd_graph_predecessors(w.g, bv(&w, RB_REDZONE), &src, &n);
	ck_assert_uint_eq(n, RED_ZONE >= 128 ? 1 : 0);
	world_destroy(&w);
}
END_TEST

START_TEST(test_roots_frames)
{
	struct world w;
	roots_world(&w, true);
	// With a red zone, the part below the innermost frame stays the
	// thread's stack, as do the frames above the ones the front-end knows.
	size_t rz = RED_ZONE ? 1 : 0;
	ck_assert_uint_eq(hd_graph_num_roots(w.g), 5 + rz);
	check_root(&w, 0, "thread 1234 registers", HD_ROOT_REGISTERS, 0, 0, TID);
	check_root(&w, 1, "thread 1234 #0 f0", HD_ROOT_FRAME, RSP, RSP + 0x100,
		   TID);
	check_root(&w, 2, "thread 1234 #1 f1", HD_ROOT_FRAME, RSP + 0x100,
		   RSP + 0x300, TID);
	if (RED_ZONE)
		check_root(&w, 3, "thread 1234 stack", HD_ROOT_STACK, LIVE, RSP,
			   TID);
	check_root(&w, 3 + rz, "thread 1234 stack", HD_ROOT_STACK, RSP + 0x300,
		   STK + STK_SIZE, TID);
	ck_assert_int_eq(hd_graph_root(w.g, 4 + rz)->kind, HD_ROOT_REGION);
	ck_assert_uint_eq(find_root(&w, "thread 1234 stack", RSP + 0x300), 3 + rz);

	const uint32_t I = HD_GRAPH_INTERIOR;
	check_succ(&w, 1, "registers", bv(&w, RB_REG));
	check_succ(&w, 2, "frame 0", bv(&w, RB_F0), bv(&w, RB_F0END) | I);
	check_succ(&w, 3, "frame 1", bv(&w, RB_F1));
	if (RED_ZONE >= 128)
		check_succ(&w, 4, "red zone", bv(&w, RB_REDZONE));
	check_succ(&w, 4 + rz, "stack above the frames", bv(&w, RB_STACK),
		   bv(&w, RB_TOP));
	check_succ(&w, 5 + rz, "anon", bv(&w, RB_ANON) | I);
	const uint32_t *src;
	size_t n;
	hd_graph_predecessors(w.g, bv(&w, RB_DEAD), &src, &n);
	ck_assert_uint_eq(n, 0);
	world_destroy(&w);
}
END_TEST

START_TEST(test_roots_frame_clipped)
{
	// A frame reaching below the red zone and one beyond the stack
	// mapping are clipped to the live stack; a frame entirely in dead
	// stack gives no root.
	struct world w;
	world_init(&w, 0);
	push_block(&w, HEAP, 0x40, HD_STATE_USED);
	add_frame(&w, 0, STK, STK + 0x100, "#0 dead");
	add_frame(&w, 1, RSP - 0x1000, RSP + 0x40, "#1 low");
	add_frame(&w, 2, RSP + 0x40, STK + STK_SIZE + 0x1000, "#2 high");
	world_build(&w);
	check_root_invariants(&w);
	ck_assert_uint_eq(hd_graph_num_roots(w.g), 4);
	check_root(&w, 0, "thread 1234 registers", HD_ROOT_REGISTERS, 0, 0, TID);
	check_root(&w, 1, "thread 1234 #1 low", HD_ROOT_FRAME, LIVE,
		   RSP + 0x40, TID);
	check_root(&w, 2, "thread 1234 #2 high", HD_ROOT_FRAME, RSP + 0x40,
		   STK + STK_SIZE, TID);
	ck_assert_int_eq(hd_graph_root(w.g, 3)->kind, HD_ROOT_REGION);
	world_destroy(&w);
}
END_TEST

START_TEST(test_roots_locals)
{
	// A local variable a debugger knows (added before the frames) takes
	// its bytes out of its frame, which is split around it.
	struct world w;
	world_init(&w, 0);
	push_block(&w, HEAP, 0x40, HD_STATE_USED);
	push_block(&w, HEAP + 0x40, 0x40, HD_STATE_USED);
	put64(&w, RSP + 0x20, baddr(&w, 0));
	put64(&w, RSP + 0x28, baddr(&w, 1));
	struct hd_frame l = {.tid = TID, .level = 0, .sp = RSP + 0x20,
			     .caller_sp = RSP + 0x28, .name = "head",
			     .local = true};
	ck_assert_no_error(hd_target_add_frame(w.t, &l));
	add_frame(&w, 0, RSP, RSP + 0x100, "#0 f0");
	world_build(&w);
	check_root_invariants(&w);
	ck_assert_uint_eq(hd_graph_num_roots(w.g), 6 + (RED_ZONE ? 1 : 0));
	// Named after its thread and frame: one function's locals in two
	// threads are two owners.
	check_root(&w, 1, "thread 1234 #0 f0 local head", HD_ROOT_LOCAL, RSP + 0x20,
		   RSP + 0x28, TID);
	check_root(&w, 2, "thread 1234 #0 f0", HD_ROOT_FRAME, RSP, RSP + 0x20,
		   TID);
	check_root(&w, 3, "thread 1234 #0 f0", HD_ROOT_FRAME, RSP + 0x28,
		   RSP + 0x100, TID);
	ck_assert_str_eq(hd_root_kind_name(HD_ROOT_LOCAL), "local");
	check_succ(&w, 2, "local", bv(&w, 0));
	check_no_succ(&w, 3, "frame below the local");
	check_succ(&w, 4, "frame above the local", bv(&w, 1));
	world_destroy(&w);
}
END_TEST

START_TEST(test_roots_invalid_frame)
{
	struct world w;
	world_init(&w, 0);
	struct hd_frame f = {.tid = TID, .sp = RSP + 0x10, .caller_sp = RSP,
			     .name = "#0 backwards"};
	struct hd_error *err = hd_target_add_frame(w.t, &f);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_INVALID);
	hd_error_destroy(err);
	ck_assert_uint_eq(hd_target_num_frames(w.t), 0);
	world_destroy(&w);
}
END_TEST

// ---------------------------------------------------------- exited threads

#define DESC 0x60000000ull        // a live thread's descriptor (its TLS)
#define DESC_SIZE 0x1000ull
#define DEAD 0x70000000ull        // the stack glibc keeps for an exited one
#define DEAD_SIZE 0x8000ull
#define TID_OFF 0x2d0             // tid in glibc 2.36's struct pthread
#define DEAD_DESC (DEAD + DEAD_SIZE - 0x940)

enum { XB_STALE, XB_RESULT, XB_ALL };

// A second live thread whose descriptor shows where tid lies (twice when
// ambiguous: then nothing can be learnt), and the mapping of an exited
// thread: a stale pointer in its stack to block XB_STALE, its result in
// its descriptor, block XB_RESULT.
static void exited_world(struct world *w, bool ambiguous, int32_t dead_tid)
{
	enum { RW = HD_PROT_READ | HD_PROT_WRITE };
	world_init(w, 0);
	add_mapping(w, DESC, DESC_SIZE, RW, NULL, true);
	add_mapping(w, DEAD, DEAD_SIZE, RW, NULL, true);
	struct hd_thread th = {.tid = TID + 1, .has_regs = true};
	th.regs.rsp = RSP + 0x100;
	th.regs.fs_base = DESC;
	ck_assert_no_error(hd_target_add_thread(w->t, &th));
	put32(w, DESC + TID_OFF, TID + 1);
	if (ambiguous)
		put32(w, DESC + TID_OFF + 0x40, TID + 1);
	put64(w, DEAD_DESC, DEAD_DESC);
	put64(w, DEAD_DESC + 16, DEAD_DESC);
	put32(w, DEAD_DESC + TID_OFF, (uint32_t)dead_tid);
	for (size_t i = 0; i < XB_ALL; i++)
		push_block(w, HEAP + 0x40 * i, 0x40, HD_STATE_USED);
	put64(w, DEAD + 0x100, baddr(w, XB_STALE));
	put64(w, DEAD_DESC + 0x600, baddr(w, XB_RESULT));
	world_build(w);
	check_root_invariants(w);
}

START_TEST(test_roots_exited_thread)
{
	// The kernel's 0 once the thread has exited, glibc's -1 once joined.
	const int32_t dead_tids[] = {0, -1};
	for (size_t k = 0; k < 2; k++) {
		struct world w;
		exited_world(&w, false, dead_tids[k]);
		const uint32_t *src;
		size_t n;
		hd_graph_predecessors(w.g, bv(&w, XB_STALE), &src, &n);
		ck_assert_msg(n == 0, "tid %d: a dead frame holds a block",
			      dead_tids[k]);
		char name[64];
		snprintf(name, sizeof(name), "exited thread 0x%llx",
			 (unsigned long long)DEAD_DESC);
		size_t r = find_root(&w, name, DEAD_DESC);
		check_root(&w, r, name, HD_ROOT_REGION, DEAD_DESC, DEAD + DEAD_SIZE, 0);
		check_succ(&w, hd_graph_root_vertex(w.g, r), "descriptor",
			   bv(&w, XB_RESULT));
		// Nothing else of the mapping is a root.
		for (size_t i = 0; i < hd_graph_num_roots(w.g); i++) {
			const struct hd_root *ro = hd_graph_root(w.g, i);
			ck_assert_msg(i == r || ro->end <= DEAD || ro->start >= DEAD + DEAD_SIZE,
				      "root %s covers the exited thread's stack", ro->name);
		}
		world_destroy(&w);
	}
}
END_TEST

START_TEST(test_roots_exited_thread_unknown)
{
	// Where tid lies is ambiguous: the mapping stays a plain region.
	struct world w;
	exited_world(&w, true, 0);
	char name[64];
	snprintf(name, sizeof(name), "anon 0x%llx-0x%llx", (unsigned long long)DEAD,
		 (unsigned long long)(DEAD + DEAD_SIZE));
	size_t r = find_root(&w, name, DEAD);
	check_succ(&w, hd_graph_root_vertex(w.g, r), "region",
		   bv(&w, XB_STALE), bv(&w, XB_RESULT));
	world_destroy(&w);
	// A live thread's tid there: not exited.
	exited_world(&w, false, TID + 7);
	r = find_root(&w, name, DEAD);
	check_succ(&w, hd_graph_root_vertex(w.g, r), "region",
		   bv(&w, XB_STALE), bv(&w, XB_RESULT));
	world_destroy(&w);
}
END_TEST

// ------------------------------------------------------------- dominators

enum { L0, L1, L2, L3, SHARED, D1, D2, D3, D4, FREED, LX, LY, C1, C2,
       DOM_BLOCKS };
static const uint64_t dom_size[DOM_BLOCKS] = {
	0x20, 0x30, 0x40, 0x50, 0x60, 0x20, 0x30, 0x40, 0x60, 0x80, 0x70,
	0x90, 0x20, 0x30,
};

// The holders partition the used blocks: their retained sizes and counts
// add up to the used heap, each is non-empty, largest first.
static void check_holders_partition(const struct hd_dom *d, uint64_t used,
				    uint64_t blocks)
{
	uint64_t bytes = 0, n = 0;
	for (size_t i = 0; i < hd_dom_num_holders(d); i++) {
		const struct hd_holder *x = hd_dom_holder(d, i);
		ck_assert_uint_gt(x->retained_blocks, 0);
		if (i)
			ck_assert_uint_le(x->retained, hd_dom_holder(d, i - 1)->retained);
		bytes += x->retained;
		n += x->retained_blocks;
	}
	ck_assert_uint_eq(bytes, used);
	ck_assert_uint_eq(n, blocks);
}

START_TEST(test_dominators)
{
	struct world w;
	uint64_t c = HEAP;
	for (size_t i = 0; i < SHARED; i++)
		c += dom_size[i];
	// The registers hold SHARED (rbx).
	uint64_t rbx = c + 16;
	world_init(&w, rbx);
	c = HEAP;
	for (size_t i = 0; i < DOM_BLOCKS; i++) {
		push_block(&w, c, dom_size[i],
			   i == FREED ? HD_STATE_FREE : HD_STATE_USED);
		c += dom_size[i];
	}
	ck_assert_uint_eq(baddr(&w, SHARED), rbx);
	// The stack holds SHARED too, and alone the list L0 -> L1 -> L2 -> L3
	// and the diamond D1 -> {D2, D3} -> D4.
	put64(&w, RSP + 0x10, baddr(&w, L0));
	put64(&w, RSP + 0x18, baddr(&w, SHARED) + 8);
	put64(&w, RSP + 0x20, baddr(&w, D1));
	for (size_t i = L0; i < L3; i++)
		put64(&w, baddr(&w, i), baddr(&w, i + 1));
	put64(&w, baddr(&w, D1), baddr(&w, D2));
	put64(&w, baddr(&w, D1) + 8, baddr(&w, D3));
	put64(&w, baddr(&w, D2), baddr(&w, D4) + 8);
	put64(&w, baddr(&w, D3) + 8, baddr(&w, D4));
	// A free block's stale pointer keeps nothing alive, and nothing
	// counts it; a leaked pair LX -> LY and a leaked cycle C1 <-> C2.
	put64(&w, baddr(&w, FREED), baddr(&w, LX));
	put64(&w, baddr(&w, LX), baddr(&w, LY));
	put64(&w, baddr(&w, C1), baddr(&w, C2));
	put64(&w, baddr(&w, C2), baddr(&w, C1));
	world_build(&w);
	check_root_invariants(&w);
	// The exact dominator tree of the graph: SHARED is the registers'
	// and the stack's alike.
	ck_assert_no_error(hd_dom_compute_view(w.g, w.h, HD_DOM_PLAIN, &w.d));
	const struct hd_dom *d = w.d;
	ck_assert_int_eq(hd_dom_get_view(d), HD_DOM_PLAIN);

	size_t regs = find_root(&w, "thread 1234 registers", 0);
	size_t stack = find_root(&w, "thread 1234 stack", LIVE);
	uint32_t vr = hd_graph_root_vertex(w.g, regs);
	uint32_t vs = hd_graph_root_vertex(w.g, stack);
	ck_assert_uint_eq(hd_dom_idom(d, vr), 0);
	ck_assert_uint_eq(hd_dom_idom(d, vs), 0);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, L0)), vs);
	for (size_t i = L1; i <= L3; i++)
		ck_assert_uint_eq(hd_dom_idom(d, bv(&w, i)), bv(&w, i - 1));
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, SHARED)), 0);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, D1)), vs);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, D2)), bv(&w, D1));
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, D3)), bv(&w, D1));
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, D4)), bv(&w, D1));
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, FREED)), HD_DOM_NONE);

	// Retained sizes are chunk sizes summed over the dominated blocks.
	uint64_t list = 0x20 + 0x30 + 0x40 + 0x50, diamond = 0x20 + 0x30 + 0x40 + 0x60;
	for (size_t i = 0; i < DOM_BLOCKS; i++)
		ck_assert_uint_eq(bchunk(&w, i), dom_size[i]);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, L0)), list);
	ck_assert_uint_eq(hd_dom_retained_blocks(d, bv(&w, L0)), 4);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, L2)), 0x40 + 0x50);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, L3)), 0x50);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, D1)), diamond);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, D2)), 0x30);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, D4)), 0x60);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, SHARED)), 0x60);
	ck_assert_uint_eq(hd_dom_retained(d, vs), list + diamond);
	ck_assert_uint_eq(hd_dom_retained_blocks(d, vs), 1 + 4 + 4);
	ck_assert_uint_eq(hd_dom_retained(d, vr), 0);
	ck_assert_uint_eq(hd_dom_retained(d, 0), list + diamond + 0x60);

	// Children of the stack root, largest retained first.
	const uint32_t *ch;
	size_t n;
	hd_dom_children(d, vs, &ch, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ch[0], bv(&w, D1));
	ck_assert_uint_eq(ch[1], bv(&w, L0));

	// The leaks: unreachable, each with its own leak-forest dominator.
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, LX)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, LY)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_retained(d, bv(&w, LX)), 0);
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, LX)), 0x70 + 0x90);
	ck_assert_uint_eq(hd_dom_leak_retained_blocks(d, bv(&w, LX)), 2);
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, LY)), 0x90);
	ck_assert_uint_eq(hd_dom_leak_idom(d, bv(&w, LY)), bv(&w, LX));
	ck_assert_uint_eq(hd_dom_leak_idom(d, bv(&w, LX)), 0);
	// A leaked cycle is entered at its lowest vertex.
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, C1)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_leak_idom(d, bv(&w, C1)), 0);
	ck_assert_uint_eq(hd_dom_leak_idom(d, bv(&w, C2)), bv(&w, C1));
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, C1)), 0x20 + 0x30);
	// Reachable blocks are no leaks.
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, L0)), 0);
	ck_assert_uint_eq(hd_dom_leak_idom(d, bv(&w, L0)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, FREED)), 0);

	// Holders: the stack alone, SHARED jointly (the stack first, the
	// stronger class), and the two tops of the leak forest.
	uint64_t used = 0;
	for (size_t i = 0; i < DOM_BLOCKS; i++)
		used += i == FREED ? 0 : dom_size[i];
	check_holders_partition(d, used, DOM_BLOCKS - 1);
	ck_assert_uint_eq(hd_dom_num_holders(d), 4);
	const struct hd_holder *x = hd_dom_holder(d, 0);
	ck_assert_int_eq(x->kind, HD_HOLDER_ROOT);
	ck_assert_uint_eq(x->num_roots, 1);
	ck_assert_uint_eq(x->roots[0], stack);
	ck_assert_uint_eq(x->retained, list + diamond);
	x = hd_dom_holder(d, 1);
	ck_assert_int_eq(x->kind, HD_HOLDER_BLOCK);
	ck_assert_uint_eq(x->vertices[0], bv(&w, LX));
	ck_assert_uint_eq(x->retained, 0x70 + 0x90);
	x = hd_dom_holder(d, 2);
	ck_assert_int_eq(x->kind, HD_HOLDER_JOINT);
	ck_assert_uint_eq(x->num_roots, 2);
	ck_assert_uint_eq(x->roots[0], stack);
	ck_assert_uint_eq(x->roots[1], regs);
	ck_assert_uint_eq(x->num_vertices, 1);
	ck_assert_uint_eq(x->vertices[0], bv(&w, SHARED));
	ck_assert_uint_eq(x->retained, 0x60);
	x = hd_dom_holder(d, 3);
	ck_assert_int_eq(x->kind, HD_HOLDER_BLOCK);
	ck_assert_uint_eq(x->vertices[0], bv(&w, C1));

	// Root precedence: the register's copy of SHARED only borrows what
	// the stack holds. Leaks are the same in both views.
	hd_dom_destroy(w.d);
	ck_assert_no_error(hd_dom_compute(w.g, w.h, &w.d));
	d = w.d;
	ck_assert_int_eq(hd_dom_get_view(d), HD_DOM_RANKED);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, SHARED)), vs);
	ck_assert_uint_eq(hd_dom_retained(d, vs), list + diamond + 0x60);
	ck_assert_uint_eq(hd_dom_retained(d, vr), 0);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, LX)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_leak_retained(d, bv(&w, LX)), 0x70 + 0x90);
	check_holders_partition(d, used, DOM_BLOCKS - 1);
	ck_assert_uint_eq(hd_dom_num_holders(d), 3);
	ck_assert_int_eq(hd_dom_holder(d, 0)->kind, HD_HOLDER_ROOT);
	ck_assert_uint_eq(hd_dom_holder(d, 0)->retained, list + diamond + 0x60);
	world_destroy(&w);
}
END_TEST

// Joint holders in the ranked view: blocks several roots of one class
// reach, grouped by the set of roots; a weaker root's and a weaker
// block's pointers into them do not join the set.
START_TEST(test_dominators_joint)
{
	enum { A, B, E1, E2, S, X, N };
	static const uint64_t size[N] = {0x40, 0x40, 0x50, 0x60, 0x30, 0x20};
	struct world w;
	uint64_t c = HEAP, addr[N];
	for (size_t i = 0; i < N; i++) {
		addr[i] = c + 16;
		c += size[i];
	}
	// The registers hold X alone.
	world_init(&w, addr[X]);
	c = HEAP;
	for (size_t i = 0; i < N; i++) {
		push_block(&w, c, size[i], HD_STATE_USED);
		c += size[i];
	}
	// Three locals: x -> A, y -> B, z -> E2; A -> E1, B -> E1, E1 -> E2.
	// The untyped stack holds S, and S points at E1 (borrowed).
	struct hd_frame f = {.tid = TID, .level = 1, .local = true};
	const char *names[3] = {"x", "y", "z"};
	uint64_t targets[3] = {addr[A], addr[B], addr[E2]};
	for (int i = 0; i < 3; i++) {
		f.sp = RSP + 0x40 + 8 * (uint64_t)i;
		f.caller_sp = f.sp + 8;
		f.name = (char *)names[i];
		ck_assert_no_error(hd_target_add_frame(w.t, &f));
		put64(&w, f.sp, targets[i]);
	}
	put64(&w, RSP + 0x10, addr[S]);
	put64(&w, addr[A], addr[E1]);
	put64(&w, addr[B], addr[E1]);
	put64(&w, addr[E1], addr[E2]);
	put64(&w, addr[S], addr[E1]);
	world_build(&w);
	ck_assert_no_error(hd_dom_compute(w.g, w.h, &w.d));
	const struct hd_dom *d = w.d;
	uint64_t used = 0;
	for (size_t i = 0; i < N; i++)
		used += size[i];
	check_holders_partition(d, used, N);
	size_t rx = find_root(&w, "thread 1234 #1 local x", 0), ry = find_root(&w, "thread 1234 #1 local y", 0);
	size_t rz = find_root(&w, "thread 1234 #1 local z", 0);
	size_t regs = find_root(&w, "thread 1234 registers", 0);
	// E1 is x's and y's, E2 theirs and z's: two joint holders.
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, E1)), 0);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, E2)), 0);
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, S)),
			  hd_graph_root_vertex(w.g, find_root(&w, "thread 1234 stack", 0)));
	ck_assert_uint_eq(hd_dom_idom(d, bv(&w, X)), hd_graph_root_vertex(w.g, regs));
	bool seen1 = false, seen2 = false;
	for (size_t i = 0; i < hd_dom_num_holders(d); i++) {
		const struct hd_holder *x = hd_dom_holder(d, i);
		if (x->kind != HD_HOLDER_JOINT)
			continue;
		ck_assert_uint_eq(x->num_vertices, 1);
		if (x->vertices[0] == bv(&w, E1)) {
			ck_assert_uint_eq(x->num_roots, 2);
			ck_assert_uint_eq(x->roots[0], rx);
			ck_assert_uint_eq(x->roots[1], ry);
			ck_assert_uint_eq(x->rank, hd_root_rank(HD_ROOT_LOCAL));
			seen1 = true;
		} else {
			ck_assert_uint_eq(x->vertices[0], bv(&w, E2));
			ck_assert_uint_eq(x->num_roots, 3);
			ck_assert_uint_eq(x->roots[0], rx);
			ck_assert_uint_eq(x->roots[1], ry);
			ck_assert_uint_eq(x->roots[2], rz);
			ck_assert_uint_eq(x->retained, size[E2]);
			seen2 = true;
		}
	}
	ck_assert(seen1 && seen2);
	// In the plain view the stack, through S, joins E1's and E2's
	// holders.
	hd_dom_destroy(w.d);
	ck_assert_no_error(hd_dom_compute_view(w.g, w.h, HD_DOM_PLAIN, &w.d));
	d = w.d;
	check_holders_partition(d, used, N);
	for (size_t i = 0; i < hd_dom_num_holders(d); i++) {
		const struct hd_holder *x = hd_dom_holder(d, i);
		if (x->kind == HD_HOLDER_JOINT && x->vertices[0] == bv(&w, E2))
			ck_assert_uint_eq(x->num_roots, 4);
	}
	world_destroy(&w);
}
END_TEST

// A joint holder lists up to HD_HOLDER_MAX_MEMBERS root names and says
// whether that is all of them: n locals pointing at one block.
static void joint_of_locals(unsigned n, bool complete)
{
	struct world w;
	world_init(&w, 0);
	push_block(&w, HEAP, 0x40, HD_STATE_USED);
	char names[HD_HOLDER_MAX_MEMBERS + 1][16];
	for (unsigned i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "v%u", i);
		struct hd_frame f = {.tid = TID, .level = 1, .local = true,
				     .sp = RSP + 0x40 + 8 * (uint64_t)i,
				     .caller_sp = RSP + 0x48 + 8 * (uint64_t)i,
				     .name = names[i]};
		ck_assert_no_error(hd_target_add_frame(w.t, &f));
		put64(&w, f.sp, baddr(&w, 0));
	}
	world_build(&w);
	ck_assert_no_error(hd_dom_compute(w.g, w.h, &w.d));
	ck_assert_uint_eq(hd_dom_num_holders(w.d), 1);
	const struct hd_holder *x = hd_dom_holder(w.d, 0);
	ck_assert_int_eq(x->kind, HD_HOLDER_JOINT);
	ck_assert_uint_eq(x->num_roots, complete ? n : HD_HOLDER_MAX_MEMBERS);
	ck_assert_int_eq(x->overflow, !complete);
	world_destroy(&w);
}

START_TEST(test_dominators_joint_cap)
{
	joint_of_locals(HD_HOLDER_MAX_MEMBERS, true);
	joint_of_locals(HD_HOLDER_MAX_MEMBERS + 1, false);
}
END_TEST

START_TEST(test_dominators_no_leak)
{
	// Everything reachable: no leak forest, leak queries answer "none".
	struct world w;
	world_init(&w, 0);
	push_block(&w, HEAP, 0x40, HD_STATE_USED);
	push_block(&w, HEAP + 0x40, 0x40, HD_STATE_USED);
	push_block(&w, HEAP + 0x80, 0x40, HD_STATE_FREE);
	put64(&w, RSP, baddr(&w, 0));
	put64(&w, baddr(&w, 0), baddr(&w, 1));
	world_build(&w);
	ck_assert_no_error(hd_dom_compute(w.g, w.h, &w.d));
	ck_assert_uint_eq(hd_dom_idom(w.d, bv(&w, 1)), bv(&w, 0));
	ck_assert_uint_eq(hd_dom_retained(w.d, 0), 0x80);
	ck_assert_uint_eq(hd_dom_leak_idom(w.d, bv(&w, 0)), HD_DOM_NONE);
	ck_assert_uint_eq(hd_dom_leak_retained(w.d, bv(&w, 0)), 0);
	ck_assert_uint_eq(hd_dom_leak_retained(w.d, bv(&w, 2)), 0);
	world_destroy(&w);
}
END_TEST

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

// hd_sort_u32 (the edges' dedupe) against qsort: short arrays, long ones
// (radix passes), values sharing their high bytes (passes skipped), the
// interior flag bit set on some.
START_TEST(test_sort_u32)
{
	static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 100, 4095, 4096, 100000};
	static const uint32_t masks[] = {0xffffffffu, 0xffu, 0x800000ffu, 0x0000ff00u};
	uint64_t x = 88172645463325252ull;
	for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
		for (size_t mi = 0; mi < sizeof(masks) / sizeof(*masks); mi++) {
			size_t n = sizes[si];
			uint32_t *a = malloc((n + 1) * sizeof(*a));
			uint32_t *b = malloc((n + 1) * sizeof(*b));
			ck_assert(a && b);
			for (size_t i = 0; i < n; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				a[i] = b[i] = (uint32_t)x & masks[mi];
			}
			hd_sort_u32(a, n);
			if (n)
				qsort(b, n, sizeof(*b), cmp_u32);
			ck_assert_msg(!n || !memcmp(a, b, n * sizeof(*a)),
				      "n %zu mask %08x: not sorted as qsort sorts", n,
				      masks[mi]);
			free(a);
			free(b);
		}
	}
}
END_TEST

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(debug_dir, sizeof(debug_dir), "%s/hd-test-graph-XXXXXX",
		 tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(debug_dir)) {
		perror(debug_dir);
		return EXIT_FAILURE;
	}
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("index");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_index_empty);
	tcase_add_test(tc, test_index_small);
	tcase_add_test(tc, test_index_random);
	tcase_add_test(tc, test_index_other_shapes);
	suite_add_tcase(s, tc);

	tc = tcase_create("scan");
	tcase_add_test(tc, test_sort_u32);
	tcase_add_test(tc, test_scan_edges);
	tcase_add_test(tc, test_scan_typing_keeps_edges);
	tcase_add_test(tc, test_scan_counts);
	tcase_add_test(tc, test_refs_scan_world);
	tcase_add_test(tc, test_refs_random);
	suite_add_tcase(s, tc);

	tc = tcase_create("roots");
	tcase_add_test(tc, test_roots_thread);
	tcase_add_test(tc, test_roots_frames);
	tcase_add_test(tc, test_roots_frame_clipped);
	tcase_add_test(tc, test_roots_locals);
	tcase_add_test(tc, test_roots_invalid_frame);
	tcase_add_test(tc, test_roots_exited_thread);
	tcase_add_test(tc, test_roots_exited_thread_unknown);
	suite_add_tcase(s, tc);

	tc = tcase_create("dominators");
	tcase_add_test(tc, test_dominators);
	tcase_add_test(tc, test_dominators_no_leak);
	tcase_add_test(tc, test_dominators_joint);
	tcase_add_test(tc, test_dominators_joint_cap);
	suite_add_tcase(s, tc);

	int failed = hd_run_suite(s);
	rmdir(debug_dir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
