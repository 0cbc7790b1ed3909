// Unit tests of core/dom: the CSR reverse, semi-NCA dominators and retained
// sizes. Small graphs are checked against an independent oracle (iterative
// data-flow over dominator bitsets, and for the smallest graphs also
// "remove v, see what the root can no longer reach"); medium ones against
// the Cooper-Harvey-Kennedy iterative algorithm; big lists must simply
// survive and give the obvious chain.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "dom/dom.h"
#include "dom/setpool.h"
#include "check_util.h"

// Check's ck_assert_* records every passing assertion through a pipe,
// which dominates the run time in loops over millions of vertices; these
// report only failures.
#define expect_msg(cond, ...)                                                 \
	do {                                                                  \
		if (!(cond))                                                  \
			ck_abort_msg(__VA_ARGS__);                            \
	} while (0)
#define expect(cond) expect_msg(cond, "%s:%d: %s", __FILE__, __LINE__, #cond)
#define expect_eq(a, b)                                                       \
	do {                                                                  \
		uint64_t _a = (a), _b = (b);                                  \
		expect_msg(_a == _b, "%s:%d: %s == %s: %" PRIu64 " != %" PRIu64, \
			   __FILE__, __LINE__, #a, #b, _a, _b);               \
	} while (0)

// ------------------------------------------------------------------ random

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
}

// splitmix64: good enough, and the same sequence everywhere.
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

static bool rng_chance(unsigned percent)
{
	return rng_below(100) < percent;
}

// ------------------------------------------------------------------ graphs

// An edge list that owns the CSR built from it.
struct graph {
	uint32_t n;
	size_t num_edges, cap;
	uint32_t *src;
	uint32_t *dst; // may carry HD_EDGE_INTERIOR
	uint32_t *offsets;
	uint32_t *targets;
	uint64_t *size;
};

static void graph_init(struct graph *g, uint32_t n)
{
	*g = (struct graph){ .n = n };
	g->size = malloc((n ? n : 1) * sizeof(*g->size));
	ck_assert_ptr_nonnull(g->size);
	for (uint32_t v = 0; v < n; v++)
		g->size[v] = 16 + 8 * rng_below(64);
}

static void graph_deinit(struct graph *g)
{
	free(g->src);
	free(g->dst);
	free(g->offsets);
	free(g->targets);
	free(g->size);
}

static void add_edge(struct graph *g, uint32_t u, uint32_t t)
{
	if (g->num_edges == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->src = realloc(g->src, g->cap * sizeof(*g->src));
		g->dst = realloc(g->dst, g->cap * sizeof(*g->dst));
		ck_assert(g->src && g->dst);
	}
	g->src[g->num_edges] = u;
	g->dst[g->num_edges] = t;
	g->num_edges++;
}

// Successors keep the order in which edges were added.
static struct hd_csr graph_csr(struct graph *g)
{
	free(g->offsets);
	free(g->targets);
	g->offsets = calloc((size_t)g->n + 1, sizeof(*g->offsets));
	g->targets = malloc((g->num_edges + 1) * sizeof(*g->targets));
	ck_assert(g->offsets && g->targets);
	for (size_t e = 0; e < g->num_edges; e++)
		g->offsets[g->src[e] + 1]++;
	for (uint32_t v = 0; v < g->n; v++)
		g->offsets[v + 1] += g->offsets[v];
	uint32_t *fill = malloc(((size_t)g->n + 1) * sizeof(*fill));
	ck_assert_ptr_nonnull(fill);
	memcpy(fill, g->offsets, ((size_t)g->n + 1) * sizeof(*fill));
	for (size_t e = 0; e < g->num_edges; e++)
		g->targets[fill[g->src[e]]++] = g->dst[e];
	free(fill);
	return (struct hd_csr){ g->n, g->offsets, g->targets };
}

// Renames vertices by a random permutation so that preorder is not simply
// id order; returns the new name of old vertex v in perm (caller frees).
static uint32_t *graph_shuffle(struct graph *g)
{
	uint32_t *perm = malloc((g->n ? g->n : 1) * sizeof(*perm));
	ck_assert_ptr_nonnull(perm);
	for (uint32_t v = 0; v < g->n; v++)
		perm[v] = v;
	for (uint32_t v = g->n; v > 1; v--) {
		uint32_t j = rng_below(v);
		uint32_t tmp = perm[v - 1];
		perm[v - 1] = perm[j];
		perm[j] = tmp;
	}
	for (size_t e = 0; e < g->num_edges; e++) {
		g->src[e] = perm[g->src[e]];
		uint32_t flag = g->dst[e] & HD_EDGE_INTERIOR;
		g->dst[e] = perm[HD_EDGE_TARGET(g->dst[e])] | flag;
	}
	return perm;
}

// ------------------------------------------------------------------ oracle

// Dominator sets by the textbook data-flow equations, one bitset per
// vertex: dom(root) = {root}, dom(v) = {v} ∪ ∩ dom(p) over reachable
// predecessors p, iterated to the fixpoint. Quadratic; small graphs only.
struct oracle {
	uint32_t n, words;
	bool *reach;
	uint64_t *dom; // n * words
	uint32_t *idom;
	uint64_t *retained;
	uint32_t *count;
};

static uint64_t *dom_set(const struct oracle *o, uint32_t v)
{
	return &o->dom[(size_t)v * o->words];
}

static bool dom_has(const struct oracle *o, uint32_t v, uint32_t d)
{
	return dom_set(o, v)[d / 64] >> (d % 64) & 1;
}

// Reachability by the test's own queue, and the order to iterate in.
static uint32_t oracle_reach(struct oracle *o, const struct graph *g,
			     uint32_t root, uint32_t *order)
{
	uint32_t len = 0;
	o->reach[root] = true;
	order[len++] = root;
	for (uint32_t i = 0; i < len; i++) {
		uint32_t u = order[i];
		for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
			uint32_t t = HD_EDGE_TARGET(g->targets[e]);
			if (!o->reach[t]) {
				o->reach[t] = true;
				order[len++] = t;
			}
		}
	}
	return len;
}

