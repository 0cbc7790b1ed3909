// Top-level holders: a partition of the used blocks by what keeps them.
//
// The super-root's children in the dominator tree are roots and "joint"
// blocks, which no single root dominates. A joint block is named by the
// set of roots that reach it. Any edge into a dominator subtree from
// outside enters at its head, so those sets travel over a small graph:
// one node per super-root child, an edge A -> J when something under A
// points at joint block J. Each joint block's set is the union of its
// predecessors' sets (a root's is its own name), found by a worklist; sets
// are interned, since millions of blocks share a handful of them. Joint
// blocks with the same set form one holder. Leaked blocks, which nothing
// reaches, are held by the tops of the leak forest.
#include <stdlib.h>
#include <string.h>

#include "dom/dom_internal.h"
#include "dom/setpool.h"
#include "util/vec.h"
#include "util/sort.h"

struct item_vec {
	uint32_t *v;
	size_t n, cap;
};

// A holder while it is built: its lists are offsets into items.
struct proto {
	struct hd_holder h;
	size_t roots_at, vertices_at;
};

static const struct hd_graph *g_sort_graph;
static const struct hd_dom *g_sort_dom;

static int by_name(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(g_sort_graph->roots[x].name, g_sort_graph->roots[y].name);
	return c ? c : (x > y) - (x < y);
}

static int proto_order(const void *a, const void *b)
{
	const struct proto *x = a, *y = b;
	if (x->h.retained != y->h.retained)
		return x->h.retained > y->h.retained ? -1 : 1;
	if (x->h.kind != y->h.kind)
		return (int)x->h.kind - (int)y->h.kind;
	return (x->vertices_at > y->vertices_at) - (x->vertices_at < y->vertices_at);
}

// The joint blocks' root sets, then one holder per distinct set.
struct joints {
	uint32_t *vertex;  // joint index -> vertex, ascending
	uint32_t num;
	// Vertex -> joint index in constant time (joint_index): a bit per
	// vertex, and per 64 of them the joints before. A random graph
	// makes a million joint blocks with several edges each, and a
	// binary search in vertex for each was a chain of cache misses.
	uint64_t *bits;
	uint32_t *before;
	uint32_t *node;    // vertex -> node (root index, or nroots + joint
			   // index) once walking up costs too much, else NULL
	uint64_t walked;   // steps walked up so far
	unsigned *rank;    // joint index -> class
	uint64_t *pred_off; // joint index -> its predecessor nodes
	uint32_t *preds;
	uint64_t *succ_off; // joint index -> joint successors
	uint32_t *succs;
	uint32_t *set;     // joint index -> set id
};

struct builder {
	struct hd_dom *d;
	const struct hd_graph *g;
	size_t nroots;
	uint32_t *order;      // root indices sorted by name, then index
	uint32_t *name_id;    // root index -> name id (names sorted)
	uint32_t *name_start; // name id -> its first position in order
	uint32_t num_names;
	struct proto *protos;
	size_t num_protos, cap_protos;
	struct item_vec items;
	// Joint blocks sorted by set, and per name the run of them whose set
	// is that name alone (roots of one name, none dominating alone: a
	// global split by holes): they belong to the name's root holder.
	uint32_t *joint_order;
	uint32_t *single_start, *single_end; // per name id
	const struct joints *j;
};

static bool push_item(struct builder *b, uint32_t x)
{
	return HD_VEC_PUSH(b->items.v, b->items.n, b->items.cap, x);
}

static struct hd_error *name_roots(struct builder *b)
{
	size_t n = b->nroots;
	b->order = malloc((n ? n : 1) * sizeof(*b->order));
	b->name_id = malloc((n ? n : 1) * sizeof(*b->name_id));
	b->name_start = malloc((n + 1) * sizeof(*b->name_start));
	if (!b->order || !b->name_id || !b->name_start)
		return &hd_error_no_memory;
	for (uint32_t i = 0; i < n; i++)
		b->order[i] = i;
	g_sort_graph = b->g;
	hd_qsort(b->order, n, sizeof(*b->order), by_name);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(b->g->roots[b->order[i]].name,
				     b->g->roots[b->order[i - 1]].name) != 0)
			b->name_start[b->num_names++] = (uint32_t)i;
		b->name_id[b->order[i]] = b->num_names - 1;
	}
	b->name_start[b->num_names] = (uint32_t)n;
	return NULL;
}

