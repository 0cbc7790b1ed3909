// Shared by the files of libheapdom-trace.so (record.c has the design and
// its limits, tables.h the recording itself). Nothing here is exported:
// the library's only exported names are the hooked functions,
// heapdom_trace and heapdom_trace_inject.
#ifndef HD_TRACE_INTERNAL_H
#define HD_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "heapdom_trace.h"

#define HD_EXPORT __attribute__((visibility("default")))
#define HD_HIDDEN __attribute__((visibility("hidden")))

// The return address into the caller of the hook: the call site.
#define HD_CALLER_PC() ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define HD_OFF() __builtin_expect(!hd_state.enabled, 1)

// The tables, reached without the GOT: heapdom_trace is its exported alias.
extern struct hd_trace_state hd_state HD_HIDDEN;

// The calling thread's counter shard (heapdom_trace.h): NULL until its
// first traced call while the process has threads, HD_NO_SHARD if it
// found none free. Initial-exec: one %fs-relative load, no call (the
// library is preloaded or, when injected, fits in glibc's static TLS
// surplus).
extern __thread struct hd_trace_shard *hd_thread_shard
	HD_HIDDEN __attribute__((tls_model("initial-exec")));
#define HD_NO_SHARD ((struct hd_trace_shard *)1)

// glibc's own entry points of its allocator: calling them never comes
// back into our hooks, and they need no dlsym at start-up.
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

// realloc while tracing: the old block's free and the new block.
HD_HIDDEN void *hd_traced_realloc(void *old, size_t n, uint64_t pc);

// The hooks, under hidden names (their exported names are aliases): the
// injector writes these addresses into GOT slots.
// `std::nothrow_t const &` and `std::align_val_t` at the ABI level:
typedef const void *hd_nothrow_ref;
typedef size_t hd_align_val;
HD_HIDDEN void *hd_malloc(size_t n);
HD_HIDDEN void *hd_calloc(size_t n, size_t m);
HD_HIDDEN void *hd_realloc(void *old, size_t n);
HD_HIDDEN void *hd_reallocarray(void *old, size_t n, size_t m);
HD_HIDDEN void hd_free(void *p);
HD_HIDDEN void *hd_memalign(size_t align, size_t n);
HD_HIDDEN int hd_posix_memalign(void **out, size_t align, size_t n);
HD_HIDDEN void *hd_aligned_alloc(size_t align, size_t n);
HD_HIDDEN void *hd_valloc(size_t n);
HD_HIDDEN void *hd_pvalloc(size_t n);
HD_HIDDEN void *hd_new(size_t n);
HD_HIDDEN void *hd_new_array(size_t n);
HD_HIDDEN void *hd_new_nt(size_t n, hd_nothrow_ref nt);
HD_HIDDEN void *hd_new_array_nt(size_t n, hd_nothrow_ref nt);
HD_HIDDEN void *hd_new_al(size_t n, hd_align_val al);
HD_HIDDEN void *hd_new_array_al(size_t n, hd_align_val al);
HD_HIDDEN void *hd_new_al_nt(size_t n, hd_align_val al, hd_nothrow_ref nt);
HD_HIDDEN void *hd_new_array_al_nt(size_t n, hd_align_val al, hd_nothrow_ref nt);
HD_HIDDEN void hd_delete(void *p);
HD_HIDDEN void hd_delete_sized(void *p, size_t n);
HD_HIDDEN void hd_delete_nt(void *p, hd_nothrow_ref nt);
HD_HIDDEN void hd_delete_al(void *p, hd_align_val al);
HD_HIDDEN void hd_delete_sized_al(void *p, size_t n, hd_align_val al);
HD_HIDDEN void hd_delete_al_nt(void *p, hd_align_val al, hd_nothrow_ref nt);

// The real C++ operator (libstdc++'s), for the failure paths only.
HD_HIDDEN void *hd_real_function(const char *name, void *self);

#endif // HD_TRACE_INTERNAL_H
