// The semantic graph: the object graph with the framework modules' nodes
// added as vertices, the incoming edges of assigned blocks suspended and
// replaced by an edge from their node; then its dominator tree, with
// allocated, used and framework bytes retained per vertex.
#include <stdlib.h>
#include <string.h>

#include "heap/heap_internal.h"
#include "semantic/semantic_internal.h"

// A vertex's final node: assignments shared by unrelated nodes do not
// count (the block keeps its own edges).
static uint32_t node_of(const struct hd_fw *fw, uint32_t v)
{
	if (!fw->assigned)
		return HD_FW_NO_NODE;
	uint32_t a = fw->assigned[v];
	return a == HD_FW_SHARED ? HD_FW_NO_NODE : a;
}

// Own sizes: a heap block's extent (minus the sub-allocator blocks inside
// it), a sub-allocator block's size; free memory is allocated, not used.
// Computed when asked rather than kept: three words per vertex of 10M.
void hd_semantic_own(const struct hd_semantic *s, uint32_t v, uint64_t *alloc_r,
		     uint64_t *used_r, uint64_t *fwb_r)
{
	const struct hd_fw *fw = s->fw;
	const struct hd_heap *h = fw->h;
	uint32_t first_block = 1 + (uint32_t)s->g->num_roots;
	uint32_t first_sub = s->nv - (uint32_t)s->g->num_sub;
	uint64_t alloc = 0, used = 0, f = 0;
	if (v >= first_block && v < s->nv) {
		enum hd_block_state st;
		if (v < first_sub) {
			size_t id = v - first_block;
			alloc = hd_heap_extent(h, id);
			used = hd_heap_usable(h, id);
			st = hd_heap_state(h, id);
			int64_t c = fw->sa.num_containers ? hd_suballoc_container(&fw->sa, id) : -1;
			uint64_t inner = c >= 0 ? fw->sa.container_bytes[c] : 0;
			alloc = alloc > inner ? alloc - inner : 0;
			used = used > inner ? used - inner : 0;
		} else {
			const struct hd_subblock *b = &fw->sa.blocks[v - first_sub];
			alloc = used = b->size;
			st = (enum hd_block_state)b->state;
			// Counted in the malloc'd block around it.
			if (st == HD_STATE_INTERNAL && b->container >= 0)
				alloc = used = 0;
		}
		if (st == HD_STATE_FREE)
			used = 0;
		f = fw->fw_bytes ? fw->fw_bytes[v] : HD_FW_UNMARKED;
		if (f == HD_FW_UNMARKED) {
			uint32_t n = node_of(fw, v);
			f = n != HD_FW_NO_NODE && fw->nodes[n].owner ? alloc : 0;
		} else if (f > alloc) {
			f = alloc;
		}
	}
	*alloc_r = alloc;
	*used_r = used;
	*fwb_r = f;
}

// The semantic graph in CSR form: counts first, then fills.
static struct hd_error *build_csr(struct hd_semantic *s)
{
	const struct hd_fw *fw = s->fw;
	const struct hd_graph *g = s->g;
	uint32_t nv = s->nv, n = s->n;
	uint32_t *off = calloc((size_t)n + 2, sizeof(*off));
	if (!off)
		return &hd_error_no_memory;
	// The suspended vertices (assigned to a node) as a bitmap: each edge
	// asks, and a bit per vertex stays in cache where the assignments
	// (four bytes per vertex) do not.
	uint64_t *susp = calloc(((size_t)nv + 63) / 64, sizeof(*susp));
	if (!susp) {
		free(off);
		return &hd_error_no_memory;
	}
	for (uint32_t v = 0; fw->assigned && v < nv; v++)
		if (node_of(fw, v) != HD_FW_NO_NODE)
			susp[v / 64] |= 1ull << (v % 64);
	// Pass 0 counts into off[v + 2], pass 1 fills at off[v + 1]; the
	// shift makes both a prefix sum away.
	uint32_t *tg = NULL;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t *at = off + (pass ? 1 : 2);
		for (uint32_t v = 0; v < nv; v++) {
			const uint32_t *e;
			size_t k;
			hd_graph_successors(g, v, &e, &k);
			for (size_t i = 0; i < k; i++) {
				uint32_t w = HD_EDGE_TARGET(e[i]);
				if (susp[w / 64] & (1ull << (w % 64)))
					continue; // suspended
				if (pass)
					tg[at[v]] = e[i];
				at[v]++;
			}
		}
		for (uint32_t k = 0; k < fw->num_nodes; k++) {
			const struct hd_snode *sn = &fw->nodes[k];
			uint32_t from = sn->parent != HD_FW_NO_NODE ? nv + sn->parent
				      : sn->holder != HD_DOM_NONE ? sn->holder
				      : 0;
			if (pass)
				tg[at[from]] = nv + k;
			at[from]++;
		}
		for (uint32_t v = 0; fw->assigned && v < nv; v++) {
			uint32_t k = node_of(fw, v);
			if (k == HD_FW_NO_NODE)
				continue;
			if (pass)
				tg[at[nv + k]] = v;
			at[nv + k]++;
		}
		if (pass == 0) {
			for (uint32_t v = 0; v < n; v++)
				off[v + 2] += off[v + 1];
			tg = malloc((off[n + 1] ? off[n + 1] : 1) * sizeof(*tg));
			if (!tg) {
				free(off);
				free(susp);
				return &hd_error_no_memory;
			}
		}
	}
	free(susp);
	s->fwd = (struct hd_csr){.n = n, .offsets = off, .targets = tg};
	return NULL; // the reverse: on demand (hd_semantic_reverse)
}

