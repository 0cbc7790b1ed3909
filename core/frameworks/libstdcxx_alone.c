// A block named from its container alone while the module waits
// (defer.c): a node of a std::map, std::set, std::list or unordered
// container, the buffer of a std::vector or a hash table's bucket array,
// whose container a global variable holds, or a heap block that only roots
// point at (a singleton made with new); and a block no container can take
// (unclaimed). On a C++ heap whose largest blocks are a global map's
// nodes, the report asks about a few of them, and the whole module (every
// container of the heap, millions of nodes) ran for names it then printed
// five of.
//
// The module names a block only in the walk of a container that reaches
// it through a pointer word of its own object or of a block it owns
// (libstdcxx_nodes.c, libstdcxx_walk.c), and the last such walk's name
// stays. So a block of container T gets T's name for it, whatever the
// order of the module's walks, when T is walked and no other container can
// take any of T's blocks. Shown here:
//   - T is the one container object its holder's listing has over T's
//     bytes (the globals', or the typed block's, as hd_fw_objects lists
//     them); a global T is queued before anything is walked, a T in a block
//     X is reached by the pass over the typed blocks: X is no container's
//     block (only roots point at X, and no container object of a global
//     does), so no walk reaches X's bytes first;
//   - T's walk by the module's own walker succeeds;
//   - every exact pointer to a block of T comes from a node of T at one of
//     its links (no other word of a node points where a link does), from
//     T's holder, or from a root; no container object of a global but T
//     holds a pointer to one, and no word of X outside T does;
//   - no node of T holds a container object by its DWARF type (that object
//     could read a link as its own pointer).
// Any other container would need a pointer word to a block of T in its
// object or in a block it owns, and such a word is one of those (the graph
// has an edge for every aligned word holding a block's address). When any
// of this cannot be shown, the module runs as before.
#include <stdlib.h>
#include <string.h>

#include "frameworks/libstdcxx_internal.h"
#include "semantic/fw_fast.h"
#include "semantic/semantic_internal.h"

extern const struct hd_fw_deferral hd_libstdcxx_deferral;

// For locate: a hash table by its bucket array.
#define K_BUCKETS K_NONE

// A container object, as its holder's listing gives it.
struct cobj {
	uint64_t addr, size;
	struct stl_type *t;
};

// A container tried: its object's address, whether its blocks are shown to
// be named by it alone, and then the name, the DWARF type (UINT64_MAX:
// none) and a bit per vertex of its blocks.
struct tried {
	uint64_t addr;
	bool ok;
	bool bare; // its elements hold no container object
	uint32_t label, buffer_label; // of its nodes, of its buffer
	uint64_t key;      // of its nodes
	uint64_t *blocks;  // bit per vertex
	uint32_t buffer;   // the vertex of its buffer, or HD_DOM_NONE
	enum kind kind;
};

struct alone {
	bool listed, list_failed;
	struct strtab types;
	struct cobj *globals; // by address
	size_t num_globals, cap_globals;
	struct cobj *in_x;    // the listing of one typed block
	size_t num_in_x, cap_in_x;
	struct tried *tried;
	size_t num_tried, cap_tried;
	// A bit per vertex the walk back along a list's or a hash table's
	// links went through without finding its container: a walk that
	// comes to one goes the same way (a block asked about after another
	// of a long chain is not walked back from again); and the vertices
	// of the walk under way.
	uint64_t *no_list, *no_hash;
	uint32_t *path;
	size_t num_path, cap_path;
};

// Where a container is: its object, and the vertex holding it (a global's
// root, or the typed block X).
struct found {
	struct cobj o;
	uint32_t holder;
	bool in_block;
	uint64_t x_addr, x_usable; // X's
};

void stl_alone_free(void *state)
{
	struct alone *a = state;
	if (!a)
		return;
	stl_strtab_free(&a->types);
	free(a->globals);
	free(a->in_x);
	for (size_t i = 0; i < a->num_tried; i++)
		free(a->tried[i].blocks);
	free(a->tried);
	free(a->no_list);
	free(a->no_hash);
	free(a->path);
	free(a);
}

