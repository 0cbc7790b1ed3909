// Dominator tree by semi-NCA (Georgiadis): Lengauer-Tarjan semidominators
// with simple linking, then each immediate dominator as the nearest common
// ancestor found by walking up the partial dominator tree.
//
// Everything is iterative, since a heap can hold a linked list of millions
// of nodes, and works on preorder numbers so that the hot loops touch
// dense arrays; vertex ids come back only at the end.
//
// Leaves are left out of all that: a leaf is a vertex with no edge of its
// own and exactly one edge into it (a string, an array of numbers, a
// vector's buffer: most of a heap's blocks). Its immediate dominator is
// the vertex that edge comes from, and no other vertex's depends on it.
// The search passes leaves over (a bit per vertex says which), the
// predecessor pass writes down where each is reached from, and the
// passes after it run over the other vertices only. On a heap whose
// structure runs across the address space (a std::map's nodes), each
// leaf the search numbered was a cache miss on its number and its edges.
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "dom/dom.h"
#include "util/sort.h"
#include "util/sort_inplace.h"

// How far ahead the sequential passes prefetch, in vertices.
#define PREFETCH_AHEAD 16
// How many edges of a vertex prefetch_forest looks at.
#define PREFETCH_EDGES 8
// How far ahead build_preds prefetches, in edges. Its look-ups are
// independent, so the distance is what keeps enough misses in flight to
// cover the memory's latency once the arrays outgrow the cache: 16 edges
// left it waiting (8.6M-vertex server graph: 0.13 s, 0.07 s with 64).
#define EDGES_AHEAD 64
// How far ahead settle_seen prefetches, in edges: 16 left it waiting on
// its misses once the arrays outgrow the cache (11M-block server graph:
// the search 18.4 ns a block, 17.1 with 48; 1M: 6.0, 5.5).
#define SEEN_AHEAD 48
// Stages of the semidominator pass's prefetch (prefetch_forest): hops up
// the link-eval forest fetched ahead, one more per stage, FOREST_AHEAD
// vertices apart.
#define FOREST_STAGES 5
#define FOREST_AHEAD 32

// num[v] of a leaf the search reached: this flag and the number of the
// vertex it was reached from (numbers are below 2^31).
#define LEAF_OF 0x80000000u

// The link-eval forest, by preorder number. A vertex is linked to its DFS
// parent once its semidominator is known; as those are computed in
// decreasing preorder, "linked" is simply "number > the current vertex",
// so the forest needs no flags and ancestor starts out as the DFS parent.
struct link_node {
	uint32_t ancestor;
	// Smallest semidominator on the compressed path up to (not including)
	// the forest root. Storing the value rather than the vertex that has
	// it saves a lookup in EVAL. Until the vertex's own turn in the
	// semidominator pass, nothing reads it: the search keeps there the
	// smallest predecessor numbered before the vertex (see explore).
	uint32_t label;
};

// A vertex the search will come back to, with the next of its edges
// (a graph has fewer than 2^32).
struct dfs_frame {
	uint32_t i;
	uint32_t cursor;
};

// An edge from number i to number nu, found before: the search writes it
// down and goes on, and seen_edge settles it later, in a batch of
// SEEN_BATCH (settle_seen). Settled at once, each such edge was a cache
// miss on its count or label that the search waited on (a hash table's
// chains and buckets point all over the heap); in a batch, those misses
// are prefetched and overlap. Small batches keep the lines of the edges
// that point near (a list's back links, a tree's parent pointers) still
// in the cache when they are settled.
struct seen {
	uint32_t i;
	uint32_t nu;
};
#define SEEN_BATCH 1024

