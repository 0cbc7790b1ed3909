// Formatting helpers shared by every renderer.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

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

void hd_json_heap_header(FILE *out, struct hd_target *t,
			 const struct hd_heap *h)
{
	struct hd_heap_info info;
	hd_heap_get_info(h, &info);
	fputs("\"target\": ", out);
	hd_json_string(out, hd_target_name(t));
	fprintf(out, ", \"target_kind\": \"%s\"", hd_target_kind(t));
	fputs(", \"method\": ", out);
	hd_json_string(out, info.method);
	fprintf(out, ", \"safe_linking\": %s, \"partial\": %s, \"problems\": [",
		info.safe_linking ? "true" : "false",
		hd_heap_partial(h) ? "true" : "false");
	for (size_t i = 0; i < hd_heap_num_problems(h); i++) {
		const struct hd_heap_problem *p = hd_heap_problem(h, i);
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"message\": ",
			i ? ", " : "", p->address);
		hd_json_string(out, p->message);
		fputc('}', out);
	}
	fputs("], \"arenas\": [", out);
	for (size_t i = 0; i < hd_heap_num_arenas(h); i++) {
		const struct hd_arena *a = hd_heap_arena(h, i);
		fprintf(out,
			"%s{\"addr\": \"0x%" PRIx64 "\", \"main\": %s, \"heaps\": %zu, \"system_mem\": %" PRIu64 ", \"top\": \"0x%" PRIx64 "\"}",
			i ? ", " : "", a->addr, a->is_main ? "true" : "false",
			a->num_heaps, a->system_mem, a->top);
	}
	fputc(']', out);
}

void hd_text_problems(FILE *out, const struct hd_heap *h, bool color)
{
	const char *on = color ? "\033[33m" : "", *off = color ? "\033[0m" : "";
	size_t n = hd_heap_num_problems(h);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%swarning:%s 0x%" PRIx64 ": %s\n", on, off,
			hd_heap_problem(h, i)->address,
			hd_heap_problem(h, i)->message);
	if (hd_heap_partial(h))
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
