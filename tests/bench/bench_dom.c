// Benchmark of core/dom: time per edge and memory of hd_csr_reverse,
// hd_dominators and hd_retained on a 10M list, a 10M-node tree of lists
// and a random graph of 1M vertices and 5M edges. Prints figures, checks
// nothing.
//
// Memory is the peak resident growth during each call, measured by
// resetting VmHWM through /proc/self/clear_refs, so it counts the pages
// actually touched (outputs included), not what was asked of malloc.
#include <inttypes.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapdom.h"
#include "dom/dom.h"

#define RUNS 3

struct graph {
	uint32_t n;
	uint64_t m;
	uint32_t *offsets;
	uint32_t *targets;
};

static uint64_t rng_state = 42;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)((rng_next() >> 32) * n >> 32);
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(EXIT_FAILURE);
	}
	return p;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kb = -1;
	size_t len = strlen(field);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, len) && line[len] == ':') {
			kb = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

// Resets the peak RSS to the current RSS; returns the current RSS in kB,
// or -1 if the kernel does not let us.
static long peak_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int ok = fputs("5", f) >= 0;
	if (fclose(f) || !ok)
		return -1;
	return status_kb("VmRSS");
}

static double peak_mb(long base_kb)
{
	if (base_kb < 0)
		return -1;
	return (status_kb("VmHWM") - base_kb) / 1024.0;
}

// ------------------------------------------------------------------ graphs

static void graph_alloc(struct graph *g, uint32_t n, uint64_t max_m)
{
	g->n = n;
	g->m = 0;
	g->offsets = xmalloc(((size_t)n + 1) * sizeof(*g->offsets));
	g->targets = xmalloc(max_m * sizeof(*g->targets));
}

static void graph_free(struct graph *g)
{
	free(g->offsets);
	free(g->targets);
}

// 0 -> 1 -> ... -> n-1.
static void make_list(struct graph *g, uint32_t n)
{
	graph_alloc(g, n, n);
	for (uint32_t v = 0; v < n; v++) {
		g->offsets[v] = g->m;
		if (v + 1 < n)
			g->targets[g->m++] = v + 1;
	}
	g->offsets[n] = g->m;
}

// A binary tree of n / per nodes, each owning a list of per - 1 nodes
// (left, right, list head; list nodes point to the next). Ids follow a
// depth-first allocation order, roughly what addresses of a program
// building the structure recursively would give.
static void make_tree_of_lists(struct graph *g, uint32_t n, uint32_t per)
{
	uint32_t tree = n / per;
	graph_alloc(g, tree * per, 3 * (uint64_t)tree * per);
	// Node t of the tree (heap layout) gets ids t*per .. t*per+per-1.
	for (uint32_t t = 0; t < tree; t++) {
		uint32_t base = t * per;
		g->offsets[base] = g->m;
		if (2 * (uint64_t)t + 1 < tree)
			g->targets[g->m++] = (2 * t + 1) * per;
		if (2 * (uint64_t)t + 2 < tree)
			g->targets[g->m++] = (2 * t + 2) * per;
		if (per > 1)
			g->targets[g->m++] = base + 1;
		for (uint32_t i = 1; i < per; i++) {
			g->offsets[base + i] = g->m;
			if (i + 1 < per)
				g->targets[g->m++] = base + i + 1;
		}
	}
	g->offsets[g->n] = g->m;
}

static void make_random(struct graph *g, uint32_t n, uint64_t m)
{
	graph_alloc(g, n, m);
	uint64_t per = m / n, extra = m % n;
	for (uint32_t v = 0; v < n; v++) {
		g->offsets[v] = g->m;
		uint64_t deg = per + (v < extra);
		for (uint64_t i = 0; i < deg; i++)
			g->targets[g->m++] = rng_below(n);
	}
	g->offsets[n] = g->m;
}

// Renames vertices at random: the same shape, with the locality of ids
// scattered over a fragmented heap. Returns the new id of old vertex root.
static uint32_t shuffle(struct graph *g, uint32_t root)
{
	uint32_t n = g->n;
	uint32_t *perm = xmalloc(n * sizeof(*perm));
	for (uint32_t v = 0; v < n; v++)
		perm[v] = v;
	for (uint32_t v = n; v > 1; v--) {
		uint32_t j = rng_below(v), tmp = perm[v - 1];
		perm[v - 1] = perm[j];
		perm[j] = tmp;
	}
	uint32_t *offsets = xmalloc(((size_t)n + 1) * sizeof(*offsets));
	uint32_t *targets = xmalloc(g->m * sizeof(*targets));
	offsets[0] = 0;
	uint32_t *inv = xmalloc(n * sizeof(*inv));
	for (uint32_t v = 0; v < n; v++)
		inv[perm[v]] = v;
	for (uint32_t nv = 0; nv < n; nv++) {
		uint32_t v = inv[nv];
		uint64_t deg = g->offsets[v + 1] - g->offsets[v];
		for (uint64_t i = 0; i < deg; i++)
			targets[offsets[nv] + i] =
				perm[g->targets[g->offsets[v] + i]];
		offsets[nv + 1] = offsets[nv] + deg;
	}
	root = perm[root];
	free(inv);
	free(perm);
	graph_free(g);
	g->offsets = offsets;
	g->targets = targets;
	return root;
}

