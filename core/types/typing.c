// Typing heap blocks. Every module with DWARF gets a type index (built in
// parallel, two at a time). Blocks whose first word is a C++ vtable
// pointer get their dynamic class; then types flow from typed roots (global
// variables, typed locals) through pointer-typed members to a fixpoint. A
// pointer at the start of a block types it (as an array when the usable
// size holds several), unless it points to a base class; typings of one
// block must agree (one type, or one at the start of the other), else the
// block stays untyped.
//
// The levels of the propagation that threads follow (--jobs) are in
// typing_threads.c.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfo/debuginfo_internal.h"
#include "heap/heap_internal.h"
#include "target/views.h"
#include "types/index_cache.h"
#include "util/demangle.h"
#include "types/typing.h"
#include "types/typing_internal.h"
#include "util/hash.h"
#include "util/vec.h"
#include "util/sort.h"
#include "util/search.h"
#include "util/thread.h"
#include "util/clock.h"

#define MAX_SLOTS 4096

// ------------------------------------------------------------ indexes

static struct hd_error *build_indexes(struct hd_typing *ty, struct hd_target *t,
				      struct hd_debuginfo *di)
{
	ty->num_mods = hd_target_num_modules(t);
	ty->mods = calloc(ty->num_mods ? ty->num_mods : 1, sizeof(*ty->mods));
	if (!ty->mods)
		return &hd_error_no_memory;
	double t0 = hd_seconds();
	const char **paths = calloc(ty->num_mods ? ty->num_mods : 1, sizeof(*paths));
	const struct hd_type_index **ixs = calloc(ty->num_mods ? ty->num_mods : 1, sizeof(*ixs));
	double *secs = calloc(ty->num_mods ? ty->num_mods : 1, sizeof(*secs));
	if (!paths || !ixs || !secs) {
		free(paths);
		free(ixs);
		free(secs);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < ty->num_mods; i++) {
		ty->mods[i].m = hd_target_module(t, i);
		paths[i] = hd_debuginfo_debug_file(di, ty->mods[i].m);
		if (!paths[i])
			paths[i] = ty->mods[i].m->file;
	}
	// Shared with other sessions, built once per file (often already, by
	// the prefetch the session started).
	hd_index_cache_get_many(paths, ty->num_mods, ixs, secs);
	free(paths);
	for (size_t i = 0; i < ty->num_mods; i++) {
		struct hd_typing_module *tm = &ty->mods[i];
		tm->ix = (struct hd_type_index *)ixs[i];
		tm->seconds = secs[i];
		if (tm->ix) {
			const struct hd_type_index *ix = tm->ix;
			tm->based = calloc(ix->num_types / 8 + 1, 1);
			if (!tm->based) {
				free(ixs);
				free(secs);
				return &hd_error_no_memory;
			}
			for (size_t k = 0; k < ix->num_members; k++) {
				if (!ix->members[k].is_base)
					continue;
				uint32_t b = hd_type_strip(ix, ix->members[k].type);
				if (b != HD_TYPE_NONE)
					tm->based[b / 8] |= (uint8_t)(1u << (b % 8));
			}
			ty->info.modules_indexed++;
			ty->info.types_indexed += tm->ix->num_types;
		}
		ty->info.index_seconds += tm->seconds;
	}
	free(ixs);
	free(secs);
	ty->info.index_wait_seconds = hd_seconds() - t0;
	return NULL;
}

// ------------------------------------------------------------ entries

struct dedupe {
	uint64_t *keys; // (module << 48 | type << 16 ...) packed as below
	uint32_t *vals;
	size_t cap, n;
};

static uint64_t entry_key(uint16_t module, uint32_t type, uint32_t count)
{
	return ((uint64_t)module << 48) ^ ((uint64_t)type << 20) ^ count ^
	       ((uint64_t)count << 40);
}

static bool entry_matches(const struct hd_type_entry *e, uint16_t module,
			  uint32_t type, uint32_t count, const char *name)
{
	if (e->module != module || e->count != count)
		return false;
	if (module == NO_MODULE)
		return strcmp(e->name, name) == 0;
	return e->type == type;
}

static struct hd_error *dedupe_grow(struct dedupe *d, struct hd_typing *ty)
{
	size_t cap = d->cap ? d->cap * 2 : 256;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = malloc(cap * sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return &hd_error_no_memory;
	}
	memset(vals, 0xff, cap * sizeof(*vals));
	for (size_t i = 0; i < ty->num_entries; i++) {
		const struct hd_type_entry *e = &ty->entries[i];
		uint64_t k = entry_key(e->module, e->type, e->count);
		size_t slot = hd_hash_u64(k) & (cap - 1);
		while (vals[slot] != UINT32_MAX)
			slot = (slot + 1) & (cap - 1);
		keys[slot] = k;
		vals[slot] = (uint32_t)i;
	}
	free(d->keys);
	free(d->vals);
	d->keys = keys;
	d->vals = vals;
	d->cap = cap;
	return NULL;
}

// Sets the words of one instance's typed pointer slots in the entry's map.
static void fill_maps(struct hd_typing *ty, struct hd_type_entry *e)
{
	const struct hd_type_index *ix = ty->mods[e->module].ix;
	uint64_t tsize = e->count ? e->size / e->count : 0;
	static __thread struct hd_ptr_slot slots[MAX_SLOTS];
	size_t total, n = hd_type_pointer_slots(ix, e->type, slots, MAX_SLOTS,
						  &total);
	uint32_t k0 = 0;
	// An array's map repeats every element: fill the bytes of one period
	// and copy them (a void *[] of 4 GiB is 64 MiB of map, 512M slots).
	uint64_t p = tsize / 8;
	if (tsize % 8 == 0 && p && e->count > 64) {
		uint64_t g = p, b8 = 8;
		while (b8) {
			uint64_t r = g % b8;
			g = b8;
			b8 = r;
		}
		uint64_t period = p / g;          // bytes of map per period
		uint64_t kfill = period * 8 / p;  // elements filling them
		uint64_t full = (uint64_t)e->count * p / 8;
		if (full > e->nwords / 8)
			full = e->nwords / 8;
		if (kfill < e->count && period < full) {
			for (uint32_t k = 0; k < kfill; k++)
				for (size_t i = 0; i < n; i++) {
					uint64_t w = (k * tsize + slots[i].offset) / 8;
					if (w < e->nwords && !slots[i].conservative)
						e->typed[w / 8] |= (uint8_t)(1u << (w % 8));
				}
			for (uint64_t b = period; b < full;) {
				uint64_t len = b < full - b ? b : full - b;
				memcpy(e->typed + b, e->typed, len);
				b += len;
			}
			// The elements of the last, partial byte.
			k0 = (uint32_t)(full * 8 / p);
		}
	}
	for (uint32_t k = k0; k < e->count; k++) {
		for (size_t i = 0; i < n; i++) {
			uint64_t w = (k * tsize + slots[i].offset) / 8;
			if (w < e->nwords && !slots[i].conservative)
				e->typed[w / 8] |= (uint8_t)(1u << (w % 8));
		}
	}
}