// The first root (in root order) of a name.
static uint32_t name_root(const struct builder *b, uint32_t id)
{
	return b->order[b->name_start[id]];
}

// One holder per root name whose roots keep something alive: what they
// dominate, and the joint blocks only roots of that name reach.
static struct hd_error *root_holders(struct builder *b)
{
	const struct hd_dom *d = b->d;
	for (uint32_t id = 0; id < b->num_names; id++) {
		struct proto p = {.h = {.kind = HD_HOLDER_ROOT}};
		p.roots_at = b->items.n;
		for (uint32_t k = b->name_start[id]; k < b->name_start[id + 1]; k++) {
			uint32_t r = b->order[k], v = 1 + r;
			if (!push_item(b, r))
				return &hd_error_no_memory;
			p.h.num_roots++;
			p.h.retained += hd_dom_ret(d, v);
			p.h.retained_blocks += d->count[v] - 1;
		}
		p.h.rank = hd_root_rank(b->g->roots[name_root(b, id)].kind);
		uint32_t s0 = b->single_start ? b->single_start[id] : 0;
		uint32_t s1 = b->single_end ? b->single_end[id] : 0;
		if (!p.h.retained_blocks && s0 == s1) {
			b->items.n = p.roots_at;
			continue;
		}
		p.vertices_at = b->items.n;
		for (size_t i = 0; i < p.h.num_roots; i++)
			if (!push_item(b, 1 + b->items.v[p.roots_at + i]))
				return &hd_error_no_memory;
		for (uint32_t i = s0; i < s1; i++) {
			uint32_t v = b->j->vertex[b->joint_order[i]];
			if (!push_item(b, v))
				return &hd_error_no_memory;
			p.h.retained += hd_dom_ret(d, v);
			p.h.retained_blocks += d->count[v];
		}
		p.h.num_vertices = p.h.num_roots + (s1 - s0);
		if (!HD_VEC_PUSH(b->protos, b->num_protos, b->cap_protos, p))
			return &hd_error_no_memory;
	}
	return NULL;
}

static struct hd_error *leak_holders(struct builder *b)
{
	const struct hd_dom *d = b->d;
	if (!d->leak_tree.idom)
		return NULL;
	for (size_t l = 1; l <= d->num_leaked; l++) {
		if (d->leak_tree.idom[l] != 0)
			continue;
		struct proto p = {.h = {.kind = HD_HOLDER_BLOCK, .rank = HD_ROOT_RANKS}};
		p.roots_at = p.vertices_at = b->items.n;
		if (!push_item(b, d->leaked[l - 1]))
			return &hd_error_no_memory;
		p.h.num_vertices = 1;
		p.h.retained = d->leak_retained[l];
		p.h.retained_blocks = d->leak_count[l];
		if (!HD_VEC_PUSH(b->protos, b->num_protos, b->cap_protos, p))
			return &hd_error_no_memory;
	}
	return NULL;
}


static void joints_free(struct joints *j)
{
	free(j->vertex);
	free(j->bits);
	free(j->before);
	free(j->node);
	free(j->rank);
	free(j->pred_off);
	free(j->preds);
	free(j->succ_off);
	free(j->succs);
	free(j->set);
}

// The super-root's children that are blocks (or sub-allocator blocks):
// the vertices from v0 on that it immediately dominates, ascending. They
// are found in idom, before the children lists exist (those are built
// once the preorder, which the holders read, is freed).
static uint32_t joint_count(const struct hd_domtree *t, uint32_t v0)
{
	uint32_t k = 0;
	for (uint32_t v = v0; v < t->n; v++)
		k += t->idom[v] == t->root && v != t->root;
	return k;
}

static inline bool is_joint(const struct joints *j, uint32_t v)
{
	return j->bits[v / 64] >> (v % 64) & 1;
}

// The index of joint block v.
static inline uint32_t joint_index(const struct joints *j, uint32_t v)
{
	uint64_t below = j->bits[v / 64] & ((1ull << (v % 64)) - 1);
	return j->before[v / 64] + (uint32_t)__builtin_popcountll(below);
}

