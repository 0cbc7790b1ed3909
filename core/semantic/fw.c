// The context framework modules' call-backs get: reads, notes and
// warnings, interned names, and what they add (sub-allocator blocks,
// semantic nodes, assignments, marks, names).
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heap/heap_internal.h"
#include "semantic/fw_fast.h"
#include "semantic/semantic_internal.h"
#include "util/hash.h"
#include "util/vec.h"
#include "util/sort.h"

#define MAX_WARNINGS 100

struct hd_target *hd_fw_target(struct hd_fw *fw) { return fw->t; }
struct hd_debuginfo *hd_fw_debuginfo(struct hd_fw *fw) { return fw->di; }
const struct hd_heap *hd_fw_heap(struct hd_fw *fw) { return fw->h; }
const struct hd_graph *hd_fw_graph(struct hd_fw *fw) { return fw->g; }
const struct hd_typing *hd_fw_typing(struct hd_fw *fw) { return fw->ty; }
void **hd_fw_private(struct hd_fw *fw) { return &fw->mods[fw->cur].priv; }

// Modules read millions of small objects; from a live process or through a
// debugger's call-backs each read would be a system call or a call into
// the debugger. The process is stopped while it is analysed, so whole
// windows of it can be kept: a direct-mapped cache of 16 KiB lines. A
// core is read with pread, whose cost is the copy: a line there is 1 KiB
// (a container's nodes are scattered over the heap, and a 16 KiB line per
// 8-byte read made the copies most of the libstdc++ module's time).
#define CACHE_BYTES (4u << 20)

struct hd_fw_cache {
	unsigned shift;      // log2 of the line size
	size_t num_lines;
	uint64_t *base;      // line address + 1, 0: empty
	uint8_t *data;       // num_lines lines
};

static struct hd_fw_cache *cache_create(struct hd_target *t)
{
	struct hd_fw_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->shift = strcmp(hd_target_kind(t), "core") == 0 ? 10 : 14;
	c->num_lines = CACHE_BYTES >> c->shift;
	c->base = calloc(c->num_lines, sizeof(*c->base));
	c->data = malloc(CACHE_BYTES);
	if (!c->base || !c->data) {
		hd_fw_cache_destroy(c);
		return NULL;
	}
	return c;
}

void hd_fw_cache_destroy(struct hd_fw_cache *c)
{
	if (!c)
		return;
	free(c->base);
	free(c->data);
	free(c);
}

struct hd_error *hd_fw_read(struct hd_fw *fw, uint64_t addr, void *buf,
			    size_t len)
{
	if (!fw->cache && !(fw->cache = cache_create(fw->t)))
		return hd_target_read(fw->t, addr, buf, len);
	struct hd_fw_cache *c = fw->cache;
	uint64_t line = addr >> c->shift;
	if (len == 0 || ((addr + len - 1) >> c->shift) != line)
		return hd_target_read(fw->t, addr, buf, len);
	size_t slot = (size_t)(line ^ (line >> 8)) & (c->num_lines - 1);
	uint8_t *data = c->data + (slot << c->shift);
	if (c->base[slot] != line + 1) {
		struct hd_error *err = hd_target_read(fw->t, line << c->shift,
						      data, (size_t)1 << c->shift);
		if (err) {
			// Part of the line is missing: read just what was asked.
			c->base[slot] = 0;
			if (err == &hd_error_no_memory)
				return err;
			hd_error_destroy(err);
			return hd_target_read(fw->t, addr, buf, len);
		}
		c->base[slot] = line + 1;
	}
	memcpy(buf, data + (addr & (((uint64_t)1 << c->shift) - 1)), len);
	return NULL;
}

struct hd_error *hd_fw_read_u64(struct hd_fw *fw, uint64_t addr, uint64_t *ret)
{
	return hd_fw_read(fw, addr, ret, sizeof(*ret));
}

struct hd_error *hd_fw_read_string(struct hd_fw *fw, uint64_t addr, char *buf,
				   size_t len)
{
	if (!len)
		return hd_error_create(HD_ERROR_INVALID, "empty string buffer");
	// Byte by byte from a page boundary's view would be faster; strings
	// here are type names, short.
	size_t i = 0;
	while (i + 1 < len) {
		size_t chunk = len - 1 - i < 64 ? len - 1 - i : 64;
		// Do not cross into the next page: it may be unmapped.
		uint64_t page_left = 4096 - ((addr + i) & 4095);
		if (chunk > page_left)
			chunk = page_left;
		struct hd_error *err = hd_fw_read(fw, addr + i, buf + i, chunk);
		if (err)
			return err;
		void *nul = memchr(buf + i, 0, chunk);
		if (nul)
			return NULL;
		i += chunk;
	}
	buf[len - 1] = '\0';
	return NULL;
}

