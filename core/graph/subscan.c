// The sub-allocator blocks' part of the conservative scanner: the words of
// every used sub-block (a pymalloc object), read in rounds split between
// threads, their candidates looked up in batches.
#include <stdlib.h>
#include <string.h>

#include "graph/refs.h"
#include "graph/scan_internal.h"
#include "util/thread.h"

// ------------------------------------------------ the sub-blocks' scan
//
// Used sub-blocks are scanned conservatively, reading through views of
// the ranges around them (their pool or region), in rounds of at most
// SUB_ROUND bytes of views: each round's blocks are split between threads
// by bytes, each thread looks its candidate words up in batches (the
// memory of a batch's look-ups fetched together), and the edges of each
// block depend only on its bytes, so they are the same whatever the
// number of threads. The core's pages behind a round are given back.

#define SUB_ROUND (64ull << 20)
#define SUB_BATCH 64

// A view and the sub-blocks [first, end) read through it; data NULL:
// unreadable, its blocks have no edges.
struct sub_window {
	struct hd_view v;
	size_t first, end;
};

struct sub_worker {
	const struct hd_scan_builder *b;
	const struct sub_window *wins;
	size_t num_wins;
	size_t first, end;  // sub-blocks
	uint32_t *counts;   // per sub-block of [first, end): its edges
	uint32_t *targets;
	uint64_t n, cap;
	uint64_t scanned, skipped;
	bool no_memory;
	size_t pending;
	uint64_t vals[SUB_BATCH];
	uint32_t src[SUB_BATCH]; // sub-block - first
};

static bool sub_reserve(struct sub_worker *w, uint64_t more)
{
	if (w->n + more <= w->cap)
		return true;
	uint64_t cap = w->cap ? w->cap : 1 << 14;
	while (cap < w->n + more)
		cap += cap / 2;
	uint32_t *t = realloc(w->targets, cap * sizeof(*t));
	if (!t)
		return false;
	w->targets = t;
	w->cap = cap;
	return true;
}

// The pending words' edges, in the order they were found: add_word's
// answers, with the memory of the batch's look-ups fetched together.
static bool sub_flush(struct sub_worker *w)
{
	const struct hd_scan_builder *b = w->b;
	const struct hd_suballoc *sa = b->sa;
	const struct hd_heap *h = b->h;
	size_t n = w->pending;
	w->pending = 0;
	if (!n)
		return true;
	if (!sub_reserve(w, n))
		return false;
	int64_t sub[SUB_BATCH];
	uint64_t heap_vals[SUB_BATCH];
	size_t nh = 0;
	int64_t ids[SUB_BATCH];
	bool exact[SUB_BATCH];
	uint64_t span = sa->hi - sa->lo;
	if (sa->dense) {
		for (size_t i = 0; i < n; i++)
			if (w->vals[i] - sa->lo < span)
				__builtin_prefetch(&sa->dense[(w->vals[i] >> sa->dense_shift) -
							      sa->dense_base]);
		for (size_t i = 0; i < n; i++)
			if (w->vals[i] - sa->lo < span)
				__builtin_prefetch(&sa->blocks[sa->dense[(w->vals[i] >> sa->dense_shift) -
									 sa->dense_base]]);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t v = w->vals[i];
		sub[i] = v - sa->lo < span ? sub_find(b, v) : -1;
		// An internal block inside a malloc'd block is part of it.
		if (sub[i] < 0 || (sa->blocks[sub[i]].state == HD_STATE_INTERNAL &&
				   sa->blocks[sub[i]].container >= 0)) {
			sub[i] = -1;
			heap_vals[nh++] = v;
		}
	}
	if (nh)
		hd_index_find_batch(b->ix, heap_vals, nh, ids, exact);
	size_t hk = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t t;
		if (sub[i] >= 0) {
			size_t k = (size_t)sub[i];
			const struct hd_subblock *sb = &sa->blocks[k];
			if (k == w->first + w->src[i] || sb->state != HD_STATE_USED)
				continue;
			t = b->first_sub_vertex + (uint32_t)k;
			if (w->vals[i] != sb->addr)
				t |= HD_EDGE_INTERIOR;
		} else {
			int64_t id = ids[hk];
			bool ex = exact[hk++];
			if (id < 0 || hd_heap_state(h, (size_t)id) != HD_STATE_USED)
				continue;
			t = b->first_block_vertex + (uint32_t)id;
			if (!ex)
				t |= HD_EDGE_INTERIOR;
		}
		w->targets[w->n++] = t;
		w->counts[w->src[i]]++;
	}
	return true;
}