// Predecessor lists the naive way, by bucketing the edge list: v's list
// is preds[poff[v] .. poff[v + 1]). Independent of hd_csr_reverse.
static void naive_preds(const struct graph *g, uint64_t **poff_ret,
			uint32_t **preds_ret)
{
	uint32_t n = g->n;
	uint64_t *poff = calloc((size_t)n + 2, sizeof(*poff));
	uint32_t *preds = malloc((g->num_edges + 1) * sizeof(*preds));
	ck_assert(poff && preds);
	for (size_t e = 0; e < g->num_edges; e++)
		poff[HD_EDGE_TARGET(g->dst[e]) + 1]++;
	for (uint32_t v = 0; v < n; v++)
		poff[v + 1] += poff[v];
	uint64_t *fill = malloc(((size_t)n + 1) * sizeof(*fill));
	ck_assert_ptr_nonnull(fill);
	memcpy(fill, poff, ((size_t)n + 1) * sizeof(*fill));
	for (size_t e = 0; e < g->num_edges; e++)
		preds[fill[HD_EDGE_TARGET(g->dst[e])]++] = g->src[e];
	free(fill);
	*poff_ret = poff;
	*preds_ret = preds;
}

static void oracle_fixpoint(struct oracle *o, const struct graph *g,
			    uint32_t root, const uint32_t *order, uint32_t len)
{
	uint32_t w = o->words;
	uint64_t *tmp = malloc(w * sizeof(*tmp));
	ck_assert_ptr_nonnull(tmp);
	uint64_t *poff;
	uint32_t *preds;
	naive_preds(g, &poff, &preds);
	for (uint32_t i = 0; i < len; i++) {
		uint32_t v = order[i];
		memset(dom_set(o, v), v == root ? 0 : 0xff, w * sizeof(*tmp));
		dom_set(o, v)[v / 64] |= 1ull << (v % 64);
	}
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t i = 1; i < len; i++) {
			uint32_t v = order[i];
			memset(tmp, 0xff, w * sizeof(*tmp));
			for (uint64_t e = poff[v]; e < poff[v + 1]; e++) {
				uint32_t p = preds[e];
				if (!o->reach[p])
					continue;
				for (uint32_t k = 0; k < w; k++)
					tmp[k] &= dom_set(o, p)[k];
			}
			tmp[v / 64] |= 1ull << (v % 64);
			if (memcmp(tmp, dom_set(o, v), w * sizeof(*tmp))) {
				memcpy(dom_set(o, v), tmp, w * sizeof(*tmp));
				changed = true;
			}
		}
	}
	free(tmp);
	free(poff);
	free(preds);
}

static uint32_t popcount(const uint64_t *set, uint32_t words)
{
	uint32_t c = 0;
	for (uint32_t k = 0; k < words; k++)
		c += __builtin_popcountll(set[k]);
	return c;
}

// The immediate dominator is the strict dominator with the largest
// dominator set: dominators form a chain.
static void oracle_idom(struct oracle *o, uint32_t root)
{
	uint32_t *size = malloc(o->n * sizeof(*size));
	ck_assert_ptr_nonnull(size);
	for (uint32_t v = 0; v < o->n; v++)
		size[v] = popcount(dom_set(o, v), o->words);
	for (uint32_t v = 0; v < o->n; v++) {
		o->idom[v] = HD_NO_VERTEX;
		if (!o->reach[v])
			continue;
		if (v == root) {
			o->idom[v] = root;
			continue;
		}
		for (uint32_t d = 0; d < o->n; d++) {
			if (d != v && dom_has(o, v, d) && size[d] == size[v] - 1)
				o->idom[v] = d;
		}
		expect(o->idom[v] != HD_NO_VERTEX);
	}
	free(size);
}

static void oracle_retained(struct oracle *o, const uint64_t *size)
{
	for (uint32_t v = 0; v < o->n; v++) {
		o->retained[v] = 0;
		o->count[v] = 0;
	}
	for (uint32_t u = 0; u < o->n; u++) {
		if (!o->reach[u])
			continue;
		for (uint32_t v = 0; v < o->n; v++) {
			if (dom_has(o, u, v)) {
				o->retained[v] += size[u];
				o->count[v]++;
			}
		}
	}
}

static void oracle_run(struct oracle *o, const struct graph *g, uint32_t root)
{
	uint32_t n = g->n;
	o->n = n;
	o->words = (n + 63) / 64;
	o->reach = calloc(n, sizeof(*o->reach));
	o->dom = calloc((size_t)n * o->words, sizeof(*o->dom));
	o->idom = malloc(n * sizeof(*o->idom));
	o->retained = malloc(n * sizeof(*o->retained));
	o->count = malloc(n * sizeof(*o->count));
	uint32_t *order = malloc(n * sizeof(*order));
	ck_assert(o->reach && o->dom && o->idom && o->retained && o->count &&
		  order);
	uint32_t len = oracle_reach(o, g, root, order);
	oracle_fixpoint(o, g, root, order, len);
	oracle_idom(o, root);
	oracle_retained(o, g->size);
	free(order);
}

static void oracle_free(struct oracle *o)
{
	free(o->reach);
	free(o->dom);
	free(o->idom);
	free(o->retained);
	free(o->count);
}

// Second oracle for tiny graphs: v dominates u iff u is reachable but not
// once v is removed. Checked against the chain of idoms hd_dominators gave.
static void check_by_removal(const struct graph *g, uint32_t root,
			     const struct hd_domtree *t)
{
	uint32_t n = g->n;
	bool *seen = malloc(n * sizeof(*seen));
	uint32_t *queue = malloc(n * sizeof(*queue));
	ck_assert(seen && queue);
	for (uint32_t v = 0; v < n; v++) {
		if (t->idom[v] == HD_NO_VERTEX || v == root)
			continue;
		memset(seen, 0, n * sizeof(*seen));
		seen[v] = true; // removed
		uint32_t len = 0;
		seen[root] = true;
		queue[len++] = root;
		for (uint32_t i = 0; i < len; i++) {
			uint32_t u = queue[i];
			for (uint64_t e = g->offsets[u]; e < g->offsets[u + 1];
			     e++) {
				uint32_t x = HD_EDGE_TARGET(g->targets[e]);
				if (!seen[x]) {
					seen[x] = true;
					queue[len++] = x;
				}
			}
		}
		for (uint32_t u = 0; u < n; u++) {
			if (t->idom[u] == HD_NO_VERTEX || u == v)
				continue;
			bool chain = false;
			for (uint32_t d = u; d != root; d = t->idom[d]) {
				if (t->idom[d] == v)
					chain = true;
			}
			expect_msg(chain == !seen[u],
				      "vertex %u dominates %u: removal says %d",
				      v, u, !seen[u]);
		}
	}
	free(seen);
	free(queue);
}

