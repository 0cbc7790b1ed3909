// heapdom framework modules — how a framework's memory is organised.
//
// A framework module tells heapdom what a framework (an allocator, a
// container library, an interpreter, a UI toolkit) does with its memory,
// so the dominator tree can be shown as a semantic tree: "this window holds
// 40 MiB, 3 MiB of it the framework's bookkeeping". See docs/frameworks.md
// for the model and docs/framework-tutorial.md for a module written step
// by step.
//
// A module is a struct hd_framework: built into libheapdom, or exported by
// a shared object as
//
//     const struct hd_framework *heapdom_framework_init(void);
//
// and loaded with --framework PATH or from HEAPDOM_FRAMEWORK_PATH. Its
// call-backs run in three phases, each optional except detect:
//
//   detect   does this target use the framework?
//   blocks   contribute the blocks of a sub-allocator (pools, arenas) that
//            lives inside malloc'd blocks or in mappings of its own;
//            runs before the object graph is built, so those blocks are
//            vertices of it and are scanned for pointers.
//   analyze  name blocks, create semantic nodes, assign blocks to them,
//            mark blocks as framework or application memory.
//
// Rules a module keeps: read target memory only through hd_fw_read() (a
// corrupted process must give an error, not a crash); bound every walk of
// a linked structure; when memory is not what the module expects (another
// version of the framework), call hd_fw_warn() and leave those blocks
// unassigned. An error returned by a call-back disables the module for this
// analysis — everything it did is undone — and is reported, not fatal.
#ifndef HEAPDOM_FRAMEWORK_H
#define HEAPDOM_FRAMEWORK_H

#include "heapdom.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bumped when struct hd_framework or a call below changes incompatibly; a
// module built against another version is refused with a clear message.
#define HD_FRAMEWORK_ABI 1
#define HD_FRAMEWORK_ENTRY "heapdom_framework_init"

// The analysis a call-back works on (one per module per analysis).
struct hd_fw;

struct hd_framework {
	uint32_t abi;            // HD_FRAMEWORK_ABI
	const char *name;        // short, unique: "cpython", "libstdc++"
	const char *version;     // the module's own version: "1.0"
	const char *description; // one line for `heapdom frameworks`
	// Sets *detected. May explain either way with hd_fw_note() ("libpython
	// 3.11 mapped", "no libstdc++ in the modules").
	struct hd_error *(*detect)(struct hd_fw *fw, bool *detected);
	// Optional: hd_fw_add_region() / hd_fw_add_block().
	struct hd_error *(*blocks)(struct hd_fw *fw);
	// Optional: hd_fw_node(), hd_fw_assign(), hd_fw_mark(), hd_fw_name().
	struct hd_error *(*analyze)(struct hd_fw *fw);
};

// ------------------------------------------------------------ the analysis

HD_EXPORT struct hd_target *hd_fw_target(struct hd_fw *fw);
HD_EXPORT struct hd_debuginfo *hd_fw_debuginfo(struct hd_fw *fw);
HD_EXPORT const struct hd_heap *hd_fw_heap(struct hd_fw *fw);
// The object graph (analyze only; NULL before). Its vertices are the
// super-root 0, the roots, the heap's blocks, then the sub-allocator blocks
// (hd_fw_vertex_subblock).
HD_EXPORT const struct hd_graph *hd_fw_graph(struct hd_fw *fw);
// DWARF typing of heap blocks, NULL when the analysis is untyped.
HD_EXPORT const struct hd_typing *hd_fw_typing(struct hd_fw *fw);
// Reads target memory; HD_ERROR_FAULT when any byte is missing.
HD_EXPORT struct hd_error *hd_fw_read(struct hd_fw *fw, uint64_t addr,
				      void *buf, size_t len);
HD_EXPORT struct hd_error *hd_fw_read_u64(struct hd_fw *fw, uint64_t addr,
					  uint64_t *ret);
// Reads a NUL-terminated string of at most len - 1 bytes into buf.
HD_EXPORT struct hd_error *hd_fw_read_string(struct hd_fw *fw, uint64_t addr,
					     char *buf, size_t len);
