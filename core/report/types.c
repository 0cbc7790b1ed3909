// A heap histogram by type: for each type (untyped blocks by size), the
// instances, their bytes, and what they keep alive together — the union of
// their dominator subtrees, so memory two instances share is counted once.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "semantic/semantic_internal.h"
#include "types/typing.h"
#include "util/sort.h"

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

// The row of untyped blocks of usable size `usable`, added if new.
static struct hd_error *size_row(struct size_map *sm, size_t *nuntyped,
				 struct hd_type_row **rows, size_t *nrows,
				 size_t *cap, uint64_t usable, uint32_t *ret)
{
	if (!sm->cap || (*nuntyped + 1) * 2 > sm->cap) {
		size_t ncap = sm->cap ? sm->cap * 2 : 1024;
		uint64_t *k = malloc(ncap * sizeof(*k));
		uint32_t *v = malloc(ncap * sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return &hd_error_no_memory;
		}
		memset(v, 0xff, ncap * sizeof(*v));
		for (size_t i = 0; i < sm->cap; i++) {
			if (sm->rows[i] == UINT32_MAX)
				continue;
			size_t slot = mix(sm->keys[i]) & (ncap - 1);
			while (v[slot] != UINT32_MAX)
				slot = (slot + 1) & (ncap - 1);
			k[slot] = sm->keys[i];
			v[slot] = sm->rows[i];
		}
		free(sm->keys);
		free(sm->rows);
		sm->keys = k;
		sm->rows = v;
		sm->cap = ncap;
	}
	size_t slot = mix(usable) & (sm->cap - 1);
	while (sm->rows[slot] != UINT32_MAX && sm->keys[slot] != usable)
		slot = (slot + 1) & (sm->cap - 1);
	if (sm->rows[slot] == UINT32_MAX) {
		if (*nrows == *cap) {
			struct hd_type_row *p = realloc(*rows, *cap * 2 * sizeof(*p));
			if (!p)
				return &hd_error_no_memory;
			*rows = p;
			*cap *= 2;
		}
		(*rows)[*nrows] = (struct hd_type_row){.usable = usable};
		sm->keys[slot] = usable;
		sm->rows[slot] = (uint32_t)(*nrows)++;
		(*nuntyped)++;
	}
	*ret = sm->rows[slot];
	return NULL;
}

// What types counts: the heap's used blocks, as vertices of the plain
// dominator tree; or, when the default modules found sub-allocator blocks
// the program uses, every used block of the semantic graph (malloc'd and
// sub-allocator blocks) as vertices of its tree, each malloc'd block for
// its own bytes (a block holding a pool: without the pool's blocks).
struct instances {
	const struct hd_analysis *a;
	const struct hd_semantic *s; // NULL: the plain tree
	uint32_t first_block, first_sub, nv;
};

static void instances_init(struct instances *in, const struct hd_analysis *a)
{
	*in = (struct instances){.a = a, .s = a->sem};
	if (in->s) {
		in->first_block = 1 + (uint32_t)in->s->g->num_roots;
		in->first_sub = in->s->nv - (uint32_t)in->s->g->num_sub;
		in->nv = in->s->n;
	} else {
		in->nv = hd_graph_num_vertices(a->g);
	}
}

// Vertex v as an instance: false when it is not a used block; else its
// bytes, whether it is a sub-allocator block, and its name (NULL:
// untyped, of usable size *usable) or typing entry.
static bool instance(const struct instances *in, uint32_t v, uint64_t *bytes,
		     uint64_t *usable, bool *sub, const char **name,
		     uint32_t *label, uint32_t *entry)
{
	const struct hd_analysis *a = in->a;
	*name = NULL;
	*label = *entry = UINT32_MAX;
	*sub = false;
	int64_t id;
	if (!in->s) {
		id = hd_graph_vertex_block(a->g, v);
	} else if (v < in->first_block || v >= in->s->nv) {
		return false;
	} else if (v >= in->first_sub) {
		const struct hd_fw *fw = in->s->fw;
		const struct hd_subblock *b = &fw->sa.blocks[v - in->first_sub];
		if (b->state != HD_STATE_USED)
			return false;
		*sub = true;
		*bytes = *usable = b->size;
		uint32_t l = hd_fw_name_of(fw, v);
		if (l == UINT32_MAX)
			l = b->type;
		if (l != UINT32_MAX) {
			*label = l;
			*name = fw->labels[l];
		}
		return true;
	} else {
		id = v - in->first_block;
	}
	if (id < 0)
		return false;
	struct hd_block b;
	hd_heap_block(a->h, (size_t)id, &b);
	if (b.state != HD_STATE_USED)
		return false;
	*usable = b.usable;
	*bytes = b.extent;
	if (in->s) {
		uint64_t used, f;
		hd_semantic_own(in->s, v, bytes, &used, &f);
	}
	uint32_t l = a->fw ? hd_fw_block_label(a->fw, (size_t)id) : UINT32_MAX;
	if (l != UINT32_MAX) {
		// The framework's name, as `dominators --semantic` shows it.
		*label = l;
		*name = a->fw->labels[l];
	} else if (a->ty && a->ty->block_entry[id] != HD_ENTRY_NONE) {
		*entry = a->ty->block_entry[id];
	}
	return true;
}

