// Dominator tree and retained sizes over a graph in CSR form.
#ifndef HD_DOM_H
#define HD_DOM_H

#include "heapdom.h"

// Edge targets may carry this flag (the referencing word points into the
// middle of the target); algorithms mask it off.
#define HD_EDGE_INTERIOR 0x80000000u
#define HD_EDGE_TARGET(e) ((e) & ~HD_EDGE_INTERIOR)
#define HD_NO_VERTEX UINT32_MAX

// A directed graph over vertices 0..n-1 in compressed sparse row form:
// the successors of v are targets[offsets[v] .. offsets[v+1]).
// n < 2^31, and fewer than 2^32 edges: 32-bit offsets keep 4 bytes a
// vertex off the analysis's peak, and the dominator stage indexes edges
// with 32 bits anyway (a heap past that holds over 32 GiB of pointers).
// Duplicate edges and self-loops are allowed.
#define HD_CSR_MAX_EDGES UINT32_MAX
struct hd_csr {
	uint32_t n;
	const uint32_t *offsets; // n + 1 entries
	const uint32_t *targets; // offsets[n] entries, HD_EDGE_INTERIOR allowed
};

// Builds the reverse graph of g (predecessors). rev->offsets and
// rev->targets are malloc'd; free them with hd_csr_free_owned(). Flags are
// dropped from the reverse targets. O(n + m), two passes, no recursion.
struct hd_error *hd_csr_reverse(const struct hd_csr *g, struct hd_csr *rev);
void hd_csr_free_owned(struct hd_csr *g);

// The shortest chain of references ending at v, found backwards over rev
// (hd_csr_reverse of a graph whose vertex 0 is the super-root): with
// to_root, from a vertex the super-root points at (a root); without, from
// a vertex nothing points at, or from the last vertex reached (a cycle).
// *path (malloc'd, *len vertices) runs from that vertex to v.
struct hd_error *hd_csr_chain(const struct hd_csr *rev, uint32_t v,
			      bool to_root, uint32_t **path, size_t *len);

// Result of hd_dominators.
struct hd_domtree {
	uint32_t n;
	uint32_t root;
	uint32_t *idom;      // n entries: immediate dominator, idom[root] = root,
			     // HD_NO_VERTEX for vertices unreachable from root
	// The reachable vertices, each after its immediate dominator: the
	// DFS preorder from root of those that are not leaves (dom.c), each
	// group's leaves after them in vertex order.
	uint32_t *preorder;
	uint32_t num_reachable;
	// With groups (hd_dominators_grouped): the vertices first found from
	// group k have preorder positions [group_start[k], group_start[k+1]),
	// k < num_groups; NULL otherwise.
	uint32_t *group_start;
	uint32_t num_groups;
};

// Computes the dominator tree of g from root with the semi-NCA algorithm
// (iterative DFS and path compression: a 10M-long list must work). A
// leaf (no edge of its own, one edge into it) is dominated by where that
// edge comes from, and the algorithm runs over the other vertices. The
// predecessors it needs are built inside, by preorder number, for the
// reached vertices only, and only those numbered after their target (the
// rest are tree edges or from ancestors, settled during the search).
// Memory: a uint32 and 3 bits per vertex (the first becomes the output's
// idom), 5 uint32 per vertex that is not a leaf and one per such edge
// (plus the search's stack of vertices with edges left, 2 uint32 each),
// freed before it returns; the output's preorder takes the room of the
// scratch's largest array. Edges into or from unreachable vertices are
// ignored.
struct hd_error *hd_dominators(const struct hd_csr *g, uint32_t root,
			       struct hd_domtree *ret);
// The same over the graph without "borrowed" edges: root's successors come
// in num_groups groups, group k being root's edges [groups[k-1], groups[k])
// (groups[-1] = 0; edges past the last group form one more), and a vertex
// belongs to the first group it is reachable from. An edge u -> v where u
// belongs to a later group than v is left out: the later group borrows v,
// it does not share its ownership. Reachability is unchanged. It costs
// nothing over hd_dominators: the DFS takes the groups in order, and the
// semidominator pass ignores predecessors numbered past w's group.
struct hd_error *hd_dominators_grouped(const struct hd_csr *g, uint32_t root,
				       const uint64_t *groups,
				       uint32_t num_groups,
				       struct hd_domtree *ret);
