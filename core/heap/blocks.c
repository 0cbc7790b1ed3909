// The neutral block table: sorted, dense ids, 15 bytes per block (19 for a
// backend of exact sizes), and the per-heap tables a backend declares
// (shapes, lists, regions, metadata, facts).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/backend.h"
#include "util/vec.h"
#include "util/thread.h"

#define MAX_PROBLEMS 1000

static const struct hd_free_list no_list = {"none", NULL, false};

struct hd_error *hd_heap_alloc(struct hd_heap **ret)
{
	struct hd_heap *h = calloc(1, sizeof(*h));
	if (!h)
		return &hd_error_no_memory;
	h->lists[0] = no_list;
	h->num_lists = 1;
	h->num_allocs = 1;
	h->allocs[0].num_lists = 1;
	*ret = h;
	return NULL;
}

void hd_heap_destroy(struct hd_heap *h)
{
	if (!h)
		return;
	free(h->addr);
	free(h->span);
	free(h->flags);
	free(h->region);
	free(h->reserved);
	free(h->regions);
	free(h->segments);
	free(h->metadata);
	free(h->facts);
	for (size_t i = 0; i < h->num_strings; i++)
		free(h->strings[i]);
	free(h->strings);
	for (size_t i = 0; i < h->num_problems; i++)
		free(h->problems[i].message);
	free(h->problems);
	free(h->region_alloc);
	for (unsigned a = 0; a < h->num_allocs; a++)
		hd_heap_destroy(h->allocs[a].own);
	free(h);
}

void hd_heap_declare(struct hd_heap *h, const struct hd_heap_backend *b,
		     unsigned span_shift, const struct hd_heap_shape *shapes,
		     unsigned num_shapes, const struct hd_free_list *lists,
		     unsigned num_lists)
{
	h->backend = b;
	if (b) {
		h->info.allocator = b->name;
		h->info.labels = b->labels;
	}
	h->span_shift = span_shift;
	for (unsigned i = 0; i < num_shapes && i < HD_HEAP_MAX_SHAPES; i++)
		h->shapes[i] = shapes[i];
	h->lists[0] = no_list;
	h->num_lists = 1;
	for (unsigned i = 1; i < num_lists && i < HD_HEAP_MAX_LISTS; i++)
		h->lists[h->num_lists++] = lists[i];
	h->num_allocs = 1;
	h->allocs[0].backend = b;
	h->allocs[0].list_base = 0;
	h->allocs[0].num_lists = h->num_lists;
}

// Reallocates every column to n rows; false if one could not be (those
// that could are at n, the others as they were).
static bool resize_columns(struct hd_heap *h, size_t n, bool reserved)
{
	uint64_t *a = realloc(h->addr, n * sizeof(*a));
	if (a)
		h->addr = a;
	uint32_t *c = realloc(h->span, n * sizeof(*c));
	if (c)
		h->span = c;
	uint8_t *f = realloc(h->flags, n * sizeof(*f));
	if (f)
		h->flags = f;
	uint16_t *r = realloc(h->region, n * sizeof(*r));
	if (r)
		h->region = r;
	uint32_t *x = NULL;
	if (reserved) {
		x = realloc(h->reserved, n * sizeof(*x));
		if (x)
			h->reserved = x;
	}
	return a && c && f && r && (!reserved || x);
}

bool hd_heap_reserve(struct hd_heap *h, size_t cap)
{
	if (cap <= h->cap_blocks)
		return true;
	if (!resize_columns(h, cap, h->exact_sizes))
		return false;
	h->cap_blocks = cap;
	return true;
}

static bool grow(struct hd_heap *h)
{
	return hd_heap_reserve(h, h->cap_blocks ? h->cap_blocks * 2 : 4096);
}

bool hd_heap_add(struct hd_heap *h, uint64_t addr, uint64_t extent,
		 enum hd_block_state state, unsigned list, uint16_t region,
		 unsigned shape)
{
	if (h->num_blocks == h->cap_blocks && !grow(h))
		return false;
	hd_heap_put(h, h->num_blocks++, addr, extent, state, list, region,
		    shape);
	return true;
}

void hd_heap_fit(struct hd_heap *h)
{
	size_t n = h->num_blocks;
	if (!n || n >= h->cap_blocks)
		return;
	// A shrink that fails keeps the larger array: every column still
	// holds n rows, so n is the capacity either way.
	resize_columns(h, n, h->reserved != NULL);
	h->cap_blocks = n;
}

// A backend's callbacks see the whole table: on a merged heap their
// (h, id) is the merged one, read through the accessors above.
bool hd_heap_exact_sizes(struct hd_heap *h)
{
	h->exact_sizes = true;
	if (!h->cap_blocks || h->reserved)
		return true;
	h->reserved = calloc(h->cap_blocks, sizeof(*h->reserved));
	return h->reserved != NULL;
}