// ------------------------------------------------------------------ checks

// What any valid answer must satisfy, whatever the oracle: preorder is a
// permutation of the reachable set starting at root, and every vertex
// comes after its dominator.
static void check_shape(const struct graph *g, uint32_t root,
			const struct hd_domtree *t)
{
	expect_eq(t->n, g->n);
	expect_eq(t->root, root);
	expect(t->num_reachable >= 1);
	expect_eq(t->preorder[0], root);
	expect_eq(t->idom[root], root);
	uint32_t *pos = malloc(g->n * sizeof(*pos));
	ck_assert_ptr_nonnull(pos);
	memset(pos, 0xff, g->n * sizeof(*pos));
	for (uint32_t i = 0; i < t->num_reachable; i++) {
		uint32_t v = t->preorder[i];
		expect(v < g->n);
		expect_eq(pos[v], UINT32_MAX);
		pos[v] = i;
	}
	uint32_t reachable = 0;
	for (uint32_t v = 0; v < g->n; v++) {
		if (t->idom[v] == HD_NO_VERTEX) {
			expect_eq(pos[v], UINT32_MAX);
			continue;
		}
		reachable++;
		expect(pos[v] != UINT32_MAX);
		if (v != root)
			expect(pos[t->idom[v]] < pos[v]);
	}
	expect_eq(reachable, t->num_reachable);
	free(pos);
}

static void check_against_oracle(const struct graph *g, uint32_t root,
				 const struct hd_domtree *t)
{
	struct oracle o;
	oracle_run(&o, g, root);
	for (uint32_t v = 0; v < g->n; v++) {
		expect_msg(t->idom[v] == o.idom[v],
			      "n=%u root=%u: idom[%u] = %u, oracle says %u",
			      g->n, root, v, t->idom[v], o.idom[v]);
	}
	uint64_t *retained = malloc(g->n * sizeof(*retained));
	uint32_t *count = malloc(g->n * sizeof(*count));
	ck_assert(retained && count);
	hd_retained(t, g->size, retained, count);
	for (uint32_t v = 0; v < g->n; v++) {
		expect_eq(retained[v], o.retained[v]);
		expect_eq(count[v], o.count[v]);
	}
	// count is optional.
	hd_retained(t, g->size, retained, NULL);
	for (uint32_t v = 0; v < g->n; v++)
		expect_eq(retained[v], o.retained[v]);
	free(retained);
	free(count);
	oracle_free(&o);
}

// Runs reverse + dominators and leaves the tree in *t.
static void dominators(struct graph *g, uint32_t root, struct hd_domtree *t)
{
	struct hd_csr csr = graph_csr(g);
	struct hd_csr rev;
	ck_assert_no_error(hd_csr_reverse(&csr, &rev));
	ck_assert_no_error(hd_dominators(&csr, root, t));
	hd_csr_free_owned(&rev);
	check_shape(g, root, t);
}

// The full treatment for a small graph.
static void check_graph(struct graph *g, uint32_t root)
{
	struct hd_domtree t;
	dominators(g, root, &t);
	check_against_oracle(g, root, &t);
	if (g->n <= 64)
		check_by_removal(g, root, &t);
	hd_domtree_deinit(&t);
}

// ------------------------------------------------------------ csr reverse

// Predecessor multisets against an n x n count matrix.
static void check_reverse(struct graph *g)
{
	struct hd_csr csr = graph_csr(g);
	struct hd_csr rev;
	ck_assert_no_error(hd_csr_reverse(&csr, &rev));
	expect_eq(rev.n, g->n);
	expect_eq(rev.offsets[0], 0);
	expect_eq(rev.offsets[g->n], g->num_edges);
	uint32_t n = g->n;
	uint32_t *want = calloc((size_t)n * n + 1, sizeof(*want));
	ck_assert_ptr_nonnull(want);
	for (size_t e = 0; e < g->num_edges; e++)
		want[(size_t)HD_EDGE_TARGET(g->dst[e]) * n + g->src[e]]++;
	for (uint32_t v = 0; v < n; v++) {
		expect(rev.offsets[v] <= rev.offsets[v + 1]);
		for (uint64_t e = rev.offsets[v]; e < rev.offsets[v + 1]; e++) {
			uint32_t p = rev.targets[e];
			expect(p < n); // flags dropped
			expect(want[(size_t)v * n + p] > 0);
			want[(size_t)v * n + p]--;
		}
	}
	for (size_t i = 0; i < (size_t)n * n; i++)
		expect_eq(want[i], 0);
	free(want);
	hd_csr_free_owned(&rev);
	ck_assert_ptr_null(rev.offsets);
}

// Random edges with self-loops, duplicates and interior flags.
static void random_edges(struct graph *g, size_t m)
{
	for (size_t i = 0; i < m; i++) {
		uint32_t u = rng_below(g->n), t = rng_below(g->n);
		if (rng_chance(5))
			t = u;
		if (rng_chance(5) && g->num_edges) {
			size_t e = rng_below(g->num_edges);
			u = g->src[e];
			t = HD_EDGE_TARGET(g->dst[e]);
		}
		add_edge(g, u, t | (rng_chance(20) ? HD_EDGE_INTERIOR : 0));
	}
}

START_TEST(test_reverse_random)
{
	for (int iter = 0; iter < 200; iter++) {
		rng_seed(1000 + iter);
		struct graph g;
		graph_init(&g, 1 + rng_below(iter < 100 ? 20 : 300));
		random_edges(&g, rng_below(4 * g.n + 1));
		check_reverse(&g);
		graph_deinit(&g);
	}
}
END_TEST

