// What the files of the libstdc++ framework module share: the container
// kinds, the analyze state and the walk of one container.
//
// libstdcxx.c        detect, the ops struct, analyze: the work queue of
//                    containers, one node per container
// libstdcxx_names.c  kinds, template arguments and short labels from the
//                    DWARF names
// libstdcxx_walk.c   what every walker uses, and the containers that keep
//                    their elements in buffers (vector, string, deque)
// libstdcxx_nodes.c  the containers of one block per node (list,
//                    forward_list, rb-tree, hashtable) and shared_ptr
// libstdcxx_alone.c  a node named from its container alone, while the
//                    module waits (defer.c)
#ifndef HD_LIBSTDCXX_INTERNAL_H
#define HD_LIBSTDCXX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/u64set.h"
#include "heapdom_framework.h"

// Nodes one container may have: beyond it the container is broken (or a
// cycle), whatever its recorded size says.
#define MAX_NODES (1u << 24)

enum kind {
	K_VECTOR, K_LIST, K_FLIST, K_TREE, K_HASH, K_STRING, K_SHARED,
	K_DEQUE, K_NONE,
};

// An element whose insides may hold containers.
struct element {
	uint64_t addr;
	uint32_t holder;
};

// What one container type's name says, worked out once for all the
// containers of that type (a million std::string keys share one).
struct stl_type {
	char *name;         // the DWARF name
	uint32_t id;        // its index in struct strtab's byid
	enum kind kind;
	bool ready;         // the fields below are filled (type_ready)
	bool has_vt;        // vt holds the element (value) type
	char *vt;           // its DWARF name, or NULL
	char *short_elem;   // as stl_short_type() writes it, or NULL
	char *elem_type;    // vt when DWARF has it complete (nesting), or NULL
	uint64_t esize;     // its size
	char *short_type;   // the container's own short name (labels)
	// Whether every element's containers are listed whole
	// (hd_fw_objects_whole): 0 not asked yet, 1 yes, -1 no; and
	// elem_type's key (hd_fw_type_lookup), when found (has_elem_key).
	int whole;
	bool has_elem_key;
	uint64_t elem_key;
	// std::basic_string: the character type's name (buffers are
	// "char[n]"; NULL: none) and size (0: unknown), once str_ready.
	bool str_ready;
	char *str_elem;
	uint64_t str_cs;
	// std::deque: "short_elem*" (its map's element), or NULL.
	char *deque_ptr;
	// The DWARF type of its nodes (hd_fw_type_lookup), by whether a
	// hash node caches its hash code: 0 not asked yet, 1 found, -1 none.
	int node_found[2];
	uint64_t node_key[2];
};

// A container found and not yet looked at.
struct pending {
	uint64_t addr, size;
	const struct stl_type *t; // its name is the DWARF type's
	char *where;      // freed once the container is looked at
	uint32_t holder;
};

// An entry of the work queue: a container, or the elements of one looked
// at, whose own containers are listed (hd_fw_objects_in) when the queue
// reaches them rather than when the container is looked at: the queue
// holds an entry per container walked, not one per container each of its
// elements holds, and an element's containers are read while its memory
// is fresh. The order containers are looked at is the same either way.
// Millions wait at once: 16 bytes each (a container takes two, its size in
// the second's a), the elements of a batch of more than one in a queue of
// their own (struct ctx's qelems, in the same order), the names in an
// array beside the queue only when names are kept.
enum { QE_CONTAINER, QE_ELEMS, QE_ONE };
struct qent {
	uint64_t a;      // the container's address; QE_ELEMS: how many
			 // elements; QE_ONE: the element's address
	uint32_t holder; // the container's or the element's
	uint32_t bits;   // QE_* | kind of the container << 4 | type id << 8
};
#define QE_MAX_TYPES (1u << 24)

// How a block name is written (name_spec): none; "tmpl<short_elem>";
// "std::__detail::_Hash_node<short_elem, n ? true : false>"; "elem[n]"
// (elem a string that lives as long as the analysis); a (a literal);
// node_name.
// HOW_LABEL: a name given before, label n.
enum { HOW_NONE, HOW_NODE, HOW_HASH_NODE, HOW_ELEMS, HOW_LITERAL, HOW_STRING,
       HOW_LABEL };

struct name_spec {
	uint8_t how;
	const char *a; // tmpl or elem
	uint64_t n;
};

