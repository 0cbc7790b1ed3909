// Per-module debug information: the separate debug file (by build-id or
// .gnu_debuglink), symbols and DWARF layouts. Everything is looked up
// lazily: a heap walk needs a handful of names from libc only.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo/dwarf_layout.h"
#include "debuginfo/elf_symbols.h"
#include "debuginfo/lines.h"
#include "target/target_internal.h"
#include "util/elf_read.h"

struct di_module {
	bool searched;
	char *debug_file; // separate debug file, or NULL
};

struct hd_debuginfo {
	struct hd_target *t;
	char *debug_dir;
	bool user_dir; // only the user's directory is searched
	struct di_module *mods;
	size_t num_mods;
	struct hd_lines *lines; // lines.c's tables, built on first use
};

struct hd_error *hd_debuginfo_create(struct hd_target *t,
				     const struct hd_debuginfo_options *o,
				     struct hd_debuginfo **ret)
{
	struct hd_debuginfo *di = calloc(1, sizeof(*di));
	if (!di)
		return &hd_error_no_memory;
	di->t = t;
	di->user_dir = o && o->debug_dir;
	di->debug_dir = strdup(di->user_dir ? o->debug_dir : "/usr/lib/debug");
	di->num_mods = hd_target_num_modules(t);
	di->mods = calloc(di->num_mods ? di->num_mods : 1, sizeof(*di->mods));
	if (!di->debug_dir || !di->mods) {
		hd_debuginfo_destroy(di);
		return &hd_error_no_memory;
	}
	if (di->user_dir && access(di->debug_dir, R_OK | X_OK) != 0) {
		struct hd_error *err = hd_error_file(HD_ERROR_INVALID,
			o->debug_dir, "debug directory cannot be read");
		hd_debuginfo_destroy(di);
		return err;
	}
	*ret = di;
	return NULL;
}

void hd_debuginfo_destroy(struct hd_debuginfo *di)
{
	if (!di)
		return;
	for (size_t i = 0; i < di->num_mods; i++)
		free(di->mods[i].debug_file);
	free(di->mods);
	free(di->debug_dir);
	hd_lines_destroy(di->lines);
	free(di);
}

// A candidate debug file is used only if its build-id matches the module's.
static bool try_debug_file(const struct hd_module *m, const char *path)
{
	struct hd_elf_info info;
	struct hd_error *err = hd_elf_read_info(path, &info);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	if (m->build_id_len && info.build_id_len &&
	    (m->build_id_len != info.build_id_len ||
	     memcmp(m->build_id, info.build_id, m->build_id_len) != 0))
		return false;
	return true;
}

// debug_dir: the directory searched; user_dir: only it (the user's),
// else also beside the file (the distributions' layouts).
static char *find_debug_file(const char *debug_dir, bool user_dir,
			     const struct hd_module *m)
{
	char *path = NULL;
	if (m->build_id_len >= 2) {
		char hex[129];
		for (size_t i = 0; i < m->build_id_len; i++)
			sprintf(hex + 2 * i, "%02x", m->build_id[i]);
		if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", debug_dir,
			     hex, hex + 2) >= 0 && try_debug_file(m, path))
			return path;
		free(path);
		path = NULL;
	}
	if (!m->file)
		return NULL;
	struct hd_elf_info info;
	struct hd_error *err = hd_elf_read_info(m->file, &info);
	if (err || !info.debuglink[0]) {
		hd_error_destroy(err);
		return NULL;
	}
	char *dir = strdup(m->file);
	if (!dir)
		return NULL;
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	const char *fmts_user[] = {"%1$s%2$s/%3$s", "%1$s/%3$s"};
	const char *fmts_default[] = {"%2$s/%3$s", "%2$s/.debug/%3$s",
				      "%1$s%2$s/%3$s"};
	const char **fmts = user_dir ? fmts_user : fmts_default;
	size_t nfmts = user_dir ? 2 : 3;
	for (size_t i = 0; i < nfmts; i++) {
		if (asprintf(&path, fmts[i], debug_dir, dir,
			     info.debuglink) < 0) {
			path = NULL;
			break;
		}
		// Beside the file, the debuglink may name the file itself.
		if (strcmp(path, m->file) != 0 && try_debug_file(m, path))
			break;
		free(path);
		path = NULL;
	}
	free(dir);
	return path;
}

