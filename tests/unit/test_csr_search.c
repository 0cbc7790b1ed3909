// Unit tests of hd_csr_search (core/dom/csr.c), the backward search behind
// `why`: every root that reaches a vertex, the shortest chain from each,
// excluded roots reported but never followed. A hand-made graph checks the
// named cases; random graphs are checked against an independent oracle (a
// forward BFS from each root over the edge list, never entering an
// excluded root).
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "dom/dom.h"
#include "check_util.h"

struct graph {
	uint32_t n;
	size_t m;
	uint32_t src[4096], dst[4096];
	uint32_t offsets[513];
	uint32_t targets[4096];
};

static void edge(struct graph *g, uint32_t u, uint32_t v)
{
	ck_assert_uint_lt(g->m, 4096);
	g->src[g->m] = u;
	g->dst[g->m] = v;
	g->m++;
}

// The CSR of g's edges, and its reverse (caller frees rev).
static struct hd_csr csr_of(struct graph *g, struct hd_csr *rev)
{
	ck_assert_uint_le(g->n, 512);
	memset(g->offsets, 0, sizeof(g->offsets));
	for (size_t e = 0; e < g->m; e++)
		g->offsets[g->src[e] + 1]++;
	for (uint32_t v = 0; v < g->n; v++)
		g->offsets[v + 1] += g->offsets[v];
	uint32_t fill[513];
	memcpy(fill, g->offsets, sizeof(fill));
	for (size_t e = 0; e < g->m; e++)
		g->targets[fill[g->src[e]]++] = g->dst[e];
	struct hd_csr c = { g->n, g->offsets, g->targets };
	ck_assert_no_error(hd_csr_reverse(&c, rev));
	return c;
}

static bool has_edge(const struct graph *g, uint32_t u, uint32_t v)
{
	for (size_t e = 0; e < g->m; e++)
		if (g->src[e] == u && HD_EDGE_TARGET(g->dst[e]) == v)
			return true;
	return false;
}

static bool exclude_set(void *arg, uint32_t root)
{
	return ((const bool *)arg)[root];
}

static const struct hd_csr_found *find(const struct hd_csr_search *s,
				       uint32_t root)
{
	for (size_t i = 0; i < s->num_found; i++)
		if (s->found[i].vertex == root)
			return &s->found[i];
	return NULL;
}

// The chain of found root r: starts at r, ends at v, follows edges, has
// dist + 1 vertices.
static void check_path(const struct graph *g, const struct hd_csr_search *s,
		       const struct hd_csr_found *f, uint32_t v)
{
	uint32_t *path;
	size_t len;
	ck_assert_no_error(hd_csr_search_path(s, f->slot, &path, &len));
	ck_assert_uint_eq(len, (size_t)f->dist + 1);
	ck_assert_uint_eq(path[0], f->vertex);
	ck_assert_uint_eq(path[len - 1], v);
	for (size_t i = 0; i + 1 < len; i++)
		ck_assert_msg(has_edge(g, path[i], path[i + 1]),
			      "no edge %u -> %u in the chain from %u", path[i],
			      path[i + 1], f->vertex);
	free(path);
}

// 0 super-root; roots 1..4; blocks 5..14.
//   1 -> 5 -> 6 -> 7      root 1 reaches 7 in 3
//   2 -> 7                root 2 in 1
//   3 -> 6                root 3 in 2
//   4 -> 8 -> 2           root 4 reaches 7 only through root 2
//   9 -> 7                a block nothing points at
//   11 -> 12, 13 <-> 14   leaked: a source and a cycle
static void small_graph(struct graph *g)
{
	memset(g, 0, sizeof(*g));
	g->n = 15;
	for (uint32_t r = 1; r <= 4; r++)
		edge(g, 0, r);
	edge(g, 1, 5);
	edge(g, 5, 6);
	edge(g, 6, 7 | HD_EDGE_INTERIOR);
	edge(g, 2, 7);
	edge(g, 3, 6);
	edge(g, 4, 8);
	edge(g, 8, 2);
	edge(g, 9, 7);
	edge(g, 11, 12);
	edge(g, 13, 14);
	edge(g, 14, 13);
}

