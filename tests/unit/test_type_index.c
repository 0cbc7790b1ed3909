// Unit test of the DWARF type index (core/types/type_index.h).
//
// Usage: test_type_index [--nodebug FILE] [--cpp FILE]... C_SAMPLE...
//
// Each C_SAMPLE is type_sample.c built with -g (any DWARF version or
// compiler); expected sizes and offsets come from type_sample.h through
// sizeof/offsetof, and variable addresses from the sample's own symbol
// table (read with libelf). Each --cpp FILE is type_sample_cpp.cpp built
// with -g; the test runs it with --layout for the offsets the compiler
// chose. --nodebug is a sample built without debug info. libc's separate
// debug file is indexed too when it is installed.
#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapdom.h"
#include "types/type_index.h"
#include "types/typing.h"
#include "type_sample.h"
#include "check_util.h"

static char **c_samples;
static int num_c_samples;
static const char *cpp_samples[8];
static int num_cpp_samples;
static const char *nodebug_sample;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define member_sizeof(type, member) sizeof(((type *)0)->member)

static struct hd_type_index *build(const char *path)
{
	struct hd_type_index *ix = NULL;
	struct hd_error *err = hd_type_index_build(path, &ix);
	ck_assert_msg(!err, "%s", err ? err->message : "");
	ck_assert_ptr_nonnull(ix);
	return ix;
}

static uint32_t find_struct(const struct hd_type_index *ix, const char *name)
{
	uint32_t id = hd_type_find_struct(ix, name);
	ck_assert_msg(id != HD_TYPE_NONE, "struct %s not found", name);
	ck_assert_uint_lt(id, ix->num_types);
	return id;
}

static const struct hd_member *member(const struct hd_type_index *ix,
				      uint32_t type, const char *name)
{
	const struct hd_type *t = &ix->types[type];
	for (uint32_t i = 0; i < t->num_members; i++) {
		const struct hd_member *m = &ix->members[t->first_member + i];
		if (m->name && strcmp(m->name, name) == 0)
			return m;
	}
	ck_abort_msg("member %s missing", name);
	return NULL;
}

static const struct hd_variable *variable(const struct hd_type_index *ix,
					  const char *name)
{
	for (size_t i = 0; i < ix->num_variables; i++) {
		if (strcmp(ix->variables[i].name, name) == 0)
			return &ix->variables[i];
	}
	return NULL;
}

static const char *type_name(const struct hd_type_index *ix, uint32_t type)
{
	static char buf[256];
	hd_type_name(ix, type, buf, sizeof(buf));
	return buf;
}

static const char *member_path(const struct hd_type_index *ix, uint32_t type,
			       uint64_t offset)
{
	static char buf[256];
	hd_type_member_path(ix, type, offset, buf, sizeof(buf));
	return buf;
}

// ------------------------------------------------------------ symbols

// Calls fn for each symbol of path's symbol tables until it returns true.
static bool for_each_symbol(const char *path,
			    bool (*fn)(const char *name, uint64_t value,
				       void *arg),
			    void *arg)
{
	bool found = false;
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	Elf_Scn *scn = NULL;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; data && i < n && !found; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, i, &sym))
				continue;
			const char *name = elf_strptr(elf, sh.sh_link,
						      sym.st_name);
			found = name && fn(name, sym.st_value, arg);
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

struct symbol_query {
	const char *name;
	uint64_t value;
};

static bool match_name(const char *name, uint64_t value, void *arg)
{
	struct symbol_query *q = arg;
	if (strcmp(name, q->name) != 0)
		return false;
	q->value = value;
	return true;
}

static uint64_t symbol_value(const char *path, const char *name)
{
	struct symbol_query q = {name, 0};
	ck_assert_msg(for_each_symbol(path, match_name, &q),
		      "symbol %s not in %s", name, path);
	return q.value;
}

// A symbol at value whose name contains q->name (static locals are
// "s_calls.1" for gcc, "ts_count_calls.s_calls" for clang).
static bool match_at(const char *name, uint64_t value, void *arg)
{
	struct symbol_query *q = arg;
	return value == q->value && strstr(name, q->name);
}

// Asserts that the index has variable name at the symbol's address.
static const struct hd_variable *
check_variable(const struct hd_type_index *ix, const char *path,
	       const char *name, const char *symbol)
{
	const struct hd_variable *v = variable(ix, name);
	ck_assert_msg(v, "variable %s missing", name);
	ck_assert_uint_ne(v->addr, 0);
	ck_assert_uint_lt(v->type, ix->num_types);
	if (symbol)
		ck_assert_uint_eq(v->addr, symbol_value(path, symbol));
	return v;
}

// ------------------------------------------------------------ C sample

