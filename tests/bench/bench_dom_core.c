// The dominator algorithm alone on a real heap's graph: opens a core,
// builds its typed object graph once, then times hd_dominators_grouped
// (the ranked view `heapdom dominators` computes) RUNS times and prints the
// best wall and CPU time, per vertex and per edge. Prints figures, checks
// nothing; compare builds on the same core in the same run (issue 23).
//
//   bench_dom_core CORE [RUNS]
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "heapdom.h"
#include "dom/dom.h"
#include "graph/graph_internal.h"

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(struct hd_error *err)
{
	fprintf(stderr, "bench_dom_core: %s\n", err->message);
	hd_error_destroy(err);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_dom_core CORE [RUNS]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	struct hd_target *t;
	struct hd_session *s;
	const struct hd_graph *g;
	struct hd_error *err = hd_target_open_core(argv[1], NULL, &t);
	if (err)
		return fail(err);
	err = hd_session_create(t, NULL, &s);
	if (err) {
		hd_target_destroy(t);
		return fail(err);
	}
	err = hd_session_graph(s, &g);
	if (err) {
		hd_session_destroy(s);
		return fail(err);
	}
	uint64_t groups[HD_ROOT_RANKS];
	hd_graph_class_groups(g, groups);
	double wall = 1e30, cpu = 1e30;
	uint32_t reached = 0;
	for (int r = 0; r < runs; r++) {
		struct hd_domtree tree;
		double w0 = clock_s(CLOCK_MONOTONIC);
		double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		err = hd_dominators_grouped(&g->fwd, 0, groups, HD_ROOT_RANKS, &tree);
		double c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		double w1 = clock_s(CLOCK_MONOTONIC);
		if (err) {
			hd_session_destroy(s);
			return fail(err);
		}
		reached = tree.num_reachable;
		hd_domtree_deinit(&tree);
		if (w1 - w0 < wall)
			wall = w1 - w0;
		if (c1 - c0 < cpu)
			cpu = c1 - c0;
	}
	uint32_t n = g->fwd.n;
	uint64_t m = g->fwd.offsets[n];
	printf("%" PRIu32 " vertices (%" PRIu32 " reached), %" PRIu64
	       " edges: best of %d %.3f s wall, %.3f s CPU; %.1f ns per vertex, %.1f ns per edge (CPU)\n",
	       n, reached, m, runs, wall, cpu, n ? cpu / n * 1e9 : 0.0,
	       m ? cpu / (double)m * 1e9 : 0.0);
	hd_session_destroy(s);
	return 0;
}
