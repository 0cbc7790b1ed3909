// A module that only names blocks, run when a report first asks about a
// block it could name. The libstdc++ module walks every container of the
// heap (millions of nodes on a C++ server) for names the default reports
// mostly do not print; deferred, it runs only when a printed block may be
// one of its blocks.
//
// Why the names stay exactly the ones the module would give: the module
// names a block only after reaching it through an aligned pointer word
// held by a container object it found through DWARF (in a global variable
// or a typed heap block: hd_fw_objects) or by a block it named before
// (nodes, buffers, elements' own containers: hd_fw_deferral). Every such
// word is an edge of the analysis graph, which scans every word. So a
// block none of whose predecessors, followed back until they end, is a
// block or global holding such an object cannot get a name from it: its
// name is what the other modules gave. Any other block runs the module,
// whole and in its usual order, and the names are then its own.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "semantic/fw_fast.h"
#include "semantic/semantic_internal.h"
#include "util/clock.h"

// Blocks one search may go back through before giving up and running the
// module (the search is meant for the few blocks a report prints).
#define SEARCH_BUDGET (1u << 20)

struct hd_fw_defer {
	size_t module;
	const struct hd_fw_deferral *spec;
	void *alone;               // the module's state for spec->name_alone
	uint64_t *named;           // bit per block id: named alone
	const struct hd_graph *g;  // the analysis graph: references
	const struct hd_csr *rev;  // its predecessors (hd_graph_reverse)
	struct hd_fw_holders *hs;
	uint64_t *unnamed;         // bit per block id: out of the module's reach
	uint64_t *seen;            // bit per vertex of g, within one search
	uint32_t *queue;           // of one search: every vertex it went to
	size_t cap_queue;
};

// Whether every pointer of the module's containers is an edge of g: none
// at an unaligned address, and every global holding one inside a root's
// scanned range. Else the module runs at once.
static bool edges_hold_all(const struct hd_fw_holders *hs,
			   const struct hd_graph *g)
{
	if (hd_fw_holders_unaligned(hs))
		return false;
	uint64_t start, end;
	for (size_t i = 0; hd_fw_holders_global(hs, i, &start, &end); i++) {
		bool in = false;
		for (size_t r = 0; r < hd_graph_num_roots(g) && !in; r++) {
			const struct hd_root *root = hd_graph_root(g, r);
			in = root->start <= start && end <= root->end;
		}
		if (!in)
			return false;
	}
	return true;
}

