// A compact index of a module's DWARF types and global variables, built
// once per module with libdwarf, for typing heap blocks.
#ifndef HD_TYPE_INDEX_H
#define HD_TYPE_INDEX_H

#include "heapdom.h"

#define HD_TYPE_NONE UINT32_MAX

enum hd_type_kind {
	HD_TYPE_VOID,     // void (also: a pointer's missing DW_AT_type)
	HD_TYPE_BASE,     // int, char, double, ... (name, size, is_char flag)
	HD_TYPE_ENUM,
	HD_TYPE_POINTER,  // also C++ references; target = pointee
	HD_TYPE_STRUCT,   // struct and class
	HD_TYPE_UNION,
	HD_TYPE_ARRAY,    // target = element type, count elements (0 if unknown)
	HD_TYPE_TYPEDEF,  // target = aliased type
	HD_TYPE_QUALIFIED,// const/volatile/restrict/atomic: target = the type
	HD_TYPE_FUNCTION, // subroutine type (pointer-to-function's pointee)
	HD_TYPE_OTHER,    // anything else (ptr-to-member, unspecified, ...)
};

struct hd_type {
	enum hd_type_kind kind;
	const char *name;   // "int", "session", "std::vector<int, ...>", NULL
	uint64_t size;      // DW_AT_byte_size (0 if unknown)
	uint32_t target;    // see kinds, else HD_TYPE_NONE
	uint64_t count;     // arrays: element count (product over dimensions)
	uint32_t first_member, num_members; // into members[] (structs, unions)
	bool declaration;   // incomplete (resolved to a definition if one exists)
	bool is_class;      // DW_TAG_class_type
	bool is_char;       // base type of 1 byte that is a character type
	bool has_vptr;      // the struct (or a base) has a vtable pointer
};

struct hd_member {
	const char *name;   // NULL for anonymous members
	uint64_t offset;    // bytes from the start of the struct
	uint32_t type;
	bool is_base;       // a C++ base class subobject
	bool bitfield;      // a bit-field (never a pointer)
};

struct hd_variable {
	const char *name;   // linkage-independent name ("g_cache", "ns::x")
	uint64_t addr;      // link-time address (DW_OP_addr), static storage
	uint32_t type;
};

struct hd_type_index {
	struct hd_type *types;
	size_t num_types;
	struct hd_member *members;
	size_t num_members;
	struct hd_variable *variables; // sorted by addr
	size_t num_variables;
	void *impl;         // string pool, name hash, die-offset map
};

// Builds the index of every compilation unit of the ELF file at path
// (a module or its separate debug file). Declarations are resolved to a
// definition of the same kind and qualified name when the file has one.
// HD_ERROR_NOT_FOUND if the file has no DWARF.
struct hd_error *hd_type_index_build(const char *path,
				     struct hd_type_index **ret);
// The same for the compilation units whose DW_AT_name ends in cu_suffix
// only (type units skipped): a quick look at one source file's types.
struct hd_error *hd_type_index_build_filtered(const char *path,
					      const char *cu_suffix,
					      struct hd_type_index **ret);
void hd_type_index_destroy(struct hd_type_index *ix);

// Follows typedefs and qualifiers (and declarations to definitions) to the
// type that says what the bytes are. HD_TYPE_NONE stays HD_TYPE_NONE.
uint32_t hd_type_strip(const struct hd_type_index *ix, uint32_t type);
// A complete struct/union/class by qualified name (e.g. "session",
// "ns::Session", "Session" for a C++ class), or HD_TYPE_NONE.
uint32_t hd_type_find_struct(const struct hd_type_index *ix, const char *name);
// The type's name as a C/C++ programmer writes it: "struct cache",
// "std::string", "int *", "struct entry[4]". buf is always terminated.
void hd_type_name(const struct hd_type_index *ix, uint32_t type, char *buf,
		  size_t len);

// One 8-byte aligned word of a type's layout that may hold a pointer.
struct hd_ptr_slot {
	uint64_t offset;   // bytes from the start of the type
	uint32_t pointee;  // stripped pointee type, HD_TYPE_NONE if unknown
	bool conservative; // void *, uintptr_t/intptr_t, a union, unknown:
			   // scan like untyped memory
};

// The pointer-holding words of a type, flattened through nested structs,
// base classes and arrays (arrays of more than max_elements are expanded
// only up to that many elements, the caller repeats the pattern by
// stride). Slots are sorted by offset. The vtable pointer of a class is not
// a slot. Returns the number of slots written to ret (at most cap) and
// sets *total to how many there are.
size_t hd_type_pointer_slots(const struct hd_type_index *ix, uint32_t type,
			     struct hd_ptr_slot *ret, size_t cap,
			     size_t *total);
// The member path of the byte at offset inside type: "buckets[17]",
// "next", "hdr.list.prev", or "+0x18" when no member covers it.
void hd_type_member_path(const struct hd_type_index *ix, uint32_t type,
			 uint64_t offset, char *buf, size_t len);

#endif
