// Reverse of a CSR graph by counting sort on the edge targets.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "dom/dom.h"

// Targets are scattered over the vertices, so both passes prefetch the
// counters (and slots) they will hit this many edges ahead.
#define PREFETCH_AHEAD 16

// Counts in-degrees into offsets[t + 2] so that, after the prefix sum,
// offsets[t + 1] is where t's predecessors start: the fill pass can then
// use offsets[t + 1] as its cursor and leaves it at t's end, which is
// t + 1's start. No separate cursor array, and offsets[0] stays 0.
static struct hd_error *count_in_degrees(const struct hd_csr *g,
					 uint64_t *offsets)
{
	uint64_t m = g->offsets[g->n];
	for (uint64_t e = 0; e < m; e++) {
		if (e + PREFETCH_AHEAD < m) {
			uint32_t ahead = HD_EDGE_TARGET(g->targets[e + PREFETCH_AHEAD]);
			if (ahead < g->n)
				__builtin_prefetch(&offsets[ahead + 2], 1);
		}
		uint32_t t = HD_EDGE_TARGET(g->targets[e]);
		if (t >= g->n) {
			return hd_error_create(HD_ERROR_INVALID,
					       "edge %" PRIu64 " targets vertex %" PRIu32
					       " of a graph of %" PRIu32,
					       e, t, g->n);
		}
		offsets[t + 2]++;
	}
	for (uint64_t v = 2; v <= (uint64_t)g->n + 1; v++)
		offsets[v] += offsets[v - 1];
	return NULL;
}

static void fill_predecessors(const struct hd_csr *g, uint64_t *offsets,
			      uint32_t *targets)
{
	uint64_t m = g->offsets[g->n];
	uint32_t v = 0;
	for (uint64_t e = 0; e < m; e++) {
		// Edges in order, with their source advanced past empty rows.
		while (e >= g->offsets[v + 1])
			v++;
		if (e + 2 * PREFETCH_AHEAD < m) {
			uint32_t t = HD_EDGE_TARGET(g->targets[e + 2 * PREFETCH_AHEAD]);
			__builtin_prefetch(&offsets[t + 1], 1);
		}
		if (e + PREFETCH_AHEAD < m) {
			uint32_t t = HD_EDGE_TARGET(g->targets[e + PREFETCH_AHEAD]);
			__builtin_prefetch(&targets[offsets[t + 1]], 1);
		}
		uint32_t t = HD_EDGE_TARGET(g->targets[e]);
		targets[offsets[t + 1]++] = v;
	}
}

struct hd_error *hd_csr_reverse(const struct hd_csr *g, struct hd_csr *rev)
{
	if (g->n > INT32_MAX) {
		return hd_error_create(HD_ERROR_INVALID,
				       "graph of %" PRIu32 " vertices is too large",
				       g->n);
	}
	uint64_t m = g->offsets[g->n];
	// One spare entry for the shifted counts (see count_in_degrees).
	uint64_t *offsets = calloc((size_t)g->n + 2, sizeof(*offsets));
	// malloc(0) may return NULL, which is not a failure.
	uint32_t *targets = malloc(m ? m * sizeof(*targets) : 1);
	if (!offsets || !targets) {
		free(offsets);
		free(targets);
		return &hd_error_no_memory;
	}
	struct hd_error *err = count_in_degrees(g, offsets);
	if (err) {
		free(offsets);
		free(targets);
		return err;
	}
	fill_predecessors(g, offsets, targets);
	rev->n = g->n;
	rev->offsets = offsets;
	rev->targets = targets;
	return NULL;
}

void hd_csr_free_owned(struct hd_csr *g)
{
	free((void *)g->offsets);
	free((void *)g->targets);
	g->offsets = NULL;
	g->targets = NULL;
	g->n = 0;
}

struct hd_error *hd_csr_chain(const struct hd_csr *rev, uint32_t v,
			      bool to_root, uint32_t **path, size_t *len)
{
	uint32_t n = rev->n;
	uint32_t *next = malloc((size_t)n * sizeof(*next));
	uint32_t *queue = malloc((size_t)n * sizeof(*queue));
	if (!next || !queue) {
		free(next);
		free(queue);
		return &hd_error_no_memory;
	}
	memset(next, 0xff, (size_t)n * sizeof(*next));
	size_t head = 0, tail = 0;
	queue[tail++] = v;
	next[v] = v;
	uint32_t found = UINT32_MAX, last = v;
	while (head < tail && found == UINT32_MAX) {
		uint32_t u = queue[head++];
		last = u;
		uint64_t b = rev->offsets[u], e = rev->offsets[u + 1];
		if (!to_root && b == e) {
			found = u;
			break;
		}
		for (uint64_t i = b; i < e; i++) {
			uint32_t x = HD_EDGE_TARGET(rev->targets[i]);
			if (x == 0 && to_root) {
				found = u;
				break;
			}
			if (x == 0 || next[x] != UINT32_MAX)
				continue;
			next[x] = u;
			queue[tail++] = x;
		}
	}
	// A leaked cycle: start at the last vertex reached.
	if (found == UINT32_MAX)
		found = last;
	size_t cnt = 1;
	for (uint32_t u = found; u != v; u = next[u])
		cnt++;
	*path = malloc(cnt * sizeof(**path));
	if (*path) {
		size_t i = 0;
		for (uint32_t u = found;; u = next[u]) {
			(*path)[i++] = u;
			if (u == v)
				break;
		}
		*len = cnt;
	}
	free(next);
	free(queue);
	return *path ? NULL : &hd_error_no_memory;
}
