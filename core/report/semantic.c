// The semantic tree (dominators --semantic) and the list of framework
// modules (frameworks): one renderer for the CLI, gdb and lldb.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap/heap_internal.h"
#include "report/report_internal.h"
#include "semantic/semantic_internal.h"
#include "session/session_internal.h"

#define DEFAULT_TOP 10
#define DEFAULT_DEPTH 3

struct sem_view {
	struct hd_target *t;
	const struct hd_heap *h;
	const struct hd_semantic *s;
	const struct hd_fw *fw;
	const struct hd_typing *ty;
	uint32_t first_block, first_sub;
};

static const char *const kind_names[] = {"super", "root", "block", "subblock", "node"};

static uint64_t vertex_addr(const struct sem_view *w, uint32_t v)
{
	if (hd_semantic_vertex_kind(w->s, v) == HD_SV_BLOCK) {
		struct hd_block b;
		hd_heap_block(w->h, v - w->first_block, &b);
		return b.addr;
	}
	return w->fw->sa.blocks[v - w->first_sub].addr;
}

static enum hd_block_state vertex_state(const struct sem_view *w, uint32_t v)
{
	if (hd_semantic_vertex_kind(w->s, v) == HD_SV_BLOCK)
		return hd_heap_state(w->h, v - w->first_block);
	return (enum hd_block_state)w->fw->sa.blocks[v - w->first_sub].state;
}

// A block's type: the framework's name for it, its sub-allocator type, its
// DWARF type; false when none of them knows.
static bool vertex_type(const struct sem_view *w, uint32_t v, char *buf,
			size_t len)
{
	int named = hd_fw_vertex_name(w->fw, v, buf, len);
	if (named >= 0)
		return named;
	return hd_block_label(w->h, w->ty, v - w->first_block, buf, len);
}

// How a user finds a vertex: "node:3", "root:main: cache", "0x55…", "super".
static void vertex_ref(const struct sem_view *w, uint32_t v, char *buf,
		       size_t len)
{
	switch (hd_semantic_vertex_kind(w->s, v)) {
	case HD_SV_SUPER: snprintf(buf, len, "super"); break;
	case HD_SV_ROOT:
		snprintf(buf, len, "root:%s", hd_graph_root(w->s->g, v - 1)->name);
		break;
	case HD_SV_NODE: snprintf(buf, len, "node:%u", v - w->s->nv); break;
	default:
		snprintf(buf, len, "0x%" PRIx64, vertex_addr(w, v));
	}
}

static void json_sizes(FILE *out, const struct sem_view *w, uint32_t v)
{
	const struct hd_semantic *s = w->s;
	enum hd_svertex k = hd_semantic_vertex_kind(w->s, v);
	uint64_t oa = 0, ou = 0;
	uint32_t oc = 0;
	if (k == HD_SV_NODE) {
		oa = s->obj_alloc[v - s->nv];
		ou = s->obj_used[v - s->nv];
		oc = s->obj_count[v - s->nv];
	} else if (k == HD_SV_BLOCK || k == HD_SV_SUB) {
		uint64_t f;
		hd_semantic_own(s, v, &oa, &ou, &f);
		oc = 1;
	}
	fprintf(out, "\"object\": {\"alloc\": %" PRIu64 ", \"used\": %" PRIu64
		", \"blocks\": %u}, \"bound\": {\"alloc\": %" PRIu64 ", \"used\": %" PRIu64
		", \"framework\": %" PRIu64 ", \"application\": %" PRIu64
		", \"blocks\": %u}",
		oa, ou, oc, s->r_alloc[v], s->r_used[v], s->r_fwb[v],
		s->r_alloc[v] - s->r_fwb[v], s->r_count[v]);
}