START_TEST(test_all_roots)
{
	static struct graph g;
	small_graph(&g);
	struct hd_csr rev;
	csr_of(&g, &rev);
	struct hd_csr_search s;
	ck_assert_no_error(hd_csr_search(&rev, 7, HD_CSR_ALL_ROOTS, NULL, NULL, &s));
	ck_assert_uint_eq(s.num_found, 4);
	static const uint32_t dist[5] = { 0, 3, 1, 2, 3 };
	for (uint32_t r = 1; r <= 4; r++) {
		const struct hd_csr_found *f = find(&s, r);
		ck_assert_msg(f, "root %u not found", r);
		ck_assert_uint_eq(f->dist, dist[r]);
		ck_assert(!f->excluded);
		check_path(&g, &s, f, 7);
	}
	// Nearest first.
	for (size_t i = 1; i < s.num_found; i++)
		ck_assert_uint_le(s.found[i - 1].dist, s.found[i].dist);
	ck_assert_uint_ne(s.source, SIZE_MAX);
	ck_assert_uint_eq(s.visits[s.source].vertex, 9);
	hd_csr_search_deinit(&s);
	hd_csr_free_owned(&rev);
}
END_TEST

START_TEST(test_exclude)
{
	static struct graph g;
	small_graph(&g);
	struct hd_csr rev;
	csr_of(&g, &rev);
	bool ex[15] = { false };
	ex[2] = true;
	struct hd_csr_search s;
	ck_assert_no_error(hd_csr_search(&rev, 7, HD_CSR_ALL_ROOTS, exclude_set, ex, &s));
	// Root 2 is reported as excluded; root 4 reached 7 only through it.
	const struct hd_csr_found *f = find(&s, 2);
	ck_assert(f && f->excluded && f->dist == 1);
	ck_assert_ptr_null(find(&s, 4));
	ck_assert_uint_eq(s.num_found, 3);
	hd_csr_search_deinit(&s);
	// The first root not excluded is 3, two steps away.
	ck_assert_no_error(hd_csr_search(&rev, 7, HD_CSR_FIRST_ROOT, exclude_set, ex, &s));
	ck_assert_uint_ge(s.num_found, 1);
	f = &s.found[s.num_found - 1];
	ck_assert_uint_eq(f->vertex, 3);
	ck_assert(!f->excluded);
	check_path(&g, &s, f, 7);
	hd_csr_search_deinit(&s);
	// Every root excluded: each is reported, none followed.
	ex[1] = ex[3] = ex[4] = true;
	ck_assert_no_error(hd_csr_search(&rev, 7, HD_CSR_ALL_ROOTS, exclude_set, ex, &s));
	ck_assert_uint_eq(s.num_found, 3);
	for (size_t i = 0; i < s.num_found; i++)
		ck_assert(s.found[i].excluded);
	hd_csr_search_deinit(&s);
	hd_csr_free_owned(&rev);
}
END_TEST

START_TEST(test_chain)
{
	static struct graph g;
	small_graph(&g);
	struct hd_csr rev;
	csr_of(&g, &rev);
	uint32_t *path;
	size_t len;
	ck_assert_no_error(hd_csr_chain(&rev, 7, true, &path, &len));
	ck_assert_uint_eq(len, 2);
	ck_assert(path[0] == 2 && path[1] == 7);
	free(path);
	ck_assert_no_error(hd_csr_chain(&rev, 12, false, &path, &len));
	ck_assert(len == 2 && path[0] == 11 && path[1] == 12);
	free(path);
	// A leaked cycle starts at the last vertex reached.
	ck_assert_no_error(hd_csr_chain(&rev, 14, false, &path, &len));
	ck_assert(len == 2 && path[0] == 13 && path[1] == 14);
	free(path);
	struct hd_csr_search s;
	struct hd_error *err = hd_csr_search(&rev, 99, HD_CSR_ALL_ROOTS, NULL, NULL, &s);
	ck_assert_ptr_nonnull(err);
	hd_error_destroy(err);
	hd_csr_free_owned(&rev);
}
END_TEST

