// Framework modules and the semantic graph: internals shared by the files
// of core/semantic/.
#ifndef HD_SEMANTIC_INTERNAL_H
#define HD_SEMANTIC_INTERNAL_H

#include "graph/graph_internal.h"
#include "graph/suballoc.h"
#include "heapdom.h"
#include "heapdom_framework.h"
#include "dom/dom.h"
#include "types/typing.h"

// A semantic node as a module created it.
struct hd_snode {
	char *label;
	char *kind;
	uint32_t parent;   // node id or HD_FW_NO_NODE
	uint32_t holder;   // vertex or HD_DOM_NONE
	uint16_t module;
	uint8_t owner;     // enum hd_fw_owner
};

// One loaded module and what it did in this analysis.
struct hd_fw_module {
	const struct hd_framework *ops;
	char *source;      // "built-in" or the shared object's path
	void *dl;          // dlopen handle, or NULL
	bool detected;
	char *error;       // why it was disabled, or NULL
	char **notes;
	size_t num_notes, cap_notes;
	struct hd_fw_warning {
		uint64_t address; // 0: none
		char *message;
	} *warnings;
	size_t num_warnings, cap_warnings, dropped_warnings;
	size_t subblocks, regions, nodes, assigned;
	void *priv;
};

#define HD_FW_SHARED (UINT32_MAX - 1) // assigned by nodes with no common one
#define HD_FW_MAX_NODES (1u << 30)
#define HD_FW_UNMARKED UINT64_MAX      // fw_bytes: no mark
#define HD_FW_ALL (UINT64_MAX - 1)     // fw_bytes: the whole block

// What a module's analyze changed, to undo it if the module fails: a bit
// per vertex and per array for the values it set (undone by setting the
// array's empty value back), and the old value when it was not empty (a
// value an earlier module set), once per vertex. A module that names a
// million blocks costs a bit each, not a record each.
struct hd_fw_undo {
	uint8_t what; // HD_UNDO_*
	uint32_t v;
	uint64_t old;
};
enum { HD_UNDO_ASSIGN, HD_UNDO_MARK, HD_UNDO_NAME, HD_UNDO_TYPE };

