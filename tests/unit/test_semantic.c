// Unit tests of the semantic engine (core/semantic): random object graphs,
// random semantic trees (nodes under parents, under holder blocks, at the
// top), random assignments — some blocks claimed by several nodes — and
// random marks, checked against a model written here from the rules in
// heapdom_framework.h and docs/frameworks.md:
//
//   - a block claimed by several nodes goes to their nearest common
//     ancestor (parents, or the node a holder block is assigned to), or to
//     none;
//   - the semantic graph is the object graph without the edges into
//     assigned blocks, plus super-root -> top nodes, parent -> child node,
//     holder -> node, node -> assigned block;
//   - v's bound memory is the sum of own sizes over every vertex v
//     dominates (w such that no path from the super-root avoids v),
//     computed here by removing v and searching — quadratic, independent of
//     semi-NCA.
//
// Plus the failure rules: a module whose analyze fails leaves nothing.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "heapdom_framework.h"
#include "dom/dom.h"
#include "heap/glibc/glibc_internal.h"
#include "semantic/semantic_internal.h"
#include "check_util.h"

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n) { return (uint32_t)(rng_next() % n); }

#define MAXV 96
#define MAXN 16
#define HEAP 0x10000000ull

// One random case: R roots, B blocks (vertices 1..R, R+1..R+B), edges,
// nodes and claims.
struct scenario {
	uint32_t roots, blocks, nv;
	bool edge[MAXV][MAXV];
	uint64_t chunk[MAXV];       // per block vertex
	bool used[MAXV];
	uint32_t nnodes;
	uint32_t parent[MAXN];      // node or HD_FW_NO_NODE
	uint32_t holder[MAXN];      // vertex or HD_DOM_NONE
	bool fw_owner[MAXN];
	uint32_t claims[MAXV][4];   // nodes claiming a block, in order
	uint32_t nclaims[MAXV];
	uint64_t mark[MAXV];        // UINT64_MAX: none
};

static void make_scenario(struct scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->roots = 1 + below(3);
	sc->blocks = 8 + below(MAXV - 12);
	sc->nv = 1 + sc->roots + sc->blocks;
	for (uint32_t v = 0; v < MAXV; v++)
		sc->mark[v] = UINT64_MAX;
	for (uint32_t v = 1 + sc->roots; v < sc->nv; v++) {
		sc->chunk[v] = 32 + 16 * below(20);
		sc->used[v] = below(10) != 0;
		sc->mark[v] = UINT64_MAX;
	}
	uint32_t nedges = sc->nv + below(3 * sc->nv);
	for (uint32_t i = 0; i < nedges; i++) {
		uint32_t a = 1 + below(sc->nv - 1);
		uint32_t b = 1 + sc->roots + below(sc->blocks);
		// Only used blocks and roots have references, to used blocks.
		if (a > sc->roots && !sc->used[a])
			continue;
		if (sc->used[b] && a != b)
			sc->edge[a][b] = true;
	}
	sc->nnodes = 1 + below(MAXN - 1);
	for (uint32_t k = 0; k < sc->nnodes; k++) {
		sc->parent[k] = HD_FW_NO_NODE;
		sc->holder[k] = HD_DOM_NONE;
		uint32_t how = below(3);
		if (how == 0 && k > 0)
			sc->parent[k] = below(k);
		else if (how == 1)
			sc->holder[k] = 1 + below(sc->nv - 1);
		sc->fw_owner[k] = below(2);
	}
	for (uint32_t v = 1 + sc->roots; v < sc->nv; v++) {
		if (below(3) == 0)
			continue;
		uint32_t n = below(4) == 0 ? 2 + below(3) : 1;
		for (uint32_t i = 0; i < n; i++)
			sc->claims[v][sc->nclaims[v]++] = below(sc->nnodes);
		if (below(4) == 0)
			sc->mark[v] = below(2) ? UINT64_MAX - 1 : below(64);
	}
}

// ------------------------------------------------------- the model

static uint32_t model_parent(const struct scenario *sc, const uint32_t *assigned,
			     uint32_t k)
{
	if (sc->parent[k] != HD_FW_NO_NODE)
		return sc->parent[k];
	if (sc->holder[k] != HD_DOM_NONE && assigned[sc->holder[k]] < sc->nnodes)
		return assigned[sc->holder[k]];
	return HD_FW_NO_NODE;
}

