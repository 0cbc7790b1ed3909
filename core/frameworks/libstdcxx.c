// The libstdc++ module: every standard container of static or heap storage
// (found through DWARF with hd_fw_objects) becomes one semantic node that
// owns its blocks, so "std::map<int, Session> g_sessions" is one node with
// its real retained size.
//
// Layouts are those of gcc 12's libstdc++ (the new string/list ABI):
//   std::vector            {start, finish, end_of_storage}: the buffer
//   std::__cxx11::list     header {next, prev} + size: one block per node
//   std::forward_list      head {next}: one block per node
//   std::map/set/multi*    _Rb_tree_impl ends with the header {color,
//                          parent, left, right} + node_count: node blocks
//   std::unordered_*       _Hashtable {buckets, bucket_count,
//                          before_begin, element_count, ...,
//                          single_bucket}: node blocks and the bucket
//                          array (unless it is the single inline bucket)
//   std::__cxx11::basic_string  {ptr, length, capacity | local buffer}:
//                          the heap buffer when ptr is not the local one
//   std::shared_ptr        {ptr, control block}: the control block (with
//                          the object inside it for make_shared)
//   std::deque             {map, map_size, start, finish iterators}: the
//                          map array and the chunk buffers
// Every node pointer must be the start of a used heap block and counts must
// match, else the container is skipped with a warning.
//
// Framework bytes (hd_fw_mark): the links of each node (list 16, forward
// list 8, rb-tree 32, hash node 8 plus 8 when it caches the hash code),
// the spare capacity of a vector or string buffer, a bucket array and a
// deque's map whole, the counts of a make_shared block (16) and a
// separate control block whole. The rest of a block is the application's.
//
// The elements of a container are other containers' holders: the objects
// matching our prefixes inside each element (hd_fw_objects_in with the
// element type DWARF names) become nodes held by the node block, so the
// outer container's node keeps them alive. Containers nest through a work
// queue, not recursion: a container's elements wait in it as one batch,
// and are listed, in order, when the queue reaches them.
//
// This file: detect, the work queue and one node per container, the ops
// struct; libstdcxx_internal.h lists the rest.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameworks/libstdcxx_internal.h"
#include "semantic/fw_fast.h"
#include "util/hash.h"

// The containers' type names, as DWARF spells them.
#define STL_PREFIXES \
	"std::vector<", "std::__cxx11::list<", "std::list<", \
	"std::forward_list<", "std::map<", "std::multimap<", "std::set<", \
	"std::multiset<", "std::unordered_map<", "std::unordered_multimap<", \
	"std::unordered_set<", "std::unordered_multiset<", \
	"std::__cxx11::basic_string<", "std::basic_string<", \
	"std::shared_ptr<", "std::deque<"

static const char *const prefixes[] = { STL_PREFIXES };
#define NUM_PREFIXES (sizeof(prefixes) / sizeof(prefixes[0]))

// The same prefixes in an array of their own, for the elements of batches:
// hd_fw_objects_in keeps a memo per array, so batches listed later leave
// the memo of prefixes as the calls at once would have
// (hd_fw_objects_touch).
static const char *const batch_prefixes[NUM_PREFIXES] = { STL_PREFIXES };

struct hd_error *stl_grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return NULL;
	size_t c = *cap ? *cap * 2 : 64;
	while (c <= n)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	*p = q;
	*cap = c;
	return NULL;
}

// The slot of key in s's pages (cap non-zero): its page's, or the empty
// one where it would go.
static size_t addr_slot(const struct addrset *s, uint64_t key)
{
	size_t i = hd_hash_u64(key) & (s->cap - 1);
	while (s->pages[i].key && s->pages[i].key != key)
		i = (i + 1) & (s->cap - 1);
	return i;
}

// The word of addr (8-aligned) in its page of bits.
static uint64_t addr_word(uint64_t addr)
{
	return (addr & ((1u << ADDR_PAGE_SHIFT) - 1)) / 8;
}