// The context given to call-backs: everything the analysis has, and what
// the modules add to it.
struct hd_fw {
	struct hd_target *t;
	struct hd_debuginfo *di;
	const struct hd_heap *h;
	const struct hd_typing *ty;   // NULL when untyped
	const struct hd_graph *g;     // NULL until analyze
	struct hd_suballoc sa;
	// Interned strings: sub-block types, region labels, block names.
	char **labels;
	size_t num_labels, cap_labels;
	void *label_hash;
	struct hd_fw_module *mods;
	size_t num_mods, cap_mods;
	uint16_t cur;                 // module whose call-back is running
	enum { HD_FW_DETECT, HD_FW_BLOCKS, HD_FW_ANALYZE, HD_FW_DONE } phase;
	// Semantic nodes and assignments (analyze).
	struct hd_snode *nodes;
	size_t num_nodes, cap_nodes;
	uint32_t *assigned;      // per vertex: node id or HD_FW_NO_NODE (lazy)
	uint64_t *fw_bytes;      // per vertex: framework bytes, UINT64_MAX-1:
				 // unmarked (lazy)
	// names and dwarf hold their value + 1, 0 for none, in zeroed memory:
	// pages of blocks no module named never become resident (the
	// allocator's module names a few blocks of millions). Read them with
	// hd_fw_name_of and hd_fw_dwarf_of.
	uint32_t *names;         // per vertex: label index (lazy)
	uint32_t *dwarf;         // per vertex: index in dwarf_keys of the
				 // DWARF type hd_fw_type gave (lazy)
	// module << 32 | type id of the few DWARF types given (nodes of a
	// million blocks share one), and their index by key.
	uint64_t *dwarf_keys;
	size_t num_dwarf_keys, cap_dwarf_keys;
	uint32_t *dwarf_key_hash; // index + 1, 0 empty; 2 * cap_dwarf_keys
	size_t names_bytes, dwarf_bytes; // their mappings' lengths
	struct hd_fw_undo *undo; // of the module running analyze
	size_t num_undo, cap_undo;
	uint64_t *touched[4];    // per HD_UNDO_*: vertices it set (lazy)
	// hd_fw_names_only: nodes are only counted (light_nodes of them),
	// assignments and marks dropped.
	bool names_only;
	uint32_t light_nodes;
	// Blocks assigned to a second node: resolved after analyze.
	struct hd_fw_conflict {
		uint32_t v, node, resolved;
	} *conflicts;
	size_t num_conflicts, cap_conflicts;
	uint32_t *marks, stamp; // scratch of common_node
	struct hd_fw_cache *cache; // of target memory (fw.c)
	// The address index hd_fw_vertex_at builds once it is asked often
	// (fw.c): a binary search over millions of blocks per container node
	// is a cache miss per step.
	struct hd_index ix;
	bool have_ix;
	uint32_t finds;
	// Memos of hd_fw_objects_in and of type look-ups by name (objects.c).
	struct hd_fw_objects *objects_in; // OBJECTS_MEMOS of them (objects.c)
	size_t objects_next;
	struct hd_fw_type_memo *type_memo;
	// Roots sorted by start address, for hd_fw_vertex_at (lazy).
	uint32_t *root_order;
	size_t num_root_order;
	// The analysis graph, for a module that may wait (set before
	// analyze: hd_fw_set_claim_graph), and that module's state while it
	// waits (defer.c), or NULL.
	const struct hd_graph *claim_g;
	struct hd_fw_defer *defer;
	// What the module that waited did, for --profile (defer.c).
	struct hd_fw_defer_stats {
		const char *module;       // NULL: none waited
		bool ran, for_all;        // for_all: a report naming every block
		uint64_t trigger;         // else the block that made it run
		uint64_t asked, searched; // blocks asked about, gone back through
		uint64_t alone;           // named from one container alone
		double alone_seconds;     // trying to, in all
	} defer_stats;
};

// Tells fw the analysis graph (whose edges are every reference of the
// heap), so that a module of hd_fw_deferral may wait when only names are
// kept. g must outlive fw.
void hd_fw_set_claim_graph(struct hd_fw *fw, const struct hd_graph *g);
// Makes sure the names of block id (hd_fw_block_name, _label, _member,
// hd_fw_vertex_name) are complete: runs a waiting module if the block may
// be one of its. hd_fw_need_all runs it whatever the block (the callers
// of hd_fw_name_of and hd_fw_dwarf_of over many vertices).
void hd_fw_need_block(const struct hd_fw *fw, size_t id);
void hd_fw_need_all(const struct hd_fw *fw);
// defer.c: the waiting state of module (fw->defer), and its end.
struct hd_fw_deferral; // fw_fast.h
struct hd_error *hd_fw_defer_create(struct hd_fw *fw, size_t module,
				    const struct hd_fw_deferral *spec,
				    const struct hd_graph *g);
void hd_fw_defer_destroy(struct hd_fw *fw);
// One line on what a module that waited did, into buf; false if none did.
bool hd_fw_defer_describe(const struct hd_fw *fw, char *buf, size_t len);
// registry.c: runs the waiting module's analyze now (its failure, as in
// hd_fw_analyze, disables it).
void hd_fw_run_deferred(struct hd_fw *fw, size_t module);

// What holds objects of some prefixes (objects.c): the global variables
// and the typed heap blocks hd_fw_objects would look into for them.
struct hd_fw_holders;
struct hd_error *hd_fw_holders_create(struct hd_fw *fw,
				      const char *const *prefixes, size_t n,
				      struct hd_fw_holders **ret);