START_TEST(test_find_struct)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t leaf = find_struct(ix, "ts_leaf");
		const struct hd_type *t = &ix->types[leaf];
		ck_assert_int_eq(t->kind, HD_TYPE_STRUCT);
		ck_assert_str_eq(t->name, "ts_leaf");
		ck_assert(!t->declaration);
		ck_assert_uint_eq(t->size, sizeof(struct ts_leaf));
		ck_assert_uint_eq(t->num_members, 2);
		ck_assert_uint_eq(find_struct(ix, "struct ts_leaf"), leaf);
		// A typedef of a struct finds the struct.
		ck_assert_uint_eq(find_struct(ix, "ts_leaf_t"), leaf);
		uint32_t word = find_struct(ix, "union ts_word");
		ck_assert_int_eq(ix->types[word].kind, HD_TYPE_UNION);
		ck_assert_uint_eq(find_struct(ix, "ts_word"), word);
		ck_assert_uint_eq(hd_type_find_struct(ix, "union ts_leaf"),
				  HD_TYPE_NONE);
		ck_assert_uint_eq(hd_type_find_struct(ix, "struct ts_word"),
				  HD_TYPE_NONE);
		ck_assert_uint_eq(hd_type_find_struct(ix, "no_such_struct"),
				  HD_TYPE_NONE);
		// Never defined: not a complete struct.
		ck_assert_uint_eq(hd_type_find_struct(ix, "ts_opaque"),
				  HD_TYPE_NONE);
		// Not a struct at all.
		ck_assert_uint_eq(hd_type_find_struct(ix, "int"), HD_TYPE_NONE);
		hd_type_index_destroy(ix);
	}
}
END_TEST

// Member m of the struct with id sits at the compiler's offset, has a type,
// and is neither a bit-field nor a base.
#define CHECK_MEMBER(ix, id, ctype, m)                                        \
	do {                                                                  \
		const struct hd_member *m_ = member(ix, id, #m);              \
		ck_assert_uint_eq(m_->offset, offsetof(ctype, m));            \
		ck_assert_uint_lt(m_->type, (ix)->num_types);                 \
		ck_assert_uint_ne(hd_type_strip(ix, m_->type), HD_TYPE_NONE); \
		ck_assert(!m_->bitfield && !m_->is_base);                     \
	} while (0)

START_TEST(test_layout)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t s = find_struct(ix, "ts_slots");
		ck_assert_uint_eq(ix->types[s].size, sizeof(struct ts_slots));
		CHECK_MEMBER(ix, s, struct ts_slots, typed);
		CHECK_MEMBER(ix, s, struct ts_slots, untyped);
		CHECK_MEMBER(ix, s, struct ts_slots, addr);
		CHECK_MEMBER(ix, s, struct ts_slots, word);
		CHECK_MEMBER(ix, s, struct ts_slots, arr);
		CHECK_MEMBER(ix, s, struct ts_slots, inner);
		CHECK_MEMBER(ix, s, struct ts_slots, fn);
		CHECK_MEMBER(ix, s, struct ts_slots, name);
		CHECK_MEMBER(ix, s, struct ts_slots, label);
		CHECK_MEMBER(ix, s, struct ts_slots, count);
		CHECK_MEMBER(ix, s, struct ts_slots, opaque);
		CHECK_MEMBER(ix, s, struct ts_slots, const_leaf);
		ck_assert(member(ix, s, "flags")->bitfield);
		ck_assert(member(ix, s, "more")->bitfield);
		ck_assert_uint_le(member(ix, s, "more")->offset,
				  offsetof(struct ts_slots, name));
		// Member types carry their sizes, through typedefs and arrays.
		const struct hd_member *m = member(ix, s, "arr");
		ck_assert_int_eq(ix->types[m->type].kind, HD_TYPE_ARRAY);
		ck_assert_uint_eq(ix->types[m->type].count, 4);
		ck_assert_uint_eq(ix->types[m->type].size,
				  member_sizeof(struct ts_slots, arr));
		m = member(ix, s, "addr");
		ck_assert_int_eq(ix->types[m->type].kind, HD_TYPE_TYPEDEF);
		ck_assert_uint_eq(ix->types[m->type].size, sizeof(uintptr_t));

		uint32_t a = find_struct(ix, "ts_arrays");
		ck_assert_uint_eq(ix->types[a].size, sizeof(struct ts_arrays));
		m = member(ix, a, "grid");
		ck_assert_int_eq(ix->types[m->type].kind, HD_TYPE_ARRAY);
		ck_assert_uint_eq(ix->types[m->type].count, 3 * 4);
		ck_assert_uint_eq(ix->types[m->type].size,
				  member_sizeof(struct ts_arrays, grid));
		m = member(ix, a, "rows");
		ck_assert_uint_eq(m->offset, offsetof(struct ts_arrays, rows));
		ck_assert_uint_eq(ix->types[m->type].size,
				  member_sizeof(struct ts_arrays, rows));
		m = member(ix, a, "pairs");
		ck_assert_uint_eq(ix->types[m->type].count, 3);
		ck_assert_uint_eq(ix->types[m->type].size,
				  member_sizeof(struct ts_arrays, pairs));

		uint32_t c = find_struct(ix, "ts_cache");
		ck_assert_uint_eq(ix->types[c].size, sizeof(struct ts_cache));
		CHECK_MEMBER(ix, c, struct ts_cache, hdr);
		CHECK_MEMBER(ix, c, struct ts_cache, buckets);
		CHECK_MEMBER(ix, c, struct ts_cache, mixed);
		CHECK_MEMBER(ix, c, struct ts_cache, count);
		CHECK_MEMBER(ix, c, struct ts_cache, tail);
		// The anonymous union is a member without a name.
		bool anonymous = false;
		for (uint32_t j = 0; j < ix->types[c].num_members; j++) {
			m = &ix->members[ix->types[c].first_member + j];
			if (!m->name) {
				anonymous = true;
				ck_assert_uint_eq(m->offset,
						  offsetof(struct ts_cache, i));
			}
		}
		ck_assert(anonymous);
		uint32_t u = find_struct(ix, "ts_mixed");
		ck_assert_uint_eq(ix->types[u].size, sizeof(union ts_mixed));
		for (uint32_t j = 0; j < ix->types[u].num_members; j++)
			ck_assert_uint_eq(
				ix->members[ix->types[u].first_member + j].offset,
				0);
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_strip)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t leaf = find_struct(ix, "ts_leaf");
		uint32_t s = find_struct(ix, "ts_slots");
		// ts_const_leaf_t * -> typedef -> const -> typedef -> struct.
		const struct hd_member *m = member(ix, s, "const_leaf");
		const struct hd_type *p = &ix->types[m->type];
		ck_assert_int_eq(p->kind, HD_TYPE_POINTER);
		ck_assert_uint_eq(p->size, sizeof(void *));
		ck_assert_int_eq(ix->types[p->target].kind, HD_TYPE_TYPEDEF);
		ck_assert_uint_eq(hd_type_strip(ix, p->target), leaf);
		// Stripping a stripped type is the identity.
		ck_assert_uint_eq(hd_type_strip(ix, leaf), leaf);
		ck_assert_uint_eq(hd_type_strip(ix, HD_TYPE_NONE), HD_TYPE_NONE);
		ck_assert_uint_eq(hd_type_strip(ix, ix->num_types), HD_TYPE_NONE);
		// A pointer to void points at a VOID type.
		m = member(ix, s, "untyped");
		uint32_t v = ix->types[m->type].target;
		ck_assert_int_eq(ix->types[hd_type_strip(ix, v)].kind,
				 HD_TYPE_VOID);
		// A declaration without a definition strips to itself.
		m = member(ix, s, "opaque");
		uint32_t o = hd_type_strip(ix, ix->types[m->type].target);
		ck_assert(ix->types[o].declaration);
		ck_assert_str_eq(ix->types[o].name, "ts_opaque");
		// Base types.
		m = member(ix, s, "label");
		uint32_t ch = hd_type_strip(ix, ix->types[m->type].target);
		ck_assert_int_eq(ix->types[ch].kind, HD_TYPE_BASE);
		ck_assert(ix->types[ch].is_char);
		ck_assert_uint_eq(ix->types[ch].size, 1);
		m = member(ix, s, "count");
		ck_assert(!ix->types[hd_type_strip(ix, m->type)].is_char);
		hd_type_index_destroy(ix);
	}
}
END_TEST