START_TEST(test_reverse_empty)
{
	uint32_t offsets[1] = { 0 };
	struct hd_csr g = { 0, offsets, NULL }, rev;
	ck_assert_no_error(hd_csr_reverse(&g, &rev));
	expect_eq(rev.n, 0);
	expect_eq(rev.offsets[0], 0);
	hd_csr_free_owned(&rev);
}
END_TEST

START_TEST(test_reverse_bad_target)
{
	uint32_t offsets[3] = { 0, 1, 2 };
	uint32_t targets[2] = { 1, 2 };
	struct hd_csr g = { 2, offsets, targets }, rev;
	struct hd_error *err = hd_csr_reverse(&g, &rev);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_INVALID);
	hd_error_destroy(err);
}
END_TEST

// ------------------------------------------------------------ random graphs

// Uniform random edges: sparse ones leave much unreachable.
static void gen_uniform(struct graph *g)
{
	static const unsigned density_x4[] = { 2, 4, 6, 8, 16, 32 };
	unsigned d = density_x4[rng_below(6)];
	random_edges(g, (size_t)g->n * d / 4);
}

// A part the root cannot enter but which points into the rest: its edges
// must not count.
static void gen_split(struct graph *g, uint32_t root)
{
	uint32_t cut = 1 + rng_below(g->n);
	bool *hidden = calloc(g->n, sizeof(*hidden));
	ck_assert_ptr_nonnull(hidden);
	for (uint32_t v = 0; v < g->n; v++)
		hidden[v] = v != root && rng_below(g->n) >= cut;
	size_t m = (size_t)g->n * (1 + rng_below(4));
	for (size_t i = 0; i < m; i++) {
		uint32_t u = rng_below(g->n), t = rng_below(g->n);
		if (!hidden[u] && hidden[t])
			continue;
		add_edge(g, u, t | (rng_chance(10) ? HD_EDGE_INTERIOR : 0));
	}
	free(hidden);
}

// A random deep tree (each vertex hangs from one of the few before it)
// plus cross and back edges: long forest paths to compress.
static void gen_deep(struct graph *g)
{
	uint32_t window = 1 + rng_below(4);
	for (uint32_t v = 1; v < g->n; v++) {
		uint32_t lo = v > window ? v - window : 0;
		add_edge(g, lo + rng_below(v - lo), v);
	}
	random_edges(g, rng_below(g->n / 2 + 1));
}

static void random_case(int iter, uint32_t max_n)
{
	rng_seed(iter);
	struct graph g;
	graph_init(&g, 1 + rng_below(max_n));
	uint32_t root = rng_below(g.n);
	switch (iter % 3) {
	case 0:
		gen_uniform(&g);
		break;
	case 1:
		gen_split(&g, root);
		break;
	default:
		gen_deep(&g);
		root = 0;
		break;
	}
	uint32_t *perm = graph_shuffle(&g);
	root = perm[root];
	free(perm);
	check_graph(&g, root);
	graph_deinit(&g);
}

START_TEST(test_random_tiny)
{
	for (int iter = 0; iter < 300; iter++)
		random_case(iter, 12);
}
END_TEST

START_TEST(test_random_small)
{
	for (int iter = 300; iter < 700; iter++)
		random_case(iter, 200);
}
END_TEST

START_TEST(test_random_larger)
{
	for (int iter = 700; iter < 724; iter++)
		random_case(iter, 2000);
}
END_TEST

// Children lists: each vertex's list holds exactly the vertices whose
// idom it is, largest retained first, ties by vertex. Sizes are drawn
// from few values so that ties are common; some vertices get a dozen or
// hundreds of children (the insertion sort and the qsort paths), and
// many vertices get none.
START_TEST(test_children_lists)
{
	for (int iter = 0; iter < 60; iter++) {
		rng_seed(5000 + iter);
		struct graph g;
		graph_init(&g, 2 + rng_below(iter < 50 ? 300 : 5000));
		for (uint32_t v = 0; v < g.n; v++)
			g.size[v] = 16 * (1 + rng_below(3));
		// A star under 0 and 1, plus random edges.
		for (uint32_t v = 1; v < g.n; v++)
			add_edge(&g, rng_chance(50) ? 0 : 1 % v, v);
		random_edges(&g, g.n / 2);
		struct hd_domtree t;
		dominators(&g, 0, &t);
		uint64_t *ret = malloc(g.n * sizeof(*ret));
		ck_assert_ptr_nonnull(ret);
		hd_retained(&t, g.size, ret, NULL);
		uint32_t *off, *ch;
		ck_assert_no_error(hd_domtree_children(&t, ret, &off, &ch));
		uint32_t *seen = calloc(g.n, sizeof(*seen));
		ck_assert_ptr_nonnull(seen);
		ck_assert_uint_eq(off[0], 0);
		for (uint32_t v = 0; v < g.n; v++) {
			for (uint32_t i = off[v]; i < off[v + 1]; i++) {
				uint32_t c = ch[i];
				ck_assert_uint_lt(c, g.n);
				ck_assert_uint_eq(t.idom[c], v);
				ck_assert_uint_ne(c, t.root);
				seen[c]++;
				if (i > off[v]) {
					uint32_t p = ch[i - 1];
					ck_assert(ret[p] > ret[c] || (ret[p] == ret[c] && p < c));
				}
			}
		}
		// Every reached vertex but the root is some vertex's child, once.
		for (uint32_t v = 0; v < g.n; v++)
			ck_assert_uint_eq(seen[v], t.idom[v] != HD_NO_VERTEX && v != t.root);
		ck_assert_uint_eq(off[g.n], t.num_reachable - 1);
		free(seen);
		free(off);
		free(ch);
		free(ret);
		hd_domtree_deinit(&t);
		graph_deinit(&g);
	}
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

// The in-place sorts of long children lists against qsort: 64-bit keys
// (~retained << 32 | vertex) and (retained, vertex) pairs, with many equal
// retained sizes.
START_TEST(test_inplace_sorts)
{
	static const size_t sizes[] = {0, 1, 2, 16, 17, 18, 1000, 100000};
	for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
		size_t n = sizes[si];
		rng_seed(7000 + (int)si);
		uint64_t *a = malloc((n + 1) * sizeof(*a));
		uint64_t *b = malloc((n + 1) * sizeof(*b));
		struct hd_keyed *k = malloc((n + 1) * sizeof(*k));
		ck_assert(a && b && k);
		for (size_t i = 0; i < n; i++) {
			uint64_t r = 16 * (1 + rng_below(5));
			a[i] = b[i] = (uint64_t)(UINT32_MAX - (uint32_t)r) << 32 | (uint32_t)i;
			k[i] = (struct hd_keyed){ r << 20, (uint32_t)i };
		}
		// Distinct keys in a shuffled order.
		for (size_t i = n; i > 1; i--) {
			size_t j = rng_below((uint32_t)i);
			uint64_t t = a[i - 1]; a[i - 1] = a[j]; a[j] = t;
			struct hd_keyed u = k[i - 1]; k[i - 1] = k[j]; k[j] = u;
		}
		hd_sort_u64(a, n);
		if (n)
			qsort(b, n, sizeof(*b), cmp_u64);
		ck_assert(!n || !memcmp(a, b, n * sizeof(*a)));
		hd_sort_keyed(k, n);
		for (size_t i = 1; i < n; i++)
			ck_assert(k[i - 1].retained > k[i].retained ||
				  (k[i - 1].retained == k[i].retained && k[i - 1].v < k[i].v));
		free(a);
		free(b);
		free(k);
	}
}
END_TEST

