// The test's own framework module for semantic_fixture.c: it exercises
// every call of the module API — a sub-allocator inside a malloc'd block
// and one in a mapping of its own, refused blocks, nodes under a parent,
// a block shared by two sibling nodes (rises to their parent) and one
// shared by unrelated nodes (stays unassigned), marks and names.
#include <string.h>

#include "heapdom_framework.h"

#define REG_MAGIC 0x5245474953545259ull
#define GROUP_MAGIC 0x47524f5550475250ull
#define POOL_MAGIC 0x504f4f4c504f4f4cull
#define SLOT_USED 0x55534544u
#define SLOT_SIZE 64
#define ROBJ_SIZE 256
#define MAX_ITEMS 1000

// struct registry / group / item / pool of the fixture, as offsets.
enum { REG_A = 8, REG_B = 16, REG_POOL = 24, REG_REGION = 32, REG_REGION_SIZE = 40 };
enum { GRP_ITEMS = 8, GRP_SHARED = 16, GRP_CROSS = 24 };
enum { POOL_NSLOTS = 8, POOL_SLOTS = 16 };

static struct hd_error *registry(struct hd_fw *fw, uint64_t *reg)
{
	uint64_t sym, magic;
	struct hd_error *err = hd_fw_symbol(fw, "semantic_fixture", "g_reg", &sym, NULL);
	if (!err)
		err = hd_fw_read_u64(fw, sym, reg);
	if (!err)
		err = hd_fw_read_u64(fw, *reg, &magic);
	if (!err && magic != REG_MAGIC)
		err = hd_error_at(HD_ERROR_FORMAT, *reg, "not a registry");
	return err;
}

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	uint64_t reg;
	struct hd_error *err = registry(fw, &reg);
	*detected = !err;
	if (err) {
		hd_fw_note(fw, "no registry: %s", err->message);
		hd_error_destroy(err);
	} else {
		hd_fw_note(fw, "registry at 0x%llx", (unsigned long long)reg);
	}
	return NULL;
}

static struct hd_error *blocks(struct hd_fw *fw)
{
	uint64_t reg, pool, nslots, region, size;
	struct hd_error *err = registry(fw, &reg);
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_POOL, &pool);
	if (!err)
		err = hd_fw_read_u64(fw, pool + POOL_NSLOTS, &nslots);
	if (err)
		return err;
	for (uint64_t i = 0; i < nslots && i < 64 && !err; i++) {
		uint64_t at = pool + POOL_SLOTS + i * SLOT_SIZE;
		uint32_t tag;
		err = hd_fw_read(fw, at, &tag, sizeof(tag));
		if (!err)
			err = hd_fw_add_block(fw, at, SLOT_SIZE,
					      tag == SLOT_USED ? HD_STATE_USED : HD_STATE_FREE,
					      "probe_slot");
	}
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_REGION, &region);
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_REGION_SIZE, &size);
	if (!err)
		err = hd_fw_add_region(fw, region, region + size, "probe region");
	for (int i = 0; i < 4 && !err; i++)
		err = hd_fw_add_block(fw, region + i * ROBJ_SIZE, ROBJ_SIZE,
				      HD_STATE_USED, "probe_object");
	// Two blocks the engine must refuse: one overlapping an object, one
	// in no heap block and no region of ours.
	if (!err)
		err = hd_fw_add_block(fw, region + ROBJ_SIZE / 2, ROBJ_SIZE,
				      HD_STATE_USED, "overlapping");
	if (!err)
		err = hd_fw_add_block(fw, reg + 8, 1 << 20, HD_STATE_USED, "outside");
	return err;
}

static struct hd_error *assign_group(struct hd_fw *fw, uint32_t node, uint64_t grp)
{
	struct hd_error *err = hd_fw_assign(fw, node, hd_fw_vertex_at(fw, grp));
	uint64_t item;
	if (!err)
		err = hd_fw_read_u64(fw, grp + GRP_ITEMS, &item);
	for (int n = 0; item && n < MAX_ITEMS && !err; n++) {
		uint32_t v = hd_fw_vertex_at(fw, item);
		err = hd_fw_assign(fw, node, v);
		if (!err)
			err = hd_fw_name(fw, v, "probe_item");
		if (!err)
			err = hd_fw_read_u64(fw, item, &item);
	}
	uint64_t shared;
	if (!err)
		err = hd_fw_read_u64(fw, grp + GRP_SHARED, &shared);
	if (!err)
		err = hd_fw_assign(fw, node, hd_fw_vertex_at(fw, shared));
	return err;
}

static struct hd_error *analyze(struct hd_fw *fw)
{
	uint64_t reg, a, b, pool, cross;
	uint32_t top, na, nb, other;
	struct hd_error *err = registry(fw, &reg);
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_A, &a);
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_B, &b);
	if (!err)
		err = hd_fw_read_u64(fw, reg + REG_POOL, &pool);
	if (!err)
		err = hd_fw_read_u64(fw, a + GRP_CROSS, &cross);
	if (!err)
		err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE, "registry", "registry",
				 HD_OWNER_FRAMEWORK, &top);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, "group a", "group",
				 HD_OWNER_APPLICATION, &na);
	if (!err)
		err = hd_fw_node(fw, top, HD_DOM_NONE, "group b", "group",
				 HD_OWNER_APPLICATION, &nb);
	if (!err)
		err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE, "other", "other",
				 HD_OWNER_APPLICATION, &other);
	if (!err)
		err = hd_fw_assign(fw, top, hd_fw_vertex_at(fw, reg));
	if (!err)
		err = hd_fw_assign(fw, top, hd_fw_vertex_at(fw, pool));
	if (!err)
		err = assign_group(fw, na, a);
	if (!err)
		err = assign_group(fw, nb, b);
	// The cross block: claimed by group a and by an unrelated node.
	if (!err)
		err = hd_fw_assign(fw, na, hd_fw_vertex_at(fw, cross));
	if (!err)
		err = hd_fw_assign(fw, other, hd_fw_vertex_at(fw, cross));
	if (!err)
		err = hd_fw_mark(fw, hd_fw_vertex_at(fw, a), 16);
	return err;
}

static const struct hd_framework probe = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "probe",
	.version = "1.0",
	.description = "the semantic engine test's module for semantic_fixture",
	.detect = detect,
	.blocks = blocks,
	.analyze = analyze,
};

__attribute__((visibility("default"))) const struct hd_framework *heapdom_framework_init(void)
{
	return &probe;
}
