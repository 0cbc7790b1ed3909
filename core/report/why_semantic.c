// Why is a block alive when the default modules found sub-allocator blocks
// (pymalloc's objects): the shortest chain through their semantic graph,
// the only graph in which such blocks are vertices (in the plain graph a
// malloc'd block a Python object refers to hangs off an anonymous "region"
// root: the arena). A block a module assigned to a node (a global of
// __main__, an allocator) is reached from that node alone there, so its
// chain names the node that owns it.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap_internal.h"
#include "report/report_internal.h"
#include "report/trace_tables.h"
#include "semantic/semantic_internal.h"

struct sview {
	const struct hd_analysis *a;
	const struct hd_semantic *s;
	const struct hd_fw *fw;
	uint32_t first_block, first_sub;
};

// The memory of a block vertex: its usable bytes.
static void srange(const struct sview *w, uint32_t v, uint64_t *lo,
		   uint64_t *hi)
{
	if (hd_semantic_vertex_kind(w->s, v) == HD_SV_BLOCK) {
		struct hd_block b;
		hd_heap_block(w->a->h, v - w->first_block, &b);
		*lo = b.addr;
		*hi = b.addr + b.usable;
	} else {
		const struct hd_subblock *b = &w->fw->sa.blocks[v - w->first_sub];
		*lo = b->addr;
		*hi = b->addr + b->size;
	}
}

// How step u refers to step v: the first word (or register) of u's memory
// that points into v's; false for a node's edges.
static bool sreference(const struct sview *w, uint32_t u, uint32_t v,
		       uint64_t *off, uint64_t *val, int *reg)
{
	*reg = -1;
	enum hd_svertex ku = hd_semantic_vertex_kind(w->s, u), kv = hd_semantic_vertex_kind(w->s, v);
	if (kv != HD_SV_BLOCK && kv != HD_SV_SUB)
		return false;
	uint64_t lo, hi, s_lo, s_hi;
	srange(w, v, &lo, &hi);
	if (ku == HD_SV_ROOT) {
		const struct hd_root *root = hd_graph_root(w->s->g, u - 1);
		if (root->kind == HD_ROOT_REGISTERS) {
			for (size_t i = 0; i < hd_target_num_threads(w->a->t); i++) {
				const struct hd_thread *th = hd_target_thread(w->a->t, i);
				if (th->tid != root->tid)
					continue;
				const uint64_t *r = (const uint64_t *)&th->regs;
				for (int k = 0; k < 27; k++) {
					if (r[k] >= lo && r[k] < hi) {
						*reg = k;
						*val = r[k];
						*off = 0;
						return true;
					}
				}
			}
			return false;
		}
		s_lo = root->start;
		s_hi = root->end;
	} else if (ku == HD_SV_BLOCK || ku == HD_SV_SUB) {
		srange(w, u, &s_lo, &s_hi);
	} else {
		return false;
	}
	uint64_t base = s_lo;
	s_lo = (s_lo + 7) & ~7ULL;
	struct hd_view view;
	if (s_hi <= s_lo || hd_target_view(w->a->t, s_lo, s_hi - s_lo, &view))
		return false;
	bool found = false;
	for (uint64_t o = 0; o + 8 <= view.len; o += 8) {
		uint64_t x;
		memcpy(&x, view.data + o, 8);
		if (x >= lo && x < hi) {
			*off = s_lo + o - base;
			*val = x;
			found = true;
			break;
		}
	}
	hd_view_deinit(&view);
	return found;
}

// A block's name: the framework's, its sub-allocator type, its DWARF type;
// false when none of them knows (buf then says "unk<SIZE>").
static bool stype(const struct sview *w, uint32_t v, char *buf, size_t len)
{
	int named = hd_fw_vertex_name(w->fw, v, buf, len);
	if (named >= 0)
		return named;
	return hd_block_type(w->a, v - w->first_block, buf, len);
}

