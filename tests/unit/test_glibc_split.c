// The glibc chunk walk on several threads (core/heap/glibc/split.c) gives
// the table, the problems (their words and order) and the gaps of the walk
// on one thread, on synthetic heaps: clean ones, ones whose blocks hold
// data that looks like chains of chunk headers, and damaged ones (sizes
// smashed, lying a little or a lot, a top chunk lost or in the middle,
// heaps closed by fenceposts). Each heap is walked on one thread, then on
// 2, 3 and 5 with the split forced (as --jobs does), and the results are
// compared row by row.
//
// With core paths as arguments (test_glibc_split CORE...), each core's
// heap is walked the same way through the session's entry
// (hd_heap_walk_threads) with 1 and 2 threads and compared: for the large
// cores the split is meant for.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "heap/glibc/glibc_internal.h"
#include "check_util.h"

#define expect_msg(cond, ...)                                                 \
	do {                                                                  \
		if (!(cond))                                                  \
			ck_abort_msg(__VA_ARGS__);                            \
	} while (0)

static uint64_t rng_state;
// Off: large blocks hold no data that chains like headers.
static bool fake_chains = true;

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

#define MAIN_HEAP 0x555555559000ull
#define THREAD_HEAP 0x7ffff0000000ull
#define MMAPPED 0x7ffff7000000ull
#define MMAPPED_SIZE 0x21000ull
#define MAX_HEAP (2ull << 20)

struct region {
	uint64_t addr;
	size_t len;
	uint8_t *buf;
};

struct world {
	struct region regions[3];
	size_t num_regions;
	struct hd_target *t;
	// Chunk offsets of the main heap as written (for smashing).
	uint64_t *chunks;
	size_t num_chunks;
	uint64_t main_len, thread_len, main_top, thread_top;
	bool top_lost, thread_fenced;
};

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

static uint8_t *add_region(struct world *w, uint64_t addr, size_t len)
{
	struct region *r = &w->regions[w->num_regions++];
	r->addr = addr;
	r->len = len;
	r->buf = calloc(1, len);
	ck_assert_ptr_nonnull(r->buf);
	struct hd_mapping m = {.start = addr, .end = addr + len,
			       .prot = HD_PROT_READ | HD_PROT_WRITE,
			       .path = addr == MAIN_HEAP ? "[heap]" : NULL,
			       .readable = true};
	ck_assert_no_error(hd_target_add_mapping(w->t, &m));
	return r->buf;
}

static void put64(uint8_t *buf, uint64_t off, uint64_t v)
{
	memcpy(buf + off, &v, 8);
}

static uint64_t get64(const uint8_t *buf, uint64_t off)
{
	uint64_t v;
	memcpy(&v, buf + off, 8);
	return v;
}

// A chunk size as a program's mallocs make them: mostly small, some
// large.
static uint64_t chunk_size(void)
{
	uint64_t r = rng_below(100);
	if (r < 70)
		return 32 + 16 * rng_below(6);
	if (r < 95)
		return 32 + 16 * rng_below(64);
	return 32 + 16 * rng_below(4096);
}

// Fills a chunk's user bytes: random words, zeros, or (in large chunks)
// pairs that chain like chunk headers, 32 or 48 bytes apart, as an array
// of small integers would.
static void fill_user(uint8_t *buf, uint64_t off, uint64_t size)
{
	uint64_t kind = rng_below(10);
	for (uint64_t o = off + 16; o + 8 <= off + size; o += 8) {
		uint64_t v;
		if (kind < 5)
			v = rng_next();
		else if (kind < 7)
			v = 0;
		else if (kind < 9 && fake_chains)
			v = ((o - off) & 8) ? (rng_below(2) ? 0x31 : 0x21) : 0;
		else if (kind < 9)
			v = 0;
		else
			v = rng_below(4096);
		put64(buf, o, v);
	}
}

