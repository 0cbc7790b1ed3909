// "Who holds the heap": the top-level holders of the dominator stage
// (a partition of the used blocks) named for people, and the accumulation
// points below them, computed once and written as text or JSON.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/holders.h"
#include "report/report_internal.h"
#include "semantic/semantic_internal.h"
#include "util/sort.h"

// A holder is examined for an accumulation point when it retains at least
// this share of the used heap; the descent goes on while one child holds
// at least DOMINANT of what its parent retains.
#define SUSPECT_PERCENT 10.0
#define DOMINANT 0.8
// A walk down this many dominant children is a chain (a linked list): the
// point is the block where the walk began, not the one near the list's
// end where it would stop.
#define CHAIN_MIN 16
#define JOINT_NAMES_SHOWN 4

// What a framework module says a region root is ("pymalloc arenas"):
// the label of a sub-allocator region inside it, or NULL. The plain graph
// scans such regions as roots; the name tells a reader that the objects
// living there hold the memory.
static const char *region_label(const struct hd_analysis *a,
				const struct hd_root *r)
{
	if (!a->fw || r->kind != HD_ROOT_REGION)
		return NULL;
	const struct hd_suballoc *sa = &a->fw->sa;
	for (size_t i = 0; i < sa->num_regions; i++)
		if (sa->regions[i].start < r->end && r->start < sa->regions[i].end &&
		    sa->regions[i].label < a->fw->num_labels)
			return a->fw->labels[sa->regions[i].label];
	return NULL;
}

static void holder_name(const struct hd_analysis *a, const struct hd_holder *x,
			char *buf, size_t len)
{
	switch (x->kind) {
	case HD_HOLDER_ROOT: {
		const struct hd_root *r = hd_graph_root(a->g, x->roots[0]);
		const char *label = NULL;
		for (size_t i = 0; i < x->num_roots && !label; i++)
			label = region_label(a, hd_graph_root(a->g, x->roots[i]));
		if (label)
			snprintf(buf, len, "%s (%s)", r->name, label);
		else
			snprintf(buf, len, "%s", r->name);
		return;
	}
	case HD_HOLDER_BLOCK: {
		struct hd_block b;
		char type[256];
		size_t id = (size_t)hd_graph_vertex_block(a->g, x->vertices[0]);
		hd_heap_block(a->h, id, &b);
		hd_block_type(a, id, type, sizeof(type));
		snprintf(buf, len, "leaked 0x%" PRIx64 " %s", b.addr, type);
		return;
	}
	case HD_HOLDER_JOINT:
		break;
	}
	size_t used = (size_t)snprintf(buf, len, "jointly:");
	size_t shown = x->num_roots < JOINT_NAMES_SHOWN ? x->num_roots : JOINT_NAMES_SHOWN;
	for (size_t i = 0; i < shown && used < len; i++) {
		const struct hd_root *r = hd_graph_root(a->g, x->roots[i]);
		const char *label = region_label(a, r);
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s%s", i ? ", " : " ",
					 r->name, label ? " (" : "", label ? label : "",
					 label ? ")" : "");
	}
	if (used < len && (x->num_roots > shown || x->overflow))
		snprintf(buf + used, len - used, " (+%s%zu more)",
			 x->overflow ? "at least " : "", x->num_roots - shown);
}

// The children of a holder: its root vertices' children, or its blocks.
// The largest is *largest (0 when none), their number returned.
static size_t holder_children(const struct hd_analysis *a,
			      const struct hd_holder *x, uint32_t *largest)
{
	*largest = 0;
	uint64_t best = 0;
	size_t n = 0;
	if (x->kind != HD_HOLDER_ROOT) {
		if (x->num_vertices)
			*largest = x->vertices[0];
		return x->num_vertices;
	}
	for (size_t i = 0; i < x->num_vertices; i++) {
		const uint32_t *c;
		size_t k;
		uint32_t v = x->vertices[i];
		// Past its root vertices, a root holder's blocks are its
		// children themselves.
		if (i >= x->num_roots) {
			c = &x->vertices[i];
			k = 1;
		} else {
			hd_dom_children(a->d, v, &c, &k);
		}
		n += k;
		if (k && hd_dom_retained(a->d, c[0]) > best) {
			best = hd_dom_retained(a->d, c[0]);
			*largest = c[0];
		}
	}
	return n;
}

// Walks down from holder x into the child holding at least DOMINANT of
// its parent while there is one. A walk that goes on for CHAIN_MIN steps
// is following a chain (a linked list, whose every node dominates the
// rest): the point is where that walk began. The chain is not walked to
// its end: on an 11M-node list that alone would cost a tenth of a second,
// and the start's retained blocks say how big it is.
static void descend(const struct hd_analysis *a, struct hd_accum *p,
		    const struct hd_holder *x)
{
	uint32_t c0;
	size_t k = holder_children(a, x, &c0);
	p->retained = x->retained;
	p->retained_blocks = x->retained_blocks;
	p->children = k;
	p->largest = k ? hd_dom_retained(a->d, c0) : 0;
	if (x->kind == HD_HOLDER_BLOCK) {
		p->v = x->vertices[0];
		p->children = 0;
		p->largest = 0;
		return;
	}
	struct hd_accum start = {0};
	while (k && (double)p->largest >= DOMINANT * (double)p->retained) {
		uint32_t v = c0;
		const uint32_t *c;
		hd_dom_children(a->d, v, &c, &k);
		p->depth++;
		p->v = v;
		p->retained = hd_dom_retained(a->d, v);
		p->retained_blocks = hd_dom_retained_blocks(a->d, v);
		p->children = k;
		p->largest = k ? hd_dom_retained(a->d, c[0]) : 0;
		c0 = k ? c[0] : 0;
		if (p->depth == 1)
			start = *p;
		if (p->depth == CHAIN_MIN) {
			*p = start;
			p->chain = true;
			return;
		}
	}
}

