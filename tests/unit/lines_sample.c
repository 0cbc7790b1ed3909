// Sample for test_lines: call sites whose return addresses the program
// prints, as link-time addresses, with the function they are in and the
// marker comment of their source line. Built at several DWARF versions
// and without debug info.
//
// Output, one line each:
//   range LO HI                       link-time span of the loaded segments
//   site FUNCTION FILE MARKER RA FN   a return address RA inside FUNCTION
//                                     (starting at FN), called from the line
//                                     of FILE carrying "MARK MARKER"
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 // dl_iterate_phdr
#endif
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>

#include "lines_sample.h"

__attribute__((noinline)) void *lines_leaf(void)
{
	return __builtin_return_address(0);
}

__attribute__((noinline)) void *sample_alpha(void)
{
	void *ra = lines_leaf(); // MARK alpha
	return ra;
}

// A local symbol, and a call site that is not the function's first line.
__attribute__((noinline)) static void *sample_beta(int n)
{
	void *ra = NULL;
	for (int i = 0; i < n; i++)
		ra = lines_leaf(); // MARK beta
	return ra;
}

__attribute__((noinline)) void *sample_gamma(void)
{
	return sample_in_header();
}

// A C function under a C++ (mangled) symbol name: reports demangle it.
void *sample_session_add(int x) __asm__("_ZN7Session3addEi");
__attribute__((noinline)) void *sample_session_add(int x)
{
	return x ? lines_leaf() : NULL; // MARK session
}

struct span {
	uintptr_t bias, lo, hi;
	int found;
};

// The executable is the first object dl_iterate_phdr reports.
static int find_span(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span *s = arg;
	(void)size;
	s->bias = info->dlpi_addr;
	s->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = ph->p_vaddr & ~(uintptr_t)0xfff;
		if (lo < s->lo)
			s->lo = lo;
		if (ph->p_vaddr + ph->p_memsz > s->hi)
			s->hi = ph->p_vaddr + ph->p_memsz;
	}
	s->found = 1;
	return 1;
}

static void site(const struct span *s, const char *fn, const char *file,
		 const char *marker, void *ra, void *start)
{
	printf("site %s %s %s %#lx %#lx\n", fn, file, marker,
	       (unsigned long)((uintptr_t)ra - s->bias),
	       (unsigned long)((uintptr_t)start - s->bias));
}

int main(void)
{
	struct span s = {0};
	dl_iterate_phdr(find_span, &s);
	if (!s.found)
		return 1;
	printf("range %#lx %#lx\n", (unsigned long)s.lo, (unsigned long)s.hi);
	site(&s, "sample_alpha", "lines_sample.c", "alpha", sample_alpha(),
	     (void *)sample_alpha);
	site(&s, "sample_beta", "lines_sample.c", "beta", sample_beta(3),
	     (void *)sample_beta);
	site(&s, "sample_gamma", "lines_sample.h", "header", sample_gamma(),
	     (void *)sample_gamma);
	site(&s, "_ZN7Session3addEi", "lines_sample.c", "session",
	     sample_session_add(1), (void *)sample_session_add);
	return 0;
}
