// Leaks: used blocks no root reaches, split into those nothing points at
// and those only other leaked blocks point at, grouped by size.
#include <inttypes.h>
#include <stdlib.h>

#include "report/trace_tables.h"
#include "types/typing.h"
#include "util/sort.h"

struct group {
	uint64_t chunk, usable, count, bytes, unreferenced;
	uint32_t entry; // typing entry, HD_ENTRY_NONE when untyped
};

// Leaked blocks by the site the tracer saw them allocated at (valgrind's
// loss records): index into the trace's sites, UINT32_MAX for blocks whose
// site it did not record.
struct site_group {
	uint32_t site;
	uint64_t count, bytes;
};

static int site_group_cmp(const void *x, const void *y)
{
	const struct site_group *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->site < b->site ? -1 : a->site > b->site;
}

// Groups the leaked blocks (vertices list) by allocation site, largest
// first; blocks the tracer did not see allocated are not counted.
static struct hd_error *site_groups(const struct hd_analysis *a,
				    const struct hd_alloc_sites *as, const uint32_t *list,
				    size_t nl, struct site_group **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!as->tr.num_blocks)
		return NULL;
	// One slot per site, and one for blocks with no site recorded.
	size_t ns = as->tr.num_sites + 1;
	struct site_group *g = calloc(ns, sizeof(*g));
	if (!g)
		return &hd_error_no_memory;
	for (size_t i = 0; i < ns; i++)
		g[i].site = i + 1 < ns ? (uint32_t)i : UINT32_MAX;
	for (size_t j = 0; j < nl; j++) {
		struct hd_block b;
		hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, list[j]), &b);
		const struct traced_block *tb = hd_alloc_sites_find(as, b.addr);
		if (!tb)
			continue;
		struct site_group *sg = &g[tb->site == UINT32_MAX ? ns - 1 : tb->site];
		sg->count++;
		sg->bytes += b.extent;
	}
	size_t n = 0;
	for (size_t i = 0; i < ns; i++)
		if (g[i].count)
			g[n++] = g[i];
	hd_qsort(g, n, sizeof(*g), site_group_cmp);
	*ret = g;
	*ret_n = n;
	return NULL;
}

static void site_group_label(const struct hd_alloc_sites *as, const struct site_group *g,
			     char *buf, size_t len)
{
	if (g->site == UINT32_MAX)
		snprintf(buf, len, "(site not recorded: its table was full)");
	else
		hd_trace_site_label(&as->tr.sites[g->site], buf, len);
}

static int group_cmp(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->chunk < b->chunk ? -1 : a->chunk > b->chunk;
}

// Groups are keyed by extent and usable size: two blocks of one extent
// may differ in usable bytes (glibc: an mmapped chunk has 8 less).
static int key_cmp(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	if (a->chunk != b->chunk)
		return a->chunk < b->chunk ? -1 : 1;
	if (a->usable != b->usable)
		return a->usable < b->usable ? -1 : 1;
	return a->entry < b->entry ? -1 : a->entry > b->entry;
}

static uint32_t block_entry(const struct hd_analysis *a, size_t id)
{
	return a->ty ? a->ty->block_entry[id] : HD_ENTRY_NONE;
}

static void group_type(FILE *out, const struct hd_analysis *a,
		       const struct group *g, bool json)
{
	const char *name = g->entry != HD_ENTRY_NONE ? a->ty->entries[g->entry].name
						     : NULL;
	if (json) {
		if (name)
			hd_json_string(out, name);
		else
			fputs("null", out);
	} else {
		fprintf(out, "%s", name ? name : "(untyped)");
	}
}

static const struct hd_analysis *g_an;
static const uint64_t *g_referenced;

// A bit per vertex that some edge points at. A leak report needs only
// whether a leaked block has a predecessor at all, which one pass over the
// forward edges tells with a bit per vertex; the reverse graph would cost
// four bytes per edge more and a pass of its own.
static struct hd_error *referenced_bits(const struct hd_graph *g, uint64_t **ret)
{
	uint32_t nv = hd_graph_num_vertices(g);
	uint64_t *bits = calloc(nv / 64 + 1, sizeof(*bits));
	if (!bits)
		return &hd_error_no_memory;
	for (uint32_t v = 0; v < nv; v++) {
		const uint32_t *t;
		size_t k;
		hd_graph_successors(g, v, &t, &k);
		for (size_t j = 0; j < k; j++) {
			uint32_t w = t[j] & ~HD_GRAPH_INTERIOR;
			if (w != v)
				bits[w / 64] |= 1ull << (w % 64);
		}
	}
	*ret = bits;
	return NULL;
}