// Nearest common ancestor: the first of b's ancestors (b included) that is
// one of a's, with the walks cut at nnodes steps (holders can loop).
static uint32_t model_lca(const struct scenario *sc, const uint32_t *first,
			  uint32_t a, uint32_t b)
{
	bool anc[MAXN] = {false};
	for (uint32_t i = 0; a != HD_FW_NO_NODE && i <= sc->nnodes && !anc[a]; i++) {
		anc[a] = true;
		a = model_parent(sc, first, a);
	}
	for (uint32_t i = 0; b != HD_FW_NO_NODE && i <= sc->nnodes; i++) {
		if (anc[b])
			return b;
		b = model_parent(sc, first, b);
	}
	return HD_FW_NO_NODE;
}

static void model_assign(const struct scenario *sc, uint32_t *assigned)
{
	uint32_t first[MAXV];
	for (uint32_t v = 0; v < sc->nv; v++)
		first[v] = sc->nclaims[v] ? sc->claims[v][0] : HD_FW_NO_NODE;
	for (uint32_t v = 0; v < sc->nv; v++) {
		// The later claims in node order: when holders make the node
		// relation cyclic there is no tree, and the engine's answer
		// must not depend on the order modules claimed in.
		uint32_t later[4], n = 0;
		for (uint32_t i = 1; i < sc->nclaims[v]; i++) {
			uint32_t c = sc->claims[v][i], j = n++;
			for (; j > 0 && later[j - 1] > c; j--)
				later[j] = later[j - 1];
			later[j] = c;
		}
		uint32_t now = first[v];
		for (uint32_t i = 0; i < n && now != HD_FW_NO_NODE; i++)
			if (later[i] != first[v])
				now = model_lca(sc, first, now, later[i]);
		assigned[v] = now;
	}
}

struct model {
	uint32_t n; // nv + nnodes
	bool adj[MAXV + MAXN][MAXV + MAXN];
	uint64_t own[MAXV + MAXN], own_fw[MAXV + MAXN];
	uint32_t assigned[MAXV];
};

static void model_build(const struct scenario *sc, struct model *m)
{
	memset(m, 0, sizeof(*m));
	m->n = sc->nv + sc->nnodes;
	model_assign(sc, m->assigned);
	for (uint32_t r = 1; r <= sc->roots; r++)
		m->adj[0][r] = true;
	for (uint32_t a = 1; a < sc->nv; a++)
		for (uint32_t b = 1; b < sc->nv; b++)
			if (sc->edge[a][b] && m->assigned[b] == HD_FW_NO_NODE)
				m->adj[a][b] = true;
	for (uint32_t k = 0; k < sc->nnodes; k++) {
		uint32_t from = sc->parent[k] != HD_FW_NO_NODE ? sc->nv + sc->parent[k]
			      : sc->holder[k] != HD_DOM_NONE ? sc->holder[k] : 0;
		m->adj[from][sc->nv + k] = true;
	}
	for (uint32_t v = 0; v < sc->nv; v++)
		if (m->assigned[v] != HD_FW_NO_NODE)
			m->adj[sc->nv + m->assigned[v]][v] = true;
	for (uint32_t v = 1 + sc->roots; v < sc->nv; v++) {
		m->own[v] = sc->chunk[v];
		uint64_t f = sc->mark[v];
		if (f == UINT64_MAX)
			f = m->assigned[v] != HD_FW_NO_NODE && sc->fw_owner[m->assigned[v]]
				? sc->chunk[v] : 0;
		else if (f > sc->chunk[v])
			f = sc->chunk[v];
		m->own_fw[v] = f;
	}
}

// Vertices reachable from the super-root without passing through cut.
static void model_reach(const struct model *m, uint32_t cut, bool *seen)
{
	uint32_t stack[MAXV + MAXN], sp = 0;
	memset(seen, 0, m->n);
	if (cut == 0)
		return;
	seen[0] = true;
	stack[sp++] = 0;
	while (sp) {
		uint32_t u = stack[--sp];
		for (uint32_t w = 0; w < m->n; w++)
			if (m->adj[u][w] && !seen[w] && w != cut) {
				seen[w] = true;
				stack[sp++] = w;
			}
	}
}

// ------------------------------------------------------- the engine

