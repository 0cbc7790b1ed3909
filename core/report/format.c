// Formatting helpers shared by every renderer.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap_internal.h"
#include "report/report_internal.h"

void hd_format_size(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	if (n < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", n);
		return;
	}
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

void hd_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

// What a truncated core lacks, as the JSON object of "truncated".
static void json_truncated(FILE *out, const struct hd_truncation *tr)
{
	fprintf(out, "{\"file_size\": %" PRIu64 ", \"expected_size\": %" PRIu64
		", \"first_missing\": [\"0x%" PRIx64 "\", \"0x%" PRIx64 "\"], \"missing_ranges\": %zu, \"missing_bytes\": %" PRIu64 "}",
		tr->file_size, tr->expected_size, tr->first_start, tr->first_end,
		tr->num_ranges, tr->missing_bytes);
}

void hd_json_truncation(FILE *out, struct hd_target *t)
{
	struct hd_truncation tr;
	if (!hd_target_truncation(t, &tr))
		return;
	fputs("\"partial\": true, \"truncated\": ", out);
	json_truncated(out, &tr);
	fputs(", ", out);
}

// The heap's and the target's limits as JSON members.
static void json_limits(FILE *out, struct hd_target *t, const struct hd_heap *h)
{
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	struct hd_truncation tr;
	if (hd_target_truncation(t, &tr)) {
		fputs(", \"truncated\": ", out);
		json_truncated(out, &tr);
	}
	fprintf(out, ", \"no_allocation_yet\": %s, \"other_allocator\": ",
		info.no_allocation_yet ? "true" : "false");
	if (info.other_allocator)
		hd_json_string(out, info.other_allocator);
	else
		fputs("null", out);
	// Allocators --allocator left out: names, and the option.
	fputs(", \"skipped_allocators\": [", out);
	for (const char *p = info.skipped; p && *p;) {
		const char *end = strstr(p, ", ");
		int n = end ? (int)(end - p) : (int)strlen(p);
		fprintf(out, "%s\"%.*s\"", p == info.skipped ? "" : ", ", n, p);
		p = end ? end + 2 : NULL;
	}
	fputs("], \"skipped_by\": ", out);
	if (info.skipped_why)
		hd_json_string(out, info.skipped_why);
	else
		fputs("null", out);
	fputs(", \"warnings\": [", out);
	size_t n = hd_target_num_warnings(t);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		hd_json_string(out, hd_target_warning(t, i));
	}
	fputc(']', out);
}

// One fact as both renderings show it: its value in words ("true",
// "17", "0x7f..", the string) and whether JSON quotes it. Text shows a
// boolean fact by its key alone, and only when true.
struct fact_text {
	char buf[32];
	const char *value;
	bool quoted;
};

static void fact_text(const struct hd_fact *f, struct fact_text *ft)
{
	ft->value = ft->buf;
	ft->quoted = f->kind == HD_FACT_ADDR || f->kind == HD_FACT_STRING;
	switch (f->kind) {
	case HD_FACT_BOOL:
		ft->value = f->value ? "true" : "false";
		break;
	case HD_FACT_UINT:
		snprintf(ft->buf, sizeof(ft->buf), "%" PRIu64, f->value);
		break;
	case HD_FACT_ADDR:
		snprintf(ft->buf, sizeof(ft->buf), "0x%" PRIx64, f->value);
		break;
	case HD_FACT_STRING:
		ft->value = f->string;
		break;
	}
}

// The backend's facts of one region (or, with HD_NO_REGION, of allocator
// a) as a JSON object's members.
static void json_facts(FILE *out, const struct hd_heap *h, uint32_t region,
		       unsigned a)
{
	bool first = true;
	for (size_t i = 0; i < hd_heap_num_facts(h); i++) {
		const struct hd_fact *f = hd_heap_fact(h, i);
		if (f->region != region ||
		    (region == HD_NO_REGION && f->allocator != a))
			continue;
		struct fact_text ft;
		fact_text(f, &ft);
		fputs(first ? "" : ", ", out);
		first = false;
		hd_json_string(out, f->key);
		fputs(": ", out);
		if (ft.quoted)
			hd_json_string(out, ft.value);
		else
			fputs(ft.value, out);
	}
}

