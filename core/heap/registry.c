// hd_heap_walk: the backends, most specific first; the walk of every
// backend whose allocator the process uses (or those --allocator names),
// merged into one heap (merge.c); and the fallback that names an
// allocator heapdom cannot walk. A new backend adds one line here (and its
// files to core/meson.build).
#include <stdio.h>
#include <string.h>

#include "heap/backend.h"

// One line per backend, most specific first: X(name) stands for the
// backend's `const struct hd_heap_backend hd_heap_backend_<name>`. glibc
// is last: it is the default of a Linux process, and its walk decides
// from the data whether a glibc heap is there. The order is also the
// order of allocators holding equal bytes (the primary is the first).
#define HD_HEAP_BACKENDS(X) \
	X(poolalloc) \
	X(jemalloc) \
	X(mimalloc) \
	X(musl) \
	X(tcmalloc) \
	X(glibc)

#define DECLARE(name) extern const struct hd_heap_backend hd_heap_backend_##name;
#define ENTRY(name) &hd_heap_backend_##name,
HD_HEAP_BACKENDS(DECLARE)

const struct hd_heap_backend *const hd_heap_backends[] = {
	HD_HEAP_BACKENDS(ENTRY)
};
const size_t hd_heap_num_backends =
	sizeof(hd_heap_backends) / sizeof(hd_heap_backends[0]);

