// What every target backend shares: the address-space description and a
// memory reader. Backends fill the arrays at creation; nothing downstream
// knows which backend it talks to.
#ifndef HD_TARGET_INTERNAL_H
#define HD_TARGET_INTERNAL_H

#include "heapdom.h"

struct hd_extent_list;

struct hd_target_ops {
	// Reads exactly len bytes or fails with HD_ERROR_FAULT.
	struct hd_error *(*read)(struct hd_target *t, uint64_t addr, void *buf,
				 size_t len);
	// Optional: a pointer to len bytes at addr that stays valid for the
	// target's lifetime, or NULL if the range is not directly mapped.
	const uint8_t *(*direct)(struct hd_target *t, uint64_t addr,
				 size_t len);
	// Releases the backend state in t->impl.
	void (*destroy)(struct hd_target *t);
	// Optional: appends to *out the parts of [addr, end) that may hold
	// nonzero bytes, in order; the rest is known to read as zeros (a hole
	// of a sparse core). Memory the backend cannot vouch for is data.
	struct hd_error *(*data_extents)(struct hd_target *t, uint64_t addr,
					 uint64_t end, struct hd_extent_list *out);
	// Optional: the caller is done with [addr, addr + len) for now
	// (hd_target_release).
	void (*release)(struct hd_target *t, uint64_t addr, uint64_t len);
};

// A core target's PT_LOAD segments (core_file.c): the part of segment i
// the file holds (empty when it holds none). 0 segments for other targets.
size_t hd_core_num_segments(const struct hd_target *t);
struct hd_extent hd_core_segment(const struct hd_target *t, size_t i);

// A growable list of extents (sparse.c).
struct hd_extent_list {
	struct hd_extent *v;
	size_t n, cap;
};
// Appends [start, end), merged with the last extent when they touch.
bool hd_extent_push(struct hd_extent_list *l, uint64_t start, uint64_t end);

// /proc/PID/pagemap of a process on this machine (pagemap.c).
struct hd_pagemap;
// Opens pid's pagemap and lists its private anonymous mappings from
// /proc/PID/task/TID/maps; an error says why it cannot be used.
struct hd_error *hd_pagemap_open(int pid, int tid, struct hd_pagemap **ret);
void hd_pagemap_close(struct hd_pagemap *pm);
// The private anonymous mappings it found.
size_t hd_pagemap_num_anon(const struct hd_pagemap *pm);
struct hd_extent hd_pagemap_anon(const struct hd_pagemap *pm, size_t i);
// Appends the parts of [addr, end) that are not private anonymous pages
// the process never touched.
struct hd_error *hd_pagemap_extents(struct hd_pagemap *pm, uint64_t addr,
				    uint64_t end, struct hd_extent_list *out);
// A read of len bytes that fetches only the data extents and zero-fills
// the rest, when the target knows of never-populated memory in a range
// large enough to ask; *done false means the caller reads it all.
struct hd_error *hd_target_sparse_read(struct hd_target *t, uint64_t addr,
				       void *buf, size_t len, bool *done);
// Sets t's pagemap source for pid (thread tid's view of the process),
// unless HEAPDOM_SPARSE=0; when the pagemap cannot be used, the reason
// goes to hd_target_sparse_source and nothing is skipped.
void hd_target_use_pagemap(struct hd_target *t, int pid, int tid);

struct hd_target {
	const struct hd_target_ops *ops;
	const char *kind;
	char *name;
	void *impl;

	struct hd_mapping *mappings;
	size_t num_mappings, cap_mappings;
	struct hd_thread *threads;
	size_t num_threads, cap_threads;
	struct hd_frame *frames;
	size_t num_frames, cap_frames;
	struct hd_module *modules;
	size_t num_modules, cap_modules;
	uint64_t *auxv; // (type, value) pairs
	size_t auxv_len;
	char *sysroot;
	char *exe_override;
	// Threads come from a debugger front-end (proc targets).
	bool frontend_threads;
	// Modules whose file is not used: not found, or another build than
	// the process ran (hd_target_warning says what that costs).
	struct hd_module_issue *issues;
	size_t num_issues, cap_issues;
	char **warnings; // the lines of the last hd_target_num_warnings
	size_t num_warnings;
	// Warnings of later stages about the target (a thread whose
	// backtrace stopped early), capped: hd_target_note.
	char **notes;
	size_t num_notes, dropped_notes;
	// A core without NT_FILE: modules come from the dynamic linker's
	// list in memory (core backend); how many, and why not more.
	bool no_file_note;
	size_t recovered_modules;
	char *recovery_problem; // what stopped the search, or NULL
	// Reads come from the core's own data only, never from a mapped
	// file on this machine: set while build-ids are read from memory, so
	// that a header the core omits is not taken from the file it is to be
	// checked against.
	bool core_only;
	// A core file shorter than its headers (core backend).
	bool truncated;
	struct hd_truncation truncation;
	// Never-populated memory (sparse.c): the pagemap of a local process,
	// or NULL; HEAPDOM_SPARSE=0; why no source could be used.
	struct hd_pagemap *pagemap;
	bool sparse_off;
	char *sparse_problem;
	bool have_unpopulated;
	uint64_t unpopulated;
	// A core file whose holes stand for a callback target's (the core a
	// debugger in this process loaded: hd_target_use_loaded_core), and
	// how hd_target_sparse_source names it.
	struct hd_target *sparse_core;
	char *sparse_core_source;
	// A process on this machine (live, proc, or a callback target told
	// with hd_target_set_local_pid), 0 otherwise; and why it can no
	// longer be read (hd_target_lost).
	int local_pid;
	char *lost;
};
// A read of process t->local_pid failed; mm_gone: /proc/PID/mem said its
// memory is gone (read returned 0). Records in t->lost whether it exited
// or executed another program.
void hd_target_check_lost(struct hd_target *t, bool mm_gone);

