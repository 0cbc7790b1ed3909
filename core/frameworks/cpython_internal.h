// What the files of the cpython framework module share: the state kept
// from detect to analyze, the type cache and object model, and the entry
// points of each phase's file.
//
// cpython.c          detect, the ops struct, analyze's order of steps
// cpython_pymalloc.c the blocks phase: pools and arenas found by headers
// cpython_objects.c  type objects and the objects blocks hold
// cpython_refs.c     what a container object refers to and owns
// cpython_naming.c   names for every object's block, free lists
// cpython_globals.c  a node per container global of __main__
#ifndef HD_CPYTHON_INTERNAL_H
#define HD_CPYTHON_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "heapdom_framework.h"
#include "util/hash.h"
#include "frameworks/cpython_layout.h"

#define MAX_TYPE_NAME 128

struct cpy_arena {
	uint64_t start, end;
};

// Kept from detect to analyze (released with free(): one allocation, the
// arenas at its end).
struct cpy_priv {
	char hint[64];          // module file name prefix: "python3.11"
	uint64_t version;       // Py_Version (PY_VERSION_HEX)
	uint64_t runtime;       // &_PyRuntime
	uint64_t type_type;     // &PyType_Type
	uint64_t set_type, frozenset_type, module_type;
	uint64_t pools, bad_pools;
	size_t num_arenas, cap_arenas;
	struct cpy_arena arenas[];
};

enum obj_kind {
	K_OTHER,
	K_LIST,
	K_TUPLE,
	K_DICT,
	K_SET,
	K_MODULE,
	K_TYPE,
	K_INSTANCE, // an instance of a class (a heap type)
};

struct pytype {
	uint64_t addr;
	bool valid;
	uint8_t kind;
	uint64_t flags;
	uint64_t basicsize;
	int64_t dictoffset, weaklistoffset;
	char *name;
};

// Type objects by address, valid or not (so garbage is checked once).
struct type_cache {
	struct pytype *slots;
	size_t cap, used;
};

// A Python object found in a block (or, from cpy_object_anywhere, outside
// the heap: vertex HD_DOM_NONE).
struct pyobj {
	uint64_t addr;          // the PyObject *
	uint32_t vertex;        // the block holding it
	uint64_t block, size;   // that block's start and size
	const struct pytype *type;
	uint64_t refcnt;
};

// What an object refers to that it owns: the objects in it and the blocks
// it keeps its items in.
struct refs {
	uint64_t *objs;
	size_t num_objs, cap_objs;
	uint64_t aux[2];     // addresses inside blocks only this object uses
	const char *aux_name[2];
	size_t num_aux;
};

// The analyze phase's state, shared by the naming pass and the globals.
struct analysis {
	struct hd_fw *fw;
	struct type_cache types;
	uint32_t cpython, pymalloc;
	uint32_t freelists;   // created when the first dead object is seen
	uint64_t dead;
	uint64_t objects, gc_objects, aux_named;
	size_t globals;
};

static inline struct cpy_priv *cpy_priv_of(struct hd_fw *fw)
{
	return *hd_fw_private(fw);
}

// Unaligned loads from a copy of target memory.
static inline uint64_t cpy_ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t cpy_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

// ------------------------------------------------------------ cpython.c

// Reads of target memory that fail quietly: unreadable memory is data the
// module does not understand, not an error.
bool cpy_read_ok(struct hd_fw *fw, uint64_t addr, void *buf, size_t len);
bool cpy_read_u64(struct hd_fw *fw, uint64_t addr, uint64_t *ret);

// ---------------------------------------------------- cpython_pymalloc.c

// The blocks phase: pymalloc's arenas as regions, their pools as blocks.
struct hd_error *cpy_blocks(struct hd_fw *fw);
// Whether addr lies in an arena the blocks phase found.
bool cpy_in_arena(struct hd_fw *fw, uint64_t addr);

// ----------------------------------------------------- cpython_objects.c

void cpy_type_cache_deinit(struct type_cache *c);
// The object a block holds, if it holds one (vertex not set).
struct hd_error *cpy_object_in_block(struct hd_fw *fw, struct type_cache *c,
				     uint64_t block, uint64_t size,
				     struct pyobj *ret, bool *found);
// The block behind vertex v as (start, size) of its user bytes, for used
// blocks only.
bool cpy_vertex_used_block(struct hd_fw *fw, uint32_t v, uint64_t *start,
			   uint64_t *size);
// The live object at exactly addr on the heap, or not found.
struct hd_error *cpy_object_at(struct hd_fw *fw, struct type_cache *c,
			       uint64_t addr, struct pyobj *ret, bool *found);
// An object wherever it lives, heap or not: for reading, not assigning.
struct hd_error *cpy_object_anywhere(struct hd_fw *fw, struct type_cache *c,
				     uint64_t addr, struct pyobj *ret,
				     bool *found);
// The used block an auxiliary pointer (item array, keys) lies in, or
// HD_DOM_NONE.
uint32_t cpy_aux_vertex(struct hd_fw *fw, uint64_t addr);
// A str's text when it is a compact ASCII string (identifiers are).
bool cpy_read_ascii(struct hd_fw *fw, const struct pyobj *o, char *buf,
		    size_t len);

// -------------------------------------------------------- cpython_refs.c

// Records an auxiliary block address (at most two per object).
void cpy_refs_aux(struct refs *r, uint64_t addr, const char *name);
// Keys and values of the dict at dict; keys may be NULL (values only).
struct hd_error *cpy_dict_entries(struct hd_fw *fw, uint64_t dict,
				  struct refs *keys, struct refs *values);
// What o refers to that it owns, into r (emptied first).
struct hd_error *cpy_object_refs(struct hd_fw *fw, const struct pyobj *o,
				 struct refs *r);

// ------------------------------------------------------ cpython_naming.c

// Names every object's block by its type and its auxiliary blocks; GC
// heads marked framework, free slots and free-list objects assigned.
struct hd_error *cpy_name_blocks(struct analysis *a);

// ----------------------------------------------------- cpython_globals.c

// One node per container global of __main__, owning what it owns.
struct hd_error *cpy_main_globals(struct analysis *a);

#endif