struct hd_error *hd_fw_symbol(struct hd_fw *fw, const char *module_hint,
			      const char *name, uint64_t *addr, uint64_t *size)
{
	uint64_t sz = 0;
	struct hd_error *err =
		hd_debuginfo_find_symbol(fw->di, module_hint, name, addr, &sz);
	if (!err && size)
		*size = sz;
	return err;
}

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

void hd_fw_note(struct hd_fw *fw, const char *fmt, ...)
{
	struct hd_fw_module *m = &fw->mods[fw->cur];
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	if (s && !HD_VEC_PUSH(m->notes, m->num_notes, m->cap_notes, s))
		free(s);
}

void hd_fw_warn(struct hd_fw *fw, uint64_t addr, const char *fmt, ...)
{
	struct hd_fw_module *m = &fw->mods[fw->cur];
	if (m->num_warnings >= MAX_WARNINGS) {
		m->dropped_warnings++;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	struct hd_fw_warning w = {.address = addr, .message = s};
	if (!s || !HD_VEC_PUSH(m->warnings, m->num_warnings, m->cap_warnings, w)) {
		free(s);
		m->dropped_warnings++;
	}
}

// ---------------------------------------------------------------- labels

struct label_hash {
	uint32_t *slots; // label index + 1, 0 empty
	size_t cap;
};

static bool rehash(struct hd_fw *fw, struct label_hash *lh, size_t cap)
{
	uint32_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < fw->num_labels; i++) {
		size_t j = hd_hash_str(fw->labels[i]) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(lh->slots);
	lh->slots = slots;
	lh->cap = cap;
	return true;
}

// Adds name (not there yet) to the labels and the hash.
static uint32_t intern_new(struct hd_fw *fw, const char *name)
{
	struct label_hash *lh = fw->label_hash;
	char *copy = strdup(name);
	if (!copy || !HD_VEC_PUSH(fw->labels, fw->num_labels, fw->cap_labels, copy)) {
		free(copy);
		return UINT32_MAX;
	}
	size_t j = hd_hash_str(name) & (lh->cap - 1);
	while (lh->slots[j])
		j = (j + 1) & (lh->cap - 1);
	lh->slots[j] = (uint32_t)fw->num_labels;
	return (uint32_t)fw->num_labels - 1;
}

// The index of name in fw->labels, added if new; UINT32_MAX on failure.
uint32_t hd_fw_intern(struct hd_fw *fw, const char *name)
{
	struct label_hash *lh = fw->label_hash;
	if (!lh) {
		lh = calloc(1, sizeof(*lh));
		if (!lh || !rehash(fw, lh, 64)) {
			free(lh);
			return UINT32_MAX;
		}
		fw->label_hash = lh;
	}
	size_t j = hd_hash_str(name) & (lh->cap - 1);
	while (lh->slots[j]) {
		uint32_t i = lh->slots[j] - 1;
		if (strcmp(fw->labels[i], name) == 0)
			return i;
		j = (j + 1) & (lh->cap - 1);
	}
	// Kept at most half full, so probes stay short.
	if ((fw->num_labels + 1) * 2 > lh->cap && !rehash(fw, lh, lh->cap * 2))
		return UINT32_MAX;
	return intern_new(fw, name);
}

void hd_fw_labels_free(struct hd_fw *fw)
{
	for (size_t i = 0; i < fw->num_labels; i++)
		free(fw->labels[i]);
	free(fw->labels);
	free(fw->dwarf_keys);
	free(fw->dwarf_key_hash);
	struct label_hash *lh = fw->label_hash;
	if (lh)
		free(lh->slots);
	free(lh);
}

// -------------------------------------------------------- sub-allocators

static struct hd_error *wrong_phase(struct hd_fw *fw, const char *what,
				    const char *phase)
{
	return hd_error_create(HD_ERROR_INVALID,
			       "framework %s: %s may only be called from %s",
			       fw->mods[fw->cur].ops->name, what, phase);
}

struct hd_error *hd_fw_add_region(struct hd_fw *fw, uint64_t start,
				  uint64_t end, const char *label)
{
	if (fw->phase != HD_FW_BLOCKS)
		return wrong_phase(fw, "hd_fw_add_region", "the blocks call-back");
	if (end <= start)
		return hd_error_at(HD_ERROR_INVALID, start,
				   "framework %s: empty region 0x%llx-0x%llx",
				   fw->mods[fw->cur].ops->name,
				   (unsigned long long)start, (unsigned long long)end);
	uint32_t l = hd_fw_intern(fw, label ? label : fw->mods[fw->cur].ops->name);
	struct hd_subregion r = {.start = start, .end = end, .label = l,
				 .module = fw->cur};
	if (l == UINT32_MAX ||
	    !HD_VEC_PUSH(fw->sa.regions, fw->sa.num_regions, fw->sa.cap_regions, r))
		return &hd_error_no_memory;
	fw->mods[fw->cur].regions++;
	return NULL;
}

struct hd_error *hd_fw_add_block(struct hd_fw *fw, uint64_t addr, uint64_t size,
				 enum hd_block_state state, const char *type)
{
	if (fw->phase != HD_FW_BLOCKS)
		return wrong_phase(fw, "hd_fw_add_block", "the blocks call-back");
	if (!size || addr + size < addr || state > HD_STATE_INTERNAL) {
		hd_fw_warn(fw, addr, "block of %llu bytes in state %d refused",
			   (unsigned long long)size, (int)state);
		return NULL;
	}
	uint32_t l = UINT32_MAX;
	if (type && (l = hd_fw_intern(fw, type)) == UINT32_MAX)
		return &hd_error_no_memory;
	struct hd_subblock b = {.addr = addr, .size = size, .type = l,
				.module = fw->cur, .state = (uint8_t)state,
				.container = -1};
	if (!HD_VEC_PUSH(fw->sa.blocks, fw->sa.num_blocks, fw->sa.cap_blocks, b))
		return &hd_error_no_memory;
	return NULL;
}

// ------------------------------------------------------ finding vertices

static uint32_t first_sub_vertex(const struct hd_fw *fw)
{
	return fw->g->num_vertices - (uint32_t)fw->g->num_sub;
}

uint32_t hd_fw_subblock_vertex(struct hd_fw *fw, size_t i)
{
	if (!fw->g || i >= fw->g->num_sub)
		return HD_DOM_NONE;
	return first_sub_vertex(fw) + (uint32_t)i;
}

int64_t hd_fw_vertex_subblock(struct hd_fw *fw, uint32_t v)
{
	if (!fw->g || v < first_sub_vertex(fw) || v >= fw->g->num_vertices)
		return -1;
	return (int64_t)(v - first_sub_vertex(fw));
}

int hd_fw_vertex_name(const struct hd_fw *fw, uint32_t v, char *buf, size_t len)
{
	if (fw->defer && fw->g) {
		int64_t id = hd_graph_vertex_block(fw->g, v);
		if (id >= 0)
			hd_fw_need_block(fw, (size_t)id);
	}
	if (hd_fw_name_of(fw, v) != UINT32_MAX) {
		snprintf(buf, len, "%s", fw->labels[hd_fw_name_of(fw, v)]);
		return 1;
	}
	if (!fw->g || v < first_sub_vertex(fw) || v >= fw->g->num_vertices)
		return -1;
	const struct hd_subblock *b = &fw->sa.blocks[v - first_sub_vertex(fw)];
	if (b->type != UINT32_MAX) {
		snprintf(buf, len, "%s", fw->labels[b->type]);
		return 1;
	}
	snprintf(buf, len, "unk<%" PRIu64 ">", b->size);
	return 0;
}

size_t hd_fw_num_subblocks(struct hd_fw *fw)
{
	return fw->g ? fw->sa.num_blocks : 0;
}

bool hd_fw_subblock(struct hd_fw *fw, size_t i, struct hd_fw_subblock *ret)
{
	if (!fw->g || i >= fw->sa.num_blocks)
		return false;
	const struct hd_subblock *sb = &fw->sa.blocks[i];
	*ret = (struct hd_fw_subblock){
		.addr = sb->addr, .size = sb->size,
		.state = (enum hd_block_state)sb->state,
		.type = sb->type == UINT32_MAX ? NULL : fw->labels[sb->type],
		.mine = sb->module == fw->cur,
		.vertex = first_sub_vertex(fw) + (uint32_t)i,
	};
	return true;
}

bool hd_fw_vertex_block(struct hd_fw *fw, uint32_t v, struct hd_block *ret)
{
	if (!fw->g)
		return false;
	int64_t id = hd_graph_vertex_block(fw->g, v);
	if (id >= 0) {
		hd_heap_block(fw->h, (size_t)id, ret);
		return true;
	}
	int64_t k = hd_fw_vertex_subblock(fw, v);
	if (k < 0)
		return false;
	const struct hd_subblock *sb = &fw->sa.blocks[k];
	*ret = (struct hd_block){.addr = sb->addr, .start = sb->addr,
				 .extent = sb->size, .usable = sb->size,
				 .state = (enum hd_block_state)sb->state,
				 .region = HD_NO_REGION};
	return true;
}

static const struct hd_root *root_at(struct hd_fw *fw, uint64_t addr)
{
	const struct hd_graph *g = fw->g;
	if (!fw->root_order) {
		// Roots sorted by start; ranges are disjoint (claimed once).
		fw->root_order = malloc((g->num_roots ? g->num_roots : 1) *
					sizeof(*fw->root_order));
		if (!fw->root_order)
			return NULL;
		size_t n = 0;
		for (size_t i = 0; i < g->num_roots; i++)
			if (g->roots[i].end > g->roots[i].start)
				fw->root_order[n++] = (uint32_t)i;
		// Insertion sort would be quadratic on 100k globals: shell sort.
		for (size_t gap = n / 2; gap > 0; gap /= 2)
			for (size_t i = gap; i < n; i++) {
				uint32_t x = fw->root_order[i];
				size_t j = i;
				for (; j >= gap && g->roots[fw->root_order[j - gap]].start >
							   g->roots[x].start; j -= gap)
					fw->root_order[j] = fw->root_order[j - gap];
				fw->root_order[j] = x;
			}
		fw->num_root_order = n;
	}
	size_t lo = 0, hi = fw->num_root_order;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (g->roots[fw->root_order[mid]].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < fw->num_root_order) {
		const struct hd_root *r = &g->roots[fw->root_order[lo]];
		if (r->start <= addr && addr < r->end)
			return r;
	}
	return NULL;
}

// Calls of hd_fw_vertex_at answered by binary search before the index is
// built: a module that asks a few times does not pay for it.
#define FINDS_BEFORE_INDEX 4096

// hd_heap_find, through the address index once there have been enough
// look-ups to pay for building it.
static int64_t heap_find(struct hd_fw *fw, uint64_t addr)
{
	if (!fw->have_ix && fw->finds < UINT32_MAX && ++fw->finds == FINDS_BEFORE_INDEX) {
		struct hd_error *err = hd_index_init(&fw->ix, fw->h);
		if (err)
			hd_error_destroy(err); // the binary search still answers
		else
			fw->have_ix = true;
	}
	return fw->have_ix ? hd_index_lookup(&fw->ix, addr) : hd_heap_find(fw->h, addr);
}

void hd_fw_index_free(struct hd_fw *fw)
{
	if (fw->have_ix)
		hd_index_deinit(&fw->ix);
	fw->have_ix = false;
	fw->finds = 0;
}

uint32_t hd_fw_vertex_at(struct hd_fw *fw, uint64_t addr)
{
	if (!fw->g)
		return HD_DOM_NONE;
	int64_t k = fw->sa.num_blocks ? hd_suballoc_find(&fw->sa, addr) : -1;
	// An internal block inside a malloc'd block is part of it.
	if (k >= 0 && !(fw->sa.blocks[k].state == HD_STATE_INTERNAL &&
			fw->sa.blocks[k].container >= 0))
		return first_sub_vertex(fw) + (uint32_t)k;
	// The block whose usable bytes hold addr, or none.
	int64_t id = heap_find(fw, addr);
	if (id >= 0)
		return hd_graph_block_vertex(fw->g, (size_t)id);
	const struct hd_root *r = root_at(fw, addr);
	if (r)
		return hd_graph_root_vertex(fw->g, (size_t)(r - fw->g->roots));
	return HD_DOM_NONE;
}

bool hd_fw_used_block_at(struct hd_fw *fw, uint64_t addr, uint64_t need,
			 uint32_t *v, uint64_t *usable)
{
	if (!fw->g)
		return false;
	// As hd_fw_vertex_at: a sub-allocator block first, unless it is an
	// internal block inside a malloc'd one.
	int64_t k = fw->sa.num_blocks ? hd_suballoc_find(&fw->sa, addr) : -1;
	if (k >= 0 && !(fw->sa.blocks[k].state == HD_STATE_INTERNAL &&
			fw->sa.blocks[k].container >= 0)) {
		const struct hd_subblock *sb = &fw->sa.blocks[k];
		*v = first_sub_vertex(fw) + (uint32_t)k;
		if (usable)
			*usable = sb->size;
		return sb->state == HD_STATE_USED && sb->addr == addr && sb->size >= need;
	}
	int64_t id = heap_find(fw, addr);
	if (id < 0)
		return false; // a root's vertex, or none: not a block
	*v = hd_graph_block_vertex(fw->g, (size_t)id);
	if (*v == HD_DOM_NONE)
		return false;
	if (hd_graph_vertex_block(fw->g, *v) != id) {
		// Not the graph's usual one-to-one numbering: the long way.
		struct hd_block b;
		if (!hd_fw_vertex_block(fw, *v, &b))
			return false;
		if (usable)
			*usable = b.usable;
		return b.state == HD_STATE_USED && b.addr == addr && b.usable >= need;
	}
	uint64_t u = hd_heap_usable(fw->h, (size_t)id);
	if (usable)
		*usable = u;
	return hd_heap_state(fw->h, (size_t)id) == HD_STATE_USED &&
	       fw->h->addr[id] == addr && u >= need;
}

void hd_fw_prefetch_blocks(struct hd_fw *fw, const uint64_t *addrs, size_t n)
{
	if (!fw->g || !fw->have_ix || !n || n > HD_INDEX_BATCH)
		return;
	int64_t ids[HD_INDEX_BATCH];
	bool exact[HD_INDEX_BATCH];
	hd_index_find_batch(&fw->ix, addrs, n, ids, exact);
	const struct hd_heap *h = fw->h;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0)
			continue;
		__builtin_prefetch(&h->addr[ids[i]]);
		__builtin_prefetch(&h->span[ids[i]]);
		if (h->region)
			__builtin_prefetch(&h->region[ids[i]]);
		hd_fw_prefetch_vertex(fw, hd_graph_block_vertex(fw->g, (size_t)ids[i]));
	}
}