static void json_frameworks(FILE *out, const struct hd_fw *fw)
{
	fputs("\"frameworks\": [", out);
	for (size_t i = 0; i < fw->num_mods; i++) {
		const struct hd_fw_module *m = &fw->mods[i];
		fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
		hd_json_string(out, m->ops->name);
		fputs(", \"version\": ", out);
		hd_json_string(out, m->ops->version ? m->ops->version : "");
		fputs(", \"description\": ", out);
		hd_json_string(out, m->ops->description ? m->ops->description : "");
		fputs(", \"source\": ", out);
		hd_json_string(out, m->source);
		fprintf(out, ", \"detected\": %s, \"error\": ", m->detected ? "true" : "false");
		if (m->error)
			hd_json_string(out, m->error);
		else
			fputs("null", out);
		fputs(", \"notes\": [", out);
		for (size_t k = 0; k < m->num_notes; k++) {
			if (k)
				fputs(", ", out);
			hd_json_string(out, m->notes[k]);
		}
		fputs("], \"warnings\": [", out);
		for (size_t k = 0; k < m->num_warnings; k++) {
			const struct hd_fw_warning *wn = &m->warnings[k];
			if (wn->address)
				fprintf(out, "%s{\"address\": \"0x%" PRIx64 "\", \"message\": ",
					k ? ", " : "", wn->address);
			else
				fprintf(out, "%s{\"address\": null, \"message\": ", k ? ", " : "");
			hd_json_string(out, wn->message ? wn->message : "");
			fputc('}', out);
		}
		fprintf(out, "], \"dropped_warnings\": %zu, \"subblocks\": %zu, \"regions\": %zu"
			", \"nodes\": %zu, \"assigned\": %zu}",
			m->dropped_warnings, m->subblocks, m->regions, m->nodes, m->assigned);
	}
	fputs("\n]", out);
}

static void json_nodes(FILE *out, const struct sem_view *w)
{
	const struct hd_fw *fw = w->fw;
	const struct hd_semantic *s = w->s;
	char buf[1024];
	fputs(", \"nodes\": [", out);
	for (size_t k = 0; k < fw->num_nodes; k++) {
		const struct hd_snode *n = &fw->nodes[k];
		uint32_t v = s->nv + (uint32_t)k;
		fprintf(out, "%s\n  {\"id\": %zu, \"parent\": ", k ? "," : "", k);
		if (n->parent != HD_FW_NO_NODE)
			fprintf(out, "%u", n->parent);
		else
			fputs("null", out);
		fputs(", \"holder\": ", out);
		if (n->holder != HD_DOM_NONE) {
			vertex_ref(w, n->holder, buf, sizeof(buf));
			hd_json_string(out, buf);
		} else {
			fputs("null", out);
		}
		fputs(", \"label\": ", out);
		hd_json_string(out, n->label);
		fputs(", \"kind\": ", out);
		hd_json_string(out, n->kind);
		fputs(", \"framework\": ", out);
		hd_json_string(out, fw->mods[n->module].ops->name);
		fprintf(out, ", \"owner\": \"%s\", \"idom\": ",
			n->owner ? "framework" : "application");
		uint32_t d = s->tree.idom[v];
		if (d == HD_NO_VERTEX) {
			fputs("null", out);
		} else {
			vertex_ref(w, d, buf, sizeof(buf));
			hd_json_string(out, buf);
		}
		fputs(", ", out);
		json_sizes(out, w, v);
		fputc('}', out);
	}
	fputs("\n]", out);
}

// --all: every block the semantic tree reaches, with its dominator and
// the node it is assigned to.
static void json_blocks(FILE *out, const struct sem_view *w)
{
	const struct hd_semantic *s = w->s;
	char buf[1024];
	bool first = true;
	fputs(", \"blocks\": [", out);
	for (uint32_t v = w->first_block; v < s->nv; v++) {
		uint32_t d = s->tree.idom[v];
		if (d == HD_NO_VERTEX)
			continue;
		fprintf(out, "%s\n  {\"address\": \"0x%" PRIx64 "\", \"kind\": \"%s\", \"type\": ",
			first ? "" : ",", vertex_addr(w, v), kind_names[hd_semantic_vertex_kind(w->s, v)]);
		first = false;
		if (vertex_type(w, v, buf, sizeof(buf)))
			hd_json_string(out, buf);
		else
			fputs("null", out);
		fprintf(out, ", \"state\": \"%s\"", hd_block_state_name(vertex_state(w, v)));
		vertex_ref(w, d, buf, sizeof(buf));
		fputs(", \"idom\": ", out);
		hd_json_string(out, buf);
		uint32_t node = w->fw->assigned ? w->fw->assigned[v] : HD_FW_NO_NODE;
		if (node < w->fw->num_nodes)
			fprintf(out, ", \"node\": %u, ", node);
		else
			fputs(", \"node\": null, ", out);
		json_sizes(out, w, v);
		fputc('}', out);
	}
	fputs("\n]", out);
}

