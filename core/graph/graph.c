// hd_graph_build: index the blocks, name the roots, scan.
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/suballoc.h"

struct hd_error *hd_graph_build(struct hd_target *t, struct hd_debuginfo *di,
				const struct hd_heap *h, struct hd_graph **ret)
{
	struct hd_index ix;
	struct hd_error *err = hd_index_init(&ix, h);
	if (err)
		return err;
	err = hd_graph_build_with(t, di, h, &ix, NULL, NULL, NULL, ret);
	hd_index_deinit(&ix);
	return err;
}

static struct hd_error *build(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap *h, const struct hd_index *ix,
			      struct hd_refs *refs, hd_pointer_map_fn map,
			      hd_word_typed_fn word_typed,
			      void *map_arg, const struct hd_suballoc *sub,
			      struct hd_graph **ret)
{
	struct hd_graph *g = calloc(1, sizeof(*g));
	if (!g)
		return &hd_error_no_memory;
	g->pointer_map = map;
	g->word_typed = word_typed;
	g->pointer_map_arg = map_arg;
	g->sub = sub;
	g->refs = refs;
	struct hd_error *err = hd_roots_collect(g, t, di, h);
	if (!err)
		err = hd_graph_scan(g, t, h, ix);
	if (err) {
		hd_graph_destroy(g);
		return err;
	}
	// The address index is the caller's, and is freed after the scan.
	// The reverse graph is counted when it is built.
	g->info.bytes = ((size_t)g->num_vertices + 1) * sizeof(*g->fwd.offsets) +
			g->info.edges * sizeof(*g->fwd.targets);
	g->refs = NULL; // consumed; the caller frees what is left
	*ret = g;
	return NULL;
}

struct hd_error *hd_graph_build_with(struct hd_target *t,
				     struct hd_debuginfo *di,
				     const struct hd_heap *h,
				     const struct hd_index *ix,
				     hd_pointer_map_fn map, void *map_arg,
				     const struct hd_suballoc *sub,
				     struct hd_graph **ret)
{
	return build(t, di, h, ix, NULL, map, NULL, map_arg, sub, ret);
}

struct hd_error *hd_graph_build_vertices(struct hd_target *t,
					 struct hd_debuginfo *di,
					 const struct hd_heap *h,
					 const struct hd_suballoc *sub,
					 struct hd_graph **ret)
{
	struct hd_graph *g = calloc(1, sizeof(*g));
	if (!g)
		return &hd_error_no_memory;
	g->sub = sub;
	struct hd_error *err = hd_roots_collect(g, t, di, h);
	if (!err)
		err = hd_graph_number(g, h);
	if (err) {
		hd_graph_destroy(g);
		return err;
	}
	uint64_t nv = g->num_vertices;
	// Empty rows: calloc'd, so their pages cost nothing until read.
	g->fwd.offsets = calloc(nv + 1, sizeof(*g->fwd.offsets));
	g->rev.offsets = calloc(nv + 1, sizeof(*g->rev.offsets));
	g->fwd.targets = malloc(sizeof(*g->fwd.targets));
	g->rev.targets = malloc(sizeof(*g->rev.targets));
	g->fwd.n = g->rev.n = (uint32_t)nv;
	g->have_rev = true;
	if (!g->fwd.offsets || !g->rev.offsets || !g->fwd.targets ||
	    !g->rev.targets) {
		hd_graph_destroy(g);
		return &hd_error_no_memory;
	}
	*ret = g;
	return NULL;
}

struct hd_error *hd_graph_build_refs(struct hd_target *t,
				     struct hd_debuginfo *di,
				     const struct hd_heap *h,
				     const struct hd_index *ix,
				     struct hd_refs *refs,
				     hd_pointer_map_fn map,
				     hd_word_typed_fn word_typed, void *map_arg,
				     struct hd_graph **ret)
{
	return build(t, di, h, ix, refs, map, word_typed, map_arg, NULL, ret);
}

