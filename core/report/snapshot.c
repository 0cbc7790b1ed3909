// Heap snapshot summaries: made from a session, written and read as JSON.
// A snapshot keeps what survives a restart — totals, size classes, the
// type histogram, and the largest dominator subtrees named by their root
// path — so that diff.c can compare two stops, two cores or two runs.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/snapshot.h"
#include "session/session_internal.h"
#include "util/json.h"
#include "util/sort.h"

#define DEFAULT_DEPTH 1
#define DEFAULT_LIMIT 200
// Root paths cost a walk up the dominator tree and a few reference
// lookups each: only the largest candidates get one.
#define MIN_EVALUATED 4096

const char *hd_snap_type_key(const struct hd_snap_type *t, char *buf,
			     size_t len)
{
	if (t->name)
		return t->name;
	snprintf(buf, len, "unk<%" PRIu64 ">", t->size);
	return buf;
}

void hd_snapshot_destroy(struct hd_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->source);
	free(snap->target);
	free(snap->target_kind);
	free(snap->classes);
	for (size_t i = 0; i < snap->num_types; i++)
		free(snap->types[i].name);
	free(snap->types);
	for (size_t i = 0; i < snap->num_paths; i++)
		free(snap->paths[i].path);
	free(snap->paths);
	free(snap);
}

// ------------------------------------------------------------ making

static void totals(const struct hd_heap *h, struct hd_snapshot *snap,
		   struct hd_snap_count *classes)
{
	size_t n = hd_heap_num_blocks(h);
	for (size_t i = 0; i < n; i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		struct hd_snap_count *c;
		if (b.state == HD_STATE_USED) {
			c = &snap->used;
			classes[hd_size_class(b.usable)].blocks++;
			classes[hd_size_class(b.usable)].bytes += b.usable;
		} else if (b.state == HD_STATE_INTERNAL) {
			c = &snap->internal;
		} else if (hd_heap_free_list(h, b.list)->reserve) {
			c = &snap->top;
		} else {
			c = &snap->free;
		}
		c->blocks++;
		c->bytes += b.extent;
	}
}

static struct hd_error *make_classes(struct hd_snapshot *snap,
				     const struct hd_snap_count *classes)
{
	snap->classes = calloc(HD_SIZE_CLASSES, sizeof(*snap->classes));
	if (!snap->classes)
		return &hd_error_no_memory;
	for (unsigned k = 0; k < HD_SIZE_CLASSES; k++) {
		if (!classes[k].blocks)
			continue;
		snap->classes[snap->num_classes++] = (struct hd_snap_class){
			.min = k == 0 ? 0 : (1ULL << (k - 1)) + 1,
			.max = 1ULL << k,
			.blocks = classes[k].blocks,
			.bytes = classes[k].bytes,
		};
	}
	return NULL;
}

static int type_cmp(const void *x, const void *y)
{
	const struct hd_snap_type *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (!a->name != !b->name)
		return a->name ? -1 : 1;
	if (a->name)
		return strcmp(a->name, b->name);
	return a->size < b->size ? -1 : a->size > b->size;
}

static struct hd_error *make_types(const struct hd_analysis *a,
				   struct hd_snapshot *snap)
{
	struct hd_type_row *rows;
	size_t n;
	struct hd_error *err = hd_type_rows(a, &rows, &n);
	if (err)
		return err;
	snap->types = calloc(n ? n : 1, sizeof(*snap->types));
	if (!snap->types) {
		hd_type_rows_free(rows, n);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < n; i++) {
		// The row's name moves into the snapshot.
		snap->types[i] = (struct hd_snap_type){
			.name = rows[i].name,
			.size = rows[i].name ? 0 : rows[i].usable,
			.count = rows[i].count,
			.bytes = rows[i].bytes,
			.retained = rows[i].retained,
		};
		rows[i].name = NULL;
	}
	snap->num_types = n;
	hd_type_rows_free(rows, n);
	hd_qsort(snap->types, n, sizeof(*snap->types), type_cmp);
	return NULL;
}