void hd_domtree_deinit(struct hd_domtree *t);

// Retained sizes: for every reachable v, retained[v] = sum of size[u] over
// all u dominated by v (v included), count[v] = number of such u. One sweep
// in reverse preorder. Unreachable vertices get 0. retained and count have
// n entries (count may be NULL).
void hd_retained(const struct hd_domtree *t, const uint64_t *size,
		 uint64_t *retained, uint32_t *count);

// A vertex with the size it retains, for sorting a long children list by
// reading the pairs themselves, not the retained sizes all over the heap
// (a hash table's bucket array has millions of children).
struct hd_keyed {
	uint64_t retained;
	uint32_t v;
};
// Sorts n pairs, larger retained first, then lower vertex, in place (qsort
// would allocate a copy as large as the list, at the report's peak).
void hd_sort_keyed(struct hd_keyed *a, size_t n);
// Sorts n 64-bit keys ascending, in place.
void hd_sort_u64(uint64_t *a, size_t n);

// The dominator tree's children grouped by parent, each list in vertex
// order: the children of v are children[child_off[v] .. child_off[v+1]),
// child_off has t->n + 1 entries (room for t->n + 2). Both arrays are
// malloc'd for the caller.
struct hd_error *hd_domtree_group_children(const struct hd_domtree *t,
					   uint32_t **child_off_r,
					   uint32_t **children_r);
// The same, with child_off made in buf (malloc'd, or NULL), which it
// takes over: a large array freed just before (the preorder) has its
// pages resident already, where a new one would take a page fault for
// each 4 KiB.
struct hd_error *hd_domtree_group_children_in(const struct hd_domtree *t,
					      void *buf,
					      uint32_t **child_off_r,
					      uint32_t **children_r);

// Children lists of the dominator tree: the children of v are
// children[child_off[v] .. child_off[v+1]), largest retained first (ties
// by vertex). Both arrays are malloc'd for the caller.
struct hd_error *hd_domtree_children(const struct hd_domtree *t,
				     const uint64_t *retained,
				     uint32_t **child_off, uint32_t **children);

// Every root from which v is reachable, with the shortest chain from each:
// one breadth-first search backwards from v over rev (hd_csr_reverse of a
// graph whose vertex 0 is the super-root; a root is a vertex the
// super-root points at), O(n + m) at worst; memory grows with the
// vertices visited (plus a bitmap of n bits).
enum hd_csr_stop {
	HD_CSR_ALL_ROOTS,    // visit everything that reaches v
	HD_CSR_FIRST_ROOT,   // stop at the nearest root not excluded
	HD_CSR_FIRST_SOURCE, // stop at the nearest vertex nothing points at
};
struct hd_csr_visit {
	uint32_t vertex;
	uint32_t next; // visits[next] is the next step towards v (0 is v)
	uint32_t dist; // edges from vertex to v
};
struct hd_csr_found {
	uint32_t vertex; // the root
	uint32_t dist;   // edges on its shortest chain to v
	bool excluded;   // exclude() said so: no chain was followed through it
	size_t slot;     // its entry in visits (for hd_csr_search_path)
};
struct hd_csr_search {
	struct hd_csr_visit *visits; // in BFS order, visits[0] is v
	size_t num_visits;
	struct hd_csr_found *found;  // roots in BFS order (nearest first)
	size_t num_found;
	size_t source; // the first visit nothing points at, SIZE_MAX if none
};
// exclude (may be NULL) is asked about each root reached: an excluded root
// is reported (excluded = true) but treated as absent: the search does not
// go on through it, and it does not stop HD_CSR_FIRST_ROOT.
struct hd_error *hd_csr_search(const struct hd_csr *rev, uint32_t v,
			       enum hd_csr_stop stop,
			       bool (*exclude)(void *arg, uint32_t root),
			       void *arg, struct hd_csr_search *ret);
// The chain from visits[slot] to v (malloc'd, *len vertices).
struct hd_error *hd_csr_search_path(const struct hd_csr_search *s, size_t slot,
				    uint32_t **path, size_t *len);
void hd_csr_search_deinit(struct hd_csr_search *s);

#endif