uint64_t hd_heap_min_request(const struct hd_heap *h, size_t id)
{
	const struct hd_heap_backend *b = h->allocs[hd_heap_block_alloc(h, id)].backend;
	return b && b->min_request ? b->min_request(h, id) : 0;
}

uint32_t hd_heap_request_slack(const struct hd_heap *h, size_t id)
{
	const struct hd_heap_backend *b = h->allocs[hd_heap_block_alloc(h, id)].backend;
	return b ? b->request_slack : 0;
}

void hd_heap_problem_add(struct hd_heap *h, uint64_t address, const char *fmt,
			 ...)
{
	if (h->num_problems >= MAX_PROBLEMS) {
		h->dropped_problems++;
		return;
	}
	struct hd_heap_problem p = {.address = address};
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&p.message, fmt, ap);
	va_end(ap);
	if (r < 0)
		p.message = NULL;
	if (!p.message ||
	    !HD_VEC_PUSH(h->problems, h->num_problems, h->cap_problems, p)) {
		free(p.message);
		h->dropped_problems++;
	}
}

// ------------------------------------------------ what a backend declares

uint16_t hd_heap_add_region(struct hd_heap *h, const struct hd_region *r)
{
	struct hd_region c = *r;
	c.allocator = 0; // merge.c numbers the allocators
	if (h->num_regions >= HD_REGION_LIMIT ||
	    !HD_VEC_PUSH(h->regions, h->num_regions, h->cap_regions, c))
		return HD_REGION_NONE;
	return (uint16_t)(h->num_regions - 1);
}

bool hd_heap_add_segment(struct hd_heap *h, const struct hd_heap_segment *s)
{
	struct hd_heap_segment c = *s;
	c.allocator = 0;
	return HD_VEC_PUSH(h->segments, h->num_segments, h->cap_segments, c);
}

static const char *keep(struct hd_heap *h, const char *s)
{
	char *c = strdup(s);
	if (!c || !HD_VEC_PUSH(h->strings, h->num_strings, h->cap_strings, c)) {
		free(c);
		return NULL;
	}
	return c;
}

bool hd_heap_add_metadata(struct hd_heap *h, uint64_t start, uint64_t end,
			  const char *name, uint32_t region)
{
	struct hd_heap_metadata m = {.start = start, .end = end,
				     .name = keep(h, name), .region = region};
	return m.name &&
	       HD_VEC_PUSH(h->metadata, h->num_metadata, h->cap_metadata, m);
}

static bool add_fact(struct hd_heap *h, uint32_t region, const char *key,
		     enum hd_fact_kind kind, uint64_t v, const char *s)
{
	struct hd_fact f = {.key = keep(h, key), .kind = kind, .value = v,
			    .region = region};
	if (s)
		f.string = keep(h, s);
	return f.key && (!s || f.string) &&
	       HD_VEC_PUSH(h->facts, h->num_facts, h->cap_facts, f);
}

bool hd_heap_fact_bool(struct hd_heap *h, uint32_t region, const char *key,
		       bool v)
{
	return add_fact(h, region, key, HD_FACT_BOOL, v, NULL);
}

bool hd_heap_fact_uint(struct hd_heap *h, uint32_t region, const char *key,
		       uint64_t v)
{
	return add_fact(h, region, key, HD_FACT_UINT, v, NULL);
}

bool hd_heap_fact_addr(struct hd_heap *h, uint32_t region, const char *key,
		       uint64_t v)
{
	return add_fact(h, region, key, HD_FACT_ADDR, v, NULL);
}

bool hd_heap_fact_string(struct hd_heap *h, uint32_t region, const char *key,
			 const char *v)
{
	return add_fact(h, region, key, HD_FACT_STRING, 0, v);
}

// --------------------------------------------------------------- queries

size_t hd_heap_num_blocks(const struct hd_heap *h) { return h->num_blocks; }

void hd_heap_block(const struct hd_heap *h, size_t id, struct hd_block *ret)
{
	ret->addr = h->addr[id];
	ret->start = hd_heap_extent_start(h, id);
	ret->extent = hd_heap_extent(h, id);
	ret->state = hd_heap_state(h, id);
	unsigned a = hd_heap_block_alloc(h, id);
	const struct hd_heap_alloc *al = &h->allocs[a];
	unsigned l = hd_heap_block_list(h, id);
	ret->list = ret->state == HD_STATE_FREE && l && l < al->num_lists
			    ? al->list_base + l : 0;
	ret->list_name = ret->list ? h->lists[ret->list].name : NULL;
	ret->region = h->region[id] >= HD_REGION_LIMIT ? HD_NO_REGION
						       : h->region[id];
	ret->mmapped = ret->region == HD_NO_REGION;
	ret->usable = hd_heap_usable(h, id);
	ret->allocator = a;
}