// The joint blocks: the super-root's children that are blocks, by vertex;
// in the ranked view with the class each was first reached from, found by
// one pass over the preorder.
static struct hd_error *find_joints(struct builder *b, struct joints *j,
				    uint32_t num)
{
	const struct hd_dom *d = b->d;
	const struct hd_domtree *t = &d->tree;
	uint32_t v0 = 1 + (uint32_t)b->nroots;
	size_t words = (size_t)d->n / 64 + 1;
	j->vertex = malloc(((size_t)num + 1) * sizeof(*j->vertex));
	j->rank = calloc((size_t)num + 1, sizeof(*j->rank));
	j->bits = calloc(words, sizeof(*j->bits));
	j->before = malloc(words * sizeof(*j->before));
	if (!j->vertex || !j->rank || !j->bits || !j->before)
		return &hd_error_no_memory;
	for (uint32_t v = v0; v < t->n; v++) {
		if (t->idom[v] == t->root && v != t->root) {
			j->vertex[j->num++] = v;
			j->bits[v / 64] |= 1ull << (v % 64);
		}
	}
	uint32_t count = 0;
	for (size_t w = 0; w < words; w++) {
		j->before[w] = count;
		count += (uint32_t)__builtin_popcountll(j->bits[w]);
	}
	if (!t->group_start || !j->num)
		return NULL;
	unsigned k = 0;
	for (uint32_t i = 1; i < t->num_reachable; i++) {
		uint32_t v = t->preorder[i];
		if (!is_joint(j, v))
			continue;
		while (k + 1 < t->num_groups && t->group_start[k + 1] <= i)
			k++;
		j->rank[joint_index(j, v)] = k;
	}
	return NULL;
}

// The holder node of vertex u: the root or joint block at the top of its
// dominator-tree branch. Walking up costs the depth, usually a few steps;
// past a budget (a joint block pointed at from deep in an 11M-node list)
// one pass over the preorder writes every vertex's node instead.
#define WALK_BUDGET (1u << 20)

static struct hd_error *node_table(struct builder *b, struct joints *j)
{
	const struct hd_domtree *t = &b->d->tree;
	uint32_t v0 = 1 + (uint32_t)b->nroots;
	j->node = malloc((size_t)b->d->n * sizeof(*j->node));
	if (!j->node)
		return &hd_error_no_memory;
	// In preorder a vertex's dominator comes first, so its node is known.
	for (uint32_t i = 1; i < t->num_reachable; i++) {
		uint32_t v = t->preorder[i], p = t->idom[v];
		if (p != t->root) {
			j->node[v] = j->node[p];
		} else if (v < v0) {
			j->node[v] = v - 1;
		} else {
			j->node[v] = (uint32_t)b->nroots + joint_index(j, v);
		}
	}
	return NULL;
}

static struct hd_error *node_of(struct builder *b, struct joints *j, uint32_t u,
				uint32_t *ret)
{
	const struct hd_domtree *t = &b->d->tree;
	if (!j->node) {
		uint32_t w = u;
		while (t->idom[w] != t->root && j->walked < WALK_BUDGET) {
			w = t->idom[w];
			j->walked++;
		}
		if (t->idom[w] == t->root) {
			if (w <= b->nroots) {
				*ret = w - 1;
			} else {
				*ret = (uint32_t)b->nroots + joint_index(j, w);
			}
			return NULL;
		}
		struct hd_error *err = node_table(b, j);
		if (err)
			return err;
	}
	*ret = j->node[u];
	return NULL;
}

static unsigned node_rank(const struct builder *b, const struct joints *j,
			  uint32_t node)
{
	return node < b->nroots ? hd_root_rank(b->g->roots[node].kind)
				: j->rank[node - b->nroots];
}

// An edge into joint block x (its index) from a vertex whose holder node
// is node (NO_NODE: the super-root's own edge, or from a block nothing
// reaches).
struct joint_in {
	uint32_t x, node;
};
#define NO_NODE UINT32_MAX

