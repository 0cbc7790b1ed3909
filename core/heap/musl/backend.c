// musl's mallocng as a backend of the allocator seam (backend.h): its list
// names, its one slot shape and its exact sizes.
#include "heap/musl/musl_internal.h"

static const struct hd_free_list lists[MUSL_NUM_LISTS] = {
	[MUSL_LIST_NONE] = {"none", NULL, false},
	[MUSL_LIST_AVAIL] = {"avail", "free: avail_mask", false},
	[MUSL_LIST_FREED] = {"freed", "free: freed_mask", false},
	// Slots past a group's active_idx: the group's memory the allocator
	// has not started handing out (untouched pages), not free blocks.
	[MUSL_LIST_INACTIVE] = {"inactive", "free: inactive slots", true},
};

// A slot's extent starts at its 4-byte in-band header and ends where the
// next slot's header begins; the block's usable bytes are the rest, less
// the bytes the slot reserves (the exact size column).
static const struct hd_heap_shape shapes[] = {
	{.head = MUSL_IB, .tail = 0},
};

extern const struct hd_heap_backend hd_heap_backend_musl;

static struct hd_error *walk(const struct hd_heap_source *src,
			     struct hd_heap *h)
{
	hd_heap_declare(h, &hd_heap_backend_musl, 4, shapes, 1, lists,
			MUSL_NUM_LISTS);
	if (!hd_heap_exact_sizes(h))
		return &hd_error_no_memory;
	return musl_walk(src, h);
}

// A used block's size is the request that made it (mallocng records it).
static uint64_t min_request(const struct hd_heap *h, size_t id)
{
	return hd_heap_state(h, id) == HD_STATE_USED ? hd_heap_usable(h, id) : 0;
}

static const char *block_label(const struct hd_heap *h, size_t id)
{
	return hd_heap_state(h, id) == HD_STATE_FREE ? "free slot"
						     : "slot holding a group";
}

const struct hd_heap_backend hd_heap_backend_musl = {
	.name = "musl",
	.detect = musl_detect,
	.walk = walk,
	.min_request = min_request,
	.request_slack = 0,
	.block_label = block_label,
	.labels = {
		.allocator = "musl mallocng",
		.metadata = "malloc context, meta areas and group headers",
		.internal = "slots holding groups",
		.free = "free slots",
		.free_block = "free slot",
	},
};