struct expected_slot {
	uint64_t offset;
	uint32_t pointee;
	bool conservative;
};

static void check_slots(const struct hd_type_index *ix, uint32_t type,
			const struct expected_slot *want, size_t n)
{
	struct hd_ptr_slot got[64];
	size_t total = 12345;
	size_t k = hd_type_pointer_slots(ix, type, got, ARRAY_SIZE(got),
					 &total);
	ck_assert_uint_eq(total, n);
	ck_assert_uint_eq(k, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got[i].offset == want[i].offset,
			      "slot %zu: offset %lu, want %lu", i,
			      (unsigned long)got[i].offset,
			      (unsigned long)want[i].offset);
		ck_assert_msg(got[i].conservative == want[i].conservative,
			      "slot at %lu: conservative %d",
			      (unsigned long)got[i].offset,
			      got[i].conservative);
		ck_assert_msg(got[i].pointee == want[i].pointee,
			      "slot at %lu: pointee %u (%s), want %u",
			      (unsigned long)got[i].offset, got[i].pointee,
			      type_name(ix, got[i].pointee), want[i].pointee);
	}
}

START_TEST(test_pointer_slots)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t leaf = find_struct(ix, "ts_leaf");
		uint32_t s = find_struct(ix, "ts_slots");
		const struct hd_member *m = member(ix, s, "label");
		uint32_t ch = hd_type_strip(ix, ix->types[m->type].target);
		m = member(ix, s, "opaque");
		uint32_t opaque = hd_type_strip(ix, ix->types[m->type].target);
		const uint32_t none = HD_TYPE_NONE;
		// No slot for fn (code), flags/more (bit-fields), name (chars)
		// and count (an integer).
		const struct expected_slot want[] = {
			{offsetof(struct ts_slots, typed), leaf, false},
			{offsetof(struct ts_slots, untyped), none, true},
			{offsetof(struct ts_slots, addr), none, true},
			{offsetof(struct ts_slots, word), none, true},
			{offsetof(struct ts_slots, arr[0]), leaf, false},
			{offsetof(struct ts_slots, arr[1]), leaf, false},
			{offsetof(struct ts_slots, arr[2]), leaf, false},
			{offsetof(struct ts_slots, arr[3]), leaf, false},
			{offsetof(struct ts_slots, inner.leaf), leaf, false},
			{offsetof(struct ts_slots, label), ch, false},
			{offsetof(struct ts_slots, opaque), opaque, false},
			{offsetof(struct ts_slots, const_leaf), leaf, false},
		};
		check_slots(ix, s, want, ARRAY_SIZE(want));

		// A union: the words some member may put a pointer in.
		uint32_t u = find_struct(ix, "ts_mixed");
		const struct expected_slot mixed[] = {
			{offsetof(union ts_mixed, two.ptr), none, true},
		};
		check_slots(ix, u, mixed, ARRAY_SIZE(mixed));

		// A typedef and a pointer are types like the others.
		check_slots(ix, find_struct(ix, "ts_leaf_t"),
			    (const struct expected_slot[]){
				    {offsetof(struct ts_leaf, next), leaf,
				     false}},
			    1);
		const struct hd_variable *v = variable(ix, "g_head");
		ck_assert_ptr_nonnull(v);
		check_slots(ix, v->type,
			    (const struct expected_slot[]){{0, leaf, false}},
			    1);
		check_slots(ix, HD_TYPE_NONE, NULL, 0);
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_pointer_slots_cap)
{
	struct hd_type_index *ix = build(c_samples[0]);
	uint32_t leaf = find_struct(ix, "ts_leaf");
	uint32_t a = find_struct(ix, "ts_arrays");
	struct hd_ptr_slot slots[1100];
	size_t total = 0;

	// Three pairs[i].leaf, then the 1000 big[i].
	size_t n = hd_type_pointer_slots(ix, a, slots, 10, &total);
	ck_assert_uint_eq(n, 10);
	ck_assert_uint_eq(total, 1003);
	ck_assert_uint_eq(slots[0].offset,
			  offsetof(struct ts_arrays, pairs[0].leaf));
	ck_assert_uint_eq(slots[2].offset,
			  offsetof(struct ts_arrays, pairs[2].leaf));
	for (size_t i = 3; i < 10; i++) {
		ck_assert_uint_eq(slots[i].offset,
				  offsetof(struct ts_arrays, big[i - 3]));
		ck_assert_uint_eq(slots[i].pointee, leaf);
	}
	n = hd_type_pointer_slots(ix, a, slots, ARRAY_SIZE(slots), &total);
	ck_assert_uint_eq(n, 1003);
	ck_assert_uint_eq(total, 1003);
	ck_assert_uint_eq(slots[1002].offset,
			  offsetof(struct ts_arrays, big[999]));
	// Counting only.
	ck_assert_uint_eq(hd_type_pointer_slots(ix, a, NULL, 0, &total), 0);
	ck_assert_uint_eq(total, 1003);

	uint32_t c = find_struct(ix, "ts_cache");
	n = hd_type_pointer_slots(ix, c, slots, ARRAY_SIZE(slots), &total);
	ck_assert_uint_eq(n, 2 + 32 + 1);
	ck_assert_uint_eq(slots[0].offset,
			  offsetof(struct ts_cache, hdr.list.next));
	ck_assert_uint_eq(slots[2 + 17].offset,
			  offsetof(struct ts_cache, buckets[17]));
	ck_assert_uint_eq(slots[34].offset,
			  offsetof(struct ts_cache, mixed.two.ptr));
	ck_assert(slots[34].conservative);
	hd_type_index_destroy(ix);
}
END_TEST