// Candidates for root paths: the top holders (blocks a root or several
// roots keep alive directly) and their dominator-tree children down to
// depth levels.
static struct hd_error *candidates(const struct hd_analysis *a, unsigned depth,
				   uint32_t **ret, size_t *ret_n)
{
	size_t n = 0, cap = 1024;
	uint32_t *v = malloc(cap * sizeof(*v));
	if (!v)
		return &hd_error_no_memory;
	size_t nroots = hd_graph_num_roots(a->g);
	size_t level_start = 0;
	for (unsigned level = 0; level <= depth; level++) {
		size_t level_end = n;
		size_t from = level == 0 ? 0 : level_start;
		size_t to = level == 0 ? nroots + 1 : level_end;
		for (size_t i = from; i < to; i++) {
			uint32_t parent = level == 0 ? (uint32_t)i : v[i];
			const uint32_t *c;
			size_t k;
			hd_dom_children(a->d, parent, &c, &k);
			for (size_t j = 0; j < k; j++) {
				if (hd_graph_vertex_block(a->g, c[j]) < 0)
					continue;
				if (n == cap) {
					uint32_t *p = realloc(v, 2 * cap * sizeof(*p));
					if (!p) {
						free(v);
						return &hd_error_no_memory;
					}
					v = p;
					cap *= 2;
				}
				v[n++] = c[j];
			}
		}
		level_start = level_end;
		if (n == level_end)
			break;
	}
	*ret = v;
	*ret_n = n;
	return NULL;
}

// How well a root names a path that must match between two snapshots:
// a global keeps its name from stop to stop; which register or stack slot
// holds a copy of the same pointer changes with where the threads stand.
static int root_stability(enum hd_root_kind kind)
{
	switch (kind) {
	case HD_ROOT_GLOBAL:
		return 0;
	case HD_ROOT_REGION:
		return 1;
	case HD_ROOT_TLS:
		return 2;
	case HD_ROOT_LOCAL:
		return 3;
	case HD_ROOT_FRAME:
		return 4;
	case HD_ROOT_STACK:
		return 5;
	case HD_ROOT_REGISTERS:
		break;
	}
	return 6;
}

// The chain of v: its named root, then the blocks that dominate v down to
// v itself. A holder of several roots starts at the most stable root that
// refers to it directly (root_stability; the first of equals), or at the
// nearest root (why's shortest chain).
static struct hd_error *chain_of(const struct hd_analysis *a, uint32_t v,
				 uint32_t **ret, size_t *ret_len)
{
	size_t n = 0;
	uint32_t u = v;
	for (;;) {
		n++;
		uint32_t up = hd_dom_idom(a->d, u);
		if (up == 0 || up == HD_DOM_NONE || hd_graph_vertex_root(a->g, up) >= 0)
			break;
		u = up;
	}
	// u: the top holder; its dominator a root, or the super-root.
	uint32_t top = u, idom = hd_dom_idom(a->d, top);
	uint32_t *prefix = NULL;
	size_t plen = 0;
	if (idom != 0 && idom != HD_DOM_NONE) {
		plen = 1;
	} else {
		const uint32_t *p;
		size_t k;
		hd_graph_predecessors(a->g, top, &p, &k);
		uint32_t root = 0;
		int best = 0;
		for (size_t i = 0; i < k; i++) {
			int64_t r = hd_graph_vertex_root(a->g, p[i]);
			if (r < 0)
				continue;
			int rank = root_stability(hd_graph_root(a->g, (size_t)r)->kind);
			if (!root || rank < best) {
				root = p[i];
				best = rank;
			}
		}
		if (root) {
			idom = root;
			plen = 1;
		} else {
			struct hd_error *err =
				hd_shortest_chain(a, top, true, &prefix, &plen);
			if (err)
				return err;
			plen--; // the chain ends with top itself
		}
	}
	uint32_t *path = malloc((plen + n) * sizeof(*path));
	if (!path) {
		free(prefix);
		return &hd_error_no_memory;
	}
	if (prefix)
		memcpy(path, prefix, plen * sizeof(*path));
	else
		path[0] = idom;
	free(prefix);
	u = v;
	for (size_t i = plen + n; i-- > plen;) {
		path[i] = u;
		u = hd_dom_idom(a->d, u);
	}
	*ret = path;
	*ret_len = plen + n;
	return NULL;
}

