// The cpython framework module: CPython 3.11's pymalloc as a sub-allocator,
// Python objects named by their type, and the __main__ module's globals as
// semantic nodes.
//
// CPython is usually stripped and without DWARF, so everything here comes
// from exported symbols (Py_Version, _PyRuntime, PyType_Type, PySet_Type,
// PyFrozenSet_Type, PyModule_Type) and from the 3.11 layouts in
// cpython_layout.h.
//
// Choices worth knowing:
// - pymalloc's arena table is a static of obmalloc.c in 3.11, so arenas are
//   found by scanning anonymous writable memory for pool headers that
//   validate strictly; an arena's region starts at its first pool (up to
//   a pool of its mmap before that stays outside).
// - Ownership of a global's data is Python's own: what its container
//   refers to with a refcount of 1 (and so on down) is assigned to the
//   global's node. The pointer scan alone cannot tell: every GC head
//   links to its neighbours in the collector's lists, so unassigned GC
//   objects hang off the interpreter state rather than their owners.
// - A GC head's 16 bytes are marked framework (the collector's links);
//   the rest of an object, its refcount and type pointer included, are
//   the application's. Pool headers, free slots and dead objects on the
//   types' free lists are the framework's, under their own nodes.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom_framework.h"
#include "frameworks/cpython_layout.h"

// Upper bounds for walks over target memory: a corrupted count must not
// make the module read (or loop over) gigabytes.
#define MAX_ITEMS (1u << 26)        // items of one list, tuple, dict or set
#define MAX_BFS_OBJECTS (1u << 26)  // objects one global may own
#define MAX_TYPE_NAME 128
#define MAX_GLOBAL_NAME 96

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

static struct cpy_priv *priv(struct hd_fw *fw)
{
	return *hd_fw_private(fw);
}

static bool read_ok(struct hd_fw *fw, uint64_t addr, void *buf, size_t len)
{
	struct hd_error *err = hd_fw_read(fw, addr, buf, len);
	bool ok = !err;
	hd_error_destroy(err);
	return ok;
}

// A NUL-terminated string of at most len - 1 bytes.
static bool read_cstring(struct hd_fw *fw, uint64_t addr, char *buf,
			 size_t len)
{
	struct hd_error *err = hd_fw_read_string(fw, addr, buf, len);
	bool ok = !err;
	hd_error_destroy(err);
	return ok;
}

