// The parts of a type index that struct hd_type_index keeps behind its
// impl pointer, shared by the builder (type_index.c) and the on-disk cache
// (index_disk.c), which writes and reads them. Nothing else may use them.
#ifndef HD_TYPE_INDEX_IMPL_H
#define HD_TYPE_INDEX_IMPL_H

#include <stddef.h>
#include <stdint.h>

// Interned names live in a list of chunks, each a run of NUL-terminated
// strings.
struct pool_chunk {
	struct pool_chunk *next;
	size_t used, cap;
	char data[];
};

// Complete structs, unions and enums (and typedefs of complete structs) by
// qualified name, kept after the build for hd_type_find_struct. The first
// definition of a name wins. An entry is only an id and a hash: the name
// and the class come from the type. Open addressing, cap a power of two.
struct name_entry {
	uint32_t id; // HD_TYPE_NONE: empty slot
	uint32_t hash;
};

struct name_map {
	struct name_entry *slots;
	size_t len, cap;
};

struct id_pair {
	uint32_t from, to;
};

struct impl {
	struct pool_chunk *pool;
	struct name_map names;
	uint8_t *flags;              // FLAG_* per type
	struct id_pair *decl_defs;   // declaration -> definition, by decl
	size_t num_decl_defs;
	struct id_pair *fn_returns;  // FUNCTION -> return type, by function
	size_t num_fn_returns;
};

#endif
