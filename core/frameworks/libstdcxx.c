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
// queue, not recursion.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom_framework.h"

// Nodes one container may have: beyond it the container is broken (or a
// cycle), whatever its recorded size says.
#define MAX_NODES (1u << 24)
// Height of a red-black tree of 2^64 nodes is below 128.
#define MAX_HEIGHT 128

static const char *const prefixes[] = {
	"std::vector<",
	"std::__cxx11::list<",
	"std::list<",
	"std::forward_list<",
	"std::map<",
	"std::multimap<",
	"std::set<",
	"std::multiset<",
	"std::unordered_map<",
	"std::unordered_multimap<",
	"std::unordered_set<",
	"std::unordered_multiset<",
	"std::__cxx11::basic_string<",
	"std::basic_string<",
	"std::shared_ptr<",
	"std::deque<",
};
#define NUM_PREFIXES (sizeof(prefixes) / sizeof(prefixes[0]))

enum kind {
	K_VECTOR, K_LIST, K_FLIST, K_TREE, K_HASH, K_STRING, K_SHARED,
	K_DEQUE, K_NONE,
};

// A container found and not yet looked at.
struct pending {
	uint64_t addr, size;
	char *type;
	char *where;
	uint32_t holder;
	bool in_array; // in an element of a block typed as an array
};

// Names given to a container's blocks (hd_fw_name).
enum { NAME_NONE, NAME_NODE, NAME_BUFFER };

// One block of a container, with its framework bytes and which name.
struct owned {
	uint32_t v;
	uint64_t fw;
	int name;
};

// An element whose insides may hold containers.
struct element {
	uint64_t addr;
	uint32_t holder;
};

// A set of non-zero 64-bit values (open addressing, 0 = empty).
struct set {
	uint64_t *v;
	size_t cap, n;
};

struct ctx {
	struct hd_fw *fw;
	// Globals and nested containers; containers found in typed heap
	// blocks wait in later, so that one reached both ways (the strings in
	// a std::vector<std::string>'s buffer, which DWARF types too) is named
	// by its container: "g_names[2]", not "std::string[2]".
	struct pending *queue;
	size_t num_queue, cap_queue;
	struct pending *later;
	size_t num_later, cap_later;
	bool top; // hd_fw_objects is calling enqueue
	struct set seen;    // addresses of the containers looked at
	struct set buffers; // vertices + 1 of the element buffers walked
	struct owned *blocks;
	size_t num_blocks, cap_blocks;
	struct element *elems;
	size_t num_elems, cap_elems;
	char *elem_type; // DWARF name of the elements, or NULL
	char *short_elem; // the element type as short_type() writes it
	// The type of the container's node blocks ("std::_Rb_tree_node<
	// std::pair<int const, Session>>") and of its buffer ("Item*[10]").
	char node_name[512], buffer_name[512];
	uint64_t *stack;
	size_t num_stack, cap_stack;
	size_t containers;
};

static struct hd_error *grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return NULL;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * size);
	if (!q)
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	*p = q;
	*cap = c;
	return NULL;
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static bool set_has(const struct set *s, uint64_t x)
{
	if (!s->cap)
		return false;
	size_t i = hash64(x) & (s->cap - 1);
	while (s->v[i]) {
		if (s->v[i] == x)
			return true;
		i = (i + 1) & (s->cap - 1);
	}
	return false;
}

// Adds x (non-zero) to s; *fresh is false if it was in.
static struct hd_error *set_add(struct set *s, uint64_t x, bool *fresh)
{
	*fresh = false;
	if (set_has(s, x))
		return NULL;
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (!v)
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->v[i])
				continue;
			size_t j = hash64(s->v[i]) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = s->v[i];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t i = hash64(x) & (s->cap - 1);
	while (s->v[i])
		i = (i + 1) & (s->cap - 1);
	s->v[i] = x;
	s->n++;
	*fresh = true;
	return NULL;
}