// The root path of v as one line: "MODULE:g_table -> struct table.buckets[3]
// -> struct item".
static struct hd_error *path_text(const struct hd_analysis *a, uint32_t v,
				  char **ret)
{
	uint32_t *path;
	size_t len;
	struct hd_error *err = chain_of(a, v, &path, &len);
	if (err)
		return err;
	struct hd_chain_ref *refs = NULL;
	// A stack or TLS root names no member: its reference is not looked
	// for (scanning a whole stack per subtree would be slow).
	int64_t r = hd_graph_vertex_root(a->g, path[0]);
	size_t skip = 1;
	if (r >= 0) {
		enum hd_root_kind k = hd_graph_root(a->g, (size_t)r)->kind;
		if (k == HD_ROOT_GLOBAL || k == HD_ROOT_REGION ||
		    k == HD_ROOT_REGISTERS)
			skip = 0;
	}
	err = hd_chain_refs(a, path + skip, len - skip, &refs);
	if (err) {
		free(path);
		return err;
	}
	struct hd_chain_ref *all = calloc(len, sizeof(*all));
	if (!all) {
		free(refs);
		free(path);
		return &hd_error_no_memory;
	}
	all[0].reg = -1;
	memcpy(all + skip, refs, (len - skip) * sizeof(*all));
	free(refs);
	size_t size;
	char *text = NULL;
	FILE *f = open_memstream(&text, &size);
	if (f) {
		hd_chain_line(f, a, path, len, all, " -> ", true);
		if (fclose(f) != 0) {
			free(text);
			text = NULL;
		}
	}
	free(all);
	free(path);
	if (!text)
		return &hd_error_no_memory;
	*ret = text;
	return NULL;
}

static int path_name_cmp(const void *x, const void *y)
{
	const struct hd_snap_path *a = x, *b = y;
	return strcmp(a->path, b->path);
}

static int path_retained_cmp(const void *x, const void *y)
{
	const struct hd_snap_path *a = x, *b = y;
	if (a->retained != b->retained)
		return a->retained > b->retained ? -1 : 1;
	return strcmp(a->path, b->path);
}

static struct hd_error *make_paths(const struct hd_analysis *a,
				   struct hd_snapshot *snap)
{
	uint32_t *cand;
	size_t n;
	struct hd_error *err = candidates(a, (unsigned)snap->depth, &cand, &n);
	if (err)
		return err;
	hd_sort_by_retained(a->d, cand, n);
	size_t eval = snap->limit * 16 > MIN_EVALUATED ? snap->limit * 16
							 : MIN_EVALUATED;
	if (eval > n)
		eval = n;
	snap->candidates = n;
	snap->evaluated = eval;
	struct hd_snap_path *p = calloc(eval ? eval : 1, sizeof(*p));
	if (!p) {
		free(cand);
		return &hd_error_no_memory;
	}
	size_t np = 0;
	for (size_t i = 0; i < eval; i++) {
		err = path_text(a, cand[i], &p[np].path);
		if (err)
			break;
		p[np].count = 1;
		p[np].blocks = hd_dom_retained_blocks(a->d, cand[i]);
		p[np].retained = hd_dom_retained(a->d, cand[i]);
		np++;
	}
	free(cand);
	if (!err) {
		// Subtrees with the same root path are one entry.
		hd_qsort(p, np, sizeof(*p), path_name_cmp);
		size_t m = 0;
		for (size_t i = 0; i < np; i++) {
			if (m && strcmp(p[m - 1].path, p[i].path) == 0) {
				p[m - 1].count += p[i].count;
				p[m - 1].blocks += p[i].blocks;
				p[m - 1].retained += p[i].retained;
				free(p[i].path);
				continue;
			}
			p[m++] = p[i];
		}
		hd_qsort(p, m, sizeof(*p), path_retained_cmp);
		for (size_t i = snap->limit; i < m; i++)
			free(p[i].path);
		np = m < snap->limit ? m : snap->limit;
	} else {
		for (size_t i = 0; i < np; i++)
			free(p[i].path);
		np = 0;
	}
	snap->paths = p;
	snap->num_paths = np;
	return err;
}