// Writes chunks from off to len - tail: the last one of them ends there.
// Every chunk's PREV_INUSE says whether the one before is in use; a free
// one's successor repeats its size in prev_size. non_main: the chunks
// carry NON_MAIN_ARENA. Records the main heap's chunks.
static uint64_t write_chunks(struct world *w, uint8_t *buf, uint64_t len,
			     uint64_t tail, bool non_main, bool record)
{
	uint64_t off = 0, end = len - tail;
	bool prev_free = false;
	uint64_t prev_size = 0, last = 0;
	while (off < end) {
		uint64_t size = chunk_size();
		if (size > end - off || end - off - size < 32)
			size = end - off;
		uint64_t field = size | (prev_free ? 0 : 1) | (non_main ? 4 : 0);
		put64(buf, off, prev_free ? prev_size : rng_next());
		put64(buf, off + 8, field);
		fill_user(buf, off, size);
		if (record) {
			w->chunks = realloc(w->chunks, (w->num_chunks + 1) *
							       sizeof(*w->chunks));
			ck_assert_ptr_nonnull(w->chunks);
			w->chunks[w->num_chunks++] = off;
		}
		prev_free = rng_below(8) == 0;
		prev_size = size;
		last = off;
		off += size;
	}
	return last;
}

// A heap that ends in its top chunk (main) and, when fenced, a thread
// heap closed by the two fenceposts a heap left for a new one ends with.
static void make_world(struct world *w, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	rng_seed(seed);
	ck_assert_no_error(hd_target_create_callback(world_read, w, &w->t));
	w->main_len = (4096 + rng_below(MAX_HEAP / 16)) * 16;
	uint8_t *m = add_region(w, MAIN_HEAP, w->main_len);
	w->main_top = write_chunks(w, m, w->main_len, 0, false, true);
	w->thread_len = (1024 + rng_below(MAX_HEAP / 64)) * 16;
	w->thread_fenced = rng_below(2);
	uint8_t *t = add_region(w, THREAD_HEAP, w->thread_len);
	// heap_info and malloc_state before the first chunk.
	uint64_t lead = 0x8b0;
	w->thread_top = lead + write_chunks(w, t + lead, w->thread_len - lead,
					    w->thread_fenced ? 32 : 0, true,
					    false);
	if (w->thread_fenced) {
		put64(t, w->thread_len - 32 + 8, 16 | 1);
		put64(t, w->thread_len - 16 + 8, 0 | 1);
	}
	uint8_t *mm = add_region(w, MMAPPED, MMAPPED_SIZE);
	put64(mm, 8, MMAPPED_SIZE | 2);
}

// Damage to the main heap: smashed sizes (random, zero, a little more or
// less than the truth), a top chunk lost or moved into the middle.
static void damage(struct world *w, unsigned n)
{
	uint8_t *m = w->regions[0].buf;
	for (unsigned i = 0; i < n && w->num_chunks > 2; i++) {
		uint64_t off = w->chunks[rng_below(w->num_chunks - 1)];
		uint64_t size = get64(m, off + 8);
		uint64_t v;
		switch (rng_below(6)) {
		case 0: v = rng_next(); break;
		case 1: v = 0; break;
		case 2: v = size + 16 * (1 + rng_below(8)); break;
		case 3: v = size > 48 ? size - 16 : 8; break;
		case 4: v = size + 8; break;
		default: v = (size & 7) | (16 * (1 + rng_below(w->main_len / 16))); break;
		}
		put64(m, off + 8, v);
	}
	uint64_t r = n ? rng_below(8) : 8;
	if (r == 0) {
		w->top_lost = true;
	} else if (r == 1 && w->num_chunks > 4) {
		w->main_top = w->chunks[rng_below(w->num_chunks)];
	}
}

struct walked {
	struct hd_heap *h;
	struct glibc_gap *gaps;
	size_t num_gaps;
};