// ------------------------------------------------------------------- bench

static void die(struct hd_error *err)
{
	fprintf(stderr, "error: %s\n", err->message);
	exit(EXIT_FAILURE);
}

struct timing {
	double rev, dom, ret;    // best seconds
	double mb_rev, mb_dom, mb_ret; // peak growth of the first run
	uint32_t reached;
};

static void run(const struct graph *g, uint32_t root, const uint64_t *size,
		struct timing *tm)
{
	struct hd_csr csr = { g->n, g->offsets, g->targets }, rev;
	*tm = (struct timing){ .rev = 1e30, .dom = 1e30, .ret = 1e30 };
	for (int r = 0; r < RUNS; r++) {
		long base = peak_reset();
		double t0 = now();
		struct hd_error *err = hd_csr_reverse(&csr, &rev);
		double t1 = now();
		if (err)
			die(err);
		if (!r)
			tm->mb_rev = peak_mb(base);

		base = peak_reset();
		struct hd_domtree t;
		double t2 = now();
		err = hd_dominators(&csr, root, &t);
		double t3 = now();
		if (err)
			die(err);
		if (!r)
			tm->mb_dom = peak_mb(base);
		tm->reached = t.num_reachable;

		uint64_t *retained = xmalloc(g->n * sizeof(*retained));
		uint32_t *count = xmalloc(g->n * sizeof(*count));
		base = peak_reset();
		double t4 = now();
		hd_retained(&t, size, retained, count);
		double t5 = now();
		if (!r)
			tm->mb_ret = peak_mb(base);

		free(retained);
		free(count);
		hd_domtree_deinit(&t);
		hd_csr_free_owned(&rev);
		if (t1 - t0 < tm->rev)
			tm->rev = t1 - t0;
		if (t3 - t2 < tm->dom)
			tm->dom = t3 - t2;
		if (t5 - t4 < tm->ret)
			tm->ret = t5 - t4;
	}
}

// Big arrays as fresh mmaps (what one analysis of a core pays: every page
// faulted in and zeroed), or recycled from the malloc heap (the algorithm
// alone).
static void set_cold(bool cold)
{
	mallopt(M_MMAP_THRESHOLD, cold ? 128 * 1024 : 1 << 30);
	mallopt(M_TRIM_THRESHOLD, cold ? 128 * 1024 : -1);
	if (cold)
		malloc_trim(0);
}

static void line(const char *what, double cold, double warm, double mb,
		 double m)
{
	printf("  %-11s %8.1f ms %7.2f ns/edge  +%4.0f MB | %8.1f ms %7.2f ns/edge\n",
	       what, cold * 1e3, cold * 1e9 / m, mb, warm * 1e3,
	       warm * 1e9 / m);
}

static void bench(const char *name, const struct graph *g, uint32_t root)
{
	uint64_t *size = xmalloc(g->n * sizeof(*size));
	for (uint32_t v = 0; v < g->n; v++)
		size[v] = 16 + 8 * (v % 13);
	struct timing cold, warm;
	run(g, root, size, &cold);
	set_cold(false);
	run(g, root, size, &warm);
	set_cold(true);
	free(size);

	double m = g->m ? (double)g->m : 1;
	double graph_mb = (((double)g->n + 1) * 8 + (double)g->m * 4) / 1048576;
	printf("%s: n=%" PRIu32 " m=%" PRIu64 " reached=%" PRIu32
	       " (graph %.0f MB)\n",
	       name, g->n, g->m, cold.reached, graph_mb);
	printf("  %-11s %31s peak | %27s\n", "", "cold (fresh pages)",
	       "warm (recycled pages)");
	line("reverse", cold.rev, warm.rev, cold.mb_rev, m);
	line("dominators", cold.dom, warm.dom, cold.mb_dom, m);
	line("retained", cold.ret, warm.ret, cold.mb_ret, m);
	line("total", cold.rev + cold.dom + cold.ret,
	     warm.rev + warm.dom + warm.ret,
	     cold.mb_rev + cold.mb_dom + cold.mb_ret, m);
	printf("  dominators: %.1f bytes per vertex (idom and preorder "
	       "outputs and scratch)\n",
	       cold.mb_dom * 1048576 / g->n);
	fflush(stdout);
}

int main(void)
{
	// Cold runs keep every big array a fresh mmap, so that the resident
	// growth measures what each call touches.
	set_cold(true);
	if (peak_reset() < 0)
		printf("(peak memory unavailable: /proc/self/clear_refs)\n");
	printf("best of %d runs; peak is the resident growth during the call\n",
	       RUNS);

	struct graph g;
	make_list(&g, 10000000);
	bench("list 10M", &g, 0);
	graph_free(&g);

	make_tree_of_lists(&g, 10000000, 10);
	bench("binary tree of 1M nodes with 9-node lists (10M)", &g, 0);
	bench("same, ids shuffled", &g, shuffle(&g, 0));
	graph_free(&g);

	make_random(&g, 1000000, 5000000);
	bench("random 1M vertices 5M edges", &g, 0);
	graph_free(&g);
	return EXIT_SUCCESS;
}