START_TEST(test_member_path)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t c = find_struct(ix, "ts_cache");
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, hdr.list.prev)),
			"hdr.list.prev");
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, buckets[17])),
			"buckets[17]");
		ck_assert_str_eq(
			member_path(ix, c,
				    offsetof(struct ts_cache, buckets[17]) + 3),
			"buckets[17]+0x3");
		// Anonymous members are reached without a name.
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, i)), "i");
		ck_assert_str_eq(
			member_path(ix, c,
				    offsetof(struct ts_cache, mixed.two.ptr)),
			"mixed.two.ptr");
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, count)),
			"count");
		// Padding after hdr.kind.
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, hdr) + 4),
			"hdr+0x4");
		// The flexible array member holds what follows the struct.
		ck_assert_str_eq(
			member_path(ix, c, offsetof(struct ts_cache, tail) + 5),
			"tail[5]");
		uint32_t leaf = find_struct(ix, "ts_leaf");
		ck_assert_str_eq(member_path(ix, leaf, 2), "value+0x2");
		ck_assert_str_eq(member_path(ix, leaf, 0x64), "+0x64");
		uint32_t a = find_struct(ix, "ts_arrays");
		ck_assert_str_eq(
			member_path(ix, a,
				    offsetof(struct ts_arrays, pairs[2].leaf)),
			"pairs[2].leaf");
		// A typedef'd struct, and a tiny buffer.
		ck_assert_str_eq(
			member_path(ix, find_struct(ix, "ts_leaf_t"), 8),
			"next");
		char small[4];
		hd_type_member_path(ix, c, offsetof(struct ts_cache, count),
				    small, sizeof(small));
		ck_assert_str_eq(small, "cou");
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_type_names)
{
	for (int i = 0; i < num_c_samples; i++) {
		struct hd_type_index *ix = build(c_samples[i]);
		uint32_t n = find_struct(ix, "ts_names");
		ck_assert_str_eq(type_name(ix, n), "struct ts_names");
		ck_assert_str_eq(type_name(ix, member(ix, n, "cp")->type),
				 "int *const");
		ck_assert_str_eq(type_name(ix, member(ix, n, "pc")->type),
				 "const int *");
		ck_assert_str_eq(type_name(ix, member(ix, n, "rows")->type),
				 "int (*)[4]");
		ck_assert_str_eq(type_name(ix, member(ix, n, "get")->type),
				 "char *(*)(...)");
		ck_assert_str_eq(type_name(ix, member(ix, n, "name")->type),
				 "const char[16]");
		ck_assert_str_eq(type_name(ix, member(ix, n, "leaves")->type),
				 "struct ts_leaf *[2]");
		ck_assert_str_eq(type_name(ix, member(ix, n, "color")->type),
				 "enum ts_color");
		ck_assert_int_eq(strncmp(type_name(ix, member(ix, n, "vul")->type),
					 "volatile ", 9),
				 0);
		uint32_t s = find_struct(ix, "ts_slots");
		ck_assert_str_eq(type_name(ix, member(ix, s, "fn")->type),
				 "void (*)(...)");
		ck_assert_str_eq(type_name(ix, member(ix, s, "addr")->type),
				 "uintptr_t");
		ck_assert_str_eq(type_name(ix, member(ix, s, "untyped")->type),
				 "void *");
		ck_assert_str_eq(type_name(ix, member(ix, s, "word")->type),
				 "union ts_word");
		ck_assert_str_eq(type_name(ix, member(ix, s, "const_leaf")->type),
				 "ts_const_leaf_t *");
		const struct hd_variable *v = variable(ix, "g_names");
		ck_assert_ptr_nonnull(v);
		ck_assert_str_eq(type_name(ix, v->type), "const char *[3]");
		char small[5];
		hd_type_name(ix, s, small, sizeof(small));
		ck_assert_str_eq(small, "stru");
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_variables)
{
	for (int i = 0; i < num_c_samples; i++) {
		const char *path = c_samples[i];
		struct hd_type_index *ix = build(path);
		const struct hd_variable *v;

		// g_counter's definition completes its extern declaration.
		v = check_variable(ix, path, "g_counter", "g_counter");
		ck_assert_str_eq(type_name(ix, v->type), "int");
		v = check_variable(ix, path, "g_cache", "g_cache");
		ck_assert_uint_eq(hd_type_strip(ix, v->type),
				  find_struct(ix, "ts_cache"));
		check_variable(ix, path, "g_names", "g_names");
		check_variable(ix, path, "g_slots", "g_slots");
		check_variable(ix, path, "g_arrays", "g_arrays");
		check_variable(ix, path, "g_names_sample", "g_names_sample");
		v = check_variable(ix, path, "g_mixed", "g_mixed");
		ck_assert_str_eq(type_name(ix, v->type), "union ts_mixed");
		v = check_variable(ix, path, "g_head", "g_head");
		ck_assert_str_eq(type_name(ix, v->type), "struct ts_leaf *");
		v = check_variable(ix, path, "g_const_leaf", "g_const_leaf");
		ck_assert_str_eq(type_name(ix, v->type), "ts_const_leaf_t");
		// Static locals, named after their function.
		struct symbol_query q;
		v = check_variable(ix, path, "ts_count_calls::s_calls", NULL);
		q = (struct symbol_query){"s_calls", v->addr};
		ck_assert(for_each_symbol(path, match_at, &q));
		v = check_variable(ix, path, "main::leaf", NULL);
		q = (struct symbol_query){"leaf", v->addr};
		ck_assert(for_each_symbol(path, match_at, &q));
		// Thread-local and automatic variables are not there.
		ck_assert_ptr_null(variable(ix, "g_tls"));
		ck_assert_ptr_null(variable(ix, "local"));
		ck_assert_ptr_null(variable(ix, "ts_count_calls::local"));
		for (size_t j = 1; j < ix->num_variables; j++)
			ck_assert_uint_le(ix->variables[j - 1].addr,
					  ix->variables[j].addr);
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_errors)
{
	char path[] = "/tmp/test_type_index.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	static const char text[] = "this is not an ELF file\n";
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);

	struct hd_type_index *ix = (void *)1;
	struct hd_error *err = hd_type_index_build(path, &ix);
	unlink(path);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	ck_assert_msg(strstr(err->message, path), "%s", err->message);
	ck_assert_ptr_null(ix);
	hd_error_destroy(err);

	// A truncated ELF header is libdwarf's to reject, without crashing.
	strcpy(path, "/tmp/test_type_index.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\177ELF\2\1\1", 7), 7);
	close(fd);
	err = hd_type_index_build(path, &ix);
	unlink(path);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err->message, path), "%s", err->message);
	hd_error_destroy(err);

	err = hd_type_index_build("/nonexistent/type_sample", &ix);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_OS);
	ck_assert_ptr_nonnull(strstr(err->message, "/nonexistent/type_sample"));
	hd_error_destroy(err);

	if (nodebug_sample) {
		err = hd_type_index_build(nodebug_sample, &ix);
		ck_assert_ptr_nonnull(err);
		ck_assert_int_eq(err->code, HD_ERROR_NOT_FOUND);
		ck_assert_ptr_nonnull(strstr(err->message, nodebug_sample));
		hd_error_destroy(err);
	}
	hd_type_index_destroy(NULL);
}
END_TEST

