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
					 uint32_t *offsets)
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

static void fill_predecessors(const struct hd_csr *g, uint32_t *offsets,
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
	uint32_t *offsets = calloc((size_t)g->n + 2, sizeof(*offsets));
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

// The backward breadth-first search: the visit list is also the queue,
// and each entry keeps the index of the entry it was reached from (its next
// step towards v), so memory grows with the vertices visited; the seen-set
// is a bitmap of n / 8 bytes, calloc'd, so pages of vertices nothing
// visits are never touched.
static bool visit_push(struct hd_csr_search *s, size_t *cap, uint32_t vertex,
		       uint32_t next, uint32_t dist)
{
	if (s->num_visits == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct hd_csr_visit *l = realloc(s->visits, c * sizeof(*l));
		if (!l)
			return false;
		s->visits = l;
		*cap = c;
	}
	s->visits[s->num_visits++] = (struct hd_csr_visit){ vertex, next, dist };
	return true;
}

static bool found_push(struct hd_csr_search *s, size_t *cap, size_t slot,
		       bool excluded)
{
	if (s->num_found == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct hd_csr_found *f = realloc(s->found, c * sizeof(*f));
		if (!f)
			return false;
		s->found = f;
		*cap = c;
	}
	s->found[s->num_found++] = (struct hd_csr_found){
		.vertex = s->visits[slot].vertex, .dist = s->visits[slot].dist,
		.excluded = excluded, .slot = slot };
	return true;
}

struct hd_error *hd_csr_search(const struct hd_csr *rev, uint32_t v,
			       enum hd_csr_stop stop,
			       bool (*exclude)(void *arg, uint32_t root),
			       void *arg, struct hd_csr_search *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->source = SIZE_MAX;
	if (v >= rev->n) {
		return hd_error_create(HD_ERROR_INVALID,
				       "vertex %" PRIu32 " of a graph of %" PRIu32,
				       v, rev->n);
	}
	uint64_t *seen = calloc(((size_t)rev->n + 63) / 64, sizeof(*seen));
	size_t cap = 0, found_cap = 0;
	if (!seen || !visit_push(ret, &cap, v, 0, 0))
		goto oom;
	seen[v / 64] |= 1ULL << (v % 64);
	for (size_t head = 0; head < ret->num_visits; head++) {
		uint32_t u = ret->visits[head].vertex;
		uint64_t b = rev->offsets[u], e = rev->offsets[u + 1];
		if (b == e && ret->source == SIZE_MAX) {
			ret->source = head;
			if (stop == HD_CSR_FIRST_SOURCE)
				break;
		}
		// A root: the super-root points at it.
		bool root = false;
		for (uint64_t i = b; i < e && !root; i++)
			root = HD_EDGE_TARGET(rev->targets[i]) == 0;
		if (root) {
			bool ex = exclude && exclude(arg, u);
			if (!found_push(ret, &found_cap, head, ex))
				goto oom;
			if (ex)
				continue; // as if absent: no chain goes through it
			if (stop == HD_CSR_FIRST_ROOT)
				break;
		}
		uint32_t d = ret->visits[head].dist + 1;
		for (uint64_t i = b; i < e; i++) {
			uint32_t x = HD_EDGE_TARGET(rev->targets[i]);
			if (x == 0 || (seen[x / 64] >> (x % 64)) & 1)
				continue;
			seen[x / 64] |= 1ULL << (x % 64);
			if (!visit_push(ret, &cap, x, (uint32_t)head, d))
				goto oom;
		}
	}
	free(seen);
	return NULL;
oom:
	free(seen);
	hd_csr_search_deinit(ret);
	return &hd_error_no_memory;
}

struct hd_error *hd_csr_search_path(const struct hd_csr_search *s, size_t slot,
				    uint32_t **path, size_t *len)
{
	if (slot >= s->num_visits)
		return hd_error_create(HD_ERROR_INVALID,
				       "no visited vertex %zu (%zu visited)", slot,
				       s->num_visits);
	size_t cnt = (size_t)s->visits[slot].dist + 1;
	*path = malloc(cnt * sizeof(**path));
	if (!*path)
		return &hd_error_no_memory;
	size_t i = 0;
	for (size_t k = slot;; k = s->visits[k].next) {
		(*path)[i++] = s->visits[k].vertex;
		if (k == 0)
			break;
	}
	*len = cnt;
	return NULL;
}

void hd_csr_search_deinit(struct hd_csr_search *s)
{
	free(s->visits);
	free(s->found);
	s->visits = NULL;
	s->found = NULL;
	s->num_visits = s->num_found = 0;
}

struct hd_error *hd_csr_chain(const struct hd_csr *rev, uint32_t v,
			      bool to_root, uint32_t **path, size_t *len)
{
	struct hd_csr_search s;
	struct hd_error *err = hd_csr_search(
		rev, v, to_root ? HD_CSR_FIRST_ROOT : HD_CSR_FIRST_SOURCE, NULL,
		NULL, &s);
	if (err)
		return err;
	// A leaked cycle (or a wrong to_root): start at the last vertex reached.
	size_t slot = s.num_visits - 1;
	if (to_root && s.num_found)
		slot = s.found[0].slot;
	else if (!to_root && s.source != SIZE_MAX)
		slot = s.source;
	err = hd_csr_search_path(&s, slot, path, len);
	hd_csr_search_deinit(&s);
	return err;
}
