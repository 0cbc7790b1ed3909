// ELF symbol tables through libelf.
#ifndef HD_ELF_SYMBOLS_H
#define HD_ELF_SYMBOLS_H

#include "heapdom.h"

// Looks name up in .symtab, then .dynsym, of the ELF file at path; sets the
// link-time value and size. HD_ERROR_NOT_FOUND if absent.
struct hd_error *hd_elf_find_symbol(const char *path, const char *name,
				    uint64_t *value, uint64_t *size);

#endif