// The scratch is what bounds the analysis's peak memory on a large heap,
// so every array is live only while some pass needs it, and the later
// passes reuse the earlier ones' (see each field). Arrays by number have
// one entry per vertex that is not a leaf (cap).
struct dom_state {
	const struct hd_csr *g;
	// Vertex id -> preorder number, LEAF_OF | the number of its
	// predecessor for a leaf, HD_NO_VERTEX if not reached; at the end,
	// in place, the immediate dominator (finish).
	uint32_t *num;
	uint64_t *leaf; // a bit per vertex id: a leaf (find_leaves)
	uint32_t cap;   // vertices that are not leaves
	uint32_t *preorder; // preorder number -> vertex id
	struct link_node *link;
	// The predecessors the semidominator pass must evaluate, by preorder
	// number, sources as preorder numbers too (build_preds): only those
	// numbered after the target (the search found them later) and, with
	// groups, in the target's group. One numbered before is an ancestor
	// or the target itself, whose contribution the search already took
	// into link[].label; most edges are tree edges, which need nothing.
	// Then pred_off[w + 1], read for the last time when w's turn comes,
	// holds w's semidominator (semi_of), and after
	// nearest_common_ancestors w's immediate dominator's vertex id.
	uint32_t *pred_off; // cap + 2 entries, count + 2 used
	uint32_t *pred;
	// By preorder number: the DFS parent, then the immediate dominator.
	uint32_t *parent;
	struct seen *seen;
	uint32_t num_seen;
	struct dfs_frame *stack;
	size_t stack_cap;
	uint32_t count;      // vertices reached but leaves, numbered
	uint32_t num_leaves; // leaves reached
	// Preorder numbers below this belong to an earlier group: an edge
	// from the group being searched to them is borrowed, not followed.
	uint32_t group_lo;
};

static inline bool is_leaf(const uint64_t *leaf, uint32_t v)
{
	return leaf[v / 64] >> (v % 64) & 1;
}

// The leaves of g: two bits a vertex count the edges into it (none, one,
// more), in an array a sixteenth of the graph's offsets that the cache
// holds while the targets are read straight through. A successor of root
// is not a leaf: the search takes it group by group (explore_from_root).
static struct hd_error *find_leaves(struct dom_state *st, uint32_t root)
{
	const struct hd_csr *g = st->g;
	uint32_t n = g->n;
	uint64_t *in = calloc((size_t)n / 32 + 1, sizeof(*in));
	st->leaf = calloc((size_t)n / 64 + 1, sizeof(*st->leaf));
	if (!in || !st->leaf) {
		free(in);
		return &hd_error_no_memory;
	}
	const uint32_t *targets = g->targets;
	for (uint64_t e = 0, m = g->offsets[n]; e < m; e++) {
		uint32_t t = HD_EDGE_TARGET(targets[e]);
		uint64_t *w = &in[t / 32];
		unsigned shift = t % 32 * 2;
		// 0 -> 1 -> 2, and 2 stays (3 is never reached).
		*w += (~*w >> (shift + 1) & 1) << shift;
	}
	uint32_t leaves = 0;
	const uint32_t *offsets = g->offsets;
	for (uint32_t v = 0; v < n; v++) {
		if ((in[v / 32] >> (v % 32 * 2) & 3) == 1 &&
		    offsets[v] == offsets[v + 1]) {
			st->leaf[v / 64] |= 1ull << (v % 64);
			leaves++;
		}
	}
	free(in);
	if (is_leaf(st->leaf, root)) {
		st->leaf[root / 64] &= ~(1ull << (root % 64));
		leaves--;
	}
	for (uint32_t e = offsets[root]; e < offsets[root + 1]; e++) {
		uint32_t t = HD_EDGE_TARGET(targets[e]);
		if (is_leaf(st->leaf, t)) {
			st->leaf[t / 64] &= ~(1ull << (t % 64));
			leaves--;
		}
	}
	st->cap = n - leaves;
	return NULL;
}

static struct hd_error *dom_state_init(struct dom_state *st,
				       const struct hd_csr *g, uint32_t root)
{
	size_t n = g->n;
	*st = (struct dom_state){ .g = g };
	st->num = malloc(n * sizeof(*st->num));
	if (!st->num)
		return &hd_error_no_memory;
	struct hd_error *err = find_leaves(st, root);
	if (err)
		return err;
	size_t cap = st->cap;
	st->preorder = malloc(cap * sizeof(*st->preorder));
	// Room for the output's preorder too (finish), which takes the
	// forest's pages: only the pages written become resident.
	size_t link_size = cap * sizeof(*st->link);
	if (link_size < n * sizeof(uint32_t))
		link_size = n * sizeof(uint32_t);
	st->link = malloc(link_size);
	st->seen = malloc(SEEN_BATCH * sizeof(*st->seen));
	// The search counts each vertex's evaluated predecessors (by number)
	// as it goes: it reads every target's number anyway.
	st->pred_off = calloc(cap + 2, sizeof(*st->pred_off));
	st->stack_cap = 4096;
	st->stack = malloc(st->stack_cap * sizeof(*st->stack));
	if (!st->preorder || !st->link || !st->seen || !st->pred_off ||
	    !st->stack)
		return &hd_error_no_memory;
	memset(st->num, 0xff, n * sizeof(*st->num));
	return NULL;
}

