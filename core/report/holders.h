// The "who holds the heap" model of the dominators report (holders.c).
#ifndef HD_REPORT_HOLDERS_H
#define HD_REPORT_HOLDERS_H

#include <stdio.h>

#include "report/report_internal.h"

// Where memory piles up below a large holder: the block (v, 0 for the
// holder itself) where no single child holds most of it any more, or the
// first block of a long chain.
struct hd_accum {
	size_t holder;            // index of the holder
	uint32_t v;               // vertex, 0 for the holder itself
	uint64_t depth;           // levels below the holder
	uint64_t retained, retained_blocks;
	size_t children;
	uint64_t largest;         // retained by the largest child
	bool chain;               // v starts a chain (a linked list)
};

// Accumulation points shown at most: one below each of the largest holders.
#define HD_ACCUM_MAX 3

struct hd_joint_entry {
	uint32_t v;
	size_t holder;
};

struct hd_holders_model {
	char **names;  // per holder, as hd_dom_holder orders them
	size_t num;
	uint64_t named_bytes; // under root and joint holders
	struct hd_joint_entry *joint; // joint blocks by vertex
	size_t num_joint;
	struct hd_accum points[HD_ACCUM_MAX];
	size_t num_points;
};

struct hd_error *hd_holders_model_init(struct hd_holders_model *m,
				       const struct hd_analysis *a);
void hd_holders_model_deinit(struct hd_holders_model *m);
// The name of the joint holder of block vertex v, or NULL.
const char *hd_holders_joint_name(const struct hd_holders_model *m, uint32_t v);
// One line saying which ownership view the report shows.
void hd_holders_view_text(FILE *out, const struct hd_analysis *a);
void hd_holders_text(FILE *out, const struct hd_analysis *a,
		     const struct hd_holders_model *m, size_t top, bool color);
// `, "view": …, "holders": […], "accumulation_points": […]`.
void hd_holders_json(FILE *out, const struct hd_analysis *a,
		     const struct hd_holders_model *m);

#endif