// hd_fw_objects' call-back: queue the container.
static struct hd_error *enqueue(struct hd_fw *fw, const struct hd_fw_object *o,
				void *arg)
{
	struct ctx *c = arg;
	struct hd_block b;
	bool later = c->top && o->holder != HD_DOM_NONE &&
		     hd_fw_vertex_block(fw, o->holder, &b);
	struct pending **q = later ? &c->later : &c->queue;
	size_t *num = later ? &c->num_later : &c->num_queue;
	size_t *cap = later ? &c->cap_later : &c->cap_queue;
	struct hd_error *err = grow((void **)q, cap, *num, sizeof(**q));
	if (err)
		return err;
	struct pending *p = &(*q)[*num];
	p->addr = o->addr;
	p->size = o->size;
	p->holder = o->holder;
	p->type = strdup(o->type ? o->type : "");
	p->where = strdup(o->where ? o->where : "");
	// hd_fw_objects names an array block's element "T[k]...".
	p->in_array = later && p->where && strchr(p->where, '[');
	if (!p->type || !p->where) {
		free(p->type);
		free(p->where);
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	}
	(*num)++;
	return NULL;
}

// ------------------------------------------------------------- names

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static enum kind kind_of(const char *type)
{
	static const struct {
		const char *prefix;
		enum kind kind;
	} kinds[] = {
		{"std::vector<", K_VECTOR},
		{"std::__cxx11::list<", K_LIST},
		{"std::list<", K_LIST},
		{"std::forward_list<", K_FLIST},
		{"std::map<", K_TREE},
		{"std::multimap<", K_TREE},
		{"std::set<", K_TREE},
		{"std::multiset<", K_TREE},
		{"std::unordered_", K_HASH},
		{"std::__cxx11::basic_string<", K_STRING},
		{"std::basic_string<", K_STRING},
		{"std::shared_ptr<", K_SHARED},
		{"std::deque<", K_DEQUE},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (starts(type, kinds[i].prefix))
			return kinds[i].kind;
	}
	return K_NONE;
}

// Template argument k (0-based) of name, or the last one for k < 0, into
// buf; false if there is none.
static bool template_arg(const char *name, int k, char *buf, size_t len)
{
	const char *p = strchr(name, '<');
	if (!p)
		return false;
	const char *arg = p + 1, *last = NULL, *last_end = NULL;
	int depth = 1, i = 0;
	for (const char *q = p + 1; *q && depth > 0; q++) {
		if (*q == '<' || *q == '(') {
			depth++;
		} else if (*q == '>' || *q == ')') {
			depth--;
		}
		if ((depth == 1 && *q == ',') || depth == 0) {
			if (i == k) {
				last = arg;
				last_end = q;
				break;
			}
			last = arg;
			last_end = q;
			i++;
			arg = q + 1;
		}
	}
	if (!last || (k >= 0 && i != k))
		return false;
	while (*last == ' ')
		last++;
	while (last_end > last && last_end[-1] == ' ')
		last_end--;
	size_t n = (size_t)(last_end - last);
	if (!n || n + 1 > len)
		return false;
	memcpy(buf, last, n);
	buf[n] = '\0';
	return true;
}

// The element type of a container named type: the allocator's argument
// (the last template argument) for maps, sets and hash tables — their
// value type, std::pair<const K, T> for maps — else the first argument.
static bool value_type(const char *type, enum kind k, char *buf, size_t len)
{
	if (k == K_TREE || k == K_HASH) {
		char alloc[1024];
		if (!template_arg(type, -1, alloc, sizeof(alloc)) ||
		    !starts(alloc, "std::allocator<"))
			return false;
		return template_arg(alloc, 0, buf, len);
	}
	return template_arg(type, 0, buf, len);
}

static const char *const defaults[] = {
	"std::less<", "std::allocator<", "std::hash<", "std::equal_to<",
	"std::char_traits<",
};

static bool is_default(const char *s)
{
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (starts(s, defaults[i]))
			return true;
	}
	return false;
}