static struct hd_error *set_string(char **dst, const char *s)
{
	*dst = strdup(s ? s : "");
	return *dst ? NULL : &hd_error_no_memory;
}

struct hd_error *hd_snapshot_make(struct hd_session *s,
				  const struct hd_render_options *o,
				  struct hd_snapshot **ret)
{
	hd_session_prepare_types(s);
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get(s, &a);
	if (!err)
		hd_analysis_semantic(s, &a); // its types (hd_type_rows)
	// Typing has joined the DWARF reading unless the analysis failed first.
	hd_session_join_prefetch(s);
	// The subtrees' root paths follow references backwards.
	const struct hd_csr *rev;
	if (!err)
		err = hd_analysis_reverse(&a, &rev);
	if (err)
		return err;
	struct hd_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap)
		return &hd_error_no_memory;
	snap->depth = o && o->depth_set ? o->depth : DEFAULT_DEPTH;
	snap->limit = o && o->top ? o->top : DEFAULT_LIMIT;
	snap->partial = hd_heap_partial(a.h) || hd_target_truncation(a.t, NULL);
	struct hd_snap_count classes[HD_SIZE_CLASSES] = {{0}};
	totals(a.h, snap, classes);
	err = set_string(&snap->source, hd_target_name(a.t));
	if (!err)
		err = set_string(&snap->target, hd_target_name(a.t));
	if (!err)
		err = set_string(&snap->target_kind, hd_target_kind(a.t));
	if (!err)
		err = make_classes(snap, classes);
	if (!err)
		err = make_types(&a, snap);
	if (!err)
		err = make_paths(&a, snap);
	if (err) {
		hd_snapshot_destroy(snap);
		return err;
	}
	*ret = snap;
	return NULL;
}

// ----------------------------------------------------------- writing

static void json_count(FILE *out, const char *name,
		       const struct hd_snap_count *c)
{
	fprintf(out, "\"%s\": {\"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
		name, c->blocks, c->bytes);
}

