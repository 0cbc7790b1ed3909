// The keep-alive tree: the blocks that hold most memory, what holds them,
// and (with --depth) what they hold.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/holders.h"
#include "report/report_internal.h"

#define DEFAULT_TOP 20

// Top-level holders: blocks whose dominator is a root or the super-root,
// largest retained first.
static struct hd_error *top_holders(const struct hd_analysis *a,
				    uint32_t **ret, size_t *n)
{
	size_t cap = 0;
	*ret = NULL;
	*n = 0;
	size_t nroots = hd_graph_num_roots(a->g);
	for (uint32_t v = 0; v <= nroots; v++) {
		const uint32_t *c;
		size_t k;
		hd_dom_children(a->d, v, &c, &k);
		for (size_t i = 0; i < k; i++) {
			if (hd_graph_vertex_block(a->g, c[i]) < 0)
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 1024;
				uint32_t *p = realloc(*ret, cap * sizeof(*p));
				if (!p) {
					free(*ret);
					return &hd_error_no_memory;
				}
				*ret = p;
			}
			(*ret)[(*n)++] = c[i];
		}
	}
	return NULL;
}

// Who holds a top-level block: its root, or the joint holder it is in.
static void holder_name(const struct hd_analysis *a,
			const struct hd_holders_model *m, uint32_t v, char *buf,
			size_t len)
{
	uint32_t idom = hd_dom_idom(a->d, v);
	int64_t r = hd_graph_vertex_root(a->g, idom);
	const char *joint;
	if (r >= 0)
		snprintf(buf, len, "%s", hd_graph_root(a->g, (size_t)r)->name);
	else if (idom == 0 && (joint = hd_holders_joint_name(m, v)))
		snprintf(buf, len, "%s", joint);
	else
		hd_idom_label(a, idom, buf, len);
}

struct tree_item {
	uint32_t v;
	unsigned level;
};

static void text_row(FILE *out, const struct hd_analysis *a, uint32_t v,
		     unsigned level, const char *held_by)
{
	struct hd_block b;
	hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, v), &b);
	char ret[32], size[32], type[512];
	uint64_t r = hd_dom_retained(a->d, v);
	hd_format_size(r, ret, sizeof(ret));
	hd_format_size(b.usable, size, sizeof(size));
	hd_block_type(a, (size_t)hd_graph_vertex_block(a->g, v), type, sizeof(type));
	fprintf(out, "%*s%-12s %6.2f%% %10" PRIu32 " %10s  0x%-14" PRIx64 "  %-24s %s\n",
		2 * level + 2, "", ret, hd_percent(a, r),
		hd_dom_retained_blocks(a->d, v), size, b.addr, type, held_by);
}

static void json_node(FILE *out, const struct hd_analysis *a, uint32_t v,
		      bool *first, int depth)
{
	struct hd_block b;
	hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, v), &b);
	char idom[600];
	uint32_t d = hd_dom_idom(a->d, v);
	fprintf(out, "%s\n{\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
		", \"chunk\": %" PRIu64 ", \"retained\": %" PRIu64
		", \"retained_blocks\": %" PRIu32 ", \"idom\": ",
		*first ? "" : ",", b.addr, b.usable, b.extent,
		hd_dom_retained(a->d, v), hd_dom_retained_blocks(a->d, v));
	if (d == HD_DOM_NONE) {
		fputs("null", out);
	} else {
		hd_idom_label(a, d, idom, sizeof(idom));
		hd_json_string(out, idom);
	}
	char type[512];
	if (hd_block_type(a, (size_t)hd_graph_vertex_block(a->g, v), type, sizeof(type))) {
		fputs(", \"type\": ", out);
		hd_json_string(out, type);
	} else {
		fputs(", \"type\": null", out);
	}
	if (depth >= 0)
		fprintf(out, ", \"depth\": %d", depth);
	else
		fprintf(out, ", \"leaked\": %s", d == HD_DOM_NONE ? "true" : "false");
	fputc('}', out);
	*first = false;
}

static void json_roots(FILE *out, const struct hd_analysis *a, bool all)
{
	fputs(", \"roots\": [", out);
	bool first = true;
	for (size_t i = 0; i < hd_graph_num_roots(a->g); i++) {
		uint32_t v = hd_graph_root_vertex(a->g, i);
		uint64_t r = hd_dom_retained(a->d, v);
		if (!r && !all)
			continue;
		const struct hd_root *root = hd_graph_root(a->g, i);
		fprintf(out, "%s\n{\"name\": ", first ? "" : ",");
		hd_json_string(out, root->name);
		fprintf(out, ", \"kind\": \"%s\", \"retained\": %" PRIu64
			", \"retained_blocks\": %" PRIu32 "}",
			hd_root_kind_name(root->kind), r,
			// The count includes the root vertex itself.
			hd_dom_retained_blocks(a->d, v) - 1);
		first = false;
	}
	fputs("]", out);
}

static uint64_t leaked_bytes(const struct hd_analysis *a, uint64_t *blocks)
{
	uint64_t bytes = 0;
	*blocks = 0;
	for (size_t i = 0; i < hd_heap_num_blocks(a->h); i++) {
		struct hd_block b;
		hd_heap_block(a->h, i, &b);
		if (b.state == HD_STATE_USED &&
		    hd_dom_idom(a->d, hd_graph_block_vertex(a->g, i)) == HD_DOM_NONE) {
			bytes += b.extent;
			(*blocks)++;
		}
	}
	return bytes;
}