// The entry for (module, type, count) if it exists, else HD_ENTRY_NONE;
// reads only (the propagation's threads look entries up this way).
uint32_t hd_typing_find_entry(const struct hd_typing *ty, uint16_t module,
			      uint32_t type, uint32_t count, const char *vtable_name)
{
	const struct dedupe *d = ty->dedupe;
	if (!d || !d->cap)
		return HD_ENTRY_NONE;
	uint64_t k = entry_key(module, type, count);
	size_t slot = hd_hash_u64(k) & (d->cap - 1);
	while (d->vals[slot] != UINT32_MAX) {
		uint32_t v = d->vals[slot];
		if (d->keys[slot] == k &&
		    entry_matches(&ty->entries[v], module, type, count, vtable_name))
			return v;
		slot = (slot + 1) & (d->cap - 1);
	}
	return HD_ENTRY_NONE;
}

// The entry for (module, type, count), created on first use.
static struct hd_error *get_entry(struct hd_typing *ty, uint16_t module,
				  uint32_t type, uint32_t count,
				  const char *vtable_name, uint32_t *ret)
{
	struct dedupe *d = ty->dedupe;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return &hd_error_no_memory;
		ty->dedupe = d;
	}
	uint64_t k = entry_key(module, type, count);
	*ret = hd_typing_find_entry(ty, module, type, count, vtable_name);
	if (*ret != HD_ENTRY_NONE)
		return NULL;
	if ((ty->num_entries + 1) * 2 > d->cap) {
		struct hd_error *err = dedupe_grow(d, ty);
		if (err)
			return err;
	}
	struct hd_type_entry e = {.module = module, .type = type, .count = count};
	char name[512];
	if (module == NO_MODULE) {
		snprintf(name, sizeof(name), "%s", vtable_name);
		e.from_vtable = true;
	} else {
		const struct hd_type_index *ix = ty->mods[module].ix;
		uint32_t st = hd_type_strip(ix, type);
		e.size = (uint64_t)count * ix->types[st].size;
		hd_type_name(ix, type, name, sizeof(name) - 16);
		if (count > 1) {
			size_t l = strlen(name);
			snprintf(name + l, sizeof(name) - l, "[%u]", count);
		}
		e.nwords = e.size / 8;
		e.typed = calloc(e.nwords / 8 + 1, 1);
		if (!e.typed)
			return &hd_error_no_memory;
	}
	e.name = strdup(name);
	if (!e.name || !HD_VEC_PUSH(ty->entries, ty->num_entries, ty->cap_entries, e)) {
		free(e.name);
		free(e.typed);
		return &hd_error_no_memory;
	}
	if (module != NO_MODULE)
		fill_maps(ty, &ty->entries[ty->num_entries - 1]);
	size_t slot = hd_hash_u64(k) & (d->cap - 1);
	while (d->vals[slot] != UINT32_MAX)
		slot = (slot + 1) & (d->cap - 1);
	d->keys[slot] = k;
	d->vals[slot] = (uint32_t)(ty->num_entries - 1);
	*ret = (uint32_t)(ty->num_entries - 1);
	return NULL;
}

// ------------------------------------------------------------ memory

// A window is this big at least (less when its mapping is smaller).
#define WINDOW_MIN (UINT64_C(64) << 10)

static struct hd_error *memory_init(struct memory *mem, struct hd_target *t,
				    const struct hd_heap *h)
{
	mem->t = t;
	mem->h = h;
	mem->n = hd_heap_num_segments(h);
	mem->no_memory = false;
	mem->views = calloc(mem->n + 1, sizeof(*mem->views));
	mem->state = calloc(mem->n + 1, 1);
	if (!mem->views || !mem->state)
		return &hd_error_no_memory;
	return NULL;
}

static void memory_deinit(struct memory *mem)
{
	for (size_t i = 0; i < mem->num_windows; i++)
		hd_view_deinit(&mem->windows[i]);
	for (size_t i = 0; i < mem->n; i++)
		if (mem->state && mem->state[i] == 1)
			hd_view_deinit(&mem->views[i]);
	free(mem->views);
	free(mem->state);
}

// The view of the segment holding addr, made on first use, or NULL.
static const struct hd_view *view_at(const struct memory *cmem, uint64_t addr)
{
	struct memory *mem = (struct memory *)cmem;
	size_t lo = 0, hi = mem->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (hd_heap_segment(mem->h, mid)->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == mem->n)
		return NULL;
	const struct hd_heap_segment *s = hd_heap_segment(mem->h, lo);
	if (addr < s->start)
		return NULL;
	if (!mem->state[lo]) {
		struct hd_error *err = hd_target_view(mem->t, s->start,
						      s->end - s->start,
						      &mem->views[lo]);
		mem->state[lo] = err ? 2 : 1;
		if (err && err->code == HD_ERROR_NO_MEMORY)
			mem->no_memory = true;
		hd_error_destroy(err);
	}
	return mem->state[lo] == 1 ? &mem->views[lo] : NULL;
}

// The bytes [addr, addr + len) if one view holds them all, else NULL.
static const uint8_t *view_of(const struct memory *mem, uint64_t addr,
			      uint64_t len)
{
	const struct hd_view *v = view_at(mem, addr);
	if (!v || addr + len > v->addr + v->len || addr + len < addr)
		return NULL;
	return v->data + (addr - v->addr);
}

static const struct hd_view *window_at(const struct memory *mem, uint64_t addr,
				       uint64_t len)
{
	for (size_t i = 0; i < mem->num_windows; i++) {
		const struct hd_view *w = &mem->windows[i];
		if (addr >= w->addr && len <= w->len && addr - w->addr <= w->len - len)
			return w;
	}
	return NULL;
}

// Makes a window hold [lo, hi) if the mapping there is readable; on any
// failure the words are read one by one, as they would be anyway (the same
// bytes either way: the process is stopped).
static void ensure_window(struct memory *mem, uint64_t lo, uint64_t hi)
{
	if (hi <= lo || window_at(mem, lo, hi - lo))
		return;
	const struct hd_mapping *m = hd_target_find_mapping(mem->t, lo);
	if (!m || !m->readable || hi > m->end)
		return;
	uint64_t start = lo & ~(WINDOW_MIN - 1), end = hi + WINDOW_MIN - 1;
	end = end < hi ? hi : end & ~(WINDOW_MIN - 1);
	if (start < m->start)
		start = m->start;
	if (end > m->end)
		end = m->end;
	size_t slot = mem->num_windows < MAX_WINDOWS ? mem->num_windows++
						     : mem->next_window++ % MAX_WINDOWS;
	struct hd_view *w = &mem->windows[slot];
	if (w->len)
		hd_view_deinit(w);
	memset(w, 0, sizeof(*w));
	struct hd_error *err = hd_target_view(mem->t, start, end - start, w);
	if (err) {
		hd_error_destroy(err);
		memset(w, 0, sizeof(*w)); // len 0: matches nothing
	}
}