static bool read_u64(struct hd_fw *fw, uint64_t addr, uint64_t *ret)
{
	return read_ok(fw, addr, ret, sizeof(*ret));
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

// ------------------------------------------------------------------ detect

// "python3.11" of "/usr/bin/python3.11" or "libpython3.11" of
// "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"; false for other names.
static bool python_module_hint(const char *path, char *hint, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *p = base;
	if (strncmp(p, "lib", 3) == 0)
		p += 3;
	if (strncmp(p, "python3.", 8) != 0)
		return false;
	p += 8;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	size_t n = (size_t)(p - base);
	if (n + 1 > len)
		return false;
	memcpy(hint, base, n);
	hint[n] = '\0';
	return true;
}

static bool symbol(struct hd_fw *fw, const char *hint, const char *name,
		   uint64_t *addr)
{
	uint64_t size;
	struct hd_error *err = hd_fw_symbol(fw, hint, name, addr, &size);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

// Checks one python module: its version and the symbols the module needs.
static struct hd_error *detect_module(struct hd_fw *fw, const char *hint,
				      bool *detected, bool *has_version)
{
	uint64_t addr, version;
	if (!symbol(fw, hint, "Py_Version", &addr))
		return NULL;
	*has_version = true;
	if (!read_u64(fw, addr, &version)) {
		hd_fw_note(fw, "%s: Py_Version at 0x%" PRIx64 " is not readable",
			   hint, addr);
		return NULL;
	}
	unsigned major = (version >> 24) & 0xff, minor = (version >> 16) & 0xff,
		 micro = (version >> 8) & 0xff;
	if ((version & 0xffff0000ul) != HD_PY311_VERSION_HEX_3_11) {
		hd_fw_note(fw, "%s: CPython %u.%u.%u found: not supported (the "
			   "module knows the layouts of 3.11)", hint, major,
			   minor, micro);
		return NULL;
	}
	uint64_t runtime, type_type;
	if (!symbol(fw, hint, "_PyRuntime", &runtime) ||
	    !symbol(fw, hint, "PyType_Type", &type_type)) {
		hd_fw_note(fw, "%s: CPython %u.%u.%u without the _PyRuntime or "
			   "PyType_Type symbol", hint, major, minor, micro);
		return NULL;
	}
	struct cpy_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return &hd_error_no_memory;
	snprintf(p->hint, sizeof(p->hint), "%s", hint);
	p->version = version;
	p->runtime = runtime;
	p->type_type = type_type;
	// Sets have no tp_flags bit; without these symbols sets are only named.
	symbol(fw, hint, "PySet_Type", &p->set_type);
	symbol(fw, hint, "PyFrozenSet_Type", &p->frozenset_type);
	symbol(fw, hint, "PyModule_Type", &p->module_type);
	void **slot = hd_fw_private(fw);
	free(*slot);
	*slot = p;
	hd_fw_note(fw, "CPython %u.%u.%u (%s)", major, minor, micro, hint);
	*detected = true;
	return NULL;
}

static struct hd_error *cpy_detect(struct hd_fw *fw, bool *detected)
{
	*detected = false;
	struct hd_target *t = hd_fw_target(fw);
	size_t n = hd_target_num_modules(t);
	// A python executable may only be linked with libpython, which holds
	// the interpreter: every python module is tried, and a missing
	// Py_Version only means "before 3.11" when no module has it.
	char names[256] = "";
	size_t seen = 0;
	bool has_version = false;
	for (size_t i = 0; i < n && !*detected; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		char hint[64];
		if (!python_module_hint(m->name, hint, sizeof(hint)) &&
		    !(m->file && python_module_hint(m->file, hint, sizeof(hint))))
			continue;
		size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s%s",
			 seen++ ? ", " : "", hint);
		struct hd_error *err = detect_module(fw, hint, detected,
						     &has_version);
		if (err)
			return err;
	}
	if (!seen)
		hd_fw_note(fw, "no python3.N or libpython3.N module mapped");
	else if (!has_version)
		hd_fw_note(fw, "%s: no Py_Version symbol: CPython before 3.11, "
			   "not supported (the module knows 3.11)", names);
	return NULL;
}

// ----------------------------------------------------------------- blocks

struct pool {
	uint64_t addr;
	uint32_t arenaindex;
};

// A pool header that says what 3.11's pymalloc writes: every field
// consistent with the size class (see pymalloc_pool_extend and
// allocate_from_new_pool in obmalloc.c).
static bool pool_header_valid(const uint8_t *h, uint64_t p)
{
	uint32_t szidx = ld32(h + HD_PYMALLOC_POOL_SZIDX);
	if (szidx >= HD_PYMALLOC_SIZE_CLASSES)
		return false;
	uint32_t size = (szidx + 1) * HD_PYMALLOC_ALIGNMENT;
	uint32_t next = ld32(h + HD_PYMALLOC_POOL_NEXTOFFSET);
	uint32_t maxnext = ld32(h + HD_PYMALLOC_POOL_MAXNEXTOFFSET);
	if (maxnext != HD_PYMALLOC_POOL_SIZE - size)
		return false;
	// A new pool hands out its first block and sets nextoffset past the
	// second; it grows by one block at a time up to one past maxnext.
	if (next < HD_PYMALLOC_POOL_OVERHEAD + 2 * size ||
	    next > maxnext + size ||
	    (next - HD_PYMALLOC_POOL_OVERHEAD) % size != 0)
		return false;
	uint64_t nslots = (next - HD_PYMALLOC_POOL_OVERHEAD) / size;
	uint64_t count = ld32(h + HD_PYMALLOC_POOL_COUNT);
	if (count > nslots)
		return false;
	uint64_t fb = ld64(h + HD_PYMALLOC_POOL_FREEBLOCK);
	if (fb && (fb < p + HD_PYMALLOC_POOL_OVERHEAD || fb >= p + next ||
		   (fb - p - HD_PYMALLOC_POOL_OVERHEAD) % size != 0))
		return false;
	// A full pool has no free block, a pool with a free block is not full.
	if (!fb && count != nslots && next <= maxnext)
		return false;
	return true;
}

static int pool_cmp(const void *a, const void *b)
{
	const struct pool *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

// Pools: every POOL_SIZE-aligned address of anonymous writable memory
// whose header validates. The arena table (arenas, maxarenas) is a static
// of obmalloc.c, reachable from no exported symbol, so this is how the
// arenas are found without debug info.
static struct hd_error *find_pools(struct hd_fw *fw, struct pool **ret,
				   size_t *num)
{
	struct hd_target *t = hd_fw_target(fw);
	struct pool *pools = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		if (!m->readable || (m->prot & (HD_PROT_READ | HD_PROT_WRITE)) !=
					    (HD_PROT_READ | HD_PROT_WRITE) ||
		    (m->path && m->path[0]))
			continue;
		uint64_t p = (m->start + HD_PYMALLOC_POOL_SIZE - 1) &
			     ~(uint64_t)(HD_PYMALLOC_POOL_SIZE - 1);
		for (; p + HD_PYMALLOC_POOL_SIZE <= m->end;
		     p += HD_PYMALLOC_POOL_SIZE) {
			uint8_t h[HD_PYMALLOC_POOL_OVERHEAD];
			if (!read_ok(fw, p, h, sizeof(h)) ||
			    !pool_header_valid(h, p))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				struct pool *np = realloc(pools,
							  cap * sizeof(*np));
				if (!np) {
					free(pools);
					return &hd_error_no_memory;
				}
				pools = np;
			}
			pools[n].addr = p;
			pools[n].arenaindex =
				ld32(h + HD_PYMALLOC_POOL_ARENAINDEX);
			n++;
		}
	}
	qsort(pools, n, sizeof(*pools), pool_cmp);
	*ret = pools;
	*num = n;
	return NULL;
}

static struct hd_error *add_arena(struct hd_fw *fw, uint64_t start,
				  uint64_t end)
{
	struct cpy_priv *p = priv(fw);
	if (p->num_arenas == p->cap_arenas) {
		size_t cap = p->cap_arenas ? 2 * p->cap_arenas : 16;
		struct cpy_priv *np = realloc(p, sizeof(*p) +
						 cap * sizeof(p->arenas[0]));
		if (!np)
			return &hd_error_no_memory;
		np->cap_arenas = cap;
		*hd_fw_private(fw) = np;
		p = np;
	}
	p->arenas[p->num_arenas].start = start;
	p->arenas[p->num_arenas].end = end;
	p->num_arenas++;
	return hd_fw_add_region(fw, start, end, "pymalloc arenas");
}