// One line (text) or one object (JSON, children left open) for v.
static void entry(FILE *out, const struct sem_view *w, uint32_t v,
		  unsigned level, bool json, bool color)
{
	const struct hd_semantic *s = w->s;
	const struct hd_fw *fw = w->fw;
	enum hd_svertex k = hd_semantic_vertex_kind(w->s, v);
	char label[1024], type[512];
	bool typed = false;
	if (k == HD_SV_NODE) {
		const struct hd_snode *n = &fw->nodes[v - s->nv];
		snprintf(label, sizeof(label), "%s", n->label);
	} else if (k == HD_SV_ROOT) {
		snprintf(label, sizeof(label), "%s", hd_graph_root(s->g, v - 1)->name);
	} else {
		typed = vertex_type(w, v, type, sizeof(type));
		snprintf(label, sizeof(label), "%s", type);
	}
	if (json) {
		fprintf(out, "{\"kind\": \"%s\", \"label\": ", kind_names[k]);
		hd_json_string(out, label);
		if (k == HD_SV_NODE) {
			const struct hd_snode *n = &fw->nodes[v - s->nv];
			fprintf(out, ", \"node\": %u, \"node_kind\": ", v - s->nv);
			hd_json_string(out, n->kind);
			fputs(", \"framework\": ", out);
			hd_json_string(out, fw->mods[n->module].ops->name);
			fprintf(out, ", \"owner\": \"%s\"", n->owner ? "framework" : "application");
		} else if (k == HD_SV_BLOCK || k == HD_SV_SUB) {
			fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"type\": ",
				vertex_addr(w, v));
			if (typed)
				hd_json_string(out, type);
			else
				fputs("null", out);
		}
		fputs(", ", out);
		json_sizes(out, w, v);
		fputs(", \"children\": [", out);
		return;
	}
	char bound[32], fwb[32], obj[32], used[32];
	hd_format_size(s->r_alloc[v], bound, sizeof(bound));
	hd_format_size(s->r_used[v], used, sizeof(used));
	hd_format_size(s->r_fwb[v], fwb, sizeof(fwb));
	uint64_t own = 0, ou, of;
	if (k == HD_SV_NODE)
		own = s->obj_alloc[v - s->nv];
	else
		hd_semantic_own(s, v, &own, &ou, &of);
	hd_format_size(own, obj, sizeof(obj));
	fprintf(out, "  %-11s %-11s %-11s %-11s %8u  %*s", bound, used, fwb,
		k == HD_SV_ROOT ? "" : obj, s->r_count[v], (int)(2 * level), "");
	if (k == HD_SV_NODE) {
		const struct hd_snode *n = &fw->nodes[v - s->nv];
		fprintf(out, "%s[%s]%s %s (%s)\n", color ? "\033[1;36m" : "", n->kind,
			color ? "\033[0m" : "", n->label, fw->mods[n->module].ops->name);
	} else if (k == HD_SV_ROOT) {
		fprintf(out, "root %s\n", label);
	} else {
		fprintf(out, "0x%" PRIx64 " %s\n", vertex_addr(w, v), label);
	}
}

