// What changed between heap snapshots: totals, types, size classes and
// root paths, matched by name (addresses change between snapshots), growth
// first. More than two snapshots make a series: the totals of each, then
// what changed from the first to the last.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/snapshot.h"
#include "util/sort.h"

#define TEXT_TOP 20

// One entry of a snapshot's list, under the key it is matched by.
struct entry {
	char *key;
	uint64_t v[3];
	const void *src;
};

// A key and its values before and after.
struct row {
	const char *key;
	uint64_t before[3], after[3];
	const void *src_before, *src_after; // NULL when absent
};

// A list of a snapshot: types, size classes or root paths.
struct list_kind {
	const char *name;       // JSON member
	const char *title;      // text heading, %s: "grew" or "shrank"
	int nv;                 // values per entry
	const char *fields[3];  // their names, the primary (sorted by) first
	int primary;            // index of the value rows are sorted by
	bool sizes[3];          // value is bytes (text shows "1.5 KiB")
};

static const struct list_kind TYPES = {
	"types", "Types that %s", 3, {"count", "bytes", "retained"}, 1,
	{false, true, true},
};
static const struct list_kind CLASSES = {
	"size_classes", "Size classes that %s (usable bytes)", 2, {"blocks", "bytes"}, 1,
	{false, true, false},
};
static const struct list_kind PATHS = {
	"subtrees", "Root paths that %s (retained dominator subtrees)", 3, {"count", "blocks", "retained"}, 2,
	{false, false, true},
};

static int entry_cmp(const void *x, const void *y)
{
	return strcmp(((const struct entry *)x)->key,
		      ((const struct entry *)y)->key);
}

static void free_entries(struct entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		free(e[i].key);
	free(e);
}

// The entries of one list of snap, sorted by key.
static struct hd_error *entries(const struct hd_snapshot *snap,
				const struct list_kind *k, struct entry **ret,
				size_t *ret_n)
{
	size_t n = k == &TYPES ? snap->num_types
		 : k == &CLASSES ? snap->num_classes : snap->num_paths;
	struct entry *e = calloc(n ? n : 1, sizeof(*e));
	if (!e)
		return &hd_error_no_memory;
	for (size_t i = 0; i < n; i++) {
		char buf[48];
		const char *key;
		if (k == &TYPES) {
			const struct hd_snap_type *t = &snap->types[i];
			key = hd_snap_type_key(t, buf, sizeof(buf));
			e[i] = (struct entry){NULL, {t->count, t->bytes, t->retained}, t};
		} else if (k == &CLASSES) {
			const struct hd_snap_class *c = &snap->classes[i];
			// Zero-padded so that the keys sort by size.
			snprintf(buf, sizeof(buf), "%020" PRIu64 "-%020" PRIu64, c->min,
				 c->max);
			key = buf;
			e[i] = (struct entry){NULL, {c->blocks, c->bytes, 0}, c};
		} else {
			const struct hd_snap_path *p = &snap->paths[i];
			key = p->path;
			e[i] = (struct entry){NULL, {p->count, p->blocks, p->retained}, p};
		}
		e[i].key = strdup(key);
		if (!e[i].key) {
			free_entries(e, i);
			return &hd_error_no_memory;
		}
	}
	hd_qsort(e, n, sizeof(*e), entry_cmp);
	// A key twice in one snapshot (a hand-edited file): one entry.
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && strcmp(e[m - 1].key, e[i].key) == 0) {
			for (int j = 0; j < 3; j++)
				e[m - 1].v[j] += e[i].v[j];
			free(e[i].key);
			continue;
		}
		e[m++] = e[i];
	}
	*ret = e;
	*ret_n = m;
	return NULL;
}

static int64_t delta(const struct row *r, int i)
{
	return (int64_t)(r->after[i] - r->before[i]);
}

// > 0 when the row grew: its primary value, or failing that its first
// changed value.
static int growth_sign(const struct list_kind *k, const struct row *r)
{
	if (delta(r, k->primary))
		return delta(r, k->primary) > 0 ? 1 : -1;
	for (int i = 0; i < k->nv; i++)
		if (delta(r, i))
			return delta(r, i) > 0 ? 1 : -1;
	return 0;
}

static const struct list_kind *g_kind;
// Grown rows first, largest growth first; then shrunk rows, largest loss
// first; ties by key.
static int row_cmp(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int sa = growth_sign(g_kind, a), sb = growth_sign(g_kind, b);
	if (sa != sb)
		return sa > sb ? -1 : 1;
	int p = g_kind->primary;
	int64_t da = delta(a, p), db = delta(b, p);
	if (da != db)
		return (da > db) == (sa > 0) ? -1 : 1;
	for (int i = 0; i < g_kind->nv; i++) {
		if (delta(a, i) != delta(b, i))
			return (delta(a, i) > delta(b, i)) == (sa > 0) ? -1 : 1;
	}
	return strcmp(a->key, b->key);
}