struct hd_module_issue {
	char *name;    // the module's path in the target
	char *file;    // the file looked at, or NULL
	bool is_exe;
	bool mismatch; // file exists but has another build-id
	bool unverified; // file used, but the target shows no build-id
	char target_id[81], file_id[81];
};
// Records that module name's file could not be used.
struct hd_error *hd_target_push_issue(struct hd_target *t, const char *name,
				      const char *file, bool is_exe,
				      bool mismatch, const char *target_id,
				      const char *file_id);

// Adds a warning (takes msg, a malloc'd line); duplicates and those past a
// few are only counted.
void hd_target_note(struct hd_target *t, char *msg);

// Allocates a target with no mappings; name is copied.
struct hd_error *hd_target_alloc(const char *kind, const char *name,
				 const struct hd_target_ops *ops,
				 const struct hd_target_options *opts,
				 struct hd_target **ret);
// Appends a mapping (path is copied); call hd_target_sort_mappings after.
struct hd_error *hd_target_push_mapping(struct hd_target *t,
					const struct hd_mapping *m);
void hd_target_sort_mappings(struct hd_target *t);
// HD_ERROR_FAULT naming the first address of [addr, addr + len) that no
// mapping covers; NULL when the mappings cover it all, or when the target
// has no mappings (a front-end that describes none: only its reader knows).
struct hd_error *hd_target_check_mapped(const struct hd_target *t,
					uint64_t addr, size_t len);
struct hd_error *hd_target_push_thread(struct hd_target *t,
				       const struct hd_thread *th);
// Appends a module (strings copied); reads the build-id from the file when
// m->build_id_len is 0 and the file exists.
struct hd_error *hd_target_push_module(struct hd_target *t,
				       const struct hd_module *m);

// Builds the module list from file-backed mappings: groups them by path,
// computes the load bias from the ELF program headers of the file (sysroot
// applied) and reads build-ids. exe_path, if set, marks that module as the
// executable; otherwise the module containing AT_PHDR (auxv) is.
struct hd_error *hd_target_modules_from_mappings(struct hd_target *t);

// A module as the target's memory shows it: its name, load bias, range and
// build-id (build_id_len 0 when its headers are not in the target).
struct hd_image {
	const char *name;
	uint64_t bias, start, end;
	bool have_range; // from program headers in memory
	uint8_t build_id[64];
	size_t build_id_len;
	bool is_exe;
};
// Adds the module, with the local file (sysroot or --exe applied) when its
// build-id is the image's; a missing file, another build or one that cannot
// be checked is recorded as an issue. Without have_range, the file's program
// headers give the range when it is used.
struct hd_error *hd_target_add_image_module(struct hd_target *t,
					    const struct hd_image *im);

// Builds the module list of a core without NT_FILE from its memory: the
// executable from auxv (AT_PHDR) and its program headers, the libraries
// from the dynamic linker's r_debug/link_map list reached through the
// executable's DT_DEBUG, the interpreter from AT_BASE when that list is
// empty. What it cannot find is left in t->recovery_problem.
struct hd_error *hd_target_modules_from_link_map(struct hd_target *t);

// Fills in the thread pointer of threads whose fs_base is 0 from the shape
// of glibc's thread descriptor in memory (left 0 if not found).
void hd_target_recover_thread_pointers(struct hd_target *t);

// Applies the target's sysroot to a path; returns a malloc'd string.
char *hd_target_resolve_path(const struct hd_target *t, const char *path);

#endif
