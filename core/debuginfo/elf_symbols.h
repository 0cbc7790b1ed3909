// ELF symbol tables through libelf.
#ifndef HD_ELF_SYMBOLS_H
#define HD_ELF_SYMBOLS_H

#include "heapdom.h"

// Looks name up in .symtab, then .dynsym, of the ELF file at path; sets the
// link-time value and size. HD_ERROR_NOT_FOUND if absent.
struct hd_error *hd_elf_find_symbol(const char *path, const char *name,
				    uint64_t *value, uint64_t *size);


// Which of names[0..n) the ELF file at path defines (.symtab and .dynsym,
// one pass each): *found[i] is set for each; false if none or unreadable.
bool hd_elf_defines_any(const char *path, const char *const *names, size_t n,
			bool *found);

struct hd_elf_symbol {
	char *name;
	uint64_t value, size; // link-time
	bool global;
};

struct hd_elf_section {
	char *name;
	uint64_t addr, size; // link-time
	bool nobits;
};

// Data objects (STT_OBJECT/STT_COMMON with a size) of the ELF file at
// path, from .symtab if present, else .dynsym, sorted by value; and the
// allocated sections. Arrays are malloc'd; free with hd_elf_free_*.
struct hd_error *hd_elf_object_symbols(const char *path,
				       struct hd_elf_symbol **syms, size_t *n);
// Functions (STT_FUNC, STT_GNU_IFUNC), the same way, with those of size 0
// (assembly labels such as __restore_rt, which gdb names frames by).
struct hd_error *hd_elf_function_symbols(const char *path,
					 struct hd_elf_symbol **syms,
					 size_t *n);
void hd_elf_free_symbols(struct hd_elf_symbol *syms, size_t n);
struct hd_error *hd_elf_sections(const char *path,
				 struct hd_elf_section **secs, size_t *n);
void hd_elf_free_sections(struct hd_elf_section *secs, size_t n);

#endif
