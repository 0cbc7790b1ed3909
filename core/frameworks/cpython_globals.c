// Globals in the cpython framework module: __main__ found through
// _PyRuntime and sys.modules, one node per global that holds a container,
// and what that container owns by Python's own refcounts assigned to it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameworks/cpython_internal.h"
#include "util/u64set.h"

// Upper bound for walks over target memory: a corrupted count must not
// make the module read (or loop over) gigabytes.
#define MAX_BFS_OBJECTS (1u << 26)  // objects one global may own
#define MAX_GLOBAL_NAME 96

// Addresses seen by a walk (open addressing, 0 = empty).
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
	struct hd_u64set seen = {0};
	uint64_t *stack = NULL;
	size_t sp = 0, cap = 0, visited = 0;
	struct refs r = {0};
	bool added;
	struct hd_error *err = hd_u64set_add(&seen, root->addr, &added)
			       ? NULL : &hd_error_no_memory;
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
		err = cpy_object_at(fw, &a->types, stack[--sp], &o, &found);
		if (err || !found)
			continue;
		if ((err = cpy_object_refs(fw, &o, &r)))
			break;
		for (size_t i = 0; !err && i < r.num_aux; i++) {
			uint32_t av = cpy_aux_vertex(fw, r.aux[i]);
			if (av != HD_DOM_NONE && av != o.vertex)
				err = hd_fw_assign(fw, node, av);
		}
		for (size_t i = 0; !err && i < r.num_objs; i++) {
			struct pyobj c;
			err = cpy_object_at(fw, &a->types, r.objs[i], &c,
					    &found);
			if (err || !found || c.refcnt != 1)
				continue;
			if (!hd_u64set_add(&seen, c.addr, &added)) {
				err = &hd_error_no_memory;
				break;
			}
			if (!added)
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
	hd_u64set_free(&seen);
	return err;
}

// The __main__ module's dict: _PyRuntime.interpreters.head, checked to
// point back at _PyRuntime, then sys.modules (interp->modules)["__main__"].
static struct hd_error *main_dict(struct analysis *a, struct pyobj *ret,
				  bool *found)
{
	struct hd_fw *fw = a->fw;
	struct cpy_priv *p = cpy_priv_of(fw);
	*found = false;
	uint64_t interp, back, modules;
	if (!cpy_read_u64(fw, p->runtime + HD_PY311_RUNTIME_INTERP_HEAD,
			  &interp) ||
	    !cpy_read_u64(fw, interp + HD_PY311_INTERP_RUNTIME, &back) ||
	    back != p->runtime) {
		hd_fw_warn(fw, p->runtime, "no interpreter state pointing back "
			   "at _PyRuntime: globals not shown");
		return NULL;
	}
	struct pyobj o;
	bool ok = false;
	struct hd_error *err = NULL;
	if (cpy_read_u64(fw, interp + HD_PY311_INTERP_MODULES, &modules))
		err = cpy_object_at(fw, &a->types, modules, &o, &ok);
	if (err)
		return err;
	if (!ok || o.type->kind != K_DICT) {
		hd_fw_warn(fw, interp, "interpreter's modules is not a dict on "
			   "the heap: globals not shown");
		return NULL;
	}
	struct refs keys = {0}, values = {0};
	err = cpy_dict_entries(fw, modules, &keys, &values);
	uint64_t module = 0;
	for (size_t i = 0; !err && i < keys.num_objs && i < values.num_objs;
	     i++) {
		struct pyobj k;
		char name[16];
		err = cpy_object_anywhere(fw, &a->types, keys.objs[i], &k, &ok);
		if (!err && ok && cpy_read_ascii(fw, &k, name, sizeof(name)) &&
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
	if (!module ||
	    !cpy_read_u64(fw, module + HD_PY311_MODULE_DICT, &dict)) {
		hd_fw_note(fw, "no __main__ module in sys.modules");
		return NULL;
	}
	if ((err = cpy_object_at(fw, &a->types, dict, ret, &ok)))
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
struct hd_error *cpy_main_globals(struct analysis *a)
{
	struct hd_fw *fw = a->fw;
	struct pyobj dict;
	bool found;
	struct hd_error *err = main_dict(a, &dict, &found);
	if (err || !found)
		return err;
	struct refs keys = {0}, values = {0};
	err = cpy_dict_entries(fw, dict.addr, &keys, &values);
	for (size_t i = 0; !err && i < keys.num_objs && i < values.num_objs;
	     i++) {
		struct pyobj k, v;
		char name[MAX_GLOBAL_NAME];
		bool ok;
		err = cpy_object_anywhere(fw, &a->types, keys.objs[i], &k, &ok);
		if (err || !ok || !cpy_read_ascii(fw, &k, name, sizeof(name)))
			continue;
		if (strncmp(name, "__", 2) == 0)
			continue;
		err = cpy_object_at(fw, &a->types, values.objs[i], &v, &ok);
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
