// Shared by the renderers: JSON string escaping and the heap header.
#ifndef HD_REPORT_INTERNAL_H
#define HD_REPORT_INTERNAL_H

#include "heapdom.h"
#include "dom/dom.h"

void hd_json_string(FILE *out, const char *s);
// "target", "target_kind", "allocator", "partial", the limits and
// "problems" members (no braces).
void hd_json_heap_header(FILE *out, struct hd_target *t,
			 const struct hd_heap *h);
// Allocator a's object: {"name", "version", "method", "evidence", "facts",
// "regions", "lists", "totals"} (docs/json-format.md).
void hd_json_allocator(FILE *out, const struct hd_heap *h, size_t a);
// Allocator a in one line: "allocator: glibc 2.36, found via debuginfo;
// safe_linking, ...".
void hd_text_allocator(FILE *out, const struct hd_heap *h, size_t a);
// What the target and the heap walk could not see, as text lines on out:
// a truncated core ("partial: ..."), the target's warnings (missing or
// mismatched files), "no allocation yet", another allocator, then the
// heap's problems ("warning: ", yellow in colour) deduplicated and capped.
void hd_text_problems(FILE *out, struct hd_target *t, const struct hd_heap *h,
		      bool color);
// For JSON documents without the heap header (why, graph): when the target
// is a truncated core, `"partial": true, "truncated": {...}, ` (else
// nothing), to follow an opening brace.
void hd_json_truncation(FILE *out, struct hd_target *t);
// The target's part of hd_text_problems alone, for reports without a heap
// header (why, graph, trace, frameworks).
void hd_text_target_notes(FILE *out, struct hd_target *t, bool color);
// At most this many kinds of warnings are shown; the rest are counted.
#define HD_MAX_WARNING_KINDS 10
// Prints n warnings (get returns message i and its address, 0: none) one
// line per kind: messages that differ only in their numbers are one kind,
// shown once with "(and K more like it)"; past HD_MAX_WARNING_KINDS kinds
// only a count, which includes `dropped` (warnings not kept).
void hd_text_warnings(FILE *out, bool color, const char *indent, size_t n,
		      size_t dropped,
		      const char *(*get)(void *arg, size_t i, uint64_t *addr),
		      void *arg);
// An error naming the missing range if the target is a truncated core and
// the user did not ask for a partial answer (--partial).
struct hd_error *hd_check_complete(struct hd_target *t, bool partial);
// A failure on a truncated core (--partial) says what the core lacks: what
// was not found may lie in the missing memory.
struct hd_error *hd_error_in_truncated(struct hd_target *t,
				       struct hd_error *err);
// A section title, bold in colour, followed by a newline.
void hd_heading(FILE *out, bool color, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));



struct hd_semantic;

// The graph and dominators of a session, with the heap they stand on.
struct hd_analysis {
	struct hd_target *t;
	const struct hd_heap *h;
	const struct hd_typing *ty; // NULL when typing is off
	// The default framework modules, for their names of blocks; NULL
	// when typing is off or they failed: the names come before the DWARF
	// types, so every report names a block as `dominators --semantic`.
	const struct hd_fw *fw;
	// The default modules' semantic tree when they found sub-allocator
	// blocks the program uses (pymalloc's objects), else NULL: those
	// blocks are vertices of it alone (types, why). Its fw is fw. Set by
	// hd_analysis_semantic only: the other reports do without it.
	const struct hd_semantic *sem;
	const struct hd_graph *g;
	const struct hd_dom *d;
	uint64_t used_bytes;  // chunk bytes of used blocks
	uint64_t used_blocks;
};
struct hd_error *hd_analysis_get(struct hd_session *s, struct hd_analysis *a);
// Sets a->sem (made on first use; NULL when there is none or it failed).
void hd_analysis_semantic(struct hd_session *s, struct hd_analysis *a);
// The graph's predecessors (built on first use: only the reports that
// follow references backwards pay for them).
struct hd_error *hd_analysis_reverse(const struct hd_analysis *a,
				     const struct hd_csr **rev);
// The same with the dominator tree of a given view.
struct hd_error *hd_analysis_get_view(struct hd_session *s,
				      enum hd_dom_view view,
				      struct hd_analysis *a);

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
// The session's default framework modules after analyze, for their block
// names (hd_fw_block_name); NULL when --untyped or they failed.
const struct hd_fw *hd_analysis_names(struct hd_session *s);
// Sorts vertices by retained size, largest first (ties by vertex).
void hd_sort_by_retained(const struct hd_dom *d, uint32_t *v, size_t n);
// Percentage of the used heap.
double hd_percent(const struct hd_analysis *a, uint64_t bytes);
// Chains of references (why.c), shared with the snapshot's root paths.
// Where step i of a chain refers to step i + 1: the word's offset and
// value, or the register of a registers root (reg >= 0).
struct hd_chain_ref {
	bool ok;
	int reg;
	uint64_t off, val;
};
// The shortest chain from a named root to v (to_root), or for a leaked
// block from a block nothing points at; *path is malloc'd.
struct hd_error *hd_shortest_chain(const struct hd_analysis *a, uint32_t v,
				   bool to_root, uint32_t **path, size_t *len);
