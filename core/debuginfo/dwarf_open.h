// Opening an ELF file for libdwarf, shared by the type index and the line
// tables.
#ifndef HD_DEBUGINFO_DWARF_OPEN_H
#define HD_DEBUGINFO_DWARF_OPEN_H

#include <libdwarf.h>

#include "heapdom.h"

// Opens path (checked to be ELF: libdwarf says "no entry" for anything it
// does not recognise) and its Dwarf_Debug. HD_ERROR_NOT_FOUND when the
// file has no DWARF; *fd and *dbg are set only on success.
struct hd_error *hd_dwarf_open(const char *path, int *fd, Dwarf_Debug *dbg);
// dwarf_finish and close.
void hd_dwarf_close(int fd, Dwarf_Debug dbg);

#endif
