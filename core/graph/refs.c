// One pass over the used blocks in address order, the heap split between
// threads by bytes: every word that holds an address inside a used block
// is a reference. Each block's references depend only on its bytes, so the
// parts are the same whatever the number of threads.
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/refs.h"
#include "heap/heap_internal.h"
#include "util/thread.h"
#include "util/clock.h"


unsigned hd_threads_wanted(unsigned n)
{
	if (n)
		return n;
	const char *env = getenv("HEAPDOM_JOBS");
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		if (!*end && v >= 1)
			return v > 64 ? 64 : (unsigned)v;
	}
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		int c = CPU_COUNT(&set);
		return c < 1 ? 1 : c > 8 ? 8 : (unsigned)c;
	}
	return 1;
}

struct worker {
	struct hd_target *t;
	const struct hd_heap *h;
	const struct hd_index *ix;
	const struct hd_view *views; // one per segment; data NULL: unreadable
	size_t num_views;
	struct hd_refs_part part; // offsets count each block's refs until the end
	uint64_t cap;
	uint64_t scanned, skipped;
	size_t far;
	bool no_memory, too_many;
	// Candidates waiting for a batched look-up: value, word, source block.
	size_t pending;
	uint64_t vals[HD_INDEX_BATCH];
	uint32_t at[HD_INDEX_BATCH];
	uint32_t src[HD_INDEX_BATCH];
};

static bool reserve(struct worker *w, uint64_t more)
{
	struct hd_refs_part *p = &w->part;
	if (p->num + more <= w->cap)
		return true;
	uint64_t cap = w->cap ? w->cap : 1 << 16;
	while (cap < p->num + more)
		cap += cap / 2;
	uint32_t *t = realloc(p->targets, cap * sizeof(*t));
	if (t)
		p->targets = t;
	uint32_t *wd = t ? realloc(p->words, cap * sizeof(*wd)) : NULL;
	if (!wd)
		return false;
	p->words = wd;
	w->cap = cap;
	return true;
}

// Looks the pending candidates up and appends the references they are, in
// the order they were found (block by block, word by word).
static bool flush(struct worker *w)
{
	size_t n = w->pending;
	w->pending = 0;
	if (!n)
		return true;
	const struct hd_heap *h = w->h;
	struct hd_refs_part *p = &w->part;
	int64_t ids[HD_INDEX_BATCH];
	bool exact[HD_INDEX_BATCH];
	hd_index_find_batch(w->ix, w->vals, n, ids, exact);
	if (!reserve(w, n))
		return false;
	for (size_t k = 0; k < n; k++) {
		int64_t id = ids[k];
		if (id < 0 || hd_heap_state(h, (size_t)id) != HD_STATE_USED)
			continue;
		uint32_t t = (uint32_t)id;
		if (!exact[k])
			t |= HD_EDGE_INTERIOR;
		p->targets[p->num] = t;
		p->words[p->num++] = w->at[k];
		p->offsets[w->src[k] + 1]++;
	}
	return true;
}

// The words [first, last) of block id (data holds its bytes); words inside
// the heap's span are candidates.
static bool scan_stretch(struct worker *w, const uint8_t *data, uint64_t first,
			 uint64_t last, uint32_t src)
{
	const struct hd_index *ix = w->ix;
	uint64_t lo = ix->lo, span = ix->hi - ix->lo;
	for (uint64_t i = first; i < last; i++) {
		uint64_t v;
		memcpy(&v, data + 8 * i, 8);
		if (v - lo >= span)
			continue;
		w->vals[w->pending] = v;
		w->at[w->pending] = (uint32_t)i;
		w->src[w->pending] = src;
		if (++w->pending == HD_INDEX_BATCH && !flush(w))
			return false;
	}
	return true;
}