uint32_t hd_fw_block_entry(struct hd_fw *fw, size_t id)
{
	const struct hd_typing *ty = fw->ty;
	if (!ty || id >= ty->num_blocks || ty->block_entry[id] == HD_ENTRY_NONE)
		return UINT32_MAX;
	// As hd_typing_block_name: e->name alone unless the count of an
	// array of DWARF's type is known only as a range.
	const struct hd_type_entry *e = &ty->entries[ty->block_entry[id]];
	return e->module == UINT16_MAX || e->count <= 1 || !e->size
	       ? ty->block_entry[id] : UINT32_MAX;
}

void hd_fw_prefetch_vertex(struct hd_fw *fw, uint32_t v)
{
	if (!fw->g || v >= fw->g->num_vertices)
		return;
	if (fw->names)
		__builtin_prefetch(&fw->names[v], 1);
	if (fw->touched[HD_UNDO_NAME])
		__builtin_prefetch(&fw->touched[HD_UNDO_NAME][v / 64], 1);
}

// ------------------------------------------------------- semantic nodes

// The value of an array of HD_UNDO_* no module has set.
static uint64_t empty_value(uint8_t what)
{
	return what == HD_UNDO_ASSIGN ? UINT32_MAX
	     : what == HD_UNDO_MARK ? HD_FW_UNMARKED : 0;
}