static struct walked walk(struct world *w, unsigned threads)
{
	struct walked out = {0};
	ck_assert_no_error(hd_heap_alloc(&out.h));
	glibc_heap_declare(out.h);
	struct glibc_walk g = {.t = w->t, .h = out.h, .threads = threads,
			       .threads_asked = threads > 1};
	glibc_layout_default(&g.lay);
	struct hd_arena arenas[2] = {
		{.addr = 0x7ffff7e19c80, .is_main = true, .top = MAIN_HEAP + w->main_top},
		{.addr = THREAD_HEAP + 0x20, .top = THREAD_HEAP + w->thread_top},
	};
	g.arenas = arenas;
	g.num_arenas = 2;
	struct glibc_segment segs[3] = {
		// Given out of order: the walk sorts them.
		{.start = THREAD_HEAP + 0x8b0, .end = THREAD_HEAP + w->thread_len,
		 .map_start = THREAD_HEAP, .arena = 1,
		 .top = w->thread_fenced ? 0 : THREAD_HEAP + w->thread_top},
		{.start = MMAPPED, .end = MMAPPED + MMAPPED_SIZE,
		 .map_start = MMAPPED, .arena = HD_ARENA_NONE, .mmapped = true},
		{.start = MAIN_HEAP, .end = MAIN_HEAP + w->main_len,
		 .map_start = MAIN_HEAP, .arena = 0,
		 .top = w->top_lost ? 0 : MAIN_HEAP + w->main_top,
		 .top_lost = w->top_lost},
	};
	g.segs = malloc(sizeof(segs));
	ck_assert_ptr_nonnull(g.segs);
	memcpy(g.segs, segs, sizeof(segs));
	g.num_segs = g.cap_segs = 3;
	ck_assert_no_error(glibc_walk_chunks(&g));
	for (size_t i = 0; i < g.num_views; i++)
		hd_view_deinit(&g.views[i]);
	free(g.views);
	free(g.segs);
	out.gaps = g.gaps;
	out.num_gaps = g.num_gaps;
	return out;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void walked_deinit(struct walked *x)
{
	hd_heap_destroy(x->h);
	free(x->gaps);
}

// Same rows, problems (words and order) and, when gaps are given, gaps.
static void same_heap(const struct hd_heap *a, const struct hd_heap *b,
		      const char *what)
{
	expect_msg(a->num_blocks == b->num_blocks, "%s: %zu blocks, %zu with threads",
		   what, a->num_blocks, b->num_blocks);
	for (size_t i = 0; i < a->num_blocks; i++)
		expect_msg(a->addr[i] == b->addr[i] && a->span[i] == b->span[i] &&
			   a->flags[i] == b->flags[i] && a->region[i] == b->region[i],
			   "%s: block %zu differs: 0x%" PRIx64 " span %u flags %u region %u, "
			   "with threads 0x%" PRIx64 " span %u flags %u region %u",
			   what, i, a->addr[i], a->span[i], a->flags[i], a->region[i],
			   b->addr[i], b->span[i], b->flags[i], b->region[i]);
	expect_msg(a->num_problems == b->num_problems &&
		   a->dropped_problems == b->dropped_problems,
		   "%s: %zu problems, %zu with threads", what, a->num_problems,
		   b->num_problems);
	for (size_t i = 0; i < a->num_problems; i++)
		expect_msg(a->problems[i].address == b->problems[i].address &&
			   strcmp(a->problems[i].message, b->problems[i].message) == 0,
			   "%s: problem %zu differs: %s / %s", what, i,
			   a->problems[i].message, b->problems[i].message);
}

static void same_walk(const struct walked *a, const struct walked *b,
		      const char *what)
{
	same_heap(a->h, b->h, what);
	expect_msg(a->num_gaps == b->num_gaps, "%s: %zu gaps, %zu with threads",
		   what, a->num_gaps, b->num_gaps);
	for (size_t i = 0; i < a->num_gaps; i++)
		expect_msg(a->gaps[i].start == b->gaps[i].start &&
			   a->gaps[i].end == b->gaps[i].end,
			   "%s: gap %zu differs", what, i);
}

static void world_deinit(struct world *w)
{
	hd_target_destroy(w->t);
	for (size_t i = 0; i < w->num_regions; i++)
		free(w->regions[i].buf);
	free(w->chunks);
}

// Walks the world of seed with 1 thread and with 2, 3 and 5; damage
// smashes that many headers first. Returns the problems found.
static size_t compare_seed(uint64_t seed, unsigned smashes)
{
	struct world w;
	make_world(&w, seed);
	damage(&w, smashes);
	struct walked one = walk(&w, 1);
	static const unsigned threads[] = {2, 3, 5};
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		struct walked more = walk(&w, threads[i]);
		char what[96];
		snprintf(what, sizeof(what), "seed %" PRIu64 ", %u smashes, %u threads",
			 seed, smashes, threads[i]);
		same_walk(&one, &more, what);
		walked_deinit(&more);
	}
	size_t problems = one.h->num_problems;
	if (getenv("SPLIT_TEST_VERBOSE"))
		for (size_t i = 0; i < one.h->num_problems; i++)
			printf("seed %" PRIu64 ": %s\n", seed, one.h->problems[i].message);
	walked_deinit(&one);
	world_deinit(&w);
	return problems;
}