// The tree from the super-root, iteratively: --top children per vertex,
// --depth levels, nothing retaining less than --min-size.
static struct hd_error *tree(FILE *out, const struct sem_view *w,
			     const struct hd_render_options *o, bool json)
{
	const struct hd_semantic *s = w->s;
	size_t top = o->top ? o->top : DEFAULT_TOP;
	unsigned depth = o->depth_set ? o->depth : DEFAULT_DEPTH;
	struct item {
		uint32_t v;
		unsigned level;
		uint8_t what; // 0 entry, 1 close (JSON), 2 "… more" line (text)
		bool first;   // first among its siblings (JSON commas)
	} *stack = NULL;
	size_t sp = 0, cap = 0;
	// The super-root's children are level 0; a pseudo-entry for it
	// pushes them like any other vertex's.
	cap = 64;
	stack = malloc(cap * sizeof(*stack));
	if (!stack)
		return &hd_error_no_memory;
	stack[sp++] = (struct item){0, 0, 0, true};
	while (sp) {
		struct item it = stack[--sp];
		if (it.what == 1) {
			if (json)
				fputs("]}", out);
			continue;
		}
		const uint32_t *c = s->children + s->child_off[it.v];
		size_t nc = s->child_off[it.v + 1] - s->child_off[it.v];
		if (it.what == 2) {
			uint64_t rest = 0;
			size_t shown = 0, more = 0;
			for (size_t i = 0; i < nc; i++) {
				if (shown < top && s->r_alloc[c[i]] >= o->min_size &&
				    s->r_alloc[c[i]] > 0) {
					shown++;
				} else if (s->r_alloc[c[i]]) {
					rest += s->r_alloc[c[i]];
					more++;
				}
			}
			char r[32];
			hd_format_size(rest, r, sizeof(r));
			fprintf(out, "  %-11s %-11s %-11s %-11s %8s  %*s… %zu more\n", r,
				"", "", "", "", (int)(2 * it.level), "", more);
			continue;
		}
		unsigned child_level = 0;
		if (it.v != 0) {
			if (json)
				fputs(it.first ? "\n" : ",\n", out);
			entry(out, w, it.v, it.level, json, o->color);
			child_level = it.level + 1;
		}
		size_t shown = 0, more = 0;
		if (it.v == 0 || child_level < depth) {
			for (size_t i = 0; i < nc; i++) {
				if (shown < top && s->r_alloc[c[i]] >= o->min_size &&
				    s->r_alloc[c[i]] > 0)
					shown++;
				else if (s->r_alloc[c[i]])
					more++;
				else
					break;
			}
		}
		if (sp + shown + 2 > cap) {
			cap = (sp + shown + 2) * 2;
			struct item *p = realloc(stack, cap * sizeof(*stack));
			if (!p) {
				free(stack);
				return &hd_error_no_memory;
			}
			stack = p;
		}
		if (it.v != 0)
			stack[sp++] = (struct item){it.v, it.level, 1, false};
		if (!json && more && shown)
			stack[sp++] = (struct item){it.v, child_level, 2, false};
		// Children are sorted by bound memory, so the shown ones are a
		// prefix; the first is pushed last.
		for (size_t i = shown; i-- > 0;)
			stack[sp++] = (struct item){c[i], child_level, 0, i == 0};
	}
	free(stack);
	return NULL;
}

static const char *fw_warning_at(void *arg, size_t i, uint64_t *addr)
{
	const struct hd_fw_module *m = arg;
	*addr = m->warnings[i].address;
	return m->warnings[i].message;
}

static void text_frameworks(FILE *out, const struct hd_fw *fw, bool color)
{
	for (size_t i = 0; i < fw->num_mods; i++) {
		const struct hd_fw_module *m = &fw->mods[i];
		const char *state = m->error ? "failed" : m->detected ? "detected" : "not detected";
		fprintf(out, "  %-12s %-6s %-13s %s", m->ops->name,
			m->ops->version ? m->ops->version : "", state, m->source);
		if (m->detected)
			fprintf(out, "; %zu nodes, %zu blocks assigned, %zu sub-allocator blocks",
				m->nodes, m->assigned, m->subblocks);
		fputc('\n', out);
		for (size_t k = 0; k < m->num_notes; k++)
			fprintf(out, "      %s\n", m->notes[k]);
		if (m->error)
			fprintf(out, "      %serror:%s %s\n", color ? "\033[1;31m" : "",
				color ? "\033[0m" : "", m->error);
		hd_text_warnings(out, color, "      ", m->num_warnings,
				 m->dropped_warnings, fw_warning_at, (void *)m);
	}
}