// The page of bits of key (addr >> ADDR_PAGE_SHIFT, + 1), made if new;
// NULL without memory.
static uint64_t *addr_page(struct addrset *s, uint64_t key)
{
	if (s->last.key == key)
		return s->last.bits;
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct addrpage *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->pages[i].key)
				continue;
			size_t j = hd_hash_u64(s->pages[i].key) & (cap - 1);
			while (v[j].key)
				j = (j + 1) & (cap - 1);
			v[j] = s->pages[i];
		}
		free(s->pages);
		s->pages = v;
		s->cap = cap;
	}
	size_t i = addr_slot(s, key);
	if (!s->pages[i].key) {
		uint64_t *bits = calloc((1u << ADDR_PAGE_SHIFT) / 8 / 64, sizeof(*bits));
		if (!bits)
			return NULL;
		s->pages[i] = (struct addrpage){ key, bits };
		s->n++;
	}
	s->last = s->pages[i];
	return s->last.bits;
}

// Adds addr (non-zero) to s; *fresh is false if it was in.
static struct hd_error *addr_add(struct addrset *s, uint64_t addr, bool *fresh)
{
	*fresh = false;
	if (addr % 8)
		return hd_u64set_add(&s->odd, addr, fresh) ? NULL
		       : hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	uint64_t *bits = addr_page(s, (addr >> ADDR_PAGE_SHIFT) + 1);
	if (!bits)
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	uint64_t w = addr_word(addr);
	uint64_t bit = 1ull << (w % 64);
	*fresh = !(bits[w / 64] & bit);
	bits[w / 64] |= bit;
	return NULL;
}

// Whether addr (non-zero) is in s.
static bool addr_has(struct addrset *s, uint64_t addr)
{
	if (addr % 8)
		return hd_u64set_has(&s->odd, addr);
	uint64_t key = (addr >> ADDR_PAGE_SHIFT) + 1;
	const uint64_t *bits = NULL;
	if (s->last.key == key) {
		bits = s->last.bits;
	} else if (s->cap) {
		bits = s->pages[addr_slot(s, key)].bits;
	}
	uint64_t w = addr_word(addr);
	return bits && (bits[w / 64] >> (w % 64) & 1);
}

static void addr_free(struct addrset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->pages[i].bits);
	free(s->pages);
	hd_u64set_free(&s->odd);
}

// The type named s (src: where that name lives, for the recent ones),
// entered if new; NULL without memory.
struct stl_type *stl_intern(struct strtab *t, const char *src)
{
	size_t r = ((uintptr_t)src >> 3) & 63;
	if (t->recent_src[r] == src && src)
		return t->recent[r];
	const char *s = src ? src : "";
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct stl_type **v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i])
				continue;
			size_t j = hd_hash_str(t->v[i]->name) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = t->v[i];
		}
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	size_t i = hd_hash_str(s) & (t->cap - 1);
	for (; t->v[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->v[i]->name, s) == 0)
			break;
	if (!t->v[i]) {
		// Ids fit a queue entry (QE_MAX_TYPES).
		if (t->n + 1 >= QE_MAX_TYPES)
			return NULL;
		struct stl_type **byid = realloc(t->byid, (t->n + 1) * sizeof(*byid));
		if (!byid)
			return NULL;
		t->byid = byid;
		struct stl_type *ty = calloc(1, sizeof(*ty));
		if (!ty || !(ty->name = strdup(s))) {
			free(ty);
			return NULL;
		}
		ty->id = (uint32_t)t->n;
		byid[t->n] = ty;
		ty->kind = stl_kind_of(s);
		t->v[i] = ty;
		t->n++;
	}
	t->recent_src[r] = src;
	t->recent[r] = t->v[i];
	return t->v[i];
}

void stl_strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		struct stl_type *ty = t->v[i];
		if (!ty)
			continue;
		free(ty->name);
		free(ty->vt);
		free(ty->short_elem);
		free(ty->elem_type);
		free(ty->short_type);
		free(ty->str_elem);
		free(ty->deque_ptr);
		free(ty);
	}
	free(t->v);
	free(t->byid);
}

