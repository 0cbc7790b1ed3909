// Why is a block alive: the shortest chain of references from a named
// root, found by a breadth-first search backwards over the graph.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dom/dom.h"
#include "heap/heap_internal.h"
#include "report/trace_tables.h"
#include "semantic/semantic_internal.h"

static const char *const reg_names[] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags",
	"rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
};

const char *hd_reg_name(int k)
{
	return k >= 0 && k < (int)(sizeof(reg_names) / sizeof(reg_names[0]))
		       ? reg_names[k] : "?";
}

// Memory of a vertex: a root's range or a used block's usable bytes.
static void vertex_range(const struct hd_analysis *a, uint32_t v,
			 uint64_t *lo, uint64_t *hi)
{
	int64_t r = hd_graph_vertex_root(a->g, v);
	if (r >= 0) {
		const struct hd_root *root = hd_graph_root(a->g, (size_t)r);
		*lo = root->start;
		*hi = root->end;
		return;
	}
	struct hd_block b;
	hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, v), &b);
	*lo = b.addr;
	*hi = b.addr + b.usable;
}

// Finds the first word of src that points into dst's chunk: its offset and
// value. Registers roots report the register's index.
static bool find_reference(const struct hd_analysis *a, uint32_t src,
			   uint32_t dst, uint64_t *offset, uint64_t *value,
			   int *reg)
{
	struct hd_block b;
	hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, dst), &b);
	// The usable bytes, as the scanner counts them.
	uint64_t lo = b.addr, hi = b.addr + b.usable;
	*reg = -1;
	int64_t r = hd_graph_vertex_root(a->g, src);
	if (r >= 0 && hd_graph_root(a->g, (size_t)r)->kind == HD_ROOT_REGISTERS) {
		const struct hd_root *root = hd_graph_root(a->g, (size_t)r);
		for (size_t i = 0; i < hd_target_num_threads(a->t); i++) {
			const struct hd_thread *th = hd_target_thread(a->t, i);
			if (th->tid != root->tid)
				continue;
			const uint64_t *w = (const uint64_t *)&th->regs;
			for (int k = 0; k < 27; k++) {
				if (w[k] >= lo && w[k] < hi) {
					*reg = k;
					*value = w[k];
					*offset = 0;
					return true;
				}
			}
		}
		return false;
	}
	uint64_t s_lo, s_hi;
	vertex_range(a, src, &s_lo, &s_hi);
	struct hd_view v;
	s_lo = (s_lo + 7) & ~7ULL;
	if (s_hi <= s_lo || hd_target_view(a->t, s_lo, s_hi - s_lo, &v))
		return false;
	bool found = false;
	for (uint64_t off = 0; off + 8 <= v.len; off += 8) {
		uint64_t w;
		memcpy(&w, v.data + off, 8);
		if (w >= lo && w < hi) {
			*offset = s_lo + off - (hd_graph_vertex_root(a->g, src) >= 0
						? hd_graph_root(a->g, (size_t)r)->start
						: s_lo);
			*value = w;
			found = true;
			break;
		}
	}
	hd_view_deinit(&v);
	return found;
}

// BFS backwards from v to the nearest root (or, for a leaked block, to a
// block nothing points at). Returns the path from its start to v.
struct hd_error *hd_shortest_chain(const struct hd_analysis *a, uint32_t v,
				   bool to_root, uint32_t **path, size_t *len)
{
	const struct hd_csr *rev;
	struct hd_error *err = hd_analysis_reverse(a, &rev);
	return err ? err : hd_csr_chain(rev, v, to_root, path, len);
}

static void describe_block(FILE *out, const struct hd_analysis *a, uint32_t v,
			   bool json)
{
	size_t id = (size_t)hd_graph_vertex_block(a->g, v);
	struct hd_block b;
	hd_heap_block(a->h, id, &b);
	char type[512];
	bool typed = hd_block_type(a, id, type, sizeof(type));
	if (json) {
		fprintf(out, "\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
			", \"chunk\": %" PRIu64 ", \"retained\": %" PRIu64
			", \"type\": ",
			b.addr, b.usable, b.extent, hd_dom_retained(a->d, v));
		if (typed)
			hd_json_string(out, type);
		else
			fputs("null", out);
	} else {
		char sz[32], ret[32];
		hd_format_size(b.usable, sz, sizeof(sz));
		hd_format_size(hd_dom_retained(a->d, v), ret, sizeof(ret));
		fprintf(out, "0x%" PRIx64 " (%s, %s block, retains %s)", b.addr, type,
			sz, ret);
	}
}

