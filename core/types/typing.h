// Typing heap blocks: DWARF types propagated from typed roots through
// pointer members, C++ classes from vtable pointers, and the pointer maps
// that make the scanner precise for typed blocks.
#ifndef HD_TYPING_H
#define HD_TYPING_H

#include "graph/graph_internal.h"
#include "graph/refs.h"
#include "heapdom.h"
#include "types/type_index.h"

#define HD_ENTRY_NONE UINT32_MAX

// One typing a block can have: a type of a module's index (count > 1 for
// an array of it), or only a class name from a vtable with no DWARF.
// A pointer-typed member of an entry's type, resolved once for all the
// blocks of that entry.
struct hd_typed_slot {
	uint64_t offset;   // in one element
	uint32_t pointee;  // stripped pointee type
	uint32_t single;   // entry of one pointee object, HD_ENTRY_NONE: not yet
	uint64_t psize;    // sizeof(pointee)
	bool chars;        // pointee is a 1-byte base type: always an array
	bool one;          // pointee is allocated one by one: never an array
	bool usable;       // pointee can type a block (complete, sized)
};

struct hd_type_entry {
	uint16_t module;      // index into hd_typing.mods, UINT16_MAX: no DWARF
	uint32_t type;        // type id in that module's index
	uint32_t count;       // array elements (1: a single object)
	uint64_t size;        // bytes covered: count * sizeof(type)
	bool from_vtable;
	char *name;           // display name: "struct entry", "Session[4]"
	uint8_t *typed;       // words typed as pointers (bit per word)
	size_t nwords;        // words covered by map (size / 8)
	struct hd_typed_slot *slots; // typed pointer members of one element
	size_t nslots;
	bool slots_ready;
	// For following a block's references (graph/refs.h): per word of one
	// element, the first slot at that word, or -1; NULL when the slots
	// are not whole words in offset order (memory is then read).
	int32_t *word_slot;
	uint32_t element_words;
};

struct hd_typing_module {
	const struct hd_module *m;
	struct hd_type_index *ix;
	// Per type (bit): some class derives from it. A pointer to such a
	// class says the block starts with one, not what the block is (a
	// std::map's _Rb_tree_node_base * points at _Rb_tree_node<pair<…>>).
	uint8_t *based;
	double seconds;
};

struct hd_typing {
	struct hd_target *target;
	const struct hd_heap *heap;
	struct hd_typing_module *mods;
	size_t num_mods;
	struct hd_type_entry *entries;
	size_t num_entries, cap_entries;
	uint32_t *block_entry; // per block: entry index or HD_ENTRY_NONE
	uint8_t *strength;     // per block: 0 none, 1 propagated, 2 vtable
	size_t num_blocks;
	void *dedupe;          // entry lookup
	// Scratch for the scanner's maps of typed words.
	uint8_t *scratch_typed;
	size_t scratch_words;
	struct hd_typing_info info;
};

// threads: as hd_threads_wanted's argument (0: not asked for, and the
// propagation runs on one thread). The typing does not depend on it.
struct hd_error *hd_typing_compute(struct hd_target *t, struct hd_debuginfo *di,
				   const struct hd_heap *h,
				   const struct hd_index *ix,
				   const struct hd_refs *refs, unsigned threads,
				   struct hd_typing **ret);
void hd_typing_destroy(struct hd_typing *ty);

// The type a front-end wrote for a local ("struct node *volatile",
// "const Session *", "std::map<int, S> const") as its base type's name in
// base and how many pointers lead to it: qualifiers (const, volatile,
// restrict, _Atomic) say nothing about what the bytes are and are dropped
// wherever they stand, except inside template arguments. -1 for what is
// not understood (arrays, functions, references).
int hd_typing_local_type(const char *type_name, char *base, size_t len);

// The scanner's hook (hd_pointer_map_fn): arg is the typing.
const uint8_t *hd_typing_pointer_map(void *arg, size_t block, size_t nwords);
// One bit of that map (hd_word_typed_fn): reads only, from any thread.
bool hd_typing_word_typed(void *arg, size_t block, uint64_t word);

#endif