// The blocks of one pool: its header, then one block per carved slot (free
// when on the pool's free list), then the never-carved rest as one free
// block. A free list that leaves the pool or loops, or a count that does
// not match it, makes the whole pool suspect: it is skipped.
static struct hd_error *pool_blocks(struct hd_fw *fw, uint64_t p)
{
	uint8_t h[HD_PYMALLOC_POOL_OVERHEAD];
	if (!read_ok(fw, p, h, sizeof(h)) || !pool_header_valid(h, p)) {
		hd_fw_warn(fw, p, "pymalloc pool header does not validate");
		return NULL;
	}
	uint32_t size = (ld32(h + HD_PYMALLOC_POOL_SZIDX) + 1) *
			HD_PYMALLOC_ALIGNMENT;
	uint32_t next = ld32(h + HD_PYMALLOC_POOL_NEXTOFFSET);
	uint32_t carved = (next - HD_PYMALLOC_POOL_OVERHEAD) / size;
	uint32_t nslots = (HD_PYMALLOC_POOL_SIZE - HD_PYMALLOC_POOL_OVERHEAD) /
			  size;
	if (carved > nslots)
		carved = nslots;
	uint8_t is_free[(HD_PYMALLOC_POOL_SIZE - HD_PYMALLOC_POOL_OVERHEAD) /
			HD_PYMALLOC_ALIGNMENT] = {0};
	uint32_t nfree = 0;
	uint64_t f = ld64(h + HD_PYMALLOC_POOL_FREEBLOCK);
	uint64_t base = p + HD_PYMALLOC_POOL_OVERHEAD;
	while (f) {
		if (f < base || f >= base + (uint64_t)carved * size ||
		    (f - base) % size != 0) {
			hd_fw_warn(fw, p, "pymalloc pool free list leaves the "
				   "pool at 0x%" PRIx64 "; pool skipped", f);
			return NULL;
		}
		uint32_t k = (uint32_t)((f - base) / size);
		if (is_free[k]) {
			hd_fw_warn(fw, p, "pymalloc pool free list loops; pool "
				   "skipped");
			return NULL;
		}
		is_free[k] = 1;
		nfree++;
		if (!read_u64(fw, f, &f)) {
			hd_fw_warn(fw, p, "pymalloc pool free list unreadable; "
				   "pool skipped");
			return NULL;
		}
	}
	uint32_t count = ld32(h + HD_PYMALLOC_POOL_COUNT);
	if (count != carved - nfree) {
		hd_fw_warn(fw, p, "pymalloc pool counts %u blocks, its free "
			   "list leaves %u; pool skipped", count,
			   carved - nfree);
		return NULL;
	}
	struct hd_error *err = hd_fw_add_block(fw, p, HD_PYMALLOC_POOL_OVERHEAD,
					       HD_STATE_INTERNAL,
					       "pymalloc pool header");
	for (uint32_t k = 0; !err && k < carved; k++)
		err = hd_fw_add_block(fw, base + (uint64_t)k * size, size,
				      is_free[k] ? HD_STATE_FREE :
						   HD_STATE_USED, NULL);
	// Never-carved slots are handed out lazily by pymalloc_pool_extend:
	// one free block rather than one per slot that was never a block.
	if (!err && carved < nslots)
		err = hd_fw_add_block(fw, base + (uint64_t)carved * size,
				      (uint64_t)(nslots - carved) * size,
				      HD_STATE_FREE, NULL);
	if (!err)
		priv(fw)->pools++;
	return err;
}

static struct hd_error *cpy_blocks(struct hd_fw *fw)
{
	struct pool *pools;
	size_t n;
	struct hd_error *err = find_pools(fw, &pools, &n);
	if (err)
		return err;
	// An arena: consecutive pools with the same arenaindex within
	// ARENA_SIZE. Its mmap may start up to a pool before the first pool
	// (pools are POOL_SIZE-aligned inside it); those bytes stay outside.
	size_t i = 0;
	while (!err && i < n) {
		size_t j = i + 1;
		while (j < n && pools[j].arenaindex == pools[i].arenaindex &&
		       pools[j].addr + HD_PYMALLOC_POOL_SIZE - pools[i].addr <=
			       HD_PYMALLOC_ARENA_SIZE)
			j++;
		err = add_arena(fw, pools[i].addr,
				pools[j - 1].addr + HD_PYMALLOC_POOL_SIZE);
		for (size_t k = i; !err && k < j; k++)
			err = pool_blocks(fw, pools[k].addr);
		i = j;
	}
	free(pools);
	if (err)
		return err;
	struct cpy_priv *p = priv(fw);
	hd_fw_note(fw, "pymalloc: %zu arenas, %" PRIu64 " pools (found by "
		   "their headers: the arena table is not reachable from "
		   "exported symbols)", p->num_arenas, p->pools);
	if (!n)
		hd_fw_warn(fw, 0, "no pymalloc pool found (PYTHONMALLOC=malloc?)");
	return NULL;
}

// ------------------------------------------------------------ type objects

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

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

// Is addr a type object: its type is `type` or a metatype (a subclass of
// type whose own type is `type`), it is ready, its name is a readable
// string and its basic size is sane.
static void check_type(struct hd_fw *fw, struct pytype *t)
{
	struct cpy_priv *p = priv(fw);
	uint64_t a = t->addr, meta;
	if (!read_u64(fw, a + HD_PY311_OB_TYPE, &meta))
		return;
	if (meta != p->type_type) {
		uint64_t metameta, metaflags;
		if (!read_u64(fw, meta + HD_PY311_OB_TYPE, &metameta) ||
		    metameta != p->type_type ||
		    !read_u64(fw, meta + HD_PY311_TP_FLAGS, &metaflags) ||
		    !(metaflags & HD_PY311_TPFLAGS_TYPE_SUBCLASS))
			return;
	}
	uint64_t name, flags, basicsize, dictoffset, weaklistoffset;
	if (!read_u64(fw, a + HD_PY311_TP_NAME, &name) ||
	    !read_u64(fw, a + HD_PY311_TP_FLAGS, &flags) ||
	    !read_u64(fw, a + HD_PY311_TP_BASICSIZE, &basicsize) ||
	    !read_u64(fw, a + HD_PY311_TP_DICTOFFSET, &dictoffset) ||
	    !read_u64(fw, a + HD_PY311_TP_WEAKLISTOFFSET, &weaklistoffset))
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
			size_t k = hash64(c->slots[i].addr) & (cap - 1);
			while (s[k].addr)
				k = (k + 1) & (cap - 1);
			s[k] = c->slots[i];
		}
		free(c->slots);
		c->slots = s;
		c->cap = cap;
	}
	size_t k = hash64(addr) & (c->cap - 1);
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