// Whether heap block id's DWARF type holds one.
struct hd_error *hd_fw_holders_block(struct hd_fw_holders *hs, size_t id,
				     bool *ret);
// Whether [start, end) overlaps a global variable holding one.
bool hd_fw_holders_range(const struct hd_fw_holders *hs, uint64_t start,
			 uint64_t end);
// Whether one of them is at an address not a multiple of 8 (no edge of
// the graph holds its pointers).
bool hd_fw_holders_unaligned(const struct hd_fw_holders *hs);
// Whether any global or typed block holds one.
bool hd_fw_holders_any(const struct hd_fw_holders *hs);
// Global range i [start, end); false past the last.
bool hd_fw_holders_global(const struct hd_fw_holders *hs, size_t i,
			  uint64_t *start, uint64_t *end);
void hd_fw_holders_destroy(struct hd_fw_holders *hs);

// The label index a module named vertex v with, or UINT32_MAX.
static inline uint32_t hd_fw_name_of(const struct hd_fw *fw, uint32_t v)
{
	return fw->names && fw->names[v] ? fw->names[v] - 1 : UINT32_MAX;
}

// module << 32 | type id of the DWARF type a module gave vertex v, or
// UINT64_MAX.
static inline uint64_t hd_fw_dwarf_of(const struct hd_fw *fw, uint32_t v)
{
	return fw->dwarf && fw->dwarf[v] ? fw->dwarf_keys[fw->dwarf[v] - 1] : UINT64_MAX;
}

// What the frameworks call vertex v of fw's graph, into buf: 1 when a
// module named it or it is a sub-allocator block of a known type; 0 for an
// unnamed sub-allocator block (buf says "unk<SIZE>"); -1, buf untouched,
// for a heap block no module named (its DWARF type is the caller's to ask).
int hd_fw_vertex_name(const struct hd_fw *fw, uint32_t v, char *buf, size_t len);
// Unmaps what fw.c mapped zeroed (names, dwarf) for bytes.
void hd_fw_zeroed_free(void *p, size_t bytes);
// Frees the cache of target memory hd_fw_read keeps.
void hd_fw_cache_destroy(struct hd_fw_cache *c);
// hd_fw_find_type through fw's memo of recently asked names.
bool hd_fw_find_type_memo(struct hd_fw *fw, const char *name, size_t *mi,
			  uint32_t *type);
// Frees the memos of hd_fw_objects_in and of types by name (objects.c).
void hd_fw_objects_free(struct hd_fw *fw);
// Frees the address index of hd_fw_vertex_at, if built.
void hd_fw_index_free(struct hd_fw *fw);
// Interned strings of fw->labels; UINT32_MAX when out of memory.
uint32_t hd_fw_intern(struct hd_fw *fw, const char *name);
// Frees the labels and the DWARF type keys (dwarf_keys).
void hd_fw_labels_free(struct hd_fw *fw);
// Reverts the assignments, marks and names of the running module.
void hd_fw_undo_module(struct hd_fw *fw);
// Makes fw keep only block names (hd_fw_names_only): before analyze, for a
// caller that reads nothing else of it.
void hd_fw_set_names_only(struct hd_fw *fw);
// Forgets what the module that ran changed: the next one starts a journal.
void hd_fw_journal_reset(struct hd_fw *fw);
// Blocks assigned to several nodes go to their nearest common ancestor
// (through parents and holders' nodes), or to none.
struct hd_error *hd_fw_resolve_shared(struct hd_fw *fw);

// Loads the modules (names of built-ins, paths of shared objects; none:
// the built-ins and HEAPDOM_FRAMEWORK_PATH) and runs detect and blocks.
struct hd_error *hd_fw_create(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap *h,
			      const struct hd_typing *ty,
			      const char *const *names, size_t n,
			      struct hd_fw **ret);
