// Debug info services for later pipeline stages.
#ifndef HD_DEBUGINFO_INTERNAL_H
#define HD_DEBUGINFO_INTERNAL_H

#include "debuginfo/elf_symbols.h"
#include "heapdom.h"

// Data symbols of a module: from its debug file's .symtab, else its own
// .symtab, else .dynsym. Values are link-time.
struct hd_error *hd_debuginfo_module_objects(struct hd_debuginfo *di,
					     const struct hd_module *m,
					     struct hd_elf_symbol **syms,
					     size_t *n);
// Allocated sections of a module (its own file, else its debug file).
struct hd_error *hd_debuginfo_module_sections(struct hd_debuginfo *di,
					      const struct hd_module *m,
					      struct hd_elf_section **secs,
					      size_t *n);

// The separate debug file of module m (m->file and m->build_id are what
// is looked at) as a session's debug info finds it: in debug_dir only when
// user_dir (the user's), else also beside the file. NULL if none; the
// caller frees it.
char *hd_debuginfo_find_debug_file(const char *debug_dir, bool user_dir,
				    const struct hd_module *m);

// Unwinds every thread of a target that has no frames of its own (a core,
// a ptrace-attached process) and adds its frames and locals as the
// debugger front-ends do (frames.c). A thread whose unwinding stops early
// leaves one warning on the target.
struct hd_error *hd_debuginfo_add_frames(struct hd_debuginfo *di);

#endif