// The member of block u at offset, when a DWARF type was given to it.
static void smember(const struct sview *w, uint32_t u, uint64_t off,
		    char *buf, size_t len)
{
	buf[0] = '\0';
	const struct hd_fw *fw = w->fw;
	if (hd_semantic_vertex_kind(w->s, u) == HD_SV_BLOCK) {
		size_t id = u - w->first_block;
		if (!hd_fw_block_member(fw, id, off, buf, len) && w->a->ty)
			hd_typing_block_member(w->a->ty, id, off, buf, len);
		return;
	}
	uint64_t d = hd_fw_dwarf_of(fw, u);
	if (hd_semantic_vertex_kind(w->s, u) == HD_SV_SUB && d != UINT64_MAX && fw->ty &&
	    (d >> 32) < fw->ty->num_mods)
		hd_type_member_path(fw->ty->mods[d >> 32].ix, (uint32_t)d, off,
				    buf, len);
}

static const char *module_name(const struct hd_fw *fw, uint16_t m)
{
	return m < fw->num_mods ? fw->mods[m].ops->name : "?";
}

static void sdescribe(FILE *out, const struct sview *w, uint32_t v, bool json)
{
	enum hd_svertex k = hd_semantic_vertex_kind(w->s, v);
	const struct hd_semantic *s = w->s;
	if (k == HD_SV_ROOT) {
		const struct hd_root *root = hd_graph_root(s->g, v - 1);
		if (json) {
			fputs("\"root\": ", out);
			hd_json_string(out, root->name);
			fprintf(out, ", \"kind\": \"%s\", \"start\": \"0x%" PRIx64 "\"",
				hd_root_kind_name(root->kind), root->start);
		} else {
			fprintf(out, "%s (%s", root->name, hd_root_kind_name(root->kind));
			if (root->kind != HD_ROOT_REGISTERS)
				fprintf(out, " at 0x%" PRIx64, root->start);
			fputc(')', out);
		}
		return;
	}
	if (k == HD_SV_NODE) {
		const struct hd_snode *n = &w->fw->nodes[v - s->nv];
		if (json) {
			fprintf(out, "\"node\": %u, \"label\": ", v - s->nv);
			hd_json_string(out, n->label);
			fputs(", \"node_kind\": ", out);
			hd_json_string(out, n->kind);
			fputs(", \"framework\": ", out);
			hd_json_string(out, module_name(w->fw, n->module));
		} else {
			fprintf(out, "[%s] %s (%s)", n->kind, n->label,
				module_name(w->fw, n->module));
		}
		return;
	}
	char type[512], sz[32], ret[32];
	bool typed = stype(w, v, type, sizeof(type));
	uint64_t lo, hi;
	srange(w, v, &lo, &hi);
	if (json) {
		fprintf(out, "\"addr\": \"0x%" PRIx64 "\", \"kind\": \"%s\", \"size\": %" PRIu64,
			lo, k == HD_SV_SUB ? "subblock" : "block", hi - lo);
		if (k == HD_SV_BLOCK) {
			struct hd_block b;
			hd_heap_block(w->a->h, v - w->first_block, &b);
			fprintf(out, ", \"chunk\": %" PRIu64, b.extent);
		} else {
			fputs(", \"framework\": ", out);
			hd_json_string(out, module_name(w->fw,
				w->fw->sa.blocks[v - w->first_sub].module));
		}
		fprintf(out, ", \"retained\": %" PRIu64 ", \"type\": ", s->r_alloc[v]);
		if (typed)
			hd_json_string(out, type);
		else
			fputs("null", out);
		return;
	}
	hd_format_size(hi - lo, sz, sizeof(sz));
	hd_format_size(s->r_alloc[v], ret, sizeof(ret));
	if (k == HD_SV_SUB)
		fprintf(out, "0x%" PRIx64 " (%s, %s block of %s's sub-allocator, retains %s)",
			lo, type, sz, module_name(w->fw,
				w->fw->sa.blocks[v - w->first_sub].module), ret);
	else
		fprintf(out, "0x%" PRIx64 " (%s, %s block, retains %s)", lo, type,
			sz, ret);
}

// A step's short name for the one-line chain.
static void sshort(FILE *out, const struct sview *w, uint32_t v)
{
	char type[512];
	switch (hd_semantic_vertex_kind(w->s, v)) {
	case HD_SV_ROOT: fputs(hd_graph_root(w->s->g, v - 1)->name, out); break;
	case HD_SV_NODE: fputs(w->fw->nodes[v - w->s->nv].label, out); break;
	case HD_SV_SUPER: fputs("super", out); break;
	default:
		stype(w, v, type, sizeof(type));
		fputs(type, out);
	}
}