// Labels (hd_fw_label) of the names given, by (type, how, a, n): a
// million strings of capacity 40 are all "char[41]".
struct name_memo {
	struct name_key {
		const void *t;   // NULL = empty
		const char *a;
		uint64_t n;
		uint32_t how, label;
	} *v;
	size_t cap, n;
};

// A set of addresses: a bit per 8-byte word, in pages of bits made as
// addresses come (a hash set of ten million containers' addresses took
// 8-16 bytes and a cache miss each); addresses not 8-aligned in a set.
#define ADDR_PAGE_SHIFT 18 // bytes of address a page of bits covers
struct addrset {
	struct addrpage {
		uint64_t key;  // addr >> ADDR_PAGE_SHIFT, + 1; 0 = empty
		uint64_t *bits;
	} *pages;
	size_t cap, n;
	struct addrpage last; // the page asked last
	struct hd_u64set odd;
};
// The elements queued alone (a shared_ptr's object, shared by many),
// by address and the type they were first queued with: listing one again
// lists only containers already looked at. A set of addresses per type
// (a few; an address is in one set at most).
struct elemset {
	struct elemtype {
		const char *type;
		struct addrset first; // the addresses first queued with type
	} *v;
	size_t n;
};

// Names given to a container's blocks (hd_fw_name).
enum { NAME_NONE, NAME_NODE, NAME_BUFFER, NAME_CHUNK };

// One block of a container, with its framework bytes and which name.
struct owned {
	uint64_t fw;
	uint32_t v;
	uint8_t name;
};

// Interned strings (open addressing, NULL = empty): the type names of the
// containers waiting, a few distinct ones among millions of containers.
struct strtab {
	struct stl_type **v;
	size_t cap, n;
	struct stl_type **byid; // n of them, by id
	// The last names interned by the address they were given at: the
	// type index's own strings, the same few again and again.
	const char *recent_src[64];
	struct stl_type *recent[64];
};

// The analyze phase's state, and the container being walked.
struct ctx {
	struct hd_fw *fw;
	// Globals and nested containers, looked at from done on; containers
	// found in typed heap blocks come after (block_container), so that
	// one reached both ways (the strings in a std::vector<std::string>'s
	// buffer, which DWARF types too) is named by its container:
	// "g_names[2]", not "std::string[2]".
	struct qent *queue;
	char **wheres;  // of the queue's containers, when names are kept
	size_t num_queue, cap_queue, done;
	struct element *qelems; // the elements of QE_ELEMS entries, in order
	size_t num_qelems, cap_qelems, qelems_done;
	bool top; // hd_fw_objects is calling enqueue
	int pass; // of block_container: 1 for containers in array elements
	bool names_only; // hd_fw_names_only: no labels
	struct strtab types; // of the pending containers
	struct addrset seen; // addresses of the containers looked at
	uint64_t *buffers;   // bit per vertex: the element buffers walked
	uint32_t num_vertices;
	struct elemset queued; // elements queued inline
	struct pending *found; // an element's containers (expand)
	size_t num_found, cap_found;
	struct owned *blocks;
	size_t num_blocks, cap_blocks;
	struct element *elems;
	size_t num_elems, cap_elems;
	const char *elem_type; // DWARF name of the elements, or NULL
	const char *short_elem; // the element type as stl_short_type() writes it
	// The names of the container's node blocks ("std::_Rb_tree_node<
	// std::pair<int const, Session>>"), of its buffer ("Item*[10]") and
	// of a deque's element buffers ("int[128]"), written out only the
	// first time a name is given (labels).
	struct name_spec node, buffer, chunk;
	char node_name[512]; // node.how == HOW_STRING: the name itself
	char name_buf[512];
	struct name_memo labels; // the names given, by spec
	// The labels of the names of shared_ptr control blocks (their
	// type's, as the typing names the block) by vertex and whether the
	// object is inside: a million shared_ptrs share a few hundred.
	struct sp_name {
		uint32_t v, label;
		bool inplace, set;
	} sp_names[1024];
	struct sp_name sp_pending; // the one the walk named, for name_label
	// The same by the typing's entry of the control block
	// (hd_fw_block_entry) and whether the object is inside: one name per
	// entry. ok: the name is the entry's (label), else the walk's own.
	struct sp_entry {
		uint32_t key;   // entry * 2 + inplace, + 1; 0 = empty
		uint32_t label;
		bool ok;
	} sp_entries[1024];
	uint32_t sp_pending_key; // the walk's key, or 0
	struct stl_node {
		uint64_t addr;
		uint32_t v;
	} *stack;
	size_t num_stack, cap_stack;
	size_t containers;
};