struct hd_error *hd_snapshot_write(FILE *out, const struct hd_snapshot *snap)
{
	fprintf(out, "{\"heapdom_snapshot\": %d, \"target\": ",
		HD_SNAPSHOT_VERSION);
	hd_json_string(out, snap->target);
	fputs(", \"target_kind\": ", out);
	hd_json_string(out, snap->target_kind);
	fprintf(out, ", \"partial\": %s,\n\"totals\": {",
		snap->partial ? "true" : "false");
	json_count(out, "used", &snap->used);
	fputs(", ", out);
	json_count(out, "free", &snap->free);
	fputs(", ", out);
	json_count(out, "top", &snap->top);
	fputs(", ", out);
	json_count(out, "internal", &snap->internal);
	fputs("},\n\"size_classes\": [", out);
	for (size_t i = 0; i < snap->num_classes; i++) {
		const struct hd_snap_class *c = &snap->classes[i];
		fprintf(out,
			"%s\n{\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			i ? "," : "", c->min, c->max, c->blocks, c->bytes);
	}
	fputs("],\n\"types\": [", out);
	for (size_t i = 0; i < snap->num_types; i++) {
		const struct hd_snap_type *t = &snap->types[i];
		fprintf(out, "%s\n{\"type\": ", i ? "," : "");
		if (t->name)
			hd_json_string(out, t->name);
		else
			fprintf(out, "null, \"size\": %" PRIu64, t->size);
		fprintf(out, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			", \"retained\": %" PRIu64 "}",
			t->count, t->bytes, t->retained);
	}
	fprintf(out,
		"],\n\"subtree_depth\": %" PRIu64 ", \"subtree_limit\": %" PRIu64
		", \"subtree_candidates\": %" PRIu64 ", \"subtrees_evaluated\": %" PRIu64
		",\n\"subtrees\": [",
		snap->depth, snap->limit, snap->candidates, snap->evaluated);
	for (size_t i = 0; i < snap->num_paths; i++) {
		const struct hd_snap_path *p = &snap->paths[i];
		fprintf(out, "%s\n{\"path\": ", i ? "," : "");
		hd_json_string(out, p->path);
		fprintf(out, ", \"count\": %" PRIu64 ", \"blocks\": %" PRIu64
			", \"retained\": %" PRIu64 "}",
			p->count, p->blocks, p->retained);
	}
	fputs("]}\n", out);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}

// ----------------------------------------------------------- reading

static struct hd_error *read_count(const struct hd_json *d,
				   const struct hd_json_value *obj,
				   const char *key, struct hd_snap_count *c)
{
	const struct hd_json_value *v;
	struct hd_error *err = hd_json_member(d, obj, key, HD_JSON_OBJECT, &v);
	if (!err)
		err = hd_json_get_u64(d, v, "blocks", &c->blocks);
	if (!err)
		err = hd_json_get_u64(d, v, "bytes", &c->bytes);
	return err;
}

static struct hd_error *read_array(const struct hd_json *d,
				   const struct hd_json_value *obj,
				   const char *key, size_t elem, void **ret,
				   size_t *n, const struct hd_json_value **arr)
{
	struct hd_error *err = hd_json_member(d, obj, key, HD_JSON_ARRAY, arr);
	if (err)
		return err;
	*ret = calloc((*arr)->count ? (*arr)->count : 1, elem);
	if (!*ret)
		return &hd_error_no_memory;
	*n = 0;
	return NULL;
}

static struct hd_error *read_classes(const struct hd_json *d,
				     const struct hd_json_value *root,
				     struct hd_snapshot *snap)
{
	const struct hd_json_value *arr = NULL;
	struct hd_error *err = read_array(d, root, "size_classes",
					  sizeof(*snap->classes),
					  (void **)&snap->classes,
					  &snap->num_classes, &arr);
	for (uint32_t i = err ? HD_JSON_NONE : arr->first; i != HD_JSON_NONE;
	     i = d->values[i].next) {
		const struct hd_json_value *e = &d->values[i];
		struct hd_snap_class *c = &snap->classes[snap->num_classes];
		err = hd_json_get_u64(d, e, "min", &c->min);
		if (!err)
			err = hd_json_get_u64(d, e, "max", &c->max);
		if (!err)
			err = hd_json_get_u64(d, e, "blocks", &c->blocks);
		if (!err)
			err = hd_json_get_u64(d, e, "bytes", &c->bytes);
		if (!err && c->min > c->max)
			err = hd_json_error(d, e, "size class with min > max");
		if (err)
			break;
		snap->num_classes++;
	}
	return err;
}

static struct hd_error *read_types(const struct hd_json *d,
				   const struct hd_json_value *root,
				   struct hd_snapshot *snap)
{
	const struct hd_json_value *arr = NULL;
	struct hd_error *err = read_array(d, root, "types", sizeof(*snap->types),
					  (void **)&snap->types,
					  &snap->num_types, &arr);
	for (uint32_t i = err ? HD_JSON_NONE : arr->first; i != HD_JSON_NONE;
	     i = d->values[i].next) {
		const struct hd_json_value *e = &d->values[i];
		struct hd_snap_type *t = &snap->types[snap->num_types];
		const struct hd_json_value *name = hd_json_find(d, e, "type");
		if (e->kind != HD_JSON_OBJECT)
			err = hd_json_error(d, e, "a type must be an object");
		else if (!name)
			err = hd_json_error(d, e, "member \"type\" is missing");
		else if (name->kind == HD_JSON_STRING)
			err = set_string(&t->name, name->str);
		else if (name->kind == HD_JSON_NULL)
			err = hd_json_get_u64(d, e, "size", &t->size);
		else
			err = hd_json_error(d, name,
					    "\"type\" must be a string or null");
		if (!err)
			err = hd_json_get_u64(d, e, "count", &t->count);
		if (!err)
			err = hd_json_get_u64(d, e, "bytes", &t->bytes);
		if (!err)
			err = hd_json_get_u64(d, e, "retained", &t->retained);
		if (err)
			break;
		snap->num_types++;
	}
	if (err && snap->types && snap->num_types < (arr ? arr->count : 0))
		free(snap->types[snap->num_types].name);
	return err;
}

static struct hd_error *read_paths(const struct hd_json *d,
				   const struct hd_json_value *root,
				   struct hd_snapshot *snap)
{
	const struct hd_json_value *arr = NULL;
	struct hd_error *err = read_array(d, root, "subtrees", sizeof(*snap->paths),
					  (void **)&snap->paths,
					  &snap->num_paths, &arr);
	for (uint32_t i = err ? HD_JSON_NONE : arr->first; i != HD_JSON_NONE;
	     i = d->values[i].next) {
		const struct hd_json_value *e = &d->values[i];
		struct hd_snap_path *p = &snap->paths[snap->num_paths];
		const char *s;
		err = hd_json_get_string(d, e, "path", &s);
		if (!err)
			err = hd_json_get_u64(d, e, "count", &p->count);
		if (!err)
			err = hd_json_get_u64(d, e, "blocks", &p->blocks);
		if (!err)
			err = hd_json_get_u64(d, e, "retained", &p->retained);
		if (!err)
			err = set_string(&p->path, s);
		if (err)
			break;
		snap->num_paths++;
	}
	return err;
}

struct hd_error *hd_snapshot_read(const char *path, struct hd_snapshot **ret)
{
	struct hd_json *d;
	struct hd_error *err = hd_json_read_file(path, &d);
	if (err)
		return err;
	struct hd_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap) {
		hd_json_destroy(d);
		return &hd_error_no_memory;
	}
	const struct hd_json_value *root = &d->values[0], *v;
	uint64_t version = 0;
	const char *target = NULL, *kind = NULL;
	if (root->kind != HD_JSON_OBJECT)
		err = hd_json_error(d, root, "not a heapdom snapshot: expected an object");
	else if (!hd_json_find(d, root, "heapdom_snapshot"))
		err = hd_json_error(d, root,
				    "not a heapdom snapshot: no \"heapdom_snapshot\" member");
	if (!err)
		err = hd_json_get_u64(d, root, "heapdom_snapshot", &version);
	if (!err && version != HD_SNAPSHOT_VERSION)
		err = hd_json_error(d, hd_json_find(d, root, "heapdom_snapshot"),
				    "snapshot format version %" PRIu64 ", this heapdom reads version %d",
				    version, HD_SNAPSHOT_VERSION);
	if (!err)
		err = hd_json_get_string(d, root, "target", &target);
	if (!err)
		err = hd_json_get_string(d, root, "target_kind", &kind);
	if (!err)
		err = hd_json_member(d, root, "partial", HD_JSON_BOOL, &v);
	if (!err) {
		snap->partial = v->boolean;
		err = hd_json_member(d, root, "totals", HD_JSON_OBJECT, &v);
	}
	if (!err)
		err = read_count(d, v, "used", &snap->used);
	if (!err)
		err = read_count(d, v, "free", &snap->free);
	if (!err)
		err = read_count(d, v, "top", &snap->top);
	if (!err)
		err = read_count(d, v, "internal", &snap->internal);
	if (!err)
		err = hd_json_get_u64(d, root, "subtree_depth", &snap->depth);
	if (!err)
		err = hd_json_get_u64(d, root, "subtree_limit", &snap->limit);
	if (!err)
		err = hd_json_get_u64(d, root, "subtree_candidates", &snap->candidates);
	if (!err)
		err = hd_json_get_u64(d, root, "subtrees_evaluated", &snap->evaluated);
	if (!err)
		err = read_classes(d, root, snap);
	if (!err)
		err = read_types(d, root, snap);
	if (!err)
		err = read_paths(d, root, snap);
	if (!err)
		err = set_string(&snap->source, path);
	if (!err)
		err = set_string(&snap->target, target);
	if (!err)
		err = set_string(&snap->target_kind, kind);
	hd_json_destroy(d);
	if (err) {
		hd_snapshot_destroy(snap);
		return err;
	}
	*ret = snap;
	return NULL;
}