// Fills what ty's name says of its elements and its short name, the first
// time a container of the type is looked at.
struct hd_error *stl_type_ready(struct hd_fw *fw, struct stl_type *ty)
{
	if (ty->ready)
		return NULL;
	char vt[1024];
	if (ty->kind != K_STRING && stl_value_type(ty->name, ty->kind, vt, sizeof(vt))) {
		if (!(ty->vt = strdup(vt)) || !(ty->short_elem = stl_short_type(vt)))
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		ty->has_vt = true;
		struct hd_error *e = hd_fw_type_size(fw, vt, &ty->esize);
		if (e) {
			hd_error_destroy(e); // a scalar: nothing nested
			ty->esize = stl_scalar_size(vt);
		} else if (!(ty->elem_type = strdup(vt))) {
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		}
	}
	if (!(ty->short_type = stl_short_type(ty->name)))
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	ty->ready = true;
	return NULL;
}

// Whether o lies in a heap block (a typed block's member or element): its
// container is looked at in a pass of its own (block_container).
static bool in_block(struct hd_fw *fw, const struct hd_fw_object *o)
{
	struct hd_block b;
	return o->holder != HD_DOM_NONE && hd_fw_vertex_block(fw, o->holder, &b);
}

// p for o: false without memory.
static bool pending_of(struct ctx *c, const struct hd_fw_object *o,
		       struct pending *p)
{
	p->addr = o->addr;
	p->size = o->size;
	p->holder = o->holder;
	p->t = stl_intern(&c->types, o->type);
	// Where a container is tells a person which it is, in its node's
	// label and in warnings; when only block names are kept, nobody
	// reads it (NULL).
	p->where = NULL;
	if (!c->names_only && !(p->where = strdup(o->where ? o->where : "")))
		return false;
	if (!p->t) {
		free(p->where);
		return false;
	}
	return true;
}

// Appends e to the queue, with where (the queue's then, NULL when names
// are not kept; freed on failure).
static struct hd_error *queue_push(struct ctx *c, struct qent e, char *where)
{
	size_t cap = c->cap_queue;
	struct hd_error *err = stl_grow((void **)&c->queue, &c->cap_queue,
					c->num_queue, sizeof(*c->queue));
	if (!err && !c->names_only && (cap != c->cap_queue || !c->wheres)) {
		char **w = realloc(c->wheres, c->cap_queue * sizeof(*w));
		if (!w)
			err = hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		else
			c->wheres = w;
	}
	if (err) {
		free(where);
		return err;
	}
	if (c->wheres)
		c->wheres[c->num_queue] = where;
	c->queue[c->num_queue++] = e;
	return NULL;
}

// hd_fw_objects' and hd_fw_objects_in's call-back: queue the container
// (at the top, only those of globals: the heap blocks' come later).
static struct hd_error *enqueue(struct hd_fw *fw, const struct hd_fw_object *o,
				void *arg)
{
	struct ctx *c = arg;
	if (c->top && in_block(fw, o))
		return NULL;
	struct pending p;
	if (!pending_of(c, o, &p))
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	struct qent e = { p.addr, p.holder, QE_CONTAINER | p.t->id << 8 };
	struct hd_error *err = queue_push(c, e, p.where);
	return err ? err : queue_push(c, (struct qent){ .a = p.size }, NULL);
}

// hd_fw_objects_in's call-back when a batch is expanded: the element's
// containers, looked at once the call is over (the memo of its objects is
// free again for the containers' own calls).
static struct hd_error *collect(struct hd_fw *fw, const struct hd_fw_object *o,
				void *arg)
{
	struct ctx *c = arg;
	(void)fw;
	struct hd_error *err = stl_grow((void **)&c->found, &c->cap_found,
					c->num_found, sizeof(*c->found));
	if (err)
		return err;
	if (!pending_of(c, o, &c->found[c->num_found]))
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	c->num_found++;
	return NULL;
}

// ------------------------------------------------------------ driving

// The name of element i of a container at where: by position
// ("g_sessions[2]"), a shared_ptr's object as "(*g_blob)"; "" when only
// block names are kept (nobody reads it).
static void element_where(const char *where, enum kind k, size_t i,
			   char *buf, size_t len)
{
	buf[0] = '\0';
	if (!where)
		; // names only: nobody reads it
	else if (k == K_SHARED)
		snprintf(buf, len, "(*%s)", where);
	else
		snprintf(buf, len, "%s[%zu]", where, i);
}