struct hd_error *hd_semantic_reverse(const struct hd_semantic *s,
				     const struct hd_csr **ret)
{
	if (!s->rev.offsets) {
		struct hd_semantic *ms = (struct hd_semantic *)s; // the cache only
		struct hd_error *err = hd_csr_reverse(&s->fwd, &ms->rev);
		if (err)
			return err;
	}
	*ret = &s->rev;
	return NULL;
}

static struct hd_error *retained(struct hd_semantic *s)
{
	const struct hd_domtree *t = &s->tree;
	uint32_t n = s->n;
	s->r_alloc = calloc(n, sizeof(uint64_t));
	s->r_used = calloc(n, sizeof(uint64_t));
	s->r_fwb = calloc(n, sizeof(uint64_t));
	s->r_count = calloc(n, sizeof(uint32_t));
	if (!s->r_alloc || !s->r_used || !s->r_fwb || !s->r_count)
		return &hd_error_no_memory;
	uint32_t first_block = 1 + (uint32_t)s->g->num_roots;
	// The reachable vertices' own sizes in vertex order, the memory they
	// come from read in order (only roots, blocks and sub-blocks have any).
	for (uint32_t v = first_block; v < s->nv; v++) {
		if (t->idom[v] == HD_NO_VERTEX)
			continue;
		hd_semantic_own(s, v, &s->r_alloc[v], &s->r_used[v], &s->r_fwb[v]);
		s->r_count[v] = 1;
	}
	// Reverse preorder: a vertex's dominator comes before it.
	for (uint32_t i = t->num_reachable; i-- > 1;) {
		uint32_t v = t->preorder[i];
		uint32_t d = t->idom[v];
		s->r_alloc[d] += s->r_alloc[v];
		s->r_used[d] += s->r_used[v];
		s->r_fwb[d] += s->r_fwb[v];
		s->r_count[d] += s->r_count[v];
	}
	// Nothing walks the preorder again: its memory goes before the
	// children lists are made.
	free(s->tree.preorder);
	s->tree.preorder = NULL;
	return hd_domtree_children(t, s->r_alloc, &s->child_off, &s->children);
}

// Each node's object memory: its assigned blocks; and what no root or
// node reaches.
static struct hd_error *node_objects(struct hd_semantic *s,
				     const struct hd_heap *h)
{
	const struct hd_fw *fw = s->fw;
	size_t k = fw->num_nodes ? fw->num_nodes : 1;
	s->obj_alloc = calloc(k, sizeof(uint64_t));
	s->obj_used = calloc(k, sizeof(uint64_t));
	s->obj_count = calloc(k, sizeof(uint32_t));
	if (!s->obj_alloc || !s->obj_used || !s->obj_count)
		return &hd_error_no_memory;
	uint32_t first_block = 1 + (uint32_t)s->g->num_roots;
	uint32_t first_sub = s->nv - (uint32_t)s->g->num_sub;
	for (uint32_t v = first_block; v < s->nv; v++) {
		uint32_t node = node_of(fw, v);
		uint64_t a, u, f;
		if (node != HD_FW_NO_NODE || s->tree.idom[v] == HD_NO_VERTEX)
			hd_semantic_own(s, v, &a, &u, &f);
		if (node != HD_FW_NO_NODE) {
			s->obj_alloc[node] += a;
			s->obj_used[node] += u;
			s->obj_count[node]++;
		}
		if (s->tree.idom[v] != HD_NO_VERTEX)
			continue;
		bool used = v < first_sub
			? hd_heap_state(h, v - first_block) == HD_STATE_USED
			: fw->sa.blocks[v - first_sub].state == HD_STATE_USED;
		if (used) {
			s->unreachable_alloc += a;
			s->unreachable_blocks++;
		}
	}
	return NULL;
}