// The steps of a chain: JSON array elements, or one indented line per step
// with the word, register or assignment leading to the next.
static void sprint_steps(FILE *out, const struct sview *w, const uint32_t *path,
			 size_t len, bool json)
{
	for (size_t i = 0; i < len; i++) {
		uint32_t u = path[i];
		uint64_t off = 0, val = 0;
		int reg = -1;
		bool ref = i + 1 < len && sreference(w, u, path[i + 1], &off, &val, &reg);
		// A node's edge to a block: the module assigned the block to it.
		bool assigned = i + 1 < len && hd_semantic_vertex_kind(w->s, u) == HD_SV_NODE &&
				hd_semantic_vertex_kind(w->s, path[i + 1]) != HD_SV_NODE;
		char member[512] = "";
		if (ref && reg < 0 && hd_semantic_vertex_kind(w->s, u) != HD_SV_ROOT)
			smember(w, u, off, member, sizeof(member));
		else if (ref && reg < 0 && w->a->ty) {
			char t[512];
			const struct hd_root *root = hd_graph_root(w->s->g, u - 1);
			if (root->kind == HD_ROOT_GLOBAL || root->kind == HD_ROOT_REGION)
				hd_typing_global_member(w->a->ty, root->start + off, t,
							sizeof(t), member, sizeof(member));
		}
		if (member[0] == '+') // an offset, printed anyway
			member[0] = '\0';
		uint64_t nlo = 0, nhi = 0;
		if (ref)
			srange(w, path[i + 1], &nlo, &nhi);
		if (json) {
			fputs(i ? ", {" : "{", out);
			sdescribe(out, w, u, true);
			if (ref) {
				if (reg >= 0)
					fprintf(out, ", \"register\": \"%s\"", hd_reg_name(reg));
				else
					fprintf(out, ", \"offset\": %" PRIu64, off);
				if (member[0]) {
					fputs(", \"member\": ", out);
					hd_json_string(out, member);
				}
				fprintf(out, ", \"pointer\": \"0x%" PRIx64 "\", \"interior\": %s",
					val, val != nlo ? "true" : "false");
			} else if (assigned) {
				fputs(", \"assigned\": true", out);
			}
			fputc('}', out);
			continue;
		}
		fprintf(out, "  %*s", HD_WHY_INDENT(i), "");
		sdescribe(out, w, u, false);
		if (ref) {
			if (reg >= 0)
				fprintf(out, "\n  %*s  %%%s = 0x%" PRIx64, HD_WHY_INDENT(i), "",
					hd_reg_name(reg), val);
			else if (member[0])
				fprintf(out, "\n  %*s  +0x%" PRIx64 " .%s = 0x%" PRIx64,
					HD_WHY_INDENT(i), "", off, member, val);
			else
				fprintf(out, "\n  %*s  +0x%" PRIx64 " = 0x%" PRIx64,
					HD_WHY_INDENT(i), "", off, val);
			if (val != nlo)
				fprintf(out, " (interior: +0x%" PRIx64 " into the block)",
					val - nlo);
			fputs(" ->", out);
		} else if (assigned) {
			fprintf(out, "\n  %*s  owns (assigned by %s) ->", HD_WHY_INDENT(i), "",
				module_name(w->fw, w->fw->nodes[u - w->s->nv].module));
		} else if (i + 1 < len) {
			fprintf(out, "\n  %*s  ->", HD_WHY_INDENT(i), "");
		}
		fputc('\n', out);
	}
}

