// Symbolizing code addresses for call-site reports. Each module's DWARF
// line programs are run once (through libdwarf) into one sorted array of
// 16-byte rows, so a lookup is a binary search; file names are interned
// once per module. Functions come from ELF symbols, which stripped-of-DWARF
// modules still have.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "debuginfo/dwarf_open.h"
#include "debuginfo/elf_symbols.h"
#include "debuginfo/lines.h"
#include "util/demangle.h"
#include "util/vec.h"
#include "util/sort.h"
#include "util/hash.h"

// ------------------------------------------------------------ file names

static bool is_abs(const char *p)
{
	return p && p[0] == '/';
}

// "./a.c" -> "a.c": gcc keeps the "./" of a relative compilation
// directory, which says nothing.
static const char *skip_dot_slash(const char *p)
{
	while (p[0] == '.' && p[1] == '/') {
		p += 2;
		while (*p == '/')
			p++;
	}
	return p;
}

// The rest of path after the directory dir, or NULL if path is not in it.
static const char *under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(path, dir, n) != 0 || path[n] != '/')
		return NULL;
	path += n;
	while (*path == '/')
		path++;
	return *path ? path : NULL;
}

char *hd_line_file_name(const char *comp_dir, const char *dir,
			const char *name)
{
	if (!name || !*name)
		return strdup("?");
	char *joined = NULL;
	if (!is_abs(name) && dir && *dir &&
	    !(comp_dir && strcmp(dir, comp_dir) == 0)) {
		size_t n = strlen(dir);
		bool slash = dir[n - 1] == '/';
		if (asprintf(&joined, "%s%s%s", dir, slash ? "" : "/", name) < 0)
			return NULL;
		name = joined;
	}
	// An absolute name under an absolute compilation directory is shown
	// relative to it, as the compiler was given it.
	const char *rel = is_abs(name) && is_abs(comp_dir) ? under(name, comp_dir)
							   : NULL;
	char *ret = strdup(skip_dot_slash(rel ? rel : name));
	free(joined);
	return ret;
}

// --------------------------------------------------------- building rows

// Distinct file names of a module, interned through an open-addressing
// hash table (libc's units repeat the same headers hundreds of times).
struct build {
	const char *path;
	Dwarf_Debug dbg;
	struct hd_line_table *tab;
	size_t rows_cap, files_cap;
	uint32_t *slots; // file index + 1, 0 = empty
	size_t num_slots;
	uint64_t *offsets; // line tables already read (shared by units)
	size_t num_offsets, offsets_cap;
};

static bool grow_slots(struct build *b)
{
	size_t n = b->num_slots ? 2 * b->num_slots : 256;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < b->tab->num_files; i++) {
		size_t j = hd_hash_str(b->tab->files[i]) & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(b->slots);
	b->slots = slots;
	b->num_slots = n;
	return true;
}

// Takes ownership of name; sets *ret to its index.
static struct hd_error *intern_file(struct build *b, char *name, uint32_t *ret)
{
	struct hd_line_table *tab = b->tab;
	if (2 * (tab->num_files + 1) > b->num_slots && !grow_slots(b)) {
		free(name);
		return &hd_error_no_memory;
	}
	size_t j = hd_hash_str(name) & (b->num_slots - 1);
	for (; b->slots[j]; j = (j + 1) & (b->num_slots - 1)) {
		uint32_t i = b->slots[j] - 1;
		if (strcmp(tab->files[i], name) == 0) {
			free(name);
			*ret = i;
			return NULL;
		}
	}
	if (tab->num_files >= HD_LINE_NO_FILE ||
	    !HD_VEC_PUSH(tab->files, tab->num_files, b->files_cap, name)) {
		free(name);
		return &hd_error_no_memory;
	}
	*ret = (uint32_t)tab->num_files - 1;
	b->slots[j] = (uint32_t)tab->num_files;
	return NULL;
}

static void drop_error(struct build *b, Dwarf_Error derr)
{
	if (derr)
		dwarf_dealloc_error(b->dbg, derr);
}

