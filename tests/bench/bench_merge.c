// Benchmark of core/heap/merge.c: the merge of two allocators' tables of
// N blocks in all (default 1M) against a plain copy of the same 15 bytes
// per block, in two layouts: runs (each allocator's blocks in regions of
// 4096 consecutive blocks, as pools and arenas lie), and alternating (every
// block of the other allocator than its neighbours: the worst case).
// Prints figures, checks only that the merge kept every block.
//
//   bench_merge [N]
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heap/backend.h"

#define RUNS 5

static const struct hd_heap_backend a_backend = {.name = "a"};
static const struct hd_heap_backend b_backend = {.name = "b"};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

// Allocator k's table: blocks of 64 bytes (header 16), where block i of
// the whole heap belongs to k when owner(i) == k.
static struct hd_heap *part(size_t n, unsigned k, size_t run)
{
	static const struct hd_heap_shape shapes[] = {{16, 8}};
	static const struct hd_free_list lists[] = {{"none", NULL, false},
						    {"free", NULL, false}};
	struct hd_heap *h = NULL;
	if (hd_heap_alloc(&h))
		abort();
	hd_heap_declare(h, k ? &b_backend : &a_backend, 4, shapes, 1, lists, 2);
	struct hd_region r = {.addr = k, .kind = "region"};
	hd_heap_add_region(h, &r);
	if (!hd_heap_reserve(h, n / 2 + run))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((i / run) % 2 == k)
			hd_heap_add(h, 0x100000000ull + 64 * i + 16, 64,
				    i % 3 ? HD_STATE_USED : HD_STATE_FREE,
				    i % 3 ? 0 : 1, 0, 0);
	hd_heap_count_totals(h);
	return h;
}

static void bench(const char *what, size_t n, size_t run)
{
	double best_merge = 1e9, best_copy = 1e9;
	for (int r = 0; r < RUNS; r++) {
		struct hd_heap *parts[2] = {part(n, 0, run), part(n, 1, run)};
		size_t total = parts[0]->num_blocks + parts[1]->num_blocks;
		// The plain copy: what the merge must not cost much more than.
		double t0 = now();
		uint64_t *addr = malloc(total * 8);
		uint32_t *span = malloc(total * 4);
		uint8_t *flags = malloc(total);
		uint16_t *region = malloc(total * 2);
		size_t o = 0;
		for (int k = 0; k < 2; k++) {
			size_t m = parts[k]->num_blocks;
			memcpy(addr + o, parts[k]->addr, m * 8);
			memcpy(span + o, parts[k]->span, m * 4);
			memcpy(flags + o, parts[k]->flags, m);
			memcpy(region + o, parts[k]->region, m * 2);
			o += m;
		}
		double t1 = now();
		struct hd_heap *h = NULL;
		if (hd_heap_merge(parts, 2, &h))
			abort();
		double t2 = now();
		if (hd_heap_num_blocks(h) != total || addr[total - 1] == 0) {
			fprintf(stderr, "bench_merge: %zu blocks merged of %zu\n",
				hd_heap_num_blocks(h), total);
			exit(1);
		}
		if (t1 - t0 < best_copy)
			best_copy = t1 - t0;
		if (t2 - t1 < best_merge)
			best_merge = t2 - t1;
		free(addr);
		free(span);
		free(flags);
		free(region);
		hd_heap_destroy(h);
	}
	printf("%-12s %zu blocks: merge %.2f ms (%.1f ns/block), plain copy %.2f ms (%.1f ns/block)\n",
	       what, n, best_merge * 1e3, best_merge * 1e9 / (double)n,
	       best_copy * 1e3, best_copy * 1e9 / (double)n);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	if (n < 2) {
		fprintf(stderr, "usage: bench_merge [N >= 2]\n");
		return 2;
	}
	bench("runs", n, 4096);
	bench("alternating", n, 1);
	return 0;
}
