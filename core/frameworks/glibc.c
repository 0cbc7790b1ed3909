// The allocator module: the allocator's own memory (glibc: arena states,
// heap headers, tcache structures) and the blocks it holds free, grouped
// under one allocator node so they are never mistaken for the
// application's memory or for leaks. Every name comes from the heap's
// backend (hd_heap_info.labels, its metadata and lists), so the module
// serves any allocator; it keeps the name "glibc" its users know.
#include <stdio.h>
#include <string.h>

#include "heapdom_framework.h"

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	*detected = hd_heap_num_regions(h) > 0 || hd_heap_num_metadata(h) > 0;
	size_t nr = hd_heap_num_regions(h);
	const char *kind = nr ? hd_heap_region(h, 0)->kind : "region";
	size_t kl = strlen(kind);
	hd_fw_note(fw, "%s: %zu %s%s, %zu blocks, found by %s", info.allocator,
		   nr, kind, nr == 1 ? "" : kl && kind[kl - 1] == 's' ? "es" : "s",
		   hd_heap_num_blocks(h), info.method);
	return NULL;
}

// The allocator's metadata lives outside every block: each range is a
// region with one internal block named by the backend.
static struct hd_error *blocks(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	char label[64];
	snprintf(label, sizeof(label), "%s state", info.labels.allocator);
	struct hd_error *err = NULL;
	for (size_t i = 0; i < hd_heap_num_metadata(h) && !err; i++) {
		const struct hd_heap_metadata *m = hd_heap_metadata(h, i);
		if (m->end <= m->start)
			continue;
		err = hd_fw_add_region(fw, m->start, m->end, label);
		if (!err)
			err = hd_fw_add_block(fw, m->start, m->end - m->start,
					      HD_STATE_INTERNAL, m->name);
	}
	return err;
}

static struct hd_error *analyze(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	const struct hd_graph *g = hd_fw_graph(fw);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	const struct hd_allocator_labels *lb = &info.labels;
	size_t nl = hd_heap_num_free_lists(h);
	uint32_t top, state, internal, free_node, lists[16];
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE,
					  lb->allocator, "allocator",
					  HD_OWNER_FRAMEWORK, &top);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, lb->metadata,
				 "allocator", HD_OWNER_FRAMEWORK, &state);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, lb->internal,
				 "allocator", HD_OWNER_FRAMEWORK, &internal);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, lb->free, "free",
				 HD_OWNER_FRAMEWORK, &free_node);
	for (size_t l = 0; l < 16; l++)
		lists[l] = HD_FW_NO_NODE;
	for (size_t id = 0; id < hd_heap_num_blocks(h) && !err; id++) {
		struct hd_block b;
		hd_heap_block(h, id, &b);
		uint32_t v = hd_graph_block_vertex(g, id);
		if (b.state == HD_STATE_INTERNAL) {
			err = hd_fw_assign(fw, internal, v);
			const char *name = hd_heap_block_label(h, id);
			if (!err)
				err = hd_fw_name(fw, v, name ? name : "internal");
		} else if (b.state == HD_STATE_FREE) {
			size_t l = b.list < nl && b.list < 16 ? b.list : 0;
			const struct hd_free_list *fl = hd_heap_free_list(h, l);
			const char *label = fl && fl->label ? fl->label : "free";
			if (lists[l] == HD_FW_NO_NODE)
				err = hd_fw_node(fw, free_node, HD_DOM_NONE,
						 label, "free",
						 HD_OWNER_FRAMEWORK, &lists[l]);
			if (!err)
				err = hd_fw_assign(fw, lists[l], v);
			const char *name = hd_heap_block_label(h, id);
			if (!err)
				err = hd_fw_name(fw, v, name ? name : lb->free_block);
		}
	}
	// This module's own sub-allocator blocks: the allocator's metadata.
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
	.description = "the allocator (glibc malloc, ...): its state outside the heap, its internal and free blocks",
	.detect = detect,
	.blocks = blocks,
	.analyze = analyze,
};