static void dom_state_free(struct dom_state *st)
{
	free(st->num);
	free(st->leaf);
	free(st->preorder);
	free(st->link);
	free(st->pred_off);
	free(st->pred);
	free(st->parent);
	free(st->seen);
	free(st->stack);
}

// An edge from number i (being searched) to number nu, already found.
// If nu > i, nu was found below i: i is an ancestor of nu (or nu itself),
// so its whole contribution to nu's semidominator is i, and it is
// recorded now. Otherwise i comes after nu and the semidominator pass
// must evaluate it: counted for build_preds, unless nu is in an earlier
// group.
static inline void seen_edge(struct dom_state *st, uint32_t i, uint32_t nu)
{
	if (nu < i) {
		if (nu >= st->group_lo)
			st->pred_off[nu + 2]++;
	} else if (st->link[nu].label > i) {
		st->link[nu].label = i;
	}
}

// Settles the edges written down since the last batch. The search
// settles the batch before it moves to the next group: seen_edge reads
// group_lo.
static void settle_seen(struct dom_state *st)
{
	const struct seen *sn = st->seen;
	uint32_t k = st->num_seen;
	for (uint32_t j = 0; j < k; j++) {
		if (j + SEEN_AHEAD < k) {
			struct seen a = sn[j + SEEN_AHEAD];
			if (a.nu < a.i)
				__builtin_prefetch(&st->pred_off[a.nu + 2], 1);
			else
				__builtin_prefetch(&st->link[a.nu], 1);
		}
		seen_edge(st, sn[j].i, sn[j].nu);
	}
	st->num_seen = 0;
}

// Depth-first search below vertex number i, already numbered. The DFS path
// is the parent chain, but climbing it back through vertices whose edges
// are all used would double the work on lists and trees; so the search
// keeps a stack of only the vertices with edges left, each with its
// cursor. Leaves are passed over (build_preds writes them down).
static struct hd_error *explore(struct dom_state *st, uint32_t i)
{
	const uint32_t *offsets = st->g->offsets;
	const uint32_t *targets = st->g->targets;
	const uint64_t *leaf = st->leaf;
	uint32_t *num = st->num;
	uint32_t *preorder = st->preorder;
	struct link_node *link = st->link;
	uint32_t count = st->count;
	size_t depth = 0;
	uint32_t e = (uint32_t)offsets[preorder[i]];
	uint32_t end = (uint32_t)offsets[preorder[i] + 1];
	for (;;) {
		while (e < end) {
			uint32_t u = HD_EDGE_TARGET(targets[e++]);
			if (is_leaf(leaf, u))
				continue;
			uint32_t nu = num[u];
			if (nu != HD_NO_VERTEX) {
				st->seen[st->num_seen++] = (struct seen){ i, nu };
				if (st->num_seen == SEEN_BATCH)
					settle_seen(st);
				continue;
			}
			if (e < end) {
				if (depth == st->stack_cap) {
					size_t cap = 2 * st->stack_cap;
					struct dfs_frame *s =
						realloc(st->stack, cap * sizeof(*s));
					if (!s)
						return &hd_error_no_memory;
					st->stack = s;
					st->stack_cap = cap;
				}
				st->stack[depth++] = (struct dfs_frame){ i, e };
			}
			num[u] = count;
			preorder[count] = u;
			// The parent is the first guess for the semidominator.
			link[count] = (struct link_node){ i, i };
			i = count++;
			e = (uint32_t)offsets[u];
			end = (uint32_t)offsets[u + 1];
		}
		if (depth == 0)
			break;
		struct dfs_frame f = st->stack[--depth];
		i = f.i;
		e = f.cursor;
		end = (uint32_t)offsets[preorder[i] + 1];
	}
	st->count = count;
	return NULL;
}

