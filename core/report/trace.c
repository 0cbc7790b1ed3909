// `heapdom trace`: the tables libheapdom-trace.so keeps in the traced
// process (core/include/heapdom_trace.h), read from the process or its
// core and reported by call site, source file, size class and age, with
// each site's allocations still live in the heap.
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "report/trace_tables.h"
#include "util/sort.h"

#define DEFAULT_TOP 20

static const char *const op_names[HD_TRACE_OPS] = {
	[HD_TRACE_MALLOC] = "malloc",
	[HD_TRACE_CALLOC] = "calloc",
	[HD_TRACE_REALLOC] = "realloc",
	[HD_TRACE_MEMALIGN] = "memalign",
	[HD_TRACE_FREE] = "free",
};

// Rows of the report: a site, a file, a size class or an age.
struct row {
	char label[512];
	uint64_t count[HD_TRACE_OPS], bytes[HD_TRACE_OPS];
	uint64_t alloc_count, alloc_bytes, live_count, live_bytes;
	const struct site *site; // by site
};

static int row_by_bytes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->alloc_bytes != y->alloc_bytes)
		return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
	if (x->alloc_count != y->alloc_count)
		return x->alloc_count > y->alloc_count ? -1 : 1;
	return strcmp(x->label, y->label);
}

static void row_add(struct row *r, const struct site *s)
{
	for (int op = 0; op < HD_TRACE_OPS; op++) {
		r->count[op] += s->s.op[op].count;
		r->bytes[op] += s->s.op[op].bytes;
	}
	r->alloc_count += s->alloc_count;
	r->alloc_bytes += s->alloc_bytes;
	r->live_count += s->live_count;
	r->live_bytes += s->live_bytes;
}

// One row per site, or per source file (sites without one grouped by
// module).
static struct hd_error *make_rows(const struct trace *tr, bool by_file,
				  struct row **ret, size_t *n)
{
	struct row *rows = calloc(tr->num_sites ? tr->num_sites : 1, sizeof(*rows));
	if (!rows)
		return &hd_error_no_memory;
	size_t k = 0;
	for (size_t i = 0; i < tr->num_sites; i++) {
		const struct site *s = &tr->sites[i];
		char label[512];
		if (!by_file)
			hd_trace_site_label(s, label, sizeof(label));
		else if (s->located && s->loc.file)
			snprintf(label, sizeof(label), "%s", s->loc.file);
		else
			snprintf(label, sizeof(label), "(no line table: %s)",
				 s->located ? s->loc.module : "no module");
		size_t j = 0;
		if (by_file)
			while (j < k && strcmp(rows[j].label, label) != 0)
				j++;
		else
			j = k;
		if (j == k) {
			memcpy(rows[k].label, label, sizeof(label));
			rows[k].site = by_file ? NULL : s;
			k++;
		}
		row_add(&rows[j], s);
	}
	hd_qsort(rows, k, sizeof(*rows), row_by_bytes);
	*ret = rows;
	*n = k;
	return NULL;
}

static void json_ops(FILE *out, const uint64_t *count, const uint64_t *bytes)
{
	fputc('{', out);
	for (int op = 0; op < HD_TRACE_OPS; op++)
		fprintf(out, "%s\"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			op ? ", " : "", op_names[op], count[op], bytes[op]);
	fputc('}', out);
}

static void json_rows(FILE *out, const char *name, const struct row *rows,
		      size_t n, size_t top)
{
	fprintf(out, ", \"%s\": [", name);
	for (size_t i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];
		fputs(i ? ",\n  {" : "\n  {", out);
		if (r->site) {
			hd_trace_site_json(out, r->site);
		} else {
			fputs("\"file\": ", out);
			hd_json_string(out, r->label);
		}
		fputs(", \"ops\": ", out);
		json_ops(out, r->count, r->bytes);
		fprintf(out, ", \"allocated\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}, \"live\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}",
			r->alloc_count, r->alloc_bytes, r->live_count, r->live_bytes);
	}
	fputs("\n]", out);
}

