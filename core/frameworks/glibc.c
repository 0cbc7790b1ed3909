// The allocator module: the allocator's own memory (glibc: arena states,
// heap headers, tcache structures) and the blocks it holds free, grouped
// under one allocator node so they are never mistaken for the
// application's memory or for leaks. Every name comes from the heap's
// backend (hd_heap_info.labels, its metadata and lists), so the module
// serves any allocator, and several in one process: one node each, with
// its own metadata, internal and free blocks under it. It keeps the name
// "glibc" its users know.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom_framework.h"

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	*detected = hd_heap_num_regions(h) > 0 || hd_heap_num_metadata(h) > 0;
	for (size_t a = 0; a < hd_heap_num_allocators(h); a++) {
		struct hd_heap_info info;
		hd_heap_allocator_info(h, a, &info);
		size_t nr = 0;
		const char *kind = "region";
		for (size_t i = 0; i < hd_heap_num_regions(h); i++)
			if (hd_heap_region(h, i)->allocator == a) {
				kind = hd_heap_region(h, i)->kind;
				nr++;
			}
		struct hd_allocator_totals t;
		hd_heap_allocator_totals(h, a, &t);
		size_t kl = strlen(kind);
		hd_fw_note(fw, "%s: %zu %s%s, %" PRIu64 " blocks, found by %s",
			   info.allocator, nr, kind,
			   nr == 1 ? "" : kl && kind[kl - 1] == 's' ? "es" : "s",
			   t.used_blocks + t.free_blocks + t.reserve_blocks +
				   t.internal_blocks,
			   info.method);
	}
	return NULL;
}

// "glibc malloc state": the label of allocator a's metadata regions.
static void state_label(const struct hd_heap *h, size_t a, char *buf,
			size_t len)
{
	struct hd_heap_info info;
	hd_heap_allocator_info(h, a, &info);
	snprintf(buf, len, "%s state", info.labels.allocator);
}

// The allocator's metadata lives outside every block: each range is a
// region with one internal block named by the backend.
static struct hd_error *blocks(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_error *err = NULL;
	for (size_t i = 0; i < hd_heap_num_metadata(h) && !err; i++) {
		const struct hd_heap_metadata *m = hd_heap_metadata(h, i);
		if (m->end <= m->start)
			continue;
		char label[80];
		state_label(h, m->allocator, label, sizeof(label));
		err = hd_fw_add_region(fw, m->start, m->end, label);
		if (!err)
			err = hd_fw_add_block(fw, m->start, m->end - m->start,
					      HD_STATE_INTERNAL, m->name);
	}
	return err;
}

// One allocator's node and its groups (metadata, internal, free), and one
// node per free list, made when a block needs it.
struct alloc_nodes {
	uint32_t top, state, internal, free_node;
	uint32_t none; // its free blocks on no list
};

static struct hd_error *alloc_node(struct hd_fw *fw, const struct hd_heap *h,
				   size_t a, struct alloc_nodes *n)
{
	struct hd_heap_info info;
	hd_heap_allocator_info(h, a, &info);
	const struct hd_allocator_labels *lb = &info.labels;
	n->none = HD_FW_NO_NODE;
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE,
					  lb->allocator, "allocator",
					  HD_OWNER_FRAMEWORK, &n->top);
	if (!err)
		err = hd_fw_node(fw, n->top, HD_DOM_NONE, lb->metadata,
				 "allocator", HD_OWNER_FRAMEWORK, &n->state);
	if (!err)
		err = hd_fw_node(fw, n->top, HD_DOM_NONE, lb->internal,
				 "allocator", HD_OWNER_FRAMEWORK, &n->internal);
	if (!err)
		err = hd_fw_node(fw, n->top, HD_DOM_NONE, lb->free, "free",
				 HD_OWNER_FRAMEWORK, &n->free_node);
	return err;
}

// The allocator whose metadata starts at addr (a sub-block this module
// added): the metadata are added in order, so the search starts at *hint.
static size_t metadata_allocator(const struct hd_heap *h, uint64_t addr,
				 size_t *hint)
{
	size_t n = hd_heap_num_metadata(h);
	for (size_t k = 0; k < n; k++) {
		size_t i = (*hint + k) % n;
		const struct hd_heap_metadata *m = hd_heap_metadata(h, i);
		if (m->start == addr) {
			*hint = i + 1;
			return m->allocator;
		}
	}
	return 0;
}

static struct hd_error *analyze(struct hd_fw *fw)
{
	const struct hd_heap *h = hd_fw_heap(fw);
	const struct hd_graph *g = hd_fw_graph(fw);
	size_t na = hd_heap_num_allocators(h), nl = hd_heap_num_free_lists(h);
	struct alloc_nodes nodes[HD_MAX_ALLOCATORS];
	uint32_t *lists = malloc((nl ? nl : 1) * sizeof(*lists));
	if (!lists)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	if (na > HD_MAX_ALLOCATORS)
		na = HD_MAX_ALLOCATORS;
	for (size_t a = 0; a < na && !err; a++)
		err = alloc_node(fw, h, a, &nodes[a]);
	for (size_t l = 0; l < nl; l++)
		lists[l] = HD_FW_NO_NODE;
	for (size_t id = 0; id < hd_heap_num_blocks(h) && !err; id++) {
		struct hd_block b;
		hd_heap_block(h, id, &b);
		if (b.state == HD_STATE_USED || b.allocator >= na)
			continue;
		struct alloc_nodes *an = &nodes[b.allocator];
		struct hd_heap_info info;
		uint32_t v = hd_graph_block_vertex(g, id);
		if (b.state == HD_STATE_INTERNAL) {
			err = hd_fw_assign(fw, an->internal, v);
			const char *name = hd_heap_block_label(h, id);
			if (!err)
				err = hd_fw_name(fw, v, name ? name : "internal");
		} else if (b.state == HD_STATE_FREE) {
			size_t l = b.list < nl ? b.list : 0;
			const struct hd_free_list *fl = hd_heap_free_list(h, l);
			const char *label = fl && fl->label ? fl->label : "free";
			// List 0 (a free block on no list) is per allocator.
			uint32_t *node = l ? &lists[l] : &an->none;
			if (*node == HD_FW_NO_NODE)
				err = hd_fw_node(fw, an->free_node, HD_DOM_NONE,
						 label, "free",
						 HD_OWNER_FRAMEWORK, node);
			if (!err)
				err = hd_fw_assign(fw, *node, v);
			hd_heap_allocator_info(h, b.allocator, &info);
			const char *name = hd_heap_block_label(h, id);
			if (!err)
				err = hd_fw_name(fw, v, name ? name
							    : info.labels.free_block);
		}
	}
	free(lists);
	// This module's own sub-allocator blocks: each allocator's metadata,
	// under its allocator's node.
	size_t hint = 0;
	for (size_t i = 0; i < hd_fw_num_subblocks(fw) && !err; i++) {
		struct hd_fw_subblock sb;
		if (!hd_fw_subblock(fw, i, &sb) || !sb.mine)
			continue;
		size_t a = metadata_allocator(h, sb.addr, &hint);
		err = hd_fw_assign(fw, nodes[a < na ? a : 0].state, sb.vertex);
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
