// A heap histogram by type: for each type (untyped blocks by size), the
// instances, their bytes, and what they keep alive together — the union of
// their dominator subtrees, so memory two instances share is counted once.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "semantic/semantic_internal.h"
#include "types/typing.h"

struct size_map { // untyped usable size -> row
	uint64_t *keys;
	uint32_t *rows;
	size_t cap;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	return x ^ (x >> 27);
}

static int g_sort;
static int row_cmp(const void *x, const void *y)
{
	const struct hd_type_row *a = x, *b = y;
	uint64_t ka = g_sort == 1 ? a->count : g_sort == 2 ? a->retained : a->bytes;
	uint64_t kb = g_sort == 1 ? b->count : g_sort == 2 ? b->retained : b->bytes;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return a->bytes > b->bytes ? -1 : a->bytes < b->bytes;
}

// The row of the type called name ("T[]" for an array "T[n]" when array),
// added if it is new.
static struct hd_error *named_row(struct hd_type_row **rows, size_t *nrows,
				  size_t *cap, const char *type, bool array,
				  uint32_t *ret)
{
	char name[512];
	snprintf(name, sizeof(name), "%s", type);
	size_t len = strlen(name);
	char *bracket = strrchr(name, '[');
	if (array && bracket && len && name[len - 1] == ']' &&
	    strspn(bracket + 1, "0123456789") == (size_t)(name + len - 1 - bracket - 1))
		snprintf(bracket, sizeof(name) - (size_t)(bracket - name), "[]");
	size_t r = 0;
	while (r < *nrows && (!(*rows)[r].name || strcmp((*rows)[r].name, name) != 0))
		r++;
	if (r == *nrows) {
		if (*nrows == *cap) {
			struct hd_type_row *p = realloc(*rows, *cap * 2 * sizeof(*p));
			if (!p)
				return &hd_error_no_memory;
			*rows = p;
			*cap *= 2;
		}
		(*rows)[r] = (struct hd_type_row){.name = strdup(name)};
		if (!(*rows)[r].name)
			return &hd_error_no_memory;
		(*nrows)++;
	}
	*ret = (uint32_t)r;
	return NULL;
}

struct hd_error *hd_type_rows(const struct hd_analysis *ap,
			      struct hd_type_row **ret, size_t *ret_n)
{
	const struct hd_analysis a = *ap;
	struct hd_error *err = NULL;
	size_t n = hd_heap_num_blocks(a.h);
	size_t nentries = a.ty ? a.ty->num_entries : 0;
	// Rows: one per typing entry name, then one per untyped size.
	struct hd_type_row *rows = calloc(nentries + 1, sizeof(*rows));
	uint32_t *entry_row = calloc(nentries + 1, sizeof(*entry_row));
	uint32_t *block_row = malloc((n ? n : 1) * sizeof(*block_row));
	struct size_map sm = {0};
	size_t nrows = 0, cap = nentries + 1, nuntyped = 0, nlabels = 0;
	uint32_t *label_row = NULL; // framework name's label -> row
	if (!rows || !entry_row || !block_row) {
		err = &hd_error_no_memory;
		goto out;
	}
	for (size_t e = 0; e < nentries; e++) {
		// Arrays of a type share one row "T[]" whatever their length;
		// entries with the same name (from two modules) share a row.
		const struct hd_type_entry *te = &a.ty->entries[e];
		uint32_t r;
		if ((err = named_row(&rows, &nrows, &cap, te->name, te->count > 1, &r)))
			goto out;
		entry_row[e] = r;
	}
	for (size_t id = 0; id < n; id++) {
		struct hd_block b;
		hd_heap_block(a.h, id, &b);
		block_row[id] = UINT32_MAX;
		if (b.state != HD_STATE_USED)
			continue;
		uint32_t e = a.ty ? a.ty->block_entry[id] : HD_ENTRY_NONE;
		uint32_t r, l = a.fw ? hd_fw_block_label(a.fw, id) : UINT32_MAX;
		if (l != UINT32_MAX) {
			// The framework's name, as `dominators --semantic`
			// shows it.
			if (l >= nlabels) {
				size_t nl = l + 1024;
				uint32_t *p = realloc(label_row, nl * sizeof(*p));
				if (!p) {
					err = &hd_error_no_memory;
					goto out;
				}
				memset(p + nlabels, 0xff, (nl - nlabels) * sizeof(*p));
				label_row = p;
				nlabels = nl;
			}
			if (label_row[l] == UINT32_MAX &&
			    (err = named_row(&rows, &nrows, &cap,
					     hd_fw_block_name(a.fw, id), true,
					     &label_row[l])))
				goto out;
			r = label_row[l];
		} else if (e != HD_ENTRY_NONE) {
			r = entry_row[e];
		} else {
			if (!sm.cap || (nuntyped + 1) * 2 > sm.cap) {
				size_t ncap = sm.cap ? sm.cap * 2 : 1024;
				uint64_t *k = malloc(ncap * sizeof(*k));
				uint32_t *v = malloc(ncap * sizeof(*v));
				if (!k || !v) {
					free(k);
					free(v);
					err = &hd_error_no_memory;
					goto out;
				}
				memset(v, 0xff, ncap * sizeof(*v));
				for (size_t i = 0; i < sm.cap; i++) {
					if (sm.rows[i] == UINT32_MAX)
						continue;
					size_t slot = mix(sm.keys[i]) & (ncap - 1);
					while (v[slot] != UINT32_MAX)
						slot = (slot + 1) & (ncap - 1);
					k[slot] = sm.keys[i];
					v[slot] = sm.rows[i];
				}
				free(sm.keys);
				free(sm.rows);
				sm.keys = k;
				sm.rows = v;
				sm.cap = ncap;
			}
			size_t slot = mix(b.usable) & (sm.cap - 1);
			while (sm.rows[slot] != UINT32_MAX && sm.keys[slot] != b.usable)
				slot = (slot + 1) & (sm.cap - 1);
			if (sm.rows[slot] == UINT32_MAX) {
				if (nrows == cap) {
					cap *= 2;
					struct hd_type_row *p = realloc(rows, cap * sizeof(*p));
					if (!p) {
						err = &hd_error_no_memory;
						goto out;
					}
					rows = p;
				}
				rows[nrows] = (struct hd_type_row){.usable = b.usable};
				sm.keys[slot] = b.usable;
				sm.rows[slot] = (uint32_t)nrows++;
				nuntyped++;
			}
			r = sm.rows[slot];
		}
		block_row[id] = r;
		rows[r].count++;
		rows[r].bytes += b.chunk;
	}
	// Retained by the set: walk the dominator tree depth-first; an
	// instance counts only when no instance of its row is above it.
	uint32_t nv = hd_graph_num_vertices(a.g);
	struct frame { uint32_t v; uint32_t next; } *stack =
		malloc((size_t)nv * sizeof(*stack));
	if (!stack) {
		err = &hd_error_no_memory;
		goto out;
	}
	size_t sp = 0;
	stack[sp++] = (struct frame){0, 0};
	while (sp) {
		struct frame *f = &stack[sp - 1];
		const uint32_t *c;
		size_t k;
		hd_dom_children(a.d, f->v, &c, &k);
		if (f->next < k) {
			uint32_t w = c[f->next++];
			int64_t id = hd_graph_vertex_block(a.g, w);
			if (id >= 0 && block_row[id] != UINT32_MAX) {
				struct hd_type_row *row = &rows[block_row[id]];
				if (row->active++ == 0)
					row->retained += hd_dom_retained(a.d, w);
			}
			stack[sp++] = (struct frame){w, 0};
			continue;
		}
		int64_t id = hd_graph_vertex_block(a.g, f->v);
		if (id >= 0 && block_row[id] != UINT32_MAX)
			rows[block_row[id]].active--;
		sp--;
	}
	free(stack);
	// Entries that lost every block (to a vtable typing) are no rows.
	size_t kept = 0;
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].count)
			rows[kept++] = rows[i];
		else
			free(rows[i].name);
	}
	nrows = kept;
	*ret = rows;
	*ret_n = nrows;
	rows = NULL;
	nrows = 0;