static struct hd_error *journal(struct hd_fw *fw, uint8_t what, uint32_t v,
				uint64_t old)
{
	uint64_t **t = &fw->touched[what];
	if (!*t && !(*t = calloc(fw->g->num_vertices / 64 + 1, sizeof(**t))))
		return &hd_error_no_memory;
	uint64_t bit = 1ull << (v % 64);
	if ((*t)[v / 64] & bit)
		return NULL; // its value before this module is known
	struct hd_fw_undo u = {.what = what, .v = v, .old = old};
	if (old != empty_value(what) &&
	    !HD_VEC_PUSH(fw->undo, fw->num_undo, fw->cap_undo, u))
		return &hd_error_no_memory;
	(*t)[v / 64] |= bit;
	return NULL;
}

// Zeroed memory of a mapping of its own: pages never written are never
// resident. (calloc clears memory malloc had used before, which makes all
// of it resident; with glibc that is most arrays of a few tens of MiB once
// bigger ones were freed.)
static void *zeroed(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void hd_fw_zeroed_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

bool hd_fw_names_only(struct hd_fw *fw)
{
	return fw->names_only;
}

void hd_fw_set_names_only(struct hd_fw *fw)
{
	fw->names_only = true;
}

void hd_fw_journal_reset(struct hd_fw *fw)
{
	fw->num_undo = 0;
	for (int w = 0; w < 4; w++)
		if (fw->touched[w])
			memset(fw->touched[w], 0,
			       (fw->g->num_vertices / 64 + 1) * sizeof(*fw->touched[w]));
}

// Per-vertex arrays, made on first use: a module that only names blocks
// pays for names only.
static struct hd_error *lazy_u32(struct hd_fw *fw, uint32_t **arr)
{
	if (!*arr) {
		size_t n = fw->g->num_vertices;
		*arr = malloc(n * sizeof(**arr));
		if (!*arr)
			return &hd_error_no_memory;
		memset(*arr, 0xff, n * sizeof(**arr));
	}
	return NULL;
}

static struct hd_error *lazy_fw_bytes(struct hd_fw *fw)
{
	if (!fw->fw_bytes) {
		size_t n = fw->g->num_vertices;
		fw->fw_bytes = malloc(n * sizeof(*fw->fw_bytes));
		if (!fw->fw_bytes)
			return &hd_error_no_memory;
		for (size_t v = 0; v < n; v++)
			fw->fw_bytes[v] = HD_FW_UNMARKED;
	}
	return NULL;
}

static struct hd_error *analyze_only(struct hd_fw *fw, const char *what)
{
	if (fw->phase != HD_FW_ANALYZE)
		return wrong_phase(fw, what, "the analyze call-back");
	return NULL;
}

static bool is_block_vertex(struct hd_fw *fw, uint32_t v)
{
	return v > fw->g->num_roots && v < fw->g->num_vertices;
}

// Whether node was made by the module running (counted only, when only
// names are kept).
static bool is_module_node(const struct hd_fw *fw, uint32_t node)
{
	if (fw->names_only)
		return node < fw->light_nodes;
	return node < fw->num_nodes && fw->nodes[node].module == fw->cur;
}

struct hd_error *hd_fw_node(struct hd_fw *fw, uint32_t parent, uint32_t holder,
			    const char *label, const char *kind,
			    enum hd_fw_owner owner, uint32_t *node)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_node");
	if (err)
		return err;
	const char *name = fw->mods[fw->cur].ops->name;
	if (parent != HD_FW_NO_NODE && !is_module_node(fw, parent))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: node parent %u is not a node of this module",
				       name, parent);
	if (holder != HD_DOM_NONE && (holder == 0 || holder >= fw->g->num_vertices))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: node holder %u is not a vertex",
				       name, holder);
	if ((fw->names_only ? fw->light_nodes : fw->num_nodes) >= HD_FW_MAX_NODES)
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: more than %u semantic nodes",
				       name, HD_FW_MAX_NODES);
	if (fw->names_only) {
		// Nothing of the node is kept: it is only numbered.
		*node = fw->light_nodes++;
		fw->mods[fw->cur].nodes++;
		return NULL;
	}
	struct hd_snode s = {
		.label = strdup(label ? label : "?"),
		.kind = strdup(kind ? kind : "node"),
		.parent = parent,
		.holder = parent == HD_FW_NO_NODE ? holder : HD_DOM_NONE,
		.module = fw->cur,
		.owner = owner == HD_OWNER_FRAMEWORK,
	};
	if (!s.label || !s.kind ||
	    !HD_VEC_PUSH(fw->nodes, fw->num_nodes, fw->cap_nodes, s)) {
		free(s.label);
		free(s.kind);
		return &hd_error_no_memory;
	}
	fw->mods[fw->cur].nodes++;
	*node = (uint32_t)fw->num_nodes - 1;
	return NULL;
}

