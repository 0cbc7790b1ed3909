// Typed objects for framework modules: every object of static or heap
// storage whose DWARF type's name starts with one of a few prefixes
// ("std::map<"), found through the typing of heap blocks and the global
// variables of each module's type index.
//
// Per (module, type) we flatten the layout once into the list of matching
// sub-objects (offset, type): nested structs, base classes and arrays are
// expanded, unions are not (which member is live is unknown), and a match
// is not looked into. The flattening is an explicit post-order walk (types
// can nest deeply; no recursion), memoized in a small hash map per call so
// that a call costs what it touches, not the size of the index.
#include <stdlib.h>
#include <string.h>

#include "semantic/fw_fast.h"
#include "semantic/semantic_internal.h"
#include "util/hash.h"
#include "util/sort.h"
#include "util/vec.h"

// A struct nests at most this deep before we call its layout broken.
#define MAX_DEPTH 64
// Matches one type may expand to (an array of 1M structs each holding a
// std::string is legitimate; beyond this we stop and the module sees a
// prefix of them).
#define MAX_MATCHES (1u << 22)

struct match {
	uint64_t offset;
	uint32_t type;
	// Where the member path to it (member_path) has its first '[': -1
	// none, -2 not worked out yet (objects_brackets).
	int32_t bracket;
};

enum { ST_OPEN = 1, ST_DONE = 2 };

struct memo_slot {
	uint32_t type;   // HD_TYPE_NONE: empty slot
	uint8_t state;
	uint32_t first;  // into matches
	uint32_t count;
};

struct memo {
	struct memo_slot *slots;
	size_t cap, n;
};

struct objects {
	struct hd_fw *fw;
	const char *const *prefixes;
	size_t n;
	struct memo *memos;      // one per typing module, lazily filled
	size_t num_memos;
	struct match *matches;
	size_t num_matches, cap_matches;
	uint32_t *stack;
	size_t num_stack, cap_stack;
	bool truncated;          // warned once
	bool no_where;           // names only (hd_fw_names_only): where is ""
	bool brackets;           // where is "[" if it would hold one, else ""
	char where[1024];
};

static uint64_t hash32(uint32_t x)
{
	uint64_t h = x * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct memo_slot *memo_find(struct memo *m, uint32_t type)
{
	if (!m->cap)
		return NULL;
	size_t i = hash32(type) & (m->cap - 1);
	while (m->slots[i].type != HD_TYPE_NONE) {
		if (m->slots[i].type == type)
			return &m->slots[i];
		i = (i + 1) & (m->cap - 1);
	}
	return NULL;
}

// The slot of type, inserted (state 0) if missing; NULL on no memory.
static struct memo_slot *memo_get(struct memo *m, uint32_t type)
{
	struct memo_slot *s = memo_find(m, type);
	if (s)
		return s;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct memo_slot *slots = malloc(cap * sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < cap; i++)
			slots[i].type = HD_TYPE_NONE;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->slots[i].type == HD_TYPE_NONE)
				continue;
			size_t j = hash32(m->slots[i].type) & (cap - 1);
			while (slots[j].type != HD_TYPE_NONE)
				j = (j + 1) & (cap - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	size_t i = hash32(type) & (m->cap - 1);
	while (m->slots[i].type != HD_TYPE_NONE)
		i = (i + 1) & (m->cap - 1);
	m->slots[i] = (struct memo_slot){ .type = type };
	m->n++;
	return &m->slots[i];
}

static bool name_matches(const struct objects *ob, const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; i < ob->n; i++) {
		if (strncmp(name, ob->prefixes[i], strlen(ob->prefixes[i])) == 0)
			return true;
	}
	return false;
}

// Appends a match; false when the cap is reached (the caller stops).
static struct hd_error *add_match(struct objects *ob, uint64_t offset,
				  uint32_t type, bool *full)
{
	if (ob->num_matches >= MAX_MATCHES) {
		*full = true;
		return NULL;
	}
	if (ob->num_matches == ob->cap_matches) {
		size_t cap = ob->cap_matches ? ob->cap_matches * 2 : 256;
		struct match *m = realloc(ob->matches, cap * sizeof(*m));
		if (!m)
			return &hd_error_no_memory;
		ob->matches = m;
		ob->cap_matches = cap;
	}
	ob->matches[ob->num_matches++] = (struct match){ offset, type, -2 };
	return NULL;
}

static struct hd_error *push(struct objects *ob, uint32_t type)
{
	if (ob->num_stack == ob->cap_stack) {
		size_t cap = ob->cap_stack ? ob->cap_stack * 2 : 64;
		uint32_t *s = realloc(ob->stack, cap * sizeof(*s));
		if (!s)
			return &hd_error_no_memory;
		ob->stack = s;
		ob->cap_stack = cap;
	}
	ob->stack[ob->num_stack++] = type;
	return NULL;
}