static int vertex_order(const void *x, const void *y)
{
	const struct hd_joint_entry *a = x, *b = y;
	return (a->v > b->v) - (a->v < b->v);
}

struct hd_error *hd_holders_model_init(struct hd_holders_model *m,
				       const struct hd_analysis *a)
{
	*m = (struct hd_holders_model){0};
	size_t n = hd_dom_num_holders(a->d), nj = 0;
	m->names = calloc(n ? n : 1, sizeof(*m->names));
	if (!m->names)
		return &hd_error_no_memory;
	m->num = n;
	for (size_t i = 0; i < n; i++) {
		const struct hd_holder *x = hd_dom_holder(a->d, i);
		char buf[1024];
		holder_name(a, x, buf, sizeof(buf));
		m->names[i] = strdup(buf);
		if (!m->names[i])
			return &hd_error_no_memory;
		if (x->kind != HD_HOLDER_BLOCK)
			m->named_bytes += x->retained;
		if (x->kind == HD_HOLDER_JOINT)
			nj += x->num_vertices;
		else if (x->kind == HD_HOLDER_ROOT)
			nj += x->num_vertices - x->num_roots;
	}
	m->joint = malloc((nj ? nj : 1) * sizeof(*m->joint));
	if (!m->joint)
		return &hd_error_no_memory;
	for (size_t i = 0; i < n; i++) {
		const struct hd_holder *x = hd_dom_holder(a->d, i);
		if (x->kind != HD_HOLDER_BLOCK)
			for (size_t k = x->kind == HD_HOLDER_ROOT ? x->num_roots : 0;
			     k < x->num_vertices; k++)
				m->joint[m->num_joint++] =
					(struct hd_joint_entry){x->vertices[k], i};
	}
	hd_qsort(m->joint, m->num_joint, sizeof(*m->joint), vertex_order);
	for (size_t i = 0; i < n && m->num_points < HD_ACCUM_MAX; i++) {
		const struct hd_holder *x = hd_dom_holder(a->d, i);
		if (hd_percent(a, x->retained) < SUSPECT_PERCENT)
			break; // largest first: none further qualifies
		struct hd_accum *p = &m->points[m->num_points++];
		*p = (struct hd_accum){.holder = i};
		descend(a, p, x);
	}
	return NULL;
}

void hd_holders_model_deinit(struct hd_holders_model *m)
{
	for (size_t i = 0; i < m->num; i++)
		free(m->names[i]);
	free(m->names);
	free(m->joint);
	*m = (struct hd_holders_model){0};
}

const char *hd_holders_joint_name(const struct hd_holders_model *m, uint32_t v)
{
	size_t lo = 0, hi = m->num_joint;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->joint[mid].v < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->num_joint && m->joint[lo].v == v ? m->names[m->joint[lo].holder]
						       : NULL;
}

static const char *holder_kind(enum hd_holder_kind k)
{
	switch (k) {
	case HD_HOLDER_ROOT: return "root";
	case HD_HOLDER_JOINT: return "joint";
	case HD_HOLDER_BLOCK: return "block";
	}
	return "?";
}

static const char *class_name(const struct hd_holder *x)
{
	return x->kind == HD_HOLDER_BLOCK ? "leaked" : hd_root_rank_name(x->rank);
}

void hd_holders_view_text(FILE *out, const struct hd_analysis *a)
{
	if (hd_dom_get_view(a->d) == HD_DOM_RANKED)
		fputs("ownership: ranked by root class (globals > tls > locals > stack > registers):"
		      " a weaker root's reference into memory a stronger one holds is borrowed;"
		      " --plain counts every reference\n\n", out);
	else
		fputs("ownership: plain, the exact dominator tree of the graph (every reference"
		      " counts, registers and stack copies too)\n\n", out);
}

