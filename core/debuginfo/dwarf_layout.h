// Struct layouts from DWARF, through libdwarf.
#ifndef HD_DWARF_LAYOUT_H
#define HD_DWARF_LAYOUT_H

#include "heapdom.h"

// Reads the layouts of the named structs from the DWARF in the ELF file at
// path. A name matches a struct/union/class tag (DW_TAG_structure_type with
// that DW_AT_name, not a declaration) or a typedef whose target (through
// typedefs and cv-qualifiers) is such a struct. Only compilation units whose
// DW_AT_name ends in cu_suffix are searched (NULL: all); the search stops
// once every name is found. ret must hold n entries; each found entry gets
// name (copy of names[i]), size (DW_AT_byte_size) and members in order
// (name, byte offset from DW_AT_data_member_location, size in bytes of the
// member's type — for arrays the whole array — and count = number of
// elements for arrays, 0 otherwise). Entries not found are left zeroed.
// Errors: HD_ERROR_OS if the file cannot be opened, HD_ERROR_NOT_FOUND if
// it has no DWARF, HD_ERROR_FORMAT if libdwarf fails (message includes
// libdwarf's text and the path).
struct hd_error *hd_dwarf_struct_layouts(const char *path,
					 const char *cu_suffix,
					 const char *const *names, size_t n,
					 struct hd_struct_layout *ret);

#endif