// Numbers u, a successor of the root not yet found (never a leaf), and
// explores below it.
static struct hd_error *explore_from_root(struct dom_state *st, uint32_t u)
{
	if (st->num[u] != HD_NO_VERTEX) {
		seen_edge(st, 0, st->num[u]);
		return NULL;
	}
	uint32_t i = st->count++;
	st->num[u] = i;
	st->preorder[i] = u;
	st->link[i] = (struct link_node){ 0, 0 };
	return explore(st, i);
}

// Depth-first search from root. With groups, root's successors are taken
// group by group, each explored to the end before the next, so the
// vertices first found from group k get the preorder numbers
// [group_start[k], group_start[k + 1]); edges past the last group form
// one more group. Without groups, every vertex is in group 0, the root
// with them. Leaves are passed over (build_preds writes them down).
static struct hd_error *dfs(struct dom_state *st, uint32_t root,
			    const uint64_t *groups, uint32_t num_groups,
			    uint32_t *group_start)
{
	st->num[root] = 0;
	st->preorder[0] = root;
	st->link[0] = (struct link_node){ 0, 0 };
	st->count = 1;
	if (!groups) {
		struct hd_error *err = explore(st, 0);
		settle_seen(st);
		group_start[0] = 0;
		group_start[1] = st->count;
		return err;
	}
	const uint32_t *targets = st->g->targets;
	uint64_t first = st->g->offsets[root], end = st->g->offsets[root + 1];
	uint64_t e = first;
	for (uint32_t k = 0; k <= num_groups; k++) {
		group_start[k] = st->count;
		st->group_lo = st->count;
		uint64_t gend = k < num_groups && first + groups[k] < end ? first + groups[k] : end;
		for (; e < gend; e++) {
			struct hd_error *err =
				explore_from_root(st, HD_EDGE_TARGET(targets[e]));
			if (err)
				return err;
		}
		settle_seen(st);
	}
	group_start[num_groups + 1] = st->count;
	return NULL;
}

// Compresses the forest path from v, whose ancestor is linked, given that
// w is being processed. Instead of recursing (or keeping a stack as deep
// as the path), the first pass reverses the ancestor pointers on the way
// up and the second follows them back down, carrying the minimum label
// from the top and pointing every vertex at the forest root.
static uint32_t compress(struct link_node *link, uint32_t v, uint32_t w)
{
	uint32_t prev = v;
	uint32_t u = link[v].ancestor;
	uint32_t root;
	while ((root = link[u].ancestor) > w) {
		link[u].ancestor = prev;
		prev = u;
		u = root;
	}
	uint32_t min = link[u].label;
	for (;;) {
		uint32_t x = prev;
		if (link[x].label > min)
			link[x].label = min;
		else
			min = link[x].label;
		prev = link[x].ancestor;
		link[x].ancestor = root;
		if (x == v)
			return min;
	}
}

// The smallest semidominator on the forest path from linked vertex v.
static inline uint32_t eval(struct link_node *link, uint32_t v, uint32_t w)
{
	if (link[v].ancestor <= w)
		return link[v].label;
	return compress(link, v, w);
}

// The group (index) of preorder number i, of num_groups.
static inline uint32_t group_index(const uint32_t *group_start,
				   uint32_t num_groups, uint32_t i)
{
	uint32_t k = 0;
	for (uint32_t j = 1; j < num_groups; j++)
		k += group_start[j] <= i;
	return k;
}