// The member of step u that refers to the next step: "buckets[17]" for a
// typed block, the variable and its member for a typed global.
static void step_member(const struct hd_analysis *a, uint32_t u,
			uint64_t offset, char *type, size_t tlen, char *member,
			size_t mlen)
{
	type[0] = member[0] = '\0';
	if (!a->ty)
		return;
	int64_t r = hd_graph_vertex_root(a->g, u);
	if (r >= 0) {
		const struct hd_root *root = hd_graph_root(a->g, (size_t)r);
		if (root->kind == HD_ROOT_GLOBAL || root->kind == HD_ROOT_REGION)
			hd_typing_global_member(a->ty, root->start + offset, type, tlen,
						member, mlen);
		return;
	}
	size_t id = (size_t)hd_graph_vertex_block(a->g, u);
	const char *name = a->fw ? hd_fw_block_name(a->fw, id) : NULL;
	if (hd_typing_block_name(a->ty, id, type, tlen))
		hd_typing_block_member(a->ty, id, offset, member, mlen);
	else
		type[0] = '\0';
	// A framework's name comes first; the DWARF members, when DWARF
	// typed the block too, still say which word it is.
	if (name) {
		snprintf(type, tlen, "%s", name);
		hd_fw_block_member(a->fw, id, offset, member, mlen);
	}
}

struct hd_error *hd_chain_refs(const struct hd_analysis *a,
			       const uint32_t *path, size_t len,
			       struct hd_chain_ref **ret)
{
	struct hd_chain_ref *refs = calloc(len ? len : 1, sizeof(*refs));
	if (!refs)
		return &hd_error_no_memory;
	for (size_t i = 0; i < len; i++) {
		refs[i].reg = -1;
		if (i + 1 < len)
			refs[i].ok = find_reference(a, path[i], path[i + 1], &refs[i].off,
						    &refs[i].val, &refs[i].reg);
	}
	*ret = refs;
	return NULL;
}

// A root's name; stable: thread ids (which change from run to run)
// replaced by the thread's position in the target ("thread #1 stack").
static void root_name(const struct hd_analysis *a, const struct hd_root *root,
		      bool stable, char *buf, size_t len)
{
	char prefix[32];
	int n = snprintf(prefix, sizeof(prefix), "thread %d ", root->tid);
	if (!stable || !root->tid || strncmp(root->name, prefix, (size_t)n) != 0) {
		snprintf(buf, len, "%s", root->name);
		return;
	}
	size_t k = 0, nt = hd_target_num_threads(a->t);
	while (k < nt && hd_target_thread(a->t, k)->tid != root->tid)
		k++;
	snprintf(buf, len, "thread #%zu %s", k + 1, root->name + n);
}

void hd_chain_line(FILE *out, const struct hd_analysis *a, const uint32_t *path,
		   size_t len, const struct hd_chain_ref *refs, const char *sep,
		   bool stable)
{
	for (size_t i = 0; i < len; i++) {
		uint32_t u = path[i];
		int64_t r = hd_graph_vertex_root(a->g, u);
		uint64_t off = refs[i].off;
		int reg = refs[i].reg;
		bool ref = refs[i].ok;
		char stype[512], member[512];
		step_member(a, u, off, stype, sizeof(stype), member, sizeof(member));
		if (i)
			fputs(sep, out);
		if (r >= 0) {
			char name[600];
			root_name(a, hd_graph_root(a->g, (size_t)r), stable, name,
				  sizeof(name));
			fputs(name, out);
			if (ref && reg >= 0)
				fprintf(out, " %%%s", reg_names[reg]);
			else if (ref && member[0] && member[0] != '+')
				fprintf(out, ".%s", member);
			continue;
		}
		char type[512];
		size_t id = (size_t)hd_graph_vertex_block(a->g, u);
		if (!hd_block_type(a, id, type, sizeof(type)) && stable) {
			// Not the string's text: it is no part of the structure.
			struct hd_block b;
			hd_heap_block(a->h, id, &b);
			snprintf(type, sizeof(type), "unk<%" PRIu64 ">", b.usable);
		}
		fputs(type, out);
		if (ref && member[0])
			fprintf(out, ".%s", member);
		else if (ref)
			fprintf(out, "+0x%" PRIx64, off);
	}
}