// Words that may point into a used block or sub-block are candidates.
static bool sub_stretch(struct sub_worker *w, const uint8_t *d, uint64_t first,
			uint64_t last, uint32_t src)
{
	const struct hd_scan_builder *b = w->b;
	uint64_t slo = b->sa->lo, sspan = b->sa->hi - b->sa->lo;
	uint64_t hlo = b->ix->lo, hspan = b->ix->hi - b->ix->lo;
	for (uint64_t i = first; i < last; i++) {
		uint64_t v;
		memcpy(&v, d + 8 * i, 8);
		if (v - slo >= sspan && v - hlo >= hspan)
			continue;
		w->vals[w->pending] = v;
		w->src[w->pending] = src;
		if (++w->pending == SUB_BATCH && !sub_flush(w))
			return false;
	}
	return true;
}

static void *sub_scan_part(void *arg)
{
	struct sub_worker *w = arg;
	const struct hd_suballoc *sa = w->b->sa;
	w->counts = calloc(w->end - w->first + 1, sizeof(*w->counts));
	if (!w->counts) {
		w->no_memory = true;
		return NULL;
	}
	// The window of the part's first block.
	size_t wi = 0, lo = 0, hi = w->num_wins;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->wins[mid].end <= w->first)
			lo = mid + 1;
		else
			hi = mid;
	}
	wi = lo;
	for (size_t k = w->first; k < w->end; k++) {
		const struct hd_subblock *sb = &sa->blocks[k];
		if (sb->state != HD_STATE_USED)
			continue;
		while (wi < w->num_wins && w->wins[wi].end <= k)
			wi++;
		if (wi == w->num_wins || k < w->wins[wi].first || !w->wins[wi].v.data)
			continue;
		const struct hd_view *v = &w->wins[wi].v;
		uint64_t words = (sb->size & ~7ull) / 8, scanned = 0;
		uint64_t end = sb->addr + words * 8, at = sb->addr, dlo, dhi;
		const uint8_t *d = v->data + (sb->addr - v->addr);
		while (at < end && hd_view_next_data(v, at, end, &dlo, &dhi)) {
			uint64_t first = (dlo - sb->addr) / 8, last = (dhi - sb->addr + 7) / 8;
			if (!sub_stretch(w, d, first, last, (uint32_t)(k - w->first))) {
				w->no_memory = true;
				return NULL;
			}
			scanned += last - first;
			at = sb->addr + last * 8;
		}
		w->scanned += scanned;
		w->skipped += words - scanned;
	}
	if (!sub_flush(w)) {
		w->no_memory = true;
		return NULL;
	}
	// Each block's edges deduplicated, moved down to follow the last's.
	uint64_t in = 0, out = 0;
	for (size_t j = 0; j < w->end - w->first; j++) {
		uint64_t m = w->counts[j];
		// A part without edges has no array (memmove's NULL is UB).
		if (m)
			memmove(w->targets + out, w->targets + in, m * sizeof(*w->targets));
		in += m;
		m = hd_scan_dedupe(w->targets + out, m);
		w->counts[j] = (uint32_t)m;
		out += m;
	}
	w->n = out;
	return NULL;
}

// The views of sub-blocks [first, ...) up to about SUB_ROUND bytes, as
// the one-view-at-a-time scan made them: a used block outside the last
// view gets the range of its container, else of the first region that
// holds it, else its own. Returns the end of the round's blocks.
static struct hd_error *sub_windows(const struct hd_scan_builder *b, struct hd_target *t,
				    size_t first, struct sub_window **ret,
				    size_t *num, size_t *round_end)
{
	const struct hd_suballoc *sa = b->sa;
	struct sub_window *wins = NULL;
	size_t n = 0, cap = 0;
	uint64_t bytes = 0;
	struct hd_error *err = NULL;
	size_t k = first;
	for (; k < sa->num_blocks; k++) {
		const struct hd_subblock *sb = &sa->blocks[k];
		if (sb->state != HD_STATE_USED)
			continue;
		struct sub_window *last = n ? &wins[n - 1] : NULL;
		if (last && last->v.data && sb->addr >= last->v.addr &&
		    sb->addr + sb->size <= last->v.addr + last->v.len) {
			last->end = k + 1;
			continue;
		}
		if (bytes >= SUB_ROUND)
			break;
		uint64_t lo = sb->addr, hi = sb->addr + sb->size;
		if (sb->container >= 0) {
			struct hd_block blk;
			hd_heap_block(b->h, (size_t)sb->container, &blk);
			lo = blk.addr;
			hi = blk.addr + blk.usable;
		} else {
			for (size_t r = 0; r < sa->num_regions; r++)
				if (sa->regions[r].start <= lo && sa->regions[r].end >= hi) {
					lo = sa->regions[r].start;
					hi = sa->regions[r].end;
					break;
				}
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct sub_window *nw = realloc(wins, cap * sizeof(*nw));
			if (!nw) {
				err = &hd_error_no_memory;
				break;
			}
			wins = nw;
		}
		struct sub_window *w = &wins[n];
		memset(w, 0, sizeof(*w));
		w->first = k;
		w->end = k + 1;
		err = hd_target_view(t, lo, hi - lo, &w->v);
		if (err) {
			// Unreadable: this block has no edges (the next one tries
			// a view of its own again).
			memset(&w->v, 0, sizeof(w->v));
			if (err->code == HD_ERROR_NO_MEMORY)
				break;
			hd_error_destroy(err);
			err = NULL;
		} else {
			bytes += hi - lo;
		}
		n++;
	}
	*ret = wins;
	*num = n;
	*round_end = k;
	return err;
}

