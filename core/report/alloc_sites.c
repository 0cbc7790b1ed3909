// Allocation sites of heap blocks: the tags the tracer wrote in the heap's
// used blocks (read by hd_trace_load), looked up by block address for the
// block, leak and why reports.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/trace_tables.h"
#include "util/sort.h"

static int block_cmp(const void *x, const void *y)
{
	const struct traced_block *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

struct hd_error *hd_alloc_sites_init(struct hd_alloc_sites *as, struct hd_session *s)
{
	memset(as, 0, sizeof(*as));
	uint64_t addr;
	struct hd_error *err = hd_trace_locate(s, &addr);
	if (err) {
		// No tracer: the reports have no sites, and say nothing of it.
		hd_error_destroy(err);
		return NULL;
	}
	as->present = true;
	err = hd_trace_load(s, &as->tr, true);
	if (err == &hd_error_no_memory)
		return err;
	if (err) {
		as->error = strdup(err->message ? err->message : "unreadable");
		hd_error_destroy(err);
		memset(&as->tr, 0, sizeof(as->tr));
		return as->error ? NULL : &hd_error_no_memory;
	}
	hd_qsort(as->tr.blocks, as->tr.num_blocks, sizeof(*as->tr.blocks), block_cmp);
	return NULL;
}

void hd_alloc_sites_deinit(struct hd_alloc_sites *as)
{
	if (as->present && !as->error)
		hd_trace_deinit(&as->tr);
	free(as->error);
}

const struct traced_block *hd_alloc_sites_find(const struct hd_alloc_sites *as,
					       uint64_t addr)
{
	size_t lo = 0, hi = as->tr.num_blocks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct traced_block *b = &as->tr.blocks[mid];
		if (b->addr == addr)
			return b;
		if (b->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void hd_alloc_site_text(const struct hd_alloc_sites *as, const struct traced_block *b,
			char *buf, size_t len)
{
	char where[512] = "an unrecorded site";
	if (b->site != UINT32_MAX)
		hd_trace_site_label(&as->tr.sites[b->site], where, sizeof(where));
	snprintf(buf, len, "%s, epoch %" PRIu32, where, b->birth);
}

void hd_alloc_site_json(FILE *out, const struct hd_alloc_sites *as,
			const struct traced_block *b)
{
	fputs(", \"site\": ", out);
	if (!b) {
		fputs("null", out);
		return;
	}
	fputc('{', out);
	if (b->site != UINT32_MAX)
		hd_trace_site_json(out, &as->tr.sites[b->site]);
	else
		fputs("\"pc\": null", out);
	fprintf(out, ", \"birth\": %" PRIu32 "}", b->birth);
}

void hd_alloc_sites_text_note(FILE *out, const struct hd_alloc_sites *as, bool color)
{
	if (as->error)
		fprintf(out, "%swarning:%s allocation sites not shown: %s\n",
			color ? "\033[33m" : "", color ? "\033[0m" : "", as->error);
}

void hd_alloc_sites_json_note(FILE *out, const struct hd_alloc_sites *as)
{
	fputs(", \"tracer\": ", out);
	if (!as->present) {
		fputs("null", out);
	} else if (as->error) {
		fputs("{\"error\": ", out);
		hd_json_string(out, as->error);
		fputc('}', out);
	} else {
		fprintf(out, "{\"epoch\": %" PRIu32 ", \"blocks\": %zu}", as->tr.head.epoch,
			as->tr.num_blocks);
	}
}