// ------------------------------------------------------ roots by class

struct exclude_arg {
	hd_root_rank_fn rank;
	const void *arg;
	unsigned mask;
};

static bool exclude_root(void *arg, uint32_t root)
{
	const struct exclude_arg *x = arg;
	return (x->mask >> x->rank(x->arg, root)) & 1;
}

struct hd_error *hd_why_roots_find(const struct hd_csr *rev, uint32_t v,
				   hd_root_rank_fn rank, const void *arg,
				   unsigned exclude, struct hd_why_roots *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct exclude_arg x = { rank, arg, exclude };
	struct hd_error *err = hd_csr_search(rev, v, HD_CSR_ALL_ROOTS,
					     exclude ? exclude_root : NULL, &x,
					     &ret->search);
	if (err)
		return err;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++)
		ret->best[r] = SIZE_MAX;
	const struct hd_csr_search *s = &ret->search;
	for (size_t i = 0; i < s->num_found; i++) {
		const struct hd_csr_found *f = &s->found[i];
		unsigned r = rank(arg, f->vertex);
		if (r >= HD_ROOT_RANKS)
			r = HD_ROOT_RANKS - 1;
		if (f->excluded) {
			ret->excluded[r]++;
			continue;
		}
		ret->roots[r]++;
		// The nearest root of the class; ties: root order.
		size_t b = ret->best[r];
		if (b == SIZE_MAX || f->dist < s->found[b].dist ||
		    (f->dist == s->found[b].dist && f->vertex < s->found[b].vertex))
			ret->best[r] = i;
	}
	ret->first = -1;
	for (unsigned r = HD_ROOT_RANKS; r-- > 0;)
		if (ret->roots[r])
			ret->first = (int)r;
	return NULL;
}

void hd_why_roots_deinit(struct hd_why_roots *w)
{
	hd_csr_search_deinit(&w->search);
}

struct hd_error *hd_why_roots_path(const struct hd_why_roots *w, unsigned r,
				   uint32_t **path, size_t *len)
{
	return hd_csr_search_path(&w->search, w->search.found[w->best[r]].slot,
				  path, len);
}

void hd_why_class_counts(FILE *out, const size_t counts[HD_ROOT_RANKS])
{
	bool any = false;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if (!counts[r])
			continue;
		fprintf(out, "%s%s (%zu root%s)", any ? ", " : "", hd_root_rank_name(r),
			counts[r], counts[r] == 1 ? "" : "s");
		any = true;
	}
}

void hd_why_text_ignored(FILE *out, const size_t excluded[HD_ROOT_RANKS])
{
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if (excluded[r]) {
			fputs("ignored (--exclude): ", out);
			hd_why_class_counts(out, excluded);
			fputc('\n', out);
			return;
		}
	}
}

void hd_why_json_classes(FILE *out, unsigned exclude,
			 const struct hd_why_roots *w)
{
	const size_t *excluded = w->excluded;
	fputs(", \"exclude\": [", out);
	bool any = false;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if ((exclude >> r) & 1) {
			fprintf(out, "%s\"%s\"", any ? ", " : "", hd_root_rank_name(r));
			any = true;
		}
	}
	fputs("], \"excluded_roots\": [", out);
	any = false;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if (excluded[r]) {
			fprintf(out, "%s{\"class\": \"%s\", \"roots\": %zu}",
				any ? ", " : "", hd_root_rank_name(r), excluded[r]);
			any = true;
		}
	}
	fputc(']', out);
	if (w->first >= 0)
		fprintf(out, ", \"class\": \"%s\"", hd_root_rank_name((unsigned)w->first));
	else
		fputs(", \"class\": null", out);
}