// Adds (addr, type) to s; *fresh is false if addr was first added with
// type (another type at the same address lists other objects).
static struct hd_error *elem_add(struct elemset *s, uint64_t addr,
				 const char *type, bool *fresh)
{
	struct elemtype *et = NULL;
	bool other = false; // first added with another type
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].type == type)
			et = &s->v[i];
		else if (!other)
			other = addr_has(&s->v[i].first, addr);
	}
	*fresh = !et || !addr_has(&et->first, addr);
	if (!*fresh || other)
		return NULL;
	if (!et) {
		struct elemtype *v = realloc(s->v, (s->n + 1) * sizeof(*v));
		if (!v)
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		s->v = v;
		et = &v[s->n++];
		*et = (struct elemtype){ .type = type };
	}
	bool is_new;
	return addr_add(&et->first, addr, &is_new);
}

static void elemset_free(struct elemset *s)
{
	for (size_t i = 0; i < s->n; i++)
		addr_free(&s->v[i].first);
	free(s->v);
}

// Queues the containers inside the container's elements: as a batch of its
// elements, listed when the queue reaches it, when that cannot change what
// the listing says; else each container now, as found.
static struct hd_error *nest(struct ctx *c, const struct pending *p,
			     enum kind k)
{
	struct stl_type *ty = (struct stl_type *)p->t;
	if (!ty->whole) {
		ty->whole = hd_fw_objects_whole(c->fw, c->elem_type, prefixes,
						NUM_PREFIXES) ? 1 : -1;
		ty->has_elem_key = hd_fw_type_lookup(c->fw, c->elem_type,
						     &ty->elem_key);
	}
	if (ty->whole > 0) {
		if (!c->num_elems)
			return NULL;
		// Listed later through batch_prefixes: every list is whole
		// whatever the memo holds; the memo of prefixes is left as
		// the calls now would leave it (for the types that are not
		// whole, listed at once).
		hd_fw_objects_touch(c->fw, c->elem_type, prefixes, NUM_PREFIXES,
				    c->num_elems);
		if (c->num_elems == 1 && k == K_SHARED) {
			bool fresh;
			struct hd_error *err = elem_add(&c->queued, c->elems[0].addr,
							ty->elem_type, &fresh);
			if (err || !fresh)
				return err;
		}
		char *where = p->where ? strdup(p->where) : NULL;
		if (p->where && !where)
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		uint32_t bits = ty->id << 8 | (uint32_t)k << 4;
		if (c->num_elems == 1)
			return queue_push(c, (struct qent){ c->elems[0].addr,
				c->elems[0].holder, bits | QE_ONE }, where);
		struct hd_error *err = stl_grow((void **)&c->qelems, &c->cap_qelems,
						c->num_qelems + c->num_elems - 1,
						sizeof(*c->qelems));
		if (err) {
			free(where);
			return err;
		}
		memcpy(c->qelems + c->num_qelems, c->elems,
		       c->num_elems * sizeof(*c->elems));
		c->num_qelems += c->num_elems;
		return queue_push(c, (struct qent){ c->num_elems, 0, bits | QE_ELEMS },
				  where);
	}
	char where[1200];
	struct hd_error *err = NULL;
	for (size_t i = 0; i < c->num_elems && !err; i++) {
		element_where(p->where, k, i, where, sizeof(where));
		err = hd_fw_objects_in(c->fw, c->elem_type, c->elems[i].addr,
				       c->elems[i].holder, where, prefixes,
				       NUM_PREFIXES, enqueue, c);
	}
	return err;
}

// The DWARF name of the container's node type, spelled as gcc spells the
// value type in the container's own name ("> >" between closing brackets),
// or false when its blocks are not nodes.
bool stl_node_dwarf_name(enum kind k, const char *vt, bool cached,
			 char *buf, size_t len)
{
	const char *tmpl = k == K_LIST ? "std::_List_node"
			 : k == K_FLIST ? "std::_Fwd_list_node"
			 : k == K_TREE ? "std::_Rb_tree_node"
			 : k == K_HASH ? "std::__detail::_Hash_node" : NULL;
	if (!tmpl || !*vt)
		return false;
	const char *suffix = k != K_HASH ? "" : cached ? ", true" : ", false";
	size_t n = strlen(vt);
	bool space = !*suffix && vt[n - 1] == '>';
	snprintf(buf, len, "%s<%s%s%s>", tmpl, vt, suffix, space ? " " : "");
	return true;
}

