// The block list, as a table or as JSON (format in docs/json-format.md).
#include <inttypes.h>
#include <stdio.h>

#include "report/trace_tables.h"

static void block_arena(const struct hd_heap *h, const struct hd_block *b,
			char *buf, size_t len)
{
	if (b->region == HD_NO_REGION)
		snprintf(buf, len, "mmapped");
	else
		snprintf(buf, len, "0x%" PRIx64, hd_heap_region(h, b->region)->addr);
}

struct hd_error *hd_render_blocks(FILE *out, struct hd_session *session,
				  const struct hd_render_options *o)
{
	const struct hd_heap *h;
	struct hd_error *err = hd_session_heap(session, &h);
	if (err)
		return err;
	struct hd_target *t = hd_session_target(session);
	struct hd_analysis a = {.t = t, .h = h, .ty = hd_analysis_typing(session),
				 .fw = hd_analysis_names(session)};
	struct hd_alloc_sites as;
	err = hd_alloc_sites_init(&as, session);
	if (err)
		return err;
	size_t n = hd_heap_num_blocks(h);
	bool json = o->format == HD_FORMAT_JSON;
	if (json) {
		fputc('{', out);
		hd_json_heap_header(out, t, h);
		hd_alloc_sites_json_note(out, &as);
		fputs(", \"blocks\": [", out);
	} else {
		hd_text_problems(out, t, h, o->color);
		hd_alloc_sites_text_note(out, &as, o->color);
		fprintf(out, "%-18s %12s %12s  %-8s %-8s %-16s %s\n", "address", "size",
			"extent", "state", "list", "region", "type");
	}
	// Each block's allocator by name (several in one process).
	const char *alloc_names[HD_MAX_ALLOCATORS];
	size_t nal = hd_heap_num_allocators(h);
	for (size_t a = 0; a < nal && a < HD_MAX_ALLOCATORS; a++) {
		struct hd_heap_info info;
		hd_heap_allocator_info(h, a, &info);
		alloc_names[a] = info.allocator;
	}
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		if (o->state_filter >= 0 && (int)b.state != o->state_filter)
			continue;
		char type[512] = "-";
		bool typed = false;
		const struct traced_block *tb = NULL;
		if (b.state == HD_STATE_USED) {
			typed = hd_block_type(&a, i, type, sizeof(type));
			tb = hd_alloc_sites_find(&as, b.addr);
		}
		if (json) {
			fprintf(out,
				"%s\n{\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"chunk\": %" PRIu64 ", \"state\": \"%s\"",
				first ? "" : ",", b.addr, b.usable, b.extent,
				hd_block_state_name(b.state));
			if (b.state == HD_STATE_FREE)
				fprintf(out, ", \"list\": \"%s\"",
					b.list_name);
			if (b.region == HD_NO_REGION)
				fputs(", \"arena\": null", out);
			else
				fprintf(out, ", \"arena\": \"0x%" PRIx64 "\"",
					hd_heap_region(h, b.region)->addr);
			fprintf(out, ", \"mmapped\": %s, \"allocator\": ",
				b.mmapped ? "true" : "false");
			hd_json_string(out, b.allocator < nal ? alloc_names[b.allocator] : NULL);
			fputs(", \"type\": ", out);
			if (typed)
				hd_json_string(out, type);
			else
				fputs("null", out);
			if (as.present)
				hd_alloc_site_json(out, &as, tb);
			fputc('}', out);
		} else {
			char arena[32];
			block_arena(h, &b, arena, sizeof(arena));
			fprintf(out, "0x%016" PRIx64 " %12" PRIu64 " %12" PRIu64 "  %-8s %-8s %-16s %s",
				b.addr, b.usable, b.extent,
				hd_block_state_name(b.state),
				b.state == HD_STATE_FREE ? b.list_name : "-",
				arena, type);
			if (tb) {
				char site[600];
				hd_alloc_site_text(&as, tb, site, sizeof(site));
				fprintf(out, "  allocated at %s", site);
			}
			fputc('\n', out);
		}
		first = false;
	}
	if (json)
		fputs("\n]}\n", out);
	hd_alloc_sites_deinit(&as);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
