// Graph export (JSON or DOT), whole or around one block, so anyone can
// re-check the dominators with their own tools.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

// Marks the vertices within depth edges of start (all used blocks and
// roots when there is no start).
static struct hd_error *select_vertices(const struct hd_analysis *a,
					const struct hd_render_options *o,
					uint8_t **ret)
{
	uint32_t n = hd_graph_num_vertices(a->g);
	uint8_t *sel = calloc(n, 1);
	if (!sel)
		return &hd_error_no_memory;
	if (!o->has_address) {
		for (uint32_t v = 1; v < n; v++) {
			int64_t b = hd_graph_vertex_block(a->g, v);
			struct hd_block blk;
			if (b >= 0)
				hd_heap_block(a->h, (size_t)b, &blk);
			sel[v] = b < 0 || blk.state == HD_STATE_USED;
		}
		*ret = sel;
		return NULL;
	}
	int64_t id = hd_heap_find(a->h, o->address);
	if (id < 0) {
		free(sel);
		return hd_error_at(HD_ERROR_NOT_FOUND, o->address,
				   "0x%" PRIx64 " is not inside any heap block", o->address);
	}
	struct hd_block blk;
	hd_heap_block(a->h, (size_t)id, &blk);
	if (blk.state != HD_STATE_USED) {
		free(sel);
		return hd_error_at(HD_ERROR_NOT_FOUND, o->address,
				   "0x%" PRIx64 " is in the %s block 0x%" PRIx64 ", which is no graph node (only roots and used blocks are)",
				   o->address, hd_block_state_name(blk.state), blk.addr);
	}
	uint32_t *queue = malloc((size_t)n * sizeof(*queue));
	unsigned *depth = malloc((size_t)n * sizeof(*depth));
	if (!queue || !depth) {
		free(sel);
		free(queue);
		free(depth);
		return &hd_error_no_memory;
	}
	size_t head = 0, tail = 0;
	uint32_t start = hd_graph_block_vertex(a->g, (size_t)id);
	queue[tail++] = start;
	depth[start] = 0;
	sel[start] = 1;
	unsigned max = o->depth_set ? o->depth : 3;
	while (head < tail) {
		uint32_t u = queue[head++];
		if (depth[u] >= max)
			continue;
		const uint32_t *t;
		size_t k;
		hd_graph_successors(a->g, u, &t, &k);
		for (size_t i = 0; i < k; i++) {
			uint32_t w = t[i] & ~HD_GRAPH_INTERIOR;
			if (!sel[w]) {
				sel[w] = 1;
				depth[w] = depth[u] + 1;
				queue[tail++] = w;
			}
		}
	}
	free(queue);
	free(depth);
	*ret = sel;
	return NULL;
}

struct hd_error *hd_render_graph(FILE *out, struct hd_session *s,
				 const struct hd_render_options *o)
{
	struct hd_analysis a;
	struct hd_error *err = hd_analysis_get(s, &a);
	if (err)
		return err;
	uint8_t *sel = NULL;
	err = select_vertices(&a, o, &sel);
	if (err)
		return err;
	uint32_t n = hd_graph_num_vertices(a.g);
	bool dot = o->format == HD_FORMAT_DOT;
	if (dot)
		fputs("digraph heap {\n  node [shape=box, fontname=monospace];\n", out);
	else {
		fputc('{', out);
		hd_json_truncation(out, a.t);
		fputs("\"nodes\": [", out);
	}
	bool first = true;
	for (uint32_t v = 1; v < n; v++) {
		if (!sel[v])
			continue;
		int64_t r = hd_graph_vertex_root(a.g, v);
		struct hd_block b = {0};
		if (r < 0)
			hd_heap_block(a.h, (size_t)hd_graph_vertex_block(a.g, v), &b);
		if (dot) {
			if (r >= 0) {
				fprintf(out, "  v%" PRIu32 " [shape=ellipse, label=", v);
				hd_json_string(out, hd_graph_root(a.g, (size_t)r)->name);
			} else {
				char sz[32], ret[32], label[96];
				hd_format_size(b.usable, sz, sizeof(sz));
				hd_format_size(hd_dom_retained(a.d, v), ret, sizeof(ret));
				snprintf(label, sizeof(label), "0x%" PRIx64 "\\n%s, retains %s",
					 b.addr, sz, ret);
				fprintf(out, "  v%" PRIu32 " [label=\"%s\"", v, label);
			}
			fputs("];\n", out);
			continue;
		}
		fprintf(out, "%s\n{\"id\": %" PRIu32 ", ", first ? "" : ",", v);
		if (r >= 0) {
			const struct hd_root *root = hd_graph_root(a.g, (size_t)r);
			fputs("\"root\": ", out);
			hd_json_string(out, root->name);
			fprintf(out, ", \"kind\": \"%s\", \"class\": \"%s\"",
				hd_root_kind_name(root->kind),
				hd_root_rank_name(hd_root_rank(root->kind)));
		} else {
			fprintf(out, "\"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
				", \"chunk\": %" PRIu64, b.addr, b.usable, b.extent);
		}
		fputc('}', out);
		first = false;
	}
	if (!dot)
		fputs("\n], \"edges\": [", out);
	first = true;
	for (uint32_t v = 1; v < n; v++) {
		if (!sel[v])
			continue;
		const uint32_t *t;
		size_t k;
		hd_graph_successors(a.g, v, &t, &k);
		for (size_t i = 0; i < k; i++) {
			uint32_t w = t[i] & ~HD_GRAPH_INTERIOR;
			if (!sel[w])
				continue;
			if (dot)
				fprintf(out, "  v%" PRIu32 " -> v%" PRIu32 "%s;\n", v, w,
					(t[i] & HD_GRAPH_INTERIOR) ? " [style=dashed]" : "");
			else
				fprintf(out, "%s[%" PRIu32 ", %" PRIu32 "]", first ? "" : ", ",
					v, w);
			first = false;
		}
	}
	fputs(dot ? "}\n" : "]}\n", out);
	free(sel);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