START_TEST(test_clean_heaps)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		ck_assert_uint_eq(compare_seed(seed, 0), 0);
}
END_TEST

START_TEST(test_damaged_heaps)
{
	size_t problems = 0;
	for (uint64_t seed = 100; seed < 300; seed++)
		problems += compare_seed(seed, 1 + (unsigned)(seed % 7));
	// The damage was seen (and so compared), not walked around silently.
	ck_assert_uint_gt(problems, 200);
}
END_TEST

// The split is real: a clean heap walked on two threads is taken piece by
// piece (the pieces' rows are written by them, not by the walk).
START_TEST(test_pieces_taken)
{
	struct world w;
	fake_chains = false;
	make_world(&w, 7);
	fake_chains = true;
	struct walked one = walk(&w, 1), two = walk(&w, 2);
	same_walk(&one, &two, "seed 7, 2 threads");
	// Walked again by hand: pieces, taken.
	struct hd_heap *h;
	ck_assert_no_error(hd_heap_alloc(&h));
	glibc_heap_declare(h);
	struct glibc_walk g = {.t = w.t, .h = h, .threads = 2, .threads_asked = true};
	struct hd_arena a = {.is_main = true};
	g.arenas = &a;
	g.num_arenas = 1;
	struct glibc_segment s = {.start = MAIN_HEAP, .end = MAIN_HEAP + w.main_len,
				  .map_start = MAIN_HEAP, .top = MAIN_HEAP + w.main_top};
	g.segs = &s;
	g.num_segs = 1;
	const uint8_t *data[1] = {w.regions[0].buf};
	struct glibc_split sp;
	ck_assert_no_error(glibc_split_heaps(&g, data, &sp));
	ck_assert_uint_ge(sp.num, 2);
	uint64_t counted = 0;
	for (size_t i = 0; i < sp.num; i++) {
		// Every piece found the chain: its first chunk is one written.
		ck_assert_uint_gt(sp.pieces[i].num_sync, 0);
		uint64_t first = sp.pieces[i].sync[0];
		ck_assert(bsearch(&first, w.chunks, w.num_chunks, sizeof(*w.chunks),
				  cmp_u64) != NULL);
		counted += sp.pieces[i].count;
	}
	// All but the top chunk, which the sequential walk takes.
	ck_assert_uint_eq(counted + 1, w.num_chunks);
	glibc_split_deinit(&sp);
	hd_heap_destroy(h);
	walked_deinit(&one);
	walked_deinit(&two);
	world_deinit(&w);
}
END_TEST

// ------------------------------------------------------------------ cores

static char **core_paths;
static int num_cores;

static void walk_core(const char *path, unsigned threads, struct hd_heap **ret)
{
	struct hd_target *t;
	struct hd_target_options to = {0};
	ck_assert_no_error(hd_target_open_core(path, &to, &t));
	struct hd_debuginfo_options dopts = {0};
	struct hd_debuginfo *di = NULL;
	struct hd_error *err = hd_debuginfo_create(t, &dopts, &di);
	if (err) {
		hd_error_destroy(err);
		di = NULL;
	}
	struct hd_heap_options ho = {.use_debuginfo = true};
	ck_assert_no_error(hd_heap_walk_threads(t, di, &ho, threads, true, ret));
	hd_debuginfo_destroy(di);
	hd_target_destroy(t);
}

START_TEST(test_cores)
{
	for (int i = 0; i < num_cores; i++) {
		struct hd_heap *a, *b;
		walk_core(core_paths[i], 1, &a);
		walk_core(core_paths[i], 2, &b);
		same_heap(a, b, core_paths[i]);
		printf("%s: %zu blocks, %zu problems: the same with 1 and 2 threads\n",
		       core_paths[i], a->num_blocks, a->num_problems);
		hd_heap_destroy(a);
		hd_heap_destroy(b);
	}
}
END_TEST

int main(int argc, char **argv)
{
	core_paths = argv + 1;
	num_cores = argc - 1;
	Suite *s = suite_create("glibc_split");
	TCase *tc = tcase_create("split");
	tcase_set_timeout(tc, 300);
	if (num_cores) {
		tcase_add_test(tc, test_cores);
	} else {
		tcase_add_test(tc, test_clean_heaps);
		tcase_add_test(tc, test_damaged_heaps);
		tcase_add_test(tc, test_pieces_taken);
	}
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
