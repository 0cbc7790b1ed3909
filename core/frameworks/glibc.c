// The glibc malloc module: the allocator's own memory — arena states,
// heap headers, tcache structures — and the chunks it holds free, grouped
// under one allocator node so they are never mistaken for the
// application's memory or for leaks.
#include <stdio.h>

#include "heapdom_framework.h"

// First block whose chunk starts at or after addr.
static size_t first_block_from(const struct hd_heap *h, uint64_t addr)
{
	size_t lo = 0, hi = hd_heap_num_blocks(h);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct hd_block b;
		hd_heap_block(h, mid, &b);
		if (b.addr - 16 < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	*detected = hd_heap_num_arenas(h) > 0;
	hd_fw_note(fw, "%zu arenas, %zu blocks, found by %s", hd_heap_num_arenas(h),
		   hd_heap_num_blocks(h), info.method);
	return NULL;
}

// The arena states and heap headers live outside every chunk: each is a
// region with one internal block.
static struct hd_error *add_struct(struct hd_fw *fw, uint64_t start,
				   uint64_t end, const char *type)
{
	if (end <= start)
		return NULL;
	struct hd_error *err = hd_fw_add_region(fw, start, end, "glibc malloc state");
	if (!err)
		err = hd_fw_add_block(fw, start, end - start, HD_STATE_INTERNAL, type);
	return err;
}

static struct hd_error *blocks(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	struct hd_error *err = NULL;
	if (info.main_arena && info.main_arena_size)
		err = add_struct(fw, info.main_arena,
				 info.main_arena + info.main_arena_size,
				 "struct malloc_state (main_arena)");
	if (!err && info.mp && info.mp_size)
		err = add_struct(fw, info.mp, info.mp + info.mp_size,
				 "struct malloc_par (mp_)");
	for (size_t i = 0; i < hd_heap_num_segments(h) && !err; i++) {
		const struct hd_heap_segment *s = hd_heap_segment(h, i);
		if (s->mmapped || s->arena == HD_NO_ARENA)
			continue;
		const struct hd_arena *a = hd_heap_arena(h, s->arena);
		if (!a || a->is_main)
			continue;
		// A non-main heap starts with its heap_info (and, for the
		// arena's first heap, its malloc_state) before the first chunk.
		size_t id = first_block_from(h, s->start);
		if (id >= hd_heap_num_blocks(h))
			continue;
		struct hd_block b;
		hd_heap_block(h, id, &b);
		uint64_t first_chunk = b.addr - 16;
		if (first_chunk <= s->start || first_chunk >= s->end)
			continue;
		bool has_state = a->addr >= s->start && a->addr < first_chunk;
		err = add_struct(fw, s->start, first_chunk,
				 has_state ? "heap_info + struct malloc_state"
					   : "heap_info");
	}
	return err;
}

static const char *const list_labels[HD_LIST_COUNT] = {
	[HD_LIST_TCACHE] = "free: tcache",
	[HD_LIST_FASTBIN] = "free: fastbins",
	[HD_LIST_UNSORTED] = "free: unsorted bin",
	[HD_LIST_SMALL] = "free: small bins",
	[HD_LIST_LARGE] = "free: large bins",
	[HD_LIST_TOP] = "free: top chunks",
	[HD_LIST_UNKNOWN] = "free: on no list found",
};

static struct hd_error *analyze(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	const struct hd_graph *g = hd_fw_graph(fw);
	uint32_t top, state, internal, free_node, lists[HD_LIST_COUNT];
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE,
					  "glibc malloc", "allocator",
					  HD_OWNER_FRAMEWORK, &top);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, "arena state and heap headers",
				 "allocator", HD_OWNER_FRAMEWORK, &state);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, "tcache structures and fenceposts",
				 "allocator", HD_OWNER_FRAMEWORK, &internal);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, "free chunks", "free",
				 HD_OWNER_FRAMEWORK, &free_node);
	for (size_t l = 0; l < HD_LIST_COUNT; l++)
		lists[l] = HD_FW_NO_NODE;
	for (size_t id = 0; id < hd_heap_num_blocks(h) && !err; id++) {
		struct hd_block b;
		hd_heap_block(h, id, &b);
		uint32_t v = hd_graph_block_vertex(g, id);
		if (b.state == HD_STATE_INTERNAL) {
			err = hd_fw_assign(fw, internal, v);
			// The walker marks two kinds internal: each thread's
			// tcache structure, and the small fenceposts closing a
			// non-main heap.
			if (!err)
				err = hd_fw_name(fw, v, b.chunk >= 64
						 ? "struct tcache_perthread_struct"
						 : "fencepost");
		} else if (b.state == HD_STATE_FREE) {
			size_t l = b.list < HD_LIST_COUNT && list_labels[b.list]
				? b.list : HD_LIST_UNKNOWN;
			if (lists[l] == HD_FW_NO_NODE)
				err = hd_fw_node(fw, free_node, HD_DOM_NONE,
						 list_labels[l], "free",
						 HD_OWNER_FRAMEWORK, &lists[l]);
			if (!err)
				err = hd_fw_assign(fw, lists[l], v);
			if (!err)
				err = hd_fw_name(fw, v, "free chunk");
		}
	}
	// This module's own sub-allocator blocks: the arena states.
	for (size_t i = 0; i < hd_fw_num_subblocks(fw) && !err; i++) {
		struct hd_fw_subblock sb;
		if (hd_fw_subblock(fw, i, &sb) && sb.mine)
			err = hd_fw_assign(fw, state, sb.vertex);
	}
	return err;
}

const struct hd_framework hd_framework_glibc = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "glibc",
	.version = "1.0",
	.description = "glibc malloc: arena states, heap headers, tcache structures, free chunks",
	.detect = detect,
	.blocks = blocks,
	.analyze = analyze,
};
