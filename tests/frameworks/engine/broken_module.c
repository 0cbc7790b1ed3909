// Modules that fail on purpose, one way each (chosen with -D when built):
// the analysis must report them and go on as if they were not there.
#include "heapdom_framework.h"

#if defined(FAIL_DETECT)
#define NAME "broken-detect"
#elif defined(FAIL_BLOCKS)
#define NAME "broken-blocks"
#elif defined(FAIL_ANALYZE)
#define NAME "broken-analyze"
#elif defined(BAD_READ)
#define NAME "broken-read"
#elif defined(BAD_ABI)
#define NAME "broken-abi"
#endif

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	*detected = true;
#ifdef FAIL_DETECT
	return hd_error_create(HD_ERROR_INVALID, "this module fails in detect on purpose");
#else
	return NULL;
#endif
}

static struct hd_error *blocks(struct hd_fw *fw)
{
#ifdef FAIL_BLOCKS
	// Something added before the failure must be undone.
	const struct hd_heap *h = hd_fw_heap(fw);
	struct hd_block b;
	hd_heap_block(h, hd_heap_num_blocks(h) / 2, &b);
	struct hd_error *err = hd_fw_add_block(fw, b.addr, 16, HD_STATE_USED, "bogus");
	if (err)
		return err;
	return hd_error_create(HD_ERROR_INVALID, "this module fails in blocks on purpose");
#else
	return NULL;
#endif
}

static struct hd_error *analyze(struct hd_fw *fw)
{
#if defined(FAIL_ANALYZE)
	// A node, an assignment, a mark and a name, then the failure: all of
	// it must be undone.
	uint32_t node;
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE, "doomed",
					  "doomed", HD_OWNER_FRAMEWORK, &node);
	const struct hd_heap *h = hd_fw_heap(fw);
	for (size_t id = 0; id < hd_heap_num_blocks(h) && !err; id++) {
		uint32_t v = hd_graph_block_vertex(hd_fw_graph(fw), id);
		err = hd_fw_assign(fw, node, v);
		if (!err)
			err = hd_fw_mark(fw, v, UINT64_MAX);
		if (!err)
			err = hd_fw_name(fw, v, "doomed");
	}
	if (err)
		return err;
	return hd_error_create(HD_ERROR_INVALID, "this module fails in analyze on purpose");
#elif defined(BAD_READ)
	// Reading memory that is not there is an error, never a crash.
	uint64_t word;
	return hd_fw_read_u64(fw, 0x10, &word);
#else
	return NULL;
#endif
}

static const struct hd_framework broken = {
#ifdef BAD_ABI
	.abi = HD_FRAMEWORK_ABI + 1000,
#else
	.abi = HD_FRAMEWORK_ABI,
#endif
	.name = NAME,
	.version = "0.1",
	.description = "fails on purpose",
	.detect = detect,
	.blocks = blocks,
	.analyze = analyze,
};

__attribute__((visibility("default"))) const struct hd_framework *heapdom_framework_init(void)
{
	return &broken;
}
