// Python objects in the cpython framework module: which addresses are
// type objects (cached by address), which blocks hold an object and where
// in the block it starts, and the text of ASCII strings.
#include <stdlib.h>
#include <string.h>

#include "frameworks/cpython_internal.h"

// A NUL-terminated string of at most len - 1 bytes.
static bool read_cstring(struct hd_fw *fw, uint64_t addr, char *buf,
			 size_t len)
{
	struct hd_error *err = hd_fw_read_string(fw, addr, buf, len);
	bool ok = !err;
	hd_error_destroy(err);
	return ok;
}

// ------------------------------------------------------------ type objects

// Is addr a type object: its type is `type` or a metatype (a subclass of
// type whose own type is `type`), it is ready, its name is a readable
// string and its basic size is sane.
static void check_type(struct hd_fw *fw, struct pytype *t)
{
	struct cpy_priv *p = cpy_priv_of(fw);
	uint64_t a = t->addr, meta;
	if (!cpy_read_u64(fw, a + HD_PY311_OB_TYPE, &meta))
		return;
	if (meta != p->type_type) {
		uint64_t metameta, metaflags;
		if (!cpy_read_u64(fw, meta + HD_PY311_OB_TYPE, &metameta) ||
		    metameta != p->type_type ||
		    !cpy_read_u64(fw, meta + HD_PY311_TP_FLAGS, &metaflags) ||
		    !(metaflags & HD_PY311_TPFLAGS_TYPE_SUBCLASS))
			return;
	}
	uint64_t name, flags, basicsize, dictoffset, weaklistoffset;
	if (!cpy_read_u64(fw, a + HD_PY311_TP_NAME, &name) ||
	    !cpy_read_u64(fw, a + HD_PY311_TP_FLAGS, &flags) ||
	    !cpy_read_u64(fw, a + HD_PY311_TP_BASICSIZE, &basicsize) ||
	    !cpy_read_u64(fw, a + HD_PY311_TP_DICTOFFSET, &dictoffset) ||
	    !cpy_read_u64(fw, a + HD_PY311_TP_WEAKLISTOFFSET, &weaklistoffset))
		return;
	if (!(flags & HD_PY311_TPFLAGS_READY) || basicsize < 16 ||
	    basicsize > (1u << 20))
		return;
	char buf[MAX_TYPE_NAME];
	if (!read_cstring(fw, name, buf, sizeof(buf)) || !buf[0])
		return;
	for (const char *c = buf; *c; c++) {
		if (*c < 0x21 || *c > 0x7e)
			return;
	}
	t->name = strdup(buf);
	if (!t->name)
		return;
	t->valid = true;
	t->flags = flags;
	t->basicsize = basicsize;
	t->dictoffset = (int64_t)dictoffset;
	t->weaklistoffset = (int64_t)weaklistoffset;
	if (flags & HD_PY311_TPFLAGS_TYPE_SUBCLASS)
		t->kind = K_TYPE;
	else if (flags & HD_PY311_TPFLAGS_LIST_SUBCLASS)
		t->kind = K_LIST;
	else if (flags & HD_PY311_TPFLAGS_TUPLE_SUBCLASS)
		t->kind = K_TUPLE;
	else if (flags & HD_PY311_TPFLAGS_DICT_SUBCLASS)
		t->kind = K_DICT;
	else if (a == p->set_type || a == p->frozenset_type)
		t->kind = K_SET;
	else if (a == p->module_type)
		t->kind = K_MODULE;
	else if (flags & (HD_PY311_TPFLAGS_UNICODE_SUBCLASS |
			  HD_PY311_TPFLAGS_BYTES_SUBCLASS))
		t->kind = K_OTHER;
	else if (flags & HD_PY311_TPFLAGS_HEAPTYPE)
		t->kind = K_INSTANCE;
}

static struct hd_error *lookup_type(struct hd_fw *fw, struct type_cache *c,
				    uint64_t addr, const struct pytype **ret)
{
	if (2 * (c->used + 1) > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		struct pytype *s = calloc(cap, sizeof(*s));
		if (!s)
			return &hd_error_no_memory;
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->slots[i].addr)
				continue;
			size_t k = hd_hash_u64(c->slots[i].addr) & (cap - 1);
			while (s[k].addr)
				k = (k + 1) & (cap - 1);
			s[k] = c->slots[i];
		}
		free(c->slots);
		c->slots = s;
		c->cap = cap;
	}
	size_t k = hd_hash_u64(addr) & (c->cap - 1);
	while (c->slots[k].addr && c->slots[k].addr != addr)
		k = (k + 1) & (c->cap - 1);
	struct pytype *t = &c->slots[k];
	if (!t->addr) {
		t->addr = addr;
		c->used++;
		check_type(fw, t);
	}
	*ret = t;
	return NULL;
}

void cpy_type_cache_deinit(struct type_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].name);
	free(c->slots);
}

// --------------------------------------------------------------- objects

// Bytes before the PyObject in its allocation (_PyType_PreHeaderSize):
// the GC head of a GC type, and the dict and values pointers of a class
// with a managed dict before that.
static uint64_t preheader(uint64_t flags)
{
	uint64_t n = 0;
	if (flags & HD_PY311_TPFLAGS_HAVE_GC)
		n += HD_PY311_SIZEOF_GC_HEAD;
	if (flags & HD_PY311_TPFLAGS_MANAGED_DICT)
		n += 2 * 8;
	return n;
}