static bool unreferenced(const uint64_t *referenced, uint32_t v)
{
	return !(referenced[v / 64] & (1ull << (v % 64)));
}

// Unreferenced leaks first, then by retained size, then by address.
static int leak_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	bool ua = unreferenced(g_referenced, a), ub = unreferenced(g_referenced, b);
	if (ua != ub)
		return ua ? -1 : 1;
	uint64_t ra = hd_dom_leak_retained(g_an->d, a);
	uint64_t rb = hd_dom_leak_retained(g_an->d, b);
	if (ra != rb)
		return ra > rb ? -1 : 1;
	return a < b ? -1 : a > b;
}

static bool leaked(const struct hd_analysis *a, size_t id)
{
	struct hd_block b;
	hd_heap_block(a->h, id, &b);
	return b.state == HD_STATE_USED &&
	       hd_dom_idom(a->d, hd_graph_block_vertex(a->g, id)) == HD_DOM_NONE;
}

struct hd_error *hd_render_leaks(FILE *out, struct hd_session *s,
				 const struct hd_render_options *o)
{
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get(s, &a);
	if (err)
		return err;
	// Unreferenced leaks are those without predecessors.
	uint64_t *referenced;
	err = referenced_bits(a.g, &referenced);
	if (err)
		return err;
	struct hd_alloc_sites as;
	err = hd_alloc_sites_init(&as, s);
	if (err) {
		free(referenced);
		return err;
	}
	size_t n = hd_heap_num_blocks(a.h);
	uint64_t nleak = 0, bytes = 0, nunref = 0;
	for (size_t i = 0; i < n; i++)
		nleak += leaked(&a, i);
	// One entry per leaked block, merged into groups after sorting.
	struct group *groups = calloc(nleak ? nleak : 1, sizeof(*groups));
	uint32_t *list = malloc((nleak ? nleak : 1) * sizeof(*list));
	size_t ng = 0, nl = 0;
	if (!groups || !list) {
		free(groups);
		free(list);
		free(referenced);
		hd_alloc_sites_deinit(&as);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < n; i++) {
		if (!leaked(&a, i))
			continue;
		struct hd_block b;
		hd_heap_block(a.h, i, &b);
		uint32_t v = hd_graph_block_vertex(a.g, i);
		bool unref = unreferenced(referenced, v);
		groups[ng++] = (struct group){
			.chunk = b.extent, .usable = b.usable, .count = 1,
			.bytes = b.extent, .unreferenced = unref,
			.entry = block_entry(&a, i),
		};
		list[nl++] = v;
		bytes += b.extent;
		nunref += unref;
	}
	hd_qsort(groups, ng, sizeof(*groups), key_cmp);
	size_t out_n = 0;
	for (size_t i = 0; i < ng; i++) {
		if (out_n && key_cmp(&groups[out_n - 1], &groups[i]) == 0) {
			groups[out_n - 1].count++;
			groups[out_n - 1].bytes += groups[i].bytes;
			groups[out_n - 1].unreferenced += groups[i].unreferenced;
		} else {
			groups[out_n++] = groups[i];
		}
	}
	ng = out_n;
	hd_qsort(groups, ng, sizeof(*groups), group_cmp);
	g_an = &a;
	g_referenced = referenced;
	hd_qsort(list, nl, sizeof(*list), leak_cmp);
	struct site_group *sgroups;
	size_t nsg;
	err = site_groups(&a, &as, list, nl, &sgroups, &nsg);
	if (err) {
		free(groups);
		free(list);
		free(referenced);
		hd_alloc_sites_deinit(&as);
		return err;
	}
	bool json = o->format == HD_FORMAT_JSON;
	if (json) {
		fputc('{', out);
		hd_json_heap_header(out, a.t, a.h);
		fprintf(out, ", \"leaked_blocks\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64
			", \"unreferenced_blocks\": %" PRIu64 ", \"groups\": [",
			nleak, bytes, nunref);
		for (size_t i = 0; i < ng; i++) {
			fprintf(out, "%s{\"chunk\": %" PRIu64 ", \"size\": %" PRIu64
				", \"type\": ", i ? ", " : "", groups[i].chunk,
				groups[i].usable);
			group_type(out, &a, &groups[i], true);
			fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
				", \"unreferenced\": %" PRIu64 "}",
				groups[i].count, groups[i].bytes, groups[i].unreferenced);
		}
		fputs("]", out);
		hd_alloc_sites_json_note(out, &as);
		fputs(", \"sites\": [", out);
		for (size_t i = 0; i < nsg; i++) {
			fputs(i ? ", {" : "{", out);
			if (sgroups[i].site != UINT32_MAX)
				hd_trace_site_json(out, &as.tr.sites[sgroups[i].site]);
			else
				fputs("\"pc\": null", out);
			fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
				sgroups[i].count, sgroups[i].bytes);
		}
		fputs("], \"leaks\": [", out);
	} else {
		char b[32];
		hd_format_size(bytes, b, sizeof(b));
		hd_text_problems(out, a.t, a.h, o->color);
		fprintf(out, "%" PRIu64 " leaked blocks, %s: %" PRIu64
			" unreferenced, %" PRIu64 " referenced only by leaked blocks\n",
			nleak, b, nunref, nleak - nunref);
		if (ng)
			hd_heading(out, o->color, "\nBy size");
		if (ng)
			fprintf(out, "  %12s %12s %10s %12s %14s  %s\n", "chunk",
				"usable", "blocks", "bytes", "unreferenced", "type");
		for (size_t i = 0; i < ng; i++) {
			hd_format_size(groups[i].bytes, b, sizeof(b));
			fprintf(out, "  %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12s %14" PRIu64 "  ",
				groups[i].chunk, groups[i].usable, groups[i].count, b,
				groups[i].unreferenced);
			group_type(out, &a, &groups[i], false);
			fputc('\n', out);
		}
		hd_alloc_sites_text_note(out, &as, o->color);
		if (nsg) {
			uint64_t traced = 0;
			for (size_t i = 0; i < nsg; i++)
				traced += sgroups[i].count;
			hd_heading(out, o->color,
				   "\nBy allocation site (%" PRIu64 " of the %" PRIu64
				   " leaked blocks allocated while the tracer was on)",
				   traced, nleak);
			fprintf(out, "  %10s %12s  %s\n", "blocks", "bytes", "allocated at");
		}
		for (size_t i = 0; i < nsg; i++) {
			char label[512];
			hd_format_size(sgroups[i].bytes, b, sizeof(b));
			site_group_label(&as, &sgroups[i], label, sizeof(label));
			fprintf(out, "  %10" PRIu64 " %12s  %s\n", sgroups[i].count, b, label);
		}
		if (nleak)
			hd_heading(out, o->color, "\nLeaked blocks (unreferenced first, by retained size)");
		if (nleak)
			fprintf(out, "  %-16s %10s %12s  %-28s %s\n", "address", "size",
				"retained", "state", "type");
	}
	free(groups);
	free(sgroups);
	// Every leaked block: the unreferenced ones (leak roots) first.
	for (size_t j = 0; j < nl; j++) {
		uint32_t v = list[j];
		bool unref = unreferenced(referenced, v);
		struct hd_block b;
		hd_heap_block(a.h, (size_t)hd_graph_vertex_block(a.g, v), &b);
		uint64_t ret = hd_dom_leak_retained(a.d, v);
		char type[512];
		bool typed = hd_block_type(&a, (size_t)hd_graph_vertex_block(a.g, v),
					   type, sizeof(type));
		if (json) {
			fprintf(out, "%s\n{\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
				", \"chunk\": %" PRIu64 ", \"type\": ",
				j ? "," : "", b.addr, b.usable, b.extent);
			if (typed)
				hd_json_string(out, type);
			else
				fputs("null", out);
			fprintf(out, ", \"unreferenced\": %s"
				", \"retained\": %" PRIu64 ", \"retained_blocks\": %" PRIu32,
				unref ? "true" : "false", ret,
				hd_dom_leak_retained_blocks(a.d, v));
			if (as.present)
				hd_alloc_site_json(out, &as, hd_alloc_sites_find(&as, b.addr));
			fputc('}', out);
		} else {
			char sz[32], rs[32];
			hd_format_size(b.usable, sz, sizeof(sz));
			hd_format_size(ret, rs, sizeof(rs));
			fprintf(out, "  0x%-14" PRIx64 " %10s %12s  %-28s %s", b.addr, sz, rs,
				unref ? "unreferenced" : "referenced by leaked blocks",
				type);
			const struct traced_block *tb = hd_alloc_sites_find(&as, b.addr);
			if (tb) {
				char site[600];
				hd_alloc_site_text(&as, tb, site, sizeof(site));
				fprintf(out, "  allocated at %s", site);
			}
			fputc('\n', out);
		}
	}
	free(list);
	free(referenced);
	hd_alloc_sites_deinit(&as);
	if (json)
		fputs("\n]}\n", out);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