// Whether u points at the start of v (an interior pointer claims nothing:
// the module takes a block only at its start address). A vertex's edges
// are sorted (hd_scan_dedupe: the exact ones ascending, then the interior
// ones, whose flag is the high bit): a binary search, not a scan, since a
// bucket array of a million nodes is the predecessor of each of them.
bool hd_fw_exact_edge(const struct hd_graph *g, uint32_t u, uint32_t v)
{
	const struct hd_csr *f = &g->fwd;
	uint32_t lo = f->offsets[u], hi = f->offsets[u + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->targets[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->offsets[u + 1] && f->targets[lo] == v;
}

static void defer_free(struct hd_fw_defer *d)
{
	if (d->alone && d->spec->alone_free)
		d->spec->alone_free(d->alone);
	free(d->named);
	hd_fw_holders_destroy(d->hs);
	free(d->unnamed);
	free(d->seen);
	free(d->queue);
	free(d);
}

struct hd_error *hd_fw_defer_create(struct hd_fw *fw, size_t module,
				    const struct hd_fw_deferral *spec,
				    const struct hd_graph *g)
{
	struct hd_fw_defer *d = calloc(1, sizeof(*d));
	if (!d)
		return &hd_error_no_memory;
	d->module = module;
	d->spec = spec;
	d->g = g;
	size_t nv = hd_graph_num_vertices(g), nb = hd_heap_num_blocks(fw->h);
	d->unnamed = calloc(nb / 64 + 1, sizeof(*d->unnamed));
	d->named = calloc(nb / 64 + 1, sizeof(*d->named));
	d->seen = calloc(nv / 64 + 1, sizeof(*d->seen));
	struct hd_error *err = d->unnamed && d->named && d->seen ? NULL : &hd_error_no_memory;
	if (!err)
		err = hd_fw_holders_create(fw, spec->prefixes, spec->num_prefixes,
					   &d->hs);
	if (!err && !d->hs)
		err = hd_error_create(HD_ERROR_INVALID, "no typing");
	if (!err && !edges_hold_all(d->hs, g))
		err = hd_error_create(HD_ERROR_INVALID,
				      "a container's pointers are not all edges");
	if (err) {
		defer_free(d);
		return err;
	}
	fw->defer = d;
	fw->defer_stats.module = fw->mods[module].ops->name;
	return NULL;
}

void hd_fw_defer_destroy(struct hd_fw *fw)
{
	if (fw->defer)
		defer_free(fw->defer);
	fw->defer = NULL;
}

// Runs the deferred module now; what it names is then in fw's arrays.
static void run(struct hd_fw *fw)
{
	struct hd_fw_defer *d = fw->defer;
	fw->defer_stats.ran = true;
	size_t module = d->module;
	// Nothing of the search is needed any more.
	fw->defer = NULL;
	defer_free(d);
	hd_fw_run_deferred(fw, module);
}

static bool enqueue(struct hd_fw_defer *d, size_t *n, uint32_t v)
{
	if (*n == d->cap_queue) {
		size_t cap = d->cap_queue ? 2 * d->cap_queue : 1024;
		uint32_t *q = realloc(d->queue, cap * sizeof(*q));
		if (!q)
			return false;
		d->queue = q;
		d->cap_queue = cap;
	}
	d->queue[(*n)++] = v;
	return true;
}

// Whether block id is out of the deferred module's reach: no predecessor,
// back to where they end, holds one of its objects. Blocks it went through
// are marked out of reach too (their predecessors are among those it went
// back through); with false, the module must run.
static bool out_of_reach(struct hd_fw *fw, struct hd_fw_defer *d, size_t id)
{
	const struct hd_graph *g = d->g;
	if (d->unnamed[id / 64] >> (id % 64) & 1)
		return true;
	// No global or typed block holds one of its containers: it names
	// nothing, whatever is asked.
	if (!hd_fw_holders_any(d->hs))
		return true;
	if (!d->rev && hd_graph_reverse(g, &d->rev) != NULL)
		return false; // no memory: run the module rather than guess
	uint32_t start = hd_graph_block_vertex(g, id);
	if (start == HD_DOM_NONE || start >= d->rev->n)
		return false;
	size_t n = 0, visited = 0;
	bool ok = enqueue(d, &n, start);
	d->seen[start / 64] |= 1ull << (start % 64);
	// Breadth first; the queue keeps every vertex gone to, for the
	// marking below.
	size_t done = 0;
	while (ok && done < n) {
		uint32_t v = d->queue[done++];
		for (uint32_t e = d->rev->offsets[v]; ok && e < d->rev->offsets[v + 1]; e++) {
			uint32_t u = d->rev->targets[e];
			if (u == 0 || !hd_fw_exact_edge(g, u, v))
				continue; // the super-root, or an interior pointer
			int64_t r = hd_graph_vertex_root(g, u);
			if (r >= 0) {
				const struct hd_root *root = hd_graph_root(g, (size_t)r);
				if (hd_fw_holders_range(d->hs, root->start, root->end))
					ok = false;
				continue;
			}
			int64_t b = hd_graph_vertex_block(g, u);
			bool holds = true;
			if (b >= 0) {
				struct hd_error *err = hd_fw_holders_block(d->hs, (size_t)b, &holds);
				if (err) {
					hd_error_destroy(err);
					holds = true;
				}
			}
			if (holds) {
				ok = false; // or a sub-allocator block: not looked into
				break;
			}
			if ((d->unnamed[b / 64] >> (b % 64) & 1) ||
			    (d->seen[u / 64] >> (u % 64) & 1))
				continue;
			d->seen[u / 64] |= 1ull << (u % 64);
			fw->defer_stats.searched++;
			if (++visited > SEARCH_BUDGET || !enqueue(d, &n, u))
				ok = false;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t v = d->queue[i];
		d->seen[v / 64] &= ~(1ull << (v % 64));
		if (ok) {
			size_t b = (size_t)hd_graph_vertex_block(g, v);
			d->unnamed[b / 64] |= 1ull << (b % 64);
		}
	}
	return ok;
}

void hd_fw_need_block(const struct hd_fw *cfw, size_t id)
{
	// Asking is not changing what fw says: the module's names are what
	// they would have been had it run at once.
	struct hd_fw *fw = (struct hd_fw *)cfw;
	struct hd_fw_defer *d = fw->defer;
	if (!d || id >= hd_heap_num_blocks(fw->h))
		return;
	fw->defer_stats.asked++;
	if (d->named[id / 64] >> (id % 64) & 1)
		return;
	if (out_of_reach(fw, d, id))
		return;
	// In reach: the module may still show what it would name the block
	// from the one container the block can belong to.
	if (d->spec->name_alone && d->rev) {
		double t0 = hd_seconds();
		bool named = d->spec->name_alone(fw, id, d->g, d->rev, d->hs, &d->alone);
		fw->defer_stats.alone_seconds += hd_seconds() - t0;
		if (named) {
			d->named[id / 64] |= 1ull << (id % 64);
			fw->defer_stats.alone++;
			return;
		}
	}
	fw->defer_stats.trigger = fw->h->addr[id];
	run(fw);
}

void hd_fw_need_all(const struct hd_fw *cfw)
{
	struct hd_fw *fw = (struct hd_fw *)cfw;
	if (fw->defer) {
		fw->defer_stats.for_all = true;
		run(fw);
	}
}

bool hd_fw_defer_describe(const struct hd_fw *fw, char *buf, size_t len)
{
	const struct hd_fw_defer_stats *st = &fw->defer_stats;
	if (!st->module)
		return false;
	if (!st->ran)
		snprintf(buf, len, "the %s module waited and was not needed (%llu block%s asked about, %llu gone back through, %llu named from their container alone in %.3f s)",
			 st->module, (unsigned long long)st->asked,
			 st->asked == 1 ? "" : "s", (unsigned long long)st->searched,
			 (unsigned long long)st->alone, st->alone_seconds);
	else if (st->for_all)
		snprintf(buf, len, "the %s module ran (the report names every block)",
			 st->module);
	else
		snprintf(buf, len, "the %s module ran for block 0x%llx, which it may name (%llu block%s asked about)",
			 st->module, (unsigned long long)st->trigger,
			 (unsigned long long)st->asked, st->asked == 1 ? "" : "s");
	return true;
}