static void sub_windows_free(struct hd_target *t, struct sub_window *wins,
			     size_t n, bool release)
{
	for (size_t i = 0; i < n; i++)
		if (wins[i].v.data) {
			uint64_t a = wins[i].v.addr, len = wins[i].v.len;
			hd_view_deinit(&wins[i].v);
			// The core's pages behind the scan count toward RSS
			// until given back.
			if (release)
				hd_target_release(t, a, len);
		}
	free(wins);
}

// Splits sub-blocks [first, end) into k parts of about equal bytes of used
// blocks: bounds[0] = first ... bounds[k] = end.
static void sub_split(const struct hd_suballoc *sa, size_t first, size_t end,
		      unsigned k, size_t *bounds)
{
	uint64_t total = 0;
	for (size_t i = first; i < end; i++)
		if (sa->blocks[i].state == HD_STATE_USED)
			total += sa->blocks[i].size;
	bounds[0] = first;
	uint64_t sum = 0;
	size_t i = first;
	for (unsigned j = 1; j < k; j++) {
		uint64_t want = total / k * j;
		while (i < end && sum < want) {
			if (sa->blocks[i].state == HD_STATE_USED)
				sum += sa->blocks[i].size;
			i++;
		}
		bounds[j] = i;
	}
	bounds[k] = end;
}

// One round: its blocks' edges appended in block order.
static struct hd_error *sub_round(struct hd_scan_builder *b, const struct sub_window *wins,
				  size_t num_wins, size_t first, size_t end,
				  unsigned k)
{
	struct sub_worker *w = calloc(k, sizeof(*w));
	size_t *bounds = calloc(k + 1, sizeof(*bounds));
	struct hd_error *err = NULL;
	if (!w || !bounds) {
		err = &hd_error_no_memory;
		goto out;
	}
	sub_split(b->sa, first, end, k, bounds);
	for (unsigned j = 0; j < k; j++) {
		w[j] = (struct sub_worker){.b = b, .wins = wins, .num_wins = num_wins,
					   .first = bounds[j], .end = bounds[j + 1]};
	}
	hd_threads_run(sub_scan_part, w, sizeof(*w), k);
	uint64_t total = 0;
	for (unsigned j = 0; j < k; j++) {
		if (w[j].no_memory)
			err = &hd_error_no_memory;
		total += w[j].n;
	}
	if (!err && !hd_scan_reserve(b, total))
		err = &hd_error_no_memory;
	uint32_t v0 = b->first_sub_vertex;
	for (unsigned j = 0; j < k && !err; j++) {
		const struct sub_worker *wk = &w[j];
		uint64_t at = 0;
		for (size_t i = wk->first; i < wk->end; i++) {
			b->offsets[v0 + i] = b->n + at;
			at += wk->counts[i - wk->first];
		}
		if (wk->n)
			memcpy(b->targets + b->n, wk->targets, wk->n * sizeof(*b->targets));
		b->n += wk->n;
		b->g->info.words_scanned += wk->scanned;
		b->g->info.words_skipped += wk->skipped;
	}
out:
	for (unsigned j = 0; w && j < k; j++) {
		free(w[j].counts);
		free(w[j].targets);
	}
	free(w);
	free(bounds);
	return err;
}

struct hd_error *hd_scan_subblocks(struct hd_scan_builder *b, struct hd_target *t)
{
	const struct hd_suballoc *sa = b->sa;
	unsigned k = hd_threads_wanted(sa->threads);
	// Few blocks are not worth a thread, unless threads were asked for.
	if (!sa->threads && sa->num_blocks < 65536)
		k = 1;
	size_t first = 0;
	while (first < sa->num_blocks) {
		struct sub_window *wins;
		size_t num_wins, end;
		struct hd_error *err = sub_windows(b, t, first, &wins, &num_wins, &end);
		if (!err) {
			unsigned kk = end - first < k ? (unsigned)(end - first) : k;
			err = sub_round(b, wins, num_wins, first, end, kk ? kk : 1);
		}
		sub_windows_free(t, wins, num_wins, !err);
		if (err)
			return err;
		first = end;
	}
	return NULL;
}