// The predecessor lists by preorder number, from the counts the search
// made into pred_off[t + 2]: after the prefix sum pred_off[t + 1] is t's
// cursor for the fill, which leaves it at t's end, t + 1's start (as in
// hd_csr_reverse). Edges are taken in vertex order (the forward graph's
// own order, read straight through); what is scattered is each target's
// number, its cursor and its slot, prefetched in stages, each reading
// what the one before fetched. An edge is kept on the same terms as the
// search counted it (seen_edge): from a numbered vertex, to one numbered
// before it, in its group. An edge into a leaf is the leaf's only one:
// the leaf is written down here as reached from the edge's source (the
// search passed it over: a leaf away from its source was a miss there),
// and counted in that vertex's group into leaf_start[k + 1].
static struct hd_error *build_preds(struct dom_state *st,
				    const uint32_t *group_start,
				    uint32_t *leaf_start,
				    uint32_t num_groups)
{
	const uint32_t *offsets = st->g->offsets;
	const uint32_t *targets = st->g->targets;
	uint32_t *num = st->num;
	const uint64_t *leaf = st->leaf;
	uint32_t *off = st->pred_off;
	uint32_t n = st->g->n;
	uint64_t m = offsets[n];
	for (uint32_t i = 2; i <= st->count + 1; i++)
		off[i] += off[i - 1];
	uint32_t total = off[st->count + 1];
	uint32_t *pred = malloc((total ? total : 1) * sizeof(*pred));
	if (!pred)
		return &hd_error_no_memory;
	st->pred = pred;
	memset(leaf_start, 0, (num_groups + 1) * sizeof(*leaf_start));
	for (uint32_t u = 0; u < n; u++) {
		uint32_t nu = num[u];
		// A leaf has no edges; the root's successors are not leaves.
		if (nu == HD_NO_VERTEX || nu == 0 || (nu & LEAF_OF))
			continue;
		uint32_t k = group_index(group_start, num_groups, nu);
		uint32_t lo = group_start[k];
		for (uint64_t e = offsets[u], end = offsets[u + 1]; e < end; e++) {
			if (e + 2 * EDGES_AHEAD < m) {
				uint32_t x = HD_EDGE_TARGET(targets[e + 2 * EDGES_AHEAD]);
				__builtin_prefetch(&num[x], 1);
			}
			if (e + EDGES_AHEAD < m) {
				uint32_t x = HD_EDGE_TARGET(targets[e + EDGES_AHEAD]);
				uint32_t a = is_leaf(leaf, x) ? HD_NO_VERTEX : num[x];
				if (a < LEAF_OF)
					__builtin_prefetch(&off[a + 1], 1);
			}
			uint32_t x = HD_EDGE_TARGET(targets[e]);
			if (is_leaf(leaf, x)) {
				num[x] = LEAF_OF | nu;
				leaf_start[k + 1]++;
				continue;
			}
			// A numbered vertex's successors are reached.
			uint32_t t = num[x];
			if (t < nu && t >= lo)
				pred[off[t + 1]++] = nu;
		}
	}
	for (uint32_t k = 0; k < num_groups; k++)
		leaf_start[k + 1] += leaf_start[k];
	st->num_leaves = leaf_start[num_groups];
	return NULL;
}

// The semidominator pass walks the preorder numbers down, and its
// predecessor lists are in that order, but each predecessor starts a climb
// of the link-eval forest through nodes all over it. Prefetch in stages,
// each reading what the previous one fetched: the forest nodes of the
// predecessors of the vertex FOREST_STAGES * FOREST_AHEAD ahead, their
// ancestors' nodes a stage nearer, and so on up: a compressing climb
// averages a dozen hops on a server's heap, each a cache miss otherwise
// (5 stages: 0.8 s instead of 1.45 s without any, 0.9 s with 3, on 8.6M
// vertices). Compression may move an ancestor before w gets there; the
// prefetch is then wasted, never wrong.
static inline void prefetch_forest(const struct dom_state *st, uint32_t w)
{
	const uint32_t *off = st->pred_off, *pred = st->pred;
	const struct link_node *link = st->link;
	for (unsigned k = FOREST_STAGES; k >= 1; k--) {
		if (w <= k * FOREST_AHEAD)
			continue;
		uint32_t x = w - k * FOREST_AHEAD;
		uint32_t e = off[x], end = off[x + 1];
		if (end - e > PREFETCH_EDGES)
			end = e + PREFETCH_EDGES;
		for (; e < end; e++) {
			uint32_t p = pred[e];
			for (unsigned hop = FOREST_STAGES; hop > k && p > x; hop--)
				p = link[p].ancestor;
			if (p > x)
				__builtin_prefetch(&link[p], 1);
		}
	}
}

// w's semidominator, once the semidominator pass is past w: pred_off[w + 1]
// is not read after w's turn (the turns go down), so it holds it.
static inline uint32_t *semi_of(struct dom_state *st)
{
	return st->pred_off + 1;
}