out:
	hd_type_rows_free(rows, nrows);
	free(entry_row);
	free(label_row);
	free(block_row);
	free(sm.keys);
	free(sm.rows);
	return err;
}

void hd_type_rows_free(struct hd_type_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].name);
	free(rows);
}

struct hd_error *hd_render_types(FILE *out, struct hd_session *s,
				 const struct hd_render_options *o)
{
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get(s, &a);
	if (err)
		return err;
	struct hd_type_row *rows;
	size_t nrows;
	err = hd_type_rows(&a, &rows, &nrows);
	if (err)
		return err;
	g_sort = o->sort;
	qsort(rows, nrows, sizeof(*rows), row_cmp);
	size_t limit = o->all ? nrows : (o->top ? o->top : 50);
	if (o->format == HD_FORMAT_JSON) {
		fputc('{', out);
		hd_json_heap_header(out, a.t, a.h);
		fputs(", \"types\": [", out);
		for (size_t i = 0; i < nrows && i < limit; i++) {
			fprintf(out, "%s\n{\"type\": ", i ? "," : "");
			if (rows[i].name)
				hd_json_string(out, rows[i].name);
			else
				fputs("null", out);
			if (!rows[i].name)
				fprintf(out, ", \"size\": %" PRIu64, rows[i].usable);
			fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
				", \"retained\": %" PRIu64 "}",
				rows[i].count, rows[i].bytes, rows[i].retained);
		}
		fprintf(out, "\n], \"num_types\": %zu}\n", nrows);
	} else {
		hd_text_problems(out, a.t, a.h, o->color);
		char used[32];
		hd_format_size(a.used_bytes, used, sizeof(used));
		fprintf(out, "heap of %s: %" PRIu64 " used blocks, %s, %zu types and sizes\n\n",
			hd_target_name(a.t), a.used_blocks, used, nrows);
		hd_heading(out, o->color, "  %10s %12s %12s %7s  %s", "count", "bytes",
			   "retained", "%", "type");
		for (size_t i = 0; i < nrows && i < limit; i++) {
			char b[32], r[32], name[64];
			hd_format_size(rows[i].bytes, b, sizeof(b));
			hd_format_size(rows[i].retained, r, sizeof(r));
			if (!rows[i].name)
				snprintf(name, sizeof(name), "unk<%" PRIu64 ">", rows[i].usable);
			fprintf(out, "  %10" PRIu64 " %12s %12s %6.2f%%  %s\n", rows[i].count,
				b, r, hd_percent(&a, rows[i].retained),
				rows[i].name ? rows[i].name : name);
		}
		if (nrows > limit)
			fprintf(out, "  … %zu more (--top N, --all)\n", nrows - limit);
	}
	hd_type_rows_free(rows, nrows);
	if (ferror(out))
		err = hd_error_create(HD_ERROR_OS, "cannot write output");
	return err;
}