// Types worth looking into: structs (members, bases) and arrays.
static bool composite(const struct hd_type *t)
{
	return t->kind == HD_TYPE_STRUCT || t->kind == HD_TYPE_ARRAY;
}

// The children of t (stripped) not yet flattened, pushed; returns how many.
static struct hd_error *push_children(struct objects *ob,
				      const struct hd_type_index *ix,
				      struct memo *memo, uint32_t t,
				      size_t *pushed)
{
	const struct hd_type *ty = &ix->types[t];
	uint32_t n = ty->kind == HD_TYPE_ARRAY ? 1 : ty->num_members;
	*pushed = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c;
		if (ty->kind == HD_TYPE_ARRAY) {
			c = hd_type_strip(ix, ty->target);
		} else {
			const struct hd_member *m = &ix->members[ty->first_member + i];
			if (m->bitfield)
				continue;
			c = hd_type_strip(ix, m->type);
		}
		if (c == HD_TYPE_NONE || c >= ix->num_types || !composite(&ix->types[c]))
			continue;
		struct memo_slot *s = memo_get(memo, c);
		if (!s)
			return &hd_error_no_memory;
		if (s->state)
			continue; // done, or open (a cycle in broken DWARF: empty)
		struct hd_error *err = push(ob, c);
		if (err)
			return err;
		(*pushed)++;
	}
	return NULL;
}

// Appends the matches of child c (done) shifted by base, count times at
// stride.
static struct hd_error *append_child(struct objects *ob, struct memo *memo,
				     uint32_t c, uint64_t base, uint64_t count,
				     uint64_t stride, bool *full)
{
	struct memo_slot *s = memo_find(memo, c);
	if (!s || s->state != ST_DONE || !s->count)
		return NULL;
	uint32_t first = s->first, num = s->count;
	for (uint64_t k = 0; k < count && !*full; k++) {
		for (uint32_t i = 0; i < num && !*full; i++) {
			struct match m = ob->matches[first + i];
			struct hd_error *err = add_match(ob, base + k * stride + m.offset,
							 m.type, full);
			if (err)
				return err;
		}
	}
	return NULL;
}

// Builds t's list from its children's (all done).
static struct hd_error *flatten_one(struct objects *ob,
				    const struct hd_type_index *ix,
				    struct memo *memo, uint32_t t, bool *full)
{
	const struct hd_type *ty = &ix->types[t];
	struct hd_error *err;
	if (ty->kind == HD_TYPE_ARRAY) {
		uint32_t c = hd_type_strip(ix, ty->target);
		if (c == HD_TYPE_NONE || c >= ix->num_types)
			return NULL;
		uint64_t stride = ix->types[c].size;
		if (!stride)
			return NULL;
		return append_child(ob, memo, c, 0, ty->count, stride, full);
	}
	for (uint32_t i = 0; i < ty->num_members; i++) {
		const struct hd_member *m = &ix->members[ty->first_member + i];
		if (m->bitfield)
			continue;
		uint32_t c = hd_type_strip(ix, m->type);
		if (c == HD_TYPE_NONE || c >= ix->num_types)
			continue;
		if ((err = append_child(ob, memo, c, m->offset, 1, 0, full)))
			return err;
	}
	return NULL;
}

// The memo slot of stripped type root in module mi, flattened.
static struct hd_error *flatten(struct objects *ob, size_t mi, uint32_t root,
				const struct memo_slot **ret)
{
	const struct hd_type_index *ix = ob->fw->ty->mods[mi].ix;
	struct memo *memo = &ob->memos[mi];
	struct hd_error *err;
	struct memo_slot *s = memo_get(memo, root);
	if (!s)
		return &hd_error_no_memory;
	if (s->state == ST_DONE) {
		*ret = s;
		return NULL;
	}
	ob->num_stack = 0;
	if ((err = push(ob, root)))
		return err;
	while (ob->num_stack) {
		uint32_t t = ob->stack[ob->num_stack - 1];
		struct memo_slot *ts = memo_get(memo, t);
		if (!ts)
			return &hd_error_no_memory;
		if (ts->state == ST_DONE) {
			ob->num_stack--;
			continue;
		}
		const struct hd_type *ty = &ix->types[t];
		bool full = false;
		if (ty->kind == HD_TYPE_STRUCT && name_matches(ob, ty->name)) {
			uint32_t first = (uint32_t)ob->num_matches;
			if ((err = add_match(ob, 0, t, &full)))
				return err;
			ts = memo_get(memo, t);
			*ts = (struct memo_slot){ t, ST_DONE, first,
						  (uint32_t)(ob->num_matches - first) };
			ob->num_stack--;
			continue;
		}
		if (!composite(ty)) {
			*ts = (struct memo_slot){ t, ST_DONE, 0, 0 };
			ob->num_stack--;
			continue;
		}
		if (!ts->state) {
			ts->state = ST_OPEN;
			size_t pushed;
			if ((err = push_children(ob, ix, memo, t, &pushed)))
				return err;
			if (pushed)
				continue;
		}
		uint32_t first = (uint32_t)ob->num_matches;
		if ((err = flatten_one(ob, ix, memo, t, &full)))
			return err;
		if (full && !ob->truncated) {
			ob->truncated = true;
			hd_fw_warn(ob->fw, 0,
				   "type %s holds more than %u matching objects: only the first are listed",
				   ty->name ? ty->name : "(anonymous)", MAX_MATCHES);
		}
		ts = memo_get(memo, t);
		*ts = (struct memo_slot){ t, ST_DONE, first,
					  (uint32_t)(ob->num_matches - first) };
		ob->num_stack--;
	}
	*ret = memo_find(memo, root);
	return NULL;
}