// A unit's file table as module file indexes; map[i] is for the line
// program's file number base + i.
//
// DWARF 5 starts a sequence's file register at 1, but this libdwarf
// reports 0 for rows before any DW_LNS_set_file. gcc's tables repeat
// entry 0 (the primary file) later and never set file 0, so there a 0 is
// read as 1 (*zero_is_one), as gdb and objdump read it (a static function
// of an included header: "libc_start_call_main.h", not "libc-start.c").
// clang's entry 0 is not repeated and is set explicitly: left as is.
static struct hd_error *map_files(struct build *b, Dwarf_Line_Context ctx,
				  Dwarf_Unsigned version, uint32_t **map,
				  Dwarf_Signed *base, Dwarf_Signed *count,
				  bool *zero_is_one)
{
	*zero_is_one = false;
	Dwarf_Error derr = NULL;
	Dwarf_Signed end;
	const char *comp_dir = NULL;
	*map = NULL;
	*count = 0;
	if (dwarf_srclines_comp_dir(ctx, &comp_dir, &derr) != DW_DLV_OK) {
		drop_error(b, derr);
		derr = NULL;
		comp_dir = NULL;
	}
	if (dwarf_srclines_files_indexes(ctx, base, count, &end, &derr) !=
		    DW_DLV_OK ||
	    *count <= 0 || end - *base != *count) {
		drop_error(b, derr);
		*count = 0;
		return NULL;
	}
	*map = malloc(*count * sizeof(**map));
	if (!*map)
		return &hd_error_no_memory;
	const char *name0 = NULL;
	for (Dwarf_Signed i = 0; i < *count; i++) {
		const char *name = NULL, *dir = NULL;
		Dwarf_Unsigned dir_index = 0, mtime, length;
		Dwarf_Form_Data16 *md5;
		derr = NULL;
		if (dwarf_srclines_files_data_b(ctx, *base + i, &name,
						&dir_index, &mtime, &length,
						&md5, &derr) != DW_DLV_OK) {
			drop_error(b, derr);
			(*map)[i] = HD_LINE_NO_FILE;
			continue;
		}
		if (version >= 5 && *base == 0 && i == 0)
			name0 = name;
		else if (name0 && i >= 2 && name && strcmp(name, name0) == 0)
			*zero_is_one = true;
		// Directory 0 is the compilation directory; DWARF 5 also
		// lists it, DWARF 4 only implies it. libdwarf numbers the
		// other entries as the line program does.
		if (dir_index || version >= 5) {
			derr = NULL;
			if (dwarf_srclines_include_dir_data(
				    ctx, (Dwarf_Signed)dir_index, &dir,
				    &derr) != DW_DLV_OK) {
				drop_error(b, derr);
				dir = NULL;
			}
		}
		if (!dir && dir_index == 0)
			dir = comp_dir;
		char *full = hd_line_file_name(comp_dir, dir, name);
		if (!full)
			return &hd_error_no_memory;
		struct hd_error *err = intern_file(b, full, &(*map)[i]);
		if (err)
			return err;
	}
	return NULL;
}

static bool push_row(struct build *b, struct hd_line_row row)
{
	struct hd_line_table *tab = b->tab;
	return HD_VEC_PUSH(tab->rows, tab->num_rows, b->rows_cap, row);
}

