// gperftools' tcmalloc as a backend of the allocator seam (backend.h):
// detection (a loaded libtcmalloc*.so, whether linked or preloaded), the
// version from the library's "gperftools X.Y" string, then the walk
// (locate.c finds the state, walk.c reads it).
#include <stdio.h>
#include <string.h>

#include "heap/tcmalloc/tcmalloc_internal.h"

static const struct hd_free_list lists[TC_LIST_COUNT] = {
	[TC_LIST_NONE] = {"none", NULL, false},
	[TC_LIST_THREAD] = {"thread cache", "free: thread caches", false},
	[TC_LIST_TRANSFER] = {"transfer cache", "free: transfer cache", false},
	[TC_LIST_CENTRAL] = {"central", "free: central free lists", false},
	[TC_LIST_PAGEHEAP] = {"page heap", "free: page heap spans", false},
	// Spans whose pages tcmalloc gave back to the system (madvise):
	// address space it keeps, not free blocks.
	[TC_LIST_RETURNED] = {"returned", "free: returned spans", true},
};

static const struct hd_heap_shape shapes[] = {{.head = 0, .tail = 0}};

extern const struct hd_heap_backend hd_heap_backend_tcmalloc;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static const struct hd_module *find_module(const struct hd_heap_source *src)
{
	size_t n = hd_target_num_modules(src->t);
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(src->t, i);
		const char *b = base_name(m->name);
		if (strncmp(b, "libtcmalloc", 11) == 0 && strstr(b, ".so"))
			return m;
	}
	return NULL;
}

static bool detect(const struct hd_heap_source *src, char *evidence,
		   size_t len)
{
	const struct hd_module *m = find_module(src);
	if (m)
		snprintf(evidence, len, "%s", base_name(m->name));
	return m != NULL;
}

// The layout walk.c reads is gperftools 2.10's.
#define TC_KNOWN "2.10"

static struct hd_error *walk(const struct hd_heap_source *src,
			     struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_tcmalloc, 3, shapes, 1, lists,
			TC_LIST_COUNT);
	const struct hd_module *m = find_module(src);
	if (!m)
		return hd_error_create(HD_ERROR_NOT_FOUND, "%s: no tcmalloc found",
				       hd_target_name(src->t));
	char version[32];
	if (!m->file || !tc_find_version(m->file, version, sizeof(version)))
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%s: this process allocates with tcmalloc (%s), but no \"gperftools X.Y\" version string was found in %s; heapdom walks gperftools " TC_KNOWN,
				       hd_target_name(src->t), base_name(m->name),
				       m->file ? m->file : "(no file on this machine)");
	if (strcmp(version, TC_KNOWN) != 0)
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "%s: this process allocates with gperftools %s's tcmalloc (%s), whose layout heapdom does not know (it walks " TC_KNOWN ")",
				       hd_target_name(src->t), version, base_name(m->name));
	snprintf(h->version, sizeof(h->version), "%s", version);
	h->info.version = h->version;
	snprintf(h->version_source, sizeof(h->version_source),
		 "version string \"gperftools %s\" in %.120s", version, m->file);
	h->info.version_source = h->version_source;
	h->info.method = "heuristic";
	struct tc_globals g;
	bool inited;
	struct hd_error *err = tc_locate(src, m, &g, &inited);
	if (err)
		return err;
	if (!inited) {
		h->info.no_allocation_yet = true;
		snprintf(h->empty_reason, sizeof(h->empty_reason),
			 "tcmalloc (gperftools %s, %s) is not initialised yet: nothing was allocated",
			 version, base_name(m->name));
		h->info.empty_reason = h->empty_reason;
		return NULL;
	}
	err = tc_walk(src, h, &g);
	if (!err && !hd_heap_fact_string(h, HD_NO_REGION, "how_found", g.method))
		err = &hd_error_no_memory;
	return err;
}

// The request is not narrowed: tcmalloc's class table is not one rule
// heapdom could invert exactly for every class (0: unknown).
static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	(void)h;
	(void)id;
	return 0;
}

static const char *block_label(const struct hd_heap *h, size_t id)
{
	switch (hd_heap_block_list(h, id)) {
	case TC_LIST_THREAD: return "object in a thread cache";
	case TC_LIST_TRANSFER: return "object in the transfer cache";
	case TC_LIST_CENTRAL: return "free object of a span";
	case TC_LIST_PAGEHEAP: return "free span";
	case TC_LIST_RETURNED: return "returned span";
	}
	return NULL;
}

const struct hd_heap_backend hd_heap_backend_tcmalloc = {
	.name = "tcmalloc",
	.detect = detect,
	.walk = walk,
	.min_request = min_request,
	// Small classes are at most an eighth of their size apart (and 8 or
	// 16 bytes for the smallest); large blocks are rounded to 8 KiB pages.
	.request_slack = 16,
	.block_label = block_label,
	.labels = {
		.allocator = "tcmalloc (gperftools)",
		.metadata = "tcmalloc page heap, page map, spans, thread caches",
		.internal = "tcmalloc internals",
		.free = "free tcmalloc objects and spans",
		.free_block = "free tcmalloc object",
	},
};