// ------------------------------------------------------ medium: CHK oracle

// Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm":
// iterate idom over reverse postorder with the two-finger intersection.
// Independent of semi-NCA and fast enough for tens of thousands of
// vertices.
static uint32_t *chk_postorder(const struct graph *g, uint32_t root,
			       uint32_t *rpo, uint32_t *len)
{
	uint32_t n = g->n;
	uint32_t *post = malloc(n * sizeof(*post)); // vertex -> postorder
	uint32_t *stack = malloc(n * sizeof(*stack));
	uint64_t *next = malloc(n * sizeof(*next));
	ck_assert(post && stack && next);
	memset(post, 0xff, n * sizeof(*post));
	for (uint32_t v = 0; v < n; v++)
		next[v] = UINT64_MAX; // unvisited
	uint32_t sp = 0, k = 0;
	stack[sp++] = root;
	next[root] = g->offsets[root];
	while (sp) {
		uint32_t u = stack[sp - 1];
		if (next[u] < g->offsets[u + 1]) {
			uint32_t t = HD_EDGE_TARGET(g->targets[next[u]++]);
			if (next[t] == UINT64_MAX) {
				next[t] = g->offsets[t];
				stack[sp++] = t;
			}
			continue;
		}
		sp--;
		post[u] = k;
		rpo[k++] = u;
	}
	free(stack);
	free(next);
	*len = k;
	return post;
}

static void chk_dominators(struct graph *g, uint32_t root, uint32_t *idom)
{
	uint32_t n = g->n, len;
	uint32_t *order = malloc(n * sizeof(*order)); // by postorder
	ck_assert_ptr_nonnull(order);
	uint32_t *post = chk_postorder(g, root, order, &len);
	uint64_t *poff;
	uint32_t *preds;
	naive_preds(g, &poff, &preds);
	for (uint32_t v = 0; v < n; v++)
		idom[v] = HD_NO_VERTEX;
	idom[root] = root;
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t i = len - 1; i-- > 0;) {
			uint32_t v = order[i];
			uint32_t nd = HD_NO_VERTEX;
			for (uint64_t e = poff[v]; e < poff[v + 1]; e++) {
				uint32_t p = preds[e];
				if (idom[p] == HD_NO_VERTEX)
					continue;
				if (nd == HD_NO_VERTEX) {
					nd = p;
					continue;
				}
				uint32_t a = p, b = nd;
				while (a != b) {
					while (post[a] < post[b])
						a = idom[a];
					while (post[b] < post[a])
						b = idom[b];
				}
				nd = a;
			}
			if (idom[v] != nd) {
				idom[v] = nd;
				changed = true;
			}
		}
	}
	free(order);
	free(post);
	free(poff);
	free(preds);
}

START_TEST(test_random_medium_chk)
{
	for (int iter = 0; iter < 12; iter++) {
		rng_seed(5000 + iter);
		struct graph g;
		graph_init(&g, 20000 + rng_below(40000));
		uint32_t root = 0;
		if (iter % 2)
			gen_deep(&g);
		else
			random_edges(&g, (size_t)g.n * (1 + iter % 5));
		free(graph_shuffle(&g));
		root = rng_below(g.n);
		struct hd_domtree t;
		dominators(&g, root, &t);
		uint32_t *want = malloc(g.n * sizeof(*want));
		ck_assert_ptr_nonnull(want);
		chk_dominators(&g, root, want);
		for (uint32_t v = 0; v < g.n; v++)
			expect_eq(t.idom[v], want[v]);
		free(want);
		hd_domtree_deinit(&t);
		graph_deinit(&g);
	}
}
END_TEST

// ----------------------------------------------------- grouped (ranked)