// Runs the detected modules' analyze over the graph built with fw->sa,
// then settles the shared blocks.
struct hd_error *hd_fw_analyze(struct hd_fw *fw, const struct hd_graph *g);
// Whether a detected module may read the graph's edges in analyze: one
// loaded from a shared object may (the built-in ones number vertices and
// never follow an edge). Without, the modules' graph needs its vertices
// only.
bool hd_fw_reads_edges(const struct hd_fw *fw);
void hd_fw_destroy(struct hd_fw *fw);

// The semantic graph's dominator tree: the graph's vertices, then one per
// semantic node (vertex nv + node id).
struct hd_semantic {
	struct hd_fw *fw;       // owned
	struct hd_graph *g;     // owned: the graph with sub-allocator blocks
	uint32_t nv, n;
	struct hd_csr fwd, rev; // owned; rev built on demand (hd_semantic_reverse)
	struct hd_domtree tree;
	// Retained sizes per vertex (own sizes: hd_semantic_own).
	uint64_t *r_alloc, *r_used, *r_fwb;
	uint32_t *r_count;
	uint32_t *child_off, *children; // dominator tree, largest first
	// Per node: its assigned blocks' own sizes.
	uint64_t *obj_alloc, *obj_used;
	uint32_t *obj_count;
	uint64_t unreachable_alloc; // used blocks no root or node reaches
	uint32_t unreachable_blocks;
};

// What vertex v of the semantic graph is: the super-root, a root, a heap
// block, a sub-allocator block (after the heap's blocks) or a framework
// node (after the graph's vertices).
enum hd_svertex { HD_SV_SUPER, HD_SV_ROOT, HD_SV_BLOCK, HD_SV_SUB, HD_SV_NODE };
static inline enum hd_svertex hd_semantic_vertex_kind(const struct hd_semantic *s,
						      uint32_t v)
{
	if (v == 0)
		return HD_SV_SUPER;
	if (v < 1 + s->g->num_roots)
		return HD_SV_ROOT;
	if (v < s->nv - s->g->num_sub)
		return HD_SV_BLOCK;
	return v < s->nv ? HD_SV_SUB : HD_SV_NODE;
}

// Builds the semantic graph (suspending assigned blocks' incoming edges,
// adding node edges) and its dominator tree. Takes ownership of fw and g
// on success; on failure they stay the caller's (g may have lost its
// edges).
struct hd_error *hd_semantic_compute(struct hd_fw *fw, struct hd_graph *g,
				     struct hd_semantic **ret);
// The error hd_semantic_compute gives at once for a graph too large for
// it, or NULL.
struct hd_error *hd_semantic_check(const struct hd_fw *fw,
				   const struct hd_graph *g);
void hd_semantic_destroy(struct hd_semantic *s);
// The predecessors of the semantic graph, built the first time they are
// asked for (only why follows references backwards) and kept with s.
struct hd_error *hd_semantic_reverse(const struct hd_semantic *s,
				     const struct hd_csr **ret);
// After analyze: the modules' name for heap block id (hd_fw_name: "dict",
// "std::_Rb_tree_node<…>", "double[12]"), or NULL when none named it; the
// index of that name in fw->labels, or UINT32_MAX.
const char *hd_fw_block_name(const struct hd_fw *fw, size_t id);
uint32_t hd_fw_block_label(const struct hd_fw *fw, size_t id);
// The member path at offset of heap block id in the DWARF type a module
// gave it (hd_fw_type); false when none did.
bool hd_fw_block_member(const struct hd_fw *fw, size_t id, uint64_t offset,
			char *buf, size_t len);
// The typing module and stripped type of the complete struct, class or
// union named name (objects.c).
bool hd_fw_find_type(const struct hd_fw *fw, const char *name, size_t *mi,
		     uint32_t *type);
// A vertex's own allocated, used and framework bytes.
void hd_semantic_own(const struct hd_semantic *s, uint32_t v, uint64_t *alloc,
		     uint64_t *used, uint64_t *fwb);

#endif