// Scans block id, whose usable bytes view v holds; words the view knows
// were never populated are zeros, which point nowhere: skipped unread.
static bool scan_block(struct worker *w, const struct hd_view *v,
		       const struct hd_block *blk, uint32_t src)
{
	uint64_t words = blk->usable / 8, scanned = 0;
	uint64_t end = blk->addr + words * 8, at = blk->addr, lo, hi;
	const uint8_t *d = v->data + (blk->addr - v->addr);
	while (at < end && hd_view_next_data(v, at, end, &lo, &hi)) {
		uint64_t first = (lo - blk->addr) / 8, last = (hi - blk->addr + 7) / 8;
		if (!scan_stretch(w, d, first, last, src))
			return false;
		scanned += last - first;
		at = blk->addr + last * 8;
	}
	w->scanned += scanned;
	w->skipped += words - scanned;
	return true;
}

static void *scan_part(void *arg)
{
	struct worker *w = arg;
	const struct hd_heap *h = w->h;
	struct hd_refs_part *p = &w->part;
	size_t first = p->first, end = p->end, id = first;
	p->offsets = calloc(end - first + 1, sizeof(*p->offsets));
	if (!p->offsets) {
		w->no_memory = true;
		return NULL;
	}
	// The segment that holds the part's first block, or the next one.
	size_t s = 0;
	if (id < end)
		while (s < w->num_views &&
		       hd_heap_segment(h, s)->end <= hd_heap_extent_start(h, id))
			s++;
	for (; s < w->num_views && id < end; s++) {
		const struct hd_heap_segment *seg = hd_heap_segment(h, s);
		const struct hd_view *v = &w->views[s];
		uint64_t done = id < end && hd_heap_extent_start(h, id) > seg->start
				? hd_heap_extent_start(h, id) : seg->start;
		// Blocks before this segment (none normally) hold nothing.
		while (id < end && hd_heap_extent_start(h, id) < seg->start)
			id++;
		for (; id < end && hd_heap_extent_start(h, id) < seg->end; id++) {
			if (!v->data || hd_heap_state(h, id) != HD_STATE_USED)
				continue;
			// Only the address and usable size: hd_heap_block fills
			// much more, for 10M blocks.
			struct hd_block blk = {.addr = h->addr[id],
					       .usable = hd_heap_usable(h, id)};
			// Blocks of 32 GiB and more: the graph and typing read
			// them themselves (word indexes are 32-bit).
			if (blk.addr + blk.usable > seg->end)
				continue;
			if (blk.usable / 8 >= HD_REF_FAR_WORD) {
				w->far++;
				continue;
			}
			if (!scan_block(w, v, &blk, (uint32_t)(id - first))) {
				w->no_memory = true;
				return NULL;
			}
			// The core's pages behind the scan count toward RSS
			// until given back.
			if (blk.addr - done >= (16ull << 20)) {
				hd_target_release(w->t, done, blk.addr - done);
				done = blk.addr;
			}
		}
		hd_target_release(w->t, done, seg->end > done ? seg->end - done : 0);
	}
	if (!flush(w)) {
		w->no_memory = true;
		return NULL;
	}
	// Counts to offsets; the total must fit them.
	if (p->num > UINT32_MAX) {
		w->too_many = true;
		return NULL;
	}
	for (size_t k = 0; k < end - first; k++)
		p->offsets[k + 1] += p->offsets[k];
	// Give back the slack of the geometric growth.
	if (p->num) {
		uint32_t *t = realloc(p->targets, p->num * sizeof(*t));
		if (t)
			p->targets = t;
		uint32_t *wd = realloc(p->words, p->num * sizeof(*wd));
		if (wd)
			p->words = wd;
	}
	return NULL;
}

// Splits [0, n) into k parts of about equal bytes of used blocks.
static void split(const struct hd_heap *h, unsigned k, size_t *bounds)
{
	size_t n = h->num_blocks;
	uint64_t total = 0;
	for (size_t id = 0; id < n; id++)
		total += h->span[id];
	bounds[0] = 0;
	uint64_t sum = 0;
	size_t id = 0;
	for (unsigned j = 1; j < k; j++) {
		uint64_t want = total / k * j;
		while (id < n && sum < want)
			sum += h->span[id++];
		bounds[j] = id;
	}
	bounds[k] = n;
}

