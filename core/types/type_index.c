// The type index of a module's DWARF: see type_index.h.
//
// One pass over the DIEs of every unit, with an explicit stack (never
// recursion), gives every type DIE a dense id in DIE order. References
// (DW_AT_type, DW_AT_specification) are kept as DIE offsets during the
// pass and resolved after it by binary search in the offset -> id table,
// which is sorted for free because DIEs are visited in offset order; so a
// type used before its DIE is no special case. Names are copied into an
// interning string pool so the Dwarf_Debug is closed when the build ends
// and a name repeated in every CU ("size_t") is stored once.
//
// Walks over type chains (typedef -> const -> array -> ...) and over
// nested layouts stop after MAX_TYPE_HOPS / MAX_NESTING steps, so broken
// DWARF with reference cycles cannot hang or overflow anything.
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "heapdom.h"
#include "types/type_index.h"
#include "types/type_index_impl.h"
#include "util/vec.h"
#include "debuginfo/dwarf_open.h"
#include "util/sort.h"

// Longest typedef/qualifier/array chain we follow; real programs need a
// handful of hops.
#define MAX_TYPE_HOPS 64
// Deepest struct-in-struct (or array) nesting that pointer slots and member
// paths descend into.
#define MAX_NESTING 64
// Keys of .debug_types DIEs (DWARF 4 type units): their offsets live in
// another section, tagged so they sort after every .debug_info offset.
#define TYPES_SECTION_BIT (UINT64_C(1) << 63)

// Per-type bits that struct hd_type has no field for, in impl->flags.
enum {
	FLAG_CPLUS = 1,    // from a non-C unit: no struct/union/enum keyword
	FLAG_REF = 2,      // POINTER from a C++ lvalue reference
	FLAG_RVREF = 4,    // POINTER from a C++ rvalue reference
	FLAG_CONST = 8,    // QUALIFIED: which qualifier
	FLAG_VOLATILE = 16,
	FLAG_RESTRICT = 32,
	FLAG_ATOMIC = 64,
};

// Kinds a declaration must share with its definition, and the key space
// of hd_type_find_struct's typedef fallback.
enum name_class { CLASS_STRUCT, CLASS_UNION, CLASS_ENUM, CLASS_TYPEDEF };

// ------------------------------------------------------------ string pool

#define POOL_CHUNK_SIZE (64 * 1024)

// Copies s[0, len) and a terminator into the pool; NULL when out of memory.
static const char *pool_add(struct pool_chunk **head, const char *s,
			    size_t len)
{
	struct pool_chunk *c = *head;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > POOL_CHUNK_SIZE ? len + 1
						       : POOL_CHUNK_SIZE;
		struct pool_chunk *n = malloc(sizeof(*n) + cap);
		if (!n)
			return NULL;
		n->used = 0;
		n->cap = cap;
		// A string bigger than a chunk gets one of its own behind
		// the current chunk, which keeps filling.
		if (c && cap > POOL_CHUNK_SIZE) {
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			*head = n;
		}
		c = n;
	}
	char *p = c->data + c->used;
	memcpy(p, s, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

static void pool_free(struct pool_chunk *c)
{
	while (c) {
		struct pool_chunk *next = c->next;
		free(c);
		c = next;
	}
}

// FNV-1a: names are short, and this only has to spread them.
static uint32_t hash_bytes(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

// Interning table, for the build only: open addressing, power-of-two size.
struct intern {
	const char **strs;
	uint32_t *hashes;
	size_t len, cap;
};

static bool intern_grow(struct intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 4096;
	const char **strs = calloc(cap, sizeof(*strs));
	uint32_t *hashes = malloc(cap * sizeof(*hashes));
	if (!strs || !hashes) {
		free(strs);
		free(hashes);
		return false;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->strs[i])
			continue;
		size_t j = t->hashes[i] & (cap - 1);
		while (strs[j])
			j = (j + 1) & (cap - 1);
		strs[j] = t->strs[i];
		hashes[j] = t->hashes[i];
	}
	free(t->strs);
	free(t->hashes);
	t->strs = strs;
	t->hashes = hashes;
	t->cap = cap;
	return true;
}

// The pooled copy of s[0, len), made on first use; NULL when out of memory.
static const char *intern_str(struct intern *t, struct pool_chunk **pool,
			      const char *s, size_t len)
{
	if ((t->len + 1) * 2 > t->cap && !intern_grow(t))
		return NULL;
	uint32_t h = hash_bytes(s, len);
	size_t j = h & (t->cap - 1);
	for (; t->strs[j]; j = (j + 1) & (t->cap - 1)) {
		if (t->hashes[j] == h && strncmp(t->strs[j], s, len) == 0 &&
		    t->strs[j][len] == '\0')
			return t->strs[j];
	}
	const char *p = pool_add(pool, s, len);
	if (!p)
		return NULL;
	t->strs[j] = p;
	t->hashes[j] = h;
	t->len++;
	return p;
}

static void intern_free(struct intern *t)
{
	free(t->strs);
	free(t->hashes);
	memset(t, 0, sizeof(*t));
}

// ---------------------------------------------------------- name map

static uint32_t name_hash(const char *name, size_t len, enum name_class cls)
{
	return hash_bytes(name, len) * 31 + cls;
}

static enum name_class type_class(const struct hd_type *t)
{
	switch (t->kind) {
	case HD_TYPE_UNION:
		return CLASS_UNION;
	case HD_TYPE_ENUM:
		return CLASS_ENUM;
	case HD_TYPE_TYPEDEF:
		return CLASS_TYPEDEF;
	default:
		return CLASS_STRUCT;
	}
}

static uint32_t name_map_get(const struct name_map *m,
			     const struct hd_type *types, const char *name,
			     size_t len, enum name_class cls)
{
	if (!m->cap)
		return HD_TYPE_NONE;
	uint32_t h = name_hash(name, len, cls);
	for (size_t j = h & (m->cap - 1); m->slots[j].id != HD_TYPE_NONE;
	     j = (j + 1) & (m->cap - 1)) {
		const struct hd_type *t = &types[m->slots[j].id];
		if (m->slots[j].hash == h && type_class(t) == cls &&
		    strncmp(t->name, name, len) == 0 && t->name[len] == '\0')
			return m->slots[j].id;
	}
	return HD_TYPE_NONE;
}

static bool name_map_grow(struct name_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct name_entry *slots = malloc(cap * sizeof(*slots));
	if (!slots)
		return false;
	for (size_t j = 0; j < cap; j++)
		slots[j].id = HD_TYPE_NONE;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].id == HD_TYPE_NONE)
			continue;
		size_t j = m->slots[i].hash & (cap - 1);
		while (slots[j].id != HD_TYPE_NONE)
			j = (j + 1) & (cap - 1);
		slots[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return true;
}

// Adds types[id] under its name unless the name is taken.
static bool name_map_add(struct name_map *m, const struct hd_type *types,
			 uint32_t id)
{
	const struct hd_type *t = &types[id];
	enum name_class cls = type_class(t);
	if ((m->len + 1) * 2 > m->cap && !name_map_grow(m))
		return false;
	uint32_t h = name_hash(t->name, strlen(t->name), cls);
	size_t j = h & (m->cap - 1);
	for (; m->slots[j].id != HD_TYPE_NONE; j = (j + 1) & (m->cap - 1)) {
		const struct hd_type *o = &types[m->slots[j].id];
		// Names are interned: the same name is the same pointer.
		if (m->slots[j].hash == h && type_class(o) == cls &&
		    o->name == t->name)
			return true;
	}
	m->slots[j] = (struct name_entry){id, h};
	m->len++;
	return true;
}

// ---------------------------------------------------------- index impl

static uint32_t pair_lookup(const struct id_pair *pairs, size_t n,
			    uint32_t from)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pairs[mid].from < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && pairs[lo].from == from ? pairs[lo].to : HD_TYPE_NONE;
}

static const struct impl *impl_of(const struct hd_type_index *ix)
{
	return ix->impl;
}

static uint8_t type_flags(const struct hd_type_index *ix, uint32_t id)
{
	return impl_of(ix)->flags[id];
}

// The definition of a declaration, or HD_TYPE_NONE.
static uint32_t decl_definition(const struct hd_type_index *ix, uint32_t id)
{
	const struct impl *im = impl_of(ix);
	return pair_lookup(im->decl_defs, im->num_decl_defs, id);
}

uint32_t hd_type_strip(const struct hd_type_index *ix, uint32_t type)
{
	for (int hops = 0; hops < MAX_TYPE_HOPS; hops++) {
		if (type >= ix->num_types)
			return HD_TYPE_NONE;
		const struct hd_type *t = &ix->types[type];
		if (t->kind == HD_TYPE_TYPEDEF ||
		    t->kind == HD_TYPE_QUALIFIED) {
			type = t->target;
			continue;
		}
		if (t->declaration) {
			uint32_t def = decl_definition(ix, type);
			if (def != HD_TYPE_NONE && def != type) {
				type = def;
				continue;
			}
		}
		return type;
	}
	return HD_TYPE_NONE; // a cycle
}

// Size of a type in bytes, through typedefs and declarations; 0 if unknown.
static uint64_t type_size(const struct hd_type_index *ix, uint32_t type)
{
	if (type >= ix->num_types)
		return 0;
	if (ix->types[type].size)
		return ix->types[type].size;
	uint32_t s = hd_type_strip(ix, type);
	return s == HD_TYPE_NONE ? 0 : ix->types[s].size;
}

// ============================================================== building

enum ref_kind {
	REF_NONE,    // no attribute: void for DW_AT_type
	REF_DIE,     // value is a DIE key
	REF_SIG,     // value is a type signature (DW_FORM_ref_sig8)
	REF_UNKNOWN, // a reference we cannot follow (dwz alt file, ...)
};

struct ref {
	uint64_t value;
	uint8_t kind;
};

enum fixup_owner {
	FIX_TARGET,   // types[index].target
	FIX_MEMBER,   // members[index].type
	FIX_VARIABLE, // variables[index].type
	FIX_RETURN,   // fn_returns[index].to
	FIX_SPEC,     // types[index].name from the declaration it completes
	FIX_SIGNATURE, // types[index] is a stub for a type unit's type
};

// A reference to resolve once every DIE has an id.
struct fixup {
	uint64_t value;
	uint32_t index;
	uint8_t owner, kind;
};

struct key_id {
	uint64_t key;
	uint32_t id;
};

// A member read but not yet placed: members of a struct must be contiguous
// in ix->members, and a nested class's members arrive in the middle.
struct pending_member {
	struct hd_member m;
	struct ref type;
};

// A variable declaration that a definition may complete through
// DW_AT_specification (extern declarations, C++ static data members).
struct var_decl {
	uint64_t key;
	const char *name;
	struct ref type;
};

// A variable defined through DW_AT_specification (or abstract_origin)
// without a name of its own: named after the walk, when every declaration
// has been seen (clang puts definitions before the class declaring them).
struct var_spec {
	uint64_t key;     // the declaration's DIE
	const char *func; // a static local's function, or NULL
	uint32_t index;   // in ix->variables
	bool own_type;    // the definition has its own DW_AT_type
};

struct type_unit {
	uint64_t sig;
	uint64_t key; // the unit's type DIE
};

enum scope_kind {
	SCOPE_UNIT,
	SCOPE_NAMESPACE,
	SCOPE_STRUCT,
	SCOPE_FUNCTION,
	SCOPE_BLOCK,
};