// Replaces every from in s (in place; to is not longer than from).
static void replace_all(char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *p = s;
	while ((p = strstr(p, from))) {
		memmove(p + tl, p + fl, strlen(p + fl) + 1);
		memcpy(p, to, tl);
		p += tl;
	}
}

// The name a C++ programmer writes: default arguments (std::less<…>,
// std::allocator<…>, std::hash<…>, std::equal_to<…>,
// std::char_traits<…>) dropped, std::__cxx11:: made std::, std::string for
// std::basic_string<char>. Returns a malloc'd string or NULL.
static char *short_type(const char *type)
{
	size_t n = strlen(type);
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	bool arg_start = false;
	for (size_t i = 0; i < n;) {
		if (starts(type + i, "std::__cxx11::")) {
			memcpy(out + o, "std::", 5);
			o += 5;
			i += strlen("std::__cxx11::");
			arg_start = false;
			continue;
		}
		if (arg_start && is_default(type + i)) {
			// Skip the argument to the ',' or '>' that ends it.
			int depth = 0;
			while (i < n) {
				char ch = type[i];
				if (ch == '<')
					depth++;
				else if (ch == '>' && depth-- == 0)
					break;
				else if (ch == ',' && depth == 0)
					break;
				i++;
			}
			// Drop ", " before it; after '<' drop the ", " after.
			while (o && out[o - 1] == ' ')
				o--;
			if (o && out[o - 1] == ',') {
				o--;
			} else if (i < n && type[i] == ',') {
				i++;
				while (i < n && type[i] == ' ')
					i++;
			}
			arg_start = false;
			continue;
		}
		char ch = type[i++];
		out[o++] = ch;
		if (ch == '<' || ch == ',')
			arg_start = true;
		else if (ch != ' ')
			arg_start = false;
	}
	out[o] = '\0';
	replace_all(out, " >", ">");
	replace_all(out, "<>", "");
	replace_all(out, "std::basic_string<char>", "std::string");
	return out;
}

// -------------------------------------------------------- validation

// The used heap block starting at p with at least need usable bytes.
static bool block_at(struct hd_fw *fw, uint64_t p, uint64_t need, uint32_t *v,
		     struct hd_block *b)
{
	*v = hd_fw_vertex_at(fw, p);
	if (*v == HD_DOM_NONE || !hd_fw_vertex_block(fw, *v, b))
		return false;
	return b->state == HD_STATE_USED && b->addr == p && b->usable >= need;
}

static struct hd_error *own(struct ctx *c, uint32_t v, uint64_t fwb, int name)
{
	struct hd_error *err = grow((void **)&c->blocks, &c->cap_blocks,
				    c->num_blocks, sizeof(*c->blocks));
	if (err)
		return err;
	c->blocks[c->num_blocks++] = (struct owned){ v, fwb, name };
	return NULL;
}

static void name_node(struct ctx *c, const char *tmpl)
{
	if (c->short_elem)
		snprintf(c->node_name, sizeof(c->node_name), "%s<%s>", tmpl,
			 c->short_elem);
}

static void name_buffer(struct ctx *c, const char *elem, uint64_t n)
{
	if (elem)
		snprintf(c->buffer_name, sizeof(c->buffer_name), "%s[%llu]",
			 elem, (unsigned long long)n);
}

static struct hd_error *elem(struct ctx *c, uint64_t addr, uint32_t holder)
{
	struct hd_error *err = grow((void **)&c->elems, &c->cap_elems,
				    c->num_elems, sizeof(*c->elems));
	if (err)
		return err;
	c->elems[c->num_elems++] = (struct element){ addr, holder };
	return NULL;
}

static struct hd_error *push(struct ctx *c, uint64_t x)
{
	struct hd_error *err = grow((void **)&c->stack, &c->cap_stack,
				    c->num_stack, sizeof(*c->stack));
	if (err)
		return err;
	c->stack[c->num_stack++] = x;
	return NULL;
}