static uint64_t rng = 12345;
static uint32_t below(uint32_t n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng >> 33) % n);
}

// Oracle: the distance from root r to v, forward over the edge list,
// entering no excluded root (r itself excepted); UINT32_MAX if none.
static uint32_t oracle_dist(const struct graph *g, uint32_t r, uint32_t v,
			    const bool *ex)
{
	uint32_t dist[512], queue[512];
	for (uint32_t i = 0; i < g->n; i++)
		dist[i] = UINT32_MAX;
	size_t h = 0, t = 0;
	dist[r] = 0;
	queue[t++] = r;
	while (h < t) {
		uint32_t u = queue[h++];
		if (u == v)
			return dist[u];
		for (size_t e = 0; e < g->m; e++) {
			uint32_t x = HD_EDGE_TARGET(g->dst[e]);
			if (g->src[e] != u || x == 0 || dist[x] != UINT32_MAX || ex[x])
				continue;
			dist[x] = dist[u] + 1;
			queue[t++] = x;
		}
	}
	return UINT32_MAX;
}

START_TEST(test_random)
{
	static struct graph g;
	for (int iter = 0; iter < 300; iter++) {
		memset(&g, 0, sizeof(g));
		g.n = 2 + below(iter < 150 ? 20 : 200);
		uint32_t roots = 1 + below(g.n - 1 < 8 ? g.n - 1 : 8);
		for (uint32_t r = 1; r <= roots; r++)
			edge(&g, 0, r);
		size_t m = below(3 * g.n);
		for (size_t e = 0; e < m; e++) {
			// Roots are sometimes pointed at too (a semantic graph's nodes).
			uint32_t u = 1 + below(g.n - 1), x = 1 + below(g.n - 1);
			edge(&g, u, x | (below(5) == 0 ? HD_EDGE_INTERIOR : 0));
		}
		bool ex[512] = { false };
		for (uint32_t r = 1; r <= roots; r++)
			ex[r] = below(3) == 0;
		struct hd_csr rev;
		csr_of(&g, &rev);
		// A block (not a root), as `why` asks about.
		if (roots + 1 >= g.n) {
			hd_csr_free_owned(&rev);
			continue;
		}
		uint32_t v = roots + 1 + below(g.n - 1 - roots);
		struct hd_csr_search s;
		ck_assert_no_error(hd_csr_search(&rev, v, HD_CSR_ALL_ROOTS, exclude_set, ex, &s));
		size_t want = 0;
		for (uint32_t r = 1; r <= roots; r++) {
			uint32_t d = oracle_dist(&g, r, v, ex);
			const struct hd_csr_found *f = find(&s, r);
			ck_assert_msg((d != UINT32_MAX) == (f != NULL),
				      "iter %d: root %u reaches %u: oracle %u, search %s",
				      iter, r, v, d, f ? "found" : "not found");
			if (!f)
				continue;
			want++;
			ck_assert_msg(f->dist == d, "iter %d: root %u: dist %u, oracle %u",
				      iter, r, f->dist, d);
			ck_assert(f->excluded == ex[r]);
			check_path(&g, &s, f, v);
		}
		ck_assert_uint_eq(s.num_found, want);
		hd_csr_search_deinit(&s);
		hd_csr_free_owned(&rev);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("csr_search");
	TCase *tc = tcase_create("search");
	tcase_add_test(tc, test_all_roots);
	tcase_add_test(tc, test_exclude);
	tcase_add_test(tc, test_chain);
	tcase_add_test(tc, test_random);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