// ------------------------------------------------------------ where

static void append(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);
	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s", s);
}

// Appends the member path from type (at offset 0) to the object of type
// target at offset: ".second.name", "[3].by_name". Base classes add
// nothing.
static void member_path(const struct hd_type_index *ix, uint32_t type,
			uint64_t offset, uint32_t target, char *buf, size_t len)
{
	uint32_t t = hd_type_strip(ix, type);
	for (int depth = 0; depth < MAX_DEPTH && t != HD_TYPE_NONE; depth++) {
		if (t == target && offset == 0)
			return;
		const struct hd_type *ty = &ix->types[t];
		if (ty->kind == HD_TYPE_ARRAY) {
			uint32_t c = hd_type_strip(ix, ty->target);
			if (c == HD_TYPE_NONE || !ix->types[c].size)
				return;
			char tmp[32];
			snprintf(tmp, sizeof(tmp), "[%llu]",
				 (unsigned long long)(offset / ix->types[c].size));
			append(buf, len, tmp);
			offset %= ix->types[c].size;
			t = c;
			continue;
		}
		if (ty->kind != HD_TYPE_STRUCT)
			return;
		// The last member covering the offset: an empty base at 0
		// comes before the member that really lies there.
		const struct hd_member *best = NULL;
		uint32_t bt = HD_TYPE_NONE;
		for (uint32_t i = 0; i < ty->num_members; i++) {
			const struct hd_member *m = &ix->members[ty->first_member + i];
			uint32_t mt = hd_type_strip(ix, m->type);
			if (m->bitfield || mt == HD_TYPE_NONE)
				continue;
			if (m->offset <= offset &&
			    offset < m->offset + ix->types[mt].size) {
				best = m;
				bt = mt;
			}
		}
		if (!best)
			return;
		if (!best->is_base && best->name) {
			append(buf, len, ".");
			append(buf, len, best->name);
		}
		offset -= best->offset;
		t = bt;
	}
}

// ------------------------------------------------------------ visiting

static uint32_t holder_of(struct hd_fw *fw, uint64_t addr, uint32_t given)
{
	if (given != HD_DOM_NONE || !fw->g)
		return given;
	return hd_fw_vertex_at(fw, addr);
}

// Whether the where visit writes for match m of (module ix, stripped type
// t) × count at where_base (of length len, its first '[' at q or none)
// holds a '[': the where is that string cut to the buffer's length.
static bool where_bracket(struct objects *ob, const struct hd_type_index *ix,
			  uint32_t t, const char *q, size_t len, uint64_t count,
			  struct match *m, const char *where_base)
{
	size_t fit = sizeof(ob->where) - 1;
	if (q)
		return (size_t)(q - where_base) < fit;
	if (len >= fit)
		return false;
	if (count > 1)
		return true; // "[k]" comes next
	if (m->bracket == -2) {
		// The same for every object of the type: worked out once.
		char path[sizeof(ob->where)];
		path[0] = '\0';
		member_path(ix, t, m->offset, m->type, path, sizeof(path));
		const char *b = strchr(path, '[');
		m->bracket = b ? (int32_t)(b - path) : -1;
	}
	return m->bracket >= 0 && len + (size_t)m->bracket < fit;
}