// The backends' names, "poolalloc, glibc", for messages.
const char *hd_heap_known_allocators(void)
{
	static char names[256];
	if (!names[0])
		for (size_t i = 0; i < hd_heap_num_backends; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s%s", i ? ", " : "", hd_heap_backends[i]->name);
	return names;
}

// Whether name is one of the comma-separated names.
static bool listed(const char *names, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = names; p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

struct hd_error *hd_heap_check_allocators(const char *names)
{
	if (!names || !*names)
		return hd_error_create(HD_ERROR_INVALID,
				       "--allocator takes allocator names, comma-separated: %s",
				       hd_heap_known_allocators());
	for (const char *p = names; p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		size_t i = 0;
		while (i < hd_heap_num_backends &&
		       !(strlen(hd_heap_backends[i]->name) == len &&
			 strncmp(p, hd_heap_backends[i]->name, len) == 0))
			i++;
		if (i == hd_heap_num_backends)
			return hd_error_create(HD_ERROR_INVALID,
					       "--allocator: unknown allocator '%.*s': heapdom walks %s",
					       (int)len, p, hd_heap_known_allocators());
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

// What the walks of one hd_heap_walk found.
struct walks {
	struct hd_heap *parts[HD_HEAP_MAX_ALLOCATORS];
	size_t n;
	struct hd_heap *empty;    // the first heap never initialised
	struct hd_error *first;   // the first walk's error
	// A backend that detected its allocator (with evidence) but whose
	// walk found no heap: its blocks are not seen (a problem later).
	char failed[512];
};

static void walks_deinit(struct walks *w)
{
	for (size_t i = 0; i < w->n; i++)
		hd_heap_destroy(w->parts[i]);
	hd_heap_destroy(w->empty);
	hd_error_destroy(w->first);
}

#define TOTALS_SPLIT_MIN (1u << 18)

// Walks backend b. Named (by --allocator): finding nothing is an error.
static struct hd_error *walk_one(const struct hd_heap_source *src,
				 const struct hd_heap_backend *b,
				 const char *evidence, bool named,
				 struct walks *w)
{
	struct hd_heap *h = NULL;
	struct hd_error *err = hd_heap_alloc(&h);
	if (err)
		return err;
	err = b->walk(src, h);
	if (err) {
		hd_heap_destroy(h);
		if (named) {
			struct hd_error *e = hd_error_create(
				err->code, "--allocator %s: %s", b->name, err->message);
			hd_error_destroy(err);
			return e;
		}
		if (evidence[0])
			snprintf(w->failed + strlen(w->failed),
				 sizeof(w->failed) - strlen(w->failed),
				 "%s%s (%s): %s", w->failed[0] ? "; " : "",
				 b->name, evidence, err->message);
		if (!w->first)
			w->first = err;
		else
			hd_error_destroy(err);
		return NULL;
	}
	snprintf(h->allocs[0].evidence, sizeof(h->allocs[0].evidence), "%s",
		 evidence);
	// An allocator that holds nothing (glibc's malloc never called) adds
	// nothing beside one that does.
	if (h->info.no_allocation_yet || !h->num_blocks) {
		if (named) {
			struct hd_error *e = hd_error_create(
				HD_ERROR_NOT_FOUND,
				"--allocator %s: %s's heap in %s holds no block%s%s",
				b->name, b->name, hd_target_name(src->t),
				h->info.empty_reason ? ": " : "",
				h->info.empty_reason ? h->info.empty_reason : "");
			hd_heap_destroy(h);
			return e;
		}
		if (!w->empty)
			w->empty = h;
		else
			hd_heap_destroy(h);
		return NULL;
	}
	if (w->n == HD_HEAP_MAX_ALLOCATORS) {
		hd_heap_destroy(h);
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "more than %d allocators hold blocks in %s",
				       HD_HEAP_MAX_ALLOCATORS, hd_target_name(src->t));
	}
	// A thread is worth starting for a few hundred thousand rows (or
	// when the user asked for threads: the totals do not depend on them).
	hd_heap_count_totals_threads(h, src->threads_asked ||
					       h->num_blocks >= TOTALS_SPLIT_MIN
					   ? src->threads : 1);
	w->parts[w->n++] = h;
	return NULL;
}

// The primary allocator first: the one whose used blocks hold the most
// bytes (ties: registry order). Stable, for a handful of parts.
static void order_parts(struct walks *w)
{
	for (size_t i = 1; i < w->n; i++)
		for (size_t j = i; j > 0 && w->parts[j]->allocs[0].used.bytes >
						    w->parts[j - 1]->allocs[0].used.bytes; j--) {
			struct hd_heap *t = w->parts[j];
			w->parts[j] = w->parts[j - 1];
			w->parts[j - 1] = t;
		}
}

static struct hd_error *walk_all(const struct hd_heap_source *src,
				 const char *names, struct walks *w,
				 char *skipped, size_t skipped_len)
{
	for (size_t i = 0; i < hd_heap_num_backends; i++) {
		const struct hd_heap_backend *b = hd_heap_backends[i];
		char evidence[256] = "";
		bool detected = b->detect(src, evidence, sizeof(evidence));
		bool named = names && listed(names, b->name);
		if (names && !named) {
			// Left out by the user: said, so that no one takes the
			// report for the whole heap.
			if (detected)
				snprintf(skipped + strlen(skipped),
					 skipped_len - strlen(skipped),
					 "%s%s", skipped[0] ? ", " : "", b->name);
			continue;
		}
		if (!named && !detected)
			continue;
		struct hd_error *err = walk_one(src, b, evidence, named, w);
		if (err)
			return err;
	}
	return NULL;
}

struct hd_error *hd_heap_walk(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap_options *opts,
			      struct hd_heap **ret)
{
	return hd_heap_walk_threads(t, di, opts, 1, false, ret);
}

struct hd_error *hd_heap_walk_threads(struct hd_target *t,
				      struct hd_debuginfo *di,
				      const struct hd_heap_options *opts,
				      unsigned threads, bool asked,
				      struct hd_heap **ret)
{
	struct hd_heap_source src = {.t = t, .di = di, .opts = opts,
				     .threads = threads ? threads : 1,
				     .threads_asked = asked};
	const char *names = opts && opts->allocators && *opts->allocators
				    ? opts->allocators : NULL;
	struct hd_error *err = names ? hd_heap_check_allocators(names) : NULL;
	if (err)
		return err;
	struct walks w = {.n = 0};
	char skipped[128] = "";
	err = walk_all(&src, names, &w, skipped, sizeof(skipped));
	struct hd_heap *h = NULL;
	if (!err && w.n) {
		order_parts(&w);
		err = hd_heap_merge(w.parts, w.n, &h);
		w.n = 0;
	} else if (!err && w.empty) {
		h = w.empty;
		w.empty = NULL;
	} else if (!err && w.first) {
		err = w.first;
		w.first = NULL;
	} else if (!err) {
		err = hd_error_create(HD_ERROR_NOT_FOUND,
				      "%s: no allocator heapdom knows was found",
				      hd_target_name(t));
	}
	if (!err && w.failed[0])
		hd_heap_problem_add(h, 0,
				    "detected but no heap found, its blocks are not seen: %s",
				    w.failed);
	if (!err && skipped[0])
	{
		snprintf(h->skipped, sizeof(h->skipped), "%s", skipped);
		snprintf(h->skipped_why, sizeof(h->skipped_why),
			 "--allocator %s", names);
	}
	walks_deinit(&w);
	// Another allocator: when no walked allocator holds anything, it is
	// the process's malloc; beside a heap in use (a library loaded
	// privately, a prefixed static build), its blocks are what this walk
	// cannot see.
	struct hd_foreign_alloc fa;
	if (hd_heap_find_foreign(t, di, &fa)) {
		bool fresh = !err && h->info.no_allocation_yet;
		if (err || fresh) {
			hd_error_destroy(err);
			err = hd_error_create(HD_ERROR_UNSUPPORTED,
					      "%s: this process allocates with %s (%s), which heapdom does not walk yet%s%s%s",
					      hd_target_name(t), fa.name, fa.evidence,
					      fresh ? "; " : "", fresh ? h->info.allocator : "",
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
