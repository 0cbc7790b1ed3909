// Code addresses to function and file:line: a module's DWARF line table
// flattened into one sorted array, and its function symbols, both built
// on first use and kept by the hd_debuginfo object.
#ifndef HD_DEBUGINFO_LINES_H
#define HD_DEBUGINFO_LINES_H

#include <stdint.h>

#include "heapdom.h"

// One row of a line table. A row covers the addresses up to the next
// row's; file is HD_LINE_END for the end of a sequence (no line there).
struct hd_line_row {
	uint64_t addr; // link-time
	uint32_t file; // index into hd_line_table.files, or HD_LINE_*
	uint32_t line;
};
#define HD_LINE_END UINT32_MAX
#define HD_LINE_NO_FILE (UINT32_MAX - 1)

struct hd_line_table {
	struct hd_line_row *rows; // sorted by addr
	size_t num_rows;
	char **files; // distinct names, see hd_line_file_name
	size_t num_files;
	size_t num_units;   // units whose line table was read
	size_t bad_units;   // units whose line table libdwarf rejected
};

// Reads every line table of the ELF file at path (DWARF 2 to 5).
// HD_ERROR_NOT_FOUND if the file has no line rows; a unit whose line table
// cannot be decoded is skipped and counted in bad_units.
struct hd_error *hd_line_table_build(const char *path,
				     struct hd_line_table **ret);
void hd_line_table_destroy(struct hd_line_table *tab);
// The row covering link-time address addr, or NULL (no row, or a gap).
const struct hd_line_row *hd_line_table_find(const struct hd_line_table *tab,
					     uint64_t addr);
// Bytes held by the table (rows, names and arrays).
size_t hd_line_table_bytes(const struct hd_line_table *tab);

// How a line-table file is named in reports: relative to the unit's
// compilation directory when it lies under it (as the compiler was given
// it: "../src/a.c", "malloc.c"), else absolute ("/usr/include/stdio.h").
// dir is the file's directory entry (NULL or comp_dir for the
// compilation directory itself). Returns a malloc'd string.
char *hd_line_file_name(const char *comp_dir, const char *dir,
			const char *name);

// The function symbol (ELF, demangled) containing addr and its start, or
// *name NULL; reads the module's symbols but not its line table.
struct hd_error *hd_debuginfo_function_at(struct hd_debuginfo *di,
					  uint64_t addr, const char **name,
					  uint64_t *start);

// The per-debuginfo cache (one entry per module), freed by
// hd_debuginfo_destroy.
struct hd_lines;
void hd_lines_destroy(struct hd_lines *lines);

// In debuginfo.c: the cache's slot and the target of a debuginfo object.
struct hd_lines **hd_debuginfo_lines(struct hd_debuginfo *di);
struct hd_target *hd_debuginfo_target(struct hd_debuginfo *di);

#endif