// Calls fn for the matches of (module mi, stripped type t) × count at
// base (stride tsize); where_base names the object, "[k]" added per
// element when count > 1.
static struct hd_error *visit(struct objects *ob, size_t mi, uint32_t type,
			      uint64_t base, uint64_t count, uint64_t tsize,
			      const char *where_base, uint32_t holder,
			      hd_fw_object_fn fn, void *arg)
{
	const struct hd_type_index *ix = ob->fw->ty->mods[mi].ix;
	uint32_t t = hd_type_strip(ix, type);
	if (t == HD_TYPE_NONE || t >= ix->num_types)
		return NULL;
	const struct memo_slot *s;
	struct hd_error *err = flatten(ob, mi, t, &s);
	if (err)
		return err;
	if (!s || !s->count)
		return NULL;
	// The slot may move if fn flattens more types into this memo; its
	// matches stay where they are.
	uint32_t first = s->first, num = s->count;
	const char *q = ob->brackets ? strchr(where_base, '[') : NULL;
	size_t len = ob->brackets ? strlen(where_base) : 0;
	for (uint64_t k = 0; k < count; k++) {
		for (uint32_t i = 0; i < num; i++) {
			struct match m = ob->matches[first + i];
			const struct hd_type *mt = &ix->types[m.type];
			uint64_t addr = base + k * tsize + m.offset;
			ob->where[0] = '\0';
			if (ob->brackets) {
				if (where_bracket(ob, ix, t, q, len, count,
						  &ob->matches[first + i], where_base))
					strcpy(ob->where, "[");
			} else if (!ob->no_where) {
				append(ob->where, sizeof(ob->where), where_base);
				if (count > 1) {
					char tmp[32];
					snprintf(tmp, sizeof(tmp), "[%llu]",
						 (unsigned long long)k);
					append(ob->where, sizeof(ob->where), tmp);
				}
				member_path(ix, t, m.offset, m.type, ob->where,
					    sizeof(ob->where));
			}
			struct hd_fw_object o = {
				.addr = addr,
				.size = mt->size,
				.type = mt->name,
				.holder = holder_of(ob->fw, addr, holder),
				.where = ob->where,
			};
			if ((err = fn(ob->fw, &o, arg)))
				return err;
		}
	}
	return NULL;
}

static struct hd_error *objects_init(struct objects *ob, struct hd_fw *fw,
				     const char *const *prefixes, size_t n)
{
	memset(ob, 0, sizeof(*ob));
	ob->fw = fw;
	ob->prefixes = prefixes;
	ob->n = n;
	ob->num_memos = fw->ty->num_mods;
	ob->memos = calloc(ob->num_memos ? ob->num_memos : 1, sizeof(*ob->memos));
	return ob->memos ? NULL : &hd_error_no_memory;
}

static void objects_deinit(struct objects *ob)
{
	for (size_t i = 0; i < ob->num_memos; i++)
		free(ob->memos[i].slots);
	free(ob->memos);
	free(ob->matches);
	free(ob->stack);
}

// The typing entry of heap block id and its stripped type, when objects
// may be looked for in it (visit_block and hd_fw_holders_block pick the
// same blocks).
static const struct hd_type_entry *block_type(const struct hd_typing *ty,
					      size_t id, uint32_t *t)
{
	uint32_t ei = ty->block_entry[id];
	if (ei == HD_ENTRY_NONE)
		return NULL;
	const struct hd_type_entry *e = &ty->entries[ei];
	if (e->module == UINT16_MAX || e->module >= ty->num_mods ||
	    !ty->mods[e->module].ix || !e->count)
		return NULL;
	const struct hd_type_index *ix = ty->mods[e->module].ix;
	*t = hd_type_strip(ix, e->type);
	return *t == HD_TYPE_NONE || *t >= ix->num_types ? NULL : e;
}

// The objects of typed heap block id.
static struct hd_error *visit_block(struct objects *ob, size_t id,
				    hd_fw_object_fn fn, void *arg)
{
	const struct hd_typing *ty = ob->fw->ty;
	char name[512];
	uint32_t t;
	const struct hd_type_entry *e = block_type(ty, id, &t);
	if (!e)
		return NULL;
	const struct hd_type_index *ix = ty->mods[e->module].ix;
	// Cheap reject before naming the block.
	const struct memo_slot *s;
	struct hd_error *err = flatten(ob, e->module, t, &s);
	if (err)
		return err;
	if (!s || !s->count)
		return NULL;
	struct hd_block b;
	hd_heap_block(ob->fw->h, id, &b);
	hd_type_name(ix, t, name, sizeof(name));
	// The vertex at each object's address: the block, or a
	// sub-allocator block inside it.
	return visit(ob, e->module, t, b.addr, e->count, e->size / e->count, name,
		     HD_DOM_NONE, fn, arg);
}