// A node's parent in the semantic tree: the node it was created under,
// else the node its holder block is assigned to.
static uint32_t node_parent(const struct hd_fw *fw, uint32_t k)
{
	const struct hd_snode *n = &fw->nodes[k];
	if (n->parent != HD_FW_NO_NODE)
		return n->parent;
	if (n->holder != HD_DOM_NONE && fw->assigned &&
	    fw->assigned[n->holder] < fw->num_nodes)
		return fw->assigned[n->holder];
	return HD_FW_NO_NODE;
}

// The nearest common ancestor of nodes a and b, or HD_FW_NO_NODE. Holders
// can make the parent relation cyclic: walks stop after num_nodes steps.
static uint32_t common_node(struct hd_fw *fw, uint32_t a, uint32_t b)
{
	if (++fw->stamp == 0) {
		memset(fw->marks, 0, fw->num_nodes * sizeof(*fw->marks));
		fw->stamp = 1;
	}
	for (size_t i = 0; a != HD_FW_NO_NODE && i <= fw->num_nodes; i++) {
		if (fw->marks[a] == fw->stamp)
			break;
		fw->marks[a] = fw->stamp;
		a = node_parent(fw, a);
	}
	for (size_t i = 0; b != HD_FW_NO_NODE && i <= fw->num_nodes; i++) {
		if (fw->marks[b] == fw->stamp)
			return b;
		b = node_parent(fw, b);
	}
	return HD_FW_NO_NODE;
}