// The label of the name spec gives a block of a container of type t:
// written out and interned the first time (when hd_fw_name would have
// interned it), then found by spec. UINT32_MAX without memory.
static uint32_t name_label(struct ctx *c, const struct stl_type *t,
			   const struct name_spec *spec)
{
	if (spec->how == HOW_LABEL)
		return (uint32_t)spec->n;
	if (spec->how == HOW_STRING) {
		// A shared_ptr's control block, by its own type: kept by
		// vertex.
		uint32_t label = hd_fw_label(c->fw, c->node_name);
		struct sp_name *sp = &c->sp_names[(c->sp_pending.v * 2 +
						   c->sp_pending.inplace) % 1024];
		if (label != UINT32_MAX) {
			*sp = c->sp_pending;
			sp->label = label;
			sp->set = true;
			if (c->sp_pending_key)
				c->sp_entries[c->sp_pending_key % 1024] =
					(struct sp_entry){ c->sp_pending_key, label, true };
		}
		return label;
	}
	struct name_memo *m = &c->labels;
	uint64_t h = hd_hash_u64((uint64_t)(uintptr_t)t ^ (uint64_t)(uintptr_t)spec->a * 31 ^
			    spec->n * 0x9e3779b97f4a7c15ull ^ spec->how);
	if (m->cap) {
		for (size_t i = h & (m->cap - 1); m->v[i].t; i = (i + 1) & (m->cap - 1)) {
			const struct name_key *k = &m->v[i];
			if (k->t == t && k->a == spec->a && k->n == spec->n &&
			    k->how == spec->how)
				return k->label;
		}
	}
	stl_name_render(c, spec, c->name_buf);
	uint32_t label = hd_fw_label(c->fw, c->name_buf);
	if (label == UINT32_MAX)
		return label;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct name_key *v = calloc(cap, sizeof(*v));
		if (!v)
			return label; // not kept: written out again next time
		for (size_t i = 0; i < m->cap; i++) {
			const struct name_key *k = &m->v[i];
			if (!k->t)
				continue;
			size_t j = hd_hash_u64((uint64_t)(uintptr_t)k->t ^ (uint64_t)(uintptr_t)k->a * 31 ^
					  k->n * 0x9e3779b97f4a7c15ull ^ k->how) & (cap - 1);
			while (v[j].t)
				j = (j + 1) & (cap - 1);
			v[j] = *k;
		}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	size_t i = h & (m->cap - 1);
	while (m->v[i].t)
		i = (i + 1) & (m->cap - 1);
	m->v[i] = (struct name_key){ t, spec->a, spec->n, spec->how, label };
	m->n++;
	return label;
}

// Whether vertex v is an element buffer a vector or deque walked.
static bool buffer_has(const struct ctx *c, uint32_t v)
{
	return c->buffers && v < c->num_vertices &&
	       (c->buffers[v / 64] >> (v % 64) & 1);
}

static struct hd_error *buffer_add(struct ctx *c, uint32_t v)
{
	if (!c->buffers) {
		c->num_vertices = hd_graph_num_vertices(hd_fw_graph(c->fw));
		c->buffers = calloc(c->num_vertices / 64 + 1, sizeof(*c->buffers));
		if (!c->buffers)
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	}
	if (v < c->num_vertices)
		c->buffers[v / 64] |= 1ull << (v % 64);
	return NULL;
}

