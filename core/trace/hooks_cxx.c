// The C++ operators new and delete (all forms of libstdc++ on x86-64),
// written in C under their mangled names so that the library needs
// neither libstdc++ nor a C++ compiler.
//
// Failure: operator new must call the new-handler in a loop and throw
// std::bad_alloc, which C cannot do cleanly. On that path only, we hand
// the request to the real operator (libstdc++'s, found with dlsym) and
// return what it returns or let its exception pass through our frame
// (built with -fexceptions, so it has unwind information). That retry
// goes through libstdc++'s own malloc call: when it succeeds it is counted
// as a malloc at a site inside libstdc++, not at the caller's site.
#include <stddef.h>
#include <stdint.h>

#include "tables.h"

#define HD_ALIAS(name) __attribute__((alias(#name), visibility("default")))

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, hd_nothrow_ref);
typedef void *(*new_al_fn)(size_t, hd_align_val);
typedef void *(*new_al_nt_fn)(size_t, hd_align_val, hd_nothrow_ref);

static inline __attribute__((always_inline)) void *
new_common(enum hd_trace_op op, size_t n, size_t align, uint64_t pc)
{
	// new(0) returns a distinct pointer: ask malloc for one byte, as
	// libstdc++ does, but count the size the program asked for.
	size_t real = n ? n : 1;
	int on = !HD_OFF();
	// Traced: the block and its tag (tables.h).
	size_t asked = on ? hd_tagged_size(real) : real;
	void *p = align ? __libc_memalign(align, asked) : __libc_malloc(asked);

	return p && on ? hd_record_alloc(op, p, n, pc) : p;
}

#define HD_REAL(name, type, self) ((type)hd_real_function(name, (void *)(self)))

HD_HIDDEN void *hd_new(size_t n)
{
	void *p = new_common(HD_TRACE_MALLOC, n, 0, HD_CALLER_PC());

	return p ? p : HD_REAL("_Znwm", new_fn, hd_new)(n);
}

HD_HIDDEN void *hd_new_array(size_t n)
{
	void *p = new_common(HD_TRACE_MALLOC, n, 0, HD_CALLER_PC());

	return p ? p : HD_REAL("_Znam", new_fn, hd_new_array)(n);
}

HD_HIDDEN void *hd_new_nt(size_t n, hd_nothrow_ref nt)
{
	void *p = new_common(HD_TRACE_MALLOC, n, 0, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnwmRKSt9nothrow_t", new_nt_fn, hd_new_nt)(n, nt);
}

HD_HIDDEN void *hd_new_array_nt(size_t n, hd_nothrow_ref nt)
{
	void *p = new_common(HD_TRACE_MALLOC, n, 0, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnamRKSt9nothrow_t", new_nt_fn, hd_new_array_nt)(n, nt);
}

HD_HIDDEN void *hd_new_al(size_t n, hd_align_val al)
{
	void *p = new_common(HD_TRACE_MEMALIGN, n, al, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnwmSt11align_val_t", new_al_fn, hd_new_al)(n, al);
}

HD_HIDDEN void *hd_new_array_al(size_t n, hd_align_val al)
{
	void *p = new_common(HD_TRACE_MEMALIGN, n, al, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnamSt11align_val_t", new_al_fn, hd_new_array_al)(n, al);
}

HD_HIDDEN void *hd_new_al_nt(size_t n, hd_align_val al, hd_nothrow_ref nt)
{
	void *p = new_common(HD_TRACE_MEMALIGN, n, al, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnwmSt11align_val_tRKSt9nothrow_t", new_al_nt_fn,
			       hd_new_al_nt)(n, al, nt);
}

HD_HIDDEN void *hd_new_array_al_nt(size_t n, hd_align_val al, hd_nothrow_ref nt)
{
	void *p = new_common(HD_TRACE_MEMALIGN, n, al, HD_CALLER_PC());

	return p ? p : HD_REAL("_ZnamSt11align_val_tRKSt9nothrow_t", new_al_nt_fn,
			       hd_new_array_al_nt)(n, al, nt);
}

// Every delete form releases with free(): libstdc++'s aligned new uses
// aligned_alloc, so the sized and aligned arguments change nothing.
HD_HIDDEN void hd_delete(void *p)
{
	hd_free_hook(p);
}

#define HD_DELETE(hidden, ...)                                  \
	HD_HIDDEN void hidden(void *p, __VA_ARGS__)             \
	{                                                       \
		hd_free_hook(p);                  \
	}

HD_DELETE(hd_delete_sized, size_t n)
HD_DELETE(hd_delete_nt, hd_nothrow_ref nt)
HD_DELETE(hd_delete_al, hd_align_val al)
HD_DELETE(hd_delete_sized_al, size_t n, hd_align_val al)
HD_DELETE(hd_delete_al_nt, hd_align_val al, hd_nothrow_ref nt)

// The array forms have the same code: aliases of the same functions.
HD_EXPORT void *_Znwm(size_t) HD_ALIAS(hd_new);
HD_EXPORT void *_Znam(size_t) HD_ALIAS(hd_new_array);
HD_EXPORT void *_ZnwmRKSt9nothrow_t(size_t, hd_nothrow_ref) HD_ALIAS(hd_new_nt);
HD_EXPORT void *_ZnamRKSt9nothrow_t(size_t, hd_nothrow_ref) HD_ALIAS(hd_new_array_nt);
HD_EXPORT void *_ZnwmSt11align_val_t(size_t, hd_align_val) HD_ALIAS(hd_new_al);
HD_EXPORT void *_ZnamSt11align_val_t(size_t, hd_align_val) HD_ALIAS(hd_new_array_al);
HD_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t, hd_align_val, hd_nothrow_ref)
	HD_ALIAS(hd_new_al_nt);
HD_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t, hd_align_val, hd_nothrow_ref)
	HD_ALIAS(hd_new_array_al_nt);

HD_EXPORT void _ZdlPv(void *) HD_ALIAS(hd_delete);
HD_EXPORT void _ZdaPv(void *) HD_ALIAS(hd_delete);
HD_EXPORT void _ZdlPvm(void *, size_t) HD_ALIAS(hd_delete_sized);
HD_EXPORT void _ZdaPvm(void *, size_t) HD_ALIAS(hd_delete_sized);
HD_EXPORT void _ZdlPvRKSt9nothrow_t(void *, hd_nothrow_ref) HD_ALIAS(hd_delete_nt);
HD_EXPORT void _ZdaPvRKSt9nothrow_t(void *, hd_nothrow_ref) HD_ALIAS(hd_delete_nt);
HD_EXPORT void _ZdlPvSt11align_val_t(void *, hd_align_val) HD_ALIAS(hd_delete_al);
HD_EXPORT void _ZdaPvSt11align_val_t(void *, hd_align_val) HD_ALIAS(hd_delete_al);
HD_EXPORT void _ZdlPvmSt11align_val_t(void *, size_t, hd_align_val)
	HD_ALIAS(hd_delete_sized_al);
HD_EXPORT void _ZdaPvmSt11align_val_t(void *, size_t, hd_align_val)
	HD_ALIAS(hd_delete_sized_al);
HD_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *, hd_align_val, hd_nothrow_ref)
	HD_ALIAS(hd_delete_al_nt);
HD_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *, hd_align_val, hd_nothrow_ref)
	HD_ALIAS(hd_delete_al_nt);