static unsigned graph_rank(const void *arg, uint32_t u)
{
	const struct hd_graph *g = arg;
	int64_t r = hd_graph_vertex_root(g, u);
	return r >= 0 ? hd_root_rank(hd_graph_root(g, (size_t)r)->kind) : 0;
}

// ------------------------------------------------------------- rendering

// The steps of a chain: JSON array elements, or one indented line per step
// with the word (or register) referring to the next.
static void print_steps(FILE *out, const struct hd_analysis *a,
			const uint32_t *path, size_t len,
			const struct hd_chain_ref *refs, bool json)
{
	for (size_t i = 0; i < len; i++) {
		uint32_t u = path[i];
		int64_t r = hd_graph_vertex_root(a->g, u);
		uint64_t off = refs[i].off, val = refs[i].val;
		int reg = refs[i].reg;
		bool ref = refs[i].ok;
		if (json) {
			fputs(i ? ", {" : "{", out);
			if (r >= 0) {
				const struct hd_root *root = hd_graph_root(a->g, (size_t)r);
				fputs("\"root\": ", out);
				hd_json_string(out, root->name);
				fprintf(out, ", \"kind\": \"%s\", \"start\": \"0x%" PRIx64 "\"",
					hd_root_kind_name(root->kind), root->start);
			} else {
				describe_block(out, a, u, true);
			}
			if (ref) {
				char stype[512], member[512];
				if (reg >= 0)
					fprintf(out, ", \"register\": \"%s\"", reg_names[reg]);
				else
					fprintf(out, ", \"offset\": %" PRIu64, off);
				step_member(a, u, off, stype, sizeof(stype), member,
					    sizeof(member));
				if (reg < 0 && member[0]) {
					fputs(", \"member\": ", out);
					hd_json_string(out, member);
				}
				if (r >= 0 && stype[0]) {
					fputs(", \"type\": ", out);
					hd_json_string(out, stype);
				}
				struct hd_block nb;
				hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, path[i + 1]), &nb);
				fprintf(out, ", \"pointer\": \"0x%" PRIx64 "\", \"interior\": %s",
					val, val != nb.addr ? "true" : "false");
			}
			fputc('}', out);
			continue;
		}
		fprintf(out, "  %*s", HD_WHY_INDENT(i), "");
		if (r >= 0) {
			const struct hd_root *root = hd_graph_root(a->g, (size_t)r);
			fprintf(out, "%s (%s", root->name, hd_root_kind_name(root->kind));
			if (root->kind != HD_ROOT_REGISTERS)
				fprintf(out, " at 0x%" PRIx64, root->start);
			fputc(')', out);
		} else {
			describe_block(out, a, u, false);
		}
		if (ref) {
			struct hd_block nb;
			hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, path[i + 1]), &nb);
			char stype[512], member[512];
			step_member(a, u, off, stype, sizeof(stype), member, sizeof(member));
			if (reg >= 0)
				fprintf(out, "\n  %*s  %%%s = 0x%" PRIx64, HD_WHY_INDENT(i), "",
					reg_names[reg], val);
			else if (member[0])
				fprintf(out, "\n  %*s  +0x%" PRIx64 " .%s = 0x%" PRIx64,
					HD_WHY_INDENT(i), "", off, member, val);
			else
				fprintf(out, "\n  %*s  +0x%" PRIx64 " = 0x%" PRIx64, HD_WHY_INDENT(i),
					"", off, val);
			if (val != nb.addr)
				fprintf(out, " (interior: +0x%" PRIx64 " into the block)",
					val - nb.addr);
			fputs(" ->", out);
		}
		fputc('\n', out);
	}
}

// One chain: text, the one-line form (short chains) and the steps; JSON,
// the steps' array. refs: hd_chain_refs of the chain.
static void print_chain(FILE *out, const struct hd_analysis *a,
			const uint32_t *path, size_t len,
			const struct hd_chain_ref *refs, bool json)
{
	if (json) {
		fputc('[', out);
		print_steps(out, a, path, len, refs, true);
		fputc(']', out);
		return;
	}
	if (len <= 64) {
		fputs("  ", out);
		hd_chain_line(out, a, path, len, refs, " → ", false);
		fputs("\n", out);
	}
	print_steps(out, a, path, len, refs, false);
}

