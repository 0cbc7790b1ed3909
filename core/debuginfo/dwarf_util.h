// Small libdwarf helpers shared by the frame scopes and type names.
#ifndef HD_DEBUGINFO_DWARF_UTIL_H
#define HD_DEBUGINFO_DWARF_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <libdwarf.h>

// The DIE at the global .debug_info offset, or NULL.
Dwarf_Die hd_dw_offdie(Dwarf_Debug dbg, Dwarf_Off off);
// The DIE an attribute refers to (DW_AT_type, DW_AT_abstract_origin...),
// or NULL.
Dwarf_Die hd_dw_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at);
Dwarf_Half hd_dw_tag(Dwarf_Debug dbg, Dwarf_Die die);
// A string attribute, looked up through DW_AT_abstract_origin and
// DW_AT_specification when the DIE lacks it; malloc'd, or NULL.
char *hd_dw_string(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at);
// The DIE holding an attribute: die itself or what its abstract origin /
// specification chain refers to (caller deallocates when != die), or NULL.
Dwarf_Die hd_dw_with_attr(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at);
bool hd_dw_udata(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at,
		 uint64_t *ret);
void hd_dw_free(Dwarf_Die die);

// The first corrupt DIE link a walk met: a DW_AT_sibling of the DIE at
// offset die leading back to the one at sibling (<= die).
struct hd_dw_corrupt {
	bool found;
	Dwarf_Off die, sibling;
};
// The next sibling of die, or NULL (no more, or libdwarf cannot read it).
// libdwarf follows DW_AT_sibling as written, so a corrupt one leading back
// would make a walk over the children loop for ever: a sibling that does
// not lie after die ends the walk (NULL) and is recorded in *bad.
Dwarf_Die hd_dw_next_sibling(Dwarf_Debug dbg, Dwarf_Die die,
			     struct hd_dw_corrupt *bad);

// gdb's name of a type, as str(type.strip_typedefs()) prints it in C and
// C++ ("struct node *", "char [16]", "void (*)(int)"), and its size
// (*size 0 when unknown). cplus: the unit is C++ (no "struct " keyword).
// malloc'd, or NULL when it cannot be named. A corrupt sibling link met
// on the way is recorded in *bad (the name is then NULL).
char *hd_dw_type_name(Dwarf_Debug dbg, Dwarf_Die type, bool cplus,
		      uint64_t *size, struct hd_dw_corrupt *bad);

#endif