// hd_dominators_grouped against the oracle run on the graph it stands
// for, built here from the definition: vertex 0 points at "roots" 1..R in
// groups; a vertex belongs to the first group that reaches it (searched
// group by group, over what earlier groups left); the edges from a later
// group's vertex into an earlier group's are removed.
// With big, graphs of thousands of vertices, checked against
// Cooper-Harvey-Kennedy: their groups hold more edges to vertices found
// before than the search settles in one batch.
static void grouped_case(int iter, bool big)
{
	rng_seed(9000 + iter);
	uint32_t nroots = 1 + rng_below(8), ngroups = 1 + rng_below(4);
	struct graph g;
	graph_init(&g, 1 + nroots + 1 +
			       (big ? 3000 + rng_below(6000)
				    : rng_below(iter < 200 ? 30 : 600)));
	// Roots in group order; groups[k] = roots of groups 0..k.
	uint64_t groups[4] = {0};
	uint32_t *grp = calloc(g.n, sizeof(*grp));
	ck_assert_ptr_nonnull(grp);
	for (uint32_t r = 1; r <= nroots; r++) {
		grp[r] = r == 1 ? 0 : grp[r - 1] + (rng_chance(40) && grp[r - 1] + 1 < ngroups);
		add_edge(&g, 0, r);
	}
	for (uint32_t k = 0; k < ngroups; k++)
		for (uint32_t r = 1; r <= nroots; r++)
			groups[k] += grp[r] <= k;
	uint32_t first = 1 + nroots;
	size_t m = (size_t)(g.n - first) * (1 + rng_below(3));
	for (size_t i = 0; i < m; i++) {
		uint32_t u = 1 + rng_below(g.n - 1), t = first + rng_below(g.n - first);
		add_edge(&g, u, rng_chance(10) ? t | HD_EDGE_INTERIOR : t);
	}
	struct hd_csr csr = graph_csr(&g);
	struct hd_csr rev;
	ck_assert_no_error(hd_csr_reverse(&csr, &rev));
	struct hd_domtree t;
	ck_assert_no_error(hd_dominators_grouped(&csr, 0, groups, ngroups, &t));
	hd_csr_free_owned(&rev);
	// The classes, by searching group by group.
	uint32_t *cls = malloc(g.n * sizeof(*cls)), *queue = malloc(g.n * sizeof(*queue));
	ck_assert(cls && queue);
	for (uint32_t v = 0; v < g.n; v++)
		cls[v] = UINT32_MAX;
	cls[0] = 0;
	for (uint32_t k = 0; k < ngroups; k++) {
		size_t head = 0, tail = 0;
		for (uint32_t r = 1; r <= nroots; r++)
			if (grp[r] == k) {
				cls[r] = k;
				queue[tail++] = r;
			}
		while (head < tail) {
			uint32_t u = queue[head++];
			for (uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
				uint32_t w = HD_EDGE_TARGET(g.targets[e]);
				if (cls[w] == UINT32_MAX) {
					cls[w] = k;
					queue[tail++] = w;
				}
			}
		}
	}
	// The vertices' groups as the tree records them.
	ck_assert_uint_eq(t.num_groups, ngroups + 1);
	for (uint32_t i = 1; i < t.num_reachable; i++) {
		uint32_t k = 0;
		while (k + 1 < t.num_groups && t.group_start[k + 1] <= i)
			k++;
		expect_eq(k, cls[t.preorder[i]]);
	}
	struct graph f;
	graph_init(&f, g.n);
	memcpy(f.size, g.size, g.n * sizeof(*f.size));
	for (size_t e = 0; e < g.num_edges; e++) {
		uint32_t u = g.src[e], w = HD_EDGE_TARGET(g.dst[e]);
		if (cls[u] == UINT32_MAX || cls[w] == UINT32_MAX || cls[u] <= cls[w])
			add_edge(&f, u, g.dst[e]);
	}
	graph_csr(&f);
	if (big) {
		uint32_t *want = malloc(f.n * sizeof(*want));
		ck_assert_ptr_nonnull(want);
		chk_dominators(&f, 0, want);
		for (uint32_t v = 0; v < f.n; v++)
			expect_eq(t.idom[v], want[v]);
		free(want);
	} else {
		check_against_oracle(&f, 0, &t);
	}
	hd_domtree_deinit(&t);
	free(cls);
	free(queue);
	free(grp);
	graph_deinit(&f);
	graph_deinit(&g);
}

START_TEST(test_grouped_random)
{
	for (int iter = 0; iter < 260; iter++)
		grouped_case(iter, false);
}
END_TEST

START_TEST(test_grouped_large)
{
	for (int iter = 0; iter < 20; iter++)
		grouped_case(1000 + iter, true);
}
END_TEST

// ------------------------------------------------------------ known shapes

// Checks idom against a table (HD_NO_VERTEX for unreachable) and the
// oracle, so the oracle is itself checked on shapes with known answers.
static void check_known(struct graph *g, uint32_t root, const uint32_t *want)
{
	struct hd_domtree t;
	dominators(g, root, &t);
	for (uint32_t v = 0; v < g->n; v++)
		expect_msg(t.idom[v] == want[v], "idom[%u] = %u, want %u",
			      v, t.idom[v], want[v]);
	hd_domtree_deinit(&t);
	if (g->n <= 2000)
		check_graph(g, root);
}

START_TEST(test_single_vertex)
{
	struct graph g;
	graph_init(&g, 1);
	uint32_t want[] = { 0 };
	check_known(&g, 0, want);
	add_edge(&g, 0, 0); // self-loop
	check_known(&g, 0, want);
	graph_deinit(&g);
}
END_TEST

START_TEST(test_diamond)
{
	// hub(0) -> a(1), b(2); a, b -> c(3); c -> d(4); e(5) -> c unreached.
	struct graph g;
	graph_init(&g, 6);
	add_edge(&g, 0, 1);
	add_edge(&g, 0, 2);
	add_edge(&g, 1, 3);
	add_edge(&g, 2, 3 | HD_EDGE_INTERIOR);
	add_edge(&g, 3, 4);
	add_edge(&g, 5, 3);
	uint32_t want[] = { 0, 0, 0, 0, 3, HD_NO_VERTEX };
	check_known(&g, 0, want);
	graph_deinit(&g);
}
END_TEST

START_TEST(test_shared_by_two_roots)
{
	// super(0) -> r1(1), r2(2); r1 -> x(3) -> y(4); r2 -> x; r1 -> z(5).
	struct graph g;
	graph_init(&g, 6);
	add_edge(&g, 0, 1);
	add_edge(&g, 0, 2);
	add_edge(&g, 1, 3);
	add_edge(&g, 1, 5);
	add_edge(&g, 2, 3);
	add_edge(&g, 3, 4);
	uint32_t want[] = { 0, 0, 0, 0, 3, 1 };
	check_known(&g, 0, want);
	graph_deinit(&g);
}
END_TEST

// root(0) -> head(1) -> ... -> n-1, each node dominated by the one before.
static void build_list(struct graph *g, uint32_t n, bool doubly)
{
	graph_init(g, n);
	add_edge(g, 0, 1);
	for (uint32_t v = 1; v + 1 < n; v++) {
		add_edge(g, v, v + 1);
		if (doubly)
			add_edge(g, v + 1, v);
	}
}