static void type_cache_deinit(struct type_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].name);
	free(c->slots);
}

// --------------------------------------------------------------- objects

struct pyobj {
	uint64_t addr;          // the PyObject *
	uint32_t vertex;        // the block holding it
	uint64_t block, size;   // that block's start and size
	const struct pytype *type;
	uint64_t refcnt;
};

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
static struct hd_error *object_in_block(struct hd_fw *fw, struct type_cache *c,
					uint64_t block, uint64_t size,
					struct pyobj *ret, bool *found)
{
	*found = false;
	uint8_t buf[48];
	size_t have = size < sizeof(buf) ? (size_t)size : sizeof(buf);
	if (have < 16 || !read_ok(fw, block, buf, have))
		return NULL;
	for (size_t off = 0; off + 16 <= have; off += 16) {
		uint64_t refcnt = ld64(buf + off + HD_PY311_OB_REFCNT);
		uint64_t type = ld64(buf + off + HD_PY311_OB_TYPE);
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
static bool vertex_used_block(struct hd_fw *fw, uint32_t v, uint64_t *start,
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
static struct hd_error *object_at(struct hd_fw *fw, struct type_cache *c,
				  uint64_t addr, struct pyobj *ret,
				  bool *found)
{
	*found = false;
	if (!addr || (addr & 7))
		return NULL;
	uint32_t v = hd_fw_vertex_at(fw, addr);
	uint64_t start, size;
	if (v == HD_DOM_NONE || !vertex_used_block(fw, v, &start, &size))
		return NULL;
	struct hd_error *err = object_in_block(fw, c, start, size, ret, found);
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
static struct hd_error *object_anywhere(struct hd_fw *fw, struct type_cache *c,
					uint64_t addr, struct pyobj *ret,
					bool *found)
{
	struct hd_error *err = object_at(fw, c, addr, ret, found);
	if (err || *found || !addr || (addr & 7))
		return err;
	uint64_t h[2];
	if (!read_ok(fw, addr, h, sizeof(h)) || !h[0] || (h[1] & 7))
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

// ----------------------------------------------------------------- strings

// A str's text when it is a compact ASCII string (identifiers are).
static bool read_ascii(struct hd_fw *fw, const struct pyobj *o, char *buf,
		       size_t len)
{
	if (strcmp(o->type->name, "str") != 0)
		return false;
	uint8_t h[HD_PY311_SIZEOF_ASCII_OBJECT];
	if (!read_ok(fw, o->addr, h, sizeof(h)))
		return false;
	uint32_t state = ld32(h + HD_PY311_ASCII_STATE);
	// state: interned:2, kind:3, compact:1, ascii:1, ready:1
	bool compact = state & (1u << 5), ascii = state & (1u << 6);
	uint64_t n = ld64(h + HD_PY311_ASCII_LENGTH);
	if (!compact || !ascii || n + 1 > len)
		return false;
	if (!read_ok(fw, o->addr + HD_PY311_SIZEOF_ASCII_OBJECT, buf, n))
		return false;
	buf[n] = '\0';
	for (uint64_t i = 0; i < n; i++) {
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return false;
	}
	return true;
}

// ----------------------------------------------------------- containers

// What an object refers to that it owns: the objects in it and the blocks
// it keeps its items in.
struct refs {
	uint64_t *objs;
	size_t num_objs, cap_objs;
	uint64_t aux[2];     // addresses inside blocks only this object uses
	const char *aux_name[2];
	size_t num_aux;
};

static struct hd_error *refs_push(struct refs *r, uint64_t p)
{
	if (!p)
		return NULL;
	if (r->num_objs == r->cap_objs) {
		size_t cap = r->cap_objs ? 2 * r->cap_objs : 64;
		uint64_t *n = realloc(r->objs, cap * sizeof(*n));
		if (!n)
			return &hd_error_no_memory;
		r->objs = n;
		r->cap_objs = cap;
	}
	r->objs[r->num_objs++] = p;
	return NULL;
}

static void refs_aux(struct refs *r, uint64_t addr, const char *name)
{
	if (addr && r->num_aux < 2) {
		r->aux[r->num_aux] = addr;
		r->aux_name[r->num_aux] = name;
		r->num_aux++;
	}
}

// n pointers at addr, read in pieces.
static struct hd_error *push_array(struct hd_fw *fw, struct refs *r,
				   uint64_t addr, uint64_t n)
{
	uint64_t buf[256];
	for (uint64_t i = 0; i < n;) {
		uint64_t k = n - i < 256 ? n - i : 256;
		if (!read_ok(fw, addr + 8 * i, buf, k * 8)) {
			hd_fw_warn(fw, addr + 8 * i, "item array unreadable");
			return NULL;
		}
		for (uint64_t j = 0; j < k; j++) {
			struct hd_error *err = refs_push(r, buf[j]);
			if (err)
				return err;
		}
		i += k;
	}
	return NULL;
}

static struct hd_error *list_refs(struct hd_fw *fw, const struct pyobj *o,
				  struct refs *r)
{
	uint64_t n, items, allocated;
	if (!read_u64(fw, o->addr + HD_PY311_OB_SIZE, &n) ||
	    !read_u64(fw, o->addr + HD_PY311_LIST_ITEM, &items) ||
	    !read_u64(fw, o->addr + HD_PY311_LIST_ALLOCATED, &allocated))
		return NULL;
	if (n > allocated || allocated > MAX_ITEMS) {
		hd_fw_warn(fw, o->addr, "list of %" PRId64 " items in %" PRId64
			   " slots: not followed", (int64_t)n,
			   (int64_t)allocated);
		return NULL;
	}
	refs_aux(r, items, "list items");
	return push_array(fw, r, items, n);
}

static struct hd_error *tuple_refs(struct hd_fw *fw, const struct pyobj *o,
				   struct refs *r)
{
	uint64_t n;
	if (!read_u64(fw, o->addr + HD_PY311_OB_SIZE, &n))
		return NULL;
	uint64_t room = o->block + o->size - (o->addr + HD_PY311_TUPLE_ITEM);
	if (n > room / 8) {
		hd_fw_warn(fw, o->addr, "tuple of %" PRId64 " items does not "
			   "fit its block", (int64_t)n);
		return NULL;
	}
	return push_array(fw, r, o->addr + HD_PY311_TUPLE_ITEM, n);
}

// Keys and values of a dict (3.11: a keys object with an index table then
// dk_nentries entries; a split dict keeps its values apart, in ma_values).
// keys may be NULL (values only). A split dict's keys object is its
// class's, so only its values block is its own.
static struct hd_error *dict_entries(struct hd_fw *fw, uint64_t dict,
				     struct refs *keys, struct refs *values)
{
	uint64_t k, vals;
	if (!read_u64(fw, dict + HD_PY311_DICT_KEYS, &k) ||
	    !read_u64(fw, dict + HD_PY311_DICT_VALUES, &vals))
		return NULL;
	uint8_t h[HD_PY311_DK_INDICES];
	if (!read_ok(fw, k, h, sizeof(h))) {
		hd_fw_warn(fw, dict, "dict keys at 0x%" PRIx64 " unreadable", k);
		return NULL;
	}
	unsigned log2_size = h[HD_PY311_DK_LOG2_SIZE];
	unsigned log2_index = h[HD_PY311_DK_LOG2_INDEX_BYTES];
	uint64_t nentries = ld64(h + HD_PY311_DK_NENTRIES);
	if (log2_size > 30 || log2_index > 33 || nentries > MAX_ITEMS ||
	    nentries > (1ull << log2_size)) {
		hd_fw_warn(fw, dict, "dict keys at 0x%" PRIx64 " do not look "
			   "like 3.11's", k);
		return NULL;
	}
	bool general = h[HD_PY311_DK_KIND] == HD_PY311_DICT_KEYS_GENERAL;
	uint64_t esz = general ? HD_PY311_SIZEOF_DICT_KEY_ENTRY :
				 HD_PY311_SIZEOF_DICT_UNICODE_ENTRY;
	uint64_t koff = general ? HD_PY311_DKE_KEY : HD_PY311_DKU_KEY;
	uint64_t voff = general ? HD_PY311_DKE_VALUE : HD_PY311_DKU_VALUE;
	uint64_t entries = k + HD_PY311_DK_INDICES + (1ull << log2_index);
	if (vals) {
		refs_aux(values, vals, "dict values");
	} else {
		refs_aux(values, k, "dict keys");
	}
	for (uint64_t i = 0; i < nentries; i++) {
		uint64_t key, value;
		if (!read_u64(fw, entries + i * esz + koff, &key)) {
			hd_fw_warn(fw, dict, "dict entries unreadable");
			return NULL;
		}
		if (!key)
			continue;
		if (vals) {
			if (!read_u64(fw, vals + 8 * i, &value))
				return NULL;
		} else if (!read_u64(fw, entries + i * esz + voff, &value)) {
			return NULL;
		}
		if (!value)
			continue;
		struct hd_error *err = keys ? refs_push(keys, key) : NULL;
		if (!err)
			err = refs_push(values, value);
		if (err)
			return err;
	}
	return NULL;
}

static struct hd_error *set_refs(struct hd_fw *fw, const struct pyobj *o,
				 struct refs *r)
{
	uint64_t mask, table;
	if (!read_u64(fw, o->addr + HD_PY311_SET_MASK, &mask) ||
	    !read_u64(fw, o->addr + HD_PY311_SET_TABLE, &table))
		return NULL;
	if (mask >= MAX_ITEMS || ((mask + 1) & mask)) {
		hd_fw_warn(fw, o->addr, "set mask %" PRIu64 " is not 2^n - 1",
			   mask);
		return NULL;
	}
	if (table != o->addr + HD_PY311_SET_SMALLTABLE)
		refs_aux(r, table, "set table");
	for (uint64_t i = 0; i <= mask; i++) {
		uint64_t key;
		if (!read_u64(fw, table + i * HD_PY311_SIZEOF_SETENTRY +
					  HD_PY311_SETENTRY_KEY, &key)) {
			hd_fw_warn(fw, o->addr, "set table unreadable");
			return NULL;
		}
		// Deleted entries hold the shared dummy key: it is an object
		// whose refcount is never 1, so it is not taken as owned.
		struct hd_error *err = refs_push(r, key);
		if (err)
			return err;
	}
	return NULL;
}

// A managed dict's values (new_values() in 3.11): a block of its own, a
// prefix of prefix_size bytes, then the value slots. The prefix's last
// byte is prefix_size, the one before it the number of values set, and
// before that, backwards, the slot index of each value in insertion
// order. Only those slots are read: the rest of the block may hold stale
// pointers.
static struct hd_error *values_refs(struct hd_fw *fw, const struct pyobj *o,
				    uint64_t values, struct refs *r)
{
	uint32_t v = hd_fw_vertex_at(fw, values);
	uint64_t start, size;
	uint8_t tail[2];
	if (v == HD_DOM_NONE || !vertex_used_block(fw, v, &start, &size) ||
	    !read_ok(fw, values - 2, tail, sizeof(tail)))
		goto bad;
	uint8_t count = tail[0], prefix = tail[1];
	if (prefix < 8 || prefix % 8 || values - prefix != start ||
	    count + 2 > prefix || values >= start + size)
		goto bad;
	uint64_t slots = (start + size - values) / 8;
	uint8_t order[256];
	if (count && !read_ok(fw, values - 2 - count, order, count))
		goto bad;
	refs_aux(r, values, "instance values");
	for (unsigned k = 0; k < count; k++) {
		// order[count - 1 - k] is the k-th value's slot index.
		uint8_t idx = order[count - 1 - k];
		uint64_t p;
		if (idx >= slots)
			goto bad;
		if (!read_u64(fw, values + 8 * (uint64_t)idx, &p))
			goto bad;
		struct hd_error *err = refs_push(r, p);
		if (err)
			return err;
	}
	return NULL;
bad:
	hd_fw_warn(fw, o->addr, "instance values at 0x%" PRIx64 " do not "
		   "look like 3.11's", values);
	return NULL;
}

// An instance of a class: its managed dict's values (3.11 keeps the
// pointer to them 4 words before the object, the materialized dict 3
// words before), or its dict at tp_dictoffset, and its slots.
static struct hd_error *instance_refs(struct hd_fw *fw, const struct pyobj *o,
				      struct refs *r)
{
	const struct pytype *t = o->type;
	struct hd_error *err;
	if (t->flags & HD_PY311_TPFLAGS_MANAGED_DICT) {
		uint64_t values, dict;
		if (!read_u64(fw, o->addr - 32, &values) ||
		    !read_u64(fw, o->addr - 24, &dict))
			return NULL;
		if ((err = refs_push(r, dict)))
			return err;
		if (values && (err = values_refs(fw, o, values, r)))
			return err;
	} else if (t->dictoffset > 0 &&
		   (uint64_t)t->dictoffset + 8 <= o->size) {
		uint64_t dict;
		if (read_u64(fw, o->addr + t->dictoffset, &dict) &&
		    (err = refs_push(r, dict)))
			return err;
	}
	// Slots (__slots__ members) lie between the object header and
	// tp_basicsize; other words there are not pointers to objects, and
	// the caller checks every candidate is an object.
	for (uint64_t off = 16; off + 8 <= t->basicsize; off += 8) {
		if ((int64_t)off == t->dictoffset ||
		    (int64_t)off == t->weaklistoffset)
			continue;
		uint64_t p;
		if (read_u64(fw, o->addr + off, &p) && (err = refs_push(r, p)))
			return err;
	}
	return NULL;
}

static struct hd_error *object_refs(struct hd_fw *fw, const struct pyobj *o,
				    struct refs *r)
{
	r->num_objs = 0;
	r->num_aux = 0;
	switch (o->type->kind) {
	case K_LIST:
		return list_refs(fw, o, r);
	case K_TUPLE:
		return tuple_refs(fw, o, r);
	case K_DICT:
		return dict_entries(fw, o->addr, r, r);
	case K_SET:
		return set_refs(fw, o, r);
	case K_INSTANCE:
		return instance_refs(fw, o, r);
	default:
		return NULL;
	}
}

// --------------------------------------------------------------- analyze

struct addr_set {
	uint64_t *slots;
	size_t cap, used;
};

// Adds p; *added says whether it was new.
static struct hd_error *addr_set_add(struct addr_set *s, uint64_t p,
				     bool *added)
{
	if (2 * (s->used + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		uint64_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return &hd_error_no_memory;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slots[i])
				continue;
			size_t k = hash64(s->slots[i]) & (cap - 1);
			while (n[k])
				k = (k + 1) & (cap - 1);
			n[k] = s->slots[i];
		}
		free(s->slots);
		s->slots = n;
		s->cap = cap;
	}
	size_t k = hash64(p) & (s->cap - 1);
	while (s->slots[k] && s->slots[k] != p)
		k = (k + 1) & (s->cap - 1);
	*added = !s->slots[k];
	if (*added) {
		s->slots[k] = p;
		s->used++;
	}
	return NULL;
}

struct analysis {
	struct hd_fw *fw;
	struct type_cache types;
	uint32_t cpython, pymalloc;
	uint32_t freelists;   // created when the first dead object is seen
	uint64_t dead;
	uint64_t objects, gc_objects, aux_named;
	size_t globals;
};

static bool in_my_arena(struct hd_fw *fw, uint64_t addr)
{
	struct cpy_priv *p = priv(fw);
	size_t lo = 0, hi = p->num_arenas;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < p->arenas[mid].start)
			hi = mid;
		else if (addr >= p->arenas[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

// The block an auxiliary pointer (item array, keys) lies in, when a used
// block: exactly at its start, or for a values array past a prefix.
static uint32_t aux_vertex(struct hd_fw *fw, uint64_t addr)
{
	uint32_t v = hd_fw_vertex_at(fw, addr);
	uint64_t start, size;
	if (v == HD_DOM_NONE || !vertex_used_block(fw, v, &start, &size))
		return HD_DOM_NONE;
	return v;
}

// A dead object on its type's free list: the interpreter's cache, shown
// under a "free lists" node as framework memory. (Such objects link to
// each other, so unassigned the first would seem to keep the rest alive.)
static struct hd_error *free_list_object(struct analysis *a, uint32_t v,
					 const struct pyobj *o)
{
	struct hd_fw *fw = a->fw;
	struct hd_error *err;
	if (a->freelists == HD_FW_NO_NODE &&
	    (err = hd_fw_node(fw, a->cpython, HD_DOM_NONE, "free lists",
			      "allocator", HD_OWNER_FRAMEWORK, &a->freelists)))
		return err;
	char name[MAX_TYPE_NAME + 16];
	snprintf(name, sizeof(name), "%s (free list)", o->type->name);
	if ((err = hd_fw_name(fw, v, name)))
		return err;
	a->dead++;
	return hd_fw_assign(fw, a->freelists, v);
}

// Names every Python object by its type, and the blocks holding list
// items, dict keys and values, set tables; marks GC heads as framework
// bytes (the collector's links, nothing the program stored). Pool headers
// and free slots go to the pymalloc node.
static struct hd_error *name_blocks(struct analysis *a)
{
	struct hd_fw *fw = a->fw;
	uint32_t n = hd_graph_num_vertices(hd_fw_graph(fw));
	struct refs r = {0};
	struct hd_error *err = NULL;
	for (uint32_t v = 1; !err && v < n; v++) {
		struct hd_block b;
		if (!hd_fw_vertex_block(fw, v, &b))
			continue;
		bool sub = hd_fw_vertex_subblock(fw, v) >= 0;
		if (sub && !in_my_arena(fw, b.addr))
			continue;
		if (sub && b.state != HD_STATE_USED) {
			err = hd_fw_assign(fw, a->pymalloc, v);
			continue;
		}
		if (b.state != HD_STATE_USED)
			continue;
		struct pyobj o;
		bool found;
		err = object_in_block(fw, &a->types, b.addr, b.usable, &o,
				      &found);
		if (err || !found)
			continue;
		if (!o.refcnt) {
			err = free_list_object(a, v, &o);
			continue;
		}
		a->objects++;
		if ((err = hd_fw_name(fw, v, o.type->name)))
			break;
		if (o.type->flags & HD_PY311_TPFLAGS_HAVE_GC) {
			a->gc_objects++;
			err = hd_fw_mark(fw, v, HD_PY311_SIZEOF_GC_HEAD);
			if (err)
				break;
		}
		// Only the auxiliary blocks: no need to read every item.
		r.num_aux = 0;
		switch (o.type->kind) {
		case K_LIST: {
			uint64_t items;
			if (read_u64(fw, o.addr + HD_PY311_LIST_ITEM, &items))
				refs_aux(&r, items, "list items");
			break;
		}
		case K_DICT: {
			uint64_t k, vals;
			if (read_u64(fw, o.addr + HD_PY311_DICT_KEYS, &k) &&
			    read_u64(fw, o.addr + HD_PY311_DICT_VALUES, &vals)) {
				if (vals)
					refs_aux(&r, vals, "dict values");
				else
					refs_aux(&r, k, "dict keys");
			}
			break;
		}
		case K_SET: {
			uint64_t table;
			if (read_u64(fw, o.addr + HD_PY311_SET_TABLE, &table) &&
			    table != o.addr + HD_PY311_SET_SMALLTABLE)
				refs_aux(&r, table, "set table");
			break;
		}
		case K_INSTANCE: {
			uint64_t values;
			if ((o.type->flags & HD_PY311_TPFLAGS_MANAGED_DICT) &&
			    read_u64(fw, o.addr - 32, &values))
				refs_aux(&r, values, "instance values");
			break;
		}
		default:
			break;
		}
		for (size_t i = 0; !err && i < r.num_aux; i++) {
			uint32_t av = aux_vertex(fw, r.aux[i]);
			if (av == HD_DOM_NONE || av == v)
				continue;
			err = hd_fw_name(fw, av, r.aux_name[i]);
			a->aux_named++;
		}
	}
	free(r.objs);
	return err;
}

// Everything a global's container owns, by Python's own count: an object
// whose refcount is 1 is referred to by its container alone, so it (and
// what it owns in turn) is assigned to the global's node; an object with
// other references is left to the dominator tree. The collector's links
// (GC heads point at neighbouring objects) would otherwise make every
// GC object look reachable from the interpreter state.
static struct hd_error *assign_owned(struct analysis *a, uint32_t node,
				     const struct pyobj *root)
{
	struct hd_fw *fw = a->fw;
	struct addr_set seen = {0};
	uint64_t *stack = NULL;
	size_t sp = 0, cap = 0, visited = 0;
	struct refs r = {0};
	bool added;
	struct hd_error *err = addr_set_add(&seen, root->addr, &added);
	if (!err)
		err = hd_fw_assign(fw, node, root->vertex);
	if (!err) {
		stack = malloc(64 * sizeof(*stack));
		if (!stack)
			err = &hd_error_no_memory;
		cap = 64;
	}
	if (!err)
		stack[sp++] = root->addr;
	while (!err && sp) {
		if (++visited > MAX_BFS_OBJECTS) {
			hd_fw_warn(fw, root->addr, "more than %u objects owned: "
				   "the rest not assigned", MAX_BFS_OBJECTS);
			break;
		}
		struct pyobj o;
		bool found;
		err = object_at(fw, &a->types, stack[--sp], &o, &found);
		if (err || !found)
			continue;
		if ((err = object_refs(fw, &o, &r)))
			break;
		for (size_t i = 0; !err && i < r.num_aux; i++) {
			uint32_t av = aux_vertex(fw, r.aux[i]);
			if (av != HD_DOM_NONE && av != o.vertex)
				err = hd_fw_assign(fw, node, av);
		}
		for (size_t i = 0; !err && i < r.num_objs; i++) {
			struct pyobj c;
			err = object_at(fw, &a->types, r.objs[i], &c, &found);
			if (err || !found || c.refcnt != 1)
				continue;
			if ((err = addr_set_add(&seen, c.addr, &added)) ||
			    !added)
				continue;
			if ((err = hd_fw_assign(fw, node, c.vertex)))
				break;
			if (sp == cap) {
				uint64_t *ns = realloc(stack,
						       2 * cap * sizeof(*ns));
				if (!ns) {
					err = &hd_error_no_memory;
					break;
				}
				stack = ns;
				cap *= 2;
			}
			stack[sp++] = c.addr;
		}
	}
	free(r.objs);
	free(stack);
	free(seen.slots);
	return err;
}

// The __main__ module's dict: _PyRuntime.interpreters.head, checked to
// point back at _PyRuntime, then sys.modules (interp->modules)["__main__"].
static struct hd_error *main_dict(struct analysis *a, struct pyobj *ret,
				  bool *found)
{
	struct hd_fw *fw = a->fw;
	struct cpy_priv *p = priv(fw);
	*found = false;
	uint64_t interp, back, modules;
	if (!read_u64(fw, p->runtime + HD_PY311_RUNTIME_INTERP_HEAD, &interp) ||
	    !read_u64(fw, interp + HD_PY311_INTERP_RUNTIME, &back) ||
	    back != p->runtime) {
		hd_fw_warn(fw, p->runtime, "no interpreter state pointing back "
			   "at _PyRuntime: globals not shown");
		return NULL;
	}
	struct pyobj o;
	bool ok = false;
	struct hd_error *err = NULL;
	if (read_u64(fw, interp + HD_PY311_INTERP_MODULES, &modules))
		err = object_at(fw, &a->types, modules, &o, &ok);
	if (err)
		return err;
	if (!ok || o.type->kind != K_DICT) {
		hd_fw_warn(fw, interp, "interpreter's modules is not a dict on "
			   "the heap: globals not shown");
		return NULL;
	}
	struct refs keys = {0}, values = {0};
	err = dict_entries(fw, modules, &keys, &values);
	uint64_t module = 0;
	for (size_t i = 0; !err && i < keys.num_objs && i < values.num_objs;
	     i++) {
		struct pyobj k;
		char name[16];
		err = object_anywhere(fw, &a->types, keys.objs[i], &k, &ok);
		if (!err && ok && read_ascii(fw, &k, name, sizeof(name)) &&
		    strcmp(name, "__main__") == 0) {
			module = values.objs[i];
			break;
		}
	}
	free(keys.objs);
	free(values.objs);
	if (err)
		return err;
	uint64_t dict;
	if (!module || !read_u64(fw, module + HD_PY311_MODULE_DICT, &dict)) {
		hd_fw_note(fw, "no __main__ module in sys.modules");
		return NULL;
	}
	if ((err = object_at(fw, &a->types, dict, ret, &ok)))
		return err;
	if (!ok || ret->type->kind != K_DICT) {
		hd_fw_warn(fw, module, "__main__'s md_dict is not a dict");
		return NULL;
	}
	*found = true;
	return NULL;
}

// One node per global of __main__ that refers to a container (list,
// tuple, dict, set or an instance of a class), under the CPython node.
static struct hd_error *main_globals(struct analysis *a)
{
	struct hd_fw *fw = a->fw;
	struct pyobj dict;
	bool found;
	struct hd_error *err = main_dict(a, &dict, &found);
	if (err || !found)
		return err;
	struct refs keys = {0}, values = {0};
	err = dict_entries(fw, dict.addr, &keys, &values);
	for (size_t i = 0; !err && i < keys.num_objs && i < values.num_objs;
	     i++) {
		struct pyobj k, v;
		char name[MAX_GLOBAL_NAME];
		bool ok;
		err = object_anywhere(fw, &a->types, keys.objs[i], &k, &ok);
		if (err || !ok || !read_ascii(fw, &k, name, sizeof(name)))
			continue;
		if (strncmp(name, "__", 2) == 0)
			continue;
		err = object_at(fw, &a->types, values.objs[i], &v, &ok);
		if (err || !ok)
			continue;
		switch (v.type->kind) {
		case K_LIST:
		case K_TUPLE:
		case K_DICT:
		case K_SET:
		case K_INSTANCE:
			break;
		default:
			continue;
		}
		char label[MAX_GLOBAL_NAME + MAX_TYPE_NAME + 32];
		snprintf(label, sizeof(label), "%s '%s' (__main__)",
			 v.type->name, name);
		uint32_t node;
		err = hd_fw_node(fw, a->cpython, HD_DOM_NONE, label, "global",
				 HD_OWNER_APPLICATION, &node);
		if (!err)
			err = assign_owned(a, node, &v);
		a->globals++;
	}
	free(keys.objs);
	free(values.objs);
	return err;
}

static struct hd_error *cpy_analyze(struct hd_fw *fw)
{
	struct analysis a = {.fw = fw, .freelists = HD_FW_NO_NODE};
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE,
					  "CPython", "interpreter",
					  HD_OWNER_FRAMEWORK, &a.cpython);
	if (!err)
		err = hd_fw_node(fw, a.cpython, HD_DOM_NONE, "pymalloc",
				 "allocator", HD_OWNER_FRAMEWORK, &a.pymalloc);
	if (!err)
		err = name_blocks(&a);
	if (!err)
		err = main_globals(&a);
	if (!err) {
		size_t valid = 0;
		for (size_t i = 0; i < a.types.cap; i++)
			valid += a.types.slots[i].valid;
		hd_fw_note(fw, "%" PRIu64 " objects of %zu types named (%" PRIu64
			   " with a GC head, marked framework), %" PRIu64
			   " item arrays and tables, %" PRIu64 " dead objects "
			   "on free lists; %zu globals of __main__",
			   a.objects, valid, a.gc_objects, a.aux_named, a.dead,
			   a.globals);
	}
	type_cache_deinit(&a.types);
	return err;
}

const struct hd_framework hd_framework_cpython = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "cpython",
	.version = "1.0",
	.description = "CPython 3.11: pymalloc arenas, objects named by type, "
		       "__main__ globals",
	.detect = cpy_detect,
	.blocks = cpy_blocks,
	.analyze = cpy_analyze,
};
