// Shared by the renderers: JSON string escaping and the heap header.
#ifndef HD_REPORT_INTERNAL_H
#define HD_REPORT_INTERNAL_H

#include "heapdom.h"

void hd_json_string(FILE *out, const char *s);
// "target", "method", "partial", "problems", "arenas" members (no braces).
void hd_json_heap_header(FILE *out, struct hd_target *t,
			 const struct hd_heap *h);
// Problems as text lines on out, prefixed "warning: " (yellow in colour).
void hd_text_problems(FILE *out, const struct hd_heap *h, bool color);
// A section title, bold in colour, followed by a newline.
void hd_heading(FILE *out, bool color, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));



// The graph and dominators of a session, with the heap they stand on.
struct hd_analysis {
	struct hd_target *t;
	const struct hd_heap *h;
	const struct hd_typing *ty; // NULL when typing is off
	const struct hd_graph *g;
	const struct hd_dom *d;
	uint64_t used_bytes;  // chunk bytes of used blocks
	uint64_t used_blocks;
};
struct hd_error *hd_analysis_get(struct hd_session *s, struct hd_analysis *a);

// "root:NAME", "root:*" or "0x<addr>" for the dominator of v.
void hd_idom_label(const struct hd_analysis *a, uint32_t idom, char *buf,
		   size_t len);
// A heap block's type or label with typing ty (may be NULL): "struct
// entry", `char[] "…"`, "unk<48>"; returns whether it is a type.
bool hd_block_label(const struct hd_heap *h, const struct hd_typing *ty,
		    size_t id, char *buf, size_t len);
// The block's type or label ("struct entry", `char[] "…"`, "unk<48>");
// returns whether it is a type (JSON prints null otherwise).
bool hd_block_type(const struct hd_analysis *a, size_t id, char *buf,
		   size_t len);
// Typing of a session, NULL when --untyped (or no typing could be done).
const struct hd_typing *hd_analysis_typing(struct hd_session *s);
// Percentage of the used heap.
double hd_percent(const struct hd_analysis *a, uint64_t bytes);
#endif