// "also reachable from" (text) or the "paths" member (JSON): the shortest
// chain of each class of roots that reaches the block.
static struct hd_error *sprint_classes(FILE *out, const struct sview *w,
				       const struct hd_why_roots *r, bool json)
{
	bool any = false;
	if (json)
		fputs(", \"paths\": [", out);
	for (unsigned k = 0; k < HD_ROOT_RANKS; k++) {
		if (!r->roots[k] || (!json && (int)k == r->first))
			continue;
		uint32_t *path;
		size_t len;
		struct hd_error *err = hd_why_roots_path(r, k, &path, &len);
		if (err)
			return err;
		if (json) {
			fprintf(out, "%s{\"class\": \"%s\", \"roots\": %zu, \"path\": [",
				any ? ", " : "", hd_root_rank_name(k), r->roots[k]);
			sprint_steps(out, w, path, len, true);
			fputs("]}", out);
		} else {
			if (!any)
				fputs("also reachable from:\n", out);
			fprintf(out, "  %s (%zu root%s), %zu step%s: ", hd_root_rank_name(k),
				r->roots[k], r->roots[k] == 1 ? "" : "s", len - 1,
				len == 2 ? "" : "s");
			for (size_t i = 0; i < len && i < 64; i++) {
				if (i)
					fputs(" → ", out);
				sshort(out, w, path[i]);
			}
			fputs(len <= 64 ? "\n" : " → …\n", out);
		}
		any = true;
		free(path);
	}
	if (json)
		fputc(']', out);
	return NULL;
}

// A root's class: a root's rank; a node the super-root holds (a module's
// owner, "CPython") is static data.
static unsigned srank(const void *arg, uint32_t u)
{
	const struct sview *w = arg;
	return hd_semantic_vertex_kind(w->s, u) == HD_SV_ROOT
		       ? hd_root_rank(hd_graph_root(w->s->g, u - 1)->kind) : 0;
}

struct hd_error *hd_render_why_semantic(FILE *out, struct hd_session *ses,
					const struct hd_analysis *a,
					int64_t heap_id, int64_t sub,
					const struct hd_render_options *o)
{
	const struct hd_semantic *s = a->sem;
	struct sview w = {
		.a = a, .s = s, .fw = s->fw,
		.first_block = 1 + (uint32_t)s->g->num_roots,
		.first_sub = s->nv - (uint32_t)s->g->num_sub,
	};
	uint32_t v = sub >= 0 ? w.first_sub + (uint32_t)sub
			      : w.first_block + (uint32_t)heap_id;
	bool reachable = s->tree.idom[v] != HD_NO_VERTEX;
	// The tracer's allocation site, for a malloc'd block.
	struct hd_alloc_sites as = {0};
	struct hd_error *err = sub < 0 ? hd_alloc_sites_init(&as, ses) : NULL;
	if (err)
		return err;
	uint64_t lo, hi;
	srange(&w, v, &lo, &hi);
	const struct traced_block *tb = sub < 0 ? hd_alloc_sites_find(&as, lo) : NULL;
	char site_line[700] = "";
	if (tb) {
		char site[600];
		hd_alloc_site_text(&as, tb, site, sizeof(site));
		snprintf(site_line, sizeof(site_line), "0x%" PRIx64 " was allocated at %s (now %" PRIu32 ")\n",
			 lo, site, as.tr.head.epoch);
	} else if (sub < 0 && as.present && !as.error) {
		snprintf(site_line, sizeof(site_line),
			 "0x%" PRIx64 " was allocated while the tracer was off\n", lo);
	}
	// Every root that reaches the block, by class, as in the plain graph;
	// for a leaked block the chain from a block nothing points at.
	struct hd_why_roots r = { .first = -1 };
	uint32_t *path = NULL;
	size_t len = 0;
	const struct hd_csr *rev;
	err = hd_semantic_reverse(w.s, &rev);
	if (!err && reachable)
		err = hd_why_roots_find(rev, v, srank, &w, o->exclude, &r);
	else if (!err)
		err = hd_csr_chain(rev, v, false, &path, &len);
	if (!err && r.first >= 0)
		err = hd_why_roots_path(&r, (unsigned)r.first, &path, &len);
	if (err) {
		hd_why_roots_deinit(&r);
		if (sub < 0)
			hd_alloc_sites_deinit(&as);
		return err;
	}
	bool json = o->format == HD_FORMAT_JSON;
	if (json) {
		fputc('{', out);
		hd_json_truncation(out, a->t);
		fputs("\"target\": ", out);
		hd_json_string(out, hd_target_name(a->t));
		if (sub < 0)
			hd_alloc_sites_json_note(out, &as);
		fprintf(out, ", \"query\": \"0x%" PRIx64 "\", \"graph\": \"semantic\", \"block\": {",
			o->address);
		sdescribe(out, &w, v, true);
		if (sub < 0 && as.present)
			hd_alloc_site_json(out, &as, tb);
		fprintf(out, "}, \"reachable\": %s", reachable ? "true" : "false");
		hd_why_json_classes(out, o->exclude, &r);
		fputs(", \"path\": [", out);
	} else {
		if (sub < 0)
			hd_alloc_sites_text_note(out, &as, o->color);
		fprintf(out, "0x%" PRIx64 " is in ", o->address);
		sdescribe(out, &w, v, false);
		if (r.first >= 0)
			fprintf(out, ", kept alive by this chain of the semantic graph from %s (%zu step%s):\n",
				hd_root_rank_name((unsigned)r.first), len - 1, len == 2 ? "" : "s");
		else if (reachable) {
			fputs(", which is not reachable from any root outside the excluded classes (reachable only from: ", out);
			hd_why_class_counts(out, r.excluded);
			fputs(")\n", out);
		} else
			fputs(", which is LEAKED: nothing the semantic graph starts from reaches it. "
			      "Chain from a block nothing points at:\n", out);
		if (path) {
			fputs("  ", out);
			for (size_t i = 0; i < len; i++) {
				if (i)
					fputs(" → ", out);
				sshort(out, &w, path[i]);
			}
			fputc('\n', out);
		}
	}
	if (path)
		sprint_steps(out, &w, path, len, json);
	if (json)
		fputc(']', out);
	err = sprint_classes(out, &w, &r, json);
	if (!err && !json && r.first >= 0)
		hd_why_text_ignored(out, r.excluded);
	if (json)
		fputs("}\n", out);
	else
		fputs(site_line, out);
	if (sub < 0)
		hd_alloc_sites_deinit(&as);
	hd_why_roots_deinit(&r);
	free(path);
	if (err)
		return err;
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}