struct changes {
	struct entry *ea, *eb;
	size_t na, nb;
	struct row *rows; // changed rows, growth first
	size_t n;
};

static void changes_free(struct changes *c)
{
	free_entries(c->ea, c->na);
	free_entries(c->eb, c->nb);
	free(c->rows);
}

static struct hd_error *compare(const struct hd_snapshot *a,
				const struct hd_snapshot *b,
				const struct list_kind *k, struct changes *c)
{
	memset(c, 0, sizeof(*c));
	struct hd_error *err = entries(a, k, &c->ea, &c->na);
	if (!err)
		err = entries(b, k, &c->eb, &c->nb);
	if (!err) {
		c->rows = calloc(c->na + c->nb + 1, sizeof(*c->rows));
		if (!c->rows)
			err = &hd_error_no_memory;
	}
	if (err) {
		changes_free(c);
		return err;
	}
	size_t i = 0, j = 0;
	while (i < c->na || j < c->nb) {
		int cmp = i == c->na ? 1 : j == c->nb ? -1
			: strcmp(c->ea[i].key, c->eb[j].key);
		struct row r = {0};
		if (cmp <= 0) {
			r.key = c->ea[i].key;
			memcpy(r.before, c->ea[i].v, sizeof(r.before));
			r.src_before = c->ea[i++].src;
		}
		if (cmp >= 0) {
			r.key = c->eb[j].key;
			memcpy(r.after, c->eb[j].v, sizeof(r.after));
			r.src_after = c->eb[j++].src;
		}
		if (memcmp(r.before, r.after, sizeof(r.before)) != 0)
			c->rows[c->n++] = r;
	}
	g_kind = k;
	hd_qsort(c->rows, c->n, sizeof(*c->rows), row_cmp);
	return NULL;
}

static const char *status(const struct row *r)
{
	return !r->src_before ? "new" : !r->src_after ? "gone" : "changed";
}

// ------------------------------------------------------------- JSON

static void json_values(FILE *out, const struct list_kind *k, const char *name,
			const uint64_t *v, const struct row *r)
{
	fprintf(out, ", \"%s\": {", name);
	for (int i = 0; i < k->nv; i++) {
		if (r)
			fprintf(out, "%s\"%s\": %" PRId64, i ? ", " : "", k->fields[i],
				delta(r, i));
		else
			fprintf(out, "%s\"%s\": %" PRIu64, i ? ", " : "", k->fields[i],
				v[i]);
	}
	fputc('}', out);
}

static void json_list(FILE *out, const struct list_kind *k,
		      const struct changes *c, size_t limit)
{
	fprintf(out, ",\n\"%s\": [", k->name);
	for (size_t i = 0; i < c->n && i < limit; i++) {
		const struct row *r = &c->rows[i];
		const void *src = r->src_after ? r->src_after : r->src_before;
		fputs(i ? ",\n{" : "\n{", out);
		if (k == &TYPES) {
			const struct hd_snap_type *t = src;
			fputs("\"type\": ", out);
			if (t->name)
				hd_json_string(out, t->name);
			else
				fprintf(out, "null, \"size\": %" PRIu64, t->size);
		} else if (k == &CLASSES) {
			const struct hd_snap_class *cl = src;
			fprintf(out, "\"min\": %" PRIu64 ", \"max\": %" PRIu64, cl->min,
				cl->max);
		} else {
			fputs("\"path\": ", out);
			hd_json_string(out, r->key);
		}
		fprintf(out, ", \"status\": \"%s\"", status(r));
		json_values(out, k, "before", r->before, NULL);
		json_values(out, k, "after", r->after, NULL);
		json_values(out, k, "delta", NULL, r);
		fputc('}', out);
	}
	fprintf(out, "], \"num_%s\": %zu", k->name, c->n);
}

static void json_count(FILE *out, const char *name,
		       const struct hd_snap_count *c)
{
	fprintf(out, "\"%s\": {\"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
		name, c->blocks, c->bytes);
}

static const char *const total_names[] = {"used", "free", "top", "internal"};

static const struct hd_snap_count *total(const struct hd_snapshot *s, int i)
{
	const struct hd_snap_count *t[] = {&s->used, &s->free, &s->top,
					   &s->internal};
	return t[i];
}

static void json_totals(FILE *out, const struct hd_snapshot *s)
{
	for (int i = 0; i < 4; i++) {
		if (i)
			fputs(", ", out);
		json_count(out, total_names[i], total(s, i));
	}
}

