// heapdom — heap analysis for C and C++ programs.
//
// Public interface of libheapdom. Every fallible function returns a
// struct hd_error * which is NULL on success; the caller owns a non-NULL
// error and releases it with hd_error_destroy().
//
// Pipeline: a target (core file, live process or debugger callbacks) gives
// memory, mappings, threads and modules; debuginfo finds symbols and DWARF
// layouts; the heap walker turns that into a block table; report renders it.
#ifndef HEAPDOM_H
#define HEAPDOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HD_EXPORT __attribute__((visibility("default")))

// ---------------------------------------------------------------- errors

enum hd_error_code {
	HD_ERROR_NO_MEMORY = 1, // allocation failed
	HD_ERROR_OS,            // a system call failed (errnum is set)
	HD_ERROR_FORMAT,        // a file is not what it should be
	HD_ERROR_FAULT,         // memory not available at an address
	HD_ERROR_NOT_FOUND,     // a symbol, file or structure is missing
	HD_ERROR_INVALID,       // a bad argument from the user or caller
	HD_ERROR_MISMATCH,      // e.g. executable does not match the core
	HD_ERROR_UNSUPPORTED,   // foreign architecture, unknown allocator
	HD_ERROR_DAMAGED,       // heap metadata is inconsistent
	HD_ERROR_BUSY,          // process already traced by a debugger
	HD_ERROR_INTERRUPTED,   // the user interrupted the analysis
};

struct hd_error {
	enum hd_error_code code;
	int errnum;        // errno for HD_ERROR_OS, else 0
	bool has_address;  // address is meaningful
	uint64_t address;  // faulting or offending address
	char *path;        // file concerned, or NULL
	char *message;     // one line a user can act on
	bool is_static;    // preallocated, destroy is a no-op
};

// Preallocated error for out-of-memory paths that must not allocate.
HD_EXPORT extern struct hd_error hd_error_no_memory;