// from_block: p was found in a typed heap block, not through a global or
// a container's element.
static struct hd_error *container(struct ctx *c, const struct pending *p,
				  bool from_block)
{
	enum kind k = p->t->kind;
	bool fresh;
	struct hd_error *err;
	// A buffer DWARF types as an array as long as the block: past the
	// container's size its elements are spare capacity, not objects (the
	// container walked the live ones).
	if (k == K_NONE || !p->addr ||
	    (from_block && buffer_has(c, p->holder)))
		return NULL;
	if ((err = addr_add(&c->seen, p->addr, &fresh)) || !fresh)
		return err;
	// A container of a million nodes leaves arrays the next ones do
	// not need.
	if (c->cap_blocks > 65536) {
		free(c->blocks);
		c->blocks = NULL;
		c->cap_blocks = 0;
	}
	if (c->cap_elems > 65536) {
		free(c->elems);
		c->elems = NULL;
		c->cap_elems = 0;
	}
	c->num_blocks = c->num_elems = 0;
	c->node = c->buffer = c->chunk = (struct name_spec){ HOW_NONE, NULL, 0 };
	struct stl_type *ty = (struct stl_type *)p->t;
	if ((err = stl_type_ready(c->fw, ty)))
		return err;
	c->elem_type = ty->elem_type;
	c->short_elem = ty->short_elem;
	const char *vt = ty->has_vt ? ty->vt : "";

	struct walk w = { .p = p };
	w.elem_size = ty->esize;
	switch (k) {
	case K_VECTOR: err = stl_walk_vector(c, &w); break;
	case K_LIST: err = stl_walk_list(c, &w); break;
	case K_FLIST: err = stl_walk_flist(c, &w); break;
	case K_TREE: err = stl_walk_tree(c, &w); break;
	case K_HASH: err = stl_walk_hash(c, &w); break;
	case K_STRING: err = stl_walk_string(c, &w); break;
	case K_SHARED: err = stl_walk_shared(c, &w); break;
	case K_DEQUE: err = stl_walk_deque(c, &w); break;
	default: break;
	}
	if (err)
		return err;
	const char *st = ty->short_type;
	if (w.why) {
		hd_fw_warn(c->fw, w.why_addr, "%s%s%s at 0x%llx: %s; skipped",
			   st, p->where && *p->where ? " " : "", p->where ? p->where : "",
			   (unsigned long long)p->addr, w.why);
		return NULL;
	}
	if (w.empty || !c->num_blocks)
		return NULL;

	// Only block names are kept: the node needs no label.
	char *label = NULL;
	if (!c->names_only) {
		size_t len = strlen(st) + strlen(p->where) + 2;
		if (!(label = malloc(len)))
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		snprintf(label, len, "%s%s%s", st, *p->where ? " " : "", p->where);
	}
	uint32_t node;
	err = hd_fw_node(c->fw, HD_FW_NO_NODE, p->holder, label, "container",
			 HD_OWNER_APPLICATION, &node);
	free(label);
	if (err)
		return err;
	c->containers++;
	// The nodes' DWARF type, for why's member names; none when DWARF
	// lacks it (the name stays).
	// Found once per type (hd_fw_type would look its name up per
	// block).
	int *found = &ty->node_found[w.hash_cached];
	if (!*found) {
		char dwarf[1280];
		*found = stl_node_dwarf_name(k, k != K_STRING && c->short_elem ? vt : "",
					 w.hash_cached, dwarf, sizeof(dwarf)) &&
			 hd_fw_type_lookup(c->fw, dwarf,
					   &ty->node_key[w.hash_cached]) ? 1 : -1;
	}
	bool typed = *found > 0;
	for (size_t i = 0; i < c->num_blocks && !err; i++) {
		const struct owned *b = &c->blocks[i];
		if (i + 8 < c->num_blocks)
			hd_fw_prefetch_vertex(c->fw, c->blocks[i + 8].v);
		if (b->name == NAME_BUFFER && (k == K_VECTOR || k == K_DEQUE))
			err = buffer_add(c, b->v);
		if (err)
			break;
		const struct name_spec *name = b->name == NAME_NODE ? &c->node
					     : b->name == NAME_BUFFER ? &c->buffer
					     : b->name == NAME_CHUNK ? &c->chunk : NULL;
		err = hd_fw_assign(c->fw, node, b->v);
		if (!err && b->fw)
			err = hd_fw_mark(c->fw, b->v, b->fw);
		if (!err && name && name->how != HOW_NONE) {
			uint32_t l = name_label(c, ty, name);
			err = l == UINT32_MAX ? hd_error_create(HD_ERROR_NO_MEMORY, "out of memory")
					      : hd_fw_name_label(c->fw, b->v, l);
		}
		if (!err && typed && b->name == NAME_NODE)
			err = hd_fw_type_key(c->fw, b->v, ty->node_key[w.hash_cached]);
	}
	if (!err && c->elem_type)
		err = nest(c, p, k);
	return err;
}