// Semidominators in reverse preorder. Each predecessor numbered after w is
// evaluated; the smallest of the others is in link[w].label already. Also
// records each DFS parent, by number, as the first guess for the
// immediate dominator before compression overwrites it.
static void semidominators(struct dom_state *st)
{
	const uint32_t *off = st->pred_off, *pred = st->pred;
	uint32_t *semi = semi_of(st);
	uint32_t *parent = st->parent;
	struct link_node *link = st->link;
	for (uint32_t w = st->count - 1; w > 0; w--) {
		prefetch_forest(st, w);
		uint32_t s = link[w].label;
		for (uint32_t e = off[w], end = off[w + 1]; e < end; e++) {
			uint32_t x = eval(link, pred[e], w);
			if (x < s)
				s = x;
		}
		link[w].label = s;
		parent[w] = link[w].ancestor;
		semi[w] = s;
	}
	semi[0] = 0;
	parent[0] = 0;
}

// In preorder, a vertex's ancestors already have their immediate
// dominators, so the NCA of parent and semidominator is reached by
// climbing the dominator tree from the parent; the answers, by number,
// replace the parents, and the same pass writes them as vertex ids over
// the semidominators, each read just before (semi_of).
static void nearest_common_ancestors(struct dom_state *st)
{
	uint32_t *semi = semi_of(st);
	uint32_t *d_of = st->parent;
	const uint32_t *preorder = st->preorder;
	semi[0] = preorder[0];
	for (uint32_t w = 1; w < st->count; w++) {
		uint32_t d = d_of[w];
		uint32_t s = semi[w];
		while (d > s)
			d = d_of[d];
		d_of[w] = d;
		semi[w] = preorder[d];
	}
}

// The results, from the numbers: num becomes idom in place, read and
// written straight through, each vertex's immediate dominator looked up
// by number (a leaf's is the vertex it was reached from); and the
// preorder of all the reached vertices, each group's numbered vertices
// in the search's order, then its leaves in vertex order, so that every
// vertex comes after its immediate dominator. group_start, by number
// on entry, becomes positions in that preorder.
static struct hd_error *finish(struct dom_state *st, uint32_t *group_start,
			       const uint32_t *leaf_start,
			       uint32_t num_groups, struct hd_domtree *ret)
{
	uint32_t n = st->g->n;
	uint32_t reached = st->count + st->num_leaves;
	// The preorder takes the forest's room, whose pages are resident: a
	// new array would take a page fault for each 4 KiB.
	uint32_t *order = realloc(st->link, (size_t)reached * sizeof(*order));
	if (!order)
		return &hd_error_no_memory;
	st->link = NULL;
	uint32_t *cursor = malloc((size_t)num_groups * sizeof(*cursor));
	if (!cursor) {
		free(order);
		return &hd_error_no_memory;
	}
	// The numbered vertices before group 0 (the root, with groups) keep
	// their places; each group's start moves by the leaves before it.
	memcpy(order, st->preorder, (size_t)group_start[0] * sizeof(*order));
	for (uint32_t k = 0; k < num_groups; k++) {
		uint32_t lo = group_start[k], hi = group_start[k + 1];
		memcpy(order + lo + leaf_start[k], st->preorder + lo,
		       (size_t)(hi - lo) * sizeof(*order));
		cursor[k] = hi + leaf_start[k];
	}
	const uint32_t *idom_of = semi_of(st);
	const uint32_t *preorder = st->preorder;
	uint32_t *num = st->num;
	for (uint32_t v = 0; v < n; v++) {
		if (v + PREFETCH_AHEAD < n) {
			uint32_t x = num[v + PREFETCH_AHEAD];
			if (x != HD_NO_VERTEX)
				__builtin_prefetch(x & LEAF_OF ? &preorder[x & ~LEAF_OF]
							       : &idom_of[x]);
		}
		uint32_t x = num[v];
		if (x == HD_NO_VERTEX)
			continue;
		if (x & LEAF_OF) {
			uint32_t p = x & ~LEAF_OF;
			order[cursor[group_index(group_start, num_groups, p)]++] = v;
			num[v] = preorder[p];
		} else {
			num[v] = idom_of[x];
		}
	}
	for (uint32_t k = 0; k <= num_groups; k++)
		group_start[k] += leaf_start[k];
	free(cursor);
	ret->n = n;
	ret->idom = num;
	ret->preorder = order;
	ret->num_reachable = reached;
	st->num = NULL;
	return NULL;
}

struct hd_error *hd_dominators(const struct hd_csr *g, uint32_t root,
			       struct hd_domtree *ret)
{
	return hd_dominators_grouped(g, root, NULL, 0, ret);
}