static struct hd_error *visit_blocks(struct objects *ob, hd_fw_object_fn fn,
				     void *arg)
{
	const struct hd_typing *ty = ob->fw->ty;
	for (size_t id = 0; id < ty->num_blocks; id++) {
		struct hd_error *err = visit_block(ob, id, fn, arg);
		if (err)
			return err;
	}
	return NULL;
}

static struct hd_error *visit_globals(struct objects *ob, hd_fw_object_fn fn,
				      void *arg)
{
	const struct hd_typing *ty = ob->fw->ty;
	for (size_t mi = 0; mi < ty->num_mods; mi++) {
		const struct hd_type_index *ix = ty->mods[mi].ix;
		if (!ix)
			continue;
		uint64_t bias = ty->mods[mi].m->bias;
		for (size_t i = 0; i < ix->num_variables; i++) {
			const struct hd_variable *v = &ix->variables[i];
			// The same definition seen from two units.
			if (i && ix->variables[i - 1].addr == v->addr &&
			    ix->variables[i - 1].type == v->type)
				continue;
			uint64_t addr = bias + v->addr;
			uint32_t holder = ob->fw->g ? hd_fw_vertex_at(ob->fw, addr)
						    : HD_DOM_NONE;
			struct hd_error *err = visit(ob, mi, v->type, addr, 1, 0,
						     v->name ? v->name : "?",
						     holder, fn, arg);
			if (err)
				return err;
		}
	}
	return NULL;
}

// hd_fw_objects, where only "[" or "" (brackets).
static struct hd_error *objects(struct hd_fw *fw, const char *const *prefixes,
				size_t n, bool brackets, hd_fw_object_fn fn,
				void *arg)
{
	if (!fw->ty || !n)
		return NULL;
	struct objects ob;
	struct hd_error *err = objects_init(&ob, fw, prefixes, n);
	ob.brackets = brackets;
	if (!err)
		err = visit_blocks(&ob, fn, arg);
	if (!err)
		err = visit_globals(&ob, fn, arg);
	objects_deinit(&ob);
	return err;
}

struct hd_error *hd_fw_objects(struct hd_fw *fw, const char *const *prefixes,
			       size_t n, hd_fw_object_fn fn, void *arg)
{
	return objects(fw, prefixes, n, false, fn, arg);
}

struct hd_error *hd_fw_objects_globals(struct hd_fw *fw,
				       const char *const *prefixes, size_t n,
				       hd_fw_object_fn fn, void *arg)
{
	if (!fw->ty || !n)
		return NULL;
	struct objects ob;
	struct hd_error *err = objects_init(&ob, fw, prefixes, n);
	if (!err)
		err = visit_globals(&ob, fn, arg);
	objects_deinit(&ob);
	return err;
}

struct hd_error *hd_fw_objects_block(struct hd_fw *fw,
				     const char *const *prefixes, size_t n,
				     size_t id, hd_fw_object_fn fn, void *arg)
{
	if (!fw->ty || !n || id >= fw->ty->num_blocks)
		return NULL;
	struct objects ob;
	struct hd_error *err = objects_init(&ob, fw, prefixes, n);
	if (!err)
		err = visit_block(&ob, id, fn, arg);
	objects_deinit(&ob);
	return err;
}

struct hd_error *hd_fw_objects_brackets(struct hd_fw *fw,
					const char *const *prefixes, size_t n,
					hd_fw_object_fn fn, void *arg)
{
	return objects(fw, prefixes, n, true, fn, arg);
}

// ------------------------------------------------------------ holders

// What holds objects of the prefixes (hd_fw_holders_create): the global
// variables' ranges, sorted, and a memo of the types flattened.
struct hd_fw_holders {
	struct objects ob;
	struct range { uint64_t start, end; } *globals;
	size_t num_globals, cap_globals;
	// An object of the prefixes at an address not a multiple of 8 (a
	// packed struct): its pointers are no aligned words, no edges.
	bool unaligned;
	// Some global or typed block's type holds one.
	bool any;
};

