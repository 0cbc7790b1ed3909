// Naming in the cpython framework module: the analyze pass over every
// block, which names each object's block by its type and its item arrays
// and tables by what they are, and hands pymalloc's free slots and the
// dead objects of free lists to framework nodes.
#include <stdio.h>
#include <stdlib.h>

#include "frameworks/cpython_internal.h"

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
struct hd_error *cpy_name_blocks(struct analysis *a)
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
		if (sub && !cpy_in_arena(fw, b.addr))
			continue;
		if (sub && b.state != HD_STATE_USED) {
			err = hd_fw_assign(fw, a->pymalloc, v);
			continue;
		}
		if (b.state != HD_STATE_USED)
			continue;
		struct pyobj o;
		bool found;
		err = cpy_object_in_block(fw, &a->types, b.addr, b.usable,
					  &o, &found);
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
			if (cpy_read_u64(fw, o.addr + HD_PY311_LIST_ITEM,
					 &items))
				cpy_refs_aux(&r, items, "list items");
			break;
		}
		case K_DICT: {
			uint64_t k, vals;
			if (cpy_read_u64(fw, o.addr + HD_PY311_DICT_KEYS, &k) &&
			    cpy_read_u64(fw, o.addr + HD_PY311_DICT_VALUES,
					 &vals)) {
				if (vals)
					cpy_refs_aux(&r, vals, "dict values");
				else
					cpy_refs_aux(&r, k, "dict keys");
			}
			break;
		}
		case K_SET: {
			uint64_t table;
			if (cpy_read_u64(fw, o.addr + HD_PY311_SET_TABLE,
					 &table) &&
			    table != o.addr + HD_PY311_SET_SMALLTABLE)
				cpy_refs_aux(&r, table, "set table");
			break;
		}
		case K_INSTANCE: {
			uint64_t values;
			if ((o.type->flags & HD_PY311_TPFLAGS_MANAGED_DICT) &&
			    cpy_read_u64(fw, o.addr - 32, &values))
				cpy_refs_aux(&r, values, "instance values");
			break;
		}
		default:
			break;
		}
		for (size_t i = 0; !err && i < r.num_aux; i++) {
			uint32_t av = cpy_aux_vertex(fw, r.aux[i]);
			if (av == HD_DOM_NONE || av == v)
				continue;
			err = hd_fw_name(fw, av, r.aux_name[i]);
			a->aux_named++;
		}
	}
	free(r.objs);
	return err;
}
