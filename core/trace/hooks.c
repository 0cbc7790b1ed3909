// The C allocation functions libheapdom-trace.so interposes. Each is a
// hidden function (the injector patches GOT slots with its address, which
// must not resolve back to libc through our own GOT) with the public name
// as an exported alias. Off: one predictable branch and a tail call to
// glibc's __libc_* entry point.
//
// <stdlib.h> is not included: its declarations carry attributes (malloc,
// alloc_size, nothrow) that the aliases below would have to repeat.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "tables.h"

#define HD_ALIAS(name) __attribute__((alias(#name), visibility("default")))

static inline int power_of_two(size_t a)
{
	return a && (a & (a - 1)) == 0;
}

// The traced half of a hook: out of line, reached by a tail call, so that
// the hook's off path saves no registers. It asks glibc for the block and
// its tag (hd_tagged_size).
#define HD_TRACED static __attribute__((noinline))

// Reached only by hd_malloc's tail call, so its return address is
// malloc's caller: read after glibc's call rather than passed, it keeps
// one register fewer across that call (the hottest traced path). A call
// that was not a tail call would show as a site inside hd_malloc, which
// the tests check.
HD_TRACED void *malloc_on(size_t n)
{
	void *p = __libc_malloc(hd_tagged_size(n));

	return p ? hd_record_alloc(HD_TRACE_MALLOC, p, n, HD_CALLER_PC()) : p;
}

HD_HIDDEN void *hd_malloc(size_t n)
{
	if (HD_OFF())
		return __libc_malloc(n);
	return malloc_on(n);
}

HD_TRACED void *calloc_on(size_t n, size_t m, uint64_t pc)
{
	size_t bytes;
	void *p;

	// An overflowing product: glibc fails it.
	if (__builtin_mul_overflow(n, m, &bytes))
		return __libc_calloc(n, m);
	p = __libc_calloc(1, hd_tagged_size(bytes));
	return p ? hd_record_alloc(HD_TRACE_CALLOC, p, bytes, pc) : p;
}

HD_HIDDEN void *hd_calloc(size_t n, size_t m)
{
	if (HD_OFF())
		return __libc_calloc(n, m);
	return calloc_on(n, m, HD_CALLER_PC());
}

HD_HIDDEN void *hd_realloc(void *old, size_t n)
{
	if (HD_OFF())
		return __libc_realloc(old, n);
	return hd_traced_realloc(old, n, HD_CALLER_PC());
}

HD_HIDDEN void *hd_reallocarray(void *old, size_t n, size_t m)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, m, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (HD_OFF())
		return __libc_realloc(old, bytes);
	return hd_traced_realloc(old, bytes, HD_CALLER_PC());
}

HD_HIDDEN void hd_free(void *p)
{
	hd_free_hook(p);
}

HD_TRACED void *memalign_on(size_t align, size_t n, uint64_t pc)
{
	void *p = __libc_memalign(align, hd_tagged_size(n));

	return p ? hd_record_alloc(HD_TRACE_MEMALIGN, p, n, pc) : p;
}

HD_HIDDEN void *hd_memalign(size_t align, size_t n)
{
	if (HD_OFF())
		return __libc_memalign(align, n);
	return memalign_on(align, n, HD_CALLER_PC());
}

// The error is returned, errno left alone (POSIX); *out is untouched on
// failure.
HD_HIDDEN int hd_posix_memalign(void **out, size_t align, size_t n)
{
	int saved = errno;
	void *p;

	if (align % sizeof(void *) != 0 || !power_of_two(align))
		return EINVAL;
	if (HD_OFF())
		p = __libc_memalign(align, n);
	else
		p = memalign_on(align, n, HD_CALLER_PC());
	if (!p) {
		errno = saved;
		return ENOMEM;
	}
	*out = p;
	return 0;
}

// glibc (2.38+) and C17 DR 460: an alignment that is not a power of two
// fails with EINVAL; sizes need not be multiples of it.
HD_HIDDEN void *hd_aligned_alloc(size_t align, size_t n)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	if (HD_OFF())
		return __libc_memalign(align, n);
	return memalign_on(align, n, HD_CALLER_PC());
}

HD_TRACED void *valloc_on(size_t n, uint64_t pc)
{
	void *p = __libc_valloc(hd_tagged_size(n));

	return p ? hd_record_alloc(HD_TRACE_MEMALIGN, p, n, pc) : p;
}

HD_HIDDEN void *hd_valloc(size_t n)
{
	if (HD_OFF())
		return __libc_valloc(n);
	return valloc_on(n, HD_CALLER_PC());
}

// pvalloc promises whole pages: the tag goes after them.
HD_TRACED void *pvalloc_on(size_t n, uint64_t pc)
{
	size_t page = (size_t)getpagesize();
	size_t rounded = (n + page - 1) & ~(page - 1);
	// Rounding past SIZE_MAX wraps: ask for all of it, which fails.
	void *p = __libc_memalign(page, hd_tagged_size(rounded >= n ? rounded : (size_t)-1));

	return p ? hd_record_alloc(HD_TRACE_MEMALIGN, p, n, pc) : p;
}

HD_HIDDEN void *hd_pvalloc(size_t n)
{
	if (HD_OFF())
		return __libc_pvalloc(n);
	return pvalloc_on(n, HD_CALLER_PC());
}

HD_EXPORT void *malloc(size_t n) HD_ALIAS(hd_malloc);
HD_EXPORT void *calloc(size_t n, size_t m) HD_ALIAS(hd_calloc);
HD_EXPORT void *realloc(void *p, size_t n) HD_ALIAS(hd_realloc);
HD_EXPORT void *reallocarray(void *p, size_t n, size_t m) HD_ALIAS(hd_reallocarray);
HD_EXPORT void free(void *p) HD_ALIAS(hd_free);
HD_EXPORT void *memalign(size_t align, size_t n) HD_ALIAS(hd_memalign);
HD_EXPORT int posix_memalign(void **out, size_t align, size_t n)
	HD_ALIAS(hd_posix_memalign);
HD_EXPORT void *aligned_alloc(size_t align, size_t n) HD_ALIAS(hd_aligned_alloc);
HD_EXPORT void *valloc(size_t n) HD_ALIAS(hd_valloc);
HD_EXPORT void *pvalloc(size_t n) HD_ALIAS(hd_pvalloc);