// ------------------------------------------------------------ C++ sample

struct layout {
	char name[64];
	long value;
};

// Runs the C++ sample with --layout: "name value" lines.
static size_t cpp_layout(const char *path, struct layout *ret, size_t cap)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "'%s%s' --layout",
		 strchr(path, '/') ? "" : "./", path);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = 0;
	while (n < cap && fscanf(f, "%63s %ld", ret[n].name, &ret[n].value) == 2)
		n++;
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

static long layout_value(const struct layout *l, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(l[i].name, name) == 0)
			return l[i].value;
	}
	ck_abort_msg("%s not in --layout output", name);
	return -1;
}

// The slot at offset, or NULL.
static const struct hd_ptr_slot *slot_at(const struct hd_ptr_slot *s,
					 size_t n, uint64_t offset)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].offset == offset)
			return &s[i];
	}
	return NULL;
}

START_TEST(test_cpp_classes)
{
	for (int i = 0; i < num_cpp_samples; i++) {
		const char *path = cpp_samples[i];
		struct layout l[32];
		size_t nl = cpp_layout(path, l, ARRAY_SIZE(l));
		struct hd_type_index *ix = build(path);

		uint32_t base = find_struct(ix, "demo::Base");
		uint32_t derived = find_struct(ix, "demo::Derived");
		uint32_t plain = find_struct(ix, "demo::Plain");
		uint32_t multi = find_struct(ix, "demo::Multi");
		uint32_t inner = find_struct(ix, "demo::Derived::Inner");
		ck_assert_uint_eq(find_struct(ix, "struct demo::Derived"),
				  derived);
		ck_assert_uint_eq(find_struct(ix, "class demo::Derived"),
				  derived);
		ck_assert_uint_eq(hd_type_find_struct(ix, "Derived"),
				  HD_TYPE_NONE);
		ck_assert(ix->types[base].has_vptr);
		ck_assert(ix->types[derived].has_vptr);
		ck_assert(ix->types[multi].has_vptr);
		ck_assert(!ix->types[plain].has_vptr);
		ck_assert(ix->types[plain].is_class);
		ck_assert(!ix->types[derived].is_class);
		ck_assert_uint_eq(ix->types[derived].size,
				  layout_value(l, nl, "sizeof.Derived"));
		ck_assert_uint_eq(ix->types[multi].size,
				  layout_value(l, nl, "sizeof.Multi"));
		ck_assert_uint_eq(ix->types[inner].size,
				  layout_value(l, nl, "sizeof.Inner"));
		ck_assert_str_eq(type_name(ix, derived), "demo::Derived");
		ck_assert_str_eq(type_name(ix, inner), "demo::Derived::Inner");

		// The base class subobject comes first, unnamed.
		const struct hd_member *m =
			&ix->members[ix->types[derived].first_member];
		ck_assert(m->is_base);
		ck_assert_ptr_null(m->name);
		ck_assert_uint_eq(m->offset, 0);
		ck_assert_uint_eq(hd_type_strip(ix, m->type), base);
		// A non-primary base after the primary one.
		bool plain_base = false;
		for (uint32_t j = 0; j < ix->types[multi].num_members; j++) {
			m = &ix->members[ix->types[multi].first_member + j];
			if (m->is_base && hd_type_strip(ix, m->type) == plain) {
				plain_base = true;
				ck_assert_uint_eq(m->offset,
						  layout_value(l, nl,
							       "Multi.Plain"));
			}
		}
		ck_assert(plain_base);
		ck_assert_uint_eq(member(ix, multi, "extra")->offset,
				  layout_value(l, nl, "Multi.extra"));

		static const char *const members[] = {"values", "label",
						      "next", "inner"};
		for (size_t j = 0; j < ARRAY_SIZE(members); j++) {
			char key[64];
			snprintf(key, sizeof(key), "Derived.%s", members[j]);
			ck_assert_uint_eq(member(ix, derived, members[j])->offset,
					  layout_value(l, nl, key));
		}
		ck_assert_str_eq(type_name(ix, member(ix, derived, "ref")->type),
				 "int &");
		// The nested class defined out of line: the member's pointee
		// is the declaration inside Derived, which strips to it.
		m = member(ix, derived, "inner");
		ck_assert_uint_eq(hd_type_strip(ix, ix->types[m->type].target),
				  inner);
		ck_assert_str_eq(type_name(ix, m->type),
				 "demo::Derived::Inner *");

		// Slots: not the vtable pointer; the inherited parent; the
		// vector's three pointers; the string's data pointer.
		struct hd_ptr_slot s[64];
		size_t total;
		size_t n = hd_type_pointer_slots(ix, derived, s, ARRAY_SIZE(s),
						 &total);
		ck_assert_uint_eq(n, total);
		ck_assert_ptr_null(slot_at(s, n, 0));
		const struct hd_ptr_slot *p =
			slot_at(s, n, layout_value(l, nl, "Derived.parent"));
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(p->pointee, base);
		ck_assert(!p->conservative);
		long values = layout_value(l, nl, "Derived.values");
		for (int k = 0; k < 3; k++)
			ck_assert_ptr_nonnull(slot_at(s, n, values + 8 * k));
		ck_assert_ptr_nonnull(
			slot_at(s, n, layout_value(l, nl, "Derived.label")));
		p = slot_at(s, n, layout_value(l, nl, "Derived.next"));
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(p->pointee, derived);
		p = slot_at(s, n, layout_value(l, nl, "Derived.inner"));
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(p->pointee, inner);
		// Base-class members are reached through the base.
		ck_assert_str_eq(
			member_path(ix, derived,
				    layout_value(l, nl, "Derived.parent")),
			"parent");
		ck_assert_str_eq(
			member_path(ix, multi,
				    layout_value(l, nl, "Multi.Plain") + 8),
			"b");
		n = hd_type_pointer_slots(ix, multi, s, ARRAY_SIZE(s), &total);
		p = slot_at(s, n, layout_value(l, nl, "Multi.Plain") + 8);
		ck_assert_ptr_nonnull(p);
		ck_assert(ix->types[p->pointee].is_char);
		hd_type_index_destroy(ix);
	}
}
END_TEST