// Creates an error with a printf-style message.
HD_EXPORT struct hd_error *hd_error_create(enum hd_error_code code,
					   const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
// Creates an error with a fixed message (for bindings that cannot call
// variadic functions); has_address is set when address is not 0.
HD_EXPORT struct hd_error *hd_error_new(enum hd_error_code code,
					uint64_t address, const char *message);
// Creates an HD_ERROR_OS error: "PATH: MESSAGE: strerror(errnum)".
HD_EXPORT struct hd_error *hd_error_os(int errnum, const char *path,
				       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
// Creates an error about a file: "PATH: MESSAGE".
HD_EXPORT struct hd_error *hd_error_file(enum hd_error_code code,
					 const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
// Creates an error about an address: "MESSAGE" (address kept separately).
HD_EXPORT struct hd_error *hd_error_at(enum hd_error_code code,
				       uint64_t address, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
// Adds context in front of the message: "PREFIX: old message".
HD_EXPORT struct hd_error *hd_error_prefix(struct hd_error *err,
					   const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
HD_EXPORT void hd_error_destroy(struct hd_error *err);

// ---------------------------------------------------------------- target

enum { HD_PROT_READ = 1, HD_PROT_WRITE = 2, HD_PROT_EXEC = 4 };

// One range of the address space.
struct hd_mapping {
	uint64_t start, end;  // [start, end)
	uint64_t file_offset; // offset in path, if file-backed
	uint32_t prot;        // HD_PROT_*
	char *path;           // backing file, "[heap]"/"[stack]" (live), or NULL
	// Memory of this range can be read (in the core, from the backing
	// file, or from the live process). False for ranges a core omits.
	bool readable;
};

// x86-64 general registers in the kernel's user_regs_struct order.
struct hd_regs {
	uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	uint64_t rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags;
	uint64_t rsp, ss, fs_base, gs_base, ds, es, fs, gs;
};

struct hd_thread {
	int tid;
	bool has_regs;
	struct hd_regs regs;
};

// A stack frame a debugger knows: its stack bytes are [sp, caller_sp).
// name says which frame it is ("#1 worker (fixture.c:42)"). A local
// variable is given the same way with local set, [sp, caller_sp) being the
// variable's bytes, level its frame's and name the variable's ("cache");
// its root is named "thread TID #1 worker (fixture.c:42) local cache".
// Locals are added before frames so they take their bytes first.
struct hd_frame {
	int tid;
	unsigned level;
	uint64_t sp, caller_sp;
	char *name;
	bool local;
	// A local's type as the debugger prints it ("struct cache *"), or
	// NULL: typed locals type the blocks they point at.
	char *type_name;
};

// A loaded ELF object (executable or shared library).
struct hd_module {
	char *name;        // path as the target knows it
	char *file;        // path on this machine (sysroot applied), or NULL
	uint64_t bias;     // load address minus link-time address
	uint64_t start, end; // lowest and highest mapped address
	uint8_t build_id[64];
	size_t build_id_len; // 0 when unknown
	bool is_exe;
};

struct hd_target;

struct hd_target_options {
	const char *exe;     // executable override (--exe), or NULL
	const char *sysroot; // prefix for module paths (--sysroot), or NULL
};

// Opens an ELF core file. Checks that it is an x86-64 ELF core and that
// the executable (found from the core's notes or opts->exe) matches.
HD_EXPORT struct hd_error *
hd_target_open_core(const char *path, const struct hd_target_options *opts,
		    struct hd_target **ret);

// Stops every thread of process pid (ptrace seize + interrupt) and reads
// it through /proc/pid/mem. hd_target_destroy() lets the process go.
HD_EXPORT struct hd_error *
hd_target_attach_pid(int pid, const struct hd_target_options *opts,
		     struct hd_target **ret);

// Memory reader supplied by an embedding program (a debugger front-end).
// Must fill buf completely or return an error (hd_error_at HD_ERROR_FAULT).
typedef struct hd_error *(*hd_read_fn)(void *arg, uint64_t addr, void *buf,
				       size_t len);

// Opens a process that a debugger has already stopped (no ptrace here):
// mappings, auxiliary vector and modules from /proc/PID, memory from
// /proc/PID/mem (read-only). Threads come from the debugger through
// hd_target_add_thread.
HD_EXPORT struct hd_error *
hd_target_open_proc(int pid, const struct hd_target_options *opts,
		    struct hd_target **ret);

// Creates a target whose memory comes from read(arg, ...). The embedder
// then describes the address space with hd_target_add_mapping/thread/module.
HD_EXPORT struct hd_error *hd_target_create_callback(hd_read_fn read,
						     void *arg,
						     struct hd_target **ret);
HD_EXPORT struct hd_error *hd_target_add_mapping(struct hd_target *t,
						 const struct hd_mapping *m);
HD_EXPORT struct hd_error *hd_target_add_thread(struct hd_target *t,
						const struct hd_thread *th);
// Adds a stack frame of a thread (front-ends that know frames): the stack
// root of that thread is then split per frame. Strings are copied.
HD_EXPORT struct hd_error *hd_target_add_frame(struct hd_target *t,
					       const struct hd_frame *f);
HD_EXPORT size_t hd_target_num_frames(const struct hd_target *t);
HD_EXPORT const struct hd_frame *hd_target_frame(const struct hd_target *t,
						 size_t i);
// Finds the modules (ELF files mapped at offset 0) of the mappings added so
// far, with their load bias and build-id.
HD_EXPORT struct hd_error *hd_target_discover_modules(struct hd_target *t);
// Points module i at a file the front-end found for it (a debugger's
// solib-search-path); the file's build-id must match the module's.
HD_EXPORT struct hd_error *hd_target_set_module_file(struct hd_target *t,
						     size_t i, const char *file);
// Adds a module; bias, start and end are required, file may be NULL (then
// name is used), build_id_len may be 0 (then it is read from the file).
HD_EXPORT struct hd_error *hd_target_add_module(struct hd_target *t,
						const struct hd_module *m);

// Detaches every thread of every live target so the processes run again.
// Async-signal-safe: for a front-end's SIGINT/SIGTERM handler.
HD_EXPORT void hd_live_release_all(void);

// Releases the target; a live process is resumed and detached.
HD_EXPORT void hd_target_destroy(struct hd_target *t);

// Renames a target (how reports name it: a core path, "pid N").
HD_EXPORT struct hd_error *hd_target_set_name(struct hd_target *t,
					      const char *name);
// What the target could not give, one line each for people: the
// executable or libraries not found or of another build (and what is lost
// without them). hd_target_warning's string lives until the next call of
// hd_target_num_warnings.
HD_EXPORT size_t hd_target_num_warnings(struct hd_target *t);
HD_EXPORT const char *hd_target_warning(const struct hd_target *t, size_t i);
// A core file shorter than its program headers say: the bytes it has and
// should have, the lowest missing address range, and how many ranges and
// bytes of memory are missing in all.
struct hd_truncation {
	uint64_t file_size, expected_size;
	uint64_t first_start, first_end;
	size_t num_ranges;
	uint64_t missing_bytes;
};
// True (and *ret filled) if the target is a truncated core.
HD_EXPORT bool hd_target_truncation(const struct hd_target *t,
				    struct hd_truncation *ret);

// "core", "live" or "callback".
HD_EXPORT const char *hd_target_kind(const struct hd_target *t);
// Core path, "pid N", or "callback".
HD_EXPORT const char *hd_target_name(const struct hd_target *t);

// Reads len bytes at addr; HD_ERROR_FAULT naming the first missing address
// if any byte is unavailable (never zero-filled).
HD_EXPORT struct hd_error *hd_target_read(struct hd_target *t, uint64_t addr,
					  void *buf, size_t len);
HD_EXPORT struct hd_error *hd_target_read_u64(struct hd_target *t,
					      uint64_t addr, uint64_t *ret);

HD_EXPORT size_t hd_target_num_mappings(const struct hd_target *t);
HD_EXPORT const struct hd_mapping *
hd_target_mapping(const struct hd_target *t, size_t i);
// The mapping containing addr, or NULL. Mappings are sorted by address.
HD_EXPORT const struct hd_mapping *
hd_target_find_mapping(const struct hd_target *t, uint64_t addr);
HD_EXPORT size_t hd_target_num_threads(const struct hd_target *t);
HD_EXPORT const struct hd_thread *hd_target_thread(const struct hd_target *t,
						   size_t i);
HD_EXPORT size_t hd_target_num_modules(const struct hd_target *t);
HD_EXPORT const struct hd_module *hd_target_module(const struct hd_target *t,
						   size_t i);
// The module whose [start, end) contains addr, or NULL.
HD_EXPORT const struct hd_module *
hd_target_find_module(const struct hd_target *t, uint64_t addr);
// Looks up an auxiliary vector entry (AT_*); false if absent.
HD_EXPORT bool hd_target_auxv(const struct hd_target *t, uint64_t type,
			      uint64_t *ret);

// A range of target addresses [start, end).
struct hd_extent {
	uint64_t start, end;
};

// A contiguous window of target memory: zero-copy into a core file where
// possible, a private copy otherwise. Memory that was never populated (a
// page the process never touched, a hole of a sparse core file) is not
// read: it holds zeros, which data has there too, and the extents say
// where it lies so that loops over a whole window skip it
// (hd_view_next_data). No verdict can depend on those zeros: they are no
// pointer and no chunk header.
struct hd_view {
	const uint8_t *data;
	uint64_t addr;
	size_t len;
	void *owned; // buffer to free, or NULL
	// With sparse set, the only parts of the window that may hold nonzero
	// bytes (sorted, disjoint, inside the window); without it, all of it.
	bool sparse;
	struct hd_extent *extents;
	size_t num_extents;
	size_t owned_map; // owned was mmap'd with this length (0: malloc'd)
};
HD_EXPORT struct hd_error *hd_target_view(struct hd_target *t, uint64_t addr,
					  size_t len, struct hd_view *ret);
HD_EXPORT void hd_view_deinit(struct hd_view *view);
// The first part of [addr, end) at or after addr that may hold nonzero
// bytes, as [*lo, *hi); false when the rest of the range is never-populated
// zeros. addr and end lie in the view.
// Says the caller is done, for now, with the target's bytes [addr, addr +
// len): a core's pages there, mapped from its file, are given back, so
// that a pass over a heap larger than memory counts only a window of it
// toward the process's RSS. Views and pointers stay valid (their bytes
// are read from the file again when touched). No effect on other targets.
HD_EXPORT void hd_target_release(struct hd_target *t, uint64_t addr,
				 uint64_t len);
HD_EXPORT bool hd_view_next_data(const struct hd_view *v, uint64_t addr,
				 uint64_t end, uint64_t *lo, uint64_t *hi);

// Where target memory may hold nonzero bytes. For a process on this
// machine (live or proc targets, or a callback target given its pid with
// hd_target_set_local_pid) pages of private anonymous mappings that
// /proc/PID/pagemap shows neither present nor swapped were never touched
// (or were discarded) and read as zeros; for a core, holes of the file
// (SEEK_HOLE) inside the segments it holds. Everything else counts as
// data. HEAPDOM_SPARSE=0 in the environment turns this off (every byte is
// read), for comparison. *ret (free() it) lists [addr, addr + len)'s data
// extents in order.
HD_EXPORT struct hd_error *hd_target_data_extents(struct hd_target *t,
						  uint64_t addr, uint64_t len,
						  struct hd_extent **ret,
						  size_t *num);
// A callback target whose memory is that of process pid on this machine
// (a debugger's local inferior): its pagemap tells which pages were never
// touched, whoever reads the memory. Without access to the pagemap
// (another user, a container without ptrace rights) nothing is skipped.
HD_EXPORT struct hd_error *hd_target_set_local_pid(struct hd_target *t,
						   int pid);
// A callback target whose memory a debugger in this process reads from a
// core file it loaded (lldb 14's API does not say which): the core is
// found among the files this process maps from their start or holds open
// (/proc/self/maps, /proc/self/fd), as the one ELF core whose threads are
// the target's (ids, PC, stack pointer and the bytes there) and whose
// memory lies in the target's mappings; its holes are then not read. When
// none or two match, nothing is skipped and hd_target_sparse_source says
// why. Call it once the target's mappings and threads are described.
HD_EXPORT struct hd_error *hd_target_use_loaded_core(struct hd_target *t);
// How the target finds never-populated memory: "pagemap", "core holes",
// "off" (HEAPDOM_SPARSE=0), or why it cannot ("none: ..."); and the bytes
// of its readable mappings known never populated (computed once).
HD_EXPORT const char *hd_target_sparse_source(struct hd_target *t);
// Why a process target can no longer be read, or NULL: it exited (was
// killed) or executed another program during the analysis. Set by the
// first read that fails for that reason; the session's stages then fail
// with it rather than report from memory they could not read.
HD_EXPORT const char *hd_target_lost(const struct hd_target *t);
HD_EXPORT uint64_t hd_target_unpopulated_bytes(struct hd_target *t);

// ------------------------------------------------------------- debuginfo

struct hd_debuginfo;

struct hd_debuginfo_options {
	// Directory searched for separate debug files (build-id and
	// debuglink); NULL means /usr/lib/debug. An empty directory disables
	// separate debug info.
	const char *debug_dir;
};

HD_EXPORT struct hd_error *
hd_debuginfo_create(struct hd_target *t, const struct hd_debuginfo_options *o,
		    struct hd_debuginfo **ret);
HD_EXPORT void hd_debuginfo_destroy(struct hd_debuginfo *di);

// Finds a symbol (local or global, from .symtab of the module or its debug
// file, or .dynsym) in any module, returns its run-time address and size.
// module_hint, if not NULL, restricts the search to modules whose file name
// starts with it (e.g. "libc.so").
HD_EXPORT struct hd_error *hd_debuginfo_find_symbol(struct hd_debuginfo *di,
						    const char *module_hint,
						    const char *name,
						    uint64_t *addr,
						    uint64_t *size);

// Path of the separate debug file used for a module, or NULL.
HD_EXPORT const char *hd_debuginfo_debug_file(struct hd_debuginfo *di,
					      const struct hd_module *m);

// Layout of a struct (or typedef of a struct) as DWARF describes it.
struct hd_member_layout {
	char *name;
	uint64_t offset; // byte offset in the struct
	uint64_t size;   // total bytes (whole array for arrays)
	uint64_t count;  // elements if an array, else 0
};
struct hd_struct_layout {
	char *name;
	uint64_t size;
	size_t num_members;
	struct hd_member_layout *members;
};
HD_EXPORT void hd_struct_layout_deinit(struct hd_struct_layout *l);
// The member called name, or NULL.
HD_EXPORT const struct hd_member_layout *
hd_struct_layout_member(const struct hd_struct_layout *l, const char *name);

// Reads the layouts of the named structs (struct tags or typedef names)
// from the DWARF of module m (its separate debug file, else itself), looking
// only in compilation units whose name ends in cu_suffix (NULL: all).
// ret[i].size == 0 for a struct that was not found. HD_ERROR_NOT_FOUND if
// the module has no DWARF at all.
HD_EXPORT struct hd_error *
hd_debuginfo_struct_layouts(struct hd_debuginfo *di, const struct hd_module *m,
			    const char *cu_suffix, const char *const *names,
			    size_t n, struct hd_struct_layout *ret);

// Where a code address is: the function (from ELF symbols, demangled), and
// the source file and line (from the module's DWARF line table), when known.
struct hd_location {
	const char *module;   // module file name (basename)
	const char *function; // "main", "Session::add(int)", or NULL
	uint64_t offset;      // addr - function start (0 if no function)
	const char *file;     // "src/fixture.c" as DWARF names it, or NULL
	unsigned line;        // 0 if unknown
};
// Fills *ret for addr; strings live as long as di. For a return address
// pass addr - 1 (the call instruction), which the caller decides.
// HD_ERROR_NOT_FOUND if addr is in no module. A file is named relative to
// its unit's compilation directory when it lies under it ("malloc.c",
// "../src/a.c"), else by its absolute path. A module's line table (from
// its separate debug file, else itself) and symbols are read on first
// use and kept; a module whose DWARF is missing or unreadable still gets
// its function names. Not thread-safe (as the rest of hd_debuginfo).
HD_EXPORT struct hd_error *hd_debuginfo_locate(struct hd_debuginfo *di,
					       uint64_t addr,
					       struct hd_location *ret);

// ------------------------------------------------------------------ heap
//
// One block table for every allocator: each backend (core/heap/<allocator>/,
// docs/allocators.md) whose allocator the process uses fills its part,
// and the parts are merged in address order (several allocators in one
// process: glibc's malloc and a pool allocator of the program's own). The names an
// allocator gives its own structures (lists, regions, facts) are strings
// the backend declares, so nothing here is one allocator's.

enum hd_block_state {
	HD_STATE_USED = 0,     // allocated by the application
	HD_STATE_FREE = 1,     // held free by the allocator (see list)
	HD_STATE_INTERNAL = 2, // allocator bookkeeping inside its heap
};

HD_EXPORT const char *hd_block_state_name(enum hd_block_state s);

#define HD_NO_REGION UINT32_MAX
// Allocators one heap holds at most.
#define HD_MAX_ALLOCATORS 8

struct hd_block {
	uint64_t addr;    // the pointer the allocator returned
	uint64_t start;   // where the block's extent starts: its header if it
			  // has one (glibc: addr - 16), else addr
	uint64_t extent;  // bytes from start the block takes, header included
			  // (glibc: the chunk size)
	uint64_t usable;  // what malloc_usable_size would say
	enum hd_block_state state;
	unsigned list;    // for HD_STATE_FREE: index of hd_heap_free_list, else 0
	const char *list_name; // that list's name for a free block, else NULL
	uint32_t region;  // index of hd_heap_region, HD_NO_REGION for a block
			  // in a mapping of its own (glibc's mmapped chunks)
	bool mmapped;     // region == HD_NO_REGION
	unsigned allocator; // index of hd_heap_allocator_info
};

// A free list, bin or bitmap state as the allocator names it.
struct hd_free_list {
	const char *name;  // "tcache", "fastbin", "top"; "none" for index 0
	const char *label; // its group in semantic reports ("free: fastbins")
	// Memory the allocator holds but has not carved into blocks (glibc's
	// top chunk): not counted among free blocks.
	bool reserve;
};

// A part of the heap the allocator manages as one: glibc's arenas,
// jemalloc's arenas, mimalloc's heaps, mallocng's groups.
struct hd_region {
	uint64_t addr;         // its state's address
	const char *kind;      // "arena"
	bool primary;          // the first one (glibc's main arena)
	uint64_t system_bytes; // memory it got from the system (glibc system_mem)
	size_t num_segments;   // its segments
	unsigned allocator;    // its allocator (set by the walk, not the backend)
};

// A range of memory the allocator owns and its blocks tile: a heap of an
// arena (from its heap_info or brk start to its end) or one mmapped
// chunk's mapping.
struct hd_heap_segment {
	uint64_t start, end;
	uint32_t region; // HD_NO_REGION for a block in a mapping of its own
	bool mmapped;
	unsigned allocator;
};

// Allocator bookkeeping outside every block (glibc's main_arena and mp_,
// heap_info headers; jemalloc's base allocations): never a root.
struct hd_heap_metadata {
	uint64_t start, end;
	const char *name;  // what it is: "struct malloc_state (main_arena)"
	uint32_t region;   // its region, or HD_NO_REGION
	unsigned allocator;
};

// One thing the backend found, for reports to print without knowing it:
// of the allocator (region HD_NO_REGION) or of one region.
enum hd_fact_kind { HD_FACT_BOOL, HD_FACT_UINT, HD_FACT_ADDR, HD_FACT_STRING };
struct hd_fact {
	const char *key;   // "safe_linking", "top"
	enum hd_fact_kind kind;
	uint64_t value;    // bool, number or address
	const char *string; // for HD_FACT_STRING
	uint32_t region;
	unsigned allocator; // whose fact (the allocator's own: region HD_NO_REGION)
};

// A problem found in the heap metadata; the walk continues around it.
struct hd_heap_problem {
	uint64_t address;
	char *message;
};

struct hd_heap_options {
	// Use the allocator's symbols/DWARF when present (true) or discover
	// everything from the heap data alone (false).
	bool use_debuginfo;
	// "poolalloc" or "glibc,poolalloc": walk these backends only, each
	// of which must find its heap; NULL: every backend that detects its
	// allocator in the process.
	const char *allocators;
};

struct hd_heap;

// Detects the allocators (every backend in turn, glibc's last), walks the
// heap of each one the process uses and merges them into one table. A damaged heap still yields a heap object with problems
// recorded; an allocator never initialised yields an empty heap with
// no_allocation_yet. An error means no heap could be found at all, or
// (HD_ERROR_UNSUPPORTED) the process allocates with an allocator heapdom
// does not walk, named in the message.
HD_EXPORT struct hd_error *hd_heap_walk(struct hd_target *t,
					struct hd_debuginfo *di,
					const struct hd_heap_options *opts,
					struct hd_heap **ret);
HD_EXPORT void hd_heap_destroy(struct hd_heap *h);
// Checks a --allocator list ("glibc,poolalloc") against the backends:
// an error naming the known ones for a name that is none of them.
HD_EXPORT struct hd_error *hd_heap_check_allocators(const char *names);
// The backends' names, comma-separated ("poolalloc, glibc").
HD_EXPORT const char *hd_heap_known_allocators(void);

// Blocks are sorted by address with dense ids 0..n-1.
HD_EXPORT size_t hd_heap_num_blocks(const struct hd_heap *h);
HD_EXPORT void hd_heap_block(const struct hd_heap *h, size_t id,
			     struct hd_block *ret);
// Id of the block whose usable bytes [addr, addr+usable) hold p, or -1.
// Usable bytes may reach past the extent into the next one's header
// (glibc's prev_size word): an address there belongs to this block, and
// the rest of that header to none.
HD_EXPORT int64_t hd_heap_find(const struct hd_heap *h, uint64_t p);
// The allocator's own name for block id if it keeps it (internal or
// free: "struct tcache_perthread_struct", "free chunk"), else NULL.
HD_EXPORT const char *hd_heap_block_label(const struct hd_heap *h, size_t id);

// Free lists: index 0 is "none" (the list of blocks that are not free).
HD_EXPORT size_t hd_heap_num_free_lists(const struct hd_heap *h);
HD_EXPORT const struct hd_free_list *hd_heap_free_list(const struct hd_heap *h,
						       size_t i);
HD_EXPORT size_t hd_heap_num_regions(const struct hd_heap *h);
HD_EXPORT const struct hd_region *hd_heap_region(const struct hd_heap *h,
						 size_t i);
HD_EXPORT size_t hd_heap_num_segments(const struct hd_heap *h);
HD_EXPORT const struct hd_heap_segment *
hd_heap_segment(const struct hd_heap *h, size_t i);
HD_EXPORT size_t hd_heap_num_metadata(const struct hd_heap *h);
HD_EXPORT const struct hd_heap_metadata *
hd_heap_metadata(const struct hd_heap *h, size_t i);
HD_EXPORT size_t hd_heap_num_facts(const struct hd_heap *h);
HD_EXPORT const struct hd_fact *hd_heap_fact(const struct hd_heap *h,
					     size_t i);

// Bytes allocated for the block table (for benchmarks).
HD_EXPORT size_t hd_heap_table_bytes(const struct hd_heap *h);

HD_EXPORT size_t hd_heap_num_problems(const struct hd_heap *h);
HD_EXPORT const struct hd_heap_problem *
hd_heap_problem(const struct hd_heap *h, size_t i);
// True if problems were found, or another allocator's blocks are not
// seen: some verdicts may be missing.
HD_EXPORT bool hd_heap_partial(const struct hd_heap *h);

// The allocator's node and groups in semantic reports.
struct hd_allocator_labels {
	const char *allocator; // "glibc malloc"
	const char *metadata;  // "arena state and heap headers"
	const char *internal;  // "tcache structures and fenceposts"
	const char *free;      // "free chunks"
	const char *free_block; // a free block's type name: "free chunk"
};

// Which allocator the heap is and how the walk found it.
struct hd_heap_info {
	const char *allocator; // the backend: "glibc"
	const char *version;   // "2.36", "2.27-2.28", or NULL when the walk could not tell
	const char *method;    // "debuginfo" or "heuristic"
	struct hd_allocator_labels labels;
	// The allocator was never initialised (nothing allocated yet, e.g.
	// at the first instruction of main): no blocks, and none missing.
	bool no_allocation_yet;
	// Why the heap is empty then, in the allocator's words, or NULL.
	const char *empty_reason;
	// An allocator heapdom does not walk that the process also uses
	// ("jemalloc (libjemalloc.so.2)"), or NULL; its blocks are not seen,
	// so every verdict is partial.
	const char *other_allocator;
	// How the version was decided ("layout from libc's DWARF; 2.36 from
	// libc's version banner"; docs/glibc-versions.md), or NULL.
	const char *version_source;
	// What its detection found ("symbol poolalloc_pools"), or NULL.
	const char *evidence;
	// Backends that detected their allocator but were not walked because
	// --allocator left them out ("glibc, poolalloc"), and why
	// ("--allocator jemalloc"), or NULL (hd_heap_get_info only).
	const char *skipped;
	const char *skipped_why;
};
// The heap's primary allocator (the one whose used blocks hold the most
// bytes; docs/json-format.md), with the heap's other_allocator/skipped.
HD_EXPORT void hd_heap_get_info(const struct hd_heap *h,
				struct hd_heap_info *ret);

// Every allocator walked, the primary first (index 0): a block's, region's,
// fact's, metadata's and segment's `allocator` index these.
HD_EXPORT size_t hd_heap_num_allocators(const struct hd_heap *h);
HD_EXPORT void hd_heap_allocator_info(const struct hd_heap *h, size_t i,
				      struct hd_heap_info *ret);
// Totals of allocator i's blocks, extents counted (header included).
struct hd_allocator_totals {
	uint64_t used_blocks, used_bytes;
	uint64_t free_blocks, free_bytes;       // reserve lists apart
	uint64_t reserve_blocks, reserve_bytes; // glibc's top chunks
	uint64_t internal_blocks, internal_bytes;
	uint64_t usable; // usable bytes of its used blocks
};
HD_EXPORT void hd_heap_allocator_totals(const struct hd_heap *h, size_t i,
					struct hd_allocator_totals *ret);
// Its free lists: the heap's lists first .. first + n - 1 (first >= 1).
HD_EXPORT void hd_heap_allocator_lists(const struct hd_heap *h, size_t i,
				       size_t *first, size_t *n);

// ----------------------------------------------------------------- graph

// What holds memory: every root is named so a user knows what it is.
enum hd_root_kind {
	HD_ROOT_GLOBAL,    // a global or static variable: "module:variable"
	HD_ROOT_REGION,    // writable memory with no symbol: "module:.bss+0x40"
	HD_ROOT_REGISTERS, // a thread's registers: "thread 1234 registers"
	HD_ROOT_STACK,     // a thread's live stack: "thread 1234 stack"
	HD_ROOT_FRAME,     // one stack frame, when frames are known
	HD_ROOT_TLS,       // a thread's TLS block and thread descriptor
	HD_ROOT_LOCAL,     // a local variable a debugger knows: "main: cache"
};
HD_EXPORT const char *hd_root_kind_name(enum hd_root_kind k);

// Root precedence (docs/ownership.md): how strongly a root owns what it
// points at, 0 strongest. 0 static data (globals, a module's unnamed data,
// other writable mappings), 1 TLS, 2 local variables a debugger or the
// unwinder typed, 3 untyped stack words (frames, "thread N stack"),
// 4 registers. A root that points into memory a stronger root reaches
// only borrows it: a register copy of g_cache is not an owner.
#define HD_ROOT_RANKS 5
HD_EXPORT unsigned hd_root_rank(enum hd_root_kind k);
HD_EXPORT const char *hd_root_rank_name(unsigned rank);

struct hd_root {
	char *name;
	enum hd_root_kind kind;
	uint64_t start, end; // scanned range (empty for registers)
	int tid;             // thread roots, else 0
};

// The object graph: vertex 0 is a virtual super-root, vertices 1..R the
// named roots, then one vertex per block (block id + R + 1). Edges go from
// a root or used block to the used blocks its aligned words point into.
struct hd_graph;

HD_EXPORT struct hd_error *hd_graph_build(struct hd_target *t,
					  struct hd_debuginfo *di,
					  const struct hd_heap *h,
					  struct hd_graph **ret);
HD_EXPORT void hd_graph_destroy(struct hd_graph *g);

HD_EXPORT size_t hd_graph_num_roots(const struct hd_graph *g);
HD_EXPORT const struct hd_root *hd_graph_root(const struct hd_graph *g,
					      size_t i);
HD_EXPORT uint32_t hd_graph_num_vertices(const struct hd_graph *g);
HD_EXPORT uint64_t hd_graph_num_edges(const struct hd_graph *g);
// Vertex of root i / of block id, and back (-1 if not that kind).
HD_EXPORT uint32_t hd_graph_root_vertex(const struct hd_graph *g, size_t i);
HD_EXPORT uint32_t hd_graph_block_vertex(const struct hd_graph *g, size_t id);
HD_EXPORT int64_t hd_graph_vertex_root(const struct hd_graph *g, uint32_t v);
HD_EXPORT int64_t hd_graph_vertex_block(const struct hd_graph *g, uint32_t v);
// Successors of v: targets[i] & HD_GRAPH_INTERIOR marks a pointer into the
// middle of the target block.
#define HD_GRAPH_INTERIOR 0x80000000u
HD_EXPORT void hd_graph_successors(const struct hd_graph *g, uint32_t v,
				   const uint32_t **targets, size_t *n);
// Predecessors of v (flags dropped). The reverse graph is built on the
// first call and kept with the graph; should memory run out for it, v is
// reported without predecessors.
HD_EXPORT void hd_graph_predecessors(const struct hd_graph *g, uint32_t v,
				     const uint32_t **sources, size_t *n);
// Edge counts of the conservative scan, and bytes the graph uses.
struct hd_graph_info {
	uint64_t words_scanned;
	uint64_t edges;
	uint64_t interior_edges;
	uint64_t typed_edges;        // found through pointer-typed members
	uint64_t conservative_edges; // found by scanning words of any type
	size_t unreadable_roots; // roots whose memory the target lacks
	size_t bytes;
	// Words of roots and used blocks never populated (hd_view): known
	// zeros, not scanned.
	uint64_t words_skipped;
	// Of bytes, those per edge: 4 (forward), 8 once the reverse graph is
	// built (only reports that follow references backwards build it).
	unsigned bytes_per_edge;
};
HD_EXPORT void hd_graph_get_info(const struct hd_graph *g,
				 struct hd_graph_info *ret);

// ------------------------------------------------------------ typing

// Types of heap blocks from the programs' DWARF: propagated from typed
// roots (globals, typed locals) through pointer members, and C++ classes
// from vtable pointers. Typed blocks are scanned precisely.
struct hd_typing;

struct hd_typing_info {
	size_t modules_indexed;    // modules whose DWARF was read
	size_t types_indexed;
	double index_seconds;      // building the type indexes (sum per module)
	double index_wait_seconds; // of that, waited for (the rest ran in the
				   // background during the heap walk, or was
				   // cached from an earlier session)
	double propagate_seconds;  // vtables + propagation
	unsigned propagate_threads; // the most a level was followed on
	uint64_t typed_blocks;
	uint64_t vtable_blocks;    // typed by their vtable pointer
	uint64_t ambiguous_blocks; // reached with conflicting types
	size_t bytes;              // kept per session (the indexes are shared)
};
HD_EXPORT void hd_typing_get_info(const struct hd_typing *ty,
				  struct hd_typing_info *ret);
// The type of block id as people read it: "struct entry", "Session",
// "struct entry[4]"; for an untyped block `char[] "text…"` when it holds a
// string, else "unk<SIZE>". Returns whether the block is typed.
HD_EXPORT bool hd_typing_block_name(const struct hd_typing *ty, size_t id,
				    char *buf, size_t len);
// The member of block id at byte offset: "buckets[17]", "next", or "+0x18".
HD_EXPORT void hd_typing_block_member(const struct hd_typing *ty, size_t id,
				      uint64_t offset, char *buf, size_t len);
// For an address inside a typed global variable: its type's name and the
// member path at that address ("struct cache", "buckets[17]").
HD_EXPORT bool hd_typing_global_member(const struct hd_typing *ty,
				       uint64_t addr, char *type, size_t tlen,
				       char *path, size_t plen);

// ------------------------------------------------------------ dominators

// The dominator ("keep-alive") tree over the graph's vertices: v's
// immediate dominator is the vertex every path from the super-root to v
// passes through last. Retained size of v = chunk bytes of every block v
// dominates, v included.
struct hd_dom;

HD_EXPORT struct hd_error *hd_dom_compute(const struct hd_graph *g,
					  const struct hd_heap *h,
					  struct hd_dom **ret);
HD_EXPORT void hd_dom_destroy(struct hd_dom *d);
// Immediate dominator of v, HD_DOM_NONE if v is unreachable (a leak).
#define HD_DOM_NONE UINT32_MAX
HD_EXPORT uint32_t hd_dom_idom(const struct hd_dom *d, uint32_t v);
HD_EXPORT uint64_t hd_dom_retained(const struct hd_dom *d, uint32_t v);
HD_EXPORT uint32_t hd_dom_retained_blocks(const struct hd_dom *d, uint32_t v);
// Children of v in the dominator tree, largest retained first.
HD_EXPORT void hd_dom_children(const struct hd_dom *d, uint32_t v,
			       const uint32_t **children, size_t *n);
// Leaked blocks (used, unreachable from every root) form their own forest:
// these give a leaked block's dominator and retained size within it.
HD_EXPORT uint32_t hd_dom_leak_idom(const struct hd_dom *d, uint32_t v);
HD_EXPORT uint64_t hd_dom_leak_retained(const struct hd_dom *d, uint32_t v);
HD_EXPORT uint32_t hd_dom_leak_retained_blocks(const struct hd_dom *d,
					       uint32_t v);
HD_EXPORT size_t hd_dom_bytes(const struct hd_dom *d);

// Which ownership a tree shows (docs/ownership.md). hd_dom_compute gives
// the ranked view.
enum hd_dom_view {
	// Root precedence (hd_root_rank): a reference from a weaker root,
	// or from memory only weaker roots reach, into memory a stronger
	// root reaches is borrowed and does not split ownership.
	HD_DOM_RANKED,
	// The exact dominator tree of the graph, every reference counted.
	HD_DOM_PLAIN,
};
HD_EXPORT struct hd_error *hd_dom_compute_view(const struct hd_graph *g,
					       const struct hd_heap *h,
					       enum hd_dom_view view,
					       struct hd_dom **ret);
HD_EXPORT enum hd_dom_view hd_dom_get_view(const struct hd_dom *d);

// The top-level holders partition the used blocks: every used block is
// under exactly one, and their retained sizes add up to the used heap.
enum hd_holder_kind {
	HD_HOLDER_ROOT,  // one root (all roots of that name) dominates them
	HD_HOLDER_JOINT, // several roots reach them, none alone: grouped by
			 // the set of roots that reach them
	HD_HOLDER_BLOCK, // a leaked block no other leaked block dominates
};
struct hd_holder {
	enum hd_holder_kind kind;
	// Root class (hd_root_rank) of the root or of a joint group's
	// strongest member; HD_ROOT_RANKS for a leaked block.
	unsigned rank;
	// ROOT: the indices of the roots of its name; JOINT: one root index
	// per member name, strongest class first, then by name.
	const uint32_t *roots;
	size_t num_roots;
	// ROOT: its num_roots root vertices, then the blocks that only roots
	// of its name reach and none alone dominates (a global split in
	// parts); JOINT: the blocks held jointly, largest retained first;
	// BLOCK: the leaked block.
	const uint32_t *vertices;
	size_t num_vertices;
	uint64_t retained;        // chunk bytes
	uint64_t retained_blocks;
	// JOINT: more roots reach these blocks than are listed (the set was
	// capped at HD_HOLDER_MAX_MEMBERS names).
	bool overflow;
};
#define HD_HOLDER_MAX_MEMBERS 256
HD_EXPORT size_t hd_dom_num_holders(const struct hd_dom *d);
// Holder i, largest retained first.
HD_EXPORT const struct hd_holder *hd_dom_holder(const struct hd_dom *d,
						size_t i);

// --------------------------------------------------------------- session

// One analysis of one stop or one core: owns the stages' results, computes
// each on first use, so repeated commands at one stop are free.
struct hd_session;

struct hd_session_options {
	struct hd_debuginfo_options debug;
	bool no_libc_debuginfo; // find the heap from the data alone
	bool untyped;           // no DWARF typing: scan every block conservatively
	// Walk these allocators only (hd_heap_options.allocators), or NULL.
	const char *allocators;
	// Threads the analysis may use (--jobs; 0: HEAPDOM_JOBS from the
	// environment, else one per CPU, at most 8). Results do not depend
	// on it.
	unsigned threads;
};

// Takes ownership of t.
HD_EXPORT struct hd_error *
hd_session_create(struct hd_target *t, const struct hd_session_options *o,
		  struct hd_session **ret);
HD_EXPORT void hd_session_destroy(struct hd_session *s);
HD_EXPORT struct hd_target *hd_session_target(struct hd_session *s);
HD_EXPORT struct hd_debuginfo *hd_session_debuginfo(struct hd_session *s);
HD_EXPORT struct hd_error *hd_session_heap(struct hd_session *s,
					   const struct hd_heap **ret);
// Walks these allocators from now on ("glibc,poolalloc"; NULL: the
// session's options' choice): when that changes the choice, the heap and
// every stage after it are computed again on next use.
HD_EXPORT struct hd_error *hd_session_select_allocators(struct hd_session *s,
							const char *names);
HD_EXPORT struct hd_error *hd_session_graph(struct hd_session *s,
					    const struct hd_graph **ret);
HD_EXPORT struct hd_error *hd_session_dom(struct hd_session *s,
					  const struct hd_dom **ret);
// The same in a given view (the default is HD_DOM_RANKED).
HD_EXPORT struct hd_error *hd_session_dom_view(struct hd_session *s,
					       enum hd_dom_view view,
					       const struct hd_dom **ret);
// Starts reading the modules' DWARF in the background, for a report that
// will need block types (call before the heap walk to overlap them). The
// thread ends when typing is computed or the session is destroyed.
HD_EXPORT void hd_session_prepare_types(struct hd_session *s);
// Starts reading the DWARF types of the ELF file at path (its separate
// debug file, looked for in debug_dir as a session with that debug_dir
// looks: NULL for /usr/lib/debug) on a thread of the library, for the
// sessions to come: a debugger front-end calls it as the debugger loads
// each module, so that the first report at a stop does not wait for
// libc's DWARF. Does nothing for a file without DWARF or already read;
// never fails (a session reads what this did not).
HD_EXPORT void hd_prefetch_types(const char *path, const char *debug_dir);
// Block types; *ret is NULL when the session was made with untyped.
HD_EXPORT struct hd_error *hd_session_typing(struct hd_session *s,
					     const struct hd_typing **ret);
// Seconds spent in each stage so far (0 if not run).
// Seconds the semantic tree took (framework modules, its graph and
// dominators), 0 if not computed.
HD_EXPORT double hd_session_semantic_seconds(const struct hd_session *s);
// One line, for --profile, on how the default reports' block names were
// made when a framework module waited for a block it could name; false
// (buf untouched) when none waited.
HD_EXPORT bool hd_session_names_note(const struct hd_session *s, char *buf,
				     size_t len);
// Seconds the scan of the heap's words took (0 if not run), the threads it
// used and the references it found.
HD_EXPORT double hd_session_scan_seconds(const struct hd_session *s,
					 unsigned *threads, uint64_t *refs);
// Seconds the CLI's own unwinding took (a core or a ptrace-attached
// process: frames and locals of every thread), 0 if not run.
HD_EXPORT double hd_session_frames_seconds(const struct hd_session *s);
HD_EXPORT void hd_session_times(const struct hd_session *s, double *walk,
				double *types, double *graph, double *dom);

// ---------------------------------------------------------------- report
//
// The one renderer: the CLI, gdb and lldb all print through these, so their
// outputs are identical. Text for people, JSON for scripts
// (docs/json-format.md), DOT for the graph.

enum hd_output_format { HD_FORMAT_TEXT, HD_FORMAT_JSON, HD_FORMAT_DOT };

struct hd_render_options {
	enum hd_output_format format;
	bool color;         // ANSI colour (only on a terminal)
	int state_filter;   // blocks: -1 for all, else an hd_block_state
	size_t top;         // dominators: holders listed (0: 20)
	unsigned depth;     // dominators: levels of children; graph: BFS depth
	bool depth_set;     // depth was given (graph --from defaults to 3)
	uint64_t min_size;  // dominators: hide retained below this
	bool all;           // dominators --json: every used block
	bool has_address;   // why: address; graph: --from
	uint64_t address;
	int sort;           // types: 0 bytes, 1 count, 2 retained
	int trace_by;       // trace: an enum hd_trace_by
	int what;           // diff text: 0 all, 1 stats, 2 types, 3 dominators
	bool semantic;      // dominators: the semantic tree of the frameworks
	// dominators: the exact dominator tree of the graph, without root
	// precedence (docs/ownership.md).
	bool plain;
	// why: root classes ignored, as if absent: bit r set for
	// hd_root_rank r (--exclude registers,stack).
	unsigned exclude;
	// Report what a truncated core holds, labelled partial, instead of
	// failing (--partial).
	bool partial;
	// Framework modules to run (names of built-ins or paths of shared
	// objects); none: the built-ins and HEAPDOM_FRAMEWORK_PATH's.
	const char *const *frameworks;
	size_t num_frameworks;
};

HD_EXPORT struct hd_error *hd_render_stats(FILE *out, struct hd_session *s,
					   const struct hd_render_options *o);
HD_EXPORT struct hd_error *hd_render_blocks(FILE *out, struct hd_session *s,
					    const struct hd_render_options *o);
HD_EXPORT struct hd_error *
hd_render_dominators(FILE *out, struct hd_session *s,
		     const struct hd_render_options *o);
// Why the block holding o->address is alive: the shortest chain from the
// strongest class of roots that reaches it (hd_root_rank), then one from
// each other class ("also reachable from"), ignoring o->exclude's classes.
HD_EXPORT struct hd_error *hd_render_why(FILE *out, struct hd_session *s,
					 const struct hd_render_options *o);
HD_EXPORT struct hd_error *hd_render_leaks(FILE *out, struct hd_session *s,
					   const struct hd_render_options *o);
HD_EXPORT struct hd_error *hd_render_graph(FILE *out, struct hd_session *s,
					   const struct hd_render_options *o);
// The semantic tree: the dominator tree with the framework modules' nodes
// (docs/frameworks.md); hd_render_dominators calls it with o->semantic.
HD_EXPORT struct hd_error *
hd_render_semantic(FILE *out, struct hd_session *s,
		   const struct hd_render_options *o);
// The framework modules: what each is, whether it detected its framework,
// what it did, its warnings and errors.
HD_EXPORT struct hd_error *
hd_render_frameworks(FILE *out, struct hd_session *s,
		     const struct hd_render_options *o);
// What libheapdom-trace.so recorded in the process (heapdom_trace.h): by
// call site, source file, size class or age, with each site's allocations
// still live.
enum hd_trace_by { HD_TRACE_BY_SITE, HD_TRACE_BY_FILE, HD_TRACE_BY_SIZE,
		   HD_TRACE_BY_AGE };
HD_EXPORT struct hd_error *hd_render_trace(FILE *out, struct hd_session *s,
					   const struct hd_render_options *o);
// Where the tracer's state (struct hd_trace_state) is in the target, for a
// front-end that switches tracing on or off or advances the epoch by
// writing its `enabled` or `epoch` (the library never writes into the
// process). HD_ERROR_NOT_FOUND when the tracer is not loaded.
HD_EXPORT struct hd_error *hd_trace_locate(struct hd_session *s,
					   uint64_t *addr);
// A heap histogram by type: instances, bytes, and what all instances of a
// type keep alive together.
HD_EXPORT struct hd_error *hd_render_types(FILE *out, struct hd_session *s,
					   const struct hd_render_options *o);
// Heap snapshot summaries (docs/snapshots.md): totals, size classes, per
// type count/bytes/retained, and the largest dominator subtrees by root
// path; nothing in one is an address, so two snapshots (two stops, two
// cores, two runs) are compared by type and by root path.
struct hd_snapshot;
// Makes the snapshot of a session; o->depth (with o->depth_set) is the
// levels of children below the top holders given root paths (default 1),
// o->top the root paths kept (default 200).
HD_EXPORT struct hd_error *
hd_snapshot_make(struct hd_session *s, const struct hd_render_options *o,
		 struct hd_snapshot **ret);
// Writes it as JSON (one document, docs/json-format.md).
HD_EXPORT struct hd_error *hd_snapshot_write(FILE *out,
					     const struct hd_snapshot *snap);
// Reads a snapshot JSON file; errors name the file and the byte offset.
HD_EXPORT struct hd_error *hd_snapshot_read(const char *path,
					    struct hd_snapshot **ret);
// A snapshot file, or a core (ELF) whose snapshot is made in memory with
// the given options (any may be NULL: defaults).
HD_EXPORT struct hd_error *
hd_snapshot_load(const char *path, const struct hd_target_options *to,
		 const struct hd_session_options *so,
		 const struct hd_render_options *o, struct hd_snapshot **ret);
HD_EXPORT void hd_snapshot_destroy(struct hd_snapshot *snap);
// The snapshot of a session: JSON with --json (and always with --output),
// else a summary for people.
HD_EXPORT struct hd_error *
hd_render_snapshot(FILE *out, struct hd_session *s,
		   const struct hd_render_options *o);
// What changed from snaps[0] to snaps[n - 1] (n >= 2): totals, types, size
// classes and root paths, growth first; with n > 2 also the series of
// totals. o->top limits each list (text: 20 by default).
HD_EXPORT struct hd_error *
hd_render_diff(FILE *out, struct hd_snapshot *const *snaps, size_t n,
	       const struct hd_render_options *o);
// A report and its options, parsed from words the way the CLI takes them:
// argv[0] is the report ("stats", "blocks", "dominators", "why", "leaks",
// "graph", "types", "frameworks", "trace", "snapshot", "diff"), then options (--top N, --depth D,
// --min-size SIZE, --all, --json, --format FMT, --state STATE, --from ADDR,
// --sort KEY, --output FILE, --color, --no-color, --semantic, --partial, --framework
// NAME|PATH, --by KEY, --exclude CLASSES) and, for why, the address; for diff, two or more
// snapshot files or cores. Front-ends share this parser so
// every option means the same everywhere.
enum hd_report { HD_REPORT_STATS, HD_REPORT_BLOCKS, HD_REPORT_DOMINATORS,
		 HD_REPORT_WHY, HD_REPORT_LEAKS, HD_REPORT_GRAPH,
		 HD_REPORT_TYPES, HD_REPORT_FRAMEWORKS, HD_REPORT_TRACE,
		 HD_REPORT_SNAPSHOT, HD_REPORT_DIFF };
#define HD_MAX_DIFF_OPERANDS 256
#define HD_MAX_FRAMEWORK_OPTIONS 32
struct hd_command {
	enum hd_report report;
	struct hd_render_options render;
	const char *output; // points into argv, or NULL
	// --framework values (render.frameworks points here), into argv.
	const char *frameworks[HD_MAX_FRAMEWORK_OPTIONS];
	// diff: the snapshot files or cores, into argv. hd_command_run does
	// not use its session for diff (it may be NULL); cores are opened
	// with target and session (NULL: defaults), which the caller may set
	// after parsing.
	const char *operands[HD_MAX_DIFF_OPERANDS];
	size_t num_operands;
	const struct hd_target_options *target;
	const struct hd_session_options *session;
	// --allocator NAME[,NAME], into argv, or NULL: the session walks
	// these allocators for this command (hd_session_select_allocators).
	const char *allocators;
};
HD_EXPORT struct hd_error *hd_command_parse(int argc, char *const *argv,
					    struct hd_command *ret);
// Checks the words without running anything: front-ends report a bad
// option before they look at the process.
HD_EXPORT struct hd_error *hd_command_check(int argc, char *const *argv);
// Renders the command's report to out (or to its --output file).
HD_EXPORT struct hd_error *hd_command_run(struct hd_session *s,
					  const struct hd_command *c,
					  FILE *out);
// Parses and runs; the text (empty with --output) is returned in *text,
// to be released with hd_free().
HD_EXPORT struct hd_error *hd_command_run_string(struct hd_session *s,
						 int argc, char *const *argv,
						 char **text);
HD_EXPORT void hd_free(void *p);

// Formats n bytes the way people read them ("1.5 MiB", "512 B").
HD_EXPORT void hd_format_size(uint64_t n, char *buf, size_t len);

// -------------------------------------------------------------- sampling
//
// Memory-access sampling of a running process (docs/sampling.md): every
// thread is stopped hz times a second, the instruction at its PC is
// decoded and the address it touches recorded; afterwards the addresses
// are mapped onto heap blocks, their types and dominator subtrees, and
// non-heap regions (stacks, globals, mappings).

#define HD_SAMPLE_MAX_HZ 1000
#define HD_SAMPLE_MAX_THREADS 256

struct hd_sample_options {
	int pid;
	double duration;      // seconds (default 5)
	unsigned hz;          // rounds per second (default 100, at most 1000)
	// Sample only these threads (--threads LIST); none: every thread.
	int threads[HD_SAMPLE_MAX_THREADS];
	size_t num_threads;
	bool has_pc_range;    // keep samples whose stop PC is in [pc_lo, pc_hi)
	uint64_t pc_lo, pc_hi;
	bool has_addr_range;  // keep accesses to [addr_lo, addr_hi)
	uint64_t addr_lo, addr_hi;
	// Collection method: 0, the instruction at the PC only; N, the
	// nearest memory instruction up to N instructions forward.
	unsigned nearest;
	uint64_t granularity; // histogram bucket in bytes (default 64)
	size_t top;           // rows per table in the text (default 10)
	enum hd_output_format format; // text or json
	// --output: an SVG of the per-thread histograms; %p in the name is
	// the pid, %t the time sampling started (seconds since 1970).
	const char *output;
	// The share of the time the process may be kept stopped (percent,
	// default 10): beyond it the rate is lowered.
	double max_stopped;
	bool live;            // --live: a per-thread view on stderr, each second
};

// What a sampling run collected (sample/sampler.h).
struct hd_samples;

// Parses the words of `sample` ("sample" first, then --duration S, --hz N,
// --threads LIST, --pc-range A-B, --addr-range A-B, --nearest N,
// --granularity BYTES, --top N, --json, --format text|json, --output
// FILE) into *ret; ret->pid is left for the caller (--pid).
HD_EXPORT struct hd_error *hd_sample_parse(int argc, char *const *argv,
					   struct hd_sample_options *ret);
// Samples o->pid for o->duration seconds, then lets every thread go (the
// process is left running and untraced). Ends early, with what was
// collected, after hd_sample_stop() or when the process exits.
HD_EXPORT struct hd_error *hd_sample_run(const struct hd_sample_options *o,
					 struct hd_samples **ret);
// Asks a running hd_sample_run to finish after its current round.
// Async-signal-safe: for a SIGINT handler.
HD_EXPORT void hd_sample_stop(void);
HD_EXPORT void hd_samples_destroy(struct hd_samples *r);
// The report, per thread and overall: samples by heap block, type,
// dominator subtree and region, a histogram by address bucket, and the
// cost line. s is a session of the process stopped after sampling (NULL:
// addresses only, when the process is gone).
HD_EXPORT struct hd_error *hd_render_sample(FILE *out,
					    const struct hd_samples *r,
					    struct hd_session *s,
					    const struct hd_sample_options *o);
// For debugger front-ends, which hold the process with ptrace and must let
// it go while it is sampled: a job parses the words of `sample` first (so
// a bad option is reported while the debugger still holds the process),
// samples pid once the debugger has detached, and makes the report at the
// stop after the debugger attached again (s NULL: addresses only). The
// text is released with hd_free(); --output writes the SVG.
struct hd_sample_job;
HD_EXPORT struct hd_error *hd_sample_job_create(int argc, char *const *argv,
						struct hd_sample_job **ret);
HD_EXPORT struct hd_error *hd_sample_job_run(struct hd_sample_job *job, int pid);
HD_EXPORT struct hd_error *hd_sample_job_report(struct hd_sample_job *job,
						struct hd_session *s,
						char **text);
HD_EXPORT void hd_sample_job_destroy(struct hd_sample_job *job);
// Writes the per-thread histograms as an SVG bar chart to path.
HD_EXPORT struct hd_error *hd_sample_write_svg(const char *path,
					       const struct hd_samples *r,
					       const struct hd_sample_options *o);

#ifdef __cplusplus
}
#endif

#endif // HEAPDOM_H