// One level of the DIE stack: a DIE whose children are being visited.
struct frame {
	Dwarf_Die die;
	enum scope_kind kind;
	const char *prefix;   // qualified name children are prefixed with
	uint32_t owner;       // SCOPE_STRUCT: the struct's id
	size_t pending_start; // SCOPE_STRUCT: its first pending member
	const char *func_name; // SCOPE_FUNCTION: looked up when first needed
	bool func_name_done;
};

struct build {
	Dwarf_Debug dbg;
	const char *path;
	const char *cu_suffix; // only units whose name ends so, or NULL
	struct hd_type_index *ix;
	struct impl *im;
	struct intern strings;
	size_t types_cap, members_cap, variables_cap, flags_cap;
	size_t fn_returns_cap;

	struct key_id *keys;
	size_t num_keys, keys_cap;
	struct fixup *fixups;
	size_t num_fixups, fixups_cap;
	struct pending_member *pending;
	size_t num_pending, pending_cap;
	struct var_decl *var_decls;
	size_t num_var_decls, var_decls_cap;
	struct var_spec *var_specs;
	size_t num_var_specs, var_specs_cap;
	struct type_unit *units;
	size_t num_units, units_cap;
	struct id_pair *stubs; // FIX_SIGNATURE: stub -> type unit's type
	size_t num_stubs, stubs_cap;
	struct frame *frames;
	size_t num_frames, frames_cap;
	char *namebuf;
	size_t namebuf_cap;

	uint32_t void_id;  // the one VOID type
	uint32_t other_id; // stands for references we cannot resolve

	// The current unit.
	bool is_info;
	bool cplus;
	Dwarf_Half version, offset_size, address_size;
};

// Turns a libdwarf error into ours and releases it.
static struct hd_error *dw_error(struct build *b, Dwarf_Error derr,
				 const char *what)
{
	struct hd_error *err = hd_error_file(
		HD_ERROR_FORMAT, b->path, "%s: %s", what,
		derr ? dwarf_errmsg(derr) : "unknown libdwarf error");
	if (derr)
		dwarf_dealloc_error(b->dbg, derr);
	return err;
}

// A value libdwarf could not decode is dropped, not fatal: one odd
// attribute from an unusual producer should not lose a whole library.
static void drop_error(struct build *b, Dwarf_Error derr)
{
	if (derr)
		dwarf_dealloc_error(b->dbg, derr);
}

static const char *intern(struct build *b, const char *s)
{
	return intern_str(&b->strings, &b->im->pool, s, strlen(s));
}

// "prefix::name" in C++ scopes, plain name otherwise. NULL name: NULL.
static struct hd_error *qualify(struct build *b, const char *prefix,
				const char *name, const char **ret)
{
	*ret = NULL;
	if (!name)
		return NULL;
	if (!prefix || !b->cplus) {
		*ret = intern(b, name);
		return *ret ? NULL : &hd_error_no_memory;
	}
	size_t plen = strlen(prefix), nlen = strlen(name);
	size_t need = plen + 2 + nlen + 1;
	if (need > b->namebuf_cap) {
		char *p = realloc(b->namebuf, need);
		if (!p)
			return &hd_error_no_memory;
		b->namebuf = p;
		b->namebuf_cap = need;
	}
	memcpy(b->namebuf, prefix, plen);
	memcpy(b->namebuf + plen, "::", 2);
	memcpy(b->namebuf + plen + 2, name, nlen + 1);
	*ret = intern_str(&b->strings, &b->im->pool, b->namebuf, need - 1);
	return *ret ? NULL : &hd_error_no_memory;
}

static struct hd_error *add_fixup(struct build *b, enum fixup_owner owner,
				  uint32_t index, struct ref ref)
{
	struct fixup f = {ref.value, index, owner, ref.kind};
	if (!HD_VEC_PUSH(b->fixups, b->num_fixups, b->fixups_cap, f))
		return &hd_error_no_memory;
	return NULL;
}

// Appends a type for the DIE with key; *ret is its id.
static struct hd_error *new_type(struct build *b, uint64_t key,
				 enum hd_type_kind kind, uint32_t *ret)
{
	struct hd_type_index *ix = b->ix;
	if (ix->num_types >= UINT32_MAX - 1)
		return hd_error_file(HD_ERROR_FORMAT, b->path,
				     "too many types");
	struct hd_type t = {
		.kind = kind,
		.target = HD_TYPE_NONE,
	};
	uint8_t flags = b->cplus ? FLAG_CPLUS : 0;
	size_t n = ix->num_types, nf = n;
	// flags[] has as many entries as types[] (nf tracks its length).
	if (!HD_VEC_PUSH(b->im->flags, nf, b->flags_cap, flags) ||
	    !HD_VEC_PUSH(ix->types, ix->num_types, b->types_cap, t))
		return &hd_error_no_memory;
	struct key_id k = {key, (uint32_t)n};
	if (key != UINT64_MAX &&
	    !HD_VEC_PUSH(b->keys, b->num_keys, b->keys_cap, k))
		return &hd_error_no_memory;
	*ret = (uint32_t)n;
	return NULL;
}

// -------------------------------------------------------------- attributes

// Attributes of one DIE, read in one pass over dwarf_attrlist.
struct die_attrs {
	const char *name;       // libdwarf's string: valid until dwarf_finish
	struct ref type;        // DW_AT_type
	struct ref spec;        // DW_AT_specification or DW_AT_abstract_origin
	struct ref signature;   // DW_AT_signature: defined in a type unit
	uint64_t byte_size, encoding, member_offset, data_bit_offset;
	uint64_t count, upper, lower;
	uint64_t addr;          // DW_AT_location when it is DW_OP_addr
	bool has_byte_size, has_member_offset, bad_member_offset;
	bool has_data_bit_offset, has_bit_size, has_count, has_upper;
	bool has_lower, has_addr, declaration, virtuality;
};

// Reads a constant-class value; false when the form is not a constant
// (the exprloc bound of a VLA, a DWARF 3 location list pointer).
static bool attr_const(struct build *b, Dwarf_Attribute attr,
		       Dwarf_Half attrnum, Dwarf_Half form, uint64_t *ret)
{
	Dwarf_Error derr = NULL;
	int rc;
	if (dwarf_get_form_class(b->version, attrnum, b->offset_size, form) !=
	    DW_FORM_CLASS_CONSTANT)
		return false;
	// dwarf_formudata rejects negative sdata, and a lower bound may be
	// negative, so signed forms go through formsdata.
	if (form == DW_FORM_sdata || form == DW_FORM_implicit_const) {
		Dwarf_Signed s;
		rc = dwarf_formsdata(attr, &s, &derr);
		*ret = (uint64_t)s;
	} else {
		Dwarf_Unsigned u;
		rc = dwarf_formudata(attr, &u, &derr);
		*ret = u;
	}
	if (rc != DW_DLV_OK) {
		drop_error(b, derr);
		return false;
	}
	return true;
}

static struct ref attr_ref(struct build *b, Dwarf_Attribute attr,
			   Dwarf_Half form)
{
	Dwarf_Error derr = NULL;
	struct ref r = {0, REF_UNKNOWN};
	if (form == DW_FORM_ref_sig8) {
		Dwarf_Sig8 sig;
		if (dwarf_formsig8(attr, &sig, &derr) != DW_DLV_OK) {
			drop_error(b, derr);
			return r;
		}
		memcpy(&r.value, sig.signature, sizeof(r.value));
		r.kind = REF_SIG;
		return r;
	}
	// References into a dwz supplementary file name DIEs we never see.
	if (form == DW_FORM_GNU_ref_alt || form == DW_FORM_ref_sup4 ||
	    form == DW_FORM_ref_sup8)
		return r;
	Dwarf_Off off;
	if (dwarf_global_formref(attr, &off, &derr) != DW_DLV_OK) {
		drop_error(b, derr);
		return r;
	}
	r.value = b->is_info ? off : off | TYPES_SECTION_BIT;
	r.kind = REF_DIE;
	return r;
}

// Decodes an unsigned LEB128 from [*p, end).
static bool read_uleb128(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t value = 0;
	for (unsigned int shift = 0; *p < end; shift += 7) {
		uint8_t byte = *(*p)++;
		if (shift < 64)
			value |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*ret = value;
			return true;
		}
	}
	return false;
}

// Raw bytes of an expression-valued attribute (exprloc, or a DWARF 2/3
// block). *block is a block the caller must release, or NULL.
static bool attr_expr(struct build *b, Dwarf_Attribute attr, Dwarf_Half form,
		      const uint8_t **data, uint64_t *len, Dwarf_Block **block)
{
	Dwarf_Error derr = NULL;
	*block = NULL;
	if (form == DW_FORM_exprloc) {
		Dwarf_Unsigned n;
		Dwarf_Ptr p;
		if (dwarf_formexprloc(attr, &n, &p, &derr) != DW_DLV_OK) {
			drop_error(b, derr);
			return false;
		}
		*data = p;
		*len = n;
		return true;
	}
	if (form == DW_FORM_block1 || form == DW_FORM_block2 ||
	    form == DW_FORM_block4 || form == DW_FORM_block) {
		if (dwarf_formblock(attr, block, &derr) != DW_DLV_OK) {
			drop_error(b, derr);
			*block = NULL;
			return false;
		}
		*data = (*block)->bl_data;
		*len = (*block)->bl_len;
		return true;
	}
	return false; // a location list: not a static address
}

// A member location: a constant, or (DWARF 2/3, and some producers)
// DW_OP_plus_uconst N. Anything else computes a virtual base's offset at
// run time: bad_member_offset says so.
static void member_location(struct build *b, Dwarf_Attribute attr,
			    Dwarf_Half form, struct die_attrs *a)
{
	const uint8_t *p;
	uint64_t len;
	Dwarf_Block *block;

	a->has_member_offset = true;
	if (attr_const(b, attr, DW_AT_data_member_location, form,
		       &a->member_offset))
		return;
	a->bad_member_offset = true;
	if (!attr_expr(b, attr, form, &p, &len, &block))
		return;
	const uint8_t *end = p + len;
	if (len > 0 && *p == DW_OP_plus_uconst) {
		p++;
		if (read_uleb128(&p, end, &a->member_offset) && p == end)
			a->bad_member_offset = false;
	}
	if (block)
		dwarf_dealloc(b->dbg, block, DW_DLA_BLOCK);
}

// Decodes a location that is exactly one static address: DW_OP_addr X, or
// DW_OP_addrx/DW_OP_GNU_addr_index I (clang's DWARF 5) through .debug_addr.
// Thread-local variables (X then a TLS operator), values computed by
// DW_OP_stack_value and everything register or frame based are not.
static bool location_addr(struct build *b, Dwarf_Die die, const uint8_t *p,
			  uint64_t len, uint64_t *ret)
{
	const uint8_t *end = p + len;
	if (len == 0)
		return false;
	uint8_t op = *p++;
	if (op == DW_OP_addr) {
		unsigned int size = b->address_size;
		if (size == 0 || size > 8 || (uint64_t)(end - p) != size)
			return false;
		uint64_t addr = 0;
		// DWARF here is little-endian x86-64.
		for (unsigned int i = 0; i < size; i++)
			addr |= (uint64_t)p[i] << (8 * i);
		*ret = addr;
		return true;
	}
	if (op == DW_OP_addrx || op == DW_OP_GNU_addr_index) {
		uint64_t index;
		Dwarf_Addr addr;
		Dwarf_Error derr = NULL;
		if (!read_uleb128(&p, end, &index) || p != end)
			return false;
		if (dwarf_debug_addr_index_to_addr(die, index, &addr, &derr) !=
		    DW_DLV_OK) {
			drop_error(b, derr);
			return false;
		}
		*ret = addr;
		return true;
	}
	return false;
}

