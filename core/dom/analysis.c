// hd_dom: dominator tree and retained sizes of the object graph, plus the
// same for the leaked blocks, which no root reaches.
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <sys/mman.h>

#include "dom/dom.h"
#include "dom/dom_internal.h"
#include "graph/graph_internal.h"
#include "heap/heap_internal.h"
#include "util/sort.h"

// An array of zeros whose pages become resident only when written: calloc
// gives that only above malloc's mmap threshold, which glibc raises as
// large blocks are freed, and below it clears the memory itself.
static void *zeroed_pages(size_t size)
{
	void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void free_pages(void *p, size_t size)
{
	if (p)
		munmap(p, size ? size : 1);
}

// The dominator stage allocates and frees arrays of every size; those
// below malloc's mmap threshold stay in its own heap once freed, pages
// and all, and are not at its top, so never trimmed: give them back
// between the steps, whose peaks are the analysis's.
static void give_back_free_memory(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

// Children lists of the dominator tree, grouped by immediate dominator and
// each sorted by retained size. The per-parent offsets are needed only
// while the lists are made; afterwards a binary search finds a run.
static int by_ret(const struct hd_dom *d, uint32_t x, uint32_t y)
{
	uint64_t rx = hd_dom_ret(d, x), ry = hd_dom_ret(d, y);
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return (x > y) - (x < y);
}

// Children lists this long or shorter are sorted by insertion.
#define SMALL_LIST 16

// Sorts a long list, larger retained first then lower vertex, through
// buf: room for the longest list's (retained, vertex) pairs, in pages that
// become resident as written. When every child retains less than 4 GiB
// (nearly always), each is one 64-bit key, ~retained << 32 | vertex, which
// writes half the pages: the root's list of a hash table's entries has
// millions of children, sorted at the stage's peak.
static void sort_long_list(const struct hd_dom *d, uint32_t *c, uint32_t k,
			   void *buf)
{
	bool packed = true;
	for (uint32_t i = 0; i < k && packed; i++)
		packed = hd_dom_ret(d, c[i]) < UINT32_MAX;
	if (packed) {
		uint64_t *kv = buf;
		for (uint32_t i = 0; i < k; i++)
			kv[i] = (uint64_t)(UINT32_MAX - (uint32_t)hd_dom_ret(d, c[i])) << 32 | c[i];
		hd_sort_u64(kv, k);
		for (uint32_t i = 0; i < k; i++)
			c[i] = (uint32_t)kv[i];
		return;
	}
	struct hd_keyed *kv = buf;
	for (uint32_t i = 0; i < k; i++)
		kv[i] = (struct hd_keyed){ hd_dom_ret(d, c[i]), c[i] };
	hd_sort_keyed(kv, k);
	for (uint32_t i = 0; i < k; i++)
		c[i] = kv[i].v;
}

static struct hd_error *build_children(struct hd_dom *d)
{
	const struct hd_domtree *t = &d->tree;
	uint32_t n = t->n;
	uint32_t num = t->num_reachable ? t->num_reachable - 1 : 0;
	uint32_t *off, *children;
	// The offsets take the preorder's room (nothing reads it now).
	struct hd_error *err =
		hd_domtree_group_children_in(t, d->tree.preorder, &off, &children);
	d->tree.preorder = NULL;
	if (err)
		return err;
	// Where each list starts, a bit per child, and the longest: the
	// offsets (4 bytes a vertex) are freed before the sorting buffer is
	// taken, which is the stage's peak on a heap whose root holds
	// millions of entries.
	uint32_t total = off[n];
	uint64_t *starts = calloc((size_t)total / 64 + 1, sizeof(*starts));
	uint32_t longest = 0;
	for (uint32_t v = 0; starts && v < n; v++) {
		uint32_t k = off[v + 1] - off[v];
		if (k)
			starts[off[v] / 64] |= 1ull << (off[v] % 64);
		if (k > longest)
			longest = k;
	}
	free(off);
	if (!starts) {
		free(children);
		return &hd_error_no_memory;
	}
	// Most lists are a few children (a block's string and payload): an
	// insertion sort in place, where a qsort call per list cost more
	// than the sorting.
	size_t kv_size = longest > SMALL_LIST ? (size_t)longest * sizeof(struct hd_keyed) : 0;
	void *kv = kv_size ? zeroed_pages(kv_size) : NULL;
	bool ok = !kv_size || kv;
	for (uint32_t i = 0; i < total && ok;) {
		// The list at i runs to the next start (or the end).
		uint32_t end = i + 1;
		while (end < total && !(starts[end / 64] >> (end % 64) & 1)) {
			if (end % 64 == 0 && !starts[end / 64]) {
				end += 64;
				continue;
			}
			end++;
		}
		if (end > total)
			end = total;
		uint32_t *c = children + i;
		uint32_t k = end - i;
		i = end;
		if (k > SMALL_LIST) {
			sort_long_list(d, c, k, kv);
			continue;
		}
		for (uint32_t a = 1; a < k; a++) {
			uint32_t x = c[a], j = a;
			for (; j > 0 && by_ret(d, c[j - 1], x) > 0; j--)
				c[j] = c[j - 1];
			c[j] = x;
		}
	}
	free_pages(kv, kv_size);
	free(starts);
	if (!ok) {
		free(children);
		return &hd_error_no_memory;
	}
	d->children = children;
	d->num_children = num;
	return NULL;
}

// The leaked subgraph: every used block no root reaches, numbered 1..k
// locally (0 is a super-root), so its cost follows the leaks, not the heap.
// The super-root points at each leaked block with no leaked predecessor,
// then at the first still unreached block of every leaked cycle.
static int64_t leak_local(const struct hd_dom *d, uint32_t v)
{
	size_t lo = 0, hi = d->num_leaked;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->leaked[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->num_leaked && d->leaked[lo] == v ? (int64_t)lo + 1 : -1;
}

// The local ids again, by rank: a bit per vertex and the count of leaked
// vertices before each word. A binary search per edge (leak_local) was
// most of the leak forest's time on a C++ heap's 131K leaked blocks.
struct leak_rank {
	uint64_t *bits;
	uint32_t *before;
};

static bool leak_rank_init(struct leak_rank *r, const struct hd_dom *d)
{
	size_t words = (size_t)d->n / 64 + 1;
	r->bits = calloc(words, sizeof(*r->bits));
	r->before = malloc(words * sizeof(*r->before));
	if (!r->bits || !r->before)
		return false;
	for (size_t l = 0; l < d->num_leaked; l++)
		r->bits[d->leaked[l] / 64] |= 1ull << (d->leaked[l] % 64);
	uint32_t k = 0;
	for (size_t w = 0; w < words; w++) {
		r->before[w] = k;
		k += (uint32_t)__builtin_popcountll(r->bits[w]);
	}
	return true;
}

static void leak_rank_deinit(struct leak_rank *r)
{
	free(r->bits);
	free(r->before);
}

// As leak_local.
static inline int64_t rank_local(const struct leak_rank *r, uint32_t v)
{
	uint64_t w = r->bits[v / 64];
	if (!(w >> (v % 64) & 1))
		return -1;
	return (int64_t)r->before[v / 64] +
	       __builtin_popcountll(w & ((1ull << (v % 64)) - 1)) + 1;
}

static struct hd_error *leak_forest(struct hd_dom *d, const struct hd_graph *g,
				    const struct hd_heap *h)
{
	uint32_t v0 = 1 + (uint32_t)g->num_roots;
	size_t k = 0;
	for (size_t id = 0; id < h->num_blocks; id++)
		k += hd_heap_state(h, id) == HD_STATE_USED &&
		     d->tree.idom[v0 + id] == HD_NO_VERTEX;
	d->leaked = malloc((k ? k : 1) * sizeof(*d->leaked));
	if (!d->leaked)
		return &hd_error_no_memory;
	for (size_t id = 0; id < h->num_blocks; id++)
		if (hd_heap_state(h, id) == HD_STATE_USED &&
		    d->tree.idom[v0 + id] == HD_NO_VERTEX)
			d->leaked[d->num_leaked++] = v0 + (uint32_t)id;
	uint32_t n = (uint32_t)k + 1;
	uint8_t *entry = calloc(n, 1), *seen = calloc(n, 1);
	uint32_t *stack = malloc((size_t)n * sizeof(*stack));
	uint32_t *off = calloc((size_t)n + 1, sizeof(*off));
	uint32_t *tg = NULL;
	uint64_t *size = NULL;
	struct hd_error *err = NULL;
	struct leak_rank rk;
	if (!leak_rank_init(&rk, d) || !entry || !seen || !stack || !off) {
		err = &hd_error_no_memory;
		goto out;
	}
	// Entry points: no leaked predecessor, that is no edge from a leaked
	// block into them (found forwards: the reverse graph is built only
	// for the reports that ask for predecessors).
	memset(entry + 1, 1, n - 1);
	for (uint32_t l = 1; l < n; l++) {
		uint32_t u = d->leaked[l - 1];
		for (uint64_t e = g->fwd.offsets[u]; e < g->fwd.offsets[u + 1]; e++) {
			int64_t w = rank_local(&rk, HD_EDGE_TARGET(g->fwd.targets[e]));
			if (w > 0)
				entry[w] = 0;
		}
	}
	// Cycles with no entry: the lowest unreached block of each.
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t l = 1; l < n; l++) {
			if (seen[l] || (pass == 0 && !entry[l]))
				continue;
			entry[l] = 1;
			size_t sp = 0;
			stack[sp++] = l;
			seen[l] = 1;
			while (sp) {
				uint32_t u = d->leaked[stack[--sp] - 1];
				for (uint64_t e = g->fwd.offsets[u]; e < g->fwd.offsets[u + 1]; e++) {
					int64_t w = rank_local(&rk, HD_EDGE_TARGET(g->fwd.targets[e]));
					if (w > 0 && !seen[w]) {
						seen[w] = 1;
						stack[sp++] = (uint32_t)w;
					}
				}
			}
		}
	}
	// The local graph in CSR: super-root first, then each leaked block.
	for (uint32_t l = 0; l < n; l++) {
		uint64_t c = 0;
		if (l == 0) {
			for (uint32_t m = 1; m < n; m++)
				c += entry[m];
		} else {
			uint32_t u = d->leaked[l - 1];
			for (uint64_t e = g->fwd.offsets[u]; e < g->fwd.offsets[u + 1]; e++)
				c += rank_local(&rk, HD_EDGE_TARGET(g->fwd.targets[e])) > 0;
		}
		off[l + 1] = off[l] + c;
	}
	tg = malloc((off[n] ? off[n] : 1) * sizeof(*tg));
	size = calloc(n, sizeof(*size));
	if (!tg || !size) {
		err = &hd_error_no_memory;
		goto out;
	}
	uint64_t c = 0;
	for (uint32_t m = 1; m < n; m++)
		if (entry[m])
			tg[c++] = m;
	for (uint32_t l = 1; l < n; l++) {
		uint32_t u = d->leaked[l - 1];
		size[l] = hd_heap_extent(h, u - v0);
		for (uint64_t e = g->fwd.offsets[u]; e < g->fwd.offsets[u + 1]; e++) {
			int64_t w = rank_local(&rk, HD_EDGE_TARGET(g->fwd.targets[e]));
			if (w > 0)
				tg[c++] = (uint32_t)w;
		}
	}
	struct hd_csr lg = {.n = n, .offsets = off, .targets = tg};
	err = hd_dominators(&lg, 0, &d->leak_tree);
	if (!err) {
		d->leak_retained = calloc(n, sizeof(*d->leak_retained));
		d->leak_count = calloc(n, sizeof(*d->leak_count));
		if (!d->leak_retained || !d->leak_count)
			err = &hd_error_no_memory;
		else
			hd_retained(&d->leak_tree, size, d->leak_retained,
				    d->leak_count);
	}
out:
	leak_rank_deinit(&rk);
	free(entry);
	free(seen);
	free(stack);
	free(off);
	free(tg);
	free(size);
	return err;
}

// How far ahead the sweep of retained_in_place prefetches, in vertices:
// a vertex's entries at twice that, its dominator's at that.
#define SWEEP_AHEAD 16

static inline void set_ret(struct hd_dom *d, uint32_t v, uint64_t r)
{
	d->retained_lo[v] = (uint32_t)r;
	// Only where it changes: writing a zero would make the page resident.
	if ((uint16_t)(r >> 32) != d->retained_hi[v])
		d->retained_hi[v] = (uint16_t)(r >> 32);
}

// retained = extent bytes dominated by v, in place: the array starts as
// the vertex sizes, then one sweep in reverse preorder adds each vertex into
// its dominator. The sum of distinct blocks' extents is below 2^48 unless
// the heap's metadata is corrupt: then the stage says so rather than
// give a wrong size.
static struct hd_error *retained_in_place(struct hd_dom *d,
					  const struct hd_graph *g,
					  const struct hd_heap *h)
{
	uint32_t v0 = 1 + (uint32_t)g->num_roots;
	// Own sizes in vertex order, which is the block table's: read
	// straight through, not in the preorder's scattered one.
	for (uint32_t v = 0; v < d->n; v++) {
		bool reached = d->tree.idom[v] != HD_NO_VERTEX;
		int64_t id = v >= v0 ? (int64_t)(v - v0) : -1;
		d->count[v] = reached;
		uint64_t own = reached && id >= 0 && (size_t)id < h->num_blocks &&
					 hd_heap_state(h, (size_t)id) == HD_STATE_USED
				 ? hd_heap_extent(h, (size_t)id)
				 : 0;
		if (own >> 48)
			goto too_large;
		set_ret(d, v, own);
	}
	const uint32_t *preorder = d->tree.preorder, *idom = d->tree.idom;
	for (uint32_t i = d->tree.num_reachable; i-- > 1;) {
		if (i > 2 * SWEEP_AHEAD) {
			uint32_t a = preorder[i - 2 * SWEEP_AHEAD];
			__builtin_prefetch(&idom[a]);
			__builtin_prefetch(&d->retained_lo[a]);
			__builtin_prefetch(&d->count[a]);
		}
		if (i > SWEEP_AHEAD) {
			uint32_t a = idom[preorder[i - SWEEP_AHEAD]];
			__builtin_prefetch(&d->retained_lo[a], 1);
			__builtin_prefetch(&d->count[a], 1);
		}
		uint32_t v = preorder[i];
		uint32_t p = idom[v];
		uint64_t r = hd_dom_ret(d, p) + hd_dom_ret(d, v);
		if (r >> 48)
			goto too_large;
		set_ret(d, p, r);
		d->count[p] += d->count[v];
	}
	return NULL;
too_large:
	return hd_error_create(HD_ERROR_INVALID,
			       "the blocks' sizes add up to more than 2^48 "
			       "bytes: the heap's metadata is corrupt");
}

static bool any_leak(const struct hd_dom *d, const struct hd_graph *g,
		     const struct hd_heap *h)
{
	uint32_t v0 = 1 + (uint32_t)g->num_roots;
	for (size_t id = 0; id < h->num_blocks; id++)
		if (hd_heap_state(h, id) == HD_STATE_USED &&
		    d->tree.idom[v0 + id] == HD_NO_VERTEX)
			return true;
	return false;
}

struct hd_error *hd_dom_compute(const struct hd_graph *g,
				const struct hd_heap *h, struct hd_dom **ret)
{
	return hd_dom_compute_view(g, h, HD_DOM_RANKED, ret);
}

struct hd_error *hd_dom_compute_view(const struct hd_graph *g,
				     const struct hd_heap *h,
				     enum hd_dom_view view, struct hd_dom **ret)
{
	struct hd_dom *d = calloc(1, sizeof(*d));
	if (!d)
		return &hd_error_no_memory;
	d->n = g->num_vertices;
	d->view = view;
	uint64_t groups[HD_ROOT_RANKS];
	hd_graph_class_groups(g, groups);
	struct hd_error *err =
		view == HD_DOM_RANKED
			? hd_dominators_grouped(&g->fwd, 0, groups,
						HD_ROOT_RANKS, &d->tree)
			: hd_dominators(&g->fwd, 0, &d->tree);
	// The scratch's smaller arrays (the back edges, the search's stack)
	// came from malloc's own heap, which keeps the pages when they are
	// freed: hand them back before the results take their room.
	give_back_free_memory();
	if (!err) {
		d->retained_lo = malloc((size_t)d->n * sizeof(*d->retained_lo));
		d->retained_hi = zeroed_pages((size_t)d->n * sizeof(*d->retained_hi));
		d->count = malloc((size_t)d->n * sizeof(*d->count));
		if (!d->retained_lo || !d->retained_hi || !d->count)
			err = &hd_error_no_memory;
	}
	if (!err)
		err = retained_in_place(d, g, h);
	// The leak forest costs memory only when something leaked.
	if (!err && any_leak(d, g, h))
		err = leak_forest(d, g, h);
	if (!err)
		err = hd_dom_holders_compute(d, g);
	// The preorder served retained sizes and holders; nothing after
	// reads it, and the children lists' offsets take its room
	// (build_children).
	give_back_free_memory();
	if (!err)
		err = build_children(d);
	if (err) {
		hd_dom_destroy(d);
		return err;
	}
	// idom, retained (the low part), count per vertex; children per
	// reached.
	d->bytes = (size_t)d->n * (4 + 4 + 4) + d->tree.num_reachable * 4;
	if (d->leak_retained)
		d->bytes += d->num_leaked * (4 + 4 + 4 + 8 + 4);
	*ret = d;
	return NULL;
}

void hd_dom_destroy(struct hd_dom *d)
{
	if (!d)
		return;
	hd_domtree_deinit(&d->tree);
	hd_domtree_deinit(&d->leak_tree);
	free(d->retained_lo);
	free_pages(d->retained_hi, (size_t)d->n * sizeof(*d->retained_hi));
	free(d->count);
	free(d->children);
	free(d->leak_retained);
	free(d->leak_count);
	free(d->leaked);
	hd_dom_holders_free(d);
	free(d);
}

uint32_t hd_dom_idom(const struct hd_dom *d, uint32_t v)
{
	uint32_t i = d->tree.idom[v];
	return i == HD_NO_VERTEX ? HD_DOM_NONE : i;
}

uint64_t hd_dom_retained(const struct hd_dom *d, uint32_t v)
{
	return hd_dom_ret(d, v);
}

uint32_t hd_dom_retained_blocks(const struct hd_dom *d, uint32_t v)
{
	return d->count[v];
}

void hd_dom_children(const struct hd_dom *d, uint32_t v,
		     const uint32_t **children, size_t *n)
{
	const uint32_t *idom = d->tree.idom;
	uint32_t lo = 0, hi = d->num_children;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (idom[d->children[mid]] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t end = lo;
	hi = d->num_children;
	while (end < hi) {
		uint32_t mid = end + (hi - end) / 2;
		if (idom[d->children[mid]] <= v)
			end = mid + 1;
		else
			hi = mid;
	}
	*children = d->children + lo;
	*n = end - lo;
}

uint32_t hd_dom_leak_idom(const struct hd_dom *d, uint32_t v)
{
	int64_t l = d->leak_tree.idom ? leak_local(d, v) : -1;
	if (l < 0)
		return HD_DOM_NONE;
	uint32_t i = d->leak_tree.idom[l];
	if (i == HD_NO_VERTEX)
		return HD_DOM_NONE;
	// The local super-root stands for "nothing": no leaked dominator.
	return i == 0 ? 0 : d->leaked[i - 1];
}

uint64_t hd_dom_leak_retained(const struct hd_dom *d, uint32_t v)
{
	int64_t l = d->leak_retained ? leak_local(d, v) : -1;
	return l < 0 ? 0 : d->leak_retained[l];
}

uint32_t hd_dom_leak_retained_blocks(const struct hd_dom *d, uint32_t v)
{
	int64_t l = d->leak_count ? leak_local(d, v) : -1;
	return l < 0 ? 0 : d->leak_count[l];
}

size_t hd_dom_bytes(const struct hd_dom *d) { return d->bytes; }

enum hd_dom_view hd_dom_get_view(const struct hd_dom *d) { return d->view; }