static int conflict_cmp(const void *x, const void *y)
{
	const struct hd_fw_conflict *a = x, *b = y;
	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

struct hd_error *hd_fw_resolve_shared(struct hd_fw *fw)
{
	if (!fw->num_conflicts)
		return NULL;
	fw->marks = calloc(fw->num_nodes ? fw->num_nodes : 1, sizeof(*fw->marks));
	if (!fw->marks)
		return &hd_error_no_memory;
	fw->stamp = 0;
	hd_qsort(fw->conflicts, fw->num_conflicts, sizeof(*fw->conflicts), conflict_cmp);
	// First the common nodes of every shared block, from the first
	// claims (so holders' own assignments are as the modules made them),
	// then set them all.
	for (size_t i = 0; i < fw->num_conflicts;) {
		uint32_t v = fw->conflicts[i].v, now = fw->assigned[v];
		for (; i < fw->num_conflicts && fw->conflicts[i].v == v; i++)
			if (now != HD_FW_NO_NODE)
				now = common_node(fw, now, fw->conflicts[i].node);
		fw->conflicts[i - 1].resolved = now == HD_FW_NO_NODE ? HD_FW_SHARED : now;
	}
	for (size_t i = 0; i < fw->num_conflicts; i++)
		if (i + 1 == fw->num_conflicts || fw->conflicts[i + 1].v != fw->conflicts[i].v)
			fw->assigned[fw->conflicts[i].v] = fw->conflicts[i].resolved;
	free(fw->marks);
	fw->marks = NULL;
	return NULL;
}

struct hd_error *hd_fw_assign(struct hd_fw *fw, uint32_t node, uint32_t v)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_assign");
	if (err)
		return err;
	if (!is_module_node(fw, node))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: %u is not a node of this module",
				       fw->mods[fw->cur].ops->name, node);
	if (!is_block_vertex(fw, v))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be assigned (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	if (fw->names_only)
		return NULL;
	if ((err = lazy_u32(fw, &fw->assigned)))
		return err;
	uint32_t old = fw->assigned[v], now = node;
	if (old == node)
		return NULL;
	if (old != HD_FW_NO_NODE) {
		// Shared by two elements: it rises to their common ancestor,
		// found once every module has run.
		struct hd_fw_conflict c = {.v = v, .node = node};
		if (!HD_VEC_PUSH(fw->conflicts, fw->num_conflicts, fw->cap_conflicts, c))
			return &hd_error_no_memory;
		return NULL;
	}
	err = journal(fw, HD_UNDO_ASSIGN, v, old);
	if (err)
		return err;
	fw->assigned[v] = now;
	if (old == HD_FW_NO_NODE)
		fw->mods[fw->cur].assigned++;
	return NULL;
}