struct listing {
	struct alone *a;
	struct cobj **v;
	size_t *n, *cap;
};

static struct hd_error *add_object(struct hd_fw *fw, const struct hd_fw_object *o,
				   void *arg)
{
	struct listing *l = arg;
	(void)fw;
	if (stl_kind_of(o->type ? o->type : "") == K_NONE)
		return NULL;
	struct hd_error *err = stl_grow((void **)l->v, l->cap, *l->n, sizeof(**l->v));
	if (err)
		return err;
	struct stl_type *t = stl_intern(&l->a->types, o->type);
	if (!t)
		return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	(*l->v)[(*l->n)++] = (struct cobj){ o->addr, o->size, t };
	return NULL;
}

static bool list_globals(struct hd_fw *fw, struct alone *a)
{
	if (a->listed)
		return !a->list_failed;
	a->listed = true;
	struct listing l = { a, &a->globals, &a->num_globals, &a->cap_globals };
	struct hd_error *err = hd_fw_objects_globals(fw, hd_libstdcxx_deferral.prefixes,
						     hd_libstdcxx_deferral.num_prefixes,
						     add_object, &l);
	if (err) {
		hd_error_destroy(err);
		a->list_failed = true;
		return false;
	}
	return true;
}

static bool list_block(struct hd_fw *fw, struct alone *a, size_t id)
{
	a->num_in_x = 0;
	struct listing l = { a, &a->in_x, &a->num_in_x, &a->cap_in_x };
	struct hd_error *err = hd_fw_objects_block(fw, hd_libstdcxx_deferral.prefixes,
						   hd_libstdcxx_deferral.num_prefixes,
						   id, add_object, &l);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

static bool bit(const uint64_t *b, uint32_t v)
{
	return b[v / 64] >> (v % 64) & 1;
}

// The address of the block at vertex v (a block's vertex).
static uint64_t vertex_addr(struct hd_fw *fw, const struct hd_graph *g, uint32_t v)
{
	return hd_fw_heap(fw)->addr[hd_graph_vertex_block(g, v)];
}

// Whether root r's range holds container objects (a global's), whose words
// must then be read.
static bool root_holds(const struct hd_graph *g, struct hd_fw_holders *hs, int64_t r)
{
	const struct hd_root *root = hd_graph_root(g, (size_t)r);
	return hd_fw_holders_range(hs, root->start, root->end);
}

// Whether object o of kind k is the container whose header (a tree's, at
// its end; a list's, its start) is at h, whose buffer (a vector's start)
// is at h, whose first node (a hash table's) is at h, or (K_BUCKETS)
// whose bucket array is at h.
static bool is_at(struct hd_fw *fw, const struct cobj *o, enum kind k, uint64_t h)
{
	uint64_t start;
	if (o->t->kind != (k == K_BUCKETS ? K_HASH : k))
		return false;
	if (k == K_TREE)
		return o->size >= 48 && o->addr + o->size - 40 == h;
	if (k == K_LIST)
		return o->addr == h;
	if (k == K_HASH)
		return o->size == 56 && stl_rd(fw, o->addr + 16, &start) && start == h;
	if (k == K_BUCKETS)
		return o->size == 56 && stl_rd(fw, o->addr, &start) && start == h;
	return o->size == 24 && stl_rd(fw, o->addr, &start) && start == h;
}

// The container of kind k at h (is_at) among the globals or, when h lies
// in a typed heap block (a vector's buffer or a hash table's first node:
// when the block holding its object, x_hint, is one), that block's
// listing.
static bool locate(struct hd_fw *fw, struct alone *a, const struct hd_graph *g,
		   enum kind k, uint64_t h, uint32_t x_hint, struct found *f)
{
	for (size_t i = 0; i < a->num_globals; i++) {
		if (is_at(fw, &a->globals[i], k, h)) {
			f->o = a->globals[i];
			f->in_block = false;
			f->holder = hd_fw_vertex_at(fw, f->o.addr);
			return f->holder != HD_DOM_NONE;
		}
	}
	uint32_t xv = k == K_VECTOR || k == K_HASH || k == K_BUCKETS
		      ? x_hint : hd_fw_vertex_at(fw, h);
	int64_t x = xv == HD_DOM_NONE ? -1 : hd_graph_vertex_block(g, xv);
	struct hd_block b;
	if (x < 0 || !hd_fw_vertex_block(fw, xv, &b) || !list_block(fw, a, (size_t)x))
		return false;
	for (size_t i = 0; i < a->num_in_x; i++) {
		if (is_at(fw, &a->in_x[i], k, h)) {
			f->o = a->in_x[i];
			f->in_block = true;
			f->holder = xv;
			f->x_addr = b.addr;
			f->x_usable = b.usable;
			return true;
		}
	}
	return false;
}

// Whether block vertex u holds a container object by its DWARF type (or
// that cannot be told).
static bool holds_containers(const struct hd_graph *g, struct hd_fw_holders *hs,
			     uint32_t u)
{
	int64_t id = hd_graph_vertex_block(g, u);
	bool holds = true;
	if (id < 0)
		return true;
	struct hd_error *err = hd_fw_holders_block(hs, (size_t)id, &holds);
	if (err) {
		hd_error_destroy(err);
		return true;
	}
	return holds;
}

// Starts a walk back along links, with *no its memo (made if need be);
// false without memory.
static bool path_start(struct alone *a, uint64_t **no, uint32_t nv)
{
	a->num_path = 0;
	return *no || (*no = calloc(nv / 64 + 1, sizeof(**no)));
}

// Whether vertex v may be gone through (not in the memo no, nor gone
// through by this walk), noting it.
static bool path_add(struct alone *a, uint64_t *no, uint32_t v)
{
	if (bit(no, v))
		return false;
	struct hd_error *err = stl_grow((void **)&a->path, &a->cap_path, a->num_path,
					sizeof(*a->path));
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	no[v / 64] |= 1ull << (v % 64);
	a->path[a->num_path++] = v;
	return true;
}

// The walk ends: when it found the container, its vertices leave the memo
// (they are the container's, shown or not); else they stay.
static bool path_end(struct alone *a, uint64_t *no, bool found)
{
	for (size_t i = 0; found && i < a->num_path; i++)
		no[a->path[i] / 64] &= ~(1ull << (a->path[i] % 64));
	a->num_path = 0;
	return found;
}

// The container a block at b may be a node or the buffer of: up a tree's
// parent links to the header (whose parent is the root, whose parent is
// the header); along a list's next links, each checked by the next's
// prev, to a list's header (no block's start); or a vector whose start
// is b, held by one of b's few predecessors.
static bool find_container(struct hd_fw *fw, struct alone *a,
			   const struct hd_graph *g, const struct hd_csr *rev,
			   struct hd_fw_holders *hs, uint32_t bv, uint64_t b,
			   struct found *f)
{
	uint64_t x = b, p, q;
	uint32_t v;
	for (int i = 0; i < 130; i++) {
		if (!stl_rd(fw, x + 8, &p) || !p || !stl_rd(fw, p + 8, &q))
			break;
		if (q == x) {
			if (!hd_fw_used_block_at(fw, p, 1, &v, NULL) &&
			    locate(fw, a, g, K_TREE, p, HD_DOM_NONE, f))
				return true;
			break;
		}
		x = p;
	}
	x = b;
	uint32_t nv = hd_graph_num_vertices(g);
	bool more = path_start(a, &a->no_list, nv) && path_add(a, a->no_list, bv);
	for (uint64_t n = 0; more && n < MAX_NODES; n++) {
		uint64_t next, back;
		if (!stl_rd(fw, x, &next) || !next ||
		    !stl_rd(fw, next + 8, &back) || back != x)
			break;
		if (!hd_fw_used_block_at(fw, next, 16, &v, NULL)) {
			if (locate(fw, a, g, K_LIST, next, HD_DOM_NONE, f))
				return path_end(a, a->no_list, true);
			break;
		}
		// A list first in a typed block: its header is the block's
		// start (a struct whose first member is the list).
		int64_t id = hd_graph_vertex_block(g, v);
		bool holds = false;
		struct hd_error *err = id < 0 ? NULL
				       : hd_fw_holders_block(hs, (size_t)id, &holds);
		if (err) {
			hd_error_destroy(err);
			break;
		}
		if (holds && locate(fw, a, g, K_LIST, next, HD_DOM_NONE, f))
			return path_end(a, a->no_list, true);
		// Round to where it started without a header: what it went
		// through is no list's, whichever block it starts from.
		if (next == b || !path_add(a, a->no_list, v))
			break;
		x = next;
	}
	if (a->no_list)
		path_end(a, a->no_list, false);
	uint32_t first = rev->offsets[bv], last = rev->offsets[bv + 1];
	for (uint32_t e = first; e < last && e < first + 4; e++) {
		uint32_t u = rev->targets[e] & ~HD_GRAPH_INTERIOR;
		if (u && hd_fw_exact_edge(g, u, bv) &&
		    (locate(fw, a, g, K_VECTOR, b, u, f) ||
		     locate(fw, a, g, K_BUCKETS, b, u, f)))
			return true;
	}
	// A hash table's node: back along the one node (a block of its size:
	// not the bucket array, whose first bucket may point at it too) whose
	// next it is, to the table whose before-begin node's next it is.
	struct hd_block bb;
	if (!hd_fw_vertex_block(fw, bv, &bb))
		return false;
	x = b;
	uint32_t xv = bv;
	if (!path_start(a, &a->no_hash, nv) || !path_add(a, a->no_hash, bv))
		return path_end(a, a->no_hash ? a->no_hash : a->no_list, false);
	bool found = false;
	for (uint64_t n = 0; !found && n < MAX_NODES; n++) {
		uint32_t prev = HD_DOM_NONE;
		for (uint32_t e = rev->offsets[xv]; e < rev->offsets[xv + 1]; e++) {
			uint32_t u = rev->targets[e] & ~HD_GRAPH_INTERIOR;
			uint64_t word;
			if (!u || !hd_fw_exact_edge(g, u, xv))
				continue;
			if (hd_graph_vertex_root(g, u) >= 0 || holds_containers(g, hs, u)) {
				if ((found = locate(fw, a, g, K_HASH, x, u, f)))
					break;
				continue;
			}
			struct hd_block pb;
			if (!hd_fw_vertex_block(fw, u, &pb) || pb.usable != bb.usable ||
			    !stl_rd(fw, pb.addr, &word) || word != x)
				continue;
			if (prev != HD_DOM_NONE) {
				prev = HD_DOM_NONE; // two nodes before it: no hash chain
				break;
			}
			prev = u;
		}
		if (found || prev == HD_DOM_NONE || !path_add(a, a->no_hash, prev))
			break;
		xv = prev;
		x = vertex_addr(fw, g, prev);
	}
	return path_end(a, a->no_hash, found);
}

// Whether a word of [start, end) but those of T's object [skip, skip_end)
// is the address of a block of blocks (NULL: none) or of the block at
// vertex also.
static bool points_at(struct hd_fw *fw, const uint64_t *blocks, uint32_t also,
		      uint64_t start, uint64_t end, uint64_t skip,
		      uint64_t skip_end)
{
	for (uint64_t w = (start + 7) & ~7ull; w + 8 <= end; w += 8) {
		uint64_t x;
		uint32_t v;
		if (w >= skip && w < skip_end)
			continue;
		if (!stl_rd(fw, w, &x))
			return true; // not shown
		if (x && hd_fw_used_block_at(fw, x, 1, &v, NULL) &&
		    ((blocks && bit(blocks, v)) || v == also))
			return true;
	}
	return false;
}

// Whether every exact pointer to u comes from f's holder, a root (*roots:
// one whose range holds container objects, whose words must be read), or,
// when nodes, a block of T (blocks; NULL: none); false for any other
// block, and for u itself.
static bool pointed_alone(const struct hd_graph *g, const struct hd_csr *rev,
			  struct hd_fw_holders *hs, const uint64_t *blocks,
			  bool nodes, const struct found *f, uint32_t u,
			  bool *roots)
{
	for (uint32_t e = rev->offsets[u]; e < rev->offsets[u + 1]; e++) {
		uint32_t p = rev->targets[e] & ~HD_GRAPH_INTERIOR;
		// T's own nodes first: most predecessors, and their words are
		// read (node_alone), so no look-up of the edge is needed.
		if (p == 0 || (nodes && blocks && bit(blocks, p)) ||
		    (f && p == f->holder && f->in_block) || // X: its words are read
		    !hd_fw_exact_edge(g, p, u))
			continue;
		if (blocks && bit(blocks, p))
			return false;
		int64_t r = hd_graph_vertex_root(g, p);
		if (r < 0)
			return false; // a block not of T
		*roots |= root_holds(g, hs, r);
	}
	return true;
}

// The offsets of the links of a node of kind k, and how many.
static size_t links_of(enum kind k, const uint64_t **links)
{
	static const uint64_t tree_links[] = { 8, 16, 24 }, list_links[] = { 0, 8 },
			      hash_links[] = { 0 };
	*links = k == K_TREE ? tree_links : k == K_LIST ? list_links : hash_links;
	return k == K_TREE ? 3 : k == K_LIST ? 2 : 1;
}

// Whether the words of node p (of a container of kind k) that hold
// address xa are links.
static bool only_links(struct hd_fw *fw, uint32_t p, enum kind k, uint64_t xa)
{
	const uint64_t *links;
	size_t num_links = links_of(k, &links);
	struct hd_block b;
	if (k == K_VECTOR || !hd_fw_vertex_block(fw, p, &b))
		return false;
	for (uint64_t w = 0; w + 8 <= b.usable; w += 8) {
		uint64_t word;
		bool link = false;
		if (!stl_rd(fw, b.addr + w, &word))
			return false;
		for (size_t i = 0; i < num_links && !link; i++)
			link = links[i] == w;
		if (word == xa && !link)
			return false;
	}
	return true;
}

// Whether the nodes of T (blocks, kind k) that point at vertex x (at
// address xa) do so only through their links.
static bool links_alone(struct hd_fw *fw, const struct hd_csr *rev,
			const uint64_t *blocks, enum kind k, uint32_t x,
			uint64_t xa)
{
	for (uint32_t e = rev->offsets[x]; e < rev->offsets[x + 1]; e++) {
		uint32_t p = rev->targets[e] & ~HD_GRAPH_INTERIOR;
		if (bit(blocks, p) && !only_links(fw, p, k, xa))
			return false;
	}
	return true;
}

// For node u of T (kind k): it holds no container object by its DWARF
// type; its pointers to blocks of T are its links alone.
static bool node_alone(struct hd_fw *fw, const struct hd_graph *g,
		       struct hd_fw_holders *hs, const uint64_t *blocks,
		       enum kind k, uint32_t u)
{
	struct hd_block b;
	if (!hd_fw_vertex_block(fw, u, &b) || holds_containers(g, hs, u))
		return false;
	// Its links: a tree node's parent, left and right, a list node's next
	// and prev, a hash node's next.
	const uint64_t *links;
	size_t num_links = links_of(k, &links);
	// Its words, read at once (a node is a few lines at most).
	uint64_t words[64];
	size_t num_words = b.usable / 8;
	if (num_words > 64 || num_words * 8 < links[num_links - 1] + 8)
		return false;
	struct hd_error *err = hd_fw_read(fw, b.addr, words, num_words * 8);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	uint64_t to[3];
	for (size_t i = 0; i < num_links; i++)
		to[i] = words[links[i] / 8];
	// Every block of T it points at, a link points at (the graph has an
	// edge for every word holding a block's address) ...
	const struct hd_csr *fw_edges = &g->fwd;
	for (uint32_t e = fw_edges->offsets[u]; e < fw_edges->offsets[u + 1]; e++) {
		uint32_t t = fw_edges->targets[e];
		if (t & HD_GRAPH_INTERIOR || t >= g->num_vertices || !bit(blocks, t))
			continue;
		// (blocks holds block vertices only.)
		uint64_t ta = vertex_addr(fw, g, t);
		bool linked = false;
		for (size_t i = 0; i < num_links && !linked; i++)
			linked = to[i] == ta;
		if (!linked)
			return false;
	}
	// ... and no other word of it points where a link does (an edge
	// counts the two words once).
	for (size_t w = 0; w < num_words; w++) {
		bool link = false;
		for (size_t i = 0; i < num_links && !link; i++)
			link = links[i] == w * 8;
		for (size_t i = 0; i < num_links && !link; i++)
			if (words[w] && words[w] == to[i])
				return false;
	}
	return true;
}

static struct hd_error *count_object(struct hd_fw *fw,
				     const struct hd_fw_object *o, void *arg)
{
	(void)fw;
	(void)o;
	++*(size_t *)arg;
	return NULL;
}

// Walks the container f found and shows whether its blocks are named by it
// alone (see the top of the file); fills tr.
static struct hd_error *try_container(struct hd_fw *fw, struct alone *a,
				      const struct found *f,
				      const struct hd_graph *g,
				      const struct hd_csr *rev,
				      struct hd_fw_holders *hs, struct tried *tr)
{
	const struct cobj *o = &f->o;
	*tr = (struct tried){ .addr = o->addr, .key = UINT64_MAX, .kind = o->t->kind };
	// The one container object over its bytes.
	const struct cobj *list = f->in_block ? a->in_x : a->globals;
	size_t n = f->in_block ? a->num_in_x : a->num_globals;
	for (size_t i = 0; i < n; i++) {
		const struct cobj *x = &list[i];
		if ((x->addr != o->addr || x->t != o->t) &&
		    x->addr < o->addr + o->size && o->addr < x->addr + x->size)
			return NULL;
	}
	struct stl_type *ty = o->t;
	struct hd_error *err = stl_type_ready(fw, ty);
	if (err)
		return err;
	struct ctx c = { .fw = fw, .names_only = true };
	c.elem_type = ty->elem_type;
	c.short_elem = ty->short_elem;
	struct pending p = { o->addr, o->size, ty, NULL, f->holder };
	struct walk w = { .p = &p, .elem_size = ty->esize };
	enum kind k = ty->kind;
	err = k == K_TREE ? stl_walk_tree(&c, &w)
	    : k == K_LIST ? stl_walk_list(&c, &w)
	    : k == K_HASH ? stl_walk_hash(&c, &w) : stl_walk_vector(&c, &w);
	uint32_t nv = hd_graph_num_vertices(g);
	bool ok = !err && !w.why && !w.empty && c.num_blocks;
	if (ok && !(tr->blocks = calloc(nv / 64 + 1, sizeof(*tr->blocks))))
		err = hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
	ok = ok && !err;
	// Its nodes and its buffer (a vector's, a hash table's bucket
	// array), each with the name the module gives it.
	tr->buffer = HD_DOM_NONE;
	for (size_t i = 0; ok && i < c.num_blocks; i++) {
		uint32_t v = c.blocks[i].v;
		if (c.blocks[i].name == NAME_NODE)
			ok = k != K_VECTOR &&
			     c.node.how == (k == K_HASH ? HOW_HASH_NODE : HOW_NODE);
		else if (c.blocks[i].name == NAME_BUFFER)
			ok = (k == K_VECTOR || k == K_HASH) && tr->buffer == HD_DOM_NONE &&
			     c.buffer.how == HOW_ELEMS;
		else
			ok = false;
		ok = ok && v < nv && v != f->holder;
		if (!ok)
			break;
		if (c.blocks[i].name == NAME_BUFFER)
			tr->buffer = v;
		tr->blocks[v / 64] |= 1ull << (v % 64);
	}
	// In vertex order, which is the blocks' address order: nodes that
	// share lines of the core are read together. A vector's buffer may be
	// pointed at by none of its own blocks (itself), and the containers
	// among its elements point at no block of T; a hash table's bucket
	// array, whose words point at nodes, holds no container object, and
	// its nodes' words node_alone reads.
	bool roots = false;
	for (uint32_t i = 0; ok && i < nv / 64 + 1; i++) {
		for (uint64_t m = tr->blocks[i]; ok && m; m &= m - 1) {
			uint32_t u = i * 64 + (uint32_t)__builtin_ctzll(m);
			ok = pointed_alone(g, rev, hs, tr->blocks, k != K_VECTOR, f, u, &roots) &&
			     (u != tr->buffer ? node_alone(fw, g, hs, tr->blocks, k, u)
			      : k != K_HASH || !holds_containers(g, hs, u));
		}
	}
	// X is no container's block: only roots point at it, and T's nodes
	// through their links (a list whose header is X's start).
	uint32_t also = HD_DOM_NONE;
	if (ok && f->in_block) {
		also = f->holder;
		ok = pointed_alone(g, rev, hs, tr->blocks, true, NULL, f->holder, &roots) &&
		     links_alone(fw, rev, tr->blocks, k, f->holder, f->x_addr);
	}
	// No container object of a global but T points at a block of T (or
	// at X), nor does any word of X but T's.
	for (size_t i = 0; ok && roots && i < a->num_globals; i++) {
		const struct cobj *x = &a->globals[i];
		ok = !points_at(fw, tr->blocks, also, x->addr, x->addr + x->size,
				o->addr, o->addr + o->size);
	}
	if (ok && f->in_block)
		ok = !points_at(fw, tr->blocks, also, f->x_addr, f->x_addr + f->x_usable,
				o->addr, o->addr + o->size);
	// Whether its elements hold containers (the module lists them alike
	// for every element of a type).
	if (ok && c.elem_type && c.num_elems) {
		size_t count = 0;
		err = hd_fw_objects_in(fw, c.elem_type, c.elems[0].addr, c.elems[0].holder,
				       "", hd_libstdcxx_deferral.prefixes,
				       hd_libstdcxx_deferral.num_prefixes, count_object,
				       &count);
		tr->bare = !err && !count;
		if (err && err != &hd_error_no_memory) {
			hd_error_destroy(err);
			err = NULL;
		}
	} else {
		tr->bare = ok && !c.elem_type;
	}
	if (ok && tr->buffer != HD_DOM_NONE) {
		char name[512];
		stl_name_render(&c, &c.buffer, name);
		tr->buffer_label = hd_fw_label(fw, name);
		ok = tr->buffer_label != UINT32_MAX;
	}
	if (ok && k != K_VECTOR) {
		char name[512], dwarf[1280];
		stl_name_render(&c, &c.node, name);
		tr->label = hd_fw_label(fw, name);
		ok = tr->label != UINT32_MAX;
		// As the module types its nodes: by the node type's DWARF
		// name, when DWARF has it.
		uint64_t key;
		tr->key = stl_node_dwarf_name(k, ty->has_vt ? ty->vt : "", w.hash_cached,
					      dwarf, sizeof(dwarf)) &&
			  hd_fw_type_lookup(fw, dwarf, &key) ? key : UINT64_MAX;
	}
	tr->ok = ok;
	if (!ok) {
		free(tr->blocks);
		tr->blocks = NULL;
	}
	free(c.blocks);
	free(c.elems);
	free(c.stack);
	return err;
}

// Tries the container f found, once (by its object's address): its
// index in a->tried, or SIZE_MAX without memory or when tried before.
static size_t try_once(struct hd_fw *fw, struct alone *a, const struct found *f,
		       const struct hd_graph *g, const struct hd_csr *rev,
		       struct hd_fw_holders *hs)
{
	for (size_t i = 0; i < a->num_tried; i++)
		if (a->tried[i].addr == f->o.addr)
			return SIZE_MAX;
	struct hd_error *err = stl_grow((void **)&a->tried, &a->cap_tried,
					a->num_tried, sizeof(*a->tried));
	if (!err)
		err = try_container(fw, a, f, g, rev, hs, &a->tried[a->num_tried]);
	if (err) {
		hd_error_destroy(err);
		return SIZE_MAX;
	}
	return a->num_tried++;
}

// The container shown alone whose block is vertex v, trying the one v
// may be a block of if none is; NULL if none can be shown.
static const struct tried *shown(struct hd_fw *fw, struct alone *a,
				 const struct hd_graph *g, const struct hd_csr *rev,
				 struct hd_fw_holders *hs, uint32_t v)
{
	for (size_t i = 0; i < a->num_tried; i++)
		if (a->tried[i].ok && bit(a->tried[i].blocks, v))
			return &a->tried[i];
	int64_t id = hd_graph_vertex_block(g, v);
	struct found f;
	if (id < 0)
		return NULL;
	if (find_container(fw, a, g, rev, hs, v, vertex_addr(fw, g, v), &f)) {
		size_t i = try_once(fw, a, &f, g, rev, hs);
		return i != SIZE_MAX && a->tried[i].ok && bit(a->tried[i].blocks, v)
		       ? &a->tried[i] : NULL;
	}
	return NULL;
}

// Whether no container can take block v: every exact pointer to it comes
// from a root (no container object of a global holds one) or from a block
// of a container shown alone which holds no container object by its DWARF
// type and whose elements hold none (its words are its links, which point
// at its own blocks or its header, and its elements' scalars: a
// std::vector<Item *>'s buffer, a std::map<int, Item *>'s nodes), or
// whose words holding v's address are links (a list's nodes pointing at
// its header, the start of the block v that holds the list).
static bool unclaimed(struct hd_fw *fw, struct alone *a, const struct hd_graph *g,
		      const struct hd_csr *rev, struct hd_fw_holders *hs,
		      uint32_t v)
{
	bool roots = false;
	for (uint32_t e = rev->offsets[v]; e < rev->offsets[v + 1]; e++) {
		uint32_t p = rev->targets[e] & ~HD_GRAPH_INTERIOR;
		if (p == 0 || !hd_fw_exact_edge(g, p, v))
			continue;
		int64_t r = hd_graph_vertex_root(g, p);
		if (r >= 0) {
			roots |= root_holds(g, hs, r);
			continue;
		}
		const struct tried *tr = p == v ? NULL : shown(fw, a, g, rev, hs, p);
		if (!tr || holds_containers(g, hs, p))
			return false;
		// Its pointer to v is an element's scalar, or a link (to its
		// list's header, the start of v) that its walk stops at.
		if (!tr->bare && !only_links(fw, p, tr->kind, vertex_addr(fw, g, v)))
			return false;
	}
	for (size_t i = 0; roots && i < a->num_globals; i++) {
		const struct cobj *x = &a->globals[i];
		if (points_at(fw, NULL, v, x->addr, x->addr + x->size, 0, 0))
			return false;
	}
	return true;
}

bool stl_name_alone(struct hd_fw *fw, size_t id, const struct hd_graph *g,
		    const struct hd_csr *rev, struct hd_fw_holders *hs,
		    void **state)
{
	struct alone *a = *state;
	if (!a && !(a = *state = calloc(1, sizeof(*a))))
		return false;
	if (!list_globals(fw, a))
		return false;
	uint32_t v = hd_graph_block_vertex(g, id);
	if (v == HD_DOM_NONE || v >= rev->n)
		return false;
	const struct tried *tr = shown(fw, a, g, rev, hs, v);
	if (!tr)
		return unclaimed(fw, a, g, rev, hs, v); // the name stays
	struct hd_error *err = v == tr->buffer
		? hd_fw_set_alone(fw, v, tr->buffer_label, UINT64_MAX)
		: hd_fw_set_alone(fw, v, tr->label, tr->key);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}