// The references between consecutive steps of path (none between two
// steps that do not point at each other); *ret is malloc'd.
struct hd_error *hd_chain_refs(const struct hd_analysis *a,
			       const uint32_t *path, size_t len,
			       struct hd_chain_ref **ret);
// The chain on one line: "ROOT.member SEP TYPE.member SEP TYPE". stable:
// what survives a restart only (thread positions instead of thread ids,
// untyped blocks as "unk<SIZE>" without their text).
void hd_chain_line(FILE *out, const struct hd_analysis *a, const uint32_t *path,
		   size_t len, const struct hd_chain_ref *refs, const char *sep,
		   bool stable);

// The roots that reach a vertex, by class (hd_root_rank): one search
// backwards over rev (hd_csr_search), roots of the classes in exclude
// (bit per rank) ignored as if absent but counted. rank(arg, root) is a
// root vertex's class.
typedef unsigned (*hd_root_rank_fn)(const void *arg, uint32_t root);
struct hd_why_roots {
	struct hd_csr_search search;
	size_t roots[HD_ROOT_RANKS];    // roots of each class that reach it
	size_t excluded[HD_ROOT_RANKS]; // excluded roots that reach it
	size_t best[HD_ROOT_RANKS];     // in search.found: the class's nearest
					// root (ties: root order), or SIZE_MAX
	int first; // the strongest class reaching it, -1 if none
};
struct hd_error *hd_why_roots_find(const struct hd_csr *rev, uint32_t v,
				   hd_root_rank_fn rank, const void *arg,
				   unsigned exclude, struct hd_why_roots *ret);
// The shortest chain from class r's nearest root (w->roots[r] > 0).
struct hd_error *hd_why_roots_path(const struct hd_why_roots *w, unsigned r,
				   uint32_t **path, size_t *len);
void hd_why_roots_deinit(struct hd_why_roots *w);
// "registers (1 root), stack (2 roots)" for the classes counted.
void hd_why_class_counts(FILE *out, const size_t counts[HD_ROOT_RANKS]);
// Indentation of step i of a why chain in text: deeper steps of a long
// chain (a million-node list) are not indented further, or the text would
// grow with the square of the chain.
#define HD_WHY_INDENT(i) ((int)((i) < 32 ? 2 * (i) : 64))
// "ignored (--exclude): registers (1 root)" when excluded roots reach it.
void hd_why_text_ignored(FILE *out, const size_t excluded[HD_ROOT_RANKS]);
// JSON members "exclude" (the class names in the mask), "excluded_roots"
// (per class) and "class" (the strongest class reaching it, or null).
void hd_why_json_classes(FILE *out, unsigned exclude,
			 const struct hd_why_roots *w);

// The name of register k of a thread's registers ("rax").
const char *hd_reg_name(int k);
// why with a->sem (the default modules found sub-allocator blocks): the
// chain to a used sub-block (sub >= 0) or used heap block heap_id through
// the semantic graph (why_semantic.c).
struct hd_error *hd_render_why_semantic(FILE *out, struct hd_session *ses,
					const struct hd_analysis *a,
					int64_t heap_id, int64_t sub,
					const struct hd_render_options *o);
// The answer for an address in a free or internal sub-allocator block
// (an error saying so), NULL for any other address.
struct hd_error *hd_why_not_subblock(const struct hd_analysis *a,
				     uint64_t addr);
// For an address in no heap block: an error naming the framework region
// it lies in (the module found no block there), NULL when in none.
struct hd_error *hd_why_in_region(const struct hd_analysis *a, uint64_t addr);

// Power-of-two size classes of used blocks (stats.c): class k holds usable
// sizes in (2^(k-1), 2^k], class 0 holds 0 and 1.
#define HD_SIZE_CLASSES 48
unsigned hd_size_class(uint64_t usable);

// One row of the type histogram (types.c): a type ("T[]" for arrays of
// any length), or for untyped blocks (name NULL) one usable size.
struct hd_type_row {
	char *name;
	uint64_t usable;
	uint64_t count, bytes, retained;
	// Of count and bytes: the instances that are sub-allocator blocks.
	uint64_t sub_count, sub_bytes;
	int32_t active; // instances on the current dominator-tree path
};
// Every row with at least one used block, in no particular order; free
// with hd_type_rows_free. With a->sem, the sub-allocator blocks the
// program uses are instances too, and retained comes from a->sem's tree.
struct hd_error *hd_type_rows(const struct hd_analysis *a,
			      struct hd_type_row **rows, size_t *n);
void hd_type_rows_free(struct hd_type_row *rows, size_t n);
#endif