// The search, the predecessor lists and the semidominators, leaving the
// parents in st->parent and the semidominators in semi_of(st) (and the
// forest's memory for finish).
static struct hd_error *semi_pass(struct dom_state *st, uint32_t root,
				  const uint64_t *groups, uint32_t num_groups,
				  uint32_t *group_start, uint32_t *leaf_start)
{
	struct hd_error *err = dfs(st, root, groups, num_groups - 1,
				   group_start);
	if (err)
		return err;
	free(st->stack);
	free(st->seen);
	st->stack = NULL;
	st->seen = NULL;
	err = build_preds(st, group_start, leaf_start, num_groups);
	if (err)
		return err;
	free(st->leaf);
	st->leaf = NULL;
	st->parent = malloc((size_t)st->count * sizeof(*st->parent));
	if (!st->parent)
		return &hd_error_no_memory;
	semidominators(st);
	free(st->pred);
	st->pred = NULL;
	return NULL;
}

struct hd_error *hd_dominators_grouped(const struct hd_csr *g, uint32_t root,
				       const uint64_t *groups,
				       uint32_t num_groups,
				       struct hd_domtree *ret)
{
	*ret = (struct hd_domtree){ 0 };
	if (g->n > INT32_MAX) {
		return hd_error_create(HD_ERROR_INVALID,
				       "graph of %" PRIu32 " vertices is too large "
				       "for dominators", g->n);
	}
	if (root >= g->n) {
		return hd_error_create(HD_ERROR_INVALID,
				       "dominator root %" PRIu32
				       " is not a vertex of a graph of %" PRIu32,
				       root, g->n);
	}
	// One more group than given: edges past the last one; without
	// groups, one.
	uint32_t ng = groups ? num_groups + 1 : 1;
	uint32_t *group_start = malloc((ng + 1) * sizeof(*group_start));
	uint32_t *leaf_start = malloc((ng + 1) * sizeof(*leaf_start));
	struct dom_state st = { 0 };
	struct hd_error *err = group_start && leaf_start
		? dom_state_init(&st, g, root) : &hd_error_no_memory;
	if (!err)
		err = semi_pass(&st, root, groups, ng, group_start, leaf_start);
	if (!err) {
		nearest_common_ancestors(&st);
		free(st.parent);
		st.parent = NULL;
		err = finish(&st, group_start, leaf_start, ng, ret);
	}
	free(leaf_start);
	dom_state_free(&st);
	if (err) {
		free(group_start);
		hd_domtree_deinit(ret);
		return err;
	}
	ret->root = root;
	if (groups) {
		ret->group_start = group_start;
		ret->num_groups = ng;
	} else {
		free(group_start);
	}
	return NULL;
}

void hd_domtree_deinit(struct hd_domtree *t)
{
	free(t->idom);
	free(t->preorder);
	free(t->group_start);
	*t = (struct hd_domtree){ 0 };
}

// A vertex's dominator precedes it in preorder (it is a DFS ancestor), so
// by the time the reverse sweep reaches v everything v dominates has been
// added in.
void hd_retained(const struct hd_domtree *t, const uint64_t *size,
		 uint64_t *retained, uint32_t *count)
{
	memset(retained, 0, t->n * sizeof(*retained));
	if (count)
		memset(count, 0, t->n * sizeof(*count));
	for (uint32_t i = t->num_reachable; i-- > 0;) {
		uint32_t v = t->preorder[i];
		retained[v] += size[v];
		if (count)
			count[v]++;
		if (i == 0)
			break;
		uint32_t d = t->idom[v];
		retained[d] += retained[v];
		if (count)
			count[d] += count[v];
	}
}

static const uint64_t *g_sort_retained;
// Children lists this long or shorter are sorted by insertion.
#define SMALL_LIST 16

static int by_retained(const void *a, const void *b);

static inline bool keyed_before(const struct hd_keyed *x, const struct hd_keyed *y)
{
	return x->retained != y->retained ? x->retained > y->retained : x->v < y->v;
}

HD_DEFINE_SORT_INPLACE(sort_keyed, struct hd_keyed, keyed_before)

void hd_sort_keyed(struct hd_keyed *a, size_t n)
{
	sort_keyed(a, n);
}