// "also reachable from": one line per other class, its roots and its
// shortest chain (in one line, or its root when the chain is long).
static struct hd_error *print_also(FILE *out, const struct hd_analysis *a,
				   const struct hd_why_roots *w)
{
	bool any = false;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if (!w->roots[r] || (int)r == w->first)
			continue;
		if (!any)
			fputs("also reachable from:\n", out);
		any = true;
		uint32_t *path;
		size_t len;
		struct hd_error *err = hd_why_roots_path(w, r, &path, &len);
		if (err)
			return err;
		struct hd_chain_ref *refs;
		if ((err = hd_chain_refs(a, path, len, &refs))) {
			free(path);
			return err;
		}
		fprintf(out, "  %s (%zu root%s), %zu step%s: ", hd_root_rank_name(r),
			w->roots[r], w->roots[r] == 1 ? "" : "s", len - 1,
			len == 2 ? "" : "s");
		hd_chain_line(out, a, path, len <= 64 ? len : 1, refs, " → ", false);
		fputs(len <= 64 ? "\n" : " → …\n", out);
		free(refs);
		free(path);
	}
	return NULL;
}

// The "paths" member; the first class's chain is main (with its refs),
// already found.
static struct hd_error *print_json_paths(FILE *out, const struct hd_analysis *a,
					 const struct hd_why_roots *w,
					 const uint32_t *main, size_t main_len,
					 const struct hd_chain_ref *main_refs)
{
	fputs(", \"paths\": [", out);
	bool any = false;
	for (unsigned r = 0; r < HD_ROOT_RANKS; r++) {
		if (!w->roots[r])
			continue;
		uint32_t *path = NULL;
		size_t len = main_len;
		struct hd_chain_ref *refs = NULL;
		struct hd_error *err = NULL;
		if ((int)r != w->first &&
		    !(err = hd_why_roots_path(w, r, &path, &len)))
			err = hd_chain_refs(a, path, len, &refs);
		if (err) {
			free(path);
			return err;
		}
		fprintf(out, "%s{\"class\": \"%s\", \"roots\": %zu, \"path\": ",
			any ? ", " : "", hd_root_rank_name(r), w->roots[r]);
		print_chain(out, a, path ? path : main, len, refs ? refs : main_refs,
			    true);
		free(refs);
		free(path);
		fputc('}', out);
		any = true;
	}
	fputc(']', out);
	return NULL;
}