static bool read_word(const struct memory *mem, uint64_t addr, uint64_t *ret)
{
	const struct hd_view *w = window_at(mem, addr, 8);
	if (w) {
		memcpy(ret, w->data + (addr - w->addr), 8);
		return true;
	}
	const uint8_t *d = view_of(mem, addr, 8);
	if (d) {
		memcpy(ret, d, 8);
		return true;
	}
	struct hd_error *err = hd_target_read(mem->t, addr, ret, 8);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

// ------------------------------------------------------------ propagation

// A block is pushed when its typing changes, which is rare after the
// first time: no need to avoid duplicates, following a block twice is
// harmless.
struct hd_error *hd_typing_push(struct propagation *p, uint32_t id)
{
	if (p->tail == p->cap) {
		// Compact before growing: the consumed head is dead space.
		if (p->head) {
			memmove(p->queue, p->queue + p->head,
				(p->tail - p->head) * sizeof(*p->queue));
			p->tail -= p->head;
			p->head = 0;
		}
		if (p->tail == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 4096;
			uint32_t *q = realloc(p->queue, cap * sizeof(*q));
			if (!q)
				return &hd_error_no_memory;
			p->queue = q;
			p->cap = cap;
		}
	}
	p->queue[p->tail++] = id;
	return NULL;
}

// Whether type small lies at offset 0 of type big: big itself, its first
// member or base class, an array's first element, repeatedly.
static bool at_start(const struct hd_type_index *ix, uint32_t small, uint32_t big)
{
	uint32_t t = hd_type_strip(ix, big);
	for (int depth = 0; depth < 64 && t != HD_TYPE_NONE; depth++) {
		if (t == small)
			return true;
		const struct hd_type *ty = &ix->types[t];
		if (ty->kind == HD_TYPE_ARRAY) {
			t = hd_type_strip(ix, ty->target);
		} else if ((ty->kind == HD_TYPE_STRUCT || ty->kind == HD_TYPE_UNION) &&
			   ty->num_members && ix->members[ty->first_member].offset == 0) {
			t = hd_type_strip(ix, ix->members[ty->first_member].type);
		} else {
			return false;
		}
	}
	return false;
}

// Whether two typings of one block can both be true: one type, or arrays
// of it of two lengths, or one type at the start of the other (a pointer
// to a struct's first member).
static bool consistent(const struct hd_typing *ty, uint32_t a, uint32_t b)
{
	const struct hd_type_entry *x = &ty->entries[a], *y = &ty->entries[b];
	if (x->module == NO_MODULE || y->module == NO_MODULE)
		return false;
	// Two modules' DWARF: the same type when its name and size agree
	// ("struct point" and "struct point[4]").
	if (x->module != y->module) {
		size_t nx = strcspn(x->name, "["), ny = strcspn(y->name, "[");
		return x->size / x->count == y->size / y->count && nx == ny &&
		       !strncmp(x->name, y->name, nx);
	}
	const struct hd_type_index *ix = ty->mods[x->module].ix;
	return x->type == y->type || at_start(ix, x->type, y->type) ||
	       at_start(ix, y->type, x->type);
}

// Of two consistent typings, the one that says more: the type that holds
// the other at its start (a struct framed, not the array of its first
// member's type that the block's size allowed), else the longer array.
static uint32_t better(const struct hd_typing *ty, uint32_t a, uint32_t b)
{
	const struct hd_type_entry *x = &ty->entries[a], *y = &ty->entries[b];
	if (x->module == y->module && x->type != y->type) {
		const struct hd_type_index *ix = ty->mods[x->module].ix;
		return at_start(ix, y->type, x->type) ? a : b;
	}
	return y->size > x->size ? b : a;
}

// Strength of a block whose typings contradict each other: it stays
// untyped whatever else propagation finds (only a vtable is stronger
// evidence, and vtables come first).
#define CONFLICT 3

// Gives block id the entry, unless a stronger or larger typing holds it.
// Two typings that cannot both be true leave the block untyped.
struct hd_error *hd_typing_assign(struct propagation *p, uint32_t id,
				  uint32_t entry, uint8_t strength)
{
	struct hd_typing *ty = p->ty;
	uint32_t old = ty->block_entry[id];
	if (old == entry)
		return NULL;
	if ((ty->strength[id] & 0x7f) == CONFLICT)
		return NULL;
	if (old != HD_ENTRY_NONE) {
		uint8_t have = ty->strength[id] & 0x7f;
		if (have > strength)
			return NULL;
		if (have == strength) {
			if (!(ty->strength[id] & 0x80)) {
				ty->strength[id] |= 0x80;
				p->ambiguous++;
			}
			if (!consistent(ty, old, entry)) {
				ty->block_entry[id] = HD_ENTRY_NONE;
				ty->strength[id] = 0x80 | CONFLICT;
				p->conflicts++;
				return NULL;
			}
			if (better(ty, old, entry) == old)
				return NULL;
		}
	}
	if (p->track && old != HD_ENTRY_NONE &&
	    !(p->retyped[id / 64] & (1ull << (id % 64)))) {
		if (!HD_VEC_PUSH(p->retyped_ids, p->num_retyped, p->cap_retyped, id))
			return &hd_error_no_memory;
		p->retyped[id / 64] |= 1ull << (id % 64);
	}
	ty->block_entry[id] = entry;
	ty->strength[id] = (uint8_t)((ty->strength[id] & 0x80) | strength);
	return hd_typing_push(p, id);
}

// The struct whose member the pointer at offset is (after arrays and
// nested members), or HD_TYPE_NONE when the type is the pointer itself.
static uint32_t enclosing_struct(const struct hd_type_index *ix, uint32_t type,
				 uint64_t offset)
{
	uint32_t t = hd_type_strip(ix, type), parent = HD_TYPE_NONE;
	for (int depth = 0; depth < 64 && t != HD_TYPE_NONE; depth++) {
		const struct hd_type *ty = &ix->types[t];
		if (ty->kind == HD_TYPE_ARRAY) {
			uint32_t elem = hd_type_strip(ix, ty->target);
			if (elem == HD_TYPE_NONE || !ix->types[elem].size)
				return HD_TYPE_NONE;
			offset %= ix->types[elem].size;
			t = elem;
			continue;
		}
		if (ty->kind != HD_TYPE_STRUCT && ty->kind != HD_TYPE_UNION)
			return parent;
		// The last member that starts at or before the offset and
		// covers it (base classes come first).
		uint32_t next = HD_TYPE_NONE;
		uint64_t moff = 0;
		for (uint32_t i = 0; i < ty->num_members; i++) {
			const struct hd_member *m = &ix->members[ty->first_member + i];
			uint32_t mt = hd_type_strip(ix, m->type);
			uint64_t msize = mt == HD_TYPE_NONE ? 0 : ix->types[mt].size;
			if (m->offset <= offset && offset < m->offset + msize) {
				next = mt;
				moff = m->offset;
			}
		}
		if (next == HD_TYPE_NONE)
			return HD_TYPE_NONE;
		parent = t;
		offset -= moff;
		t = next;
	}
	return parent;
}

// Objects of a polymorphic class, and nodes reached through a link of a
// node of their own type (next, left, parent; a std::list header's
// _M_next), are allocated one by one: such a pointer never types an array,
// whatever the block's size. A pointer from elsewhere to a self-linked
// struct may still start an array of them.
static bool single_object(const struct hd_type_index *ix, uint32_t pointee,
			  uint32_t from_type, uint64_t from_offset)
{
	const struct hd_type *t = &ix->types[pointee];
	if (t->kind != HD_TYPE_STRUCT && t->kind != HD_TYPE_UNION)
		return false;
	return t->has_vptr ||
	       enclosing_struct(ix, from_type, from_offset) == pointee;
}

// Whether a pointee type can say what a block is: not an incomplete or
// opaque type, and not a base class, whose pointer may point at any class
// derived from it (a vtable names a polymorphic one).
static bool can_type_blocks(const struct hd_typing_module *tm, uint32_t st)
{
	const struct hd_type *t = &tm->ix->types[st];
	return t->size && !t->declaration && t->kind != HD_TYPE_VOID &&
	       t->kind != HD_TYPE_FUNCTION && t->kind != HD_TYPE_OTHER &&
	       !(tm->based[st / 8] & (1u << (st % 8)));
}

// The entry for a block that a T-typed pointer points at, or NONE.
static struct hd_error *entry_for_block(struct propagation *p, uint16_t module,
					uint32_t pointee, uint32_t id, bool one,
					uint32_t *ret)
{
	*ret = HD_ENTRY_NONE;
	const struct hd_type_index *ix = p->ty->mods[module].ix;
	uint32_t st = hd_type_strip(ix, pointee);
	if (st == HD_TYPE_NONE)
		return NULL;
	const struct hd_type *t = &ix->types[st];
	if (!can_type_blocks(&p->ty->mods[module], st))
		return NULL;
	uint32_t count = element_count(p->h, id, t->size,
				       t->kind == HD_TYPE_BASE && t->size == 1, one);
	if (!count)
		return NULL;
	return get_entry(p->ty, module, st, count, NULL, ret);
}

// Follows the typed pointer slots of (module, type) × count at base.
static struct hd_error *follow(struct propagation *p, uint16_t module,
			       uint32_t type, uint64_t count, uint64_t base,
			       uint64_t limit, bool windowed)
{
	const struct hd_type_index *ix = p->ty->mods[module].ix;
	uint32_t st = hd_type_strip(ix, type);
	if (st == HD_TYPE_NONE)
		return NULL;
	uint64_t tsize = ix->types[st].size;
	// Arrays of arrays and big arrays: walk elements by stride.
	while (ix->types[st].kind == HD_TYPE_ARRAY && ix->types[st].count) {
		uint32_t elem = hd_type_strip(ix, ix->types[st].target);
		if (elem == HD_TYPE_NONE || !ix->types[elem].size)
			return NULL;
		count *= ix->types[st].count;
		st = elem;
		tsize = ix->types[elem].size;
	}
	static __thread struct hd_ptr_slot slots[MAX_SLOTS];
	size_t total, n = hd_type_pointer_slots(ix, st, slots, MAX_SLOTS, &total);
	if (!n || !tsize)
		return NULL;
	// A global or a local (not a heap block): its bytes through a window.
	if (windowed)
		ensure_window(&p->mem, base, limit);
	for (uint64_t k = 0; k < count; k++) {
		uint64_t elem = base + k * tsize;
		if (elem + tsize > limit)
			break;
		for (size_t i = 0; i < n; i++) {
			if (slots[i].conservative || slots[i].pointee == HD_TYPE_NONE)
				continue;
			uint64_t v;
			if (!read_word(&p->mem, elem + slots[i].offset, &v))
				continue;
			int64_t id = hd_index_lookup(p->ix, v);
			// Only a pointer to the start types a block: a
			// member pointer says nothing about what contains it.
			if (id < 0 || p->h->addr[id] != v ||
			    hd_heap_state(p->h, (size_t)id) != HD_STATE_USED)
				continue;
			uint32_t e;
			uint32_t ps = hd_type_strip(ix, slots[i].pointee);
			bool one = ps != HD_TYPE_NONE &&
				   single_object(ix, ps, st, slots[i].offset);
			struct hd_error *err = entry_for_block(p, module,
							       slots[i].pointee,
							       (uint32_t)id, one, &e);
			if (!err && e != HD_ENTRY_NONE)
				err = hd_typing_assign(p, (uint32_t)id, e, 1);
			if (err)
				return err;
		}
	}
	return NULL;
}

// The word -> slot table that lets a block's references stand for reads of
// its members: only when every slot is a whole word and the slots come in
// offset order, so that following the references in word order visits the
// slots in the order reading the members would.
static struct hd_error *word_slots(struct hd_type_entry *e)
{
	uint64_t esize = e->count ? e->size / e->count : 0;
	if (!e->nslots || !esize || esize % 8 || esize / 8 > (1u << 20))
		return NULL;
	for (size_t i = 0; i < e->nslots; i++)
		if (e->slots[i].offset % 8 || e->slots[i].offset + 8 > esize ||
		    (i && e->slots[i].offset < e->slots[i - 1].offset))
			return NULL;
	uint32_t nw = (uint32_t)(esize / 8);
	int32_t *ws = malloc(nw * sizeof(*ws));
	if (!ws)
		return &hd_error_no_memory;
	for (uint32_t w = 0; w < nw; w++)
		ws[w] = -1;
	for (size_t i = e->nslots; i-- > 0;)
		ws[e->slots[i].offset / 8] = (int32_t)i;
	e->word_slot = ws;
	e->element_words = nw;
	return NULL;
}

// Resolves an entry's typed pointer members once.
struct hd_error *hd_typing_entry_slots(struct hd_typing *ty, uint32_t ei)
{
	struct hd_type_entry *e = &ty->entries[ei];
	if (e->slots_ready)
		return NULL;
	e->slots_ready = true;
	const struct hd_type_index *ix = ty->mods[e->module].ix;
	static __thread struct hd_ptr_slot slots[MAX_SLOTS];
	size_t total, n = hd_type_pointer_slots(ix, e->type, slots, MAX_SLOTS, &total);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += !slots[i].conservative && slots[i].pointee != HD_TYPE_NONE;
	if (!k)
		return NULL;
	struct hd_typed_slot *ts = calloc(k, sizeof(*ts));
	if (!ts)
		return &hd_error_no_memory;
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (slots[i].conservative || slots[i].pointee == HD_TYPE_NONE)
			continue;
		uint32_t st = hd_type_strip(ix, slots[i].pointee);
		const struct hd_type *t = st == HD_TYPE_NONE ? NULL : &ix->types[st];
		ts[k++] = (struct hd_typed_slot){
			.offset = slots[i].offset,
			.pointee = st,
			.single = HD_ENTRY_NONE,
			.psize = t ? t->size : 0,
			.chars = t && t->kind == HD_TYPE_BASE && t->size == 1,
			.one = t && single_object(ix, st, e->type, slots[i].offset),
			.usable = t && can_type_blocks(&ty->mods[e->module], st),
		};
	}
	// Another entry may have been added meanwhile: e may have moved.
	ty->entries[ei].slots = ts;
	ty->entries[ei].nslots = k;
	return word_slots(&ty->entries[ei]);
}