// Each walker fills c->blocks and c->elems and returns NULL with *why set
// when the container does not look like gcc 12's (why == NULL: fine;
// *empty: no heap memory, no node).
struct walk {
	const struct pending *p;
	const char *why;
	uint64_t why_addr;
	bool empty;
	uint64_t elem_size; // stride of elements in a buffer (vector)
	bool hash_cached;
};

// ----------------------------------------------------------- libstdcxx.c

// Makes room for element n of the array *p of *cap elements of size bytes.
struct hd_error *stl_grow(void **p, size_t *cap, size_t n, size_t size);
// The type named src in t, entered if new; NULL without memory.
struct stl_type *stl_intern(struct strtab *t, const char *src);
void stl_strtab_free(struct strtab *t);
// Fills what ty's name says of its elements and its short name.
struct hd_error *stl_type_ready(struct hd_fw *fw, struct stl_type *ty);
// The DWARF name of a container's node type, or false when its blocks are
// not nodes.
bool stl_node_dwarf_name(enum kind k, const char *vt, bool cached,
			 char *buf, size_t len);

// ----------------------------------------------------- libstdcxx_names.c

// Whether s starts with prefix.
bool stl_starts(const char *s, const char *prefix);
// The container kind of a DWARF type name, or K_NONE.
enum kind stl_kind_of(const char *type);
// Template argument k (0-based) of name, or the last one for k < 0.
bool stl_template_arg(const char *name, int k, char *buf, size_t len);
// The element type of a container named type.
bool stl_value_type(const char *type, enum kind k, char *buf, size_t len);
// sizeof a scalar element type as DWARF names it ("int", "long int",
// "double", "Item *") on x86-64, 0 for anything else.
uint64_t stl_scalar_size(const char *type);
// The name a C++ programmer writes for type (malloc'd, or NULL).
char *stl_short_type(const char *type);

// ------------------------------------------------------ libstdcxx_walk.c

// The used heap block starting at p with at least need usable bytes.
bool stl_block_at(struct hd_fw *fw, uint64_t p, uint64_t need, uint32_t *v,
		  uint64_t *usable);
// Records block v as the container's, fwb bytes of it framework's.
struct hd_error *stl_own(struct ctx *c, uint32_t v, uint64_t fwb, int name);
// Names the node blocks "tmpl<element>" when the element type is known.
void stl_name_node(struct ctx *c, const char *tmpl);
// Names the buffer "elem[n]" (elem lives as long as the analysis).
void stl_name_buffer(struct ctx *c, const char *elem, uint64_t n);
// Writes the name spec says into buf (512 bytes).
void stl_name_render(const struct ctx *c, const struct name_spec *spec,
		     char *buf);
// Records an element at addr, held by block holder.
struct hd_error *stl_elem(struct ctx *c, uint64_t addr, uint32_t holder);
// Pushes node x, of vertex v, on the walk's stack (the rb-tree's in-order
// walk).
struct hd_error *stl_push(struct ctx *c, uint64_t x, uint32_t v);
// A read that fails is memory not understood: false, no error.
bool stl_rd(struct hd_fw *fw, uint64_t addr, uint64_t *v);
// Marks the walk failed: the container is skipped with why.
void stl_fail(struct walk *w, uint64_t addr, const char *why);

// The walkers, one per kind.
struct hd_error *stl_walk_vector(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_string(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_deque(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_list(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_flist(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_tree(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_hash(struct ctx *c, struct walk *w);
struct hd_error *stl_walk_shared(struct ctx *c, struct walk *w);

// ----------------------------------------------------- libstdcxx_alone.c

struct hd_graph;
struct hd_csr;
struct hd_fw_holders;
// The deferral's name_alone and alone_free (fw_fast.h).
bool stl_name_alone(struct hd_fw *fw, size_t id, const struct hd_graph *g,
		    const struct hd_csr *rev, struct hd_fw_holders *hs,
		    void **state);
void stl_alone_free(void *state);

#endif