START_TEST(test_small_lists)
{
	for (uint32_t n = 2; n < 40; n++) {
		for (int doubly = 0; doubly < 2; doubly++) {
			struct graph g;
			build_list(&g, n, doubly);
			uint32_t want[40];
			want[0] = 0;
			for (uint32_t v = 1; v < n; v++)
				want[v] = v - 1;
			check_known(&g, 0, want);
			graph_deinit(&g);
		}
	}
}
END_TEST

START_TEST(test_rings)
{
	for (uint32_t k = 1; k < 30; k++) {
		for (int both = 0; both < 2; both++) {
			// root(0) -> ring 1..k, entered at 1.
			struct graph g;
			graph_init(&g, k + 1);
			add_edge(&g, 0, 1);
			for (uint32_t i = 0; i < k; i++) {
				uint32_t a = 1 + i, b = 1 + (i + 1) % k;
				add_edge(&g, a, b);
				if (both)
					add_edge(&g, b, a);
			}
			uint32_t want[31];
			want[0] = 0;
			want[1] = 0;
			// One way round each node needs the one before; both
			// ways, only the entry is unavoidable.
			for (uint32_t v = 2; v <= k; v++)
				want[v] = both ? 1 : v - 1;
			check_known(&g, 0, want);
			graph_deinit(&g);
		}
	}
}
END_TEST

static void build_binary_tree(struct graph *g, uint32_t n)
{
	graph_init(g, n);
	for (uint32_t v = 0; v < n; v++) {
		if (2 * (uint64_t)v + 1 < n)
			add_edge(g, v, 2 * v + 1);
		if (2 * (uint64_t)v + 2 < n)
			add_edge(g, v, 2 * v + 2);
	}
}

START_TEST(test_binary_trees)
{
	for (uint32_t depth = 1; depth <= 20; depth++) {
		uint32_t n = (1u << depth) - 1;
		struct graph g;
		build_binary_tree(&g, n);
		for (uint32_t v = 0; v < n; v++)
			g.size[v] = 1;
		struct hd_domtree t;
		dominators(&g, 0, &t);
		expect_eq(t.num_reachable, n);
		for (uint32_t v = 1; v < n; v++)
			expect_eq(t.idom[v], (v - 1) / 2);
		uint64_t *retained = malloc(n * sizeof(*retained));
		uint32_t *count = malloc(n * sizeof(*count));
		ck_assert(retained && count);
		hd_retained(&t, g.size, retained, count);
		// A node at level l (root 0) has a subtree of 2^(depth-l) - 1.
		for (uint32_t v = 0; v < n; v++) {
			uint32_t level = 31 - __builtin_clz(v + 1);
			expect_eq(retained[v], (1u << (depth - level)) - 1);
			expect_eq(count[v], retained[v]);
		}
		free(retained);
		free(count);
		hd_domtree_deinit(&t);
		if (n <= 2000)
			check_graph(&g, 0);
		graph_deinit(&g);
	}
}
END_TEST

START_TEST(test_layered_dag)
{
	// Layers fully connected to the next; a layer of width 1 is a
	// bottleneck that dominates everything below it until the next one.
	static const uint32_t widths[] = { 1, 3, 2, 1, 4, 4, 1, 1, 2, 5 };
	uint32_t nl = sizeof(widths) / sizeof(widths[0]);
	uint32_t start[11] = { 0 };
	for (uint32_t l = 0; l < nl; l++)
		start[l + 1] = start[l] + widths[l];
	struct graph g;
	graph_init(&g, start[nl]);
	for (uint32_t l = 0; l + 1 < nl; l++) {
		for (uint32_t a = start[l]; a < start[l + 1]; a++)
			for (uint32_t b = start[l + 1]; b < start[l + 2]; b++)
				add_edge(&g, a, b);
	}
	uint32_t want[64];
	uint32_t last_single = 0;
	for (uint32_t l = 0; l < nl; l++) {
		for (uint32_t v = start[l]; v < start[l + 1]; v++)
			want[v] = l == 0 ? 0 : (widths[l - 1] == 1 ? start[l - 1]
							    : last_single);
		if (widths[l] == 1)
			last_single = start[l];
	}
	check_known(&g, 0, want);
	free(graph_shuffle(&g));
	check_graph(&g, g.src[0]);
	graph_deinit(&g);

	// And random layered DAGs against the oracle.
	for (int iter = 0; iter < 40; iter++) {
		rng_seed(9000 + iter);
		uint32_t layers = 2 + rng_below(30), width = 1 + rng_below(8);
		graph_init(&g, layers * width);
		for (uint32_t l = 0; l + 1 < layers; l++) {
			for (uint32_t b = 0; b < width; b++) {
				uint32_t k = 1 + rng_below(3);
				for (uint32_t i = 0; i < k; i++)
					add_edge(&g, l * width + rng_below(width),
						 (l + 1) * width + b);
			}
		}
		check_graph(&g, 0);
		graph_deinit(&g);
	}
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct graph g;
	build_list(&g, 4, false);
	struct hd_csr csr = graph_csr(&g);
	struct hd_domtree t;
	struct hd_error *err = hd_dominators(&csr, 4, &t);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_INVALID);
	hd_error_destroy(err);
	graph_deinit(&g);
	// More edges than 32-bit offsets hold cannot be given: the graph
	// builder refuses them (scan.c).
}
END_TEST

// --------------------------------------------------------------- big lists

// Big graphs are built straight into CSR form; an edge list would double
// the memory for nothing.
struct big {
	uint32_t n;
	uint32_t *offsets;
	uint32_t *targets;
	uint64_t *size;
};

static void big_alloc(struct big *b, uint32_t n, uint64_t m)
{
	b->n = n;
	b->offsets = malloc(((size_t)n + 1) * sizeof(*b->offsets));
	b->targets = malloc(m * sizeof(*b->targets));
	b->size = malloc(n * sizeof(*b->size));
	ck_assert(b->offsets && b->targets && b->size);
	for (uint32_t v = 0; v < n; v++)
		b->size[v] = 16 + 8 * (v % 7);
}