// The entry that slot i of entry ei gives a block of n of its pointee.
struct hd_error *hd_typing_slot_entry(struct hd_typing *ty, uint32_t ei,
				      size_t i, uint32_t n, uint32_t *ret)
{
	const struct hd_typed_slot *s = &ty->entries[ei].slots[i];
	if (n != 1)
		return get_entry(ty, ty->entries[ei].module, s->pointee, n, NULL,
				 ret);
	// The same single-object entry for every block.
	if (s->single == HD_ENTRY_NONE) {
		uint32_t e;
		struct hd_error *err = get_entry(ty, ty->entries[ei].module,
						 s->pointee, 1, NULL, &e);
		if (err)
			return err;
		// get_entry may have moved the entries.
		ty->entries[ei].slots[i].single = e;
	}
	*ret = ty->entries[ei].slots[i].single;
	return NULL;
}

// Types block t, which slot i of entry ei's block points at the start of.
static struct hd_error *type_target(struct propagation *p, uint32_t ei,
				    size_t i, uint32_t t)
{
	const struct hd_typed_slot *s = &p->ty->entries[ei].slots[i];
	uint32_t n = element_count(p->h, t, s->psize, s->chars, s->one), e;
	if (!n)
		return NULL;
	struct hd_error *err = hd_typing_slot_entry(p->ty, ei, i, n, &e);
	return err ? err : hd_typing_assign(p, t, e, 1);
}