void hd_holders_text(FILE *out, const struct hd_analysis *a,
		     const struct hd_holders_model *m, size_t top, bool color)
{
	if (m->num_points) {
		hd_heading(out, color, "Accumulation points");
		for (size_t i = 0; i < m->num_points; i++) {
			const struct hd_accum *p = &m->points[i];
			char ret[32], where[600];
			hd_format_size(p->retained, ret, sizeof(ret));
			if (p->v) {
				struct hd_block b;
				char type[256];
				size_t id = (size_t)hd_graph_vertex_block(a->g, p->v);
				hd_heap_block(a->h, id, &b);
				hd_block_type(a, id, type, sizeof(type));
				snprintf(where, sizeof(where), "0x%" PRIx64 " %s, %" PRIu64
					 " level%s under %s", b.addr, type, p->depth,
					 p->depth == 1 ? "" : "s", m->names[p->holder]);
			} else {
				snprintf(where, sizeof(where), "%s", m->names[p->holder]);
			}
			fprintf(out, "  %6.2f%% %-10s %s: ", hd_percent(a, p->retained), ret, where);
			if (p->chain)
				fprintf(out, "a chain (each block holds most of the next), %" PRIu64
					" blocks\n", p->retained_blocks);
			else if (p->children)
				fprintf(out, "%zu children, the largest %.2f%%\n", p->children,
					hd_percent(a, p->largest));
			else
				fprintf(out, "one block, no children\n");
		}
		fputc('\n', out);
	}
	hd_heading(out, color, "Who holds the heap (each used block under exactly one holder)");
	fprintf(out, "  %-12s %7s %10s  %-9s %s\n", "retained", "%", "blocks", "class", "holder");
	uint64_t rest = 0;
	for (size_t i = 0; i < m->num; i++) {
		const struct hd_holder *x = hd_dom_holder(a->d, i);
		if (i >= top) {
			rest += x->retained;
			continue;
		}
		char ret[32];
		hd_format_size(x->retained, ret, sizeof(ret));
		fprintf(out, "  %-12s %6.2f%% %10" PRIu64 "  %-9s %s\n", ret,
			hd_percent(a, x->retained), x->retained_blocks, class_name(x),
			m->names[i]);
	}
	if (m->num > top) {
		char r[32];
		hd_format_size(rest, r, sizeof(r));
		fprintf(out, "  … %zu more holders: %s (%.2f%%)\n", m->num - top, r,
			hd_percent(a, rest));
	}
	char named[32];
	hd_format_size(m->named_bytes, named, sizeof(named));
	fprintf(out, "  %.2f%% of the used heap (%s) is under a root or a named joint holder\n\n",
		hd_percent(a, m->named_bytes), named);
}

void hd_holders_json(FILE *out, const struct hd_analysis *a,
		     const struct hd_holders_model *m)
{
	fprintf(out, ", \"view\": \"%s\", \"holders\": [",
		hd_dom_get_view(a->d) == HD_DOM_RANKED ? "ranked" : "plain");
	for (size_t i = 0; i < m->num; i++) {
		const struct hd_holder *x = hd_dom_holder(a->d, i);
		fprintf(out, "%s\n{\"kind\": \"%s\", \"name\": ", i ? "," : "",
			holder_kind(x->kind));
		hd_json_string(out, m->names[i]);
		if (x->kind == HD_HOLDER_BLOCK) {
			fputs(", \"rank\": null", out);
		} else {
			fprintf(out, ", \"rank\": \"%s\"", hd_root_rank_name(x->rank));
		}
		if (x->kind == HD_HOLDER_JOINT) {
			fputs(", \"members\": [", out);
			for (size_t k = 0; k < x->num_roots; k++) {
				if (k)
					fputs(", ", out);
				hd_json_string(out, hd_graph_root(a->g, x->roots[k])->name);
			}
			fprintf(out, "], \"members_complete\": %s, \"blocks\": %zu",
				x->overflow ? "false" : "true", x->num_vertices);
		}
		if (x->kind == HD_HOLDER_BLOCK) {
			struct hd_block b;
			hd_heap_block(a->h, (size_t)hd_graph_vertex_block(a->g, x->vertices[0]), &b);
			fprintf(out, ", \"addr\": \"0x%" PRIx64 "\"", b.addr);
		}
		fprintf(out, ", \"retained\": %" PRIu64 ", \"retained_blocks\": %" PRIu64 "}",
			x->retained, x->retained_blocks);
	}
	fputs("], \"accumulation_points\": [", out);
	for (size_t i = 0; i < m->num_points; i++) {
		const struct hd_accum *p = &m->points[i];
		fprintf(out, "%s\n{\"holder\": ", i ? "," : "");
		hd_json_string(out, m->names[p->holder]);
		if (p->v) {
			struct hd_block b;
			char type[256];
			size_t id = (size_t)hd_graph_vertex_block(a->g, p->v);
			hd_heap_block(a->h, id, &b);
			fprintf(out, ", \"addr\": \"0x%" PRIx64 "\", \"type\": ", b.addr);
			if (hd_block_type(a, id, type, sizeof(type)))
				hd_json_string(out, type);
			else
				fputs("null", out);
		} else {
			fputs(", \"addr\": null, \"type\": null", out);
		}
		fprintf(out, ", \"depth\": %" PRIu64 ", \"retained\": %" PRIu64
			", \"retained_blocks\": %" PRIu64 ", \"children\": %zu"
			", \"largest_child_retained\": %" PRIu64 ", \"chain\": %s}",
			p->depth, p->retained, p->retained_blocks, p->children, p->largest,
			p->chain ? "true" : "false");
	}
	fprintf(out, "], \"named_bytes\": %" PRIu64, m->named_bytes);
}