struct hd_error *hd_why_not_subblock(const struct hd_analysis *a,
				     uint64_t addr)
{
	const struct hd_fw *fw = a->sem ? a->sem->fw : a->fw;
	if (!fw)
		return NULL;
	int64_t i = hd_suballoc_find(&fw->sa, addr);
	if (i >= 0) {
		const struct hd_subblock *b = &fw->sa.blocks[i];
		// A used one is hd_render_why_semantic's (a->sem is set); a pool
		// header inside a malloc'd block lives as long as that block.
		if (b->state == HD_STATE_USED ||
		    (b->state == HD_STATE_INTERNAL && b->container >= 0))
			return NULL;
		char type[300] = "";
		if (b->type != UINT32_MAX)
			snprintf(type, sizeof(type), " (%s)", fw->labels[b->type]);
		return hd_error_at(HD_ERROR_NOT_FOUND, addr,
				   "0x%" PRIx64 " is in the %s block 0x%" PRIx64 "%s found by "
				   "the %s framework module: %s, nothing keeps it alive",
				   addr, hd_block_state_name((enum hd_block_state)b->state),
				   b->addr, type, module_name(fw, b->module),
				   b->state == HD_STATE_FREE ? "the allocator holds it"
							     : "the allocator's own bookkeeping");
	}
	return NULL;
}

struct hd_error *hd_why_in_region(const struct hd_analysis *a, uint64_t addr)
{
	const struct hd_fw *fw = a->sem ? a->sem->fw : a->fw;
	if (!fw)
		return NULL;
	for (size_t r = 0; r < fw->sa.num_regions; r++) {
		const struct hd_subregion *rg = &fw->sa.regions[r];
		if (addr >= rg->start && addr < rg->end)
			return hd_error_at(HD_ERROR_NOT_FOUND, addr,
					   "0x%" PRIx64 " is in %s (%s, 0x%" PRIx64 "-0x%" PRIx64
					   ") but in no block %s found there",
					   addr, fw->labels[rg->label], module_name(fw, rg->module),
					   rg->start, rg->end, module_name(fw, rg->module));
	}
	return NULL;
}
