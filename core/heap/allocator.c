// Allocators heapdom does not walk: a tcmalloc linked into the executable
// (the tcmalloc backend walks gperftools' shared libraries; jemalloc,
// mimalloc and musl's malloc have backends), recognised from the modules a
// process loaded and, for a statically linked allocator, from the
// executable's symbols, so a report names the allocator instead of
// showing an empty glibc heap.
#include <stdio.h>
#include <string.h>

#include "debuginfo/elf_symbols.h"
#include "heap/heap_internal.h"

struct signature {
	const char *name;
	// Basenames of shared objects that are this allocator (prefixes).
	const char *modules[4];
	// Symbols only this allocator defines, for static links.
	const char *symbols[6];
};

static const struct signature signatures[] = {
	// gperftools' shared libraries have a backend (core/heap/tcmalloc/);
	// a copy linked into the executable (or Google's newer tcmalloc,
	// TCMallocInternalMalloc) does not.
	{"tcmalloc", {NULL},
	 {"tc_malloc", "TCMallocInternalMalloc", "tc_malloc_size"}},
	// musl's malloc has a backend (core/heap/musl/), which also names
	// the bump allocator of static programs that never free.
};

#define N_SIGNATURES (sizeof(signatures) / sizeof(signatures[0]))

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

bool hd_heap_find_foreign(struct hd_target *t, struct hd_debuginfo *di,
			  struct hd_foreign_alloc *ret)
{
	size_t n = hd_target_num_modules(t);
	// A loaded allocator library.
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		const char *base = base_name(m->name);
		for (size_t s = 0; s < N_SIGNATURES; s++) {
			for (size_t k = 0; k < 4 && signatures[s].modules[k]; k++) {
				const char *p = signatures[s].modules[k];
				if (strncmp(base, p, strlen(p)) != 0)
					continue;
				ret->name = signatures[s].name;
				snprintf(ret->evidence, sizeof(ret->evidence),
					 "%s", base);
				return true;
			}
		}
	}
	// An allocator linked into the executable: one pass over its symbols
	// (and its debug file's) for every signature at once.
	const char *names[N_SIGNATURES * 6];
	size_t owner[N_SIGNATURES * 6], nn = 0;
	for (size_t s = 0; s < N_SIGNATURES; s++)
		for (size_t k = 0; k < 6 && signatures[s].symbols[k]; k++) {
			owner[nn] = s;
			names[nn++] = signatures[s].symbols[k];
		}
	bool found[N_SIGNATURES * 6];
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (!m->is_exe)
			continue;
		const char *files[2] = {m->file, hd_debuginfo_debug_file(di, m)};
		for (size_t f = 0; f < 2; f++) {
			if (!files[f] || !hd_elf_defines_any(files[f], names, nn, found))
				continue;
			for (size_t k = 0; k < nn; k++) {
				if (!found[k])
					continue;
				ret->name = signatures[owner[k]].name;
				snprintf(ret->evidence, sizeof(ret->evidence),
					 "statically linked: symbol %s in %s",
					 names[k], files[f]);
				return true;
			}
		}
	}
	return false;
}