static void render_json(FILE *out, struct hd_snapshot *const *snaps, size_t n,
			const struct changes *lists,
			const struct list_kind *const *kinds, size_t limit)
{
	fputs("{\"snapshots\": [", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n{\"source\": " : "\n{\"source\": ", out);
		hd_json_string(out, snaps[i]->source);
		fputs(", \"target\": ", out);
		hd_json_string(out, snaps[i]->target);
		fputs(", \"target_kind\": ", out);
		hd_json_string(out, snaps[i]->target_kind);
		fprintf(out, ", \"partial\": %s, \"totals\": {",
			snaps[i]->partial ? "true" : "false");
		json_totals(out, snaps[i]);
		fputs("}}", out);
	}
	fprintf(out, "],\n\"from\": 0, \"to\": %zu, \"totals\": {", n - 1);
	const struct hd_snapshot *a = snaps[0], *b = snaps[n - 1];
	for (int i = 0; i < 4; i++) {
		const struct hd_snap_count *ca = total(a, i), *cb = total(b, i);
		fprintf(out, "%s\"%s\": {", i ? ", " : "", total_names[i]);
		json_count(out, "before", ca);
		fputs(", ", out);
		json_count(out, "after", cb);
		fprintf(out, ", \"delta\": {\"blocks\": %" PRId64 ", \"bytes\": %" PRId64 "}}",
			(int64_t)(cb->blocks - ca->blocks),
			(int64_t)(cb->bytes - ca->bytes));
	}
	fputc('}', out);
	for (int k = 0; k < 3; k++)
		json_list(out, kinds[k], &lists[k], limit);
	fputs("}\n", out);
}

// ------------------------------------------------------------- text

// "+1.5 KiB", "-48 B", "0"; counts as "+3".
static void fmt_delta(int64_t d, bool size, char *buf, size_t len)
{
	if (d == 0) {
		snprintf(buf, len, "0");
		return;
	}
	uint64_t m = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	char s[32];
	if (size)
		hd_format_size(m, s, sizeof(s));
	else
		snprintf(s, sizeof(s), "%" PRIu64, m);
	snprintf(buf, len, "%c%s", d < 0 ? '-' : '+', s);
}