static struct hd_error *view_get(struct hd_session *ses,
				 const struct hd_render_options *o,
				 struct sem_view *w)
{
	const struct hd_semantic *s;
	struct hd_error *err = hd_session_semantic(ses, o->frameworks,
						   o->num_frameworks, &s);
	if (err)
		return err;
	*w = (struct sem_view){
		.t = hd_session_target(ses), .h = s->fw->h, .s = s, .fw = s->fw,
		.ty = s->fw->ty,
		.first_block = 1 + (uint32_t)s->g->num_roots,
		.first_sub = s->nv - (uint32_t)s->g->num_sub,
	};
	return NULL;
}

struct hd_error *hd_render_semantic(FILE *out, struct hd_session *ses,
				    const struct hd_render_options *o)
{
	struct sem_view w;
	struct hd_error *err = view_get(ses, o, &w);
	if (err)
		return err;
	const struct hd_semantic *s = w.s;
	uint64_t total = s->r_alloc[0], fwb = s->r_fwb[0];
	if (o->format == HD_FORMAT_JSON) {
		fputc('{', out);
		hd_json_heap_header(out, w.t, w.h);
		fputs(", ", out);
		json_frameworks(out, w.fw);
		fprintf(out, ", \"totals\": {\"alloc\": %" PRIu64 ", \"used\": %" PRIu64
			", \"framework\": %" PRIu64 ", \"application\": %" PRIu64
			", \"blocks\": %u, \"unreachable_alloc\": %" PRIu64
			", \"unreachable_blocks\": %u}",
			total, s->r_used[0], fwb, total - fwb, s->r_count[0],
			s->unreachable_alloc, s->unreachable_blocks);
		json_nodes(out, &w);
		if (o->all)
			json_blocks(out, &w);
		fputs(", \"tree\": [", out);
		err = tree(out, &w, o, true);
		fputs("\n]}\n", out);
		return err;
	}
	hd_text_problems(out, w.t, w.h, o->color);
	char a[32], u[32], f[32], ap[32], un[32];
	hd_format_size(total, a, sizeof(a));
	hd_format_size(s->r_used[0], u, sizeof(u));
	hd_format_size(fwb, f, sizeof(f));
	hd_format_size(total - fwb, ap, sizeof(ap));
	hd_format_size(s->unreachable_alloc, un, sizeof(un));
	hd_heading(out, o->color, "Semantic tree of %s", hd_target_name(w.t));
	fprintf(out, "%s allocated (%s used): framework %s, application %s; "
		"%zu semantic nodes; unreachable %s in %u blocks\n",
		a, u, f, ap, w.fw->num_nodes, un, s->unreachable_blocks);
	fputs("Frameworks:\n", out);
	text_frameworks(out, w.fw, o->color);
	fputc('\n', out);
	fprintf(out, "  %-11s %-11s %-11s %-11s %8s  %s\n", "bound", "used",
		"framework", "object", "blocks", "node / root / block");
	return tree(out, &w, o, false);
}

struct hd_error *hd_render_frameworks(FILE *out, struct hd_session *ses,
				      const struct hd_render_options *o)
{
	struct sem_view w;
	struct hd_error *err = view_get(ses, o, &w);
	if (err)
		return err;
	if (o->format == HD_FORMAT_JSON) {
		fputc('{', out);
		hd_json_heap_header(out, w.t, w.h);
		fputs(", ", out);
		json_frameworks(out, w.fw);
		fputs("}\n", out);
		return NULL;
	}
	hd_heading(out, o->color, "Framework modules for %s", hd_target_name(w.t));
	text_frameworks(out, w.fw, o->color);
	if (!w.fw->num_mods)
		fputs("  (none)\n", out);
	return NULL;
}