static uint64_t class_min(int k) { return k == 0 ? 0 : 1ull << (k - 1); }
static uint64_t class_max(int k) { return k == 0 ? 0 : k == 64 ? UINT64_MAX : (1ull << k) - 1; }

static void render_json(FILE *out, struct hd_session *ses, const struct trace *tr,
			const struct row *sites, size_t nsites,
			const struct row *files, size_t nfiles, size_t top)
{
	const struct trace_head *h = &tr->head;
	const struct hd_heap *heap;
	fputc('{', out);
	if (!hd_session_heap(ses, &heap)) {
		hd_json_heap_header(out, hd_session_target(ses), heap);
		fputs(", ", out);
	}
	fprintf(out, "\"tracer\": {\"address\": \"0x%" PRIx64 "\", \"enabled\": %s, \"epoch\": %u, \"pid\": %" PRIu64
		", \"calls\": ", tr->addr, h->enabled ? "true" : "false", h->epoch, h->pid);
	uint64_t zero[HD_TRACE_OPS] = {0};
	json_ops(out, tr->calls, zero);
	fprintf(out, ", \"dropped_sites\": %" PRIu64
		", \"untracked_frees\": %" PRIu64
		", \"sites\": %zu, \"live\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}",
		tr->dropped_sites, h->untracked_frees,
		tr->num_sites, tr->live_count, tr->live_bytes);
	json_rows(out, "sites", sites, nsites, top);
	json_rows(out, "files", files, nfiles, top);
	fputs(", \"sizes\": [", out);
	bool first = true;
	for (int k = 0; k < HD_TRACE_CLASSES; k++) {
		if (!h->classes[k].count)
			continue;
		fprintf(out, "%s\n  {\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"count\": %" PRIu64
			", \"bytes\": %" PRIu64 "}", first ? "" : ",", class_min(k), class_max(k),
			h->classes[k].count, h->classes[k].bytes);
		first = false;
	}
	fputs("\n], \"ages\": [", out);
	first = true;
	for (int a = 0; a < HD_TRACE_AGES; a++) {
		if (!h->ages[a].count)
			continue;
		fprintf(out, "%s\n  {\"age\": %d, \"or_more\": %s, \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			first ? "" : ",", a, a == HD_TRACE_AGES - 1 ? "true" : "false",
			h->ages[a].count, h->ages[a].bytes);
		first = false;
	}
	fputs("\n], \"live_by_birth\": [", out);
	for (size_t i = 0; i < tr->num_births; i++)
		fprintf(out, "%s\n  {\"epoch\": %u, \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			i ? "," : "", tr->births[i].epoch, tr->births[i].count, tr->births[i].bytes);
	fputs("\n]}\n", out);
}

static void text_rows(FILE *out, const char *what, const struct row *rows,
		      size_t n, size_t top, bool color)
{
	hd_heading(out, color, "Allocations by %s", what);
	fprintf(out, "  %10s %10s %8s %8s %8s %8s %10s %10s  %s\n", "allocs", "bytes",
		"malloc", "calloc", "realloc", "memalign", "frees", "live", what);
	for (size_t i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];
		char b[32], l[32];
		hd_format_size(r->alloc_bytes, b, sizeof(b));
		hd_format_size(r->live_bytes, l, sizeof(l));
		fprintf(out, "  %10" PRIu64 " %10s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %10" PRIu64 " %10s  %s\n",
			r->alloc_count, b, r->count[HD_TRACE_MALLOC], r->count[HD_TRACE_CALLOC],
			r->count[HD_TRACE_REALLOC], r->count[HD_TRACE_MEMALIGN],
			r->count[HD_TRACE_FREE], l, r->label);
	}
	if (n > top)
		fprintf(out, "  … %zu more (--top N, --all)\n", n - top);
}