static void fmt_value(uint64_t v, bool size, char *buf, size_t len)
{
	if (size)
		hd_format_size(v, buf, len);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

static void text_key(FILE *out, const struct list_kind *k, const struct row *r)
{
	const void *src = r->src_after ? r->src_after : r->src_before;
	if (k == &TYPES) {
		char buf[48];
		fputs(hd_snap_type_key(src, buf, sizeof(buf)), out);
	} else if (k == &CLASSES) {
		const struct hd_snap_class *c = src;
		char lo[32], hi[32];
		hd_format_size(c->min, lo, sizeof(lo));
		hd_format_size(c->max, hi, sizeof(hi));
		fprintf(out, "%s - %s", lo, hi);
	} else {
		fputs(r->key, out);
	}
	if (!r->src_before)
		fputs("  (new)", out);
	else if (!r->src_after)
		fputs("  (gone)", out);
}

static void text_list(FILE *out, const struct list_kind *k,
		      const struct changes *c, size_t limit, bool color)
{
	// Grown rows come first in c->rows, shrunk ones last.
	size_t grew = 0;
	while (grew < c->n && growth_sign(k, &c->rows[grew]) > 0)
		grew++;
	for (int part = 0; part < 2; part++) {
		size_t n = part ? c->n - grew : grew;
		if (!n)
			continue;
		char title[128];
		snprintf(title, sizeof(title), k->title, part ? "shrank" : "grew");
		hd_heading(out, color, "\n%s", title);
		fputs(" ", out);
		for (int i = 0; i < k->nv; i++)
			fprintf(out, " %12s", k->fields[i]);
		fprintf(out, " %12s  %s\n", "after", k == &PATHS ? "root path"
						    : k == &TYPES ? "type" : "size");
		for (size_t j = 0; j < n && j < limit; j++) {
			const struct row *r = &c->rows[part ? grew + j : j];
			fputs(" ", out);
			for (int i = 0; i < k->nv; i++) {
				char d[40];
				fmt_delta(delta(r, i), k->sizes[i], d, sizeof(d));
				fprintf(out, " %12s", d);
			}
			char after[32];
			fmt_value(r->after[k->primary], k->sizes[k->primary], after,
				  sizeof(after));
			fprintf(out, " %12s  ", after);
			text_key(out, k, r);
			fputc('\n', out);
		}
		if (n > limit)
			fprintf(out, "  … %zu more (--top N)\n", n - limit);
	}
}

// Which parts --what shows: totals and size classes for stats, types,
// root paths for dominators, all by default.
static bool shows(int what, int part)
{
	return what == 0 || what == part;
}

static void render_text(FILE *out, struct hd_snapshot *const *snaps, size_t n,
			const struct changes *lists,
			const struct list_kind *const *kinds, size_t limit,
			bool color, int what)
{
	const struct hd_snapshot *a = snaps[0], *b = snaps[n - 1];
	for (size_t i = 0; i < n; i++)
		if (snaps[i]->partial)
			fprintf(out, "warning: snapshot %zu (%s) is partial (a damaged heap, a truncated core or an allocator heapdom does not walk)\n",
				i + 1, snaps[i]->source);
	if (n > 2) {
		hd_heading(out, color, "Series of %zu snapshots", n);
		fprintf(out, "  %4s %12s %12s %12s %12s  %s\n", "#", "used blocks",
			"used bytes", "change", "free bytes", "snapshot");
		for (size_t i = 0; i < n; i++) {
			char used[32], ch[40], fr[32];
			hd_format_size(snaps[i]->used.bytes, used, sizeof(used));
			hd_format_size(snaps[i]->free.bytes, fr, sizeof(fr));
			if (i)
				fmt_delta((int64_t)(snaps[i]->used.bytes -
						    snaps[i - 1]->used.bytes),
					  true, ch, sizeof(ch));
			else
				ch[0] = '\0';
			fprintf(out, "  %4zu %12" PRIu64 " %12s %12s %12s  %s\n", i + 1,
				snaps[i]->used.blocks, used, ch, fr, snaps[i]->source);
		}
		fputc('\n', out);
		hd_heading(out, color, "From #1 to #%zu: %s -> %s", n, a->source,
			   b->source);
	} else {
		hd_heading(out, color, "Heap diff: %s -> %s", a->source, b->source);
	}
	if (shows(what, 1))
		fprintf(out, "  %-16s %12s %12s %12s\n", "", "before", "after", "change");
	for (int i = 0; i < 4 && shows(what, 1); i++) {
		const struct hd_snap_count *ca = total(a, i), *cb = total(b, i);
		char label[32], x[32], y[32], d[40];
		snprintf(label, sizeof(label), "%s blocks", total_names[i]);
		fmt_delta((int64_t)(cb->blocks - ca->blocks), false, d, sizeof(d));
		fprintf(out, "  %-16s %12" PRIu64 " %12" PRIu64 " %12s\n", label,
			ca->blocks, cb->blocks, d);
		snprintf(label, sizeof(label), "%s bytes", total_names[i]);
		hd_format_size(ca->bytes, x, sizeof(x));
		hd_format_size(cb->bytes, y, sizeof(y));
		fmt_delta((int64_t)(cb->bytes - ca->bytes), true, d, sizeof(d));
		fprintf(out, "  %-16s %12s %12s %12s\n", label, x, y, d);
	}
	bool any = false;
	// kinds: types, size classes, root paths.
	static const int part[] = {2, 1, 3};
	for (int k = 0; k < 3; k++) {
		if (!shows(what, part[k]))
			continue;
		text_list(out, kinds[k], &lists[k], limit, color);
		any |= lists[k].n != 0;
	}
	if (!any)
		fputs("\nNo type, size class or root path changed.\n", out);
}

// ------------------------------------------------------------ entry

struct hd_error *hd_render_diff(FILE *out, struct hd_snapshot *const *snaps,
				size_t n, const struct hd_render_options *o)
{
	if (n < 2)
		return hd_error_create(HD_ERROR_INVALID,
				       "diff needs two snapshots (files or cores), or more for a series");
	static const struct list_kind *const kinds[] = {&TYPES, &CLASSES, &PATHS};
	struct changes lists[3];
	struct hd_error *err = NULL;
	int done = 0;
	for (; done < 3 && !err; done++)
		err = compare(snaps[0], snaps[n - 1], kinds[done], &lists[done]);
	if (err) {
		for (int k = 0; k < done - 1; k++)
			changes_free(&lists[k]);
		return err;
	}
	if (o->format == HD_FORMAT_JSON)
		render_json(out, snaps, n, lists, kinds, o->top ? o->top : SIZE_MAX);
	else
		render_text(out, snaps, n, lists, kinds, o->top ? o->top : TEXT_TOP,
			    o->color, o->what);
	for (int k = 0; k < 3; k++)
		changes_free(&lists[k]);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}

struct hd_error *hd_run_diff(FILE *out, const struct hd_command *c,
			     const struct hd_render_options *o)
{
	size_t n = c->num_operands;
	struct hd_snapshot **snaps = calloc(n ? n : 1, sizeof(*snaps));
	if (!snaps)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	// Snapshots made from cores keep what the text shows at most, and
	// no fewer root paths than a snapshot file.
	struct hd_render_options so = *o;
	so.top = 0;
	for (size_t i = 0; i < n && !err; i++)
		err = hd_snapshot_load(c->operands[i], c->target, c->session, &so,
				       &snaps[i]);
	if (!err)
		err = hd_render_diff(out, snaps, n, o);
	for (size_t i = 0; i < n; i++)
		hd_snapshot_destroy(snaps[i]);
	free(snaps);
	return err;
}