struct hd_error *hd_semantic_check(const struct hd_fw *fw,
				   const struct hd_graph *g)
{
	uint64_t n = (uint64_t)g->num_vertices + fw->num_nodes;
	if (n >= HD_EDGE_INTERIOR)
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%llu vertices and semantic nodes: more than 2^31",
				       (unsigned long long)n);
	return NULL;
}

struct hd_error *hd_semantic_compute(struct hd_fw *fw, struct hd_graph *g,
				     struct hd_semantic **ret)
{
	struct hd_error *err = hd_semantic_check(fw, g);
	if (err)
		return err;
	struct hd_semantic *s = calloc(1, sizeof(*s));
	if (!s)
		return &hd_error_no_memory;
	s->fw = fw;
	s->g = g;
	s->nv = g->num_vertices;
	s->n = (uint32_t)(s->nv + fw->num_nodes);
	err = build_csr(s);
	if (!err) {
		// The semantic graph has its own copy of the edges; modules
		// have run, nothing reads the object graph's edges again.
		free((void *)g->fwd.offsets);
		free((void *)g->fwd.targets);
		hd_csr_free_owned(&g->rev);
		g->fwd = g->rev = (struct hd_csr){0};
	}
	if (!err)
		err = hd_dominators(&s->fwd, 0, &s->tree);
	if (!err)
		err = retained(s);
	if (!err)
		err = node_objects(s, fw->h);
	if (err)
		goto fail;
	*ret = s;
	return NULL;
fail:
	// fw and g stay the caller's.
	s->fw = NULL;
	s->g = NULL;
	hd_semantic_destroy(s);
	return err;
}

void hd_semantic_destroy(struct hd_semantic *s)
{
	if (!s)
		return;
	hd_domtree_deinit(&s->tree);
	free((void *)s->fwd.offsets);
	free((void *)s->fwd.targets);
	hd_csr_free_owned(&s->rev);
	free(s->r_alloc);
	free(s->r_used);
	free(s->r_fwb);
	free(s->r_count);
	free(s->child_off);
	free(s->children);
	free(s->obj_alloc);
	free(s->obj_used);
	free(s->obj_count);
	hd_graph_destroy(s->g);
	hd_fw_destroy(s->fw);
	free(s);
}

uint32_t hd_fw_block_label(const struct hd_fw *fw, size_t id)
{
	hd_fw_need_block(fw, id);
	const struct hd_graph *g = fw->g;
	if (!fw->names || !g)
		return UINT32_MAX;
	uint32_t first_block = 1 + (uint32_t)g->num_roots;
	uint32_t first_sub = g->num_vertices - (uint32_t)g->num_sub;
	if (id >= (size_t)(first_sub - first_block))
		return UINT32_MAX;
	return hd_fw_name_of(fw, first_block + (uint32_t)id);
}

const char *hd_fw_block_name(const struct hd_fw *fw, size_t id)
{
	uint32_t l = hd_fw_block_label(fw, id);
	return l == UINT32_MAX ? NULL : fw->labels[l];
}

bool hd_fw_block_member(const struct hd_fw *fw, size_t id, uint64_t offset,
			char *buf, size_t len)
{
	hd_fw_need_block(fw, id);
	const struct hd_graph *g = fw->g;
	if (!fw->dwarf || !g || !fw->ty)
		return false;
	uint32_t first_block = 1 + (uint32_t)g->num_roots;
	uint32_t first_sub = g->num_vertices - (uint32_t)g->num_sub;
	if (id >= (size_t)(first_sub - first_block))
		return false;
	uint64_t d = hd_fw_dwarf_of(fw, first_block + (uint32_t)id);
	if (d == UINT64_MAX || (d >> 32) >= fw->ty->num_mods)
		return false;
	hd_type_member_path(fw->ty->mods[d >> 32].ix, (uint32_t)d, offset, buf, len);
	return true;
}
