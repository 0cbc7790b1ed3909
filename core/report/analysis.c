// Helpers shared by the renderers of graph-based reports.
#include <stdlib.h>
#include <inttypes.h>
#include <stdio.h>

#include "report/report_internal.h"
#include "semantic/semantic_internal.h"
#include "session/session_internal.h"
#include "util/sort.h"

struct hd_error *hd_analysis_get(struct hd_session *s, struct hd_analysis *a)
{
	return hd_analysis_get_view(s, HD_DOM_RANKED, a);
}

struct hd_error *hd_analysis_get_view(struct hd_session *s,
				      enum hd_dom_view view,
				      struct hd_analysis *a)
{
	struct hd_error *err = hd_session_heap(s, &a->h);
	if (!err)
		err = hd_session_graph(s, &a->g);
	if (!err)
		err = hd_session_dom_view(s, view, &a->d);
	if (err)
		return err;
	a->t = hd_session_target(s);
	a->ty = hd_analysis_typing(s);
	a->fw = hd_analysis_names(s);
	a->sem = NULL; // hd_analysis_semantic, for the reports that need it
	a->used_bytes = a->used_blocks = 0;
	for (size_t i = 0; i < hd_heap_num_blocks(a->h); i++) {
		struct hd_block b;
		hd_heap_block(a->h, i, &b);
		if (b.state == HD_STATE_USED) {
			a->used_bytes += b.extent;
			a->used_blocks++;
		}
	}
	return NULL;
}

void hd_analysis_semantic(struct hd_session *s, struct hd_analysis *a)
{
	a->sem = NULL;
	if (!a->fw)
		return;
	struct hd_error *err = hd_session_subblock_semantic(s, &a->sem);
	if (err) // as for the names: the reports go on without
		hd_error_destroy(err);
}

struct hd_error *hd_analysis_reverse(const struct hd_analysis *a,
				     const struct hd_csr **rev)
{
	return hd_graph_reverse(a->g, rev);
}

void hd_idom_label(const struct hd_analysis *a, uint32_t idom, char *buf,
		   size_t len)
{
	int64_t r = hd_graph_vertex_root(a->g, idom);
	int64_t b = hd_graph_vertex_block(a->g, idom);
	if (idom == 0)
		snprintf(buf, len, "root:*");
	else if (r >= 0)
		snprintf(buf, len, "root:%s", hd_graph_root(a->g, (size_t)r)->name);
	else if (b >= 0) {
		struct hd_block blk;
		hd_heap_block(a->h, (size_t)b, &blk);
		snprintf(buf, len, "0x%" PRIx64, blk.addr);
	} else
		snprintf(buf, len, "-");
}

double hd_percent(const struct hd_analysis *a, uint64_t bytes)
{
	return a->used_bytes ? 100.0 * (double)bytes / (double)a->used_bytes : 0;
}

const struct hd_typing *hd_analysis_typing(struct hd_session *s)
{
	const struct hd_typing *ty = NULL;
	struct hd_error *err = hd_session_typing(s, &ty);
	if (err) {
		hd_error_destroy(err);
		return NULL;
	}
	return ty;
}

const struct hd_fw *hd_analysis_names(struct hd_session *s)
{
	if (!hd_analysis_typing(s))
		return NULL;
	const struct hd_fw *fw = NULL;
	struct hd_error *err = hd_session_framework_names(s, &fw);
	if (err) {
		hd_error_destroy(err);
		return NULL;
	}
	return fw;
}

bool hd_block_label(const struct hd_heap *h, const struct hd_typing *ty,
		    size_t id, char *buf, size_t len)
{
	if (ty)
		return hd_typing_block_name(ty, id, buf, len);
	struct hd_block b;
	hd_heap_block(h, id, &b);
	snprintf(buf, len, "unk<%" PRIu64 ">", b.usable);
	return false;
}

bool hd_block_type(const struct hd_analysis *a, size_t id, char *buf,
		   size_t len)
{
	const char *name = a->fw ? hd_fw_block_name(a->fw, id) : NULL;
	if (name) {
		snprintf(buf, len, "%s", name);
		return true;
	}
	return hd_block_label(a->h, a->ty, id, buf, len);
}

static const struct hd_dom *g_sort_dom;

static int by_retained(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	uint64_t ra = hd_dom_retained(g_sort_dom, a), rb = hd_dom_retained(g_sort_dom, b);
	if (ra != rb)
		return ra > rb ? -1 : 1;
	return a < b ? -1 : a > b;
}

void hd_sort_by_retained(const struct hd_dom *d, uint32_t *v, size_t n)
{
	g_sort_dom = d;
	hd_qsort(v, n, sizeof(*v), by_retained);
}