static void big_free(struct big *b)
{
	free(b->offsets);
	free(b->targets);
	free(b->size);
}

// Everything in the chain root(0) -> 1 -> ... -> n-1: idom is the previous
// vertex, preorder is id order, and the head retains all but the root.
static void check_chain(struct big *b)
{
	struct hd_csr g = { b->n, b->offsets, b->targets }, rev;
	ck_assert_no_error(hd_csr_reverse(&g, &rev));
	struct hd_domtree t;
	ck_assert_no_error(hd_dominators(&g, 0, &t));
	hd_csr_free_owned(&rev);
	expect_eq(t.num_reachable, b->n);
	expect_eq(t.idom[0], 0);
	for (uint32_t v = 1; v < b->n; v++) {
		if (t.idom[v] != v - 1 || t.preorder[v] != v)
			ck_abort_msg("vertex %u: idom %u, preorder %u", v,
				     t.idom[v], t.preorder[v]);
	}
	uint64_t *retained = malloc(b->n * sizeof(*retained));
	uint32_t *count = malloc(b->n * sizeof(*count));
	ck_assert(retained && count);
	hd_retained(&t, b->size, retained, count);
	uint64_t total = 0;
	for (uint32_t v = 1; v < b->n; v++)
		total += b->size[v];
	expect_eq(retained[1], total);
	expect_eq(count[1], b->n - 1);
	expect_eq(retained[0], total + b->size[0]);
	expect_eq(retained[b->n - 1], b->size[b->n - 1]);
	free(retained);
	free(count);
	hd_domtree_deinit(&t);
}

START_TEST(test_big_singly_linked)
{
	struct big b;
	uint32_t n = 10000000;
	big_alloc(&b, n, n - 1);
	for (uint32_t v = 0; v < n; v++) {
		b.offsets[v] = v;
		if (v + 1 < n)
			b.targets[v] = v + 1;
	}
	b.offsets[n] = n - 1;
	check_chain(&b);
	big_free(&b);
}
END_TEST

START_TEST(test_big_ring)
{
	// The tail points back at the head: when the head's semidominator is
	// computed, EVAL of the tail compresses a path of n - 2 vertices in
	// one go.
	struct big b;
	uint32_t n = 10000000;
	big_alloc(&b, n, n);
	for (uint32_t v = 0; v < n; v++) {
		b.offsets[v] = v;
		b.targets[v] = v + 1 < n ? v + 1 : 1 | HD_EDGE_INTERIOR;
	}
	b.offsets[n] = n;
	check_chain(&b);
	big_free(&b);
}
END_TEST

START_TEST(test_big_doubly_linked)
{
	// Each node lists prev then next, so the DFS meets the visited node
	// first and goes on forward.
	struct big b;
	uint32_t n = 2000001; // root + 2,000,000 nodes
	big_alloc(&b, n, 2 * (uint64_t)n);
	uint64_t e = 0;
	for (uint32_t v = 0; v < n; v++) {
		b.offsets[v] = e;
		if (v > 1)
			b.targets[e++] = v - 1;
		if (v + 1 < n)
			b.targets[e++] = v + 1;
	}
	b.offsets[n] = e;
	check_chain(&b);
	big_free(&b);
}
END_TEST

// Interned sets: the first set after the empty one may hash to the empty
// set's slot, whose items are NULL; under UBSan (the sanitizer build) the
// comparison with it was "applying zero offset to null pointer" (fuzz
// finding 11, holders' joint sets). Every singleton is tried on a fresh
// pool, so some of them land in that slot; then unions are checked
// against their members.
START_TEST(test_setpool_first_sets)
{
	for (uint32_t x = 0; x < 2048; x++) {
		struct hd_setpool p;
		ck_assert(hd_setpool_init(&p, 8));
		uint32_t a = hd_setpool_single(&p, x);
		expect(a != UINT32_MAX && a != HD_SET_EMPTY);
		size_t n;
		const uint32_t *items = hd_setpool_items(&p, a, &n);
		expect_eq(n, 1);
		expect_eq(items[0], x);
		expect_eq(hd_setpool_single(&p, x), a);
		items = hd_setpool_items(&p, HD_SET_EMPTY, &n);
		expect_eq(n, 0);
		uint32_t b = hd_setpool_single(&p, x + 1);
		uint32_t u = hd_setpool_union(&p, a, b);
		items = hd_setpool_items(&p, u, &n);
		expect_eq(n, 2);
		expect(items[0] == x && items[1] == x + 1);
		expect_eq(hd_setpool_union(&p, a, HD_SET_EMPTY), a);
		hd_setpool_deinit(&p);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dom");
	TCase *tc = tcase_create("csr");
	tcase_add_test(tc, test_reverse_random);
	tcase_add_test(tc, test_reverse_empty);
	tcase_add_test(tc, test_reverse_bad_target);
	suite_add_tcase(s, tc);

	tc = tcase_create("setpool");
	tcase_add_test(tc, test_setpool_first_sets);
	suite_add_tcase(s, tc);

	tc = tcase_create("shapes");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_single_vertex);
	tcase_add_test(tc, test_diamond);
	tcase_add_test(tc, test_shared_by_two_roots);
	tcase_add_test(tc, test_small_lists);
	tcase_add_test(tc, test_rings);
	tcase_add_test(tc, test_binary_trees);
	tcase_add_test(tc, test_layered_dag);
	tcase_add_test(tc, test_bad_arguments);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_tiny);
	tcase_add_test(tc, test_random_small);
	tcase_add_test(tc, test_random_larger);
	tcase_add_test(tc, test_random_medium_chk);
	tcase_add_test(tc, test_grouped_random);
	tcase_add_test(tc, test_grouped_large);
	tcase_add_test(tc, test_children_lists);
	tcase_add_test(tc, test_inplace_sorts);
	suite_add_tcase(s, tc);

	tc = tcase_create("big");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_big_singly_linked);
	tcase_add_test(tc, test_big_ring);
	tcase_add_test(tc, test_big_doubly_linked);
	suite_add_tcase(s, tc);

	int failed = hd_run_suite(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