// hd_typing_follow_block through the block's references: the words of its
// typed members that point at a used block's start were found by the scan,
// in word order, which is the order of the members (word_slots).
static struct hd_error *follow_refs(struct propagation *p, uint32_t id,
				    uint32_t ei)
{
	struct hd_typing *ty = p->ty;
	const struct hd_heap *h = p->h;
	const uint32_t *targets, *words;
	uint32_t n = hd_refs_row(p->refs, id, &targets, &words);
	if (!n)
		return NULL;
	uint32_t wpe = ty->entries[ei].element_words;
	uint64_t wlimit = typed_words(h, &ty->entries[ei], id);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t w = words[j];
		if (w >= wlimit)
			break;
		// Only a pointer to the start types a block: a member
		// pointer says nothing about what contains it.
		if (targets[j] & HD_EDGE_INTERIOR)
			continue;
		uint32_t r = w % wpe;
		int32_t first = ty->entries[ei].word_slot[r];
		if (first < 0)
			continue;
		// Slots of one word: a union's pointer members.
		for (size_t i = (size_t)first; i < ty->entries[ei].nslots &&
					       ty->entries[ei].slots[i].offset / 8 == r;
		     i++) {
			if (!ty->entries[ei].slots[i].usable)
				continue;
			struct hd_error *err = type_target(p, ei, i, targets[j]);
			if (err)
				return err;
		}
	}
	return NULL;
}