static void location(struct build *b, Dwarf_Die die, Dwarf_Attribute attr,
		     Dwarf_Half form, struct die_attrs *a)
{
	const uint8_t *p;
	uint64_t len;
	Dwarf_Block *block;
	if (!attr_expr(b, attr, form, &p, &len, &block))
		return;
	a->has_addr = location_addr(b, die, p, len, &a->addr);
	if (block)
		dwarf_dealloc(b->dbg, block, DW_DLA_BLOCK);
}

static bool attr_flag(struct build *b, Dwarf_Attribute attr)
{
	Dwarf_Bool v = 0;
	Dwarf_Error derr = NULL;
	if (dwarf_formflag(attr, &v, &derr) != DW_DLV_OK) {
		drop_error(b, derr);
		return false;
	}
	return v;
}

static void read_attr(struct build *b, Dwarf_Die die, Dwarf_Attribute attr,
		      struct die_attrs *a)
{
	Dwarf_Half num, form;
	Dwarf_Error derr = NULL;
	char *s;

	if (dwarf_whatattr(attr, &num, &derr) != DW_DLV_OK ||
	    dwarf_whatform(attr, &form, &derr) != DW_DLV_OK) {
		drop_error(b, derr);
		return;
	}
	switch (num) {
	case DW_AT_name:
		if (dwarf_formstring(attr, &s, &derr) == DW_DLV_OK)
			a->name = s;
		else
			drop_error(b, derr);
		break;
	case DW_AT_type:
		a->type = attr_ref(b, attr, form);
		break;
	case DW_AT_specification:
	case DW_AT_abstract_origin:
		a->spec = attr_ref(b, attr, form);
		break;
	case DW_AT_signature:
		a->signature = attr_ref(b, attr, form);
		break;
	case DW_AT_byte_size:
		a->has_byte_size =
			attr_const(b, attr, num, form, &a->byte_size);
		break;
	case DW_AT_encoding:
		attr_const(b, attr, num, form, &a->encoding);
		break;
	case DW_AT_data_member_location:
		member_location(b, attr, form, a);
		break;
	case DW_AT_data_bit_offset:
		a->has_data_bit_offset =
			attr_const(b, attr, num, form, &a->data_bit_offset);
		break;
	case DW_AT_bit_size:
		a->has_bit_size = true;
		break;
	case DW_AT_count:
		a->has_count = attr_const(b, attr, num, form, &a->count);
		break;
	case DW_AT_upper_bound:
		a->has_upper = attr_const(b, attr, num, form, &a->upper);
		break;
	case DW_AT_lower_bound:
		a->has_lower = attr_const(b, attr, num, form, &a->lower);
		break;
	case DW_AT_location:
		location(b, die, attr, form, a);
		break;
	case DW_AT_declaration:
		a->declaration = attr_flag(b, attr);
		break;
	case DW_AT_virtuality: {
		uint64_t v = 0;
		a->virtuality = attr_const(b, attr, num, form, &v) &&
				v != DW_VIRTUALITY_none;
		break;
	}
	}
}

static struct hd_error *read_attrs(struct build *b, Dwarf_Die die,
				   struct die_attrs *a)
{
	Dwarf_Attribute *list;
	Dwarf_Signed n;
	Dwarf_Error derr = NULL;

	memset(a, 0, sizeof(*a));
	int rc = dwarf_attrlist(die, &list, &n, &derr);
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	if (rc != DW_DLV_OK)
		return dw_error(b, derr, "reading DIE attributes");
	for (Dwarf_Signed i = 0; i < n; i++) {
		read_attr(b, die, list[i], a);
		dwarf_dealloc_attribute(list[i]);
	}
	dwarf_dealloc(b->dbg, list, DW_DLA_LIST);
	return NULL;
}

static struct hd_error *die_key(struct build *b, Dwarf_Die die, uint64_t *ret)
{
	Dwarf_Off off;
	Dwarf_Error derr = NULL;
	if (dwarf_dieoffset(die, &off, &derr) != DW_DLV_OK)
		return dw_error(b, derr, "reading DIE offset");
	*ret = b->is_info ? off : off | TYPES_SECTION_BIT;
	return NULL;
}

// -------------------------------------------------------------- types