static int range_cmp(const void *x, const void *y)
{
	const struct range *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

// Whether stripped type t of module mi holds a match, with the bytes its
// matches reach (past a type of unknown size); no warning: only a module's
// own visits speak of types too large.
static struct hd_error *holds(struct objects *ob, size_t mi, uint32_t t,
			      bool *ret, uint64_t *reach, bool *aligned)
{
	const struct memo_slot *s;
	*ret = false;
	*reach = 0;
	struct hd_error *err = flatten(ob, mi, t, &s);
	if (err || !s || !s->count)
		return err;
	const struct hd_type_index *ix = ob->fw->ty->mods[mi].ix;
	*ret = true;
	*reach = ix->types[t].size;
	for (uint32_t i = 0; i < s->count; i++) {
		const struct match *m = &ob->matches[s->first + i];
		uint64_t end = m->offset + ix->types[m->type].size;
		if (end > *reach)
			*reach = end;
		if (m->offset % 8)
			*aligned = false;
	}
	return NULL;
}

struct hd_error *hd_fw_holders_create(struct hd_fw *fw,
				      const char *const *prefixes, size_t n,
				      struct hd_fw_holders **ret)
{
	*ret = NULL;
	if (!fw->ty)
		return NULL;
	struct hd_fw_holders *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return &hd_error_no_memory;
	struct hd_error *err = objects_init(&hs->ob, fw, prefixes, n);
	hs->ob.truncated = true; // never warns
	const struct hd_typing *ty = fw->ty;
	for (size_t mi = 0; !err && mi < ty->num_mods; mi++) {
		const struct hd_type_index *ix = ty->mods[mi].ix;
		if (!ix)
			continue;
		uint64_t bias = ty->mods[mi].m->bias;
		for (size_t i = 0; !err && i < ix->num_variables; i++) {
			const struct hd_variable *v = &ix->variables[i];
			uint32_t t = hd_type_strip(ix, v->type);
			bool yes, aligned = (bias + v->addr) % 8 == 0;
			uint64_t reach;
			if (t == HD_TYPE_NONE || t >= ix->num_types ||
			    (err = holds(&hs->ob, mi, t, &yes, &reach, &aligned)) || !yes)
				continue;
			hs->unaligned |= !aligned;
			hs->any = true;
			struct range r = { bias + v->addr, bias + v->addr + (reach ? reach : 1) };
			if (!HD_VEC_PUSH(hs->globals, hs->num_globals, hs->cap_globals, r))
				err = &hd_error_no_memory;
		}
	}
	// The typed blocks' types, once each (the entries, not the blocks):
	// an array's later elements are aligned when its stride is.
	for (size_t i = 0; !err && i < ty->num_entries; i++) {
		const struct hd_type_entry *e = &ty->entries[i];
		if (e->module == UINT16_MAX || e->module >= ty->num_mods ||
		    !ty->mods[e->module].ix || !e->count)
			continue;
		const struct hd_type_index *ix = ty->mods[e->module].ix;
		uint32_t t = hd_type_strip(ix, e->type);
		bool yes, aligned = e->count == 1 || (e->size / e->count) % 8 == 0;
		uint64_t reach;
		if (t == HD_TYPE_NONE || t >= ix->num_types ||
		    (err = holds(&hs->ob, e->module, t, &yes, &reach, &aligned)) || !yes)
			continue;
		hs->unaligned |= !aligned;
		hs->any = true;
	}
	if (err) {
		hd_fw_holders_destroy(hs);
		return err;
	}
	hd_qsort(hs->globals, hs->num_globals, sizeof(*hs->globals), range_cmp);
	*ret = hs;
	return NULL;
}

struct hd_error *hd_fw_holders_block(struct hd_fw_holders *hs, size_t id,
				     bool *ret)
{
	const struct hd_typing *ty = hs->ob.fw->ty;
	*ret = false;
	if (id >= ty->num_blocks)
		return NULL;
	// As visit_blocks picks the blocks it looks into.
	uint32_t t;
	const struct hd_type_entry *e = block_type(ty, id, &t);
	if (!e)
		return NULL;
	uint64_t reach;
	bool aligned = true;
	return holds(&hs->ob, e->module, t, ret, &reach, &aligned);
}

bool hd_fw_holders_unaligned(const struct hd_fw_holders *hs)
{
	return hs->unaligned;
}

bool hd_fw_holders_any(const struct hd_fw_holders *hs)
{
	return hs->any;
}

bool hd_fw_holders_global(const struct hd_fw_holders *hs, size_t i,
			  uint64_t *start, uint64_t *end)
{
	if (i >= hs->num_globals)
		return false;
	*start = hs->globals[i].start;
	*end = hs->globals[i].end;
	return true;
}

bool hd_fw_holders_range(const struct hd_fw_holders *hs, uint64_t start,
			 uint64_t end)
{
	// Ranges may nest or overlap (a variable seen from two units): any
	// that starts before end and ends after start.
	for (size_t i = 0; i < hs->num_globals && hs->globals[i].start < end; i++)
		if (hs->globals[i].end > start)
			return true;
	return false;
}

void hd_fw_holders_destroy(struct hd_fw_holders *hs)
{
	if (!hs)
		return;
	objects_deinit(&hs->ob);
	free(hs->globals);
	free(hs);
}

bool hd_fw_find_type(const struct hd_fw *fw, const char *name, size_t *mi,
		     uint32_t *type)
{
	if (!fw->ty || !name)
		return false;
	for (size_t m = 0; m < fw->ty->num_mods; m++) {
		const struct hd_type_index *ix = fw->ty->mods[m].ix;
		if (!ix)
			continue;
		uint32_t t = hd_type_find_struct(ix, name);
		if (t != HD_TYPE_NONE && ix->types[t].size) {
			*mi = m;
			*type = t;
			return true;
		}
	}
	return false;
}

// A module asks for the insides of each of a container's million
// elements, all of a few types: the last types looked up by name.
#define TYPE_MEMO 64

struct hd_fw_type_memo {
	uint64_t hash;
	char *name; // NULL: empty
	size_t mi;
	uint32_t type;
	bool found;
};

bool hd_fw_find_type_memo(struct hd_fw *fw, const char *name, size_t *mi,
		      uint32_t *type)
{
	if (!fw->ty || !name)
		return false;
	if (!fw->type_memo)
		fw->type_memo = calloc(TYPE_MEMO, sizeof(*fw->type_memo));
	if (!fw->type_memo)
		return hd_fw_find_type(fw, name, mi, type);
	uint64_t h = hd_hash_str(name);
	struct hd_fw_type_memo *m = &fw->type_memo[h % TYPE_MEMO];
	if (!m->name || m->hash != h || strcmp(m->name, name) != 0) {
		char *copy = strdup(name);
		if (!copy)
			return hd_fw_find_type(fw, name, mi, type);
		free(m->name);
		*m = (struct hd_fw_type_memo){.hash = h, .name = copy};
		m->found = hd_fw_find_type(fw, name, &m->mi, &m->type);
	}
	*mi = m->mi;
	*type = m->type;
	return m->found;
}

// The memos of hd_fw_objects_in, one per list of prefixes asked with
// (a module may look for containers, and for one type inside a hash
// table): flattening a type per call would redo the same few types for
// each element of a container.
#define OBJECTS_MEMOS 4

struct hd_fw_objects {
	struct objects ob;
	bool used;       // ob is initialised
	uint16_t module; // the module running when it was made
	bool busy;       // a call is visiting with it (fn may call again)
};

void hd_fw_objects_free(struct hd_fw *fw)
{
	if (fw->objects_in)
		for (size_t i = 0; i < OBJECTS_MEMOS; i++)
			if (fw->objects_in[i].used)
				objects_deinit(&fw->objects_in[i].ob);
	free(fw->objects_in);
	fw->objects_in = NULL;
	if (fw->type_memo)
		for (size_t i = 0; i < TYPE_MEMO; i++)
			free(fw->type_memo[i].name);
	free(fw->type_memo);
	fw->type_memo = NULL;
}

// fw's memo for prefixes, made anew when another module asks, or when it
// holds half the matches one call may make; NULL when it is in use (or no
// memory): the caller uses one of its own.
static struct hd_fw_objects *objects_memo(struct hd_fw *fw,
					  const char *const *prefixes, size_t n)
{
	if (!fw->objects_in &&
	    !(fw->objects_in = calloc(OBJECTS_MEMOS, sizeof(*fw->objects_in))))
		return NULL;
	struct hd_fw_objects *o = NULL;
	for (size_t i = 0; i < OBJECTS_MEMOS && !o; i++)
		if (fw->objects_in[i].used && fw->objects_in[i].ob.prefixes == prefixes &&
		    fw->objects_in[i].ob.n == n)
			o = &fw->objects_in[i];
	if (!o) {
		// A free slot, else the next in turn.
		for (size_t i = 0; i < OBJECTS_MEMOS && !o; i++)
			if (!fw->objects_in[i].used)
				o = &fw->objects_in[i];
		if (!o)
			o = &fw->objects_in[fw->objects_next++ % OBJECTS_MEMOS];
	}
	if (o->busy)
		return NULL;
	if (o->used && (o->ob.prefixes != prefixes || o->ob.n != n ||
			o->module != fw->cur || o->ob.num_matches > MAX_MATCHES / 2)) {
		objects_deinit(&o->ob);
		o->used = false;
	}
	if (!o->used) {
		if (objects_init(&o->ob, fw, prefixes, n))
			return NULL;
		o->used = true;
		o->module = fw->cur;
	}
	return o;
}

static struct hd_error *objects_in(struct hd_fw *fw, size_t mi, uint32_t t,
				   uint64_t addr, uint32_t holder,
				   const char *where,
				   const char *const *prefixes, size_t n,
				   hd_fw_object_fn fn, void *arg);

struct hd_error *hd_fw_objects_in(struct hd_fw *fw, const char *type,
				  uint64_t addr, uint32_t holder,
				  const char *where,
				  const char *const *prefixes, size_t n,
				  hd_fw_object_fn fn, void *arg)
{
	size_t mi;
	uint32_t t;
	if (!hd_fw_find_type_memo(fw, type, &mi, &t))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "no complete type named %s", type);
	return objects_in(fw, mi, t, addr, holder, where, prefixes, n, fn, arg);
}