struct hd_error *hd_snapshot_load(const char *path,
				  const struct hd_target_options *to,
				  const struct hd_session_options *so,
				  const struct hd_render_options *o,
				  struct hd_snapshot **ret)
{
	// A core is an ELF file; anything else must be a snapshot.
	FILE *f = fopen(path, "rb");
	if (!f)
		return hd_error_os(errno, path, "cannot open");
	unsigned char magic[4] = {0};
	size_t n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (n < 4 || memcmp(magic, "\177ELF", 4) != 0)
		return hd_snapshot_read(path, ret);
	struct hd_target_options tdef = {0};
	struct hd_session_options sdef = {0};
	struct hd_target *t;
	struct hd_error *err = hd_target_open_core(path, to ? to : &tdef, &t);
	if (err)
		return err;
	struct hd_session *s;
	err = hd_session_create(t, so ? so : &sdef, &s);
	if (err) {
		hd_target_destroy(t);
		return err;
	}
	err = hd_check_complete(t, o && o->partial);
	if (!err)
		err = hd_snapshot_make(s, o, ret);
	hd_session_destroy(s);
	return err;
}

// ------------------------------------------------------------ report

static void text_summary(FILE *out, const struct hd_snapshot *snap,
			 const struct hd_render_options *o)
{
	char used[32], freeb[32];
	hd_format_size(snap->used.bytes, used, sizeof(used));
	hd_format_size(snap->free.bytes, freeb, sizeof(freeb));
	fprintf(out,
		"snapshot of %s: %" PRIu64 " used blocks (%s), %" PRIu64 " free (%s), %zu types and sizes, %zu root paths\n",
		snap->target, snap->used.blocks, used, snap->free.blocks, freeb,
		snap->num_types, snap->num_paths);
	if (snap->partial)
		fprintf(out, "warning: this snapshot is partial (a damaged heap, a truncated core or an allocator heapdom does not walk)\n");
	size_t limit = o->top ? o->top : 10;
	hd_heading(out, o->color, "\nTypes (largest %zu by bytes)",
		   limit < snap->num_types ? limit : snap->num_types);
	fprintf(out, "  %10s %12s %12s  %s\n", "count", "bytes", "retained", "type");
	for (size_t i = 0; i < snap->num_types && i < limit; i++) {
		const struct hd_snap_type *t = &snap->types[i];
		char b[32], r[32], key[48];
		hd_format_size(t->bytes, b, sizeof(b));
		hd_format_size(t->retained, r, sizeof(r));
		fprintf(out, "  %10" PRIu64 " %12s %12s  %s\n", t->count, b, r,
			hd_snap_type_key(t, key, sizeof(key)));
	}
	hd_heading(out, o->color, "\nRoot paths (largest %zu by retained)",
		   limit < snap->num_paths ? limit : snap->num_paths);
	fprintf(out, "  %12s %8s %8s  %s\n", "retained", "blocks", "subtrees",
		"root path");
	for (size_t i = 0; i < snap->num_paths && i < limit; i++) {
		const struct hd_snap_path *p = &snap->paths[i];
		char r[32];
		hd_format_size(p->retained, r, sizeof(r));
		fprintf(out, "  %12s %8" PRIu64 " %8" PRIu64 "  %s\n", r, p->blocks,
			p->count, p->path);
	}
	fputs("\n(--output FILE saves the snapshot; `heapdom diff A B` compares two)\n",
	      out);
}

struct hd_error *hd_render_snapshot(FILE *out, struct hd_session *s,
				    const struct hd_render_options *o)
{
	struct hd_snapshot *snap;
	// --top in the text summary is the rows shown, not the paths kept.
	struct hd_render_options mo = *o;
	if (o->format != HD_FORMAT_JSON)
		mo.top = 0;
	struct hd_error *err = hd_snapshot_make(s, &mo, &snap);
	if (err)
		return err;
	if (o->format == HD_FORMAT_JSON) {
		err = hd_snapshot_write(out, snap);
	} else {
		const struct hd_heap *h;
		struct hd_error *herr = hd_session_heap(s, &h);
		if (!herr)
			hd_text_problems(out, hd_session_target(s), h, o->color);
		hd_error_destroy(herr);
		text_summary(out, snap, o);
		if (ferror(out))
			err = hd_error_create(HD_ERROR_OS, "cannot write output");
	}
	hd_snapshot_destroy(snap);
	return err;
}