static struct di_module *di_module(struct hd_debuginfo *di,
				   const struct hd_module *m)
{
	for (size_t i = 0; i < di->num_mods; i++) {
		if (hd_target_module(di->t, i) != m)
			continue;
		struct di_module *dm = &di->mods[i];
		if (!dm->searched) {
			dm->debug_file = find_debug_file(di->debug_dir,
							 di->user_dir, m);
			dm->searched = true;
		}
		return dm;
	}
	return NULL;
}

const char *hd_debuginfo_debug_file(struct hd_debuginfo *di,
				    const struct hd_module *m)
{
	struct di_module *dm = di_module(di, m);
	return dm ? dm->debug_file : NULL;
}

char *hd_debuginfo_find_debug_file(const char *debug_dir, bool user_dir,
				    const struct hd_module *m)
{
	return find_debug_file(debug_dir, user_dir, m);
}

struct hd_lines **hd_debuginfo_lines(struct hd_debuginfo *di)
{
	return &di->lines;
}

struct hd_target *hd_debuginfo_target(struct hd_debuginfo *di)
{
	return di->t;
}

static bool module_matches(const struct hd_module *m, const char *hint)
{
	if (!hint)
		return true;
	const char *base = strrchr(m->name, '/');
	base = base ? base + 1 : m->name;
	return strncmp(base, hint, strlen(hint)) == 0;
}

struct hd_error *hd_debuginfo_find_symbol(struct hd_debuginfo *di,
					  const char *module_hint,
					  const char *name, uint64_t *addr,
					  uint64_t *size)
{
	for (size_t i = 0; i < hd_target_num_modules(di->t); i++) {
		const struct hd_module *m = hd_target_module(di->t, i);
		if (!module_matches(m, module_hint))
			continue;
		const char *files[2] = {hd_debuginfo_debug_file(di, m), m->file};
		for (size_t f = 0; f < 2; f++) {
			if (!files[f])
				continue;
			uint64_t value, sz;
			struct hd_error *err =
				hd_elf_find_symbol(files[f], name, &value, &sz);
			if (!err) {
				*addr = m->bias + value;
				if (size)
					*size = sz;
				return NULL;
			}
			hd_error_destroy(err);
		}
	}
	return hd_error_create(HD_ERROR_NOT_FOUND, "symbol %s not found%s%s",
			       name, module_hint ? " in " : "",
			       module_hint ? module_hint : "");
}

struct hd_error *hd_debuginfo_struct_layouts(struct hd_debuginfo *di,
					     const struct hd_module *m,
					     const char *cu_suffix,
					     const char *const *names, size_t n,
					     struct hd_struct_layout *ret)
{
	const char *path = hd_debuginfo_debug_file(di, m);
	if (!path)
		path = m->file;
	if (!path)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: no file with debug info", m->name);
	return hd_dwarf_struct_layouts(path, cu_suffix, names, n, ret);
}

#include "debuginfo/debuginfo_internal.h"

struct hd_error *hd_debuginfo_module_objects(struct hd_debuginfo *di,
					     const struct hd_module *m,
					     struct hd_elf_symbol **syms,
					     size_t *n)
{
	const char *files[2] = {hd_debuginfo_debug_file(di, m), m->file};
	*syms = NULL;
	*n = 0;
	for (size_t f = 0; f < 2; f++) {
		if (!files[f])
			continue;
		struct hd_error *err = hd_elf_object_symbols(files[f], syms, n);
		if (err && err->code == HD_ERROR_NO_MEMORY)
			return err;
		hd_error_destroy(err);
		if (*n)
			return NULL;
		hd_elf_free_symbols(*syms, *n);
		*syms = NULL;
		*n = 0;
	}
	return NULL;
}

struct hd_error *hd_debuginfo_module_sections(struct hd_debuginfo *di,
					      const struct hd_module *m,
					      struct hd_elf_section **secs,
					      size_t *n)
{
	const char *files[2] = {m->file, hd_debuginfo_debug_file(di, m)};
	*secs = NULL;
	*n = 0;
	for (size_t f = 0; f < 2; f++) {
		if (!files[f])
			continue;
		struct hd_error *err = hd_elf_sections(files[f], secs, n);
		if (err && err->code == HD_ERROR_NO_MEMORY)
			return err;
		hd_error_destroy(err);
		if (*n)
			return NULL;
	}
	return NULL;
}
