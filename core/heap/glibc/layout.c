// glibc structure layouts: defaults that the data can confirm, or the
// exact offsets from libc's DWARF.
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "heap/heap_internal.h"

void glibc_layout_default(struct glibc_layout *lay)
{
	// glibc 2.35-2.41 on x86-64 until libc's DWARF or the data says
	// which row of the version table applies.
	memset(lay, 0, sizeof(*lay));
	for (size_t i = 0; i < glibc_num_versions; i++)
		if (glibc_versions[i].lo == 35)
			glibc_layout_from_version(lay, &glibc_versions[i]);
	// Measured from a thread arena unless DWARF says.
	lay->heap_info_size = 0;
}

bool glibc_is_libc_path(const char *path)
{
	if (!path)
		return false;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0;
}

const char *hd_heap_layout_unit(const char *path)
{
	// glibc_layout_from_debuginfo's; a static executable's main_arena is
	// found only when walked.
	return path && glibc_is_libc_path(path) ? "malloc.c" : NULL;
}

const struct hd_module *glibc_libc_module(struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (glibc_is_libc_path(m->name))
			return m;
	}
	return NULL;
}

static bool member(const struct hd_struct_layout *l, const char *name,
		   uint64_t *off, uint64_t *count)
{
	const struct hd_member_layout *m = hd_struct_layout_member(l, name);
	if (!m)
		return false;
	*off = m->offset;
	if (count)
		*count = m->count;
	return true;
}

struct hd_error *glibc_layout_from_debuginfo(struct glibc_walk *w,
					     uint64_t *main_arena)
{
	struct glibc_layout *lay = &w->lay;
	uint64_t addr, size;
	struct hd_error *err =
		hd_debuginfo_find_symbol(w->di, NULL, "main_arena", &addr, &size);
	if (err)
		return err;
	// The module holding main_arena (libc, or the executable if static).
	const struct hd_module *m = hd_target_find_module(w->t, addr);
	if (!m)
		m = glibc_libc_module(w->t);
	if (!m)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "no module holds main_arena");
	static const char *const names[] = {
		"malloc_state", "heap_info", "tcache_perthread_struct",
		"malloc_par",
	};
	struct hd_struct_layout l[4] = {0};
	err = hd_debuginfo_struct_layouts(w->di, m, "malloc.c", names, 4, l);
	if (!err && l[0].size == 0)
		err = hd_error_create(HD_ERROR_NOT_FOUND,
				      "%s: no DWARF for struct malloc_state",
				      m->name);
	if (err)
		goto out;
	uint64_t count = 0, off;
	// glibc 2.43 has no fastbins.
	if (!member(&l[0], "fastbinsY", &lay->off_fastbins, &count))
		count = lay->off_fastbins = 0;
	lay->nfastbins = (unsigned)count;
	bool ok = member(&l[0], "top", &lay->off_top, NULL);
	ok = ok && member(&l[0], "bins", &lay->off_bins, &count);
	lay->nbins = (unsigned)count;
	ok = ok && member(&l[0], "next", &lay->off_next, NULL);
	ok = ok && member(&l[0], "system_mem", &lay->off_system_mem, NULL);
	lay->state_size = l[0].size;
	if (!ok || lay->nfastbins > 16 ||
	    lay->nbins != 254) {
		err = hd_error_create(HD_ERROR_UNSUPPORTED,
				      "%s: struct malloc_state has an unknown layout",
				      m->name);
		goto out;
	}
	if (l[1].size) {
		lay->heap_info_size = l[1].size;
		member(&l[1], "ar_ptr", &lay->heap_off_ar_ptr, NULL);
		member(&l[1], "prev", &lay->heap_off_prev, NULL);
		member(&l[1], "size", &lay->heap_off_size, NULL);
	}
	if (l[2].size) {
		// counts[] became num_slots[] (the room left) in 2.42.
		const struct hd_member_layout *c =
			hd_struct_layout_member(&l[2], "counts");
		lay->tcache_slots = !c;
		if (!c)
			c = hd_struct_layout_member(&l[2], "num_slots");
		if (c && c->count) {
			lay->tcache_off_counts = c->offset;
			lay->tcache_count_size = (unsigned)(c->size / c->count);
			lay->tcache_nbins = (unsigned)c->count;
		}
		member(&l[2], "entries", &lay->tcache_off_entries, NULL);
		lay->tcache_struct_chunk = (l[2].size + 8 + 15) & ~15ULL;
		if (lay->tcache_struct_chunk < 32)
			lay->tcache_struct_chunk = 32;
	} else {
		lay->tcache_struct_chunk = 0; // built without tcache
		lay->tcache_count_size = 0;
		lay->tcache_nbins = 0;
	}
	if (l[3].size &&
	    member(&l[3], "sbrk_base", &lay->mp_off_sbrk_base, NULL) &&
	    member(&l[3], "n_mmaps", &lay->mp_off_n_mmaps, NULL) &&
	    member(&l[3], "mmap_threshold", &lay->mp_off_mmap_threshold, NULL)) {
		struct hd_error *mp_err =
			hd_debuginfo_find_symbol(w->di, NULL, "mp_", &off, NULL);
		lay->mp_known = !mp_err;
		lay->mp_addr = off;
		lay->mp_size = l[3].size;
		hd_error_destroy(mp_err);
	}
	w->candidates = glibc_rows_matching_layout(lay);
	w->ev.from_dwarf = true;
	*main_arena = addr;
out:
	for (size_t i = 0; i < 4; i++)
		hd_struct_layout_deinit(&l[i]);
	return err;
}