// Appends the rows of one unit's line program. Within a sequence, rows at
// one address collapse to the last (the earlier ones cover no bytes); a
// sequence at address 0 is code the linker discarded.
static struct hd_error *add_lines(struct build *b, Dwarf_Line *lines,
				  Dwarf_Signed n, const uint32_t *map,
				  Dwarf_Signed base, Dwarf_Signed count,
				  bool zero_is_one)
{
	bool in_seq = false, skip_seq = false;
	size_t seq_start = 0;
	for (Dwarf_Signed i = 0; i < n; i++) {
		Dwarf_Error derr = NULL;
		Dwarf_Addr addr;
		Dwarf_Unsigned lineno = 0, fileno = 0;
		Dwarf_Bool end = false;
		if (dwarf_lineaddr(lines[i], &addr, &derr) != DW_DLV_OK ||
		    dwarf_lineendsequence(lines[i], &end, &derr) != DW_DLV_OK) {
			drop_error(b, derr);
			continue;
		}
		if (dwarf_lineno(lines[i], &lineno, &derr) != DW_DLV_OK ||
		    dwarf_line_srcfileno(lines[i], &fileno, &derr) !=
			    DW_DLV_OK) {
			drop_error(b, derr);
			derr = NULL;
		}
		if (!in_seq) {
			in_seq = true;
			skip_seq = addr == 0 || addr >= UINT64_MAX - 1;
			seq_start = b->tab->num_rows;
		}
		if (skip_seq) {
			in_seq = !end;
			continue;
		}
		struct hd_line_row row = {.addr = addr};
		if (end) {
			row.file = HD_LINE_END;
			in_seq = false;
		} else {
			if (fileno == 0 && zero_is_one)
				fileno = 1;
			Dwarf_Signed k = (Dwarf_Signed)fileno - base;
			row.file = k >= 0 && k < count ? map[k]
						       : HD_LINE_NO_FILE;
			row.line = lineno > UINT32_MAX ? 0 : (uint32_t)lineno;
		}
		struct hd_line_table *tab = b->tab;
		if (tab->num_rows > seq_start &&
		    tab->rows[tab->num_rows - 1].addr == addr) {
			tab->rows[tab->num_rows - 1] = row;
			continue;
		}
		if (!push_row(b, row))
			return &hd_error_no_memory;
	}
	// A program cut short still ends where its last row begins.
	if (in_seq && !skip_seq && b->tab->num_rows > seq_start) {
		struct hd_line_row row = b->tab->rows[b->tab->num_rows - 1];
		row.file = HD_LINE_END;
		row.line = 0;
		b->tab->rows[b->tab->num_rows - 1] = row;
	}
	return NULL;
}

static bool seen_offset(struct build *b, uint64_t off)
{
	for (size_t i = 0; i < b->num_offsets; i++)
		if (b->offsets[i] == off)
			return true;
	return false;
}

static struct hd_error *add_unit(struct build *b, Dwarf_Die unit_die)
{
	Dwarf_Error derr = NULL;
	Dwarf_Unsigned version;
	Dwarf_Small table_count;
	Dwarf_Line_Context ctx;
	int rc = dwarf_srclines_b(unit_die, &version, &table_count, &ctx,
				  &derr);
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	if (rc != DW_DLV_OK) {
		drop_error(b, derr);
		b->tab->bad_units++;
		return NULL;
	}
	// Units may share a line table (dwz's partial units): read it once.
	Dwarf_Unsigned off;
	if (dwarf_srclines_table_offset(ctx, &off, &derr) == DW_DLV_OK) {
		if (seen_offset(b, off)) {
			dwarf_srclines_dealloc_b(ctx);
			return NULL;
		}
		if (!HD_VEC_PUSH(b->offsets, b->num_offsets, b->offsets_cap,
				 off)) {
			dwarf_srclines_dealloc_b(ctx);
			return &hd_error_no_memory;
		}
	} else {
		drop_error(b, derr);
	}
	derr = NULL;
	Dwarf_Line *lines;
	Dwarf_Signed n = 0, base = 0, count = 0;
	uint32_t *map = NULL;
	struct hd_error *err = NULL;
	if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &derr) !=
	    DW_DLV_OK) {
		drop_error(b, derr);
		b->tab->bad_units++;
	} else if (n > 0) {
		bool zero_is_one = false;
		err = map_files(b, ctx, version, &map, &base, &count,
				&zero_is_one);
		if (!err)
			err = add_lines(b, lines, n, map, base, count,
					zero_is_one);
		b->tab->num_units++;
	}
	free(map);
	dwarf_srclines_dealloc_b(ctx);
	return err;
}