struct hd_error *hd_refs_init(struct hd_refs *r, struct hd_target *t,
			      const struct hd_heap *h,
			      const struct hd_index *ix, unsigned threads)
{
	double t0 = hd_seconds();
	memset(r, 0, sizeof(*r));
	r->num_blocks = h->num_blocks;
	r->h = h;
	size_t nseg = hd_heap_num_segments(h);
	struct hd_view *views = calloc(nseg + 1, sizeof(*views));
	if (!views)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	for (size_t s = 0; s < nseg && !err; s++) {
		const struct hd_heap_segment *seg = hd_heap_segment(h, s);
		err = hd_target_view(t, seg->start, seg->end - seg->start, &views[s]);
		if (err && err->code != HD_ERROR_NO_MEMORY) {
			// An unreadable segment's blocks hold nothing we can see.
			hd_error_destroy(err);
			err = NULL;
			memset(&views[s], 0, sizeof(views[s]));
			if (!r->unread)
				r->unread = calloc(nseg, sizeof(*r->unread));
			if (!r->unread)
				err = &hd_error_no_memory;
			else
				r->unread[s] = true;
		}
	}
	unsigned k = hd_threads_wanted(threads);
	// Small heaps are not worth a thread, unless threads were asked for.
	if (!threads && h->num_blocks < 65536)
		k = 1;
	if (k > h->num_blocks)
		k = h->num_blocks ? (unsigned)h->num_blocks : 1;
	r->threads = k;
	struct worker *w = err ? NULL : calloc(k, sizeof(*w));
	size_t *bounds = err ? NULL : calloc(k + 1, sizeof(*bounds));
	if (!err && (!w || !bounds))
		err = &hd_error_no_memory;
	if (!err) {
		split(h, k, bounds);
		for (unsigned j = 0; j < k; j++) {
			w[j] = (struct worker){.t = t, .h = h, .ix = ix, .views = views,
					       .num_views = nseg};
			w[j].part.first = bounds[j];
			w[j].part.end = bounds[j + 1];
		}
		hd_threads_run(scan_part, w, sizeof(*w), k);
		r->parts = calloc(k, sizeof(*r->parts));
		if (!r->parts)
			err = &hd_error_no_memory;
		for (unsigned j = 0; j < k; j++) {
			if (!err && w[j].no_memory)
				err = &hd_error_no_memory;
			if (!err && w[j].too_many)
				err = hd_error_create(HD_ERROR_UNSUPPORTED,
						      "more than 2^32 references in blocks %zu-%zu: past what this analysis can index",
						      w[j].part.first, w[j].part.end);
			r->words_scanned += w[j].scanned;
			r->words_skipped += w[j].skipped;
			r->far_blocks += w[j].far;
			r->num += w[j].part.num;
			if (r->parts)
				r->parts[r->num_parts++] = w[j].part;
			else {
				free(w[j].part.offsets);
				free(w[j].part.targets);
				free(w[j].part.words);
			}
		}
	}
	for (size_t s = 0; s < nseg; s++)
		if (views[s].data)
			hd_view_deinit(&views[s]);
	free(views);
	free(w);
	free(bounds);
	if (err) {
		hd_refs_deinit(r);
		return err;
	}
	r->seconds = hd_seconds() - t0;
	return NULL;
}

void hd_refs_free_part(struct hd_refs *r, unsigned j)
{
	free(r->parts[j].offsets);
	free(r->parts[j].targets);
	free(r->parts[j].words);
	r->parts[j].offsets = r->parts[j].targets = r->parts[j].words = NULL;
}

void hd_refs_deinit_parts(struct hd_refs *r)
{
	for (unsigned j = 0; j < r->num_parts; j++)
		hd_refs_free_part(r, j);
}

bool hd_refs_block_scanned(const struct hd_refs *r, size_t id)
{
	if (!r->unread)
		return true;
	uint64_t a = hd_heap_extent_start(r->h, id);
	size_t lo = 0, hi = hd_heap_num_segments(r->h);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (hd_heap_segment(r->h, mid)->end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == hd_heap_num_segments(r->h) || !r->unread[lo];
}

void hd_refs_deinit(struct hd_refs *r)
{
	hd_refs_deinit_parts(r);
	free(r->unread);
	free(r->parts);
	memset(r, 0, sizeof(*r));
}