static void tree_children(const struct instances *in, uint32_t v,
			  const uint32_t **c, size_t *k)
{
	if (!in->s) {
		hd_dom_children(in->a->d, v, c, k);
		return;
	}
	*c = in->s->children + in->s->child_off[v];
	*k = in->s->child_off[v + 1] - in->s->child_off[v];
}

static uint64_t tree_retained(const struct instances *in, uint32_t v)
{
	return in->s ? in->s->r_alloc[v] : hd_dom_retained(in->a->d, v);
}

struct hd_error *hd_type_rows(const struct hd_analysis *ap,
			      struct hd_type_row **ret, size_t *ret_n)
{
	const struct hd_analysis a = *ap;
	// Every block's name: a module that waits runs now, once, rather
	// than asking block by block.
	if (a.fw)
		hd_fw_need_all(a.fw);
	struct instances in;
	instances_init(&in, ap);
	struct hd_error *err = NULL;
	size_t nentries = a.ty ? a.ty->num_entries : 0;
	// Rows: one per typing entry name, then one per untyped size.
	struct hd_type_row *rows = calloc(nentries + 1, sizeof(*rows));
	uint32_t *entry_row = calloc(nentries + 1, sizeof(*entry_row));
	uint32_t *vrow = malloc((in.nv ? in.nv : 1) * sizeof(*vrow));
	struct size_map sm = {0};
	size_t nrows = 0, cap = nentries + 1, nuntyped = 0, nlabels = 0;
	uint32_t *label_row = NULL; // framework name's label -> row
	if (!rows || !entry_row || !vrow) {
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
	for (uint32_t v = 0; v < in.nv; v++) {
		uint64_t bytes, usable;
		bool sub;
		const char *name;
		uint32_t l, e, r;
		vrow[v] = UINT32_MAX;
		if (!instance(&in, v, &bytes, &usable, &sub, &name, &l, &e))
			continue;
		if (l != UINT32_MAX) {
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
			    (err = named_row(&rows, &nrows, &cap, name, true,
					     &label_row[l])))
				goto out;
			r = label_row[l];
		} else if (e != UINT32_MAX) {
			r = entry_row[e];
		} else if ((err = size_row(&sm, &nuntyped, &rows, &nrows, &cap,
					   usable, &r))) {
			goto out;
		}
		vrow[v] = r;
		rows[r].count++;
		rows[r].bytes += bytes;
		if (sub) {
			rows[r].sub_count++;
			rows[r].sub_bytes += bytes;
		}
	}
	// Retained by the set: walk the dominator tree depth-first; an
	// instance counts only when no instance of its row is above it.
	struct frame { uint32_t v; uint32_t next; } *stack =
		malloc((size_t)(in.nv ? in.nv : 1) * sizeof(*stack));
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
		tree_children(&in, f->v, &c, &k);
		if (f->next < k) {
			uint32_t w = c[f->next++];
			if (vrow[w] != UINT32_MAX) {
				struct hd_type_row *row = &rows[vrow[w]];
				if (row->active++ == 0)
					row->retained += tree_retained(&in, w);
			}
			stack[sp++] = (struct frame){w, 0};
			continue;
		}
		if (vrow[f->v] != UINT32_MAX)
			rows[vrow[f->v]].active--;
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
	free(vrow);
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
	hd_analysis_semantic(s, &a);
	struct hd_type_row *rows;
	size_t nrows;
	err = hd_type_rows(&a, &rows, &nrows);
	if (err)
		return err;
	g_sort = o->sort;
	hd_qsort(rows, nrows, sizeof(*rows), row_cmp);
	size_t limit = o->all ? nrows : (o->top ? o->top : 50);
	// The two kinds of instances, from the rows (every used block is in
	// exactly one).
	uint64_t mcount = 0, mbytes = 0, scount = 0, sbytes = 0;
	for (size_t i = 0; i < nrows; i++) {
		mcount += rows[i].count - rows[i].sub_count;
		mbytes += rows[i].bytes - rows[i].sub_bytes;
		scount += rows[i].sub_count;
		sbytes += rows[i].sub_bytes;
	}
	// The modules whose sub-allocators hold them ("cpython").
	char mods[256] = "";
	if (a.sem) {
		const struct hd_fw *fw = a.sem->fw;
		bool *seen = calloc(fw->num_mods ? fw->num_mods : 1, sizeof(*seen));
		for (size_t i = 0; seen && i < fw->sa.num_blocks; i++)
			if (fw->sa.blocks[i].state == HD_STATE_USED &&
			    fw->sa.blocks[i].module < fw->num_mods)
				seen[fw->sa.blocks[i].module] = true;
		for (size_t m = 0; seen && m < fw->num_mods; m++) {
			if (!seen[m])
				continue;
			size_t used = strlen(mods);
			snprintf(mods + used, sizeof(mods) - used, "%s%s",
				 used ? ", " : "", fw->mods[m].ops->name);
		}
		free(seen);
	}
	uint64_t total = mbytes + sbytes;
	if (o->format == HD_FORMAT_JSON) {
		fputc('{', out);
		hd_json_heap_header(out, a.t, a.h);
		// What the rows count, and the tree retained comes from.
		fprintf(out, ", \"malloc_blocks\": %" PRIu64 ", \"malloc_bytes\": %" PRIu64
			", \"subblocks\": %" PRIu64 ", \"subblock_bytes\": %" PRIu64
			", \"subblock_frameworks\": [",
			mcount, mbytes, scount, sbytes);
		for (char *p = mods, *q; *p; p = q) {
			q = strchr(p, ',');
			size_t len = q ? (size_t)(q - p) : strlen(p);
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)len, p);
			if (p != mods)
				fputs(", ", out);
			hd_json_string(out, name);
			q = q ? q + 2 : p + len;
		}
		fprintf(out, "], \"retained_tree\": \"%s\"",
			a.sem ? "semantic" : "dominators");
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
				", \"retained\": %" PRIu64 ", \"subblocks\": %" PRIu64
				", \"subblock_bytes\": %" PRIu64 "}",
				rows[i].count, rows[i].bytes, rows[i].retained,
				rows[i].sub_count, rows[i].sub_bytes);
		}
		fprintf(out, "\n], \"num_types\": %zu}\n", nrows);
	} else {
		hd_text_problems(out, a.t, a.h, o->color);
		char used[32], sub[32];
		hd_format_size(mbytes, used, sizeof(used));
		hd_format_size(sbytes, sub, sizeof(sub));
		if (a.sem)
			fprintf(out, "heap of %s: %" PRIu64 " malloc'd blocks (%s) and %" PRIu64
				" sub-allocator blocks (%s, %s), %zu types and sizes;"
				" retained as in `dominators --semantic`\n\n",
				hd_target_name(a.t), mcount, used, scount, sub, mods, nrows);
		else
			fprintf(out, "heap of %s: %" PRIu64 " used blocks, %s, %zu types and sizes\n\n",
				hd_target_name(a.t), mcount, used, nrows);
		hd_heading(out, o->color, "  %10s %12s %12s %7s  %s", "count", "bytes",
			   "retained", "%", "type");
		for (size_t i = 0; i < nrows && i < limit; i++) {
			char b[32], r[32], name[64];
			hd_format_size(rows[i].bytes, b, sizeof(b));
			hd_format_size(rows[i].retained, r, sizeof(r));
			if (!rows[i].name)
				snprintf(name, sizeof(name), "unk<%" PRIu64 ">", rows[i].usable);
			fprintf(out, "  %10" PRIu64 " %12s %12s %6.2f%%  %s\n", rows[i].count,
				b, r, total ? 100.0 * (double)rows[i].retained / (double)total : 0,
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
