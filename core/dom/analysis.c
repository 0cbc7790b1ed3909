// hd_dom: dominator tree and retained sizes of the object graph, plus the
// same for the leaked blocks, which no root reaches.
#include <stdlib.h>
#include <string.h>

#include "dom/dom.h"
#include "graph/graph_internal.h"
#include "heap/heap_internal.h"

struct hd_dom {
	uint32_t n;
	struct hd_domtree tree;
	uint64_t *retained;
	uint32_t *count;
	uint32_t *child_off; // n + 1
	uint32_t *children;
	struct hd_domtree leak_tree;
	uint64_t *leak_retained;
	uint32_t *leak_count;
	size_t bytes;
};

static uint64_t *vertex_sizes(const struct hd_graph *g, const struct hd_heap *h)
{
	uint64_t *size = calloc(g->num_vertices, sizeof(*size));
	if (!size)
		return NULL;
	uint32_t v0 = 1 + (uint32_t)g->num_roots;
	for (size_t id = 0; id < h->num_blocks; id++)
		if (hd_heap_state(h, id) == HD_STATE_USED)
			size[v0 + id] = (uint64_t)h->chunk16[id] << 4;
	return size;
}

struct sort_ctx {
	const uint64_t *retained;
};
static const uint64_t *g_sort_retained;

static int by_retained(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t rx = g_sort_retained[x], ry = g_sort_retained[y];
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x < y ? -1 : x > y;
}

// Children lists of the dominator tree, each sorted by retained size.
static struct hd_error *build_children(struct hd_dom *d)
{
	uint32_t n = d->n;
	d->child_off = calloc((size_t)n + 1, sizeof(*d->child_off));
	d->children = malloc((d->tree.num_reachable ? d->tree.num_reachable : 1) *
			     sizeof(*d->children));
	if (!d->child_off || !d->children)
		return &hd_error_no_memory;
	for (uint32_t v = 0; v < n; v++) {
		uint32_t p = d->tree.idom[v];
		if (p != HD_NO_VERTEX && v != d->tree.root)
			d->child_off[p + 1]++;
	}
	for (uint32_t v = 0; v < n; v++)
		d->child_off[v + 1] += d->child_off[v];
	// Fill in preorder, using child_off[p] as a cursor, then shift back.
	for (uint32_t i = 0; i < d->tree.num_reachable; i++) {
		uint32_t v = d->tree.preorder[i];
		if (v == d->tree.root)
			continue;
		d->children[d->child_off[d->tree.idom[v]]++] = v;
	}
	for (uint32_t v = n; v > 0; v--)
		d->child_off[v] = d->child_off[v - 1];
	d->child_off[0] = 0;
	g_sort_retained = d->retained;
	for (uint32_t v = 0; v < n; v++) {
		uint32_t k = d->child_off[v + 1] - d->child_off[v];
		if (k > 1)
			qsort(d->children + d->child_off[v], k, sizeof(uint32_t),
			      by_retained);
	}
	return NULL;
}

// The leaked subgraph: every used block no root reaches. A super-root
// points at each leaked block with no leaked predecessor, then at the first
// still unvisited block of every leaked cycle, so each gets a dominator.
static struct hd_error *leak_forest(struct hd_dom *d, const struct hd_graph *g,
				    const struct hd_heap *h, const uint64_t *size)
{
	uint32_t n = d->n, v0 = 1 + (uint32_t)g->num_roots;
	uint8_t *leaked = calloc(n, 1);
	uint64_t *off = calloc((size_t)n + 1, sizeof(*off));
	if (!leaked || !off) {
		free(leaked);
		free(off);
		return &hd_error_no_memory;
	}
	uint64_t m = 0;
	for (size_t id = 0; id < h->num_blocks; id++) {
		uint32_t v = v0 + (uint32_t)id;
		leaked[v] = hd_heap_state(h, id) == HD_STATE_USED &&
			    d->tree.idom[v] == HD_NO_VERTEX;
	}
	// Entry points: leaked blocks without a leaked predecessor.
	uint8_t *entry = calloc(n, 1);
	if (!entry) {
		free(leaked);
		free(off);
		return &hd_error_no_memory;
	}
	for (uint32_t v = v0; v < n; v++) {
		if (!leaked[v])
			continue;
		entry[v] = 1;
		for (uint64_t e = g->rev.offsets[v]; e < g->rev.offsets[v + 1]; e++)
			if (leaked[g->rev.targets[e]]) {
				entry[v] = 0;
				break;
			}
	}
	// Cycles with no entry: mark the lowest vertex of each unreached
	// component as an entry, with a forward sweep from the entries.
	uint32_t *stack = malloc((size_t)n * sizeof(*stack));
	uint8_t *seen = calloc(n, 1);
	if (!stack || !seen) {
		free(leaked); free(off); free(entry); free(stack); free(seen);
		return &hd_error_no_memory;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t v = v0; v < n; v++) {
			if (!leaked[v] || seen[v] || (pass == 0 && !entry[v]))
				continue;
			entry[v] = 1;
			size_t sp = 0;
			stack[sp++] = v;
			seen[v] = 1;
			while (sp) {
				uint32_t u = stack[--sp];
				for (uint64_t e = g->fwd.offsets[u]; e < g->fwd.offsets[u + 1]; e++) {
					uint32_t w = HD_EDGE_TARGET(g->fwd.targets[e]);
					if (leaked[w] && !seen[w]) {
						seen[w] = 1;
						stack[sp++] = w;
					}
				}
			}
		}
	}
	free(seen);
	free(stack);
	// Count edges of the leak graph, then fill.
	for (uint32_t v = 0; v < n; v++) {
		uint64_t k = 0;
		if (v == 0) {
			for (uint32_t u = v0; u < n; u++)
				k += entry[u];
		} else if (leaked[v]) {
			for (uint64_t e = g->fwd.offsets[v]; e < g->fwd.offsets[v + 1]; e++)
				k += leaked[HD_EDGE_TARGET(g->fwd.targets[e])];
		}
		off[v + 1] = off[v] + k;
	}
	m = off[n];
	uint32_t *tg = malloc((m ? m : 1) * sizeof(*tg));
	struct hd_error *err = NULL;
	if (!tg) {
		err = &hd_error_no_memory;
		goto out;
	}
	uint64_t k = 0;
	for (uint32_t u = v0; u < n; u++)
		if (entry[u])
			tg[k++] = u;
	for (uint32_t v = v0; v < n; v++) {
		if (!leaked[v])
			continue;
		for (uint64_t e = g->fwd.offsets[v]; e < g->fwd.offsets[v + 1]; e++) {
			uint32_t w = HD_EDGE_TARGET(g->fwd.targets[e]);
			if (leaked[w])
				tg[k++] = w;
		}
	}
	struct hd_csr lg = {.n = n, .offsets = off, .targets = tg}, lrev;
	err = hd_csr_reverse(&lg, &lrev);
	if (!err) {
		err = hd_dominators(&lg, &lrev, 0, &d->leak_tree);
		hd_csr_free_owned(&lrev);
	}
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
	free(tg);
	free(off);
	free(leaked);
	free(entry);
	return err;
}