// Follows the typed members of a typed heap block: the hot loop of the
// propagation, one resolved slot list per entry, the block's memory found
// once.
struct hd_error *hd_typing_follow_block(struct propagation *p, uint32_t id)
{
	struct hd_typing *ty = p->ty;
	const struct hd_heap *h = p->h;
	uint32_t ei = ty->block_entry[id];
	// Untyped again since it was queued: its typings contradicted.
	if (ei == HD_ENTRY_NONE || ty->entries[ei].module == NO_MODULE)
		return NULL;
	struct hd_error *err = hd_typing_entry_slots(ty, ei);
	if (err)
		return err;
	uint64_t usable_src = hd_heap_usable(h, id);
	if (p->refs && ty->entries[ei].word_slot &&
	    usable_src / 8 < HD_REF_FAR_WORD && hd_refs_block_scanned(p->refs, id))
		return follow_refs(p, id, ei);
	uint64_t limit = h->addr[id] + usable_src;
	uint32_t count = ty->entries[ei].count;
	uint64_t esize = count ? ty->entries[ei].size / count : 0;
	// Elements past the ones the request surely held may be malloc's
	// rounding, with stale bytes in it: they type nothing.
	count = sure_count(h, &ty->entries[ei], id);
	const uint8_t *data = view_of(&p->mem, h->addr[id], usable_src);
	// Elements in memory never populated hold only zeros: no pointer
	// to follow (an array of 4 GiB never touched is not walked).
	const struct hd_view *hv = data ? view_at(&p->mem, h->addr[id]) : NULL;
	if (hv && !hv->sparse)
		hv = NULL;
	for (uint32_t k = 0; k < count; k++) {
		uint64_t elem = h->addr[id] + k * esize;
		if (elem + esize > limit)
			break;
		uint64_t lo, hi;
		if (hv && esize) {
			if (!hd_view_next_data(hv, elem, limit, &lo, &hi))
				break;
			if (lo >= elem + esize) {
				uint64_t skip = (lo - elem) / esize;
				if (skip >= count - k)
					break;
				k += (uint32_t)skip;
				elem += skip * esize;
			}
		}
		// Re-read: get_entry below may move the entries array.
		size_t nslots = ty->entries[ei].nslots;
		for (size_t i = 0; i < nslots; i++) {
			struct hd_typed_slot *s = &ty->entries[ei].slots[i];
			if (!s->usable)
				continue;
			uint64_t v, at = elem + s->offset;
			if (at + 8 > limit)
				continue;
			if (data)
				memcpy(&v, data + (at - h->addr[id]), 8);
			else if (!read_word(&p->mem, at, &v))
				continue;
			int64_t t = hd_index_lookup(p->ix, v);
			if (t < 0 || h->addr[t] != v ||
			    hd_heap_state(h, (size_t)t) != HD_STATE_USED)
				continue;
			err = type_target(p, ei, i, (uint32_t)t);
			if (err)
				return err;
		}
	}
	return NULL;
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

// Sorts a level's blocks and drops repeats (a block queued twice in one
// level is followed with the typing it has then, once is enough).
static struct hd_error *sort_level(struct propagation *p, uint32_t *ids,
				   size_t *n)
{
	size_t nb = p->h->num_blocks, k = *n;
	if (k < 2)
		return NULL;
	if (k < nb / 1024 || k < 64) {
		hd_qsort(ids, k, sizeof(*ids), id_cmp);
		size_t out = 1;
		for (size_t i = 1; i < k; i++)
			if (ids[i] != ids[out - 1])
				ids[out++] = ids[i];
		*n = out;
		return NULL;
	}
	// Large levels: a bitmap, read back in order (and left zeroed).
	if (!p->bits) {
		p->bits = calloc(nb / 64 + 1, sizeof(*p->bits));
		if (!p->bits)
			return &hd_error_no_memory;
	}
	for (size_t i = 0; i < k; i++)
		p->bits[ids[i] / 64] |= 1ull << (ids[i] % 64);
	size_t out = 0;
	for (size_t w = 0; w <= nb / 64; w++) {
		uint64_t b = p->bits[w];
		if (!b)
			continue;
		p->bits[w] = 0;
		while (b) {
			ids[out++] = (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(b));
			b &= b - 1;
		}
	}
	*n = out;
	return NULL;
}

// Follows the queued blocks to the fixpoint, level by level, each level
// in address order: a level of a hash table's entries is a million blocks
// in hash order, and following them in the order they lie in memory turns
// a cache miss per block into a stream.
static struct hd_error *follow_levels(struct propagation *p)
{
	uint32_t *cur = NULL;
	size_t cap = 0;
	struct hd_error *err = NULL;
	while (!err && p->tail) {
		uint32_t *level = p->queue;
		size_t n = p->tail, lcap = p->cap;
		p->queue = cur;
		p->cap = cap;
		p->head = p->tail = 0;
		cur = level;
		cap = lcap;
		err = sort_level(p, cur, &n);
		if (!err && p->refs && p->threads > 1 && n >= p->min_level) {
			err = hd_typing_follow_level_threads(p, cur, n);
			continue;
		}
		for (size_t i = 0; !err && i < n; i++) {
			if (p->refs) {
				// The block's references, then their
				// targets' entries, in three stages.
				if (i + 3 * PREFETCH_AHEAD < n)
					hd_refs_offsets_prefetch(p->refs, cur[i + 3 * PREFETCH_AHEAD]);
				if (i + 2 * PREFETCH_AHEAD < n)
					hd_refs_row_prefetch(p->refs, cur[i + 2 * PREFETCH_AHEAD]);
				if (i + PREFETCH_AHEAD < n)
					prefetch_targets(p, cur[i + PREFETCH_AHEAD]);
			}
			err = hd_typing_follow_block(p, cur[i]);
		}
	}
	free(cur);
	return err;
}

static struct hd_error *typed_globals(struct propagation *p)
{
	struct hd_typing *ty = p->ty;
	for (size_t m = 0; m < ty->num_mods; m++) {
		const struct hd_type_index *ix = ty->mods[m].ix;
		if (!ix)
			continue;
		uint64_t bias = ty->mods[m].m->bias;
		for (size_t i = 0; i < ix->num_variables; i++) {
			const struct hd_variable *v = &ix->variables[i];
			uint32_t st = hd_type_strip(ix, v->type);
			if (st == HD_TYPE_NONE || !ix->types[st].size)
				continue;
			struct hd_error *err = follow(p, (uint16_t)m, v->type, 1,
						      bias + v->addr,
						      bias + v->addr + ix->types[st].size,
						      true);
			if (err)
				return err;
		}
	}
	return NULL;
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

int hd_typing_local_type(const char *type_name, char *base, size_t len)
{
	static const char *const quals[] = {"const", "volatile", "restrict",
					    "__restrict", "__restrict__", "_Atomic"};
	size_t o = 0;
	int depth = 0, tmpl = 0;
	for (const char *s = type_name; *s;) {
		if (ident_char(*s)) {
			const char *e = s;
			while (ident_char(*e))
				e++;
			// Inside template arguments a qualifier is part of
			// the name ("std::pair<const int, S>").
			bool qual = false;
			for (size_t q = 0; !tmpl && q < sizeof(quals) / sizeof(quals[0]) && !qual; q++)
				qual = (size_t)(e - s) == strlen(quals[q]) &&
				       !strncmp(s, quals[q], (size_t)(e - s));
			if (!qual && !tmpl && depth)
				return -1; // a name after a '*': not a plain type
			if (!qual) {
				if (o + (size_t)(e - s) + 2 > len)
					return -1;
				if (o && ident_char(base[o - 1]))
					base[o++] = ' ';
				memcpy(base + o, s, (size_t)(e - s));
				o += (size_t)(e - s);
			}
			s = e;
			continue;
		}
		if (*s == '<')
			tmpl++;
		else if (*s == '>')
			tmpl--;
		if (!tmpl && *s == '*') {
			depth++;
		} else if (!tmpl && (*s == '[' || *s == '(' || *s == '&')) {
			return -1;
		} else if (*s != ' ' || (tmpl && o && base[o - 1] != ' ')) {
			if (o + 2 > len)
				return -1;
			base[o++] = *s;
		}
		s++;
	}
	while (o && base[o - 1] == ' ')
		o--;
	base[o] = '\0';
	return o ? depth : -1;
}

// Locals a front-end gave with a type name: "struct cache *", "Session *",
// "struct entry", qualified or not. Only plain and pointer-to types are
// understood.
static struct hd_error *typed_locals(struct propagation *p, struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_frames(t); i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (!f->local || !f->type_name)
			continue;
		char base[512];
		int depth = hd_typing_local_type(f->type_name, base, sizeof(base));
		if (depth < 0 || depth > 1)
			continue;
		for (size_t m = 0; m < p->ty->num_mods; m++) {
			const struct hd_type_index *ix = p->ty->mods[m].ix;
			if (!ix)
				continue;
			uint32_t st = hd_type_find_struct(ix, base);
			if (st == HD_TYPE_NONE)
				continue;
			struct hd_error *err = NULL;
			if (depth == 0) {
				err = follow(p, (uint16_t)m, st, 1, f->sp, f->caller_sp,
					     true);
			} else {
				uint64_t v;
				int64_t id;
				uint32_t e;
				if (read_word(&p->mem, f->sp, &v) &&
				    (id = hd_index_lookup(p->ix, v)) >= 0 &&
				    p->h->addr[id] == v &&
				    hd_heap_state(p->h, (size_t)id) == HD_STATE_USED) {
					err = entry_for_block(p, (uint16_t)m, st,
							      (uint32_t)id, false, &e);
					if (!err && e != HD_ENTRY_NONE)
						err = hd_typing_assign(p, (uint32_t)id, e, 1);
				}
			}
			if (err)
				return err;
			break;
		}
	}
	return NULL;
}

// ------------------------------------------------------------ vtables

struct vtable {
	uint64_t start, end;
	char *klass; // demangled class name
};

static int vtable_cmp(const void *a, const void *b)
{
	const struct vtable *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct hd_error *collect_vtables(struct hd_target *t,
					struct hd_debuginfo *di,
					struct vtable **ret, size_t *ret_n)
{
	struct vtable *vt = NULL;
	size_t n = 0, cap = 0;
	for (size_t m = 0; m < hd_target_num_modules(t); m++) {
		const struct hd_module *mod = hd_target_module(t, m);
		struct hd_elf_symbol *syms;
		size_t nsyms;
		struct hd_error *err = hd_debuginfo_module_objects(di, mod, &syms, &nsyms);
		if (err)
			return err;
		for (size_t i = 0; i < nsyms; i++) {
			if (strncmp(syms[i].name, "_ZTV", 4) != 0)
				continue;
			char *klass = NULL;
			char *d = hd_demangle(syms[i].name);
			if (d && strncmp(d, "vtable for ", 11) == 0)
				klass = strdup(d + 11);
			free(d);
			if (!klass)
				klass = strdup(syms[i].name + 4);
			struct vtable v = {
				.start = mod->bias + syms[i].value,
				.end = mod->bias + syms[i].value + syms[i].size,
				.klass = klass,
			};
			if (!klass || !HD_VEC_PUSH(vt, n, cap, v)) {
				free(klass);
				hd_elf_free_symbols(syms, nsyms);
				for (size_t k = 0; k < n; k++)
					free(vt[k].klass);
				free(vt);
				return &hd_error_no_memory;
			}
		}
		hd_elf_free_symbols(syms, nsyms);
	}
	hd_qsort(vt, n, sizeof(*vt), vtable_cmp);
	*ret = vt;
	*ret_n = n;
	return NULL;
}

static const struct vtable *find_vtable(const struct vtable *vt, size_t n,
					uint64_t addr)
{
	size_t lo = HD_FIRST_ENDING_AFTER(vt, n, end, addr);
	// A vtable pointer points past the offset-to-top and RTTI words.
	if (lo < n && vt[lo].start < addr && addr < vt[lo].end)
		return &vt[lo];
	return NULL;
}

static struct hd_error *vtable_types(struct propagation *p, struct hd_target *t,
				     struct hd_debuginfo *di)
{
	struct vtable *vt = NULL;
	size_t nvt = 0;
	struct hd_error *err = collect_vtables(t, di, &vt, &nvt);
	if (err || !nvt) {
		free(vt);
		return err;
	}
	uint64_t lo = vt[0].start, hi = 0;
	for (size_t i = 0; i < nvt; i++)
		if (vt[i].end > hi)
			hi = vt[i].end;
	const struct hd_heap *h = p->h;
	uint64_t done = h->num_blocks ? h->addr[0] : 0;
	for (size_t id = 0; id < h->num_blocks && !err; id++) {
		if (hd_heap_state(h, id) != HD_STATE_USED)
			continue;
		// A core's pages behind this pass count toward RSS until
		// given back.
		if (h->addr[id] - done >= (16ull << 20)) {
			hd_target_release(t, done, h->addr[id] - done);
			done = h->addr[id];
		}
		uint64_t w;
		if (!read_word(&p->mem, h->addr[id], &w) || w <= lo || w >= hi)
			continue;
		const struct vtable *v = find_vtable(vt, nvt, w);
		if (!v)
			continue;
		uint32_t e = HD_ENTRY_NONE;
		for (size_t m = 0; m < p->ty->num_mods && e == HD_ENTRY_NONE && !err; m++) {
			const struct hd_type_index *ix = p->ty->mods[m].ix;
			uint32_t st = ix ? hd_type_find_struct(ix, v->klass) : HD_TYPE_NONE;
			if (st != HD_TYPE_NONE && ix->types[st].size <=
			    (hd_heap_extent(h, id)))
				err = get_entry(p->ty, (uint16_t)m, st, 1, NULL, &e);
		}
		if (!err && e == HD_ENTRY_NONE)
			err = get_entry(p->ty, NO_MODULE, 0, 1, v->klass, &e);
		if (!err) {
			p->ty->entries[e].from_vtable = true;
			err = hd_typing_assign(p, (uint32_t)id, e, 2);
		}
	}
	for (size_t i = 0; i < nvt; i++)
		free(vt[i].klass);
	free(vt);
	return err;
}

// ------------------------------------------------------------ public

struct hd_error *hd_typing_compute(struct hd_target *t, struct hd_debuginfo *di,
				   const struct hd_heap *h,
				   const struct hd_index *ix,
				   const struct hd_refs *refs, unsigned threads,
				   struct hd_typing **ret)
{
	struct hd_typing *ty = calloc(1, sizeof(*ty));
	if (!ty)
		return &hd_error_no_memory;
	ty->target = t;
	ty->heap = h;
	ty->num_blocks = h->num_blocks;
	ty->block_entry = malloc((h->num_blocks ? h->num_blocks : 1) * sizeof(uint32_t));
	ty->strength = calloc(h->num_blocks ? h->num_blocks : 1, 1);
	struct propagation p = {.ty = ty, .h = h, .ix = ix, .refs = refs,
				.threads = hd_threads_wanted(threads),
				.threads_used = 1};
	// Only when asked for (--jobs): on a 2-CPU machine busy with other
	// work, two threads took twice as long as one (every batch waits for
	// the slower thread), and the propagation is a fifth of the analysis.
	if (!threads)
		p.threads = 1;
	if (p.threads > HD_TYPING_MAX_THREADS)
		p.threads = HD_TYPING_MAX_THREADS;
	p.min_level = h->num_blocks / 256 < THREADED_LEVEL ? h->num_blocks / 256
							  : THREADED_LEVEL;
	if (p.min_level < 2)
		p.min_level = 2;
	struct hd_error *err = NULL;
	if (!ty->block_entry || !ty->strength)
		err = &hd_error_no_memory;
	else
		memset(ty->block_entry, 0xff, h->num_blocks * sizeof(uint32_t));
	if (!err)
		err = build_indexes(ty, t, di);
	double t0 = hd_seconds();
	if (!err)
		err = memory_init(&p.mem, t, h);
	// A block found contradictory was followed while it had a type:
	// what it typed had no consistent evidence either. Then once more,
	// from the roots, with such blocks untyped from the start.
	for (int round = 0; !err && round < 2; round++) {
		if (round) {
			if (!p.conflicts)
				break;
			p.ambiguous = 0;
			for (size_t id = 0; id < h->num_blocks; id++) {
				bool bad = (ty->strength[id] & 0x7f) == CONFLICT;
				ty->block_entry[id] = HD_ENTRY_NONE;
				ty->strength[id] = bad ? 0x80 | CONFLICT : 0;
				p.ambiguous += bad;
			}
			p.head = p.tail = 0;
		}
		err = vtable_types(&p, t, di);
		if (!err)
			err = typed_globals(&p);
		if (!err)
			err = typed_locals(&p, t);
		if (!err)
			err = follow_levels(&p);
	}
	ty->info.ambiguous_blocks = p.ambiguous;
	if (!err && p.mem.no_memory)
		err = &hd_error_no_memory;
	memory_deinit(&p.mem);
	hd_typing_level_parts_deinit(&p);
	free(p.queue);
	free(p.bits);
	if (err) {
		hd_typing_destroy(ty);
		return err;
	}
	for (size_t id = 0; id < h->num_blocks; id++) {
		if (ty->block_entry[id] == HD_ENTRY_NONE)
			continue;
		ty->info.typed_blocks++;
		ty->info.vtable_blocks += (ty->strength[id] & 0x7f) == 2;
	}
	// Only the propagation needs the strengths: keep 4 bytes per block.
	free(ty->strength);
	ty->strength = NULL;
	ty->info.bytes = h->num_blocks * sizeof(*ty->block_entry);
	for (size_t i = 0; i < ty->num_entries; i++)
		ty->info.bytes += sizeof(ty->entries[i]) + 2 * (ty->entries[i].nwords / 8 + 1) +
				  ty->entries[i].nslots * sizeof(*ty->entries[i].slots);
	ty->info.propagate_seconds = hd_seconds() - t0;
	ty->info.propagate_threads = p.threads_used;
	*ret = ty;
	return NULL;
}

void hd_typing_destroy(struct hd_typing *ty)
{
	if (!ty)
		return;
	// The indexes belong to the process-wide cache.
	for (size_t i = 0; ty->mods && i < ty->num_mods; i++)
		free(ty->mods[i].based);
	free(ty->mods);
	for (size_t i = 0; i < ty->num_entries; i++) {
		free(ty->entries[i].name);
		free(ty->entries[i].typed);
		free(ty->entries[i].slots);
		free(ty->entries[i].word_slot);
	}
	free(ty->entries);
	struct dedupe *d = ty->dedupe;
	if (d) {
		free(d->keys);
		free(d->vals);
		free(d);
	}
	free(ty->block_entry);
	free(ty->strength);
	free(ty->scratch_typed);
	free(ty);
}

const uint8_t *hd_typing_pointer_map(void *arg, size_t block, size_t nwords)
{
	struct hd_typing *ty = arg;
	uint32_t ei = ty->block_entry[block];
	if (ei == HD_ENTRY_NONE)
		return NULL;
	const struct hd_type_entry *e = &ty->entries[ei];
	if (e->module == NO_MODULE)
		return NULL; // a class name without a layout: nothing typed
	size_t covered = e->nwords < nwords ? e->nwords : nwords;
	// Small blocks, the common case: the map as one word.
	if (nwords <= 56 && e->nwords <= 56 && ty->scratch_words >= 64) {
		uint64_t t = 0;
		memcpy(&t, e->typed, (e->nwords + 7) / 8);
		t &= (1ULL << covered) - 1;
		memcpy(ty->scratch_typed, &t, 8);
		return ty->scratch_typed;
	}
	if (nwords > ty->scratch_words || ty->scratch_words < 64) {
		size_t want = nwords < 64 ? 64 : nwords;
		uint8_t *t = realloc(ty->scratch_typed, want / 8 + 1);
		if (!t)
			return NULL;
		ty->scratch_typed = t;
		ty->scratch_words = want;
	}
	// Words past the type (a flexible array member, malloc's slack) are
	// typed as nothing.
	memset(ty->scratch_typed, 0, nwords / 8 + 1);
	memcpy(ty->scratch_typed, e->typed, covered / 8);
	for (size_t w = covered / 8 * 8; w < covered; w++)
		if (e->typed[w / 8] & (1u << (w % 8)))
			ty->scratch_typed[w / 8] |= (uint8_t)(1u << (w % 8));
	return ty->scratch_typed;
}

bool hd_typing_word_typed(void *arg, size_t block, uint64_t word)
{
	const struct hd_typing *ty = arg;
	uint32_t ei = ty->block_entry[block];
	if (ei == HD_ENTRY_NONE)
		return false;
	const struct hd_type_entry *e = &ty->entries[ei];
	// A class name without a layout types nothing; words past the type
	// (a flexible array member, malloc's slack) neither.
	return e->module != NO_MODULE && word < e->nwords &&
	       (e->typed[word / 8] & (1u << (word % 8)));
}

void hd_typing_get_info(const struct hd_typing *ty, struct hd_typing_info *ret)
{
	*ret = ty->info;
}

// A string a C program would print: printable bytes up to a NUL.
static bool text_label(const struct hd_typing *ty, size_t id, char *buf,
		       size_t len)
{
	const struct hd_heap *h = ty->heap;
	uint8_t data[48];
	uint64_t usable = hd_heap_usable(h, id);
	size_t n = usable < sizeof(data) ? usable : sizeof(data);
	struct hd_error *err = hd_target_read(ty->target, h->addr[id], data, n);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	size_t k = 0;
	while (k < n && data[k] && (isprint(data[k]) || data[k] == '\t' || data[k] == '\n'))
		k++;
	if (k < 4 || (k < n && data[k] != 0))
		return false;
	char text[40];
	size_t show = k < 24 ? k : 24, j = 0;
	for (size_t i = 0; i < show && j + 2 < sizeof(text); i++)
		text[j++] = isprint(data[i]) ? (char)data[i] : ' ';
	text[j] = '\0';
	snprintf(buf, len, "char[] \"%s%s\"", text, k > show ? "…" : "");
	return true;
}

bool hd_typing_block_name(const struct hd_typing *ty, size_t id, char *buf,
			  size_t len)
{
	if (id < ty->num_blocks && ty->block_entry[id] != HD_ENTRY_NONE) {
		const struct hd_type_entry *e = &ty->entries[ty->block_entry[id]];
		uint32_t lo = sure_count(ty->heap, e, id);
		if (e->module == NO_MODULE || lo == e->count) {
			snprintf(buf, len, "%s", e->name);
			return true;
		}
		// A length the block cannot tell: every one malloc could have
		// been asked for ("long int[4096..4097]"). Not even a string's
		// NUL bounds it: the bytes after a fresh block's request may
		// be an older string's.
		int base = (int)(strrchr(e->name, '[') - e->name);
		snprintf(buf, len, "%.*s[%u..%u]", base, e->name, lo, e->count);
		return true;
	}
	if (id < ty->num_blocks && text_label(ty, id, buf, len))
		return false;
	struct hd_block b;
	hd_heap_block(ty->heap, id, &b);
	snprintf(buf, len, "unk<%llu>", (unsigned long long)b.usable);
	return false;
}

void hd_typing_block_member(const struct hd_typing *ty, size_t id,
			    uint64_t offset, char *buf, size_t len)
{
	uint32_t ei = id < ty->num_blocks ? ty->block_entry[id] : HD_ENTRY_NONE;
	if (ei == HD_ENTRY_NONE || ty->entries[ei].module == NO_MODULE) {
		snprintf(buf, len, "+0x%llx", (unsigned long long)offset);
		return;
	}
	const struct hd_type_entry *e = &ty->entries[ei];
	const struct hd_type_index *ix = ty->mods[e->module].ix;
	uint64_t tsize = e->count ? e->size / e->count : 0;
	if (e->count > 1 && tsize) {
		int n = snprintf(buf, len, "[%llu].", (unsigned long long)(offset / tsize));
		if (n > 0 && (size_t)n < len)
			hd_type_member_path(ix, e->type, offset % tsize, buf + n, len - (size_t)n);
		// An element that is itself the pointer: "[6]", not "[6].+0x0".
		char *dot = n > 0 && (size_t)n < len ? buf + n - 1 : NULL;
		if (dot && strcmp(dot + 1, "+0x0") == 0)
			*dot = '\0';
		return;
	}
	hd_type_member_path(ix, e->type, offset, buf, len);
}

bool hd_typing_global_member(const struct hd_typing *ty, uint64_t addr,
			     char *type, size_t tlen, char *path, size_t plen)
{
	for (size_t m = 0; m < ty->num_mods; m++) {
		const struct hd_type_index *ix = ty->mods[m].ix;
		if (!ix || !ix->num_variables)
			continue;
		uint64_t link = addr - ty->mods[m].m->bias;
		// Last variable starting at or below the address.
		size_t lo = 0, hi = ix->num_variables;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (ix->variables[mid].addr <= link)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			continue;
		const struct hd_variable *v = &ix->variables[lo - 1];
		uint32_t st = hd_type_strip(ix, v->type);
		if (st == HD_TYPE_NONE || link >= v->addr + ix->types[st].size)
			continue;
		hd_type_name(ix, v->type, type, tlen);
		hd_type_member_path(ix, v->type, link - v->addr, path, plen);
		// The variable itself (a pointer, say): no member to name.
		if (strcmp(path, "+0x0") == 0)
			path[0] = '\0';
		return true;
	}
	return false;
}