struct hd_error *hd_fw_mark(struct hd_fw *fw, uint32_t v, uint64_t framework_bytes)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_mark");
	if (err)
		return err;
	if (!is_block_vertex(fw, v))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be marked (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	if (fw->names_only)
		return NULL;
	if (framework_bytes >= HD_FW_UNMARKED)
		framework_bytes = HD_FW_ALL;
	if ((err = lazy_fw_bytes(fw)))
		return err;
	err = journal(fw, HD_UNDO_MARK, v, fw->fw_bytes[v]);
	if (!err)
		fw->fw_bytes[v] = framework_bytes;
	return err;
}

uint32_t hd_fw_label(struct hd_fw *fw, const char *name)
{
	return hd_fw_intern(fw, name);
}

struct hd_error *hd_fw_name(struct hd_fw *fw, uint32_t v, const char *type)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_name");
	if (err)
		return err;
	if (!is_block_vertex(fw, v) || !type)
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be named (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	uint32_t l = hd_fw_intern(fw, type);
	if (l == UINT32_MAX)
		return &hd_error_no_memory;
	return hd_fw_name_label(fw, v, l);
}

// The names and DWARF types by vertex, made at the first one given.
static struct hd_error *names_ready(struct hd_fw *fw)
{
	if (!fw->names) {
		fw->names_bytes = fw->g->num_vertices * sizeof(*fw->names);
		if (!(fw->names = zeroed(fw->names_bytes)))
			return &hd_error_no_memory;
	}
	return NULL;
}

static struct hd_error *dwarf_ready(struct hd_fw *fw)
{
	if (!fw->dwarf) {
		fw->dwarf_bytes = fw->g->num_vertices * sizeof(*fw->dwarf);
		if (!(fw->dwarf = zeroed(fw->dwarf_bytes)))
			return &hd_error_no_memory;
	}
	return NULL;
}

struct hd_error *hd_fw_name_label(struct hd_fw *fw, uint32_t v, uint32_t l)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_name");
	if (err)
		return err;
	if (!is_block_vertex(fw, v) || l >= fw->num_labels)
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be named (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	if ((err = names_ready(fw)))
		return err;
	err = journal(fw, HD_UNDO_NAME, v, fw->names[v]);
	if (!err)
		fw->names[v] = l + 1;
	return err;
}

struct hd_error *hd_fw_set_alone(struct hd_fw *fw, uint32_t v, uint32_t label,
				 uint64_t key)
{
	// Outside any module's run: nothing to undo, and the module, if it
	// runs later, sets the same values again.
	if (!is_block_vertex(fw, v) || label >= fw->num_labels ||
	    (key != UINT64_MAX && key >= fw->num_dwarf_keys))
		return hd_error_create(HD_ERROR_INVALID, "no block or name for vertex %u", v);
	struct hd_error *err = names_ready(fw);
	if (!err && key != UINT64_MAX)
		err = dwarf_ready(fw);
	if (err)
		return err;
	fw->names[v] = label + 1;
	if (key != UINT64_MAX)
		fw->dwarf[v] = (uint32_t)key + 1;
	return NULL;
}

struct hd_error *hd_fw_type(struct hd_fw *fw, uint32_t v, const char *type)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_type");
	if (err)
		return err;
	if (!is_block_vertex(fw, v) || !type)
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be typed (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	uint64_t key;
	if (!hd_fw_type_lookup(fw, type, &key))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "no complete type named %s", type);
	return hd_fw_type_key(fw, v, key);
}