const char *hd_heap_block_label(const struct hd_heap *h, size_t id)
{
	if (id >= h->num_blocks || hd_heap_state(h, id) == HD_STATE_USED)
		return NULL;
	const struct hd_heap_backend *b = h->allocs[hd_heap_block_alloc(h, id)].backend;
	if (b && b->block_label)
		return b->block_label(h, id);
	return NULL;
}

// Last block whose user address (or, with extent, extent start) is at or
// below p, or -1.
static int64_t last_at_or_below(const struct hd_heap *h, uint64_t p,
				bool extent)
{
	size_t lo = 0, hi = h->num_blocks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a = extent ? hd_heap_extent_start(h, mid) : h->addr[mid];
		if (a <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t)lo - 1;
}

int64_t hd_heap_find_extent(const struct hd_heap *h, uint64_t p)
{
	int64_t i = last_at_or_below(h, p, true);
	if (i >= 0 && p - hd_heap_extent_start(h, (size_t)i) <
			      hd_heap_extent(h, (size_t)i))
		return i;
	return -1;
}

int64_t hd_heap_find(const struct hd_heap *h, uint64_t p)
{
	// Usable ranges do not overlap one another: where a block's usable
	// bytes reach into the next extent (glibc's prev_size word), they
	// end before the next block's user address, so the block starting
	// at or below p is the only candidate.
	int64_t i = last_at_or_below(h, p, false);
	if (i >= 0 && p - h->addr[i] < hd_heap_usable(h, (size_t)i))
		return i;
	return -1;
}

int64_t hd_heap_find_exact(const struct hd_heap *h, uint64_t addr)
{
	int64_t i = last_at_or_below(h, addr, false);
	return i >= 0 && h->addr[i] == addr ? i : -1;
}

size_t hd_heap_num_segments(const struct hd_heap *h)
{
	return h->num_segments;
}

const struct hd_heap_segment *hd_heap_segment(const struct hd_heap *h,
					      size_t i)
{
	return i < h->num_segments ? &h->segments[i] : NULL;
}

size_t hd_heap_table_bytes(const struct hd_heap *h)
{
	return h->cap_blocks * (sizeof(*h->addr) + sizeof(*h->span) +
				sizeof(*h->flags) + sizeof(*h->region) +
				(h->exact_sizes ? sizeof(*h->reserved) : 0));
}

size_t hd_heap_num_free_lists(const struct hd_heap *h) { return h->num_lists; }

const struct hd_free_list *hd_heap_free_list(const struct hd_heap *h, size_t i)
{
	return i < h->num_lists ? &h->lists[i] : NULL;
}

size_t hd_heap_num_regions(const struct hd_heap *h) { return h->num_regions; }

const struct hd_region *hd_heap_region(const struct hd_heap *h, size_t i)
{
	return i < h->num_regions ? &h->regions[i] : NULL;
}

size_t hd_heap_num_metadata(const struct hd_heap *h) { return h->num_metadata; }

const struct hd_heap_metadata *hd_heap_metadata(const struct hd_heap *h,
						size_t i)
{
	return i < h->num_metadata ? &h->metadata[i] : NULL;
}

size_t hd_heap_num_facts(const struct hd_heap *h) { return h->num_facts; }

const struct hd_fact *hd_heap_fact(const struct hd_heap *h, size_t i)
{
	return i < h->num_facts ? &h->facts[i] : NULL;
}

size_t hd_heap_num_problems(const struct hd_heap *h)
{
	return h->num_problems;
}

const struct hd_heap_problem *hd_heap_problem(const struct hd_heap *h,
					      size_t i)
{
	return i < h->num_problems ? &h->problems[i] : NULL;
}

bool hd_heap_partial(const struct hd_heap *h)
{
	return h->num_problems || h->dropped_problems ||
	       h->info.other_allocator || h->skipped[0];
}

// Allocator a's own info: a merged heap keeps it in the walk's heap.
static const struct hd_heap *alloc_heap(const struct hd_heap *h, size_t a)
{
	return a < h->num_allocs && h->allocs[a].own ? h->allocs[a].own : h;
}