void hd_graph_destroy(struct hd_graph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->num_roots; i++)
		free(g->roots[i].name);
	free(g->roots);
	free(g->reg_roots);
	free((void *)g->fwd.offsets);
	free((void *)g->fwd.targets);
	hd_csr_free_owned(&g->rev);
	free(g);
}

size_t hd_graph_num_roots(const struct hd_graph *g) { return g->num_roots; }

const struct hd_root *hd_graph_root(const struct hd_graph *g, size_t i)
{
	return i < g->num_roots ? &g->roots[i] : NULL;
}

uint32_t hd_graph_num_vertices(const struct hd_graph *g)
{
	return g->num_vertices;
}

uint64_t hd_graph_num_edges(const struct hd_graph *g) { return g->info.edges; }

uint32_t hd_graph_root_vertex(const struct hd_graph *g, size_t i)
{
	(void)g;
	return 1 + (uint32_t)i;
}

uint32_t hd_graph_block_vertex(const struct hd_graph *g, size_t id)
{
	return 1 + (uint32_t)g->num_roots + (uint32_t)id;
}

int64_t hd_graph_vertex_root(const struct hd_graph *g, uint32_t v)
{
	return v >= 1 && v <= g->num_roots ? (int64_t)v - 1 : -1;
}

int64_t hd_graph_vertex_block(const struct hd_graph *g, uint32_t v)
{
	return v > g->num_roots && v < g->num_vertices - g->num_sub
		       ? (int64_t)(v - 1 - g->num_roots)
		       : -1;
}

void hd_graph_successors(const struct hd_graph *g, uint32_t v,
			 const uint32_t **targets, size_t *n)
{
	*targets = g->fwd.targets + g->fwd.offsets[v];
	*n = g->fwd.offsets[v + 1] - g->fwd.offsets[v];
}

struct hd_error *hd_graph_reverse(const struct hd_graph *g,
				  const struct hd_csr **ret)
{
	if (!g->have_rev) {
		struct hd_graph *mg = (struct hd_graph *)g; // the cache only
		// A builder may have made it already: keep that one.
		struct hd_error *err =
			g->rev.offsets ? NULL : hd_csr_reverse(&g->fwd, &mg->rev);
		if (err)
			return err;
		mg->have_rev = true;
		mg->info.bytes += ((size_t)g->rev.n + 2) * sizeof(*g->rev.offsets) +
				  g->info.edges * sizeof(*g->rev.targets);
	}
	*ret = &g->rev;
	return NULL;
}

// The reports build the reverse graph first (hd_graph_reverse), where a
// failure can be reported; a caller of this public function that did not
// gets it built here, and no predecessors if memory runs out.
void hd_graph_predecessors(const struct hd_graph *g, uint32_t v,
			   const uint32_t **sources, size_t *n)
{
	const struct hd_csr *rev;
	struct hd_error *err = hd_graph_reverse(g, &rev);
	if (err) {
		hd_error_destroy(err);
		*sources = NULL;
		*n = 0;
		return;
	}
	*sources = rev->targets + rev->offsets[v];
	*n = rev->offsets[v + 1] - rev->offsets[v];
}

void hd_graph_get_info(const struct hd_graph *g, struct hd_graph_info *ret)
{
	*ret = g->info;
	ret->bytes_per_edge = g->have_rev ? 8 : 4;
}

void hd_graph_class_groups(const struct hd_graph *g, uint64_t *groups)
{
	memset(groups, 0, HD_ROOT_RANKS * sizeof(*groups));
	for (uint64_t e = g->fwd.offsets[0]; e < g->fwd.offsets[1]; e++) {
		int64_t r = hd_graph_vertex_root(g, HD_EDGE_TARGET(g->fwd.targets[e]));
		if (r >= 0)
			groups[hd_root_rank(g->roots[r].kind)]++;
	}
	for (unsigned k = 1; k < HD_ROOT_RANKS; k++)
		groups[k] += groups[k - 1];
}