// A read that failed is memory we do not understand: *bad set, no error.
static bool rd(struct hd_fw *fw, uint64_t addr, uint64_t *v)
{
	struct hd_error *err = hd_fw_read_u64(fw, addr, v);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

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

static void fail(struct walk *w, uint64_t addr, const char *why)
{
	w->why = why;
	w->why_addr = addr;
}

static struct hd_error *walk_vector(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t start, finish, eos;
	bool bits = starts(p->type, "std::vector<bool,");
	if (p->size != (bits ? 40 : 24))
		return fail(w, p->addr, "std::vector of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &start) ||
	    !rd(c->fw, p->addr + (bits ? 16 : 8), &finish) ||
	    !rd(c->fw, p->addr + (bits ? 32 : 16), &eos))
		return fail(w, p->addr, "std::vector not readable"), NULL;
	if (!start) {
		w->empty = true;
		return NULL;
	}
	if (start > finish || finish > eos)
		return fail(w, p->addr, "std::vector whose start, finish and end_of_storage are out of order"), NULL;
	uint32_t v;
	struct hd_block b;
	if (!block_at(c->fw, start, eos - start, &v, &b))
		return fail(w, start, "std::vector buffer is not a used heap block of its capacity"), NULL;
	if (!bits && w->elem_size && !((eos - start) % w->elem_size))
		name_buffer(c, c->short_elem, (eos - start) / w->elem_size);
	struct hd_error *err = own(c, v, bits ? 0 : eos - finish, NAME_BUFFER);
	if (err || bits || !w->elem_size)
		return err;
	if ((finish - start) % w->elem_size)
		return NULL; // not the element type we think: no nesting
	for (uint64_t a = start; a < finish; a += w->elem_size) {
		if ((err = elem(c, a, v)))
			return err;
	}
	return NULL;
}

static uint64_t char_size(const char *type)
{
	char arg[64];
	if (!template_arg(type, 0, arg, sizeof(arg)))
		return 0;
	if (!strcmp(arg, "char") || !strcmp(arg, "char8_t"))
		return 1;
	if (!strcmp(arg, "char16_t"))
		return 2;
	if (!strcmp(arg, "char32_t") || !strcmp(arg, "wchar_t"))
		return 4;
	return 0;
}

static struct hd_error *walk_string(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t ptr, len, cap, cs = char_size(p->type);
	if (p->size != 32 || !cs)
		return fail(w, p->addr, "std::basic_string of an unknown size or character"), NULL;
	if (!rd(c->fw, p->addr, &ptr) || !rd(c->fw, p->addr + 8, &len) ||
	    !rd(c->fw, p->addr + 16, &cap))
		return fail(w, p->addr, "std::basic_string not readable"), NULL;
	if (ptr == p->addr + 16) {
		w->empty = true; // the local buffer
		return NULL;
	}
	uint32_t v;
	struct hd_block b;
	if (len > cap || cap > (UINT64_MAX / cs) - 1 ||
	    !block_at(c->fw, ptr, (cap + 1) * cs, &v, &b))
		return fail(w, p->addr, "std::basic_string: its buffer is not a used heap block of its capacity"), NULL;
	char elem[64];
	if (template_arg(p->type, 0, elem, sizeof(elem)))
		name_buffer(c, elem, cap + 1);
	return own(c, v, (cap - len) * cs, NAME_BUFFER);
}

static struct hd_error *walk_list(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	bool sized = p->size == 24;
	uint64_t size = MAX_NODES, next, prev = p->addr, cur;
	if (p->size != 24 && p->size != 16)
		return fail(w, p->addr, "std::list of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &cur) || (sized && !rd(c->fw, p->addr + 16, &size)))
		return fail(w, p->addr, "std::list not readable"), NULL;
	uint64_t n = 0;
	name_node(c, "std::_List_node");
	while (cur != p->addr) {
		uint32_t v;
		struct hd_block b;
		uint64_t back;
		if (n >= size || n >= MAX_NODES)
			return fail(w, p->addr, "std::list longer than its size (a cycle?)"), NULL;
		if (!block_at(c->fw, cur, 16, &v, &b) || !rd(c->fw, cur, &next) ||
		    !rd(c->fw, cur + 8, &back))
			return fail(w, cur, "std::list node is not a used heap block"), NULL;
		if (back != prev)
			return fail(w, cur, "std::list node's prev link is not the node before it"), NULL;
		struct hd_error *err = own(c, v, 16, NAME_NODE);
		if (!err)
			err = elem(c, cur + 16, v);
		if (err)
			return err;
		prev = cur;
		cur = next;
		n++;
	}
	if (sized && n != size)
		return fail(w, p->addr, "std::list has fewer nodes than its size"), NULL;
	w->empty = n == 0;
	return NULL;
}

static struct hd_error *walk_flist(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t cur, n = 0;
	if (p->size != 8)
		return fail(w, p->addr, "std::forward_list of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &cur))
		return fail(w, p->addr, "std::forward_list not readable"), NULL;
	name_node(c, "std::_Fwd_list_node");
	while (cur) {
		uint32_t v;
		struct hd_block b;
		uint64_t next;
		if (n++ >= MAX_NODES)
			return fail(w, p->addr, "std::forward_list too long (a cycle?)"), NULL;
		if (!block_at(c->fw, cur, 8, &v, &b) || !rd(c->fw, cur, &next))
			return fail(w, cur, "std::forward_list node is not a used heap block"), NULL;
		struct hd_error *err = own(c, v, 8, NAME_NODE);
		if (!err)
			err = elem(c, cur + 8, v);
		if (err)
			return err;
		cur = next;
	}
	w->empty = n == 0;
	return NULL;
}

// In-order walk of the rb tree whose header is at h: the elements come in
// the container's order.
static struct hd_error *walk_tree(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	if (p->size < 48)
		return fail(w, p->addr, "std::_Rb_tree of an unknown size"), NULL;
	// The header and node_count end the _Rb_tree_impl, after the
	// comparator (8 bytes for an empty one).
	uint64_t h = p->addr + p->size - 40;
	uint64_t root, leftmost, rightmost, count;
	if (!rd(c->fw, h + 8, &root) || !rd(c->fw, h + 16, &leftmost) ||
	    !rd(c->fw, h + 24, &rightmost) || !rd(c->fw, h + 32, &count))
		return fail(w, p->addr, "std::_Rb_tree not readable"), NULL;
	if (!root) {
		if (count || leftmost != h || rightmost != h)
			return fail(w, p->addr, "std::_Rb_tree: empty tree with a count or links"), NULL;
		w->empty = true;
		return NULL;
	}
	if (count > MAX_NODES)
		return fail(w, p->addr, "std::_Rb_tree: node_count too large"), NULL;
	// Stack of (node) to visit after its left subtree; the parent a
	// node must name is checked when it is first reached.
	struct hd_error *err;
	uint64_t cur = root, parent = h, n = 0, first = 0, last = 0;
	name_node(c, "std::_Rb_tree_node");
	c->num_stack = 0;
	for (;;) {
		while (cur) {
			uint32_t v;
			struct hd_block b;
			uint64_t up, left;
			if (c->num_stack >= MAX_HEIGHT)
				return fail(w, cur, "std::_Rb_tree deeper than a red-black tree can be"), NULL;
			if (!block_at(c->fw, cur, 32, &v, &b) || !rd(c->fw, cur + 8, &up) ||
			    !rd(c->fw, cur + 16, &left))
				return fail(w, cur, "std::_Rb_tree node is not a used heap block"), NULL;
			if (up != parent)
				return fail(w, cur, "std::_Rb_tree node's parent link is wrong"), NULL;
			if ((err = push(c, cur)))
				return err;
			parent = cur;
			cur = left;
		}
		if (!c->num_stack)
			break;
		uint64_t node = c->stack[--c->num_stack], right;
		if (++n > count)
			return fail(w, p->addr, "std::_Rb_tree has more nodes than node_count"), NULL;
		uint32_t v = hd_fw_vertex_at(c->fw, node);
		if ((err = own(c, v, 32, NAME_NODE)) || (err = elem(c, node + 32, v)))
			return err;
		if (!first)
			first = node;
		last = node;
		if (!rd(c->fw, node + 24, &right))
			return fail(w, node, "std::_Rb_tree node not readable"), NULL;
		parent = node;
		cur = right;
	}
	if (n != count || first != leftmost || last != rightmost)
		return fail(w, p->addr, "std::_Rb_tree: nodes do not match node_count, leftmost and rightmost"), NULL;
	return NULL;
}

static struct hd_error *find_traits(struct hd_fw *fw,
				    const struct hd_fw_object *o, void *arg)
{
	struct walk *w = arg;
	const char *t = strstr(o->type, "_Hashtable_traits<");
	if (t)
		w->hash_cached = starts(t + strlen("_Hashtable_traits<"), "true");
	return NULL;
}

static struct hd_error *walk_hash(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t buckets, nbuckets, cur, count;
	if (p->size != 56)
		return fail(w, p->addr, "std::_Hashtable of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &buckets) || !rd(c->fw, p->addr + 8, &nbuckets) ||
	    !rd(c->fw, p->addr + 16, &cur) || !rd(c->fw, p->addr + 24, &count))
		return fail(w, p->addr, "std::_Hashtable not readable"), NULL;
	// Whether nodes cache the hash code: the traits in the name of the
	// _Hashtable inside (a std::hash<std::string> caches, std::hash<int>
	// does not).
	static const char *const ht[] = {"std::_Hashtable<"};
	struct hd_error *err = hd_fw_objects_in(c->fw, p->type, p->addr,
						p->holder, "", ht, 1,
						find_traits, w);
	if (err) // no DWARF for the type: the default for a std::hash
		hd_error_destroy(err);
	if (count > MAX_NODES)
		return fail(w, p->addr, "std::_Hashtable: element_count too large"), NULL;
	uint32_t v;
	struct hd_block b;
	if (buckets != p->addr + 48) {
		if (!nbuckets || nbuckets > UINT64_MAX / 8 ||
		    !block_at(c->fw, buckets, nbuckets * 8, &v, &b))
			return fail(w, buckets, "std::_Hashtable bucket array is not a used heap block of bucket_count pointers"), NULL;
		name_buffer(c, "std::__detail::_Hash_node_base*", nbuckets);
		if ((err = own(c, v, UINT64_MAX, NAME_BUFFER)))
			return err;
	} else if (nbuckets != 1) {
		return fail(w, p->addr, "std::_Hashtable: the single bucket with bucket_count != 1"), NULL;
	}
	uint64_t n = 0, node_fw = w->hash_cached ? 16 : 8;
	name_node(c, "std::__detail::_Hash_node");
	while (cur) {
		uint64_t next;
		if (n++ >= count)
			return fail(w, p->addr, "std::_Hashtable has more nodes than element_count"), NULL;
		if (!block_at(c->fw, cur, node_fw, &v, &b) || !rd(c->fw, cur, &next))
			return fail(w, cur, "std::_Hashtable node is not a used heap block"), NULL;
		if ((err = own(c, v, node_fw, NAME_NODE)) || (err = elem(c, cur + 8, v)))
			return err;
		cur = next;
	}
	if (n != count)
		return fail(w, p->addr, "std::_Hashtable has fewer nodes than element_count"), NULL;
	w->empty = !c->num_blocks;
	return NULL;
}

static struct hd_error *walk_shared(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t ptr, pi;
	if (p->size != 16)
		return fail(w, p->addr, "std::shared_ptr of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &ptr) || !rd(c->fw, p->addr + 8, &pi))
		return fail(w, p->addr, "std::shared_ptr not readable"), NULL;
	if (!pi) {
		w->empty = true;
		return NULL;
	}
	uint32_t v;
	struct hd_block b;
	if (!block_at(c->fw, pi, 16, &v, &b))
		return fail(w, pi, "std::shared_ptr control block is not a used heap block"), NULL;
	// make_shared: the object lives in the control block after its
	// vtable pointer and counts.
	bool inplace = ptr >= pi + 16 && ptr < pi + b.usable;
	if (inplace)
		name_node(c, "std::_Sp_counted_ptr_inplace");
	else
		snprintf(c->node_name, sizeof(c->node_name), "std::_Sp_counted_base");
	struct hd_error *err = own(c, v, inplace ? 16 : UINT64_MAX, NAME_NODE);
	if (!err && inplace)
		err = elem(c, ptr, v);
	return err;
}

static struct hd_error *walk_deque(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t map, map_size, first_node, last_node;
	if (p->size != 80)
		return fail(w, p->addr, "std::deque of an unknown size"), NULL;
	if (!rd(c->fw, p->addr, &map) || !rd(c->fw, p->addr + 8, &map_size) ||
	    !rd(c->fw, p->addr + 40, &first_node) || !rd(c->fw, p->addr + 72, &last_node))
		return fail(w, p->addr, "std::deque not readable"), NULL;
	if (!map) {
		w->empty = true;
		return NULL;
	}
	uint32_t v;
	struct hd_block b;
	if (map_size > MAX_NODES || !block_at(c->fw, map, map_size * 8, &v, &b) ||
	    first_node < map || last_node < first_node ||
	    last_node >= map + map_size * 8 || (last_node - first_node) % 8)
		return fail(w, map, "std::deque map is not a used heap block holding its nodes"), NULL;
	if (c->short_elem)
		snprintf(c->buffer_name, sizeof(c->buffer_name), "%s*[%llu]",
			 c->short_elem, (unsigned long long)map_size);
	struct hd_error *err = own(c, v, UINT64_MAX, NAME_BUFFER);
	for (uint64_t n = first_node; !err && n <= last_node; n += 8) {
		uint64_t chunk;
		if (!rd(c->fw, n, &chunk) || !block_at(c->fw, chunk, 1, &v, &b))
			return fail(w, n, "std::deque chunk is not a used heap block"), NULL;
		err = own(c, v, 0, NAME_NONE);
	}
	return err;
}

// ------------------------------------------------------------ driving

// Elements are named by position ("g_sessions[2]"), a shared_ptr's
// object as "(*g_blob)".
static struct hd_error *nest(struct ctx *c, const struct pending *p,
			     enum kind k)
{
	char where[1200];
	struct hd_error *err = NULL;
	for (size_t i = 0; i < c->num_elems && !err; i++) {
		if (k == K_SHARED)
			snprintf(where, sizeof(where), "(*%s)", p->where);
		else
			snprintf(where, sizeof(where), "%s[%zu]", p->where, i);
		err = hd_fw_objects_in(c->fw, c->elem_type, c->elems[i].addr,
				       c->elems[i].holder, where, prefixes,
				       NUM_PREFIXES, enqueue, c);
	}
	return err;
}

// from_block: p was found in a typed heap block, not through a global or
// a container's element.
static struct hd_error *container(struct ctx *c, const struct pending *p,
				  bool from_block)
{
	enum kind k = kind_of(p->type);
	bool fresh;
	struct hd_error *err;
	// A buffer DWARF types as an array as long as the block: past the
	// container's size its elements are spare capacity, not objects (the
	// container walked the live ones).
	if (k == K_NONE || !p->addr ||
	    (from_block && set_has(&c->buffers, (uint64_t)p->holder + 1)))
		return NULL;
	if ((err = set_add(&c->seen, p->addr, &fresh)) || !fresh)
		return err;
	c->num_blocks = c->num_elems = 0;
	free(c->elem_type);
	free(c->short_elem);
	c->elem_type = c->short_elem = NULL;
	c->node_name[0] = c->buffer_name[0] = '\0';

	struct walk w = { .p = p };
	char vt[1024];
	uint64_t esize = 0;
	if (k != K_STRING && value_type(p->type, k, vt, sizeof(vt))) {
		if (!(c->short_elem = short_type(vt)))
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		struct hd_error *e = hd_fw_type_size(c->fw, vt, &esize);
		if (e) {
			hd_error_destroy(e); // a scalar: nothing nested
		} else if (!(c->elem_type = strdup(vt))) {
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		}
	}
	w.elem_size = esize;
	switch (k) {
	case K_VECTOR: err = walk_vector(c, &w); break;
	case K_LIST: err = walk_list(c, &w); break;
	case K_FLIST: err = walk_flist(c, &w); break;
	case K_TREE: err = walk_tree(c, &w); break;
	case K_HASH: err = walk_hash(c, &w); break;
	case K_STRING: err = walk_string(c, &w); break;
	case K_SHARED: err = walk_shared(c, &w); break;
	case K_DEQUE: err = walk_deque(c, &w); break;
	default: break;
	}
	if (err)
		return err;
	if (w.why) {
		char *st = short_type(p->type);
		hd_fw_warn(c->fw, w.why_addr, "%s%s%s at 0x%llx: %s; skipped",
			   st ? st : p->type, *p->where ? " " : "", p->where,
			   (unsigned long long)p->addr, w.why);
		free(st);
		return NULL;
	}
	if (w.empty || !c->num_blocks)
		return NULL;

	char *st = short_type(p->type);
	if (!st)
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	size_t len = strlen(st) + strlen(p->where) + 2;
	char *label = malloc(len);
	if (!label) {
		free(st);
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	}
	snprintf(label, len, "%s%s%s", st, *p->where ? " " : "", p->where);
	uint32_t node;
	err = hd_fw_node(c->fw, HD_FW_NO_NODE, p->holder, label, "container",
			 HD_OWNER_APPLICATION, &node);
	free(label);
	free(st);
	if (err)
		return err;
	c->containers++;
	for (size_t i = 0; i < c->num_blocks && !err; i++) {
		const struct owned *b = &c->blocks[i];
		if (b->name == NAME_BUFFER && (k == K_VECTOR || k == K_DEQUE))
			err = set_add(&c->buffers, (uint64_t)b->v + 1, &fresh);
		if (err)
			break;
		const char *name = b->name == NAME_NODE ? c->node_name
				 : b->name == NAME_BUFFER ? c->buffer_name : "";
		err = hd_fw_assign(c->fw, node, b->v);
		if (!err && b->fw)
			err = hd_fw_mark(c->fw, b->v, b->fw);
		if (!err && *name)
			err = hd_fw_name(c->fw, b->v, name);
	}
	if (!err && c->elem_type)
		err = nest(c, p, k);
	return err;
}

static struct hd_error *analyze(struct hd_fw *fw)
{
	struct ctx c = { .fw = fw };
	if (!hd_fw_typing(fw)) {
		hd_fw_note(fw, "no DWARF typing: containers cannot be found");
		return NULL;
	}
	c.top = true;
	struct hd_error *err = hd_fw_objects(fw, prefixes, NUM_PREFIXES,
					     enqueue, &c);
	c.top = false;
	// A queue, not recursion: nested containers are appended while the
	// outer ones are looked at. Each container of a heap block comes
	// after everything the ones before it nested.
	// Containers in single objects first: a vector in a heap struct
	// claims its buffer before the buffer's typed elements come up.
	size_t done = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t j = 0; !err && j <= c.num_later; j++) {
			for (; !err && done < c.num_queue; done++) {
				struct pending p = c.queue[done]; // may move
				err = container(&c, &p, false);
			}
			if (!err && j < c.num_later && c.later[j].in_array == pass)
				err = container(&c, &c.later[j], true);
		}
	}
	for (size_t i = 0; i < c.num_queue; i++) {
		free(c.queue[i].type);
		free(c.queue[i].where);
	}
	for (size_t i = 0; i < c.num_later; i++) {
		free(c.later[i].type);
		free(c.later[i].where);
	}
	if (!err)
		hd_fw_note(fw, "%zu containers", c.containers);
	free(c.queue);
	free(c.later);
	free(c.seen.v);
	free(c.buffers.v);
	free(c.blocks);
	free(c.elems);
	free(c.elem_type);
	free(c.short_elem);
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
		if (starts(base, "libstdc++.so")) {
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