START_TEST(test_cpp_names_and_variables)
{
	for (int i = 0; i < num_cpp_samples; i++) {
		const char *path = cpp_samples[i];
		struct hd_type_index *ix = build(path);
		uint32_t box = find_struct(ix, "demo::Box<int>");
		ck_assert_str_eq(type_name(ix, box), "demo::Box<int>");
		// libstdc++ types index like any other.
		uint32_t vec = find_struct(ix,
					   "std::vector<int, std::allocator<int> >");
		ck_assert(!ix->types[vec].declaration);
		ck_assert_uint_eq(ix->types[vec].size, 3 * sizeof(void *));

		// std::string is a typedef of a class in the inline namespace
		// std::__cxx11, which keeps its name as in demangled symbols.
		// clang only declares it (extern template): no layout then.
		uint32_t str = hd_type_find_struct(ix, "std::string");
		if (str != HD_TYPE_NONE) {
			ck_assert_str_eq(type_name(ix, str),
					 "std::__cxx11::basic_string<char, "
					 "std::char_traits<char>, "
					 "std::allocator<char> >");
			ck_assert_uint_eq(find_struct(ix, type_name(ix, str)),
					  str);
		}

		const struct hd_variable *v;
		v = check_variable(ix, path, "demo::Base::count",
				   "_ZN4demo4Base5countE");
		ck_assert_str_eq(type_name(ix, v->type), "int");
		v = check_variable(ix, path, "demo::g_derived",
				   "_ZN4demo9g_derivedE");
		ck_assert_uint_eq(hd_type_strip(ix, v->type),
				  find_struct(ix, "demo::Derived"));
		v = check_variable(ix, path, "demo::g_box", "_ZN4demo5g_boxE");
		ck_assert_uint_eq(hd_type_strip(ix, v->type), box);
		v = check_variable(ix, path,
				   "demo::(anonymous namespace)::g_hidden",
				   "_ZN4demo12_GLOBAL__N_18g_hiddenE");
		ck_assert_str_eq(type_name(ix, v->type),
				 "demo::(anonymous namespace)::Hidden");
		check_variable(ix, path, "demo::g_inner", "_ZN4demo7g_innerE");
		hd_type_index_destroy(ix);
	}
}
END_TEST

