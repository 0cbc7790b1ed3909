// Node walks in the libstdc++ framework module: the containers that keep
// each element in a block of its own (std::list, std::forward_list, the
// rb-tree of maps and sets, the hashtable of unordered containers) and
// std::shared_ptr's control block. Every link is checked against the
// container's counts before a block is taken as the container's.
#include <stdio.h>
#include <string.h>

#include "frameworks/libstdcxx_internal.h"
#include "semantic/fw_fast.h"

// Height of a red-black tree of 2^64 nodes is below 128.
#define MAX_HEIGHT 128

struct hd_error *stl_walk_list(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	bool sized = p->size == 24;
	uint64_t size = MAX_NODES, next, prev = p->addr, cur;
	if (p->size != 24 && p->size != 16)
		return stl_fail(w, p->addr, "std::list of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &cur) || (sized && !stl_rd(c->fw, p->addr + 16, &size)))
		return stl_fail(w, p->addr, "std::list not readable"), NULL;
	uint64_t n = 0;
	stl_name_node(c, "std::_List_node");
	while (cur != p->addr) {
		uint32_t v;
		uint64_t back;
		if (n >= size || n >= MAX_NODES)
			return stl_fail(w, p->addr, "std::list longer than its size (a cycle?)"), NULL;
		if (!stl_block_at(c->fw, cur, 16, &v, NULL) || !stl_rd(c->fw, cur, &next) ||
		    !stl_rd(c->fw, cur + 8, &back))
			return stl_fail(w, cur, "std::list node is not a used heap block"), NULL;
		if (back != prev)
			return stl_fail(w, cur, "std::list node's prev link is not the node before it"), NULL;
		struct hd_error *err = stl_own(c, v, 16, NAME_NODE);
		if (!err)
			err = stl_elem(c, cur + 16, v);
		if (err)
			return err;
		prev = cur;
		cur = next;
		n++;
	}
	if (sized && n != size)
		return stl_fail(w, p->addr, "std::list has fewer nodes than its size"), NULL;
	w->empty = n == 0;
	return NULL;
}

struct hd_error *stl_walk_flist(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t cur, n = 0;
	if (p->size != 8)
		return stl_fail(w, p->addr, "std::forward_list of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &cur))
		return stl_fail(w, p->addr, "std::forward_list not readable"), NULL;
	stl_name_node(c, "std::_Fwd_list_node");
	while (cur) {
		uint32_t v;
		uint64_t next;
		if (n++ >= MAX_NODES)
			return stl_fail(w, p->addr, "std::forward_list too long (a cycle?)"), NULL;
		if (!stl_block_at(c->fw, cur, 8, &v, NULL) || !stl_rd(c->fw, cur, &next))
			return stl_fail(w, cur, "std::forward_list node is not a used heap block"), NULL;
		struct hd_error *err = stl_own(c, v, 8, NAME_NODE);
		if (!err)
			err = stl_elem(c, cur + 8, v);
		if (err)
			return err;
		cur = next;
	}
	w->empty = n == 0;
	return NULL;
}

// In-order walk of the rb tree whose header is at h: the elements come in
// the container's order.
struct hd_error *stl_walk_tree(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	if (p->size < 48)
		return stl_fail(w, p->addr, "std::_Rb_tree of an unknown size"), NULL;
	// The header and node_count end the _Rb_tree_impl, after the
	// comparator (8 bytes for an empty one).
	uint64_t h = p->addr + p->size - 40;
	uint64_t root, leftmost, rightmost, count;
	if (!stl_rd(c->fw, h + 8, &root) || !stl_rd(c->fw, h + 16, &leftmost) ||
	    !stl_rd(c->fw, h + 24, &rightmost) || !stl_rd(c->fw, h + 32, &count))
		return stl_fail(w, p->addr, "std::_Rb_tree not readable"), NULL;
	if (!root) {
		if (count || leftmost != h || rightmost != h)
			return stl_fail(w, p->addr, "std::_Rb_tree: empty tree with a count or links"), NULL;
		w->empty = true;
		return NULL;
	}
	if (count > MAX_NODES)
		return stl_fail(w, p->addr, "std::_Rb_tree: node_count too large"), NULL;
	// Stack of (node) to visit after its left subtree; the parent a
	// node must name is checked when it is first reached.
	struct hd_error *err;
	uint64_t cur = root, parent = h, n = 0, first = 0, last = 0;
	stl_name_node(c, "std::_Rb_tree_node");
	c->num_stack = 0;
	for (;;) {
		while (cur) {
			uint32_t v;
			uint64_t up, left;
			if (c->num_stack >= MAX_HEIGHT)
				return stl_fail(w, cur, "std::_Rb_tree deeper than a red-black tree can be"), NULL;
			if (!stl_block_at(c->fw, cur, 32, &v, NULL) || !stl_rd(c->fw, cur + 8, &up) ||
			    !stl_rd(c->fw, cur + 16, &left))
				return stl_fail(w, cur, "std::_Rb_tree node is not a used heap block"), NULL;
			// The children's blocks, looked up while this node's
			// line and the left child's are read.
			uint64_t kids[2];
			size_t nk = 0;
			if (left)
				kids[nk++] = left;
			if (stl_rd(c->fw, cur + 24, &kids[nk]) && kids[nk])
				nk++;
			hd_fw_prefetch_blocks(c->fw, kids, nk);
			if (up != parent)
				return stl_fail(w, cur, "std::_Rb_tree node's parent link is wrong"), NULL;
			if ((err = stl_push(c, cur, v)))
				return err;
			parent = cur;
			cur = left;
		}
		if (!c->num_stack)
			break;
		uint64_t node = c->stack[--c->num_stack].addr, right;
		uint32_t v = c->stack[c->num_stack].v;
		if (++n > count)
			return stl_fail(w, p->addr, "std::_Rb_tree has more nodes than node_count"), NULL;
		if ((err = stl_own(c, v, 32, NAME_NODE)) || (err = stl_elem(c, node + 32, v)))
			return err;
		if (!first)
			first = node;
		last = node;
		if (!stl_rd(c->fw, node + 24, &right))
			return stl_fail(w, node, "std::_Rb_tree node not readable"), NULL;
		parent = node;
		cur = right;
	}
	if (n != count || first != leftmost || last != rightmost)
		return stl_fail(w, p->addr, "std::_Rb_tree: nodes do not match node_count, leftmost and rightmost"), NULL;
	return NULL;
}

static struct hd_error *find_traits(struct hd_fw *fw,
				    const struct hd_fw_object *o, void *arg)
{
	struct walk *w = arg;
	const char *t = strstr(o->type, "_Hashtable_traits<");
	if (t)
		w->hash_cached = stl_starts(t + strlen("_Hashtable_traits<"), "true");
	return NULL;
}

struct hd_error *stl_walk_hash(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t buckets, nbuckets, cur, count;
	if (p->size != 56)
		return stl_fail(w, p->addr, "std::_Hashtable of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &buckets) || !stl_rd(c->fw, p->addr + 8, &nbuckets) ||
	    !stl_rd(c->fw, p->addr + 16, &cur) || !stl_rd(c->fw, p->addr + 24, &count))
		return stl_fail(w, p->addr, "std::_Hashtable not readable"), NULL;
	// Whether nodes cache the hash code: the traits in the name of the
	// _Hashtable inside (a std::hash<std::string> caches, std::hash<int>
	// does not).
	static const char *const ht[] = {"std::_Hashtable<"};
	struct hd_error *err = hd_fw_objects_in(c->fw, p->t->name, p->addr,
						p->holder, "", ht, 1,
						find_traits, w);
	if (err) // no DWARF for the type: the default for a std::hash
		hd_error_destroy(err);
	if (count > MAX_NODES)
		return stl_fail(w, p->addr, "std::_Hashtable: element_count too large"), NULL;
	uint32_t v;
	if (buckets != p->addr + 48) {
		if (!nbuckets || nbuckets > UINT64_MAX / 8 ||
		    !stl_block_at(c->fw, buckets, nbuckets * 8, &v, NULL))
			return stl_fail(w, buckets, "std::_Hashtable bucket array is not a used heap block of bucket_count pointers"), NULL;
		stl_name_buffer(c, "std::__detail::_Hash_node_base *", nbuckets);
		if ((err = stl_own(c, v, UINT64_MAX, NAME_BUFFER)))
			return err;
	} else if (nbuckets != 1) {
		return stl_fail(w, p->addr, "std::_Hashtable: the single bucket with bucket_count != 1"), NULL;
	}
	uint64_t n = 0, node_fw = w->hash_cached ? 16 : 8;
	// _Hash_node<value, whether the hash code is cached>
	if (c->short_elem)
		c->node = (struct name_spec){ HOW_HASH_NODE, NULL, w->hash_cached };
	while (cur) {
		uint64_t next;
		if (n++ >= count)
			return stl_fail(w, p->addr, "std::_Hashtable has more nodes than element_count"), NULL;
		if (!stl_block_at(c->fw, cur, node_fw, &v, NULL) || !stl_rd(c->fw, cur, &next))
			return stl_fail(w, cur, "std::_Hashtable node is not a used heap block"), NULL;
		if ((err = stl_own(c, v, node_fw, NAME_NODE)) || (err = stl_elem(c, cur + 8, v)))
			return err;
		cur = next;
	}
	if (n != count)
		return stl_fail(w, p->addr, "std::_Hashtable has fewer nodes than element_count"), NULL;
	w->empty = !c->num_blocks;
	return NULL;
}

struct hd_error *stl_walk_shared(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t ptr, pi;
	if (p->size != 16)
		return stl_fail(w, p->addr, "std::shared_ptr of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &ptr) || !stl_rd(c->fw, p->addr + 8, &pi))
		return stl_fail(w, p->addr, "std::shared_ptr not readable"), NULL;
	if (!pi) {
		w->empty = true;
		return NULL;
	}
	uint32_t v;
	uint64_t usable;
	if (!stl_block_at(c->fw, pi, 16, &v, &usable))
		return stl_fail(w, pi, "std::shared_ptr control block is not a used heap block"), NULL;
	// make_shared: the object lives in the control block after its
	// vtable pointer and counts.
	// Its class, by its vtable (which allocator and lock policy made it
	// is libstdc++'s business), as the typing found it; else what the
	// pointer says.
	bool inplace = ptr >= pi + 16 && ptr < pi + usable;
	// The name given this block before (its label), else written.
	struct sp_name *sp = &c->sp_names[(v * 2 + inplace) % 1024];
	c->sp_pending = (struct sp_name){ v, 0, inplace, false };
	c->sp_pending_key = 0;
	const struct hd_typing *ty = hd_fw_typing(c->fw);
	int64_t id = hd_graph_vertex_block(hd_fw_graph(c->fw), v);
	// The name of the block's entry, when found before (a million
	// control blocks of a few types).
	uint32_t ent = ty && id >= 0 ? hd_fw_block_entry(c->fw, (size_t)id) : UINT32_MAX;
	uint32_t key = ent < UINT32_MAX / 2 ? (ent * 2 + inplace) + 1 : 0;
	const struct sp_entry *se = key ? &c->sp_entries[key % 1024] : NULL;
	bool known = se && se->key == key;
	char name[512];
	if (sp->set && sp->v == v && sp->inplace == inplace) {
		c->node = (struct name_spec){ HOW_LABEL, NULL, sp->label };
	} else if (known && se->ok) {
		c->node = (struct name_spec){ HOW_LABEL, NULL, se->label };
	} else if (!known && ty && id >= 0 &&
		   hd_typing_block_name(ty, (size_t)id, name, sizeof(name)) &&
		   stl_starts(name, inplace ? "std::_Sp_counted_ptr_inplace<" : "std::_Sp_counted_")) {
		snprintf(c->node_name, sizeof(c->node_name), "%s", name);
		c->node = (struct name_spec){ HOW_STRING, NULL, 0 };
		c->sp_pending_key = key;
	} else {
		if (key && !known) // not a name of its own: the entry's is not
			c->sp_entries[key % 1024] = (struct sp_entry){ key, 0, false };
		if (inplace)
			stl_name_node(c, "std::_Sp_counted_ptr_inplace");
		else
			c->node = (struct name_spec){ HOW_LITERAL, "std::_Sp_counted_base", 0 };
	}
	struct hd_error *err = stl_own(c, v, inplace ? 16 : UINT64_MAX, NAME_NODE);
	if (!err && inplace)
		err = stl_elem(c, ptr, v);
	return err;
}