void hd_heap_allocator_info(const struct hd_heap *h, size_t i,
			    struct hd_heap_info *ret)
{
	const struct hd_heap *o = alloc_heap(h, i);
	*ret = o->info;
	ret->version = o->version[0] ? o->version : NULL;
	ret->version_source = o->version_source[0] ? o->version_source : NULL;
	ret->evidence = i < h->num_allocs && h->allocs[i].evidence[0]
				? h->allocs[i].evidence : NULL;
	ret->other_allocator = NULL;
	ret->skipped = NULL;
	ret->skipped_why = NULL;
}

void hd_heap_get_info(const struct hd_heap *h, struct hd_heap_info *ret)
{
	hd_heap_allocator_info(h, 0, ret);
	ret->other_allocator = h->info.other_allocator;
	ret->skipped = h->skipped[0] ? h->skipped : NULL;
	ret->skipped_why = h->skipped_why[0] ? h->skipped_why : NULL;
}

size_t hd_heap_num_allocators(const struct hd_heap *h) { return h->num_allocs; }

void hd_heap_allocator_totals(const struct hd_heap *h, size_t i,
			      struct hd_allocator_totals *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (i >= h->num_allocs)
		return;
	const struct hd_heap_alloc *a = &h->allocs[i];
	ret->used_blocks = a->used.blocks;
	ret->used_bytes = a->used.bytes;
	ret->free_blocks = a->free.blocks;
	ret->free_bytes = a->free.bytes;
	ret->reserve_blocks = a->reserve.blocks;
	ret->reserve_bytes = a->reserve.bytes;
	ret->internal_blocks = a->internal.blocks;
	ret->internal_bytes = a->internal.bytes;
	ret->usable = a->usable;
}

void hd_heap_allocator_lists(const struct hd_heap *h, size_t i, size_t *first,
			     size_t *n)
{
	*first = 1;
	*n = 0;
	if (i < h->num_allocs) {
		*first = h->allocs[i].list_base + 1;
		*n = h->allocs[i].num_lists ? h->allocs[i].num_lists - 1 : 0;
	}
}

// Rows [lo, hi)'s totals: the heap's are the parts' sums, the same
// however the rows are cut.
struct totals_part {
	const struct hd_heap *h;
	size_t lo, hi;
	struct hd_heap_count used, free, reserve, internal;
	uint64_t usable;
};

static void *count_part(void *arg)
{
	struct totals_part *t = arg;
	const struct hd_heap *h = t->h;
	for (size_t i = t->lo; i < t->hi; i++) {
		uint64_t e = hd_heap_extent(h, i);
		struct hd_heap_count *c;
		switch (hd_heap_state(h, i)) {
		case HD_STATE_USED:
			c = &t->used;
			t->usable += hd_heap_usable(h, i);
			break;
		case HD_STATE_FREE: {
			unsigned l = hd_heap_block_list(h, i);
			c = l < h->num_lists && h->lists[l].reserve ? &t->reserve
								      : &t->free;
			break;
		}
		default:
			c = &t->internal;
			break;
		}
		c->blocks++;
		c->bytes += e;
	}
	return NULL;
}

static void add_count(struct hd_heap_count *to, const struct hd_heap_count *c)
{
	to->blocks += c->blocks;
	to->bytes += c->bytes;
}

void hd_heap_count_totals_threads(struct hd_heap *h, unsigned threads)
{
	enum { MAX_PARTS = 64 };
	struct totals_part parts[MAX_PARTS];
	unsigned k = threads < 1 ? 1 : threads > MAX_PARTS ? MAX_PARTS : threads;
	if (k > h->num_blocks)
		k = h->num_blocks ? (unsigned)h->num_blocks : 1;
	for (unsigned j = 0; j < k; j++) {
		parts[j] = (struct totals_part){
			.h = h,
			.lo = h->num_blocks / k * j,
			.hi = j + 1 == k ? h->num_blocks : h->num_blocks / k * (j + 1),
		};
	}
	hd_threads_run(count_part, parts, sizeof(*parts), k);
	struct hd_heap_alloc *a = &h->allocs[0];
	memset(&a->used, 0, sizeof(a->used));
	a->free = a->reserve = a->internal = a->used;
	a->usable = 0;
	for (unsigned j = 0; j < k; j++) {
		add_count(&a->used, &parts[j].used);
		add_count(&a->free, &parts[j].free);
		add_count(&a->reserve, &parts[j].reserve);
		add_count(&a->internal, &parts[j].internal);
		a->usable += parts[j].usable;
	}
}

void hd_heap_count_totals(struct hd_heap *h)
{
	hd_heap_count_totals_threads(h, 1);
}

const char *hd_block_state_name(enum hd_block_state s)
{
	switch (s) {
	case HD_STATE_USED: return "used";
	case HD_STATE_FREE: return "free";
	case HD_STATE_INTERNAL: return "internal";
	}
	return "?";
}