// The blocks an element's strings, vectors and shared_ptrs point to,
// looked up together: their cache misses overlap (the walks look them up
// one by one).
static void prefetch_found(struct ctx *c)
{
	uint64_t addrs[16], x;
	size_t n = 0;
	for (size_t j = 0; j < c->num_found && n < 16; j++) {
		const struct pending *p = &c->found[j];
		enum kind k = p->t->kind;
		if (k == K_STRING && p->size == 32 && stl_rd(c->fw, p->addr, &x) &&
		    x && x != p->addr + 16)
			addrs[n++] = x;
		else if (k == K_VECTOR && p->size == 24 && stl_rd(c->fw, p->addr, &x) && x)
			addrs[n++] = x;
		else if (k == K_SHARED && p->size == 16 && stl_rd(c->fw, p->addr + 8, &x) && x)
			addrs[n++] = x;
	}
	hd_fw_prefetch_blocks(c->fw, addrs, n);
}

// Looks at the containers of element i of a container of type t and kind
// k at where: as nest would have queued them one by one.
static struct hd_error *expand(struct ctx *c, const struct stl_type *t,
			       enum kind k, const char *where, size_t i,
			       const struct element *e)
{
	char buf[1200];
	element_where(where, k, i, buf, sizeof(buf));
	c->num_found = 0;
	// The element type by key: not looked up by name per element.
	struct hd_error *err = t->has_elem_key
		? hd_fw_objects_in_key(c->fw, t->elem_key, e->addr, e->holder, buf,
				       batch_prefixes, NUM_PREFIXES, collect, c)
		: hd_fw_objects_in(c->fw, t->elem_type, e->addr, e->holder, buf,
				   batch_prefixes, NUM_PREFIXES, collect, c);
	if (!err)
		prefetch_found(c);
	size_t j = 0;
	for (; j < c->num_found && !err; j++) {
		struct pending p = c->found[j]; // found may move
		err = container(c, &p, false);
		free(c->found[j].where);
	}
	for (; j < c->num_found; j++)
		free(c->found[j].where);
	return err;
}

// Looks at the queued containers, in order, to the end of the queue.
static struct hd_error *drain(struct ctx *c)
{
	struct hd_error *err = NULL;
	while (!err && c->done < c->num_queue) {
		struct qent e = c->queue[c->done]; // may move
		char *where = c->wheres ? c->wheres[c->done] : NULL;
		const struct stl_type *t = c->types.byid[e.bits >> 8];
		enum kind k = (enum kind)(e.bits >> 4 & 15);
		size_t slots = 1;
		if ((e.bits & 15) == QE_ELEMS) {
			size_t first = c->qelems_done;
			c->qelems_done += e.a;
			for (size_t i = 0; i < e.a && !err; i++) {
				struct element el = c->qelems[first + i]; // may move
				err = expand(c, t, k, where, i, &el);
			}
		} else if ((e.bits & 15) == QE_ONE) {
			struct element el = { e.a, e.holder };
			err = expand(c, t, k, where, 0, &el);
		} else {
			struct pending p = { e.a, c->queue[c->done + 1].a, t, where,
					     e.holder };
			err = container(c, &p, false);
			slots = 2;
		}
		// Millions may wait: each gives its name back once looked at.
		free(where);
		if (c->wheres)
			c->wheres[c->done] = NULL;
		c->done += slots;
		// The queue is a wave of a million containers at a time: what
		// was looked at makes room.
		if (c->done >= 65536 && c->done >= c->num_queue / 2) {
			memmove(c->queue, c->queue + c->done,
				(c->num_queue - c->done) * sizeof(*c->queue));
			if (c->wheres)
				memmove(c->wheres, c->wheres + c->done,
					(c->num_queue - c->done) * sizeof(*c->wheres));
			c->num_queue -= c->done;
			c->done = 0;
		}
		if (c->qelems_done >= 65536 && c->qelems_done >= c->num_qelems / 2) {
			memmove(c->qelems, c->qelems + c->qelems_done,
				(c->num_qelems - c->qelems_done) * sizeof(*c->qelems));
			c->num_qelems -= c->qelems_done;
			c->qelems_done = 0;
		}
	}
	return err;
}

