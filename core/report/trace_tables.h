// The allocation tracer's tables (heapdom_trace.h) as heapdom reads them
// from a process or a core: the counters with the threads' shards added,
// the call sites located in the debug info, and the tags of the heap
// walk's used blocks. Shared by `heapdom trace` (trace.c) and the
// allocation sites of heap blocks (alloc_sites.c).
#ifndef HD_REPORT_TRACE_TABLES_H
#define HD_REPORT_TRACE_TABLES_H

#include "heapdom_trace.h"
#include "report/report_internal.h"

// The header of the state: everything before the sites.
struct trace_head {
	uint64_t magic;
	uint32_t version, size;
	uint32_t enabled, epoch;
	uint64_t pid;
	uint64_t tag_key, untracked_frees;
	struct hd_trace_count classes[HD_TRACE_CLASSES];
	struct hd_trace_count ages[HD_TRACE_AGES];
};

// One call site as reported: its counters, what of it is still live, and
// where it is.
struct site {
	struct hd_trace_site s;
	uint64_t live_count, live_bytes;
	struct hd_location loc;
	bool located;
	uint64_t alloc_count, alloc_bytes; // all allocating ops
};

struct birth {
	uint32_t epoch;
	uint64_t count, bytes;
};

// A used block the tracer saw allocated: where and when.
struct traced_block {
	uint64_t addr;
	uint32_t site; // index into trace.sites; UINT32_MAX: no site recorded
	uint32_t birth;
};

struct trace {
	uint64_t addr;
	struct trace_head head;
	// Per op, the sum over every site slot, and the calls whose site
	// found no slot (the HD_TRACE_NO_SITE row).
	uint64_t calls[HD_TRACE_OPS], dropped_sites;
	struct site *sites;
	size_t num_sites;
	uint32_t *slot_site; // table slot -> index into sites, UINT32_MAX
	struct birth *births; // live allocations by birth epoch, sorted
	size_t num_births, cap_births;
	uint64_t live_count, live_bytes;
	// With blocks (hd_trace_load): every used block with a tag, in
	// address order.
	struct traced_block *blocks;
	size_t num_blocks, cap_blocks;
};

// Reads the tracer of the session's target into *tr (blocks: also fill
// tr->blocks); an error when the target has none (HD_ERROR_NOT_FOUND) or
// its tables cannot be read. hd_trace_deinit frees it.
struct hd_error *hd_trace_load(struct hd_session *ses, struct trace *tr, bool blocks);
void hd_trace_deinit(struct trace *tr);
// "function (file:line)", or what is known of the site's place.
void hd_trace_site_label(const struct site *s, char *buf, size_t len);
// The site's "pc", "function", "file", "line" and "module" JSON members
// (no braces).
void hd_trace_site_json(FILE *out, const struct site *s);

// Where the tracer saw the heap's used blocks allocated (alloc_sites.c),
// for the block, leak and why reports.
struct hd_alloc_sites {
	bool present;   // the target has a tracer
	char *error;    // it has one, but its tables could not be read
	struct trace tr; // when present and read: tr.blocks sorted by address
};

// Reads the tracer of the session's target, if it has one. Fails only for
// memory: a tracer whose tables cannot be read sets as->error, and the
// reports go on without sites.
struct hd_error *hd_alloc_sites_init(struct hd_alloc_sites *as, struct hd_session *s);
void hd_alloc_sites_deinit(struct hd_alloc_sites *as);
// The tracer's record of the used block at addr, or NULL.
const struct traced_block *hd_alloc_sites_find(const struct hd_alloc_sites *as,
					       uint64_t addr);
// "function (file:line), epoch N" of a block's record (b not NULL).
void hd_alloc_site_text(const struct hd_alloc_sites *as, const struct traced_block *b,
			char *buf, size_t len);
// The block's "site" JSON member: null, or its site's members and "birth".
void hd_alloc_site_json(FILE *out, const struct hd_alloc_sites *as,
			const struct traced_block *b);
// What a report says of the tracer: text, a warning line when its tables
// could not be read; JSON, the "tracer" member (null when there is none,
// {"epoch": N, "blocks": N} or {"error": "..."}).
void hd_alloc_sites_text_note(FILE *out, const struct hd_alloc_sites *as, bool color);
void hd_alloc_sites_json_note(FILE *out, const struct hd_alloc_sites *as);

#endif