struct hd_error *hd_fw_objects_in_key(struct hd_fw *fw, uint64_t key,
				      uint64_t addr, uint32_t holder,
				      const char *where,
				      const char *const *prefixes, size_t n,
				      hd_fw_object_fn fn, void *arg)
{
	if (key >= fw->num_dwarf_keys)
		return hd_error_create(HD_ERROR_INVALID, "no type of key %llu",
				       (unsigned long long)key);
	uint64_t dk = fw->dwarf_keys[key];
	return objects_in(fw, (size_t)(dk >> 32), (uint32_t)dk, addr, holder,
			  where, prefixes, n, fn, arg);
}

// hd_fw_objects_in of the type t of module mi.
static struct hd_error *objects_in(struct hd_fw *fw, size_t mi, uint32_t t,
				   uint64_t addr, uint32_t holder,
				   const char *where,
				   const char *const *prefixes, size_t n,
				   hd_fw_object_fn fn, void *arg)
{
	if (!n)
		return NULL;
	struct hd_fw_objects *memo = objects_memo(fw, prefixes, n);
	// Inside an object, where only names it for people: when only block
	// names are kept, it is not built (the top level's, hd_fw_objects,
	// also says which objects are array elements).
	if (memo) {
		memo->busy = true;
		memo->ob.truncated = false;
		memo->ob.no_where = fw->names_only;
		struct hd_error *err = visit(&memo->ob, mi, t, addr, 1, 0,
					     where ? where : "", holder, fn, arg);
		memo->busy = false;
		return err;
	}
	struct objects ob;
	struct hd_error *err = objects_init(&ob, fw, prefixes, n);
	ob.no_where = fw->names_only;
	if (!err)
		err = visit(&ob, mi, t, addr, 1, 0, where ? where : "", holder,
			    fn, arg);
	objects_deinit(&ob);
	return err;
}