// The holder nodes of the sources of the edges into the joint blocks,
// grouped by block, each group in source vertex order as the reverse
// graph lists them: one pass over the forward edges with a bit per joint
// block, then a counting sort of what it found. The reverse graph of the
// whole heap (8 bytes an edge, and 0.1 s on 11M blocks) is not built for
// a handful of blocks. A source's node is found in that pass, in vertex
// order, where its dominator and its entry in the node table are read
// straight through; by joint block they were a cache miss each, for
// each of the millions of edges into a random graph's joint blocks.
static struct hd_error *joint_sources(struct builder *b, struct joints *j,
				      uint64_t **off_r, uint32_t **src_r)
{
	const struct hd_csr *g = &b->g->fwd;
	const struct hd_domtree *t = &b->d->tree;
	uint64_t *off = calloc((size_t)j->num + 1, sizeof(*off));
	struct joint_in *in = NULL;
	uint32_t *src = NULL;
	size_t num_in = 0, cap_in = 0;
	struct hd_error *err = NULL;
	if (!off) {
		err = &hd_error_no_memory;
		goto out;
	}
	for (uint32_t u = 0; u < g->n; u++) {
		bool found = false;
		uint32_t nu = NO_NODE;
		for (uint32_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
			uint32_t v = HD_EDGE_TARGET(g->targets[e]);
			if (!is_joint(j, v))
				continue;
			if (!found) {
				found = true;
				if (u != t->root && t->idom[u] != HD_NO_VERTEX) {
					err = node_of(b, j, u, &nu);
					if (err)
						goto out;
				}
			}
			struct joint_in ji = { joint_index(j, v), nu };
			if (!HD_VEC_PUSH(in, num_in, cap_in, ji)) {
				err = &hd_error_no_memory;
				goto out;
			}
			off[ji.x + 1]++;
		}
	}
	for (uint32_t x = 0; x < j->num; x++)
		off[x + 1] += off[x];
	src = malloc((num_in ? num_in : 1) * sizeof(*src));
	if (!src) {
		err = &hd_error_no_memory;
		goto out;
	}
	// Stable: each block's sources stay in vertex order. off[x] is x's
	// cursor, left at x's end, then shifted back.
	for (size_t k = 0; k < num_in; k++)
		src[off[in[k].x]++] = in[k].node;
	for (uint32_t x = j->num; x > 0; x--)
		off[x] = off[x - 1];
	off[0] = 0;
out:
	free(in);
	if (err) {
		free(off);
		free(src);
		return err;
	}
	*off_r = off;
	*src_r = src;
	return NULL;
}

// Predecessor nodes of each joint block and joint successors of each. In
// the ranked view an edge from a weaker class only borrows the block.
static struct hd_error *joint_edges(struct builder *b, struct joints *j)
{
	const struct hd_dom *d = b->d;
	bool ranked = d->view == HD_DOM_RANKED;
	j->pred_off = calloc((size_t)j->num + 1, sizeof(*j->pred_off));
	j->succ_off = calloc((size_t)j->num + 1, sizeof(*j->succ_off));
	if (!j->pred_off || !j->succ_off)
		return &hd_error_no_memory;
	uint64_t *src_off;
	uint32_t *src;
	struct hd_error *err = joint_sources(b, j, &src_off, &src);
	if (err)
		return err;
	size_t n = 0, cap = 0;
	for (uint32_t x = 0; x < j->num; x++) {
		uint32_t me = (uint32_t)b->nroots + x;
		j->pred_off[x] = n;
		for (uint64_t e = src_off[x]; e < src_off[x + 1]; e++) {
			uint32_t nu = src[e];
			if (nu == NO_NODE || nu == me ||
			    (ranked && node_rank(b, j, nu) > j->rank[x]))
				continue;
			if (!HD_VEC_PUSH(j->preds, n, cap, nu)) {
				free(src_off);
				free(src);
				return &hd_error_no_memory;
			}
			if (nu >= b->nroots)
				j->succ_off[nu - b->nroots + 1]++;
		}
	}
	free(src_off);
	free(src);
	j->pred_off[j->num] = n;
	for (uint32_t x = 0; x < j->num; x++)
		j->succ_off[x + 1] += j->succ_off[x];
	uint64_t m = j->succ_off[j->num];
	j->succs = malloc((m ? m : 1) * sizeof(*j->succs));
	uint64_t *cur = malloc(((size_t)j->num + 1) * sizeof(*cur));
	if (!j->succs || !cur) {
		free(cur);
		return &hd_error_no_memory;
	}
	memcpy(cur, j->succ_off, ((size_t)j->num + 1) * sizeof(*cur));
	for (uint32_t x = 0; x < j->num; x++)
		for (uint64_t e = j->pred_off[x]; e < j->pred_off[x + 1]; e++)
			if (j->preds[e] >= b->nroots)
				j->succs[cur[j->preds[e] - b->nroots]++] = x;
	free(cur);
	return NULL;
}

