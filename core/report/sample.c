// The report of `heapdom sample`: each sampled address mapped onto a heap
// block (its type and its top dominator subtree) or a region outside the
// heap (a thread's stack, a global, TLS, another mapping), counted per
// thread and overall, with a histogram by address bucket, the sampling
// cost, and an SVG picture of the per-thread histograms.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "sample/sampler.h"
#include "util/sort.h"

// Region keys: the kind in the top byte, a tid or an index below.
enum region_kind {
	REG_HEAP,
	REG_STACK,    // value: tid
	REG_ROOT,     // value: graph root index (global, region, TLS)
	REG_MAPPING,  // value: mapping index
	REG_UNMAPPED,
	REG_UNKNOWN,  // no session: the process was gone
};
#define REGION(kind, v) (((uint64_t)(kind) << 56) | ((uint64_t)(v) & ((1ULL << 56) - 1)))
#define REGION_KIND(k) ((enum region_kind)((k) >> 56))
#define REGION_VALUE(k) ((k) & ((1ULL << 56) - 1))

// A subtree key for blocks outside the dominator tree (free blocks).
#define SUBTREE_NONE UINT32_MAX

struct stack_range {
	uint64_t lo, hi;
	int tid;
};

// A heap block some sample touched, and what the report says of it.
struct hot_block {
	size_t id;
	uint32_t type;    // index into ctx.types
	uint32_t subtree; // top vertex of its dominator subtree, SUBTREE_NONE
	bool leaked;      // the subtree is in the leaked forest
};

struct ctx {
	const struct hd_samples *r;
	const struct hd_sample_options *o;
	struct hd_target *t;    // NULL: no session
	bool analysed;          // a is valid
	struct hd_analysis a;
	char note[256];         // why the heap was not analysed
	struct stack_range *stacks;
	size_t num_stacks;
	uint32_t *roots;        // graph roots with a range, by start
	size_t num_roots;
	struct hot_block *blocks; // by id
	size_t num_blocks;
	char **types;
	size_t num_types;
	// Per sample (parallel to r->samples): block id or -1, region key.
	int64_t *block_of;
	uint64_t *region_of;
};

struct count {
	uint64_t key;
	uint64_t n;
};

// ---------------------------------------------------------------- mapping

static const struct hd_graph *g_root_graph;