static void json_count(FILE *out, const char *name, uint64_t blocks,
		       uint64_t bytes)
{
	fprintf(out, "\"%s\": {\"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
		name, blocks, bytes);
}

void hd_json_allocator(FILE *out, const struct hd_heap *h, size_t a)
{
	struct hd_heap_info info;
	hd_heap_allocator_info(h, a, &info);
	fputs("{\"name\": ", out);
	hd_json_string(out, info.allocator);
	fputs(", \"version\": ", out);
	if (info.version)
		hd_json_string(out, info.version);
	else
		fputs("null", out);
	fputs(", \"version_source\": ", out);
	if (info.version_source)
		hd_json_string(out, info.version_source);
	else
		fputs("null", out);
	fputs(", \"method\": ", out);
	hd_json_string(out, info.method);
	fputs(", \"evidence\": ", out);
	if (info.evidence)
		hd_json_string(out, info.evidence);
	else
		fputs("null", out);
	fputs(", \"facts\": {", out);
	json_facts(out, h, HD_NO_REGION, (unsigned)a);
	fputs("}, \"regions\": [", out);
	bool first = true;
	for (size_t i = 0; i < hd_heap_num_regions(h); i++) {
		const struct hd_region *r = hd_heap_region(h, i);
		if (r->allocator != a)
			continue;
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"kind\": ",
			first ? "" : ", ", r->addr);
		first = false;
		hd_json_string(out, r->kind);
		fprintf(out, ", \"primary\": %s, \"segments\": %zu, \"system_bytes\": %" PRIu64 ", \"facts\": {",
			r->primary ? "true" : "false", r->num_segments,
			r->system_bytes);
		json_facts(out, h, (uint32_t)i, (unsigned)a);
		fputs("}}", out);
	}
	fputs("], \"lists\": [", out);
	size_t l0, nl;
	hd_heap_allocator_lists(h, a, &l0, &nl);
	for (size_t i = l0; i < l0 + nl; i++) {
		fputs(i > l0 ? ", " : "", out);
		hd_json_string(out, hd_heap_free_list(h, i)->name);
	}
	struct hd_allocator_totals t;
	hd_heap_allocator_totals(h, a, &t);
	fputs("], \"totals\": {", out);
	json_count(out, "used", t.used_blocks, t.used_bytes);
	fputs(", ", out);
	json_count(out, "free", t.free_blocks, t.free_bytes);
	fputs(", ", out);
	json_count(out, "reserve", t.reserve_blocks, t.reserve_bytes);
	fputs(", ", out);
	json_count(out, "internal", t.internal_blocks, t.internal_bytes);
	fprintf(out, ", \"usable\": %" PRIu64 "}}", t.usable);
}

void hd_json_heap_header(FILE *out, struct hd_target *t,
			 const struct hd_heap *h)
{
	fputs("\"target\": ", out);
	hd_json_string(out, hd_target_name(t));
	fprintf(out, ", \"target_kind\": \"%s\"", hd_target_kind(t));
	// The primary allocator, and every one walked (docs/json-format.md).
	fputs(", \"allocator\": ", out);
	hd_json_allocator(out, h, 0);
	fputs(", \"allocators\": [", out);
	for (size_t a = 0; a < hd_heap_num_allocators(h); a++) {
		fputs(a ? ", " : "", out);
		hd_json_allocator(out, h, a);
	}
	fputc(']', out);
	fprintf(out, ", \"partial\": %s",
		hd_heap_partial(h) || hd_target_truncation(t, NULL) ? "true" : "false");
	json_limits(out, t, h);
	fputs(", \"problems\": [", out);
	for (size_t i = 0; i < hd_heap_num_problems(h); i++) {
		const struct hd_heap_problem *p = hd_heap_problem(h, i);
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"message\": ",
			i ? ", " : "", p->address);
		hd_json_string(out, p->message);
		fputc('}', out);
	}
	fputc(']', out);
}