// The index of DWARF type dk (module << 32 | type id) in fw->dwarf_keys,
// entered if new; UINT32_MAX without memory.
static uint32_t dwarf_key_index(struct hd_fw *fw, uint64_t dk)
{
	size_t hcap = 2 * fw->cap_dwarf_keys;
	if (hcap) {
		size_t j = (size_t)(dk * 0x9e3779b97f4a7c15ull >> 20) & (hcap - 1);
		for (; fw->dwarf_key_hash[j]; j = (j + 1) & (hcap - 1))
			if (fw->dwarf_keys[fw->dwarf_key_hash[j] - 1] == dk)
				return fw->dwarf_key_hash[j] - 1;
	}
	if (fw->num_dwarf_keys == fw->cap_dwarf_keys) {
		size_t cap = fw->cap_dwarf_keys ? fw->cap_dwarf_keys * 2 : 64;
		uint64_t *keys = realloc(fw->dwarf_keys, cap * sizeof(*keys));
		if (!keys)
			return UINT32_MAX;
		fw->dwarf_keys = keys;
		uint32_t *h = calloc(2 * cap, sizeof(*h));
		if (!h)
			return UINT32_MAX;
		for (size_t i = 0; i < fw->num_dwarf_keys; i++) {
			size_t j = (size_t)(keys[i] * 0x9e3779b97f4a7c15ull >> 20) & (2 * cap - 1);
			while (h[j])
				j = (j + 1) & (2 * cap - 1);
			h[j] = (uint32_t)i + 1;
		}
		free(fw->dwarf_key_hash);
		fw->dwarf_key_hash = h;
		fw->cap_dwarf_keys = cap;
		hcap = 2 * cap;
	}
	size_t j = (size_t)(dk * 0x9e3779b97f4a7c15ull >> 20) & (hcap - 1);
	while (fw->dwarf_key_hash[j])
		j = (j + 1) & (hcap - 1);
	fw->dwarf_keys[fw->num_dwarf_keys] = dk;
	fw->dwarf_key_hash[j] = (uint32_t)fw->num_dwarf_keys + 1;
	return (uint32_t)fw->num_dwarf_keys++;
}

bool hd_fw_type_lookup(struct hd_fw *fw, const char *name, uint64_t *key)
{
	size_t mi;
	uint32_t t;
	if (!hd_fw_find_type_memo(fw, name, &mi, &t))
		return false;
	// Without memory the type is given as not found: hd_fw_type_key
	// says so.
	*key = dwarf_key_index(fw, (uint64_t)mi << 32 | t);
	return true;
}

struct hd_error *hd_fw_type_key(struct hd_fw *fw, uint32_t v, uint64_t key)
{
	struct hd_error *err = analyze_only(fw, "hd_fw_type");
	if (err)
		return err;
	if (!is_block_vertex(fw, v))
		return hd_error_create(HD_ERROR_INVALID,
				       "framework %s: only blocks can be typed (vertex %u)",
				       fw->mods[fw->cur].ops->name, v);
	if (key >= fw->num_dwarf_keys)
		return &hd_error_no_memory; // hd_fw_type_lookup ran out
	if ((err = dwarf_ready(fw)))
		return err;
	err = journal(fw, HD_UNDO_TYPE, v, fw->dwarf[v]);
	if (!err)
		fw->dwarf[v] = (uint32_t)key + 1;
	return err;
}

void hd_fw_undo_module(struct hd_fw *fw)
{
	// Everything it set goes back to empty, then the values earlier
	// modules had set come back.
	for (uint8_t w = 0; w < 4; w++) {
		uint64_t *t = fw->touched[w];
		if (!t)
			continue;
		size_t words = fw->g->num_vertices / 64 + 1;
		for (size_t i = 0; i < words; i++) {
			for (uint64_t b = t[i]; b; b &= b - 1) {
				uint32_t v = (uint32_t)(i * 64 + (unsigned)__builtin_ctzll(b));
				switch (w) {
				case HD_UNDO_ASSIGN: fw->assigned[v] = UINT32_MAX; break;
				case HD_UNDO_MARK: fw->fw_bytes[v] = HD_FW_UNMARKED; break;
				case HD_UNDO_NAME: fw->names[v] = 0; break;
				case HD_UNDO_TYPE: fw->dwarf[v] = 0; break;
				}
			}
			t[i] = 0;
		}
	}
	while (fw->num_undo) {
		struct hd_fw_undo *u = &fw->undo[--fw->num_undo];
		switch (u->what) {
		case HD_UNDO_ASSIGN: fw->assigned[u->v] = (uint32_t)u->old; break;
		case HD_UNDO_MARK: fw->fw_bytes[u->v] = u->old; break;
		case HD_UNDO_NAME: fw->names[u->v] = (uint32_t)u->old; break;
		case HD_UNDO_TYPE: fw->dwarf[u->v] = (uint32_t)u->old; break;
		}
	}
}
