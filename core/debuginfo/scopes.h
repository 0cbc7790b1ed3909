// What DWARF says about a code address for a backtrace: the functions
// there (inlined ones first, as gdb lists them as frames of their own)
// and the variables of the out-of-line function's blocks.
#ifndef HD_DEBUGINFO_SCOPES_H
#define HD_DEBUGINFO_SCOPES_H

#include "debuginfo/frames_internal.h"

#define HD_SCOPE_MAX_OPS 24

struct hd_scope_fn {
	char *name;      // as gdb names the frame's function, or NULL
	char *call_file; // basename of where this function was inlined into
	unsigned call_line; // the next outer one (0, NULL: not inlined)
};

struct hd_scope_var {
	char *name;
	char *type_name; // gdb's str(type.strip_typedefs()), or NULL
	uint64_t size;
	bool has_loc; // a location (expression) covers the address
	struct hd_dwarf_op ops[HD_SCOPE_MAX_OPS];
	size_t num_ops;
};

struct hd_scopes {
	// fns[0] is the innermost (inlined) function at the address,
	// fns[num_fns - 1] the out-of-line function; none: no DWARF subprogram
	// covers the address.
	struct hd_scope_fn *fns;
	size_t num_fns;
	// Variables and parameters of the out-of-line function's blocks that
	// contain the address, innermost block first, a name shadowed by an
	// inner one left out (gdb's frame.block() walk).
	struct hd_scope_var *vars;
	size_t num_vars;
	// The unit's language is C++ (1), another (0), or unknown (-1: no
	// unit).
	int cplus;
	// The line table row of the address in its unit: the file's basename
	// and line (NULL, 0: none), as gdb's find_pc_line finds them.
	char *file;
	unsigned line;
	// The function's DW_AT_frame_base.
	bool has_frame_base;
	struct hd_dwarf_op frame_base[HD_SCOPE_MAX_OPS];
	size_t num_frame_base;
};

// Fills *ret for link-time address addr of md's module; num_fns is 0 when
// its DWARF has no function there, file NULL when no line row covers it.
// Fails when out of memory, and with HD_ERROR_FORMAT naming the file and
// the DIE offsets when the DWARF walked is corrupt (a DW_AT_sibling leading
// back, which would make the walk loop).
// Type names are written in C++ style (no "struct " keyword) when
// print_cplus is 1, in C style when 0, in the unit's own when -1: gdb
// prints every type in its current language, the one of the thread's
// innermost frame.
struct hd_error *hd_scopes_find(struct hd_mod_dwarf *md, uint64_t addr,
				int print_cplus, struct hd_scopes *ret);
void hd_scopes_free(struct hd_scopes *s);

#endif
