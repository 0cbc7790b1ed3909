// Struct layouts for the heap walker (malloc_state, heap_info, ...): read
// through the type index, limited to the compilation units of one source
// file so that finding glibc's layouts costs one CU, not all of libc.
#include <stdlib.h>
#include <string.h>

#include "debuginfo/dwarf_layout.h"
#include "types/index_cache.h"
#include "types/type_index.h"

void hd_struct_layout_deinit(struct hd_struct_layout *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->num_members; i++)
		free(l->members[i].name);
	free(l->members);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

const struct hd_member_layout *
hd_struct_layout_member(const struct hd_struct_layout *l, const char *name)
{
	for (size_t i = 0; l && i < l->num_members; i++)
		if (l->members[i].name && strcmp(l->members[i].name, name) == 0)
			return &l->members[i];
	return NULL;
}

static struct hd_error *copy_layout(const struct hd_type_index *ix, uint32_t st,
				    const char *name, struct hd_struct_layout *ret)
{
	const struct hd_type *t = &ix->types[st];
	ret->name = strdup(name);
	ret->size = t->size;
	ret->members = calloc(t->num_members ? t->num_members : 1,
			      sizeof(*ret->members));
	if (!ret->name || !ret->members)
		return &hd_error_no_memory;
	for (uint32_t i = 0; i < t->num_members; i++) {
		const struct hd_member *m = &ix->members[t->first_member + i];
		struct hd_member_layout *out = &ret->members[ret->num_members++];
		uint32_t mt = hd_type_strip(ix, m->type);
		out->name = strdup(m->name ? m->name : "");
		if (!out->name)
			return &hd_error_no_memory;
		out->offset = m->offset;
		if (mt == HD_TYPE_NONE)
			continue;
		out->size = ix->types[mt].size;
		if (ix->types[mt].kind == HD_TYPE_ARRAY)
			out->count = ix->types[mt].count;
	}
	return NULL;
}

struct hd_error *hd_dwarf_struct_layouts(const char *path,
					 const char *cu_suffix,
					 const char *const *names, size_t n,
					 struct hd_struct_layout *ret)
{
	memset(ret, 0, n * sizeof(*ret));
	// One source file's units are kept for the next session (a debugger
	// makes one per stop); a whole file's index for layouts is made here
	// and dropped, as its errors are typing's to keep quiet.
	struct hd_type_index *own = NULL;
	const struct hd_type_index *ix;
	struct hd_error *err =
		cu_suffix ? hd_index_cache_get_filtered(path, cu_suffix, &ix)
			  : hd_index_cache_build(path, NULL, &own, NULL);
	if (err)
		return err;
	if (own)
		ix = own;
	for (size_t i = 0; i < n && !err; i++) {
		uint32_t st = hd_type_find_struct(ix, names[i]);
		if (st != HD_TYPE_NONE && ix->types[st].size)
			err = copy_layout(ix, st, names[i], &ret[i]);
	}
	hd_type_index_destroy(own);
	if (err)
		for (size_t i = 0; i < n; i++)
			hd_struct_layout_deinit(&ret[i]);
	return err;
}