static struct hd_error *read_units(struct build *b)
{
	for (;;) {
		Dwarf_Error derr = NULL;
		Dwarf_Unsigned unit_len, type_off, next_off;
		Dwarf_Half version, addr_size, off_size, ext_size, unit_type;
		Dwarf_Off abbrev_off;
		Dwarf_Sig8 sig;
		Dwarf_Die unit_die;
		int rc = dwarf_next_cu_header_d(
			b->dbg, true, &unit_len, &version, &abbrev_off,
			&addr_size, &off_size, &ext_size, &sig, &type_off,
			&next_off, &unit_type, &derr);
		if (rc == DW_DLV_NO_ENTRY)
			return NULL;
		if (rc != DW_DLV_OK) {
			struct hd_error *err = hd_error_file(
				HD_ERROR_FORMAT, b->path,
				"reading unit header: %s",
				derr ? dwarf_errmsg(derr) : "libdwarf error");
			drop_error(b, derr);
			return err;
		}
		rc = dwarf_siblingof_b(b->dbg, NULL, true, &unit_die, &derr);
		if (rc != DW_DLV_OK) {
			drop_error(b, derr);
			b->tab->bad_units++;
			continue;
		}
		struct hd_error *err = add_unit(b, unit_die);
		dwarf_dealloc_die(unit_die);
		if (err)
			return err;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct hd_line_row *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	// Where one sequence ends and the next begins, the beginning wins.
	bool xe = x->file == HD_LINE_END, ye = y->file == HD_LINE_END;
	if (xe != ye)
		return xe ? -1 : 1;
	// Otherwise (overlapping sequences) by content, so the choice does
	// not depend on qsort.
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

void hd_line_table_destroy(struct hd_line_table *tab)
{
	if (!tab)
		return;
	for (size_t i = 0; i < tab->num_files; i++)
		free(tab->files[i]);
	free(tab->files);
	free(tab->rows);
	free(tab);
}

struct hd_error *hd_line_table_build(const char *path,
				     struct hd_line_table **ret)
{
	*ret = NULL;
	struct build b = {.path = path};
	b.tab = calloc(1, sizeof(*b.tab));
	if (!b.tab)
		return &hd_error_no_memory;
	int fd;
	struct hd_error *err = hd_dwarf_open(path, &fd, &b.dbg);
	if (err)
		goto out;
	err = read_units(&b);
	hd_dwarf_close(fd, b.dbg);
	// libdwarf opens a file with only .eh_frame as well.
	if (!err && !b.tab->num_rows)
		err = hd_error_file(HD_ERROR_NOT_FOUND, path,
				    "no DWARF line table");
out:
	free(b.slots);
	free(b.offsets);
	if (err) {
		hd_line_table_destroy(b.tab);
		return err;
	}
	struct hd_line_table *tab = b.tab;
	hd_qsort(tab->rows, tab->num_rows, sizeof(*tab->rows), row_cmp);
	// The table lives as long as the session: give back the slack.
	if (tab->num_rows && tab->num_rows < b.rows_cap) {
		void *p = realloc(tab->rows, tab->num_rows * sizeof(*tab->rows));
		if (p)
			tab->rows = p;
	}
	*ret = tab;
	return NULL;
}

const struct hd_line_row *hd_line_table_find(const struct hd_line_table *tab,
					     uint64_t addr)
{
	// The last row at or below addr.
	size_t lo = 0, hi = tab ? tab->num_rows : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tab->rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || tab->rows[lo - 1].file == HD_LINE_END)
		return NULL;
	return &tab->rows[lo - 1];
}

size_t hd_line_table_bytes(const struct hd_line_table *tab)
{
	if (!tab)
		return 0;
	size_t n = sizeof(*tab) + tab->num_rows * sizeof(*tab->rows) +
		   tab->num_files * sizeof(*tab->files);
	for (size_t i = 0; i < tab->num_files; i++)
		n += strlen(tab->files[i]) + 1;
	return n;
}

// -------------------------------------------------------- per-module cache

struct lines_module {
	const struct hd_module *m; // the module this entry was built for
	bool loaded;     // functions read
	bool lines_read; // line table read (only when a lookup needs lines)
	struct hd_line_table *tab; // NULL: no line info
	struct hd_elf_symbol *fns; // function symbols, sorted by value
	size_t num_fns;
	char **shown; // demangled names, filled on first use
};

struct hd_lines {
	struct lines_module *mods;
	size_t num_mods;
};

static void module_deinit(struct lines_module *lm)
{
	hd_line_table_destroy(lm->tab);
	for (size_t i = 0; lm->shown && i < lm->num_fns; i++)
		free(lm->shown[i]);
	free(lm->shown);
	hd_elf_free_symbols(lm->fns, lm->num_fns);
	memset(lm, 0, sizeof(*lm));
}

void hd_lines_destroy(struct hd_lines *lines)
{
	if (!lines)
		return;
	for (size_t i = 0; i < lines->num_mods; i++)
		module_deinit(&lines->mods[i]);
	free(lines->mods);
	free(lines);
}

// Lines from the separate debug file, else the module itself. A file
// whose DWARF cannot be read leaves the module without lines, not the
// report without a function name.
static struct hd_error *load_lines(const char *const files[2],
				   struct lines_module *lm)
{
	for (size_t f = 0; f < 2 && !lm->tab; f++) {
		if (!files[f])
			continue;
		struct hd_error *err = hd_line_table_build(files[f], &lm->tab);
		if (err && err->code == HD_ERROR_NO_MEMORY)
			return err;
		hd_error_destroy(err);
	}
	return NULL;
}

static struct hd_error *load_functions(const char *const files[2],
				       struct lines_module *lm)
{
	for (size_t f = 0; f < 2 && !lm->num_fns; f++) {
		if (!files[f])
			continue;
		struct hd_error *err =
			hd_elf_function_symbols(files[f], &lm->fns,
						&lm->num_fns);
		if (err && err->code == HD_ERROR_NO_MEMORY)
			return err;
		hd_error_destroy(err);
	}
	if (lm->num_fns) {
		lm->shown = calloc(lm->num_fns, sizeof(*lm->shown));
		if (!lm->shown)
			return &hd_error_no_memory;
	}
	return NULL;
}

static struct hd_error *get_module(struct hd_debuginfo *di,
				   const struct hd_module *m, bool need_lines,
				   struct lines_module **ret)
{
	struct hd_lines **slot = hd_debuginfo_lines(di);
	struct hd_target *t = hd_debuginfo_target(di);
	size_t n = hd_target_num_modules(t);
	if (!*slot && !(*slot = calloc(1, sizeof(**slot))))
		return &hd_error_no_memory;
	struct hd_lines *lines = *slot;
	if (lines->num_mods < n) {
		// Modules added since the last lookup.
		struct lines_module *p =
			realloc(lines->mods, n * sizeof(*lines->mods));
		if (!p)
			return &hd_error_no_memory;
		memset(p + lines->num_mods, 0,
		       (n - lines->num_mods) * sizeof(*p));
		lines->mods = p;
		lines->num_mods = n;
	}
	size_t i = 0;
	while (i < n && hd_target_module(t, i) != m)
		i++;
	if (i == n)
		return hd_error_create(HD_ERROR_NOT_FOUND, "%s: unknown module",
				       m->name ? m->name : "?");
	struct lines_module *lm = &lines->mods[i];
	if (lm->loaded && lm->m != m)
		module_deinit(lm);
	const char *files[2] = {hd_debuginfo_debug_file(di, m),
				m->file ? m->file : m->name};
	if (!lm->loaded) {
		struct hd_error *err = load_functions(files, lm);
		if (err) {
			module_deinit(lm);
			return err;
		}
		lm->m = m;
		lm->loaded = true;
	}
	// A module's line table is large (libc's: a few hundred ms to read):
	// only lookups that show lines read it.
	if (need_lines && !lm->lines_read) {
		struct hd_error *err = load_lines(files, lm);
		if (err)
			return err;
		lm->lines_read = true;
	}
	*ret = lm;
	return NULL;
}

// Among aliases, the name a person would write: global, fewest leading
// underscores, shortest ("malloc" over "__libc_malloc").
static bool better_name(const struct hd_elf_symbol *a,
			const struct hd_elf_symbol *b)
{
	if (a->global != b->global)
		return a->global;
	size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_");
	if (ua != ub)
		return ua < ub;
	size_t la = strlen(a->name), lb = strlen(b->name);
	if (la != lb)
		return la < lb;
	return strcmp(a->name, b->name) < 0;
}

// The function symbol containing addr: the nearest start at or below it
// whose size covers it (bounded search: nested symbols are rare).
// How many of the module's function symbols (sorted by value) start at
// or below addr.
static size_t functions_upto(const struct lines_module *lm, uint64_t addr)
{
	size_t lo = 0, hi = lm->num_fns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lm->fns[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static ssize_t find_function(const struct lines_module *lm, uint64_t addr)
{
	size_t lo = functions_upto(lm, addr);
	ssize_t best = -1;
	for (size_t k = 0; lo > 0 && k < 64; k++, lo--) {
		const struct hd_elf_symbol *s = &lm->fns[lo - 1];
		if (best >= 0 && s->value != lm->fns[best].value)
			break;
		if (addr - s->value >= s->size)
			continue;
		if (best < 0 || better_name(s, &lm->fns[best]))
			best = (ssize_t)lo - 1;
	}
	return best;
}

static struct hd_error *function_name(struct lines_module *lm, size_t i,
				      const char **ret)
{
	if (!lm->shown[i]) {
		char *d = hd_demangle(lm->fns[i].name);
		lm->shown[i] = d ? d : strdup(lm->fns[i].name);
		if (!lm->shown[i])
			return &hd_error_no_memory;
	}
	*ret = lm->shown[i];
	return NULL;
}

struct hd_error *hd_debuginfo_locate(struct hd_debuginfo *di, uint64_t addr,
				     struct hd_location *ret)
{
	memset(ret, 0, sizeof(*ret));
	const struct hd_module *m =
		hd_target_find_module(hd_debuginfo_target(di), addr);
	if (!m)
		return hd_error_at(HD_ERROR_NOT_FOUND, addr,
				   "address 0x%" PRIx64 " is in no module",
				   addr);
	struct lines_module *lm = NULL;
	struct hd_error *err = get_module(di, m, true, &lm);
	if (err)
		return err;
	const char *base = m->name ? strrchr(m->name, '/') : NULL;
	ret->module = base ? base + 1 : m->name ? m->name : "?";
	uint64_t link = addr - m->bias;
	ssize_t f = find_function(lm, link);
	if (f >= 0) {
		if ((err = function_name(lm, (size_t)f, &ret->function)))
			return err;
		ret->offset = link - lm->fns[f].value;
	}
	const struct hd_line_row *row = hd_line_table_find(lm->tab, link);
	if (row) {
		if (row->file < lm->tab->num_files)
			ret->file = lm->tab->files[row->file];
		ret->line = row->line;
	}
	return NULL;
}

struct hd_error *hd_debuginfo_function_at(struct hd_debuginfo *di,
					  uint64_t addr, const char **name,
					  uint64_t *start)
{
	*name = NULL;
	*start = 0;
	const struct hd_module *m =
		hd_target_find_module(hd_debuginfo_target(di), addr);
	if (!m)
		return NULL;
	struct lines_module *lm = NULL;
	struct hd_error *err = get_module(di, m, false, &lm);
	if (err)
		return err;
	uint64_t link = addr - m->bias;
	ssize_t f = find_function(lm, link);
	if (f < 0) {
		// As gdb's minimal symbols: a preceding symbol of size 0 (an
		// assembly label without .size, __restore_rt) names what
		// follows it when no sized symbol covers the address.
		size_t lo = functions_upto(lm, link);
		if (lo == 0 || lm->fns[lo - 1].size != 0)
			return NULL;
		f = (ssize_t)lo - 1;
	}
	*start = lm->fns[f].value + m->bias;
	return function_name(lm, (size_t)f, name);
}