void hd_text_allocator(FILE *out, const struct hd_heap *h, size_t a)
{
	struct hd_heap_info info;
	hd_heap_allocator_info(h, a, &info);
	fprintf(out, "allocator: %s %s, found via %s", info.allocator,
		info.version ? info.version : "(version unknown)", info.method);
	const char *sep = "; ";
	for (size_t i = 0; i < hd_heap_num_facts(h); i++) {
		const struct hd_fact *f = hd_heap_fact(h, i);
		if (f->region != HD_NO_REGION || f->allocator != a ||
		    (f->kind == HD_FACT_BOOL && !f->value))
			continue;
		struct fact_text ft;
		fact_text(f, &ft);
		fprintf(out, "%s%s", sep, f->key);
		if (f->kind != HD_FACT_BOOL)
			fprintf(out, " %s", ft.value);
		sep = ", ";
	}
	fputc('\n', out);
}

// A message's kind: its words with every number ("0x7f..", "17") made
// one '#', so "bin 3 of arena 0x..." and "bin 4 of arena 0x..." match.
static uint64_t warning_kind(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s) {
		unsigned char c = (unsigned char)*s;
		if (c >= '0' && c <= '9') {
			if (s[0] == '0' && s[1] == 'x')
				s += 2;
			while ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))
				s++;
			c = '#';
		} else {
			s++;
		}
		h = (h ^ c) * 1099511628211ULL;
	}
	return h;
}

void hd_text_warnings(FILE *out, bool color, const char *indent, size_t n,
		      size_t dropped, const char *(*get)(void *, size_t, uint64_t *),
		      void *arg)
{
	const char *on = color ? "\033[33m" : "", *off = color ? "\033[0m" : "";
	// Without memory for the kinds, every message is its own kind.
	uint64_t *kinds = malloc((n ? n : 1) * sizeof(*kinds));
	for (size_t i = 0; kinds && i < n; i++) {
		uint64_t addr;
		kinds[i] = warning_kind(get(arg, i, &addr));
	}
	size_t shown = 0, hidden = dropped, hidden_kinds = 0;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; kinds && j < i && !seen; j++)
			seen = kinds[j] == kinds[i];
		if (seen)
			continue;
		// The first of its kind stands for the others.
		size_t like = 0;
		for (size_t j = i + 1; kinds && j < n; j++)
			like += kinds[j] == kinds[i];
		if (shown == HD_MAX_WARNING_KINDS) {
			hidden += 1 + like;
			hidden_kinds++;
			continue;
		}
		shown++;
		uint64_t addr;
		const char *msg = get(arg, i, &addr);
		fprintf(out, "%s%swarning:%s ", indent, on, off);
		if (addr)
			fprintf(out, "0x%" PRIx64 ": ", addr);
		fputs(msg, out);
		if (like)
			fprintf(out, " (and %zu more like it)", like);
		fputc('\n', out);
	}
	free(kinds);
	if (hidden)
		fprintf(out, "%s… and %zu more warning%s%s (--json lists them)\n",
			indent, hidden, hidden == 1 ? "" : "s",
			hidden_kinds > 1 ? " of other kinds" : "");
}

// "0x1000-0x2000 and 3 more ranges (1.5 MiB)": what a truncated core lacks.
static void missing_ranges(const struct hd_truncation *tr, char *buf, size_t len)
{
	char miss[32], more[64] = "";
	hd_format_size(tr->missing_bytes, miss, sizeof(miss));
	if (tr->num_ranges > 1)
		snprintf(more, sizeof(more), " and %zu more range%s",
			 tr->num_ranges - 1, tr->num_ranges > 2 ? "s" : "");
	snprintf(buf, len, "0x%" PRIx64 "-0x%" PRIx64 "%s (%s in all)",
		 tr->first_start, tr->first_end, more, miss);
}