// retained[v] = chunk bytes dominated by v, in place: the array starts as
// the vertex sizes, then one sweep in reverse preorder adds each vertex into
// its dominator. Doing it in place saves 8 bytes per vertex.
static void retained_in_place(struct hd_dom *d, const struct hd_graph *g,
			      const struct hd_heap *h)
{
	uint32_t v0 = 1 + (uint32_t)g->num_roots;
	memset(d->retained, 0, (size_t)d->n * sizeof(*d->retained));
	memset(d->count, 0, (size_t)d->n * sizeof(*d->count));
	for (uint32_t i = 0; i < d->tree.num_reachable; i++) {
		uint32_t v = d->tree.preorder[i];
		int64_t id = v >= v0 ? (int64_t)(v - v0) : -1;
		d->count[v] = 1;
		if (id >= 0 && hd_heap_state(h, (size_t)id) == HD_STATE_USED)
			d->retained[v] = (uint64_t)h->chunk16[id] << 4;
	}
	for (uint32_t i = d->tree.num_reachable; i-- > 1;) {
		uint32_t v = d->tree.preorder[i];
		uint32_t p = d->tree.idom[v];
		d->retained[p] += d->retained[v];
		d->count[p] += d->count[v];
	}
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
	struct hd_dom *d = calloc(1, sizeof(*d));
	if (!d)
		return &hd_error_no_memory;
	d->n = g->num_vertices;
	struct hd_error *err = hd_dominators(&g->fwd, &g->rev, 0, &d->tree);
	if (!err) {
		d->retained = malloc((size_t)d->n * sizeof(*d->retained));
		d->count = malloc((size_t)d->n * sizeof(*d->count));
		if (!d->retained || !d->count)
			err = &hd_error_no_memory;
	}
	if (!err) {
		retained_in_place(d, g, h);
		err = build_children(d);
	}
	// The leak forest costs memory only when something leaked.
	if (!err && any_leak(d, g, h)) {
		uint64_t *size = vertex_sizes(g, h);
		err = size ? leak_forest(d, g, h, size) : &hd_error_no_memory;
		free(size);
	}
	if (err) {
		hd_dom_destroy(d);
		return err;
	}
	d->bytes = (size_t)d->n * (4 + 8 + 4 + 4) + d->tree.num_reachable * 8;
	if (d->leak_retained)
		d->bytes += (size_t)d->n * (4 + 8 + 4) + d->leak_tree.num_reachable * 4;
	*ret = d;
	return NULL;
}

void hd_dom_destroy(struct hd_dom *d)
{
	if (!d)
		return;
	hd_domtree_deinit(&d->tree);
	hd_domtree_deinit(&d->leak_tree);
	free(d->retained);
	free(d->count);
	free(d->child_off);
	free(d->children);
	free(d->leak_retained);
	free(d->leak_count);
	free(d);
}

uint32_t hd_dom_idom(const struct hd_dom *d, uint32_t v)
{
	uint32_t i = d->tree.idom[v];
	return i == HD_NO_VERTEX ? HD_DOM_NONE : i;
}

uint64_t hd_dom_retained(const struct hd_dom *d, uint32_t v)
{
	return d->retained[v];
}

uint32_t hd_dom_retained_blocks(const struct hd_dom *d, uint32_t v)
{
	return d->count[v];
}

void hd_dom_children(const struct hd_dom *d, uint32_t v,
		     const uint32_t **children, size_t *n)
{
	*children = d->children + d->child_off[v];
	*n = d->child_off[v + 1] - d->child_off[v];
}

uint32_t hd_dom_leak_idom(const struct hd_dom *d, uint32_t v)
{
	uint32_t i = d->leak_tree.idom ? d->leak_tree.idom[v] : HD_NO_VERTEX;
	return i == HD_NO_VERTEX ? HD_DOM_NONE : i;
}

uint64_t hd_dom_leak_retained(const struct hd_dom *d, uint32_t v)
{
	return d->leak_retained ? d->leak_retained[v] : 0;
}

uint32_t hd_dom_leak_retained_blocks(const struct hd_dom *d, uint32_t v)
{
	return d->leak_count ? d->leak_count[v] : 0;
}

size_t hd_dom_bytes(const struct hd_dom *d) { return d->bytes; }