static void text_sizes(FILE *out, const struct trace_head *h, bool color)
{
	hd_heading(out, color, "Allocations by size class");
	fprintf(out, "  %21s %10s %10s\n", "size", "count", "bytes");
	for (int k = 0; k < HD_TRACE_CLASSES; k++) {
		if (!h->classes[k].count)
			continue;
		char range[48], b[32];
		if (k == 0)
			snprintf(range, sizeof(range), "0");
		else
			snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, class_min(k), class_max(k));
		hd_format_size(h->classes[k].bytes, b, sizeof(b));
		fprintf(out, "  %21s %10" PRIu64 " %10s\n", range, h->classes[k].count, b);
	}
}

static void text_ages(FILE *out, const struct trace *tr, bool color)
{
	const struct trace_head *h = &tr->head;
	hd_heading(out, color, "Frees by age (epochs between allocation and free; now %u)", h->epoch);
	fprintf(out, "  %8s %10s %10s\n", "age", "count", "bytes");
	for (int a = 0; a < HD_TRACE_AGES; a++) {
		if (!h->ages[a].count)
			continue;
		char b[32];
		hd_format_size(h->ages[a].bytes, b, sizeof(b));
		fprintf(out, "  %7d%s %10" PRIu64 " %10s\n", a, a == HD_TRACE_AGES - 1 ? "+" : " ",
			h->ages[a].count, b);
	}
	hd_heading(out, color, "\nLive allocations by birth epoch");
	fprintf(out, "  %8s %10s %10s\n", "epoch", "count", "bytes");
	for (size_t i = 0; i < tr->num_births; i++) {
		char b[32];
		hd_format_size(tr->births[i].bytes, b, sizeof(b));
		fprintf(out, "  %8u %10" PRIu64 " %10s\n", tr->births[i].epoch,
			tr->births[i].count, b);
	}
}

struct hd_error *hd_render_trace(FILE *out, struct hd_session *ses,
				 const struct hd_render_options *o)
{
	struct trace tr;
	struct hd_error *err = hd_trace_load(ses, &tr, false);
	if (err)
		return err;
	struct row *sites = NULL, *files = NULL;
	size_t nsites = 0, nfiles = 0;
	err = make_rows(&tr, false, &sites, &nsites);
	if (!err)
		err = make_rows(&tr, true, &files, &nfiles);
	size_t top = o->all ? SIZE_MAX : o->top ? o->top : DEFAULT_TOP;
	if (!err && o->format == HD_FORMAT_JSON) {
		render_json(out, ses, &tr, sites, nsites, files, nfiles, top);
	} else if (!err) {
		const struct trace_head *h = &tr.head;
		uint64_t allocs = 0;
		for (int op = 0; op < HD_TRACE_OPS; op++)
			allocs += op == HD_TRACE_FREE ? 0 : tr.calls[op];
		fprintf(out, "tracer of %s: %s, epoch %u; %" PRIu64 " allocations, %" PRIu64
			" frees traced at %zu call sites; %" PRIu64 " allocations live (%" PRIu64 " bytes)\n",
			hd_target_name(hd_session_target(ses)), h->enabled ? "on" : "off", h->epoch,
			allocs, tr.calls[HD_TRACE_FREE], tr.num_sites, tr.live_count, tr.live_bytes);
		if (tr.dropped_sites)
			fprintf(out, "warning: call-site table full: %" PRIu64 " calls at sites not recorded\n",
				tr.dropped_sites);
		fputc('\n', out);
		switch (o->trace_by) {
		case HD_TRACE_BY_FILE: text_rows(out, "file", files, nfiles, top, o->color); break;
		case HD_TRACE_BY_SIZE: text_sizes(out, h, o->color); break;
		case HD_TRACE_BY_AGE: text_ages(out, &tr, o->color); break;
		default: text_rows(out, "call site", sites, nsites, top, o->color); break;
		}
	}
	free(sites);
	free(files);
	hd_trace_deinit(&tr);
	if (!err && ferror(out))
		err = hd_error_create(HD_ERROR_OS, "cannot write output");
	return err;
}