// The element count of an array DIE: the product of its subranges (gcc
// describes int a[3][4] as one array with two). A subrange without a
// constant bound (flexible array member, VLA) makes the count unknown: 0.
static struct hd_error *array_count(struct build *b, Dwarf_Die die,
				    uint64_t *ret)
{
	Dwarf_Die child, next;
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;
	uint64_t total = 1;
	bool any = false;

	*ret = 0;
	int rc = dwarf_child(die, &child, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(b, derr, "reading array dimensions");
	while (rc == DW_DLV_OK) {
		Dwarf_Half tag;
		if (dwarf_tag(child, &tag, &derr) != DW_DLV_OK) {
			err = dw_error(b, derr, "reading DIE tag");
			break;
		}
		if (tag == DW_TAG_subrange_type ||
		    tag == DW_TAG_enumeration_type) {
			struct die_attrs a;
			uint64_t n = 0;
			if ((err = read_attrs(b, child, &a)))
				break;
			if (a.has_count)
				n = a.count;
			else if (a.has_upper)
				// C's default lower bound is 0; gcc's upper
				// bound of -1 for x[0] gives 0.
				n = a.upper - (a.has_lower ? a.lower : 0) + 1;
			if (__builtin_mul_overflow(total, n, &total))
				total = 0;
			any = true;
		}
		next = NULL;
		rc = dwarf_siblingof_b(b->dbg, child, b->is_info, &next, &derr);
		dwarf_dealloc_die(child);
		child = next;
		if (rc == DW_DLV_ERROR)
			return dw_error(b, derr, "reading array dimensions");
	}
	if (err) {
		dwarf_dealloc_die(child);
		return err;
	}
	*ret = any ? total : 0;
	return NULL;
}

// Sets *field from a DW_AT_type reference now (void, unresolvable) or
// through a fixup once every DIE has an id.
static struct hd_error *set_ref(struct build *b, enum fixup_owner owner,
				uint32_t index, struct ref ref,
				uint32_t *field, uint32_t if_none)
{
	if (ref.kind == REF_NONE) {
		*field = if_none;
		return NULL;
	}
	if (ref.kind == REF_UNKNOWN) {
		*field = b->other_id;
		return NULL;
	}
	*field = HD_TYPE_NONE;
	return add_fixup(b, owner, index, ref);
}

static uint32_t key_to_id(const struct build *b, uint64_t key);

// The qualified name of an out-of-line definition (class Outer::Inner
// {...}, or a type unit's, outside its namespaces) is its declaration's.
// The declaration comes first in practice: take its name now, so the
// definition's nested types are prefixed right; else after the walk.
static struct hd_error *name_from_spec(struct build *b, uint32_t id,
				       struct ref spec)
{
	if (spec.kind != REF_DIE)
		return NULL;
	uint32_t decl = key_to_id(b, spec.value);
	if (decl != HD_TYPE_NONE && b->ix->types[decl].name) {
		b->ix->types[id].name = b->ix->types[decl].name;
		return NULL;
	}
	return add_fixup(b, FIX_SPEC, id, spec);
}

// A struct DIE with DW_AT_signature stands for the type a type unit
// defines: a declaration that strips to that type.
static struct hd_error *stub(struct build *b, uint32_t id, struct ref sig)
{
	if (sig.kind != REF_SIG)
		return NULL;
	b->ix->types[id].declaration = true;
	return add_fixup(b, FIX_SIGNATURE, id, sig);
}

static enum hd_type_kind tag_kind(Dwarf_Half tag)
{
	switch (tag) {
	case DW_TAG_base_type:
		return HD_TYPE_BASE;
	case DW_TAG_enumeration_type:
		return HD_TYPE_ENUM;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		return HD_TYPE_POINTER;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_interface_type:
		return HD_TYPE_STRUCT;
	case DW_TAG_union_type:
		return HD_TYPE_UNION;
	case DW_TAG_array_type:
		return HD_TYPE_ARRAY;
	case DW_TAG_typedef:
		return HD_TYPE_TYPEDEF;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
	case DW_TAG_immutable_type:
		return HD_TYPE_QUALIFIED;
	case DW_TAG_subroutine_type:
		return HD_TYPE_FUNCTION;
	default:
		return HD_TYPE_OTHER;
	}
}

// Tags that make a type DIE; those not in tag_kind's list become OTHER.
static bool is_type_tag(Dwarf_Half tag)
{
	switch (tag) {
	case DW_TAG_base_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_interface_type:
	case DW_TAG_union_type:
	case DW_TAG_array_type:
	case DW_TAG_typedef:
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
	case DW_TAG_immutable_type:
	case DW_TAG_subroutine_type:
	case DW_TAG_unspecified_type:
	case DW_TAG_ptr_to_member_type:
	case DW_TAG_subrange_type:
	case DW_TAG_string_type:
	case DW_TAG_set_type:
	case DW_TAG_file_type:
	case DW_TAG_packed_type:
	case DW_TAG_shared_type:
	case DW_TAG_coarray_type:
	case DW_TAG_dynamic_type:
		return true;
	default:
		return false;
	}
}

static uint8_t qualifier_flag(Dwarf_Half tag)
{
	switch (tag) {
	case DW_TAG_const_type:
	case DW_TAG_immutable_type:
		return FLAG_CONST;
	case DW_TAG_volatile_type:
		return FLAG_VOLATILE;
	case DW_TAG_restrict_type:
		return FLAG_RESTRICT;
	default:
		return FLAG_ATOMIC;
	}
}

// Indexes a type DIE. Structs, classes and unions are entered: *child is
// the frame their members are read in.
static struct hd_error *visit_type(struct build *b, Dwarf_Die die,
				   Dwarf_Half tag, const struct frame *parent,
				   struct frame *child, bool *enter)
{
	struct die_attrs a;
	struct hd_error *err;
	uint64_t key;
	uint32_t id;
	enum hd_type_kind kind = tag_kind(tag);

	if ((err = die_key(b, die, &key)) || (err = read_attrs(b, die, &a)) ||
	    (err = new_type(b, key, kind, &id)))
		return err;
	struct hd_type *t = &b->ix->types[id];
	uint8_t *flags = &b->im->flags[id];
	if (a.has_byte_size)
		t->size = a.byte_size;
	t->declaration = a.declaration;

	switch (kind) {
	case HD_TYPE_POINTER:
		if (tag == DW_TAG_reference_type)
			*flags |= FLAG_REF;
		else if (tag == DW_TAG_rvalue_reference_type)
			*flags |= FLAG_RVREF;
		if (!a.has_byte_size)
			t->size = b->address_size;
		return set_ref(b, FIX_TARGET, id, a.type, &t->target,
			       b->void_id);
	case HD_TYPE_QUALIFIED:
		*flags |= qualifier_flag(tag);
		return set_ref(b, FIX_TARGET, id, a.type, &t->target,
			       b->void_id);
	case HD_TYPE_TYPEDEF:
		if ((err = qualify(b, parent->prefix, a.name, &t->name)))
			return err;
		return set_ref(b, FIX_TARGET, id, a.type, &t->target,
			       b->void_id);
	case HD_TYPE_ARRAY:
		if ((err = array_count(b, die, &t->count)))
			return err;
		t = &b->ix->types[id];
		return set_ref(b, FIX_TARGET, id, a.type, &t->target,
			       b->other_id);
	case HD_TYPE_FUNCTION: {
		if (a.type.kind == REF_NONE)
			return NULL; // returns void: no entry
		struct id_pair p = {id, HD_TYPE_NONE};
		size_t i = b->im->num_fn_returns;
		if (!HD_VEC_PUSH(b->im->fn_returns, b->im->num_fn_returns,
				 b->fn_returns_cap, p))
			return &hd_error_no_memory;
		return set_ref(b, FIX_RETURN, i, a.type,
			       &b->im->fn_returns[i].to, b->void_id);
	}
	case HD_TYPE_BASE:
		t->is_char = t->size == 1 &&
			     (a.encoding == DW_ATE_signed_char ||
			      a.encoding == DW_ATE_unsigned_char ||
			      a.encoding == DW_ATE_UTF);
		t->name = a.name ? intern(b, a.name) : NULL;
		return a.name && !t->name ? &hd_error_no_memory : NULL;
	case HD_TYPE_STRUCT:
	case HD_TYPE_UNION:
		t->is_class = tag == DW_TAG_class_type;
		if ((err = qualify(b, parent->prefix, a.name, &t->name)) ||
		    (err = name_from_spec(b, id, a.spec)) ||
		    (err = stub(b, id, a.signature)))
			return err;
		*enter = true;
		*child = (struct frame){
			.kind = SCOPE_STRUCT,
			.prefix = b->ix->types[id].name ? b->ix->types[id].name
							: parent->prefix,
			.owner = id,
			.pending_start = b->num_pending,
		};
		return NULL;
	case HD_TYPE_ENUM:
		if ((err = qualify(b, parent->prefix, a.name, &t->name)) ||
		    (err = name_from_spec(b, id, a.spec)))
			return err;
		return stub(b, id, a.signature);
	default:
		return qualify(b, NULL, a.name, &t->name);
	}
}

// gcc names a class's vtable pointer "_vptr.Class", clang "_vptr$Class".
static bool is_vptr_name(const char *name)
{
	return name && strncmp(name, "_vptr", 5) == 0 &&
	       (name[5] == '.' || name[5] == '$');
}

static struct hd_error *add_var_decl(struct build *b, Dwarf_Die die,
				     const struct die_attrs *a,
				     const char *prefix)
{
	struct var_decl d = {.type = a->type};
	struct hd_error *err;
	if ((err = die_key(b, die, &d.key)) ||
	    (err = qualify(b, prefix, a->name, &d.name)))
		return err;
	if (!HD_VEC_PUSH(b->var_decls, b->num_var_decls, b->var_decls_cap, d))
		return &hd_error_no_memory;
	return NULL;
}

// Reads a member or base class of the struct of frame parent.
static struct hd_error *visit_member(struct build *b, Dwarf_Die die,
				     Dwarf_Half tag, const struct frame *parent)
{
	struct die_attrs a;
	struct hd_error *err;
	struct hd_type *owner = &b->ix->types[parent->owner];

	if ((err = read_attrs(b, die, &a)))
		return err;
	// A C++ static data member (DWARF 4): defined elsewhere.
	if (tag == DW_TAG_member && a.declaration)
		return add_var_decl(b, die, &a, parent->prefix);
	if (tag == DW_TAG_inheritance &&
	    (a.virtuality || a.bad_member_offset)) {
		// A virtual base has no fixed offset; the class reaches it
		// through its vtable, so it has one.
		owner->has_vptr = true;
		return NULL;
	}
	if (a.bad_member_offset)
		return NULL;
	struct pending_member p = {
		.m = {
			.is_base = tag == DW_TAG_inheritance,
			.bitfield = a.has_bit_size,
		},
		.type = a.type,
	};
	if (a.has_member_offset)
		p.m.offset = a.member_offset;
	else if (a.has_data_bit_offset)
		p.m.offset = a.data_bit_offset / 8;
	if (tag == DW_TAG_member && a.name) {
		if (!(p.m.name = intern(b, a.name)))
			return &hd_error_no_memory;
		if (is_vptr_name(a.name))
			owner->has_vptr = true;
	}
	if (!HD_VEC_PUSH(b->pending, b->num_pending, b->pending_cap, p))
		return &hd_error_no_memory;
	return NULL;
}

// Moves the members of a finished struct from the pending list to the
// index, where they are contiguous.
static struct hd_error *finish_struct(struct build *b, const struct frame *f)
{
	struct hd_type_index *ix = b->ix;
	size_t n = b->num_pending - f->pending_start;
	struct hd_error *err;

	if (n == 0)
		return NULL;
	if (ix->num_members + n > UINT32_MAX)
		return hd_error_file(HD_ERROR_FORMAT, b->path,
				     "too many members");
	if (!hd_vec_reserve((void **)&ix->members, &b->members_cap,
			    ix->num_members, sizeof(*ix->members),
			    ix->num_members + n))
		return &hd_error_no_memory;
	struct hd_type *t = &ix->types[f->owner];
	t->first_member = ix->num_members;
	t->num_members = n;
	for (size_t i = 0; i < n; i++) {
		const struct pending_member *p =
			&b->pending[f->pending_start + i];
		uint32_t index = ix->num_members++;
		ix->members[index] = p->m;
		if ((err = set_ref(b, FIX_MEMBER, index, p->type,
				   &ix->members[index].type, b->other_id)))
			return err;
	}
	b->num_pending = f->pending_start;
	return NULL;
}

// -------------------------------------------------------------- variables

// Name and type of the DIE at key, read directly: for a definition whose
// declaration we did not record (an abstract local variable).
static struct hd_error *origin_attrs(struct build *b, uint64_t key,
				     struct die_attrs *a)
{
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;
	memset(a, 0, sizeof(*a));
	for (int hops = 0; hops < 8; hops++) {
		Dwarf_Die die;
		int rc = dwarf_offdie_b(b->dbg, key & ~TYPES_SECTION_BIT,
					b->is_info, &die, &derr);
		if (rc != DW_DLV_OK) {
			drop_error(b, derr);
			return NULL;
		}
		struct die_attrs o;
		err = read_attrs(b, die, &o);
		dwarf_dealloc_die(die);
		if (err)
			return err;
		if (!a->name)
			a->name = o.name;
		if (a->type.kind == REF_NONE)
			a->type = o.type;
		if ((a->name && a->type.kind != REF_NONE) ||
		    o.spec.kind != REF_DIE)
			return NULL;
		key = o.spec.value;
	}
	return NULL;
}

static const struct var_decl *find_var_decl(struct build *b, uint64_t key)
{
	size_t lo = 0, hi = b->num_var_decls;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->var_decls[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->num_var_decls && b->var_decls[lo].key == key
		       ? &b->var_decls[lo]
		       : NULL;
}

// The name of the function whose frame is f: its own, or that of the
// declaration or abstract instance it completes.
static struct hd_error *function_name(struct build *b, struct frame *f,
				      const char **ret)
{
	struct hd_error *err;
	if (!f->func_name_done) {
		struct die_attrs a;
		if ((err = read_attrs(b, f->die, &a)))
			return err;
		if (!a.name && a.spec.kind == REF_DIE &&
		    (err = origin_attrs(b, a.spec.value, &a)))
			return err;
		if (a.name && !(f->func_name = intern(b, a.name)))
			return &hd_error_no_memory;
		f->func_name_done = true;
	}
	*ret = f->func_name;
	return NULL;
}

// Cheap test for the many locals of a function: only a static one has a
// DW_OP_addr location. Saves reading every attribute of every local.
static bool local_may_be_static(struct build *b, Dwarf_Die die)
{
	Dwarf_Attribute attr;
	Dwarf_Error derr = NULL;
	Dwarf_Half form;
	bool ret = false;

	int rc = dwarf_attr(die, DW_AT_location, &attr, &derr);
	if (rc != DW_DLV_OK) {
		drop_error(b, derr);
		return false;
	}
	if (dwarf_whatform(attr, &form, &derr) == DW_DLV_OK) {
		const uint8_t *p;
		uint64_t len;
		Dwarf_Block *block;
		if (attr_expr(b, attr, form, &p, &len, &block)) {
			ret = len > 0 && (p[0] == DW_OP_addr ||
					  p[0] == DW_OP_addrx ||
					  p[0] == DW_OP_GNU_addr_index);
			if (block)
				dwarf_dealloc(b->dbg, block, DW_DLA_BLOCK);
		}
	} else {
		drop_error(b, derr);
	}
	dwarf_dealloc_attribute(attr);
	return ret;
}

static struct frame *enclosing_function(struct build *b)
{
	for (size_t i = b->num_frames; i-- > 0;) {
		if (b->frames[i].kind == SCOPE_FUNCTION)
			return &b->frames[i];
	}
	return NULL;
}

// "func::name" for a static local.
static struct hd_error *local_name(struct build *b, const char *func,
				   const char *name, const char **ret)
{
	bool cplus = b->cplus;
	b->cplus = true; // "::" even in C
	struct hd_error *err = qualify(b, func, name, ret);
	b->cplus = cplus;
	return err;
}

static struct hd_error *visit_variable(struct build *b, Dwarf_Die die,
				       struct frame *parent)
{
	struct die_attrs a;
	struct hd_error *err;
	bool local = parent->kind == SCOPE_FUNCTION ||
		     parent->kind == SCOPE_BLOCK;

	if (local && !local_may_be_static(b, die))
		return NULL;
	if ((err = read_attrs(b, die, &a)))
		return err;
	if (parent->kind == SCOPE_STRUCT) // a C++ static member (DWARF 5)
		return add_var_decl(b, die, &a, parent->prefix);
	if (!a.has_addr) {
		if (a.declaration && a.name && !local)
			return add_var_decl(b, die, &a, parent->prefix);
		return NULL;
	}
	if (!a.name && a.spec.kind != REF_DIE)
		return NULL;
	// Address 0 (or a tombstone) is a variable the linker discarded
	// (--gc-sections) or one in a section never loaded (glibc's link
	// warnings): nothing in memory to type.
	if (a.addr == 0 || a.addr >= UINT64_MAX - 1)
		return NULL;

	// Static locals are named after their function: "f::count".
	const char *func = NULL;
	if (local) {
		struct frame *f = enclosing_function(b);
		if (f && (err = function_name(b, f, &func)))
			return err;
	}
	struct hd_variable v = {.addr = a.addr, .type = HD_TYPE_NONE};
	if (a.name) {
		err = func ? local_name(b, func, a.name, &v.name)
			   : qualify(b, local ? NULL : parent->prefix, a.name,
				     &v.name);
		if (err)
			return err;
	} else {
		struct var_spec vs = {
			.key = a.spec.value,
			.func = func,
			.index = b->ix->num_variables,
			.own_type = a.type.kind != REF_NONE,
		};
		if (!HD_VEC_PUSH(b->var_specs, b->num_var_specs,
				 b->var_specs_cap, vs))
			return &hd_error_no_memory;
	}
	size_t index = b->ix->num_variables;
	if (!HD_VEC_PUSH(b->ix->variables, b->ix->num_variables,
			 b->variables_cap, v))
		return &hd_error_no_memory;
	if (a.type.kind == REF_NONE) // maybe the declaration's, later
		return NULL;
	return set_ref(b, FIX_VARIABLE, index, a.type,
		       &b->ix->variables[index].type, b->other_id);
}

// Names (and types, when they have none) the definitions that complete a
// declaration: from the declarations recorded during the walk, else
// (abstract instances of locals, which are not recorded) from the DIE.
static struct hd_error *resolve_var_specs(struct build *b)
{
	struct hd_error *err;
	for (size_t i = 0; i < b->num_var_specs; i++) {
		const struct var_spec *vs = &b->var_specs[i];
		struct hd_variable *v = &b->ix->variables[vs->index];
		const struct var_decl *d = find_var_decl(b, vs->key);
		const char *name = NULL;
		struct ref type;
		if (d) {
			name = d->name;
			type = d->type;
		} else {
			struct die_attrs o;
			b->is_info = !(vs->key & TYPES_SECTION_BIT);
			if ((err = origin_attrs(b, vs->key, &o)))
				return err;
			if (o.name && !(name = intern(b, o.name)))
				return &hd_error_no_memory;
			type = o.type;
		}
		if (name && vs->func &&
		    (err = local_name(b, vs->func, name, &name)))
			return err;
		v->name = name; // still NULL: dropped
		if (!vs->own_type && type.kind != REF_NONE &&
		    (err = set_ref(b, FIX_VARIABLE, vs->index, type, &v->type,
				   b->other_id)))
			return err;
	}
	return NULL;
}

// -------------------------------------------------------------- the walk

static struct hd_error *visit_namespace(struct build *b, Dwarf_Die die,
					const struct frame *parent,
					struct frame *child, bool *enter)
{
	struct die_attrs a;
	struct hd_error *err;
	if ((err = read_attrs(b, die, &a)))
		return err;
	*enter = true;
	*child = (struct frame){.kind = SCOPE_NAMESPACE};
	// Inline namespaces (std::__cxx11) stay in the name, as in DWARF 4
	// (which cannot mark them) and in demangled names (vtable symbols):
	// "std::__cxx11::basic_string<...>". std::string is a typedef in std.
	return qualify(b, parent->prefix,
		       a.name ? a.name : "(anonymous namespace)",
		       &child->prefix);
}

// Looks at one DIE. *enter asks for its children to be visited in the
// scope *child.
static struct hd_error *visit(struct build *b, Dwarf_Die die,
			      struct frame *parent, struct frame *child,
			      bool *enter)
{
	Dwarf_Half tag;
	Dwarf_Error derr = NULL;

	*enter = false;
	if (dwarf_tag(die, &tag, &derr) != DW_DLV_OK)
		return dw_error(b, derr, "reading DIE tag");
	if (is_type_tag(tag))
		return visit_type(b, die, tag, parent, child, enter);
	switch (tag) {
	case DW_TAG_member:
	case DW_TAG_inheritance:
		if (parent->kind == SCOPE_STRUCT)
			return visit_member(b, die, tag, parent);
		return NULL;
	case DW_TAG_variable:
		return visit_variable(b, die, parent);
	case DW_TAG_namespace:
	case DW_TAG_module:
		return visit_namespace(b, die, parent, child, enter);
	case DW_TAG_subprogram:
		// A method declaration's children are only parameters; a
		// function's may hold static locals and local types.
		if (parent->kind == SCOPE_STRUCT)
			return NULL;
		*enter = true;
		*child = (struct frame){.kind = SCOPE_FUNCTION,
					.prefix = parent->prefix};
		return NULL;
	case DW_TAG_lexical_block:
		// Inlined subroutines and call sites are never entered: their
		// static locals and types are in the abstract instance.
		if (parent->kind != SCOPE_FUNCTION &&
		    parent->kind != SCOPE_BLOCK)
			return NULL;
		*enter = true;
		*child = (struct frame){.kind = SCOPE_BLOCK,
					.prefix = parent->prefix};
		return NULL;
	default:
		return NULL;
	}
}

static struct hd_error *finish_frame(struct build *b, const struct frame *f)
{
	return f->kind == SCOPE_STRUCT ? finish_struct(b, f) : NULL;
}

// Walks all DIEs below a unit DIE depth first. frames[0] is the unit; the
// others hold the ancestors of the current DIE.
static struct hd_error *index_unit(struct build *b, Dwarf_Die unit_die)
{
	Dwarf_Die die = NULL, next;
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;

	b->num_frames = 0;
	b->num_pending = 0;
	struct frame root = {.kind = SCOPE_UNIT};
	if (!HD_VEC_PUSH(b->frames, b->num_frames, b->frames_cap, root))
		return &hd_error_no_memory;
	int rc = dwarf_child(unit_die, &die, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(b, derr, "reading compilation unit");
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	Dwarf_Off last = 0; // offset of the last DIE visited
	while (die) {
		struct frame child;
		bool enter;
		Dwarf_Off here = 0;
		if (dwarf_dieoffset(die, &here, NULL) == DW_DLV_OK && here > last)
			last = here;
		if ((err = visit(b, die, &b->frames[b->num_frames - 1], &child,
				 &enter)))
			break;
		if (enter) {
			rc = dwarf_child(die, &next, &derr);
			if (rc == DW_DLV_ERROR) {
				err = dw_error(b, derr, "reading DIE children");
				break;
			}
			if (rc == DW_DLV_OK) {
				child.die = die;
				if (!HD_VEC_PUSH(b->frames, b->num_frames,
						 b->frames_cap, child)) {
					dwarf_dealloc_die(next);
					err = &hd_error_no_memory;
					break;
				}
				die = next;
				continue;
			}
			if ((err = finish_frame(b, &child)))
				break;
		}
		// No children to enter: move to the next sibling, climbing
		// back up past ancestors that have none left.
		for (;;) {
			Dwarf_Off there = 0;
			rc = dwarf_siblingof_b(b->dbg, die, b->is_info, &next,
					       &derr);
			dwarf_dealloc_die(die);
			die = NULL;
			if (rc == DW_DLV_ERROR) {
				err = dw_error(b, derr, "reading DIE siblings");
				break;
			}
			// libdwarf follows DW_AT_sibling as written. The walk
			// is in file order, so each DIE must lie after the
			// last one visited; a sibling that does not (corrupt)
			// would visit DIEs again, for ever.
			if (rc == DW_DLV_OK &&
			    (dwarf_dieoffset(next, &there, NULL) != DW_DLV_OK ||
			     there <= last)) {
				dwarf_dealloc_die(next);
				err = hd_error_file(HD_ERROR_FORMAT, b->path,
						    "corrupt DWARF: a DW_AT_sibling leads back to 0x%llx, at or before the DIE at 0x%llx already read",
						    (unsigned long long)there,
						    (unsigned long long)last);
				break;
			}
			if (rc == DW_DLV_OK) {
				die = next;
				break;
			}
			if (b->num_frames == 1)
				break;
			struct frame f = b->frames[--b->num_frames];
			die = f.die;
			if ((err = finish_frame(b, &f)))
				break;
		}
		if (err)
			break;
	}
	if (die)
		dwarf_dealloc_die(die);
	while (b->num_frames > 1)
		dwarf_dealloc_die(b->frames[--b->num_frames].die);
	b->num_frames = 0;
	return err;
}

static bool is_c_language(Dwarf_Unsigned lang)
{
	switch (lang) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
	case DW_LANG_ObjC:
	case 0x2c: // DW_LANG_C17 (DWARF 6), not in this libdwarf
		return true;
	default:
		return false;
	}
}

// Iterates over the units of .debug_info (is_info) or .debug_types.
// With a filter, only the units of the source file asked for are read.
static bool unit_matches(struct build *b, Dwarf_Die unit_die, bool is_info)
{
	char *name = NULL;
	Dwarf_Error derr = NULL;
	if (!is_info || dwarf_diename(unit_die, &name, &derr) != DW_DLV_OK) {
		drop_error(b, derr);
		return false;
	}
	size_t n = strlen(name), m = strlen(b->cu_suffix);
	return n >= m && strcmp(name + n - m, b->cu_suffix) == 0;
}

static struct hd_error *index_section(struct build *b, bool is_info,
				      size_t *num_units)
{
	Dwarf_Error derr = NULL;
	struct hd_error *err;

	b->is_info = is_info;
	for (;;) {
		Dwarf_Unsigned unit_len, type_off, next_off;
		Dwarf_Half ext_size, unit_type;
		Dwarf_Off abbrev_off;
		Dwarf_Sig8 sig;
		Dwarf_Die unit_die;

		int rc = dwarf_next_cu_header_d(
			b->dbg, is_info, &unit_len, &b->version, &abbrev_off,
			&b->address_size, &b->offset_size, &ext_size, &sig,
			&type_off, &next_off, &unit_type, &derr);
		if (rc == DW_DLV_NO_ENTRY)
			return NULL;
		if (rc != DW_DLV_OK)
			return dw_error(b, derr, "reading unit header");
		(*num_units)++;
		rc = dwarf_siblingof_b(b->dbg, NULL, is_info, &unit_die, &derr);
		if (rc == DW_DLV_ERROR)
			return dw_error(b, derr, "reading unit DIE");
		if (rc == DW_DLV_NO_ENTRY)
			continue;

		if (b->cu_suffix && !unit_matches(b, unit_die, is_info)) {
			dwarf_dealloc_die(unit_die);
			continue;
		}
		Dwarf_Unsigned lang = 0;
		rc = dwarf_srclang(unit_die, &lang, &derr);
		if (rc == DW_DLV_ERROR)
			drop_error(b, derr);
		// No DW_AT_language: C, unless the unit is a type unit,
		// which only C++ compilers emit.
		b->cplus = rc == DW_DLV_OK
				   ? !is_c_language(lang)
				   : !is_info || unit_type == DW_UT_type;

		Dwarf_Off unit_off, unit_size;
		err = NULL;
		if ((!is_info || unit_type == DW_UT_type ||
		     unit_type == DW_UT_split_type) &&
		    dwarf_die_CU_offset_range(unit_die, &unit_off, &unit_size,
					      &derr) == DW_DLV_OK) {
			struct type_unit u;
			memcpy(&u.sig, sig.signature, sizeof(u.sig));
			u.key = unit_off + type_off;
			if (!is_info)
				u.key |= TYPES_SECTION_BIT;
			if (!HD_VEC_PUSH(b->units, b->num_units, b->units_cap,
					 u))
				err = &hd_error_no_memory;
		} else {
			drop_error(b, derr);
		}
		if (!err)
			err = index_unit(b, unit_die);
		dwarf_dealloc_die(unit_die);
		if (err)
			return err;
	}
}

// -------------------------------------------------------------- resolving

static int cmp_key_id(const void *a, const void *b)
{
	const struct key_id *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_unit(const void *a, const void *b)
{
	const struct type_unit *x = a, *y = b;
	return x->sig < y->sig ? -1 : x->sig > y->sig;
}

static uint32_t key_to_id(const struct build *b, uint64_t key)
{
	size_t lo = 0, hi = b->num_keys;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->keys[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->num_keys && b->keys[lo].key == key ? b->keys[lo].id
							  : HD_TYPE_NONE;
}

static uint64_t sig_to_key(const struct build *b, uint64_t sig)
{
	size_t lo = 0, hi = b->num_units;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->units[mid].sig < sig)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->num_units && b->units[lo].sig == sig ? b->units[lo].key
							    : UINT64_MAX;
}

static struct hd_error *resolve_fixups(struct build *b)
{
	struct hd_type_index *ix = b->ix;

	// DIE order is offset order, so this is already sorted unless a
	// producer wrote something odd.
	for (size_t i = 1; i < b->num_keys; i++) {
		if (b->keys[i - 1].key > b->keys[i].key) {
			hd_qsort(b->keys, b->num_keys, sizeof(*b->keys),
			      cmp_key_id);
			break;
		}
	}
	if (b->num_units > 1)
		hd_qsort(b->units, b->num_units, sizeof(*b->units), cmp_unit);
	for (size_t i = 0; i < b->num_fixups; i++) {
		const struct fixup *f = &b->fixups[i];
		uint64_t key = f->kind == REF_SIG ? sig_to_key(b, f->value)
						  : f->value;
		uint32_t id = key == UINT64_MAX ? HD_TYPE_NONE
						: key_to_id(b, key);
		// Not a type DIE we indexed (inside something we skip, or a
		// type unit we do not have): an opaque type.
		if (id == HD_TYPE_NONE)
			id = b->other_id;
		switch (f->owner) {
		case FIX_TARGET:
			ix->types[f->index].target = id;
			break;
		case FIX_MEMBER:
			ix->members[f->index].type = id;
			break;
		case FIX_VARIABLE:
			ix->variables[f->index].type = id;
			break;
		case FIX_RETURN:
			b->im->fn_returns[f->index].to = id;
			break;
		case FIX_SPEC:
			if (id != b->other_id && ix->types[id].name)
				ix->types[f->index].name = ix->types[id].name;
			break;
		case FIX_SIGNATURE:
			if (id != b->other_id && id != f->index) {
				struct id_pair p = {f->index, id};
				if (!HD_VEC_PUSH(b->stubs, b->num_stubs,
						 b->stubs_cap, p))
					return &hd_error_no_memory;
			}
			break;
		}
	}
	// Stubs are named after their type once every name is final.
	for (size_t i = 0; i < b->num_stubs; i++) {
		struct hd_type *t = &ix->types[b->stubs[i].from];
		if (!t->name)
			t->name = ix->types[b->stubs[i].to].name;
	}
	return NULL;
}

static bool is_aggregate(enum hd_type_kind kind)
{
	return kind == HD_TYPE_STRUCT || kind == HD_TYPE_UNION ||
	       kind == HD_TYPE_ENUM;
}

// Maps every declaration to the first definition of the same kind and
// qualified name, and fills the name map hd_type_find_struct uses.
static struct hd_error *resolve_declarations(struct build *b)
{
	struct hd_type_index *ix = b->ix;
	struct impl *im = b->im;
	size_t num_decls = 0, cap = 0;

	for (size_t i = 0; i < ix->num_types; i++) {
		const struct hd_type *t = &ix->types[i];
		if (t->name && is_aggregate(t->kind) && !t->declaration &&
		    !name_map_add(&im->names, ix->types, i))
			return &hd_error_no_memory;
	}
	// Stubs of type units first (already sorted by stub: fixups are in
	// DIE order), then declarations by name.
	size_t s = 0;
	for (size_t i = 0; i < ix->num_types; i++) {
		const struct hd_type *t = &ix->types[i];
		struct id_pair p = {i, HD_TYPE_NONE};
		while (s < b->num_stubs && b->stubs[s].from < i)
			s++;
		if (s < b->num_stubs && b->stubs[s].from == i)
			p.to = b->stubs[s].to;
		else if (t->name && t->declaration && is_aggregate(t->kind))
			p.to = name_map_get(&im->names, ix->types, t->name,
					    strlen(t->name), type_class(t));
		if (p.to != HD_TYPE_NONE &&
		    !HD_VEC_PUSH(im->decl_defs, num_decls, cap, p))
			return &hd_error_no_memory;
	}
	im->num_decl_defs = num_decls;
	// Typedefs of complete structs last, so hd_type_find_struct can fall
	// back on them (typedef struct {...} session_t;).
	for (size_t i = 0; i < ix->num_types; i++) {
		const struct hd_type *t = &ix->types[i];
		if (!t->name || t->kind != HD_TYPE_TYPEDEF)
			continue;
		uint32_t s = hd_type_strip(ix, i);
		if (s != HD_TYPE_NONE &&
		    (ix->types[s].kind == HD_TYPE_STRUCT ||
		     ix->types[s].kind == HD_TYPE_UNION) &&
		    !ix->types[s].declaration &&
		    !name_map_add(&im->names, ix->types, i))
			return &hd_error_no_memory;
	}
	return NULL;
}

// Size of type from its chain: typedefs and qualifiers take their
// target's, arrays count times their element's.
static uint64_t chain_size(const struct hd_type_index *ix, uint32_t type)
{
	uint64_t mult = 1;
	for (int hops = 0; hops < MAX_TYPE_HOPS; hops++) {
		if (type >= ix->num_types)
			return 0;
		const struct hd_type *t = &ix->types[type];
		uint64_t size;
		switch (t->kind) {
		case HD_TYPE_TYPEDEF:
		case HD_TYPE_QUALIFIED:
			if (t->size)
				break;
			type = t->target;
			continue;
		case HD_TYPE_ARRAY:
			// Some producers size the array itself.
			if (t->size)
				break;
			if (t->count == 0 ||
			    __builtin_mul_overflow(mult, t->count, &mult))
				return 0;
			type = t->target;
			continue;
		default:
			if (t->declaration && !t->size) {
				uint32_t def = decl_definition(ix, type);
				if (def != HD_TYPE_NONE && def != type) {
					type = def;
					continue;
				}
			}
			break;
		}
		return __builtin_mul_overflow(mult, t->size, &size) ? 0 : size;
	}
	return 0;
}

static void compute_sizes(struct hd_type_index *ix)
{
	for (size_t i = 0; i < ix->num_types; i++) {
		struct hd_type *t = &ix->types[i];
		if (!t->size && (t->kind == HD_TYPE_TYPEDEF ||
				 t->kind == HD_TYPE_QUALIFIED ||
				 t->kind == HD_TYPE_ARRAY))
			t->size = chain_size(ix, i);
	}
}

// A class has a vtable pointer when a base class has one (gcc and clang
// put _vptr only in the first class of a hierarchy). Bases may come after
// their derived classes in the file, hence the fixed point.
static void propagate_vptr(struct hd_type_index *ix)
{
	bool changed = true;
	for (int round = 0; changed && round < MAX_NESTING; round++) {
		changed = false;
		for (size_t i = 0; i < ix->num_types; i++) {
			struct hd_type *t = &ix->types[i];
			if (t->kind != HD_TYPE_STRUCT || t->has_vptr)
				continue;
			for (uint32_t j = 0; j < t->num_members; j++) {
				const struct hd_member *m =
					&ix->members[t->first_member + j];
				if (!m->is_base)
					continue;
				uint32_t base = hd_type_strip(ix, m->type);
				if (base != HD_TYPE_NONE &&
				    ix->types[base].has_vptr) {
					t->has_vptr = true;
					changed = true;
					break;
				}
			}
		}
	}
}

// libstdc++ keeps a node's value, a make_shared object, in raw storage:
// __gnu_cxx::__aligned_membuf<T> and __aligned_buffer<T> hold one member,
// _M_storage, an array of sizeof(T) bytes. Typed as the T it holds, the
// value's members are named and its pointers typed (the std::string in a
// map node, the object in a shared_ptr's control block).
static void see_through_storage(struct hd_type_index *ix)
{
	static const char *const holders[] = {"__gnu_cxx::__aligned_membuf<",
					      "__gnu_cxx::__aligned_buffer<"};
	for (size_t i = 0; i < ix->num_types; i++) {
		struct hd_type *t = &ix->types[i];
		if (t->kind != HD_TYPE_STRUCT || !t->name)
			continue;
		size_t pre = 0;
		for (size_t h = 0; h < sizeof(holders) / sizeof(holders[0]); h++)
			if (!strncmp(t->name, holders[h], strlen(holders[h])))
				pre = strlen(holders[h]);
		size_t len = t->name ? strlen(t->name) : 0;
		if (!pre || len < pre + 2 || t->name[len - 1] != '>')
			continue;
		char arg[1024];
		size_t n = len - 1 - pre;
		while (n && t->name[pre + n - 1] == ' ')
			n--;
		if (n >= sizeof(arg))
			continue;
		memcpy(arg, t->name + pre, n);
		arg[n] = '\0';
		// __aligned_buffer also derives from an empty aligned_storage.
		struct hd_member *m = NULL;
		for (uint32_t k = 0; k < t->num_members; k++) {
			struct hd_member *c = &ix->members[t->first_member + k];
			if (!c->is_base && c->name && !strcmp(c->name, "_M_storage"))
				m = c;
		}
		uint32_t inner = hd_type_find_struct(ix, arg);
		if (!m || inner == HD_TYPE_NONE || m->offset != 0 ||
		    ix->types[inner].size != t->size)
			continue;
		m->type = inner;
	}
}

static int cmp_variable(const void *a, const void *b)
{
	const struct hd_variable *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

// Sorts by address and drops duplicates (the same static local seen in
// an abstract and a concrete instance) and variables left without a name.
static void sort_variables(struct hd_type_index *ix)
{
	if (ix->num_variables > 1)
		hd_qsort(ix->variables, ix->num_variables,
		      sizeof(*ix->variables), cmp_variable);
	size_t n = 0;
	for (size_t i = 0; i < ix->num_variables; i++) {
		const struct hd_variable *v = &ix->variables[i];
		if (!v->name)
			continue;
		if (n > 0 && ix->variables[n - 1].addr == v->addr &&
		    ix->variables[n - 1].name == v->name)
			continue;
		ix->variables[n++] = *v;
	}
	ix->num_variables = n;
}

// Gives back the unused tail of a grown array.
static void *shrink(void *p, size_t n, size_t size)
{
	if (!p || n == 0)
		return p;
	void *q = realloc(p, n * size);
	return q ? q : p;
}

static void build_free(struct build *b)
{
	intern_free(&b->strings);
	free(b->keys);
	free(b->fixups);
	free(b->pending);
	free(b->var_decls);
	free(b->var_specs);
	free(b->units);
	free(b->stubs);
	free(b->frames);
	free(b->namebuf);
}

// The two types every index has, before any from DWARF.
static struct hd_error *add_builtin_types(struct build *b)
{
	struct hd_error *err;
	if ((err = new_type(b, UINT64_MAX, HD_TYPE_VOID, &b->void_id)) ||
	    (err = new_type(b, UINT64_MAX, HD_TYPE_OTHER, &b->other_id)))
		return err;
	b->ix->types[b->void_id].name = intern(b, "void");
	b->ix->types[b->other_id].name = intern(b, "?");
	if (!b->ix->types[b->void_id].name || !b->ix->types[b->other_id].name)
		return &hd_error_no_memory;
	return NULL;
}

static struct hd_error *index_file(struct build *b)
{
	struct hd_error *err;
	size_t num_units = 0;

	if ((err = add_builtin_types(b)) ||
	    (err = index_section(b, true, &num_units)) ||
	    (err = index_section(b, false, &num_units)))
		return err;
	if (num_units == 0)
		return hd_error_file(HD_ERROR_NOT_FOUND, b->path,
				     "no DWARF debug info");
	if ((err = resolve_var_specs(b)))
		return err;
	if ((err = resolve_fixups(b)) || (err = resolve_declarations(b)))
		return err;
	compute_sizes(b->ix);
	propagate_vptr(b->ix);
	see_through_storage(b->ix);
	sort_variables(b->ix);

	struct hd_type_index *ix = b->ix;
	ix->types = shrink(ix->types, ix->num_types, sizeof(*ix->types));
	ix->members = shrink(ix->members, ix->num_members,
			     sizeof(*ix->members));
	ix->variables = shrink(ix->variables, ix->num_variables,
			       sizeof(*ix->variables));
	b->im->flags = shrink(b->im->flags, ix->num_types, 1);
	b->im->decl_defs = shrink(b->im->decl_defs, b->im->num_decl_defs,
				  sizeof(*b->im->decl_defs));
	b->im->fn_returns = shrink(b->im->fn_returns, b->im->num_fn_returns,
				   sizeof(*b->im->fn_returns));
	return NULL;
}

struct hd_error *hd_type_index_build(const char *path,
				     struct hd_type_index **ret)
{
	return hd_type_index_build_filtered(path, NULL, ret);
}

struct hd_error *hd_type_index_build_filtered(const char *path,
					      const char *cu_suffix,
					      struct hd_type_index **ret)
{
	struct build b = {.path = path, .address_size = 8, .cu_suffix = cu_suffix};
	struct hd_error *err;

	*ret = NULL;
	b.ix = calloc(1, sizeof(*b.ix));
	b.im = calloc(1, sizeof(*b.im));
	if (!b.ix || !b.im) {
		free(b.ix);
		free(b.im);
		return &hd_error_no_memory;
	}
	b.ix->impl = b.im;

	int fd;
	err = hd_dwarf_open(path, &fd, &b.dbg);
	if (err)
		goto out;
	err = index_file(&b);
	hd_dwarf_close(fd, b.dbg);
out:
	build_free(&b);
	if (err) {
		hd_type_index_destroy(b.ix);
		return err;
	}
	*ret = b.ix;
	return NULL;
}

void hd_type_index_destroy(struct hd_type_index *ix)
{
	if (!ix)
		return;
	struct impl *im = ix->impl;
	if (im) {
		pool_free(im->pool);
		free(im->names.slots);
		free(im->flags);
		free(im->decl_defs);
		free(im->fn_returns);
		free(im);
	}
	free(ix->types);
	free(ix->members);
	free(ix->variables);
	free(ix);
}

// ============================================================== queries

uint32_t hd_type_find_struct(const struct hd_type_index *ix, const char *name)
{
	static const struct {
		const char *word;
		enum name_class cls;
	} keywords[] = {
		{"struct ", CLASS_STRUCT},
		{"class ", CLASS_STRUCT},
		{"union ", CLASS_UNION},
	};
	const struct name_map *m = &impl_of(ix)->names;
	const struct hd_type *types = ix->types;
	int only = -1;

	if (!name)
		return HD_TYPE_NONE;
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++) {
		size_t len = strlen(keywords[i].word);
		if (strncmp(name, keywords[i].word, len) == 0) {
			name += len;
			only = keywords[i].cls;
			break;
		}
	}
	size_t len = strlen(name);
	uint32_t id = HD_TYPE_NONE;
	if (only != CLASS_UNION)
		id = name_map_get(m, types, name, len, CLASS_STRUCT);
	if (id == HD_TYPE_NONE && only != CLASS_STRUCT)
		id = name_map_get(m, types, name, len, CLASS_UNION);
	if (id != HD_TYPE_NONE)
		return id;
	if (only == -1) {
		id = name_map_get(m, types, name, len, CLASS_TYPEDEF);
		if (id != HD_TYPE_NONE)
			return hd_type_strip(ix, id);
	}
	return HD_TYPE_NONE;
}

// ------------------------------------------------------------ type names

// A declarator built from the inside out: "*", "(*)[4]", "*const".
struct declarator {
	char buf[256];
	size_t len;
};

static void decl_prepend(struct declarator *d, const char *s)
{
	size_t n = strlen(s);
	if (d->len + n >= sizeof(d->buf))
		return; // absurdly long: keep what we have
	memmove(d->buf + n, d->buf, d->len + 1);
	memcpy(d->buf, s, n);
	d->len += n;
}

static void decl_append(struct declarator *d, const char *s)
{
	size_t n = strlen(s);
	if (d->len + n >= sizeof(d->buf))
		return;
	memcpy(d->buf + d->len, s, n + 1);
	d->len += n;
}

// Arrays and functions bind tighter than pointers: int (*)[4].
static void decl_wrap_pointer(struct declarator *d)
{
	if (d->len && (d->buf[0] == '*' || d->buf[0] == '&')) {
		decl_prepend(d, "(");
		decl_append(d, ")");
	}
}

static const char *qualifier_word(uint8_t flags)
{
	if (flags & FLAG_CONST)
		return "const";
	if (flags & FLAG_VOLATILE)
		return "volatile";
	if (flags & FLAG_RESTRICT)
		return "restrict";
	return "_Atomic";
}

// The kind after any qualifiers starting at type.
static enum hd_type_kind unqualified_kind(const struct hd_type_index *ix,
					  uint32_t type)
{
	for (int hops = 0; hops < MAX_TYPE_HOPS && type < ix->num_types;
	     hops++) {
		if (ix->types[type].kind != HD_TYPE_QUALIFIED)
			return ix->types[type].kind;
		type = ix->types[type].target;
	}
	return HD_TYPE_OTHER;
}

// The name a type goes by where the declarator stops: "int", "struct
// cache" (C), "demo::Derived" (C++).
static void base_name(const struct hd_type_index *ix, uint32_t type,
		      char *buf, size_t len)
{
	const struct hd_type *t = &ix->types[type];
	const char *keyword = NULL;
	if (t->kind == HD_TYPE_STRUCT)
		keyword = t->is_class ? "class" : "struct";
	else if (t->kind == HD_TYPE_UNION)
		keyword = "union";
	else if (t->kind == HD_TYPE_ENUM)
		keyword = "enum";
	if (keyword && !t->name)
		snprintf(buf, len, "%s <anonymous>", keyword);
	else if (keyword && !(type_flags(ix, type) & FLAG_CPLUS))
		snprintf(buf, len, "%s %s", keyword, t->name);
	else
		snprintf(buf, len, "%s", t->name ? t->name : "?");
}

void hd_type_name(const struct hd_type_index *ix, uint32_t type, char *buf,
		  size_t len)
{
	struct declarator d = {.len = 0};
	char quals[64] = "", base[256] = "?";
	const struct impl *im = impl_of(ix);

	if (!len)
		return;
	d.buf[0] = '\0';
	for (int hops = 0; hops < MAX_TYPE_HOPS; hops++) {
		if (type == HD_TYPE_NONE) {
			snprintf(base, sizeof(base), "void");
			break;
		}
		if (type >= ix->num_types)
			break;
		const struct hd_type *t = &ix->types[type];
		uint8_t flags = type_flags(ix, type);
		if (t->kind == HD_TYPE_POINTER) {
			decl_prepend(&d, flags & FLAG_RVREF ? "&&"
					 : flags & FLAG_REF ? "&"
							    : "*");
			type = t->target;
		} else if (t->kind == HD_TYPE_QUALIFIED) {
			const char *word = qualifier_word(flags);
			if (unqualified_kind(ix, t->target) ==
			    HD_TYPE_POINTER) {
				// int *const: the qualifier follows the star.
				if (d.len && d.buf[0] != '[' && d.buf[0] != '(')
					decl_prepend(&d, " ");
				decl_prepend(&d, word);
			} else if (!strstr(quals, word) &&
				   strlen(quals) + strlen(word) + 2 <
					   sizeof(quals)) {
				// const int, const char[16]; a const array of
				// const char is said once.
				strcat(quals, word);
				strcat(quals, " ");
			}
			type = t->target;
		} else if (t->kind == HD_TYPE_ARRAY) {
			char dim[32] = "[]";
			if (t->count)
				snprintf(dim, sizeof(dim), "[%" PRIu64 "]",
					 t->count);
			decl_wrap_pointer(&d);
			decl_append(&d, dim);
			type = t->target;
		} else if (t->kind == HD_TYPE_FUNCTION) {
			decl_wrap_pointer(&d);
			decl_append(&d, "(...)");
			type = pair_lookup(im->fn_returns, im->num_fn_returns,
					   type);
		} else {
			base_name(ix, type, base, sizeof(base));
			break;
		}
	}
	const char *sep = !d.len || d.buf[0] == '[' ? "" : " ";
	snprintf(buf, len, "%s%s%s%s", quals, base, sep, d.buf);
}

// ------------------------------------------------------------ member paths

static int path_append(char *buf, size_t len, size_t *pos, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

static int path_append(char *buf, size_t len, size_t *pos, const char *fmt,
		       ...)
{
	va_list ap;
	if (*pos >= len)
		return -1;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len - 1;
	return 0;
}

// The bytes member i of struct t spans: its type's size, or up to the next
// member (or the end) when the size is unknown.
static uint64_t member_extent(const struct hd_type_index *ix,
			      const struct hd_type *t, uint32_t i)
{
	const struct hd_member *m = &ix->members[t->first_member + i];
	uint64_t size = type_size(ix, m->type);
	if (size)
		return size;
	uint64_t end = t->size;
	if (t->kind == HD_TYPE_STRUCT) {
		for (uint32_t j = i + 1; j < t->num_members; j++) {
			uint64_t o = ix->members[t->first_member + j].offset;
			if (o > m->offset) {
				end = o;
				break;
			}
		}
	}
	return end > m->offset ? end - m->offset : 0;
}

// The member of struct/union t that holds byte off, or -1. Struct members
// are searched from the last: a C++ class may put members in the tail
// padding of a base, or an empty base at the offset of its first member,
// and the later member is the one that holds the byte. Past the end, a
// trailing flexible array member (count 0) holds it.
static int64_t member_at(const struct hd_type_index *ix,
			 const struct hd_type *t, uint64_t off)
{
	bool is_union = t->kind == HD_TYPE_UNION;
	for (uint32_t k = 0; k < t->num_members; k++) {
		uint32_t i = is_union ? k : t->num_members - 1 - k;
		const struct hd_member *m = &ix->members[t->first_member + i];
		if (off >= m->offset &&
		    off - m->offset < member_extent(ix, t, i))
			return i;
	}
	if (t->num_members && off >= t->size) {
		uint32_t last = t->num_members - 1;
		const struct hd_member *m =
			&ix->members[t->first_member + last];
		uint32_t s = hd_type_strip(ix, m->type);
		if (s != HD_TYPE_NONE && ix->types[s].kind == HD_TYPE_ARRAY &&
		    ix->types[s].count == 0 && off >= m->offset)
			return last;
	}
	return -1;
}

void hd_type_member_path(const struct hd_type_index *ix, uint32_t type,
			 uint64_t offset, char *buf, size_t len)
{
	size_t pos = 0;
	uint64_t start = 0;  // where the current type starts in the whole
	uint64_t named = 0;  // where the last component named starts

	if (!len)
		return;
	buf[0] = '\0';
	uint32_t t = hd_type_strip(ix, type);
	for (int depth = 0; depth < MAX_NESTING && t != HD_TYPE_NONE;
	     depth++) {
		const struct hd_type *ty = &ix->types[t];
		uint64_t off = offset - start;
		if (ty->kind == HD_TYPE_STRUCT || ty->kind == HD_TYPE_UNION) {
			int64_t i = member_at(ix, ty, off);
			if (i < 0)
				break;
			const struct hd_member *m =
				&ix->members[ty->first_member + i];
			start += m->offset;
			// Base classes and anonymous members are reached
			// without naming them, as in C and C++ code.
			if (m->name && !m->is_base) {
				path_append(buf, len, &pos, "%s%s",
					    pos ? "." : "", m->name);
				named = start;
			}
			t = hd_type_strip(ix, m->type);
		} else if (ty->kind == HD_TYPE_ARRAY) {
			uint64_t esize = type_size(ix, ty->target);
			if (!esize || (ty->count && off / esize >= ty->count))
				break;
			uint64_t index = off / esize;
			path_append(buf, len, &pos, "[%" PRIu64 "]", index);
			start += index * esize;
			named = start;
			t = hd_type_strip(ix, ty->target);
		} else {
			break;
		}
	}
	if (offset != named || pos == 0)
		path_append(buf, len, &pos, "+0x%" PRIx64, offset - named);
}

// ------------------------------------------------------------ pointer slots

// Where slots go: the caller's array, or while inside a union a bitmap of
// the outermost union's words (every word of a union that may hold a
// pointer is one conservative slot, whichever member put it there).
struct slot_sink {
	struct hd_ptr_slot *ret;
	size_t cap, written, total;
	size_t seen;          // every slot, inside unions too
	unsigned int union_depth;
	uint64_t *bits;
	uint64_t bits_start, bits_words;
};

static void emit(struct slot_sink *s, uint64_t off, uint32_t pointee,
		 bool conservative)
{
	s->seen++;
	if (off % 8)
		return;
	if (s->union_depth) {
		uint64_t w = (off - s->bits_start) / 8;
		if (off >= s->bits_start && w < s->bits_words)
			s->bits[w / 64] |= UINT64_C(1) << (w % 64);
		return;
	}
	if (s->written < s->cap)
		s->ret[s->written++] = (struct hd_ptr_slot){
			.offset = off,
			.pointee = pointee,
			.conservative = conservative,
		};
	s->total++;
}

// Every aligned word of [off, off + size) as a conservative slot.
static void emit_words(struct slot_sink *s, uint64_t off, uint64_t size)
{
	uint64_t first = (off + 7) / 8, end = (off + size) / 8;
	if (end < first)
		return; // wrapped: a size no real type has
	if (s->union_depth) {
		// Only the words of the union's bitmap can be marked.
		uint64_t lo = s->bits_start / 8, hi = lo + s->bits_words;
		first = first < lo ? lo : first;
		end = end > hi ? hi : end;
	}
	for (uint64_t w = first; w < end; w++) {
		if (!s->union_depth && s->written >= s->cap) {
			s->total += end - w; // nothing more to write
			s->seen += end - w;
			return;
		}
		emit(s, w * 8, HD_TYPE_NONE, true);
	}
}

struct slot_frame {
	uint32_t type;        // a stripped struct, union or array
	uint64_t start;
	uint64_t next, limit; // member or element index, and how many
	uint64_t esize;       // arrays: element size
	size_t seen_before;   // arrays: sink->seen before element 0
	size_t total_before;  // arrays: sink->total before element 0
	bool union_root;      // this union owns the sink's bitmap
};

// Strips type, noting whether a typedef on the way says the integer holds
// an address.
static uint32_t strip_uintptr(const struct hd_type_index *ix, uint32_t type,
			      bool *uintptr)
{
	*uintptr = false;
	for (int hops = 0; hops < MAX_TYPE_HOPS && type < ix->num_types;
	     hops++) {
		const struct hd_type *t = &ix->types[type];
		if (t->kind != HD_TYPE_TYPEDEF && t->kind != HD_TYPE_QUALIFIED)
			return hd_type_strip(ix, type);
		if (t->kind == HD_TYPE_TYPEDEF && t->name) {
			const char *n = t->name;
			const char *colon = strrchr(n, ':');
			if (colon)
				n = colon + 1;
			if (strcmp(n, "uintptr_t") == 0 ||
			    strcmp(n, "intptr_t") == 0)
				*uintptr = true;
		}
		type = t->target;
	}
	return HD_TYPE_NONE;
}

// Values a walk may visit: real types need far fewer (arrays are counted
// by pattern, not walked); this only stops DWARF that claims absurd
// layouts from taking forever.
#define MAX_SLOT_STEPS (1u << 24)
// A union bigger than this (128 MiB) is typed as words that may all be
// pointers, without the bitmap that merges its members' slots.
#define MAX_UNION_WORDS (UINT64_C(1) << 24)

struct slot_walk {
	const struct hd_type_index *ix;
	struct slot_sink sink;
	struct slot_frame frames[MAX_NESTING];
	unsigned int depth;
	uint32_t steps;
};

// A struct cannot contain itself; broken DWARF that says so is cut here.
static bool slot_on_stack(const struct slot_walk *w, uint32_t id)
{
	for (unsigned int i = 0; i < w->depth; i++) {
		if (w->frames[i].type == id)
			return true;
	}
	return false;
}

// A value of type at off, extent bytes long when its type does not say:
// a leaf slot, or a frame for its members or elements.
static void slot_value(struct slot_walk *w, uint32_t type, uint64_t off,
		       uint64_t extent)
{
	const struct hd_type_index *ix = w->ix;
	bool uintptr;
	if (++w->steps > MAX_SLOT_STEPS)
		return;
	uint32_t id = strip_uintptr(ix, type, &uintptr);
	if (id == HD_TYPE_NONE)
		return;
	const struct hd_type *t = &ix->types[id];
	switch (t->kind) {
	case HD_TYPE_POINTER: {
		if (t->size != 8)
			return;
		uint32_t p = hd_type_strip(ix, t->target);
		if (p != HD_TYPE_NONE && ix->types[p].kind == HD_TYPE_FUNCTION)
			return; // code, not heap
		if (p == HD_TYPE_NONE || ix->types[p].kind == HD_TYPE_VOID ||
		    ix->types[p].kind == HD_TYPE_OTHER)
			emit(&w->sink, off, HD_TYPE_NONE, true);
		else
			emit(&w->sink, off, p, false);
		return;
	}
	case HD_TYPE_BASE:
	case HD_TYPE_ENUM:
		if (uintptr && t->size == 8)
			emit(&w->sink, off, HD_TYPE_NONE, true);
		return;
	case HD_TYPE_STRUCT:
	case HD_TYPE_UNION:
		if (t->declaration) {
			// No definition anywhere: any word may be a pointer.
			emit_words(&w->sink, off, t->size ? t->size : extent);
			return;
		}
		if (w->depth == MAX_NESTING || t->num_members == 0 ||
		    slot_on_stack(w, id))
			return;
		w->frames[w->depth] = (struct slot_frame){
			.type = id,
			.start = off,
			.limit = t->num_members,
		};
		if (t->kind == HD_TYPE_UNION) {
			struct slot_sink *s = &w->sink;
			if (s->union_depth == 0) {
				uint64_t words = t->size / 8;
				// A size no program's union has (a damaged
				// DWARF or index file): no bitmap of it.
				s->bits = words && words <= MAX_UNION_WORDS
						  ? calloc((words + 63) / 64, 8)
						  : NULL;
				if (!s->bits) {
					emit_words(s, off, t->size);
					return;
				}
				s->bits_start = off;
				s->bits_words = words;
				w->frames[w->depth].union_root = true;
			}
			s->union_depth++;
		}
		w->depth++;
		return;
	case HD_TYPE_ARRAY: {
		uint64_t esize = type_size(ix, t->target);
		if (t->count == 0 || w->depth == MAX_NESTING ||
		    slot_on_stack(w, id))
			return;
		w->frames[w->depth++] = (struct slot_frame){
			.type = id,
			.start = off,
			.limit = esize ? t->count : 1,
			.esize = esize,
			.seen_before = w->sink.seen,
			.total_before = w->sink.total,
		};
		return;
	}
	default:
		return;
	}
}

static void slot_pop(struct slot_walk *w)
{
	struct slot_frame *f = &w->frames[--w->depth];
	struct slot_sink *s = &w->sink;
	if (w->ix->types[f->type].kind != HD_TYPE_UNION)
		return;
	s->union_depth--;
	if (!f->union_root)
		return;
	uint64_t *bits = s->bits;
	s->bits = NULL;
	for (uint64_t i = 0; i < s->bits_words; i++) {
		if (bits[i / 64] & (UINT64_C(1) << (i % 64)))
			emit(s, s->bits_start + 8 * i, HD_TYPE_NONE, true);
	}
	free(bits);
}

// Next element of an array frame; false when the frame is done.
static bool slot_array_step(struct slot_walk *w, struct slot_frame *f)
{
	struct slot_sink *s = &w->sink;
	const struct hd_type *t = &w->ix->types[f->type];
	if (f->next >= f->limit)
		return false;
	if (f->next > 0) {
		size_t per = (s->seen - f->seen_before) / f->next;
		// Elements without pointers: none of the others has any.
		if (per == 0)
			return false;
		if (s->union_depth) {
			// Words past the union are not ours to mark.
			uint64_t end = s->bits_start + 8 * s->bits_words;
			if (f->start >= end ||
			    f->next >= (end - f->start) / f->esize)
				return false;
		} else if (s->written >= s->cap) {
			// The caller has all it asked for: count the other
			// elements by the pattern of those walked.
			uint64_t n = (s->total - f->total_before) / f->next;
			uint64_t rest;
			if (__builtin_mul_overflow(n, f->limit - f->next,
						   &rest) ||
			    s->total + rest < s->total)
				s->total = SIZE_MAX;
			else
				s->total += rest;
			return false;
		}
	}
	uint64_t i = f->next++;
	slot_value(w, t->target, f->start + i * f->esize, f->esize);
	return true;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct hd_ptr_slot *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

size_t hd_type_pointer_slots(const struct hd_type_index *ix, uint32_t type,
			     struct hd_ptr_slot *ret, size_t cap,
			     size_t *total)
{
	struct slot_walk walk = {.ix = ix}, *w = &walk;
	size_t written;

	w->sink.ret = ret;
	w->sink.cap = cap;
	slot_value(w, type, 0, type_size(ix, type));
	while (w->depth) {
		struct slot_frame *f = &w->frames[w->depth - 1];
		const struct hd_type *t = &ix->types[f->type];
		if (t->kind == HD_TYPE_ARRAY) {
			if (!slot_array_step(w, f))
				slot_pop(w);
			continue;
		}
		if (f->next >= f->limit) {
			slot_pop(w);
			continue;
		}
		uint32_t i = f->next++;
		const struct hd_member *m = &ix->members[t->first_member + i];
		// The vtable pointer points at code tables, bit-fields hold
		// no pointer.
		if (m->bitfield || is_vptr_name(m->name))
			continue;
		slot_value(w, m->type, f->start + m->offset,
			   member_extent(ix, t, i));
	}
	written = w->sink.written;
	if (total)
		*total = w->sink.total;
	// Members are in declaration order, which is offset order in
	// practice; sort in case a producer thinks otherwise.
	if (written > 1)
		hd_qsort(ret, written, sizeof(*ret), cmp_slot);
	return written;
}