static inline bool u64_before(const uint64_t *x, const uint64_t *y)
{
	return *x < *y;
}

HD_DEFINE_SORT_INPLACE(sort_u64, uint64_t, u64_before)

void hd_sort_u64(uint64_t *a, size_t n)
{
	sort_u64(a, n);
}

static void sort_long_list(uint32_t *c, uint32_t k, const uint64_t *retained,
			   struct hd_keyed **buf, uint32_t *cap)
{
	if (k > *cap) {
		struct hd_keyed *p = realloc(*buf, (size_t)k * sizeof(*p));
		if (!p) {
			// No room for the pairs: sort in place, more slowly.
			hd_qsort(c, k, sizeof(uint32_t), by_retained);
			return;
		}
		*buf = p;
		*cap = k;
	}
	struct hd_keyed *kv = *buf;
	for (uint32_t i = 0; i < k; i++)
		kv[i] = (struct hd_keyed){ retained[c[i]], c[i] };
	hd_sort_keyed(kv, k);
	for (uint32_t i = 0; i < k; i++)
		c[i] = kv[i].v;
}

static int by_retained(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t rx = g_sort_retained[x], ry = g_sort_retained[y];
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct hd_error *hd_domtree_group_children(const struct hd_domtree *t,
					   uint32_t **child_off_r,
					   uint32_t **children_r)
{
	return hd_domtree_group_children_in(t, NULL, child_off_r, children_r);
}

struct hd_error *hd_domtree_group_children_in(const struct hd_domtree *t,
					      void *buf,
					      uint32_t **child_off_r,
					      uint32_t **children_r)
{
	uint32_t n = t->n;
	uint32_t *child_off = realloc(buf, ((size_t)n + 2) * sizeof(*child_off));
	uint32_t *children = malloc((t->num_reachable ? t->num_reachable : 1) *
				    sizeof(*children));
	if (!child_off || !children) {
		free(child_off ? child_off : buf);
		free(children);
		return &hd_error_no_memory;
	}
	// Each parent's count goes two places on: after the prefix sum,
	// child_off[p + 1] is p's start, and as the fill's cursor it ends at
	// p's end, p + 1's start (as in hd_csr_reverse), with no pass over the
	// offsets to shift them back.
	memset(child_off, 0, ((size_t)n + 2) * sizeof(*child_off));
	for (uint32_t v = 0; v < n; v++)
		if (t->idom[v] != HD_NO_VERTEX && v != t->root)
			child_off[t->idom[v] + 2]++;
	for (uint32_t v = 2; v <= n; v++)
		child_off[v] += child_off[v - 1];
	// Fill in vertex order (idom read straight through).
	for (uint32_t v = 0; v < n; v++)
		if (t->idom[v] != HD_NO_VERTEX && v != t->root)
			children[child_off[t->idom[v] + 1]++] = v;
	*child_off_r = child_off;
	*children_r = children;
	return NULL;
}

struct hd_error *hd_domtree_children(const struct hd_domtree *t,
				     const uint64_t *retained,
				     uint32_t **child_off_r, uint32_t **children_r)
{
	uint32_t n = t->n;
	uint32_t *child_off, *children;
	struct hd_error *err = hd_domtree_group_children(t, &child_off, &children);
	if (err)
		return err;
	// Most lists are a few children (a block's string and payload): an
	// insertion sort in place, where a qsort call per list cost more
	// than the sorting.
	g_sort_retained = retained;
	struct hd_keyed *kv = NULL;
	uint32_t kv_cap = 0;
	for (uint32_t v = 0; v < n; v++) {
		uint32_t *c = children + child_off[v];
		uint32_t k = child_off[v + 1] - child_off[v];
		if (k > SMALL_LIST) {
			sort_long_list(c, k, retained, &kv, &kv_cap);
			continue;
		}
		for (uint32_t i = 1; i < k; i++) {
			uint32_t x = c[i], j = i;
			uint64_t rx = retained[x];
			for (; j > 0 && (retained[c[j - 1]] < rx ||
					 (retained[c[j - 1]] == rx && c[j - 1] > x)); j--)
				c[j] = c[j - 1];
			c[j] = x;
		}
	}
	free(kv);
	*child_off_r = child_off;
	*children_r = children;
	return NULL;
}