void hd_text_target_notes(FILE *out, struct hd_target *t, bool color)
{
	const char *on = color ? "\033[33m" : "", *off = color ? "\033[0m" : "";
	struct hd_truncation tr;
	if (hd_target_truncation(t, &tr)) {
		char ranges[160];
		missing_ranges(&tr, ranges, sizeof(ranges));
		fprintf(out,
			"%spartial:%s %s is truncated (%" PRIu64 " of %" PRIu64 " bytes): memory %s is missing; blocks, roots and references there are not seen\n",
			on, off, hd_target_name(t), tr.file_size, tr.expected_size,
			ranges);
	}
	size_t n = hd_target_num_warnings(t);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%swarning:%s %s\n", on, off, hd_target_warning(t, i));
}

struct hd_error *hd_check_complete(struct hd_target *t, bool partial)
{
	struct hd_truncation tr;
	if (partial || !hd_target_truncation(t, &tr))
		return NULL;
	char ranges[160];
	missing_ranges(&tr, ranges, sizeof(ranges));
	return hd_error_file(HD_ERROR_FORMAT, hd_target_name(t),
			     "truncated core: the file has %" PRIu64 " of the %" PRIu64 " bytes its headers describe; memory %s is missing (--partial: report what is there, labelled partial)",
			     tr.file_size, tr.expected_size, ranges);
}

struct hd_error *hd_error_in_truncated(struct hd_target *t,
				       struct hd_error *err)
{
	struct hd_truncation tr;
	if (!err || err->is_static || !hd_target_truncation(t, &tr))
		return err;
	char ranges[160], *msg;
	missing_ranges(&tr, ranges, sizeof(ranges));
	if (asprintf(&msg, "%s (partial: the core is truncated, %" PRIu64 " of %" PRIu64 " bytes; memory %s is missing and may hold what was not found)",
		     err->message, tr.file_size, tr.expected_size, ranges) >= 0) {
		free(err->message);
		err->message = msg;
	}
	return err;
}

static const char *problem_at(void *arg, size_t i, uint64_t *addr)
{
	const struct hd_heap_problem *p = hd_heap_problem(arg, i);
	*addr = p->address;
	return p->message;
}

void hd_text_problems(FILE *out, struct hd_target *t, const struct hd_heap *h,
		      bool color)
{
	const char *on = color ? "\033[33m" : "", *off = color ? "\033[0m" : "";
	hd_text_target_notes(out, t, color);
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	if (info.no_allocation_yet)
		fprintf(out, "no allocation yet: %s, so the heap is empty\n",
			info.empty_reason ? info.empty_reason
					  : "the allocator was never initialised");
	if (info.other_allocator)
		fprintf(out, "%swarning:%s this process also allocates with %s, whose blocks this report does not show: the references they hold are not seen; results are partial\n",
			on, off, info.other_allocator);
	if (info.skipped)
		fprintf(out, "%spartial:%s not walked, as %s asked: %s, whose blocks this report does not show; results are partial\n",
			on, off, info.skipped_why, info.skipped);
	size_t n = hd_heap_num_problems(h);
	hd_text_warnings(out, color, "", n, h->dropped_problems, problem_at,
			 (void *)h);
	if (n || h->dropped_problems)
		fprintf(out,
			"%swarning:%s the heap is damaged or inconsistent; these results are partial\n",
			on, off);
}

void hd_heading(FILE *out, bool color, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (color)
		fputs("\033[1m", out);
	vfprintf(out, fmt, ap);
	if (color)
		fputs("\033[0m", out);
	fputc('\n', out);
	va_end(ap);
}