// A symbol's run-time address (hd_debuginfo_find_symbol); module_hint as
// there ("libpython3", NULL: any module, the executable first). Mind copy
// relocations: a library variable the executable refers to lives in the
// executable, and the library's own copy is unused — look variables up with
// a NULL hint, and use the hint for functions (to know the library is
// loaded).
HD_EXPORT struct hd_error *hd_fw_symbol(struct hd_fw *fw,
					const char *module_hint,
					const char *name, uint64_t *addr,
					uint64_t *size);
// A line for `heapdom frameworks` about what detect saw.
HD_EXPORT void hd_fw_note(struct hd_fw *fw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
// Memory the module does not understand: shown with the semantic tree and
// in `heapdom frameworks` (the first 100 per module; the rest counted).
HD_EXPORT void hd_fw_warn(struct hd_fw *fw, uint64_t addr, const char *fmt,
			  ...)
	__attribute__((format(printf, 3, 4)));
// The module's own data for this analysis, kept from detect to analyze;
// released with free() at the end of the analysis unless NULL.
HD_EXPORT void **hd_fw_private(struct hd_fw *fw);

// -------------------------------------------------------- sub-allocators

// Memory of a sub-allocator outside malloc (an mmap'd arena): it is no
// longer a root, and the bytes of it no block covers count as the
// allocator's overhead of the group named label ("pymalloc arenas").
HD_EXPORT struct hd_error *hd_fw_add_region(struct hd_fw *fw, uint64_t start,
					    uint64_t end, const char *label);
// A block of a sub-allocator: [addr, addr + size) must lie inside one used
// heap block (a pool malloc'd by the framework) or inside a region of this
// module, and overlap no other block. type names it ("dict", "Widget"), or
// NULL. state: HD_STATE_USED for a live object (scanned for pointers, and
// pointers into it lead to it rather than to the malloc'd block around it),
// HD_STATE_FREE for a free slot (a pointer into it holds nothing),
// HD_STATE_INTERNAL for the sub-allocator's own headers. An internal block
// inside a malloc'd block stays part of it — its bytes, its references, and
// pointers into it lead to it — and is a vertex of size 0; one in a region
// is a vertex of its own (reachable once assigned to a node). A block that
// breaks these rules is refused with a warning.
HD_EXPORT struct hd_error *hd_fw_add_block(struct hd_fw *fw, uint64_t addr,
					   uint64_t size,
					   enum hd_block_state state,
					   const char *type);

// ------------------------------------------------------ finding vertices

// The vertex of the block (heap block or sub-allocator block) containing
// addr, or of the root whose memory contains it (a global); HD_DOM_NONE if
// none. An address in an internal sub-allocator block inside a malloc'd
// block gives the malloc'd block. analyze only.
HD_EXPORT uint32_t hd_fw_vertex_at(struct hd_fw *fw, uint64_t addr);
// Sub-allocator block i's vertex, and back (-1 if v is not one).
HD_EXPORT uint32_t hd_fw_subblock_vertex(struct hd_fw *fw, size_t i);
HD_EXPORT int64_t hd_fw_vertex_subblock(struct hd_fw *fw, uint32_t v);
// The sub-allocator blocks the analysis kept (refused ones are gone),
// sorted by address; analyze only.
struct hd_fw_subblock {
	uint64_t addr, size;
	enum hd_block_state state;
	const char *type;   // as given to hd_fw_add_block, or NULL
	bool mine;          // added by the module that asks
	uint32_t vertex;
};
HD_EXPORT size_t hd_fw_num_subblocks(struct hd_fw *fw);
HD_EXPORT bool hd_fw_subblock(struct hd_fw *fw, size_t i,
			      struct hd_fw_subblock *ret);
// A vertex as a block: address, size and state (false for the super-root
// and roots). A sub-allocator block has extent == usable == its size.
HD_EXPORT bool hd_fw_vertex_block(struct hd_fw *fw, uint32_t v,
				  struct hd_block *ret);

// Typed objects: calls fn for every object of static or heap storage whose
// DWARF type's qualified name starts with one of prefixes (n of them) —
// typed heap blocks (each array element), global variables, and such
// objects nested in them as members, base classes or array elements (not
// inside a match). Stops at and returns the first error fn returns.
struct hd_fw_object {
	uint64_t addr;
	uint64_t size;
	const char *type;   // qualified: "std::map<int, Session, …>"
	uint32_t holder;    // vertex holding it: its block, or its global's root
	const char *where;  // how a person finds it: "g_sessions",
			    // "struct registry.by_name"
};
typedef struct hd_error *(*hd_fw_object_fn)(struct hd_fw *fw,
					    const struct hd_fw_object *o,
					    void *arg);
HD_EXPORT struct hd_error *hd_fw_objects(struct hd_fw *fw,
					 const char *const *prefixes, size_t n,
					 hd_fw_object_fn fn, void *arg);
// The same inside one object: the objects matching prefixes in the object
// of the type named type (qualified, as hd_fw_object.type spells it:
// "std::pair<int const, Session>") at addr, the object itself included
// when its type matches — e.g. the containers inside a container's element,
// whose block DWARF does not type. Every object gets holder as given
// (HD_DOM_NONE: the vertex at its address) and where prefixed to its
// member path ("g_sessions[2]" gives "g_sessions[2].second.name").
// HD_ERROR_NOT_FOUND when no module's DWARF has a complete struct, class
// or union of that name.
HD_EXPORT struct hd_error *hd_fw_objects_in(struct hd_fw *fw, const char *type,
					    uint64_t addr, uint32_t holder,
					    const char *where,
					    const char *const *prefixes,
					    size_t n, hd_fw_object_fn fn,
					    void *arg);
// sizeof the complete struct, class or union named type (as above), e.g.
// a container's element type; HD_ERROR_NOT_FOUND when DWARF has none.
HD_EXPORT struct hd_error *hd_fw_type_size(struct hd_fw *fw, const char *type,
					   uint64_t *size);

// ------------------------------------------------------- semantic nodes

enum hd_fw_owner {
	HD_OWNER_APPLICATION = 0, // the default for every block
	HD_OWNER_FRAMEWORK = 1,
};

#define HD_FW_NO_NODE UINT32_MAX

// True when this analysis keeps only what names blocks (hd_fw_name,
// hd_fw_type, sub-allocator blocks): the reports that asked for it show no
// semantic tree, so nodes are numbered and dropped, and assignments and
// marks are checked and dropped. A module may then skip building labels.
HD_EXPORT bool hd_fw_names_only(struct hd_fw *fw);

// Creates a semantic node: label as a user reads it ("window 'main'"),
// kind a short word for its role ("window", "container", "allocator").
// The node hangs under parent (a node of this module), or, when parent is
// HD_FW_NO_NODE, under holder (the vertex whose object contains the thing
// the node stands for — e.g. the block holding a std::map), or, when
// holder is HD_DOM_NONE too, directly under the super-root. owner says
// whose the node's assigned blocks are unless marked otherwise.
HD_EXPORT struct hd_error *hd_fw_node(struct hd_fw *fw, uint32_t parent,
				      uint32_t holder, const char *label,
				      const char *kind, enum hd_fw_owner owner,
				      uint32_t *node);
// Assigns block vertex v to node: every incoming edge of v is suspended
// and v hangs directly under node, so node keeps it alive. A block
// assigned to two nodes rises to their nearest common ancestor node, or
// stays unassigned (its edges kept) when they have none. Blocks only: not
// roots or the super-root.
HD_EXPORT struct hd_error *hd_fw_assign(struct hd_fw *fw, uint32_t node,
					uint32_t v);
// Whose v's bytes are: framework_bytes of its chunk are the framework's
// (e.g. a list node's links), the rest the application's. UINT64_MAX:
// all of it.
HD_EXPORT struct hd_error *hd_fw_mark(struct hd_fw *fw, uint32_t v,
				      uint64_t framework_bytes);
// Names a block's type as the framework knows it ("dict", "Widget"); the
// semantic tree, and every report of the default modules (types, blocks,
// why, leaks), shows it instead of the DWARF type.
HD_EXPORT struct hd_error *hd_fw_name(struct hd_fw *fw, uint32_t v,
				      const char *type);
// Gives a block the DWARF type named type (qualified, as hd_fw_object.type
// spells it: "std::_Rb_tree_node<std::pair<int const, Session> >"), which
// DWARF typing could not (a node reached through a base-class pointer):
// `why` then names the members of the block (hd_fw_name still names it).
// HD_ERROR_NOT_FOUND when no module's DWARF has a complete struct, class
// or union of that name.
HD_EXPORT struct hd_error *hd_fw_type(struct hd_fw *fw, uint32_t v,
				      const char *type);

#ifdef __cplusplus
}
#endif

#endif // HEAPDOM_FRAMEWORK_H