static int by_root_start(const void *x, const void *y)
{
	const struct hd_root *a = hd_graph_root(g_root_graph, *(const uint32_t *)x);
	const struct hd_root *b = hd_graph_root(g_root_graph, *(const uint32_t *)y);
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

// The root whose [start, end) holds addr (globals, regions, TLS). Roots
// do not overlap (each byte is claimed once), so the last one starting at
// or below addr is the only candidate.
static int64_t find_root(const struct ctx *c, uint64_t addr)
{
	size_t lo = 0, hi = c->num_roots;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (hd_graph_root(c->a.g, c->roots[mid])->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	const struct hd_root *rt = hd_graph_root(c->a.g, c->roots[lo - 1]);
	return addr < rt->end ? (int64_t)c->roots[lo - 1] : -1;
}

static uint64_t classify_region(const struct ctx *c, uint64_t addr)
{
	if (!c->t)
		return REGION(REG_UNKNOWN, 0);
	if (c->analysed) {
		int64_t r = find_root(c, addr);
		// A thread's TLS lies in its stack mapping: name it first.
		if (r >= 0 && hd_graph_root(c->a.g, (size_t)r)->kind == HD_ROOT_TLS)
			return REGION(REG_ROOT, r);
		for (size_t i = 0; i < c->num_stacks; i++)
			if (addr >= c->stacks[i].lo && addr < c->stacks[i].hi)
				return REGION(REG_STACK, c->stacks[i].tid);
		if (r >= 0 && hd_graph_root(c->a.g, (size_t)r)->kind != HD_ROOT_STACK &&
		    hd_graph_root(c->a.g, (size_t)r)->kind != HD_ROOT_FRAME)
			return REGION(REG_ROOT, r);
	} else {
		for (size_t i = 0; i < c->num_stacks; i++)
			if (addr >= c->stacks[i].lo && addr < c->stacks[i].hi)
				return REGION(REG_STACK, c->stacks[i].tid);
	}
	const struct hd_mapping *m = hd_target_find_mapping(c->t, addr);
	if (!m)
		return REGION(REG_UNMAPPED, 0);
	for (size_t i = 0; i < hd_target_num_mappings(c->t); i++)
		if (hd_target_mapping(c->t, i) == m)
			return REGION(REG_MAPPING, i);
	return REGION(REG_UNMAPPED, 0);
}

// The top of v's dominator subtree: its ancestor just below a root (or
// below the super-root, for a block several roots share). Iterative, and
// bounded by the number of vertices so a damaged tree cannot loop.
static uint32_t subtree_top(const struct ctx *c, uint32_t v, bool *leaked)
{
	const struct hd_graph *g = c->a.g;
	const struct hd_dom *d = c->a.d;
	uint32_t limit = hd_graph_num_vertices(g);
	*leaked = hd_dom_idom(d, v) == HD_DOM_NONE;
	for (uint32_t step = 0; step < limit; step++) {
		uint32_t up = *leaked ? hd_dom_leak_idom(d, v) : hd_dom_idom(d, v);
		if (up == HD_DOM_NONE || up == 0 ||
		    hd_graph_vertex_block(g, up) < 0)
			return v;
		v = up;
	}
	return v;
}

static uint32_t intern_type(struct ctx *c, const char *name)
{
	for (size_t i = 0; i < c->num_types; i++)
		if (!strcmp(c->types[i], name))
			return (uint32_t)i;
	char *copy = strdup(name);
	char **p = realloc(c->types, (c->num_types + 1) * sizeof(*p));
	if (!copy || !p) {
		free(copy);
		if (p)
			c->types = p;
		return UINT32_MAX;
	}
	c->types = p;
	c->types[c->num_types] = copy;
	return (uint32_t)c->num_types++;
}

static int by_id(const void *x, const void *y)
{
	const struct hot_block *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static const struct hot_block *find_hot(const struct ctx *c, size_t id)
{
	struct hot_block key = {.id = id};
	return hd_bsearch(&key, c->blocks, c->num_blocks, sizeof(key), by_id);
}

static struct hd_error *map_samples(struct ctx *c, struct hd_session *s)
{
	const struct hd_samples *r = c->r;
	size_t n = r->num_samples;
	c->block_of = malloc((n ? n : 1) * sizeof(*c->block_of));
	c->region_of = malloc((n ? n : 1) * sizeof(*c->region_of));
	if (!c->block_of || !c->region_of)
		return &hd_error_no_memory;
	if (s) {
		c->t = hd_session_target(s);
		struct hd_error *err = hd_analysis_get(s, &c->a);
		if (err) {
			snprintf(c->note, sizeof(c->note),
				 "heap not analysed: %s", err->message);
			hd_error_destroy(err);
		} else {
			c->analysed = true;
		}
		// Stacks: the mapping each thread's stack pointer is in.
		size_t nt = hd_target_num_threads(c->t);
		c->stacks = calloc(nt ? nt : 1, sizeof(*c->stacks));
		if (!c->stacks)
			return &hd_error_no_memory;
		for (size_t i = 0; i < nt; i++) {
			const struct hd_thread *th = hd_target_thread(c->t, i);
			const struct hd_mapping *m =
				th->has_regs ? hd_target_find_mapping(c->t, th->regs.rsp)
					     : NULL;
			if (m)
				c->stacks[c->num_stacks++] = (struct stack_range){
					m->start, m->end, th->tid};
		}
	}
	if (c->analysed) {
		size_t nr = hd_graph_num_roots(c->a.g);
		c->roots = malloc((nr ? nr : 1) * sizeof(*c->roots));
		if (!c->roots)
			return &hd_error_no_memory;
		for (size_t i = 0; i < nr; i++) {
			const struct hd_root *rt = hd_graph_root(c->a.g, i);
			if (rt->end > rt->start)
				c->roots[c->num_roots++] = (uint32_t)i;
		}
		g_root_graph = c->a.g;
		hd_qsort(c->roots, c->num_roots, sizeof(*c->roots), by_root_start);
	}
	for (size_t i = 0; i < n; i++) {
		const struct hd_sample *sm = &r->samples[i];
		c->block_of[i] = -1;
		c->region_of[i] = 0;
		if (!(sm->flags & HD_SAMPLE_ACCESS))
			continue;
		if (c->analysed)
			c->block_of[i] = hd_heap_find(c->a.h, sm->addr);
		c->region_of[i] = c->block_of[i] >= 0 ? REGION(REG_HEAP, 0)
						      : classify_region(c, sm->addr);
		if (c->block_of[i] < 0 || find_hot(c, (size_t)c->block_of[i]))
			continue;
		// A block seen for the first time: keep the table sorted (few
		// distinct blocks, so insertion is cheap enough).
		struct hot_block *p = realloc(c->blocks, (c->num_blocks + 1) * sizeof(*p));
		if (!p)
			return &hd_error_no_memory;
		c->blocks = p;
		size_t id = (size_t)c->block_of[i];
		struct hot_block hb = {.id = id, .subtree = SUBTREE_NONE};
		char name[256];
		hd_block_type(&c->a, id, name, sizeof(name));
		hb.type = intern_type(c, name);
		if (hb.type == UINT32_MAX)
			return &hd_error_no_memory;
		struct hd_block b;
		hd_heap_block(c->a.h, id, &b);
		if (b.state == HD_STATE_USED)
			hb.subtree = subtree_top(c, hd_graph_block_vertex(c->a.g, id),
						 &hb.leaked);
		size_t at = c->num_blocks;
		while (at && c->blocks[at - 1].id > id) {
			c->blocks[at] = c->blocks[at - 1];
			at--;
		}
		c->blocks[at] = hb;
		c->num_blocks++;
	}
	return NULL;
}

static void ctx_deinit(struct ctx *c)
{
	for (size_t i = 0; i < c->num_types; i++)
		free(c->types[i]);
	free(c->types);
	free(c->blocks);
	free(c->roots);
	free(c->stacks);
	free(c->block_of);
	free(c->region_of);
}

// ---------------------------------------------------------------- counting

static int by_key(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static int by_count(const void *x, const void *y)
{
	const struct count *a = x, *b = y;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

// Sorts keys[0..n) and counts each distinct one into *ret (most samples
// first when by_samples, else by key).
static struct hd_error *count_keys(uint64_t *keys, size_t n, bool by_samples,
				   struct count **ret, size_t *len)
{
	hd_qsort(keys, n, sizeof(*keys), by_key);
	struct count *out = malloc((n ? n : 1) * sizeof(*out));
	if (!out)
		return &hd_error_no_memory;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && out[m - 1].key == keys[i])
			out[m - 1].n++;
		else
			out[m++] = (struct count){keys[i], 1};
	}
	if (by_samples)
		hd_qsort(out, m, sizeof(*out), by_count);
	*ret = out;
	*len = m;
	return NULL;
}

enum table { T_BLOCKS, T_TYPES, T_SUBTREES, T_REGIONS, T_HIST, T_COUNT };

// One scope of the report: a thread (tid) or everything (tid 0).
struct scope {
	int tid;
	uint64_t taken, accesses, no_access, filtered, failed;
	struct count *t[T_COUNT];
	size_t n[T_COUNT];
};

static uint64_t bucket(const struct ctx *c, uint64_t addr)
{
	return addr - addr % c->o->granularity;
}

static struct hd_error *scope_build(const struct ctx *c, int tid,
				    struct scope *sc)
{
	const struct hd_samples *r = c->r;
	memset(sc, 0, sizeof(*sc));
	sc->tid = tid;
	for (size_t i = 0; i < r->num_threads; i++) {
		const struct hd_sample_thread *st = &r->threads[i];
		if (tid && st->tid != tid)
			continue;
		sc->taken += st->taken;
		sc->accesses += st->accesses;
		sc->no_access += st->no_access;
		sc->filtered += st->filtered;
		sc->failed += st->failed;
	}
	size_t n = r->num_samples;
	uint64_t *keys[T_COUNT];
	size_t len[T_COUNT] = {0};
	for (int k = 0; k < T_COUNT; k++)
		keys[k] = malloc((n ? n : 1) * sizeof(uint64_t));
	struct hd_error *err = NULL;
	for (int k = 0; k < T_COUNT; k++)
		if (!keys[k])
			err = &hd_error_no_memory;
	for (size_t i = 0; !err && i < n; i++) {
		const struct hd_sample *sm = &r->samples[i];
		if ((tid && sm->tid != tid) || !(sm->flags & HD_SAMPLE_ACCESS))
			continue;
		keys[T_REGIONS][len[T_REGIONS]++] = c->region_of[i];
		keys[T_HIST][len[T_HIST]++] = bucket(c, sm->addr);
		if (c->block_of[i] < 0)
			continue;
		const struct hot_block *hb = find_hot(c, (size_t)c->block_of[i]);
		keys[T_BLOCKS][len[T_BLOCKS]++] = hb->id;
		keys[T_TYPES][len[T_TYPES]++] = hb->type;
		keys[T_SUBTREES][len[T_SUBTREES]++] = hb->subtree;
	}
	for (int k = 0; !err && k < T_COUNT; k++)
		err = count_keys(keys[k], len[k], k != T_HIST, &sc->t[k], &sc->n[k]);
	for (int k = 0; k < T_COUNT; k++)
		free(keys[k]);
	return err;
}

static void scope_deinit(struct scope *sc)
{
	for (int k = 0; k < T_COUNT; k++)
		free(sc->t[k]);
}

// ---------------------------------------------------------------- labels

static void region_name(const struct ctx *c, uint64_t key, char *buf,
			size_t len, const char **kind)
{
	uint64_t v = REGION_VALUE(key);
	switch (REGION_KIND(key)) {
	case REG_HEAP:
		*kind = "heap";
		snprintf(buf, len, "heap");
		return;
	case REG_STACK:
		*kind = "stack";
		snprintf(buf, len, "thread %d stack", (int)v);
		return;
	case REG_ROOT: {
		const struct hd_root *rt = hd_graph_root(c->a.g, (size_t)v);
		*kind = rt->kind == HD_ROOT_GLOBAL ? "global"
			: rt->kind == HD_ROOT_TLS  ? "tls"
						   : "region";
		snprintf(buf, len, "%s", rt->name);
		return;
	}
	case REG_MAPPING: {
		const struct hd_mapping *m = hd_target_mapping(c->t, (size_t)v);
		*kind = "mapping";
		if (m->path)
			snprintf(buf, len, "%s", m->path);
		else
			snprintf(buf, len, "anonymous 0x%" PRIx64 "-0x%" PRIx64,
				 m->start, m->end);
		return;
	}
	case REG_UNMAPPED:
		*kind = "unmapped";
		snprintf(buf, len, "unmapped");
		return;
	default:
		*kind = "unknown";
		snprintf(buf, len, "unknown (the process was gone)");
		return;
	}
}

// "0xADDR" of the subtree's top block, its type, and what holds it.
static void subtree_labels(const struct ctx *c, uint32_t v, char *addr,
			   size_t alen, char *type, size_t tlen, char *root,
			   size_t rlen)
{
	if (v == SUBTREE_NONE) {
		snprintf(addr, alen, "-");
		snprintf(type, tlen, "free blocks");
		snprintf(root, rlen, "-");
		return;
	}
	size_t id = (size_t)hd_graph_vertex_block(c->a.g, v);
	struct hd_block b;
	hd_heap_block(c->a.h, id, &b);
	snprintf(addr, alen, "0x%" PRIx64, b.addr);
	hd_block_type(&c->a, id, type, tlen);
	uint32_t up = hd_dom_idom(c->a.d, v);
	if (up == HD_DOM_NONE)
		snprintf(root, rlen, "leaked");
	else
		hd_idom_label(&c->a, up, root, rlen);
}

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

// ---------------------------------------------------------------- text

static void text_scope(FILE *out, const struct ctx *c, const struct scope *sc,
		       bool color)
{
	size_t top = c->o->top;
	if (sc->tid)
		hd_heading(out, color, "thread %d", sc->tid);
	else
		hd_heading(out, color, "all threads");
	fprintf(out,
		"  %" PRIu64 " stops: %" PRIu64 " with a memory access, %" PRIu64
		" without, %" PRIu64 " filtered out, %" PRIu64 " undecodable\n",
		sc->taken, sc->accesses, sc->no_access, sc->filtered, sc->failed);
	if (!sc->accesses)
		return;
	uint64_t of = sc->accesses;
	char buf[256], ty[256], rt[256];
	if (c->analysed) {
		fprintf(out, "  by heap block (%% of accesses)\n");
		for (size_t i = 0; i < sc->n[T_BLOCKS] && i < top; i++) {
			const struct count *k = &sc->t[T_BLOCKS][i];
			const struct hot_block *hb = find_hot(c, (size_t)k->key);
			struct hd_block b;
			hd_heap_block(c->a.h, hb->id, &b);
			char size[32];
			hd_format_size(b.usable, size, sizeof(size));
			subtree_labels(c, hb->subtree, buf, sizeof(buf), ty,
				       sizeof(ty), rt, sizeof(rt));
			fprintf(out, "    %8" PRIu64 " %5.1f%%  0x%-14" PRIx64 " %10s  %-24s subtree %s\n",
				k->n, pct(k->n, of), b.addr, size,
				c->types[hb->type], buf);
		}
		if (!sc->n[T_BLOCKS])
			fprintf(out, "    (none)\n");
		fprintf(out, "  by type\n");
		for (size_t i = 0; i < sc->n[T_TYPES] && i < top; i++) {
			const struct count *k = &sc->t[T_TYPES][i];
			fprintf(out, "    %8" PRIu64 " %5.1f%%  %s\n", k->n,
				pct(k->n, of), c->types[k->key]);
		}
		fprintf(out, "  by dominator subtree (its top block, what holds it)\n");
		for (size_t i = 0; i < sc->n[T_SUBTREES] && i < top; i++) {
			const struct count *k = &sc->t[T_SUBTREES][i];
			subtree_labels(c, (uint32_t)k->key, buf, sizeof(buf), ty,
				       sizeof(ty), rt, sizeof(rt));
			fprintf(out, "    %8" PRIu64 " %5.1f%%  %s %s  held by %s\n",
				k->n, pct(k->n, of), buf, ty, rt);
		}
	}
	fprintf(out, "  by region\n");
	for (size_t i = 0; i < sc->n[T_REGIONS] && i < top; i++) {
		const struct count *k = &sc->t[T_REGIONS][i];
		const char *kind;
		region_name(c, k->key, buf, sizeof(buf), &kind);
		fprintf(out, "    %8" PRIu64 " %5.1f%%  %-8s %s\n", k->n,
			pct(k->n, of), kind, buf);
	}
	// The busiest buckets, shown in address order so neighbours stay
	// together.
	size_t nb = sc->n[T_HIST];
	uint64_t threshold = 0;
	if (nb > top) {
		uint64_t *ns = malloc(nb * sizeof(*ns));
		if (ns) {
			for (size_t i = 0; i < nb; i++)
				ns[i] = sc->t[T_HIST][i].n;
			hd_qsort(ns, nb, sizeof(*ns), by_key);
			threshold = ns[nb - top];
			free(ns);
		}
	}
	uint64_t max = 0;
	for (size_t i = 0; i < nb; i++)
		if (sc->t[T_HIST][i].n > max)
			max = sc->t[T_HIST][i].n;
	fprintf(out, "  histogram (%" PRIu64 "-byte buckets; %s)\n",
		c->o->granularity,
		nb > top ? "the busiest, by address" : "by address");
	size_t shown = 0;
	for (size_t i = 0; i < nb && shown < top; i++) {
		const struct count *k = &sc->t[T_HIST][i];
		if (k->n < threshold)
			continue;
		shown++;
		int bar = max ? (int)(40 * k->n / max) : 0;
		fprintf(out, "    0x%-14" PRIx64 " %8" PRIu64 " %5.1f%% %.*s\n",
			k->key, k->n, pct(k->n, of), bar < 1 ? 1 : bar,
			"########################################");
	}
	if (nb > shown)
		fprintf(out, "    … %zu more buckets\n", nb - shown);
}

static void cost_text(FILE *out, const struct hd_samples *r)
{
	double wall = r->wall_ns / 1e9;
	fprintf(out,
		"cost: %" PRIu64 " samples in %" PRIu64 " rounds over %.2f s (%.1f rounds/s, asked %u Hz); process stopped %.1f ms (%.2f%% of the time)\n",
		r->taken, r->rounds, wall, wall > 0 ? r->rounds / wall : 0.0,
		r->requested_hz, r->stopped_ns / 1e6,
		pct(r->stopped_ns, r->wall_ns));
}

// ---------------------------------------------------------------- json

static void json_scope(FILE *out, const struct ctx *c, const struct scope *sc)
{
	fprintf(out, "{");
	if (sc->tid)
		fprintf(out, "\"tid\": %d, ", sc->tid);
	fprintf(out,
		"\"taken\": %" PRIu64 ", \"accesses\": %" PRIu64
		", \"no_access\": %" PRIu64 ", \"filtered\": %" PRIu64
		", \"failed\": %" PRIu64,
		sc->taken, sc->accesses, sc->no_access, sc->filtered, sc->failed);
	char buf[256], ty[256], rt[256];
	fprintf(out, ", \"blocks\": [");
	for (size_t i = 0; i < sc->n[T_BLOCKS]; i++) {
		const struct count *k = &sc->t[T_BLOCKS][i];
		const struct hot_block *hb = find_hot(c, (size_t)k->key);
		struct hd_block b;
		hd_heap_block(c->a.h, hb->id, &b);
		subtree_labels(c, hb->subtree, buf, sizeof(buf), ty, sizeof(ty),
			       rt, sizeof(rt));
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
			     ", \"state\": \"%s\", \"type\": ",
			i ? ", " : "", b.addr, b.usable, hd_block_state_name(b.state));
		hd_json_string(out, c->types[hb->type]);
		fprintf(out, ", \"subtree\": ");
		hd_json_string(out, buf);
		fprintf(out, ", \"samples\": %" PRIu64 "}", k->n);
	}
	fprintf(out, "], \"types\": [");
	for (size_t i = 0; i < sc->n[T_TYPES]; i++) {
		const struct count *k = &sc->t[T_TYPES][i];
		fprintf(out, "%s{\"type\": ", i ? ", " : "");
		hd_json_string(out, c->types[k->key]);
		fprintf(out, ", \"samples\": %" PRIu64 "}", k->n);
	}
	fprintf(out, "], \"subtrees\": [");
	for (size_t i = 0; i < sc->n[T_SUBTREES]; i++) {
		const struct count *k = &sc->t[T_SUBTREES][i];
		subtree_labels(c, (uint32_t)k->key, buf, sizeof(buf), ty,
			       sizeof(ty), rt, sizeof(rt));
		fprintf(out, "%s{\"addr\": ", i ? ", " : "");
		hd_json_string(out, buf);
		fprintf(out, ", \"type\": ");
		hd_json_string(out, ty);
		fprintf(out, ", \"held_by\": ");
		hd_json_string(out, rt);
		fprintf(out, ", \"samples\": %" PRIu64 "}", k->n);
	}
	fprintf(out, "], \"regions\": [");
	for (size_t i = 0; i < sc->n[T_REGIONS]; i++) {
		const struct count *k = &sc->t[T_REGIONS][i];
		const char *kind;
		region_name(c, k->key, buf, sizeof(buf), &kind);
		fprintf(out, "%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "",
			kind);
		hd_json_string(out, buf);
		fprintf(out, ", \"samples\": %" PRIu64 "}", k->n);
	}
	fprintf(out, "], \"histogram\": [");
	for (size_t i = 0; i < sc->n[T_HIST]; i++)
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"samples\": %" PRIu64 "}",
			i ? ", " : "", sc->t[T_HIST][i].key, sc->t[T_HIST][i].n);
	fprintf(out, "]}");
}

static void json_range(FILE *out, bool has, uint64_t lo, uint64_t hi)
{
	if (has)
		fprintf(out, "[\"0x%" PRIx64 "\", \"0x%" PRIx64 "\"]", lo, hi);
	else
		fprintf(out, "null");
}

static void cost_json(FILE *out, const struct hd_samples *r)
{
	double wall = r->wall_ns / 1e9;
	fprintf(out,
		"\"cost\": {\"samples\": %" PRIu64 ", \"kept\": %zu, \"rounds\": %" PRIu64
		", \"wall_ns\": %" PRIu64 ", \"stopped_ns\": %" PRIu64
		", \"requested_hz\": %u, \"hz\": %u, \"effective_hz\": %.1f"
		", \"interrupted\": %s, \"exited\": %s, \"truncated\": %s, \"notes\": ",
		r->taken, r->num_samples, r->rounds, r->wall_ns, r->stopped_ns,
		r->requested_hz, r->hz, wall > 0 ? r->rounds / wall : 0.0,
		r->interrupted ? "true" : "false", r->exited ? "true" : "false",
		r->truncated ? "true" : "false");
	hd_json_string(out, r->notes);
	fprintf(out, "}");
}

// ---------------------------------------------------------------- render

struct hd_error *hd_render_sample(FILE *out, const struct hd_samples *r,
				  struct hd_session *s,
				  const struct hd_sample_options *o)
{
	struct ctx c = {.r = r, .o = o};
	struct hd_error *err = map_samples(&c, s);
	size_t ns = r->num_threads + 1;
	struct scope *sc = calloc(ns, sizeof(*sc));
	if (!err && !sc)
		err = &hd_error_no_memory;
	for (size_t i = 0; !err && i < ns; i++)
		err = scope_build(&c, i < r->num_threads ? r->threads[i].tid : 0,
				  &sc[i]);
	if (err)
		goto out;
	if (o->format == HD_FORMAT_JSON) {
		fprintf(out, "{\"target\": \"pid %d\", \"pid\": %d, ", r->pid, r->pid);
		fprintf(out, "\"options\": {\"duration\": %.3f, \"hz\": %u, \"nearest\": %u, \"granularity\": %" PRIu64 ", \"threads\": [",
			o->duration, o->hz, o->nearest, o->granularity);
		for (size_t i = 0; i < o->num_threads; i++)
			fprintf(out, "%s%d", i ? ", " : "", o->threads[i]);
		fprintf(out, "], \"pc_range\": ");
		json_range(out, o->has_pc_range, o->pc_lo, o->pc_hi);
		fprintf(out, ", \"addr_range\": ");
		json_range(out, o->has_addr_range, o->addr_lo, o->addr_hi);
		fprintf(out, "}, ");
		cost_json(out, r);
		fprintf(out, ", \"mapped\": %s, \"mapping_note\": ",
			c.analysed ? "true" : "false");
		hd_json_string(out, c.note[0] ? c.note
				    : !s  ? "the process was gone: addresses only"
					  : "");
		fprintf(out, ", \"threads\": [");
		for (size_t i = 0; i < r->num_threads; i++) {
			fprintf(out, "%s", i ? ", " : "");
			json_scope(out, &c, &sc[i]);
		}
		fprintf(out, "], \"overall\": ");
		json_scope(out, &c, &sc[r->num_threads]);
		fprintf(out, "}\n");
	} else {
		fprintf(out, "memory accesses of pid %d sampled for %.2f s (%s)\n",
			r->pid, r->wall_ns / 1e9,
			o->nearest ? "nearest memory instruction" : "instruction at the PC");
		cost_text(out, r);
		if (r->notes[0])
			fprintf(out, "note: %s\n", r->notes);
		if (r->interrupted)
			fprintf(out, "note: sampling interrupted early\n");
		if (r->exited)
			fprintf(out, "note: the process exited while sampled\n");
		if (c.note[0])
			fprintf(out, "note: %s\n", c.note);
		else if (!s)
			fprintf(out, "note: the process was gone: addresses only\n");
		for (size_t i = 0; i < ns; i++) {
			fputc('\n', out);
			text_scope(out, &c, &sc[i], false);
		}
	}
out:
	for (size_t i = 0; sc && i < ns; i++)
		scope_deinit(&sc[i]);
	free(sc);
	ctx_deinit(&c);
	return err;
}

// ---------------------------------------------------------------- svg

#define SVG_W 900
#define SVG_PANEL 190
#define SVG_BARS 48

// One panel per thread: the busiest buckets (at most SVG_BARS) in address
// order, bar heights by samples.
// The output file's name: %p is the pid, %t when sampling started, %% a %.
void hd_sample_output_name(const char *pattern, const struct hd_samples *r,
			   char *buf, size_t len)
{
	size_t n = 0;
	for (const char *p = pattern; *p && n + 1 < len; p++) {
		char tmp[32] = "";
		if (p[0] == '%' && p[1] == 'p')
			snprintf(tmp, sizeof(tmp), "%d", r->pid);
		else if (p[0] == '%' && p[1] == 't')
			snprintf(tmp, sizeof(tmp), "%" PRId64, r->started);
		else if (p[0] == '%' && p[1] == '%')
			snprintf(tmp, sizeof(tmp), "%%");
		if (tmp[0]) {
			p++;
			for (const char *q = tmp; *q && n + 1 < len; q++)
				buf[n++] = *q;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
}

struct hd_error *hd_sample_write_svg(const char *path,
				     const struct hd_samples *r,
				     const struct hd_sample_options *o)
{
	struct ctx c = {.r = r, .o = o};
	char name[4096];
	hd_sample_output_name(path, r, name, sizeof(name));
	path = name;
	FILE *f = fopen(path, "w");
	if (!f)
		return hd_error_os(errno, path, "cannot write the picture");
	struct hd_error *err = NULL;
	size_t np = r->num_threads;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" font-family=\"monospace\" font-size=\"11\">\n",
		SVG_W, 30 + (np ? np : 1) * SVG_PANEL);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">memory accesses of pid %d by thread (%" PRIu64 "-byte buckets, %" PRIu64 " samples)</text>\n",
		r->pid, o->granularity, r->taken);
	// Every sample is an access or not; the regions are not needed here.
	c.block_of = NULL;
	for (size_t p = 0; !err && p < np; p++) {
		int tid = r->threads[p].tid;
		size_t n = 0;
		uint64_t *keys = malloc((r->num_samples ? r->num_samples : 1) * sizeof(*keys));
		if (!keys) {
			err = &hd_error_no_memory;
			break;
		}
		for (size_t i = 0; i < r->num_samples; i++)
			if (r->samples[i].tid == tid &&
			    (r->samples[i].flags & HD_SAMPLE_ACCESS))
				keys[n++] = bucket(&c, r->samples[i].addr);
		struct count *h;
		size_t nh;
		err = count_keys(keys, n, true, &h, &nh);
		free(keys);
		if (err)
			break;
		// The busiest SVG_BARS, then back to address order.
		if (nh > SVG_BARS)
			nh = SVG_BARS;
		hd_qsort(h, nh, sizeof(*h), by_key);
		uint64_t max = 0;
		for (size_t i = 0; i < nh; i++)
			max = h[i].n > max ? h[i].n : max;
		int y0 = 30 + (int)p * SVG_PANEL;
		int plot_h = SVG_PANEL - 60, plot_w = SVG_W - 100;
		fprintf(f, "<g transform=\"translate(60,%d)\">\n", y0);
		fprintf(f, "<text x=\"0\" y=\"14\" font-size=\"12\">thread %d: %" PRIu64 " samples with an access, %zu buckets shown</text>\n",
			tid, (uint64_t)n, nh);
		fprintf(f, "<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
			20 + plot_h, plot_w, 20 + plot_h);
		fprintf(f, "<text x=\"-5\" y=\"28\" text-anchor=\"end\">%" PRIu64 "</text>\n", max);
		double bw = nh ? (double)plot_w / (double)nh : 0;
		for (size_t i = 0; i < nh; i++) {
			double bh = max ? (double)plot_h * h[i].n / max : 0;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4878a8\"><title>0x%" PRIx64 ": %" PRIu64 " samples</title></rect>\n",
				i * bw + 1, 20 + plot_h - bh, bw > 2 ? bw - 2 : bw, bh,
				h[i].key, h[i].n);
		}
		if (nh) {
			fprintf(f, "<text x=\"0\" y=\"%d\">0x%" PRIx64 "</text>\n",
				34 + plot_h, h[0].key);
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0x%" PRIx64 "</text>\n",
				plot_w, 34 + plot_h, h[nh - 1].key);
		}
		fprintf(f, "</g>\n");
		free(h);
	}
	fprintf(f, "</svg>\n");
	if (fclose(f) != 0 && !err)
		err = hd_error_os(errno, path, "cannot write the picture");
	return err;
}
