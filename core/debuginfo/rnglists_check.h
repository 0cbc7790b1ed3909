// A check of .debug_rnglists that libdwarf 20210528 cannot be trusted
// with (rnglists_check.c says why).
#ifndef HD_DEBUGINFO_RNGLISTS_CHECK_H
#define HD_DEBUGINFO_RNGLISTS_CHECK_H

#include "heapdom.h"

// Checks the unit headers of fd's .debug_rnglists section (fd: the ELF
// file path names). HD_ERROR_FORMAT
// naming the file, the section, the unit's offset and the problem when
// one is corrupt or the section cannot be read; NULL when they are sound
// or there is no such section.
struct hd_error *hd_dwarf_check_rnglists(int fd, const char *path);

#endif