// ------------------------------------------------------------ glibc

// Finds the build-id of the libc this test runs with, from its PT_NOTE.
struct build_id {
	unsigned char id[64];
	size_t len;
};

static int find_libc_build_id(struct dl_phdr_info *info, size_t size,
			      void *arg)
{
	struct build_id *b = arg;
	if (!strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= sizeof(b->id)) {
				memcpy(b->id, desc, nh->n_descsz);
				b->len = nh->n_descsz;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static bool libc_debug_file(char *path, size_t size)
{
	struct build_id b = {0};
	if (!dl_iterate_phdr(find_libc_build_id, &b) || b.len < 2)
		return false;
	int off = snprintf(path, size, "/usr/lib/debug/.build-id/%02x/",
			   b.id[0]);
	for (size_t i = 1; i < b.len; i++)
		off += snprintf(path + off, size - off, "%02x", b.id[i]);
	snprintf(path + off, size - off, ".debug");
	return access(path, R_OK) == 0;
}

START_TEST(test_glibc)
{
	char path[256];
	if (!libc_debug_file(path, sizeof(path))) {
		fprintf(stderr, "test_glibc: libc debug file not installed, "
				"skipped\n");
		return;
	}
	struct hd_type_index *ix = build(path);
	uint32_t chunk = find_struct(ix, "malloc_chunk");
	ck_assert_uint_eq(ix->types[chunk].size, 6 * sizeof(size_t));
	const struct expected_slot want[] = {
		{2 * sizeof(size_t), chunk, false},
		{3 * sizeof(size_t), chunk, false},
		{4 * sizeof(size_t), chunk, false},
		{5 * sizeof(size_t), chunk, false},
	};
	check_slots(ix, chunk, want, ARRAY_SIZE(want));
	ck_assert_str_eq(member_path(ix, chunk, 3 * sizeof(size_t)), "bk");

	uint32_t state = find_struct(ix, "malloc_state");
	const struct hd_variable *v = check_variable(ix, path, "main_arena",
						     "main_arena");
	ck_assert_uint_eq(hd_type_strip(ix, v->type), state);
	ck_assert_str_eq(type_name(ix, v->type), "struct malloc_state");
	const struct hd_member *m = member(ix, state, "fastbinsY");
	ck_assert_uint_eq(ix->types[m->type].count, 10);
	char buf[64];
	hd_type_member_path(ix, state, m->offset + 3 * sizeof(void *), buf,
			    sizeof(buf));
	ck_assert_str_eq(buf, "fastbinsY[3]");
	v = check_variable(ix, path, "mp_", "mp_");
	ck_assert_uint_eq(hd_type_strip(ix, v->type),
			  find_struct(ix, "malloc_par"));
	// Every variable sits where a symbol does.
	for (size_t i = 0; i < ix->num_variables; i++)
		ck_assert_uint_ne(ix->variables[i].addr, 0);
	hd_type_index_destroy(ix);
}
END_TEST

// Locals' types as gdb and lldb write them, qualified or not.
START_TEST(test_local_types)
{
	static const struct {
		const char *type, *base;
		int depth;
	} cases[] = {
		{"struct node *", "struct node", 1},
		{"struct node *volatile", "struct node", 1},
		{"struct node * volatile", "struct node", 1},
		{"const struct node * const", "struct node", 1},
		{"volatile struct cache", "struct cache", 0},
		{"node *volatile", "node", 1},
		{"struct node * restrict", "struct node", 1},
		{"_Atomic struct node *", "struct node", 1},
		{"struct node **", "struct node", 2},
		{"unsigned long", "unsigned long", 0},
		{"ns::Session const *", "ns::Session", 1},
		{"std::pair<const int, S> *", "std::pair<const int, S>", 1},
		{"int (*)(void)", NULL, -1},
		{"struct entry [4]", NULL, -1},
		{"Session &", NULL, -1},
		{"const", NULL, -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char base[128];
		int d = hd_typing_local_type(cases[i].type, base, sizeof(base));
		ck_assert_msg(d == cases[i].depth, "%s: depth %d, expected %d",
			      cases[i].type, d, cases[i].depth);
		if (d >= 0)
			ck_assert_str_eq(base, cases[i].base);
	}
}
END_TEST

static Suite *type_index_suite(void)
{
	Suite *s = suite_create("type_index");
	TCase *tc = tcase_create("c");
	tcase_add_test(tc, test_find_struct);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_strip);
	tcase_add_test(tc, test_pointer_slots);
	tcase_add_test(tc, test_pointer_slots_cap);
	tcase_add_test(tc, test_member_path);
	tcase_add_test(tc, test_type_names);
	tcase_add_test(tc, test_variables);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_local_types);
	suite_add_tcase(s, tc);

	tc = tcase_create("cpp");
	tcase_add_test(tc, test_cpp_classes);
	tcase_add_test(tc, test_cpp_names_and_variables);
	suite_add_tcase(s, tc);

	tc = tcase_create("glibc");
	// Decompressing libc's debug sections is slow under valgrind.
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_glibc);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	int i;
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--nodebug") == 0) {
			nodebug_sample = argv[i + 1];
		} else if (strcmp(argv[i], "--cpp") == 0 &&
			   num_cpp_samples < (int)ARRAY_SIZE(cpp_samples)) {
			cpp_samples[num_cpp_samples++] = argv[i + 1];
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr,
			"usage: %s [--nodebug FILE] [--cpp FILE]... "
			"C_SAMPLE...\n",
			argv[0]);
		return 2;
	}
	c_samples = argv + i;
	num_c_samples = argc - i;

	int failed = hd_run_suite(type_index_suite());
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
