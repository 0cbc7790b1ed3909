// Type indexes are kept per file for the life of the process: a debugger
// front-end makes one session per stop, and re-reading libc's DWARF at
// every stop would cost a third of a second each time.
#ifndef HD_INDEX_CACHE_H
#define HD_INDEX_CACHE_H

#include <pthread.h>

#include "types/type_index.h"

// The index of the ELF file at path (made on first use as
// hd_index_cache_build makes it, from the disk cache or the DWARF; shared,
// never freed by the caller), or NULL when the file has no usable DWARF.
// Safe to call from several threads; a file is indexed once. *seconds: the
// time it took to make.
const struct hd_type_index *hd_index_cache_get(const char *path,
					       double *seconds);

// The index of the compilation units of path whose name ends in cu_suffix
// (hd_type_index_build_filtered's), kept like the whole files' (shared,
// never freed by the caller): a debugger makes a session per stop, and
// the glibc walker asks for malloc.c's layouts at every one. An index
// that could not be made is not kept: the error is returned each time.
struct hd_error *hd_index_cache_get_filtered(const char *path,
					     const char *cu_suffix,
					     const struct hd_type_index **ret);

// hd_index_cache_get for n files (NULL paths give NULL), in an order that
// waits least: the files another thread is indexing are waited for last,
// after this thread has made the others.
void hd_index_cache_get_many(const char *const *paths, size_t n,
			     const struct hd_type_index **ixs, double *seconds);

// hd_type_index_build_filtered through the per-user cache on disk
// ($XDG_CACHE_HOME/heapdom, else ~/.cache/heapdom; docs/index-cache.md):
// the index is read from there when a file made from the same ELF file
// (build-id, size, mtime), the same cu_suffix and the same libheapdom is
// there and intact, else built from the DWARF and written there.
// HEAPDOM_INDEX_CACHE=0 turns the disk cache off. *from_disk (may be NULL)
// says which.
struct hd_error *hd_index_cache_build(const char *path, const char *cu_suffix,
				      struct hd_type_index **ret, bool *from_disk);

struct hd_prefetch;

// Starts indexing the files in a thread (a copy of the list is taken);
// hd_index_cache_get then waits for or takes the results. Returns NULL when
// no thread could be started (typing then indexes on demand). The caller
// joins it with hd_index_cache_join when the analysis that wanted the
// types ends; if the library is unloaded or the process exits first, the
// library's destructor joins it (the files not yet begun are skipped).
struct hd_prefetch *hd_index_cache_prefetch(const char *const *paths, size_t n);

// The same for one file and a caller that will not join it: a debugger
// front-end reading a module's types as the debugger loads it, before any
// session. Files are queued and read in order by one thread of the
// library, started when there is none (joined when it has finished and
// another is needed, or by the library's destructor). With cu_suffix, that
// filtered index (hd_index_cache_get_filtered) is made first.
void hd_index_cache_prefetch_background(const char *path, const char *cu_suffix);

// Waits for the thread and frees it; p may be NULL.
void hd_index_cache_join(struct hd_prefetch *p);

#endif
