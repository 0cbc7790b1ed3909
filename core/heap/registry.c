// hd_heap_walk: the backends, most specific first, and the fallback that
// names an allocator heapdom cannot walk. A new backend adds one line
// here (and its files to core/meson.build).
#include <stdio.h>
#include <string.h>

#include "heap/backend.h"

// One line per backend, most specific first: X(name) stands for the
// backend's `const struct hd_heap_backend hd_heap_backend_<name>`. glibc
// is last: it is the default of a Linux process, and its walk decides
// from the data whether a glibc heap is there.
#define HD_HEAP_BACKENDS(X) \
	X(poolalloc) \
	X(jemalloc) \
	X(glibc)

#define DECLARE(name) extern const struct hd_heap_backend hd_heap_backend_##name;
#define ENTRY(name) &hd_heap_backend_##name,
HD_HEAP_BACKENDS(DECLARE)

const struct hd_heap_backend *const hd_heap_backends[] = {
	HD_HEAP_BACKENDS(ENTRY)
};
const size_t hd_heap_num_backends =
	sizeof(hd_heap_backends) / sizeof(hd_heap_backends[0]);

// Used blocks of h.
static size_t num_used(const struct hd_heap *h)
{
	size_t n = 0;
	for (size_t i = 0; i < h->num_blocks; i++)
		n += hd_heap_state(h, i) == HD_STATE_USED;
	return n;
}

// A backend after the chosen one that also finds a heap in use (a program
// with an allocator of its own that also calls glibc's malloc): one heap
// is shown, so the other's blocks are what this report cannot see.
static void other_heap(const struct hd_heap_source *src, size_t chosen,
		       struct hd_heap *h)
{
	for (size_t i = chosen + 1; i < hd_heap_num_backends; i++) {
		const struct hd_heap_backend *b = hd_heap_backends[i];
		char evidence[256];
		if (!b->detect(src, evidence, sizeof(evidence)))
			continue;
		struct hd_heap *o = NULL;
		struct hd_error *err = hd_heap_alloc(&o);
		if (!err)
			err = b->walk(src, o);
		size_t n = err ? 0 : num_used(o);
		hd_error_destroy(err);
		hd_heap_destroy(o);
		if (!n)
			continue;
		snprintf(h->other_allocator, sizeof(h->other_allocator),
			 "%s (its heap holds %zu used blocks)", b->name, n);
		h->info.other_allocator = h->other_allocator;
		return;
	}
}

struct hd_error *hd_heap_walk(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap_options *opts,
			      struct hd_heap **ret)
{
	struct hd_heap_source src = {.t = t, .di = di, .opts = opts};
	const struct hd_heap_backend *b = NULL;
	size_t chosen = 0;
	char evidence[256] = "";
	for (size_t i = 0; i < hd_heap_num_backends && !b; i++)
		if (hd_heap_backends[i]->detect(&src, evidence, sizeof(evidence)))
			b = hd_heap_backends[chosen = i];
	struct hd_heap *h = NULL;
	struct hd_error *err = NULL;
	if (b) {
		err = hd_heap_alloc(&h);
		if (err)
			return err;
		err = b->walk(&src, h);
		if (!err && !h->info.no_allocation_yet)
			other_heap(&src, chosen, h);
	} else {
		err = hd_error_create(HD_ERROR_NOT_FOUND,
				      "%s: no allocator heapdom knows was found",
				      hd_target_name(t));
	}
	// Another allocator: when the detected one's heap is missing or was
	// never initialised, it is the process's malloc; beside a heap in use
	// (a library loaded privately, a prefixed static build), its blocks
	// are what this walk cannot see.
	struct hd_foreign_alloc fa;
	if (hd_heap_find_foreign(t, di, &fa)) {
		bool fresh = !err && h->info.no_allocation_yet;
		if (err || fresh) {
			hd_error_destroy(err);
			err = hd_error_create(HD_ERROR_UNSUPPORTED,
					      "%s: this process allocates with %s (%s), which heapdom does not walk yet%s%s%s",
					      hd_target_name(t), fa.name, fa.evidence,
					      fresh ? "; " : "", fresh ? b->name : "",
					      fresh ? "'s malloc holds nothing (never initialised)" : "");
		} else {
			snprintf(h->other_allocator, sizeof(h->other_allocator),
				 "%s (%s)", fa.name, fa.evidence);
			h->info.other_allocator = h->other_allocator;
		}
	}
	if (err) {
		hd_heap_destroy(h);
		return err;
	}
	*ret = h;
	return NULL;
}