struct hd_error *hd_fw_type_size(struct hd_fw *fw, const char *type,
				 uint64_t *size)
{
	size_t mi;
	uint32_t t;
	if (!hd_fw_find_type_memo(fw, type, &mi, &t))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "no complete type named %s", type);
	*size = fw->ty->mods[mi].ix->types[t].size;
	return NULL;
}

bool hd_fw_objects_whole(struct hd_fw *fw, const char *type,
			 const char *const *prefixes, size_t n)
{
	size_t mi;
	uint32_t t;
	if (!hd_fw_find_type_memo(fw, type, &mi, &t) || !n)
		return false;
	const struct hd_type_index *ix = fw->ty->mods[mi].ix;
	uint32_t s = hd_type_strip(ix, t);
	if (s == HD_TYPE_NONE || s >= ix->num_types)
		return true; // nothing to list
	struct objects ob;
	if (objects_init(&ob, fw, prefixes, n))
		return false;
	// Flattened in a memo of its own, silently: a type cut short warns
	// in the calls that list its objects, not here.
	ob.truncated = true;
	const struct memo_slot *slot;
	struct hd_error *err = flatten(&ob, mi, s, &slot);
	// A call starts with at most half the cap of matches in its memo
	// (objects_memo starts a new one past that) and adds at most what
	// flattening from nothing adds: below the other half, never full.
	bool whole = !err && ob.num_matches < MAX_MATCHES / 2;
	if (err)
		hd_error_destroy(err);
	objects_deinit(&ob);
	return whole;
}

void hd_fw_objects_touch(struct hd_fw *fw, const char *type,
			 const char *const *prefixes, size_t n, size_t calls)
{
	size_t mi;
	uint32_t t;
	if (!n || !hd_fw_find_type_memo(fw, type, &mi, &t))
		return;
	const struct hd_type_index *ix = fw->ty->mods[mi].ix;
	uint32_t s = hd_type_strip(ix, t);
	if (s == HD_TYPE_NONE || s >= ix->num_types)
		return;
	// After two calls on one type the memo no longer changes: the
	// first flattens it (if new), the second starts a new memo if the
	// first left it past half the cap (and flattens it again), later
	// ones find it.
	for (size_t i = 0; i < calls && i < 2; i++) {
		struct hd_fw_objects *memo = objects_memo(fw, prefixes, n);
		if (!memo)
			return; // a call would use a memo of its own
		memo->ob.truncated = false;
		const struct memo_slot *slot;
		struct hd_error *err = flatten(&memo->ob, mi, s, &slot);
		if (err) {
			hd_error_destroy(err);
			return;
		}
	}
}