static const struct hd_framework test_ops = {
	.abi = HD_FRAMEWORK_ABI, .name = "test", .version = "0",
};

struct built {
	struct hd_heap *h;
	struct hd_graph *g;
	struct hd_fw *fw;
	struct hd_semantic *s;
};

// The heap and the object graph of sc, as the walker and the scanner would
// have made them.
static void build_base(const struct scenario *sc, struct built *b)
{
	ck_assert_no_error(hd_heap_alloc(&b->h));
	glibc_heap_declare(b->h);
	uint64_t at = HEAP;
	for (uint32_t v = 1 + sc->roots; v < sc->nv; v++) {
		ck_assert(hd_heap_push(b->h, at, sc->chunk[v],
				       sc->used[v] ? HD_STATE_USED : HD_STATE_FREE,
				       sc->used[v] ? HD_LIST_NONE : HD_LIST_SMALL, 0, false));
		at += sc->chunk[v];
	}
	// The object graph, in CSR, as the scanner would have made it.
	b->g = calloc(1, sizeof(*b->g));
	ck_assert_ptr_nonnull(b->g);
	b->g->num_roots = sc->roots;
	b->g->roots = calloc(sc->roots, sizeof(*b->g->roots));
	for (uint32_t r = 0; r < sc->roots; r++)
		b->g->roots[r].name = strdup("root");
	b->g->num_blocks = sc->blocks;
	b->g->num_vertices = sc->nv;
	uint32_t *off = calloc(sc->nv + 1, sizeof(*off));
	uint32_t *tg = malloc((size_t)sc->nv * sc->nv * sizeof(*tg) + 4);
	uint64_t n = 0;
	for (uint32_t a = 0; a < sc->nv; a++) {
		off[a] = n;
		for (uint32_t c = 0; c < sc->nv; c++)
			if (a == 0 ? (c >= 1 && c <= sc->roots) : sc->edge[a][c])
				tg[n++] = c;
	}
	off[sc->nv] = n;
	b->g->fwd = (struct hd_csr){.n = sc->nv, .offsets = off, .targets = tg};
	ck_assert_no_error(hd_csr_reverse(&b->g->fwd, &b->g->rev));
}

static void build(const struct scenario *sc, struct built *b)
{
	build_base(sc, b);
	b->fw = calloc(1, sizeof(*b->fw));
	ck_assert_ptr_nonnull(b->fw);
	b->fw->h = b->h;
	b->fw->g = b->g;
	b->fw->mods = calloc(1, sizeof(*b->fw->mods));
	b->fw->num_mods = b->fw->cap_mods = 1;
	b->fw->mods[0].ops = &test_ops;
	b->fw->mods[0].source = strdup("test");
	b->fw->mods[0].detected = true;
	b->fw->phase = HD_FW_ANALYZE;
	for (uint32_t k = 0; k < sc->nnodes; k++) {
		uint32_t id;
		ck_assert_no_error(hd_fw_node(b->fw, sc->parent[k], sc->holder[k], "n",
					      "k", sc->fw_owner[k] ? HD_OWNER_FRAMEWORK
								   : HD_OWNER_APPLICATION,
					      &id));
		ck_assert_uint_eq(id, k);
	}
	for (uint32_t v = 0; v < sc->nv; v++) {
		for (uint32_t i = 0; i < sc->nclaims[v]; i++)
			ck_assert_no_error(hd_fw_assign(b->fw, sc->claims[v][i], v));
		if (sc->mark[v] != UINT64_MAX)
			ck_assert_no_error(hd_fw_mark(b->fw, v, sc->mark[v]));
	}
	b->fw->phase = HD_FW_DONE;
	ck_assert_no_error(hd_fw_resolve_shared(b->fw));
	ck_assert_no_error(hd_semantic_compute(b->fw, b->g, &b->s));
}

static void built_free(struct built *b)
{
	hd_semantic_destroy(b->s); // owns fw and g
	hd_heap_destroy(b->h);
}