// The object a block holds, if it holds one: for each layout 3.11 uses (no
// pre-header, GC head, managed dict + GC head), a positive refcount and a
// type object whose flags give that very layout and whose basic size fits.
struct hd_error *cpy_object_in_block(struct hd_fw *fw, struct type_cache *c,
				     uint64_t block, uint64_t size,
				     struct pyobj *ret, bool *found)
{
	*found = false;
	uint8_t buf[48];
	size_t have = size < sizeof(buf) ? (size_t)size : sizeof(buf);
	if (have < 16 || !cpy_read_ok(fw, block, buf, have))
		return NULL;
	for (size_t off = 0; off + 16 <= have; off += 16) {
		uint64_t refcnt = cpy_ld64(buf + off + HD_PY311_OB_REFCNT);
		uint64_t type = cpy_ld64(buf + off + HD_PY311_OB_TYPE);
		// Refcount 0: a dead object kept on a type's free list
		// (tuples, lists, dicts...) for reuse.
		if (refcnt > (1ull << 40) || !type || (type & 7) ||
		    type >= (1ull << 47))
			continue;
		const struct pytype *t;
		struct hd_error *err = lookup_type(fw, c, type, &t);
		if (err)
			return err;
		// A compact str is smaller than str's tp_basicsize (that of
		// the legacy PyUnicodeObject): its header is PyASCIIObject.
		uint64_t min = t->flags & HD_PY311_TPFLAGS_UNICODE_SUBCLASS ?
				       HD_PY311_SIZEOF_ASCII_OBJECT :
				       t->basicsize;
		if (!t->valid || preheader(t->flags) != off || off + min > size)
			continue;
		ret->addr = block + off;
		ret->block = block;
		ret->size = size;
		ret->type = t;
		ret->refcnt = refcnt;
		*found = true;
		return NULL;
	}
	return NULL;
}

// The block behind vertex v as (start, size) of its user bytes, for used
// blocks only.
bool cpy_vertex_used_block(struct hd_fw *fw, uint32_t v, uint64_t *start,
			   uint64_t *size)
{
	struct hd_block b;
	if (!hd_fw_vertex_block(fw, v, &b) || b.state != HD_STATE_USED)
		return false;
	*start = b.addr;
	*size = b.usable;
	return true;
}

// The object at exactly addr, or not found.
struct hd_error *cpy_object_at(struct hd_fw *fw, struct type_cache *c,
			       uint64_t addr, struct pyobj *ret, bool *found)
{
	*found = false;
	if (!addr || (addr & 7))
		return NULL;
	uint32_t v = hd_fw_vertex_at(fw, addr);
	uint64_t start, size;
	if (v == HD_DOM_NONE || !cpy_vertex_used_block(fw, v, &start, &size))
		return NULL;
	struct hd_error *err = cpy_object_in_block(fw, c, start, size, ret,
						   found);
	if (err || !*found)
		return err;
	if (ret->addr != addr || !ret->refcnt)
		*found = false;
	ret->vertex = v;
	return NULL;
}

// An object wherever it lives, heap or not (interned identifiers such as
// "__main__" are static objects of _PyRuntime in 3.11): for reading it,
// not for assigning it.
struct hd_error *cpy_object_anywhere(struct hd_fw *fw, struct type_cache *c,
				     uint64_t addr, struct pyobj *ret,
				     bool *found)
{
	struct hd_error *err = cpy_object_at(fw, c, addr, ret, found);
	if (err || *found || !addr || (addr & 7))
		return err;
	uint64_t h[2];
	if (!cpy_read_ok(fw, addr, h, sizeof(h)) || !h[0] || (h[1] & 7))
		return NULL;
	const struct pytype *t;
	if ((err = lookup_type(fw, c, h[1], &t)))
		return err;
	if (!t->valid)
		return NULL;
	ret->addr = ret->block = addr;
	ret->size = t->basicsize;
	ret->type = t;
	ret->refcnt = h[0];
	ret->vertex = HD_DOM_NONE;
	*found = true;
	return NULL;
}

// The block an auxiliary pointer (item array, keys) lies in, when a used
// block: exactly at its start, or for a values array past a prefix.
uint32_t cpy_aux_vertex(struct hd_fw *fw, uint64_t addr)
{
	uint32_t v = hd_fw_vertex_at(fw, addr);
	uint64_t start, size;
	if (v == HD_DOM_NONE || !cpy_vertex_used_block(fw, v, &start, &size))
		return HD_DOM_NONE;
	return v;
}

// ----------------------------------------------------------------- strings

// A str's text when it is a compact ASCII string (identifiers are).
bool cpy_read_ascii(struct hd_fw *fw, const struct pyobj *o, char *buf,
		    size_t len)
{
	if (strcmp(o->type->name, "str") != 0)
		return false;
	uint8_t h[HD_PY311_SIZEOF_ASCII_OBJECT];
	if (!cpy_read_ok(fw, o->addr, h, sizeof(h)))
		return false;
	uint32_t state = cpy_ld32(h + HD_PY311_ASCII_STATE);
	// state: interned:2, kind:3, compact:1, ascii:1, ready:1
	bool compact = state & (1u << 5), ascii = state & (1u << 6);
	uint64_t n = cpy_ld64(h + HD_PY311_ASCII_LENGTH);
	if (!compact || !ascii || n + 1 > len)
		return false;
	if (!cpy_read_ok(fw, o->addr + HD_PY311_SIZEOF_ASCII_OBJECT, buf, n))
		return false;
	buf[n] = '\0';
	for (uint64_t i = 0; i < n; i++) {
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return false;
	}
	return true;
}