static struct hd_error *render_tree(FILE *out, const struct hd_analysis *a,
				    const struct hd_holders_model *m,
				    const struct hd_render_options *o,
				    const uint32_t *top, size_t ntop, bool json)
{
	size_t limit = o->top ? o->top : DEFAULT_TOP;
	// Depth-first with an explicit stack: children pushed largest last.
	struct tree_item *stack = NULL;
	size_t sp = 0, cap = 0;
	bool first = true;
	for (size_t i = 0; i < ntop && i < limit; i++) {
		if (hd_dom_retained(a->d, top[i]) < o->min_size)
			break;
		sp = 0;
		if (sp == cap) {
			cap = cap ? 2 * cap : 256;
			struct tree_item *p = realloc(stack, cap * sizeof(*p));
			if (!p) {
				free(stack);
				return &hd_error_no_memory;
			}
			stack = p;
		}
		stack[sp++] = (struct tree_item){top[i], 0};
		while (sp) {
			struct tree_item it = stack[--sp];
			if (json) {
				json_node(out, a, it.v, &first, (int)it.level);
			} else {
				char held[600];
				if (it.level == 0)
					holder_name(a, m, it.v, held, sizeof(held));
				else
					held[0] = '\0';
				text_row(out, a, it.v, it.level, held);
			}
			if (it.level >= o->depth)
				continue;
			const uint32_t *c;
			size_t k;
			hd_dom_children(a->d, it.v, &c, &k);
			size_t shown = 0;
			while (shown < k && shown < limit &&
			       hd_dom_retained(a->d, c[shown]) >= o->min_size)
				shown++;
			if (sp + shown > cap) {
				cap = 2 * (sp + shown);
				struct tree_item *p = realloc(stack, cap * sizeof(*p));
				if (!p) {
					free(stack);
					return &hd_error_no_memory;
				}
				stack = p;
			}
			for (size_t j = shown; j-- > 0;)
				stack[sp++] = (struct tree_item){c[j], it.level + 1};
		}
	}
	free(stack);
	return NULL;
}

struct hd_error *hd_render_dominators(FILE *out, struct hd_session *s,
				      const struct hd_render_options *o)
{
	if (o->semantic)
		return hd_render_semantic(out, s, o);
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get_view(
		s, o->plain ? HD_DOM_PLAIN : HD_DOM_RANKED, &a);
	if (err)
		return err;
	struct hd_holders_model m;
	err = hd_holders_model_init(&m, &a);
	if (err) {
		hd_holders_model_deinit(&m);
		return err;
	}
	uint32_t *top;
	size_t ntop;
	err = top_holders(&a, &top, &ntop);
	if (err) {
		hd_holders_model_deinit(&m);
		return err;
	}
	hd_sort_by_retained(a.d, top, ntop);
	bool json = o->format == HD_FORMAT_JSON;
	uint64_t nleak, leak = leaked_bytes(&a, &nleak);
	if (json) {
		fputc('{', out);
		hd_json_heap_header(out, a.t, a.h);
		struct hd_graph_info gi;
		hd_graph_get_info(a.g, &gi);
		fprintf(out, ", \"heap\": {\"used_blocks\": %" PRIu64
			", \"used_bytes\": %" PRIu64 ", \"leaked_blocks\": %" PRIu64
			", \"leaked_bytes\": %" PRIu64 "}, \"edges\": {\"total\": %" PRIu64
			", \"typed\": %" PRIu64 ", \"conservative\": %" PRIu64
			", \"interior\": %" PRIu64 "}",
			a.used_blocks, a.used_bytes, nleak, leak, gi.edges,
			gi.typed_edges, gi.conservative_edges, gi.interior_edges);
		json_roots(out, &a, o->all);
		hd_holders_json(out, &a, &m);
		fputs(", \"nodes\": [", out);
		if (o->all) {
			bool first = true;
			for (size_t i = 0; i < hd_heap_num_blocks(a.h); i++) {
				struct hd_block b;
				hd_heap_block(a.h, i, &b);
				if (b.state == HD_STATE_USED)
					json_node(out, &a, hd_graph_block_vertex(a.g, i),
						  &first, -1);
			}
		} else {
			err = render_tree(out, &a, &m, o, top, ntop, true);
		}
		fputs("\n]}\n", out);
	} else {
		char used[32], lk[32];
		hd_format_size(a.used_bytes, used, sizeof(used));
		hd_format_size(leak, lk, sizeof(lk));
		hd_text_problems(out, a.t, a.h, o->color);
		struct hd_graph_info gi;
		hd_graph_get_info(a.g, &gi);
		fprintf(out, "heap of %s: %" PRIu64 " used blocks, %s; %zu roots; %" PRIu64
			" leaked blocks, %s (heapdom leaks); %" PRIu64 " references, %" PRIu64
			" through typed pointers\n\n",
			hd_target_name(a.t), a.used_blocks, used,
			hd_graph_num_roots(a.g), nleak, lk, gi.edges - hd_graph_num_roots(a.g),
			gi.typed_edges);
		hd_holders_view_text(out, &a);
		hd_holders_text(out, &a, &m, o->top ? o->top : 10, o->color);
		hd_heading(out, o->color, "Blocks holding the most memory");
		fprintf(out, "  %-12s %7s %10s %10s  %-16s  %-24s %s\n",
			"retained", "%", "blocks", "size", "address", "type", "held by");
		err = render_tree(out, &a, &m, o, top, ntop, false);
	}
	free(top);
	hd_holders_model_deinit(&m);
	if (!err && ferror(out))
		err = hd_error_create(HD_ERROR_OS, "cannot write output");
	return err;
}
