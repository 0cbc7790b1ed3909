// glibc's malloc as a backend of the allocator seam (backend.h): its list
// names and chunk shapes, the request rounding typing needs, and the
// names of the blocks it keeps.
#include "heap/glibc/glibc_internal.h"

static const struct hd_free_list lists[HD_LIST_COUNT] = {
	[HD_LIST_NONE] = {"none", NULL, false},
	[HD_LIST_TCACHE] = {"tcache", "free: tcache", false},
	[HD_LIST_FASTBIN] = {"fastbin", "free: fastbins", false},
	[HD_LIST_UNSORTED] = {"unsorted", "free: unsorted bin", false},
	[HD_LIST_SMALL] = {"small", "free: small bins", false},
	[HD_LIST_LARGE] = {"large", "free: large bins", false},
	// The top chunk is memory the arena has not carved yet.
	[HD_LIST_TOP] = {"top", "free: top chunks", true},
	[HD_LIST_UNKNOWN] = {"unknown", "free: on no list found", false},
};

static const struct hd_heap_shape shapes[] = {
	[GLIBC_SHAPE_ARENA] = {.head = 16, .tail = 8},
	[GLIBC_SHAPE_MMAPPED] = {.head = 16, .tail = 0},
};

const char *glibc_list_name(enum glibc_list l)
{
	return l < HD_LIST_COUNT ? lists[l].name : "?";
}

extern const struct hd_heap_backend hd_heap_backend_glibc;

void glibc_heap_declare(struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_glibc, 4, shapes,
			sizeof(shapes) / sizeof(shapes[0]), lists, HD_LIST_COUNT);
}

// glibc is the malloc of every Linux process that brings no other; its
// walk decides from the data (or says no glibc arena was found).
static bool detect(const struct hd_heap_source *src, char *evidence,
		   size_t len)
{
	(void)src;
	if (len)
		evidence[0] = '\0';
	return true;
}

// glibc rounds a request r up to the chunk (r + 8 + 15) & ~15 (at least
// 32), and an mmapped chunk further up to a page (nb + 8 rounded to 4096).
static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	uint64_t chunk = glibc_chunk_size(h, id);
	if (glibc_chunk_mmapped(h, id))
		return chunk > 4096 + 32 ? chunk - 4096 - 32 : 0;
	return chunk <= 32 ? 0 : chunk - 23;
}

// The walker marks two kinds of chunk internal: each thread's tcache
// structure, and the small fenceposts closing a non-main heap.
static const char *block_label(const struct hd_heap *h, size_t id)
{
	if (hd_heap_state(h, id) == HD_STATE_FREE)
		return "free chunk";
	return glibc_chunk_size(h, id) >= 64 ? "struct tcache_perthread_struct"
					      : "fencepost";
}

const struct hd_heap_backend hd_heap_backend_glibc = {
	.name = "glibc",
	.detect = detect,
	.walk = glibc_walk_heap,
	.min_request = min_request,
	.request_slack = 24,
	.block_label = block_label,
	.labels = {
		.allocator = "glibc malloc",
		.metadata = "arena state and heap headers",
		.internal = "tcache structures and fenceposts",
		.free = "free chunks",
		.free_block = "free chunk",
	},
};