static struct hd_error *joint_sets(struct builder *b, struct joints *j,
				   struct hd_setpool *pool)
{
	uint32_t n = j->num;
	j->set = calloc(n ? n : 1, sizeof(*j->set));
	uint32_t *queue = malloc((n ? n : 1) * sizeof(*queue));
	uint8_t *queued = malloc(n ? n : 1);
	struct hd_error *err = NULL;
	if (!j->set || !queue || !queued) {
		err = &hd_error_no_memory;
		goto out;
	}
	// A ring of joint indices: each is in it at most once.
	size_t head = 0, len = n;
	for (uint32_t x = 0; x < n; x++)
		queue[x] = x;
	memset(queued, 1, n);
	while (len) {
		uint32_t x = queue[head];
		head = (head + 1) % n;
		len--;
		queued[x] = 0;
		uint32_t s = HD_SET_EMPTY;
		for (uint64_t e = j->pred_off[x]; e < j->pred_off[x + 1]; e++) {
			uint32_t nu = j->preds[e];
			uint32_t ps = nu < b->nroots
					      ? hd_setpool_single(pool, b->name_id[nu])
					      : j->set[nu - b->nroots];
			if (ps != UINT32_MAX)
				s = hd_setpool_union(pool, s, ps);
			if (ps == UINT32_MAX || s == UINT32_MAX) {
				err = &hd_error_no_memory;
				goto out;
			}
		}
		if (s == j->set[x])
			continue;
		j->set[x] = s;
		for (uint64_t e = j->succ_off[x]; e < j->succ_off[x + 1]; e++) {
			uint32_t y = j->succs[e];
			if (!queued[y]) {
				queued[y] = 1;
				queue[(head + len++) % n] = y;
			}
		}
	}
out:
	free(queue);
	free(queued);
	return err;
}

static const struct joints *g_sort_joints;

static int by_set(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t sx = g_sort_joints->set[x], sy = g_sort_joints->set[y];
	if (sx != sy)
		return sx < sy ? -1 : 1;
	uint64_t rx = hd_dom_ret(g_sort_dom, g_sort_joints->vertex[x]);
	uint64_t ry = hd_dom_ret(g_sort_dom, g_sort_joints->vertex[y]);
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return (x > y) - (x < y);
}

static const struct builder *g_sort_builder;

static int member_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	unsigned rx = hd_root_rank(g_sort_builder->g->roots[x].kind);
	unsigned ry = hd_root_rank(g_sort_builder->g->roots[y].kind);
	if (rx != ry)
		return rx < ry ? -1 : 1;
	return by_name(a, b);
}

// Sorts the joint blocks by set and finds the single-name runs.
static struct hd_error *joint_runs(struct builder *b, struct joints *j,
				   struct hd_setpool *pool)
{
	b->joint_order = malloc((j->num ? j->num : 1) * sizeof(*b->joint_order));
	b->single_start = calloc(b->num_names ? b->num_names : 1, sizeof(uint32_t));
	b->single_end = calloc(b->num_names ? b->num_names : 1, sizeof(uint32_t));
	if (!b->joint_order || !b->single_start || !b->single_end)
		return &hd_error_no_memory;
	for (uint32_t x = 0; x < j->num; x++)
		b->joint_order[x] = x;
	g_sort_joints = j;
	g_sort_dom = b->d;
	hd_qsort(b->joint_order, j->num, sizeof(*b->joint_order), by_set);
	for (uint32_t i = 0; i < j->num;) {
		uint32_t s = j->set[b->joint_order[i]], i0 = i;
		while (i < j->num && j->set[b->joint_order[i]] == s)
			i++;
		size_t nm;
		const uint32_t *members = hd_setpool_items(pool, s, &nm);
		if (nm == 1) {
			b->single_start[members[0]] = i0;
			b->single_end[members[0]] = i;
		}
	}
	return NULL;
}