struct hd_error *hd_render_why(FILE *out, struct hd_session *s,
			       const struct hd_render_options *o)
{
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get(s, &a);
	if (err)
		return err;
	hd_analysis_semantic(s, &a);
	// A sub-allocator's block (a pymalloc object) is a vertex of the
	// default modules' semantic graph only: its chain is found there, and
	// so is a malloc'd block's, which such objects may hold.
	if (a.sem) {
		int64_t sub = hd_suballoc_find(&a.sem->fw->sa, o->address);
		if (sub >= 0 && a.sem->fw->sa.blocks[sub].state == HD_STATE_USED)
			return hd_render_why_semantic(out, s, &a, -1, sub, o);
	}
	if ((err = hd_why_not_subblock(&a, o->address)))
		return err;
	int64_t id = hd_heap_find(a.h, o->address);
	if (a.sem && id >= 0 && hd_heap_state(a.h, (size_t)id) == HD_STATE_USED)
		return hd_render_why_semantic(out, s, &a, id, -1, o);
	if (id < 0 && (err = hd_why_in_region(&a, o->address)))
		return err;
	if (id < 0)
		return hd_error_at(HD_ERROR_NOT_FOUND, o->address,
				   "0x%" PRIx64 " is not inside any heap block", o->address);
	struct hd_block b;
	hd_heap_block(a.h, (size_t)id, &b);
	if (b.state != HD_STATE_USED)
		return hd_error_at(HD_ERROR_NOT_FOUND, o->address,
				   "0x%" PRIx64 " is in the %s block 0x%" PRIx64 "%s%s: the allocator holds it, nothing keeps it alive",
				   o->address, hd_block_state_name(b.state), b.addr,
				   b.state == HD_STATE_FREE ? " on the free list " : "",
				   b.state == HD_STATE_FREE ? b.list_name : "");
	uint32_t v = hd_graph_block_vertex(a.g, (size_t)id);
	bool reachable = hd_dom_idom(a.d, v) != HD_DOM_NONE;
	// Every root that reaches the block, by class; for a leaked block the
	// chain from a block nothing points at.
	struct hd_why_roots w = { .first = -1 };
	uint32_t *path = NULL;
	size_t len = 0;
	const struct hd_csr *rev;
	err = hd_analysis_reverse(&a, &rev);
	if (err)
		return err;
	if (reachable)
		err = hd_why_roots_find(rev, v, graph_rank, a.g, o->exclude, &w);
	else
		err = hd_shortest_chain(&a, v, false, &path, &len);
	if (!err && w.first >= 0)
		err = hd_why_roots_path(&w, (unsigned)w.first, &path, &len);
	if (err) {
		hd_why_roots_deinit(&w);
		return err;
	}
	struct hd_alloc_sites as;
	err = hd_alloc_sites_init(&as, s);
	if (err) {
		hd_why_roots_deinit(&w);
		free(path);
		return err;
	}
	const struct traced_block *tb = hd_alloc_sites_find(&as, b.addr);
	bool json = o->format == HD_FORMAT_JSON;
	if (json) {
		fputc('{', out);
		hd_json_truncation(out, a.t);
		fprintf(out, "\"target\": ");
		hd_json_string(out, hd_target_name(a.t));
		hd_alloc_sites_json_note(out, &as);
		fprintf(out, ", \"query\": \"0x%" PRIx64 "\", \"block\": {", o->address);
		describe_block(out, &a, v, true);
		if (as.present)
			hd_alloc_site_json(out, &as, tb);
		fprintf(out, "}, \"reachable\": %s", reachable ? "true" : "false");
		hd_why_json_classes(out, o->exclude, &w);
	} else {
		hd_alloc_sites_text_note(out, &as, o->color);
	}
	// Printed after the chain.
	char site_line[700] = "";
	if (tb) {
		char site[600];
		hd_alloc_site_text(&as, tb, site, sizeof(site));
		snprintf(site_line, sizeof(site_line),
			 "0x%" PRIx64 " was allocated at %s (now %" PRIu32 ")\n", b.addr, site,
			 as.tr.head.epoch);
	} else if (as.present && !as.error) {
		snprintf(site_line, sizeof(site_line),
			 "0x%" PRIx64 " was allocated while the tracer was off\n", b.addr);
	}
	hd_alloc_sites_deinit(&as);
	if (!json) {
		fprintf(out, "0x%" PRIx64 " is in ", o->address);
		describe_block(out, &a, v, false);
	}
	if (!json && w.first >= 0) {
		fprintf(out, ", kept alive by this chain from %s (%zu step%s):\n",
			hd_root_rank_name((unsigned)w.first), len - 1, len == 2 ? "" : "s");
	} else if (!json && reachable) {
		fputs(", which is not reachable from any root outside the excluded classes (reachable only from: ", out);
		hd_why_class_counts(out, w.excluded);
		fputs(")\n", out);
	} else if (!json) {
		fprintf(out, ", which is LEAKED: no root reaches it. Chain from a leaked block nothing points at:\n");
	}
	// Where each step refers to the next, found once for both listings.
	struct hd_chain_ref *refs = NULL;
	if (path)
		err = hd_chain_refs(&a, path, len, &refs);
	if (!err && json)
		fputs(", \"path\": ", out);
	if (!err && path)
		print_chain(out, &a, path, len, refs, json);
	else if (!err && json)
		fputs("[]", out);
	if (!err && json)
		err = print_json_paths(out, &a, &w, path, len, refs);
	if (!err && !json)
		err = print_also(out, &a, &w);
	if (!err && !json && w.first >= 0)
		hd_why_text_ignored(out, w.excluded);
	hd_why_roots_deinit(&w);
	free(refs);
	free(path);
	if (err)
		return err;
	if (json)
		fputs("}\n", out);
	else
		fputs(site_line, out);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