START_TEST(test_random_against_model)
{
	rng_state = 0x5eed0000ull + (uint64_t)_i;
	struct scenario sc;
	make_scenario(&sc);
	static struct model m;
	model_build(&sc, &m);
	struct built b;
	build(&sc, &b);
	const struct hd_semantic *s = b.s;
	ck_assert_uint_eq(s->n, m.n);
	for (uint32_t v = 1 + sc.roots; v < sc.nv; v++) {
		uint32_t got = b.fw->assigned ? b.fw->assigned[v] : HD_FW_NO_NODE;
		if (got == HD_FW_SHARED)
			got = HD_FW_NO_NODE;
		ck_assert_msg(got == m.assigned[v], "case %d: block vertex %u assigned to %u, model %u",
			      _i, v, got, m.assigned[v]);
	}
	static bool reach_all[MAXV + MAXN], reach_cut[MAXV + MAXN];
	model_reach(&m, UINT32_MAX, reach_all);
	for (uint32_t v = 0; v < m.n; v++) {
		uint64_t alloc = 0, fwb = 0;
		uint32_t count = 0;
		if (reach_all[v]) {
			// What v dominates: reachable, but not without v.
			model_reach(&m, v, reach_cut);
			for (uint32_t w = 0; w < m.n; w++)
				if (reach_all[w] && !reach_cut[w]) {
					alloc += m.own[w];
					fwb += m.own_fw[w];
					count += w > sc.roots && w < sc.nv;
				}
		}
		ck_assert_msg(s->r_alloc[v] == alloc && s->r_fwb[v] == fwb && s->r_count[v] == count,
			      "case %d, vertex %u: bound %" PRIu64 "/%" PRIu64 " fw, %u blocks; model %"
			      PRIu64 "/%" PRIu64 ", %u",
			      _i, v, s->r_alloc[v], s->r_fwb[v], s->r_count[v], alloc, fwb, count);
	}
	// Node object memory: its assigned blocks.
	for (uint32_t k = 0; k < sc.nnodes; k++) {
		uint64_t obj = 0;
		for (uint32_t v = 0; v < sc.nv; v++)
			obj += m.assigned[v] == k ? m.own[v] : 0;
		ck_assert_uint_eq(s->obj_alloc[k], obj);
	}
	built_free(&b);
}
END_TEST

// A module that fails in analyze leaves no node, assignment, mark or name.
static struct hd_error *failing_analyze(struct hd_fw *fw)
{
	uint32_t node;
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE, "doomed",
					  "doomed", HD_OWNER_FRAMEWORK, &node);
	uint32_t v = 1 + (uint32_t)fw->g->num_roots;
	if (!err)
		err = hd_fw_assign(fw, node, v);
	// A block the other module has: a claim that must be forgotten.
	if (!err)
		err = hd_fw_assign(fw, node, v + 1);
	if (!err)
		err = hd_fw_mark(fw, v, 8);
	if (!err)
		err = hd_fw_name(fw, v, "doomed");
	// Set twice, and blocks no module had set.
	if (!err)
		err = hd_fw_name(fw, v, "doomed again");
	if (!err)
		err = hd_fw_name(fw, v + 2, "doomed");
	if (!err)
		err = hd_fw_mark(fw, v + 2, 8);
	if (!err)
		err = hd_error_create(HD_ERROR_INVALID, "fails on purpose");
	return err;
}

static struct hd_error *good_analyze(struct hd_fw *fw)
{
	uint32_t node;
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE, "kept",
					  "kept", HD_OWNER_FRAMEWORK, &node);
	if (!err)
		err = hd_fw_assign(fw, node, 2 + (uint32_t)fw->g->num_roots);
	// A name and a mark the failing module overwrites: they must come
	// back, not go empty.
	if (!err)
		err = hd_fw_name(fw, 1 + (uint32_t)fw->g->num_roots, "kept");
	if (!err)
		err = hd_fw_mark(fw, 1 + (uint32_t)fw->g->num_roots, 4);
	return err;
}

static struct hd_error *yes(struct hd_fw *fw, bool *d)
{
	*d = true;
	return NULL;
}

static const struct hd_framework good = {
	.abi = HD_FRAMEWORK_ABI, .name = "good", .version = "1",
	.detect = yes, .analyze = good_analyze,
};
static const struct hd_framework bad = {
	.abi = HD_FRAMEWORK_ABI, .name = "bad", .version = "1",
	.detect = yes, .analyze = failing_analyze,
};