// hd_fw_objects' call-back in the passes over the heap blocks: each
// container of a block (of an array element's in pass 1, of the others in
// pass 0) after everything the ones before it nested. Found again pass by
// pass rather than kept: they are millions, each with its name.
static struct hd_error *block_container(struct hd_fw *fw,
					const struct hd_fw_object *o, void *arg)
{
	struct ctx *c = arg;
	if (!in_block(fw, o) || (o->where && strchr(o->where, '[')) != (c->pass == 1))
		return NULL;
	struct hd_error *err = drain(c);
	if (err)
		return err;
	struct pending p;
	if (!pending_of(c, o, &p))
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	err = container(c, &p, true);
	free(p.where);
	return err;
}

static struct hd_error *analyze(struct hd_fw *fw)
{
	struct ctx c = { .fw = fw, .names_only = hd_fw_names_only(fw) };
	if (!hd_fw_typing(fw)) {
		hd_fw_note(fw, "no DWARF typing: containers cannot be found");
		return NULL;
	}
	// A queue, not recursion: nested containers are appended while the
	// outer ones are looked at. First those of globals, then each
	// container of a heap block after everything the ones before it
	// nested. Containers in single objects first: a vector in a heap
	// struct claims its buffer before the buffer's typed elements come up.
	// When only block names are kept, where only says whether an object
	// is an array's element.
	struct hd_error *(*objects)(struct hd_fw *, const char *const *, size_t,
				    hd_fw_object_fn, void *) =
		c.names_only ? hd_fw_objects_brackets : hd_fw_objects;
	c.top = true;
	struct hd_error *err = objects(fw, prefixes, NUM_PREFIXES, enqueue, &c);
	c.top = false;
	for (c.pass = 0; !err && c.pass < 2; c.pass++)
		err = objects(fw, prefixes, NUM_PREFIXES, block_container, &c);
	if (!err)
		err = drain(&c);
	for (size_t i = c.done; c.wheres && i < c.num_queue; i++)
		free(c.wheres[i]);
	stl_strtab_free(&c.types);
	if (!err)
		hd_fw_note(fw, "%zu containers", c.containers);
	free(c.queue);
	free(c.wheres);
	free(c.qelems);
	addr_free(&c.seen);
	free(c.buffers);
	free(c.found);
	elemset_free(&c.queued);
	free(c.labels.v);
	free(c.blocks);
	free(c.elems);
	free(c.stack);
	return err;
}

static struct hd_error *detect(struct hd_fw *fw, bool *detected)
{
	struct hd_target *t = hd_fw_target(fw);
	size_t n = hd_target_num_modules(t);
	*detected = false;
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		const char *name = m && m->name ? m->name : "";
		const char *base = strrchr(name, '/');
		base = base ? base + 1 : name;
		if (stl_starts(base, "libstdc++.so")) {
			*detected = true;
			hd_fw_note(fw, "%s mapped", name);
			return NULL;
		}
	}
	hd_fw_note(fw, "no libstdc++.so among the %zu modules", n);
	return NULL;
}

const struct hd_framework hd_framework_libstdcxx = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "libstdc++",
	.version = "1.0",
	.description = "standard containers (gcc 12 libstdc++): one node per container with its blocks",
	.detect = detect,
	.analyze = analyze,
};

// The module finds containers only through hd_fw_objects with these
// prefixes and claims only blocks its containers' pointers reach: it may
// wait until a block it could name is asked about (defer.c).
const struct hd_fw_deferral hd_libstdcxx_deferral = {
	.ops = &hd_framework_libstdcxx,
	.prefixes = prefixes,
	.num_prefixes = NUM_PREFIXES,
	.name_alone = stl_name_alone,
	.alone_free = stl_alone_free,
};