// One holder per set of two or more root names.
static struct hd_error *joint_holders(struct builder *b, struct joints *j,
				      struct hd_setpool *pool)
{
	const uint32_t *order = b->joint_order;
	for (uint32_t i = 0; i < j->num;) {
		uint32_t s = j->set[order[i]], i0 = i;
		while (i < j->num && j->set[order[i]] == s)
			i++;
		size_t nm;
		const uint32_t *members = hd_setpool_items(pool, s, &nm);
		if (nm < 2)
			continue;
		struct proto p = {.h = {.kind = HD_HOLDER_JOINT}};
		// The pool keeps one name more than a holder lists, so that a
		// set of exactly HD_HOLDER_MAX_MEMBERS is known to be whole.
		p.h.overflow = nm > HD_HOLDER_MAX_MEMBERS;
		if (p.h.overflow)
			nm = HD_HOLDER_MAX_MEMBERS;
		p.roots_at = b->items.n;
		for (size_t k = 0; k < nm; k++)
			if (!push_item(b, name_root(b, members[k])))
				return &hd_error_no_memory;
		p.h.num_roots = nm;
		p.vertices_at = b->items.n;
		for (uint32_t x = i0; x < i; x++) {
			uint32_t v = j->vertex[order[x]];
			if (!push_item(b, v))
				return &hd_error_no_memory;
			p.h.num_vertices++;
			p.h.retained += hd_dom_ret(b->d, v);
			p.h.retained_blocks += b->d->count[v];
		}
		g_sort_builder = b;
		g_sort_graph = b->g;
		hd_qsort(b->items.v + p.roots_at, nm, sizeof(uint32_t), member_order);
		p.h.rank = hd_root_rank(b->g->roots[b->items.v[p.roots_at]].kind);
		if (!HD_VEC_PUSH(b->protos, b->num_protos, b->cap_protos, p))
			return &hd_error_no_memory;
	}
	return NULL;
}

struct hd_error *hd_dom_holders_compute(struct hd_dom *d,
					const struct hd_graph *g)
{
	struct builder b = {.d = d, .g = g, .nroots = g->num_roots};
	struct joints j = {0};
	struct hd_setpool pool;
	if (!hd_setpool_init(&pool, HD_HOLDER_MAX_MEMBERS + 1))
		return &hd_error_no_memory;
	b.j = &j;
	struct hd_error *err = name_roots(&b);
	// Joint blocks are rare on most heaps: look only if the super-root
	// dominates a block.
	uint32_t num_joints = err ? 0 : joint_count(&d->tree, 1 + (uint32_t)g->num_roots);
	if (!err && num_joints)
		err = find_joints(&b, &j, num_joints);
	if (!err && j.num)
		err = joint_edges(&b, &j);
	if (!err && j.num)
		err = joint_sets(&b, &j, &pool);
	if (!err && j.num)
		err = joint_runs(&b, &j, &pool);
	if (!err)
		err = root_holders(&b);
	if (!err && j.num)
		err = joint_holders(&b, &j, &pool);
	if (!err)
		err = leak_holders(&b);
	joints_free(&j);
	hd_setpool_deinit(&pool);
	free(b.order);
	free(b.name_id);
	free(b.name_start);
	free(b.joint_order);
	free(b.single_start);
	free(b.single_end);
	if (!err) {
		hd_qsort(b.protos, b.num_protos, sizeof(*b.protos), proto_order);
		d->holders = malloc((b.num_protos ? b.num_protos : 1) * sizeof(*d->holders));
		if (!d->holders)
			err = &hd_error_no_memory;
	}
	if (err) {
		free(b.protos);
		free(b.items.v);
		return err;
	}
	d->holder_items = b.items.v;
	for (size_t i = 0; i < b.num_protos; i++) {
		struct hd_holder *x = &d->holders[i];
		*x = b.protos[i].h;
		x->roots = d->holder_items + b.protos[i].roots_at;
		x->vertices = d->holder_items + b.protos[i].vertices_at;
	}
	d->num_holders = b.num_protos;
	free(b.protos);
	return NULL;
}

void hd_dom_holders_free(struct hd_dom *d)
{
	free(d->holders);
	free(d->holder_items);
	d->holders = NULL;
	d->holder_items = NULL;
	d->num_holders = 0;
}

size_t hd_dom_num_holders(const struct hd_dom *d) { return d->num_holders; }

const struct hd_holder *hd_dom_holder(const struct hd_dom *d, size_t i)
{
	return &d->holders[i];
}