// b's framework context with two detected modules, run in this order.
static void two_modules(struct built *b, const struct hd_framework *first,
			const struct hd_framework *second)
{
	b->fw = calloc(1, sizeof(*b->fw));
	b->fw->h = b->h;
	b->fw->mods = calloc(2, sizeof(*b->fw->mods));
	b->fw->num_mods = b->fw->cap_mods = 2;
	b->fw->mods[0] = (struct hd_fw_module){.ops = first, .source = strdup("t"), .detected = true};
	b->fw->mods[1] = (struct hd_fw_module){.ops = second, .source = strdup("t"), .detected = true};
}

START_TEST(test_failing_module_undone)
{
	struct scenario sc;
	rng_state = 42;
	make_scenario(&sc);
	sc.nnodes = 0;
	memset(sc.nclaims, 0, sizeof(sc.nclaims));
	for (uint32_t v = 0; v < MAXV; v++)
		sc.mark[v] = UINT64_MAX;
	// Every block used, no reference between them.
	memset(sc.edge, 0, sizeof(sc.edge));
	for (uint32_t v = 0; v < MAXV; v++)
		sc.used[v] = true;
	struct built b;
	build_base(&sc, &b);
	two_modules(&b, &good, &bad);
	ck_assert_no_error(hd_fw_analyze(b.fw, b.g));
	ck_assert_uint_eq(b.fw->num_nodes, 1);
	ck_assert_str_eq(b.fw->nodes[0].label, "kept");
	ck_assert_ptr_nonnull(b.fw->mods[1].error);
	ck_assert_msg(strstr(b.fw->mods[1].error, "analyze failed: fails on purpose"),
		      "error: %s", b.fw->mods[1].error);
	uint32_t v = 1 + sc.roots;
	ck_assert_uint_eq(b.fw->assigned[v], HD_FW_NO_NODE);
	ck_assert_uint_eq(b.fw->assigned[v + 1], 0); // the good module's own
	ck_assert_uint_eq(b.fw->fw_bytes[v], 4); // the good module's
	ck_assert_uint_ne(hd_fw_name_of(b.fw, v), UINT32_MAX);
	ck_assert_str_eq(b.fw->labels[hd_fw_name_of(b.fw, v)], "kept");
	ck_assert_uint_eq(hd_fw_name_of(b.fw, v + 2), UINT32_MAX);
	ck_assert_uint_eq(b.fw->fw_bytes[v + 2], HD_FW_UNMARKED);
	ck_assert_uint_eq(b.fw->mods[1].nodes, 0);
	ck_assert_no_error(hd_semantic_compute(b.fw, b.g, &b.s));
	built_free(&b);
}
END_TEST

// Names only (the default reports' framework names): nodes are counted,
// not kept, assignments and marks dropped, names kept; a failing module's
// names are undone all the same.
START_TEST(test_names_only)
{
	struct scenario sc;
	rng_state = 43;
	make_scenario(&sc);
	memset(sc.edge, 0, sizeof(sc.edge));
	for (uint32_t v = 0; v < MAXV; v++)
		sc.used[v] = true;
	struct built b;
	build_base(&sc, &b);
	two_modules(&b, &good, &bad);
	hd_fw_set_names_only(b.fw);
	ck_assert(hd_fw_names_only(b.fw));
	ck_assert_no_error(hd_fw_analyze(b.fw, b.g));
	ck_assert_uint_eq(b.fw->num_nodes, 0);
	ck_assert_uint_eq(b.fw->mods[0].nodes, 1);
	ck_assert_uint_eq(b.fw->mods[1].nodes, 0);
	ck_assert_ptr_null(b.fw->assigned);
	ck_assert_ptr_null(b.fw->fw_bytes);
	uint32_t v = 1 + sc.roots;
	ck_assert_str_eq(b.fw->labels[hd_fw_name_of(b.fw, v)], "kept");
	ck_assert_uint_eq(hd_fw_name_of(b.fw, v + 2), UINT32_MAX);
	ck_assert_ptr_nonnull(b.fw->mods[1].error);
	// No semantic tree took them: the names are all that is read.
	hd_fw_destroy(b.fw);
	hd_graph_destroy(b.g);
	b.s = NULL;
	built_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("semantic");
	TCase *tc = tcase_create("engine");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_random_against_model, 0, 400);
	tcase_add_test(tc, test_failing_module_undone);
	tcase_add_test(tc, test_names_only);
	suite_add_tcase(s, tc);
	int failed = hd_run_suite(s);
	return failed ? 1 : 0;
}
