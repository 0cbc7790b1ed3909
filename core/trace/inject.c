// heapdom_trace_inject: redirects the allocation calls of the objects
// already loaded to our hooks, after a debugger dlopen()ed the library
// into a running process (heap-trace start). Symbol interposition only
// applies to LD_PRELOAD; calls that are already bound go through GOT
// slots, so we rewrite those slots: for every loaded object except this
// library, the R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations
// (DT_JMPREL and DT_RELA) whose symbol is a hooked name get the address of
// our function, RELRO pages made writable for the write and read-only
// again (heaptrack's inject mode does the same).
//
// A name is redirected only if the process resolves it to glibc (or, for
// the C++ operators, to libstdc++): a program that brings its own
// allocator or its own operator new keeps it, as it does under LD_PRELOAD.
//
// Limits: objects dlopen()ed after the injection still call the real
// functions (call heapdom_trace_inject again after loading them);
// function pointers to malloc stored in data (R_X86_64_64) are left alone.
#include <dlfcn.h>
#include <stdlib.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace_internal.h"

#define HOOK(name, fn) { #name, (void *)(fn), 0 }
#define HOOK_CXX(name, fn) { #name, (void *)(fn), 1 }

static const struct hook {
	const char *name;
	void *fn;
	int cxx;
} hooks[] = {
	HOOK(malloc, hd_malloc),
	HOOK(calloc, hd_calloc),
	HOOK(realloc, hd_realloc),
	HOOK(reallocarray, hd_reallocarray),
	HOOK(free, hd_free),
	HOOK(memalign, hd_memalign),
	HOOK(posix_memalign, hd_posix_memalign),
	HOOK(aligned_alloc, hd_aligned_alloc),
	HOOK(valloc, hd_valloc),
	HOOK(pvalloc, hd_pvalloc),
	HOOK_CXX(_Znwm, hd_new),
	HOOK_CXX(_Znam, hd_new_array),
	HOOK_CXX(_ZnwmRKSt9nothrow_t, hd_new_nt),
	HOOK_CXX(_ZnamRKSt9nothrow_t, hd_new_array_nt),
	HOOK_CXX(_ZnwmSt11align_val_t, hd_new_al),
	HOOK_CXX(_ZnamSt11align_val_t, hd_new_array_al),
	HOOK_CXX(_ZnwmSt11align_val_tRKSt9nothrow_t, hd_new_al_nt),
	HOOK_CXX(_ZnamSt11align_val_tRKSt9nothrow_t, hd_new_array_al_nt),
	HOOK_CXX(_ZdlPv, hd_delete),
	HOOK_CXX(_ZdaPv, hd_delete),
	HOOK_CXX(_ZdlPvm, hd_delete_sized),
	HOOK_CXX(_ZdaPvm, hd_delete_sized),
	HOOK_CXX(_ZdlPvRKSt9nothrow_t, hd_delete_nt),
	HOOK_CXX(_ZdaPvRKSt9nothrow_t, hd_delete_nt),
	HOOK_CXX(_ZdlPvSt11align_val_t, hd_delete_al),
	HOOK_CXX(_ZdaPvSt11align_val_t, hd_delete_al),
	HOOK_CXX(_ZdlPvmSt11align_val_t, hd_delete_sized_al),
	HOOK_CXX(_ZdaPvmSt11align_val_t, hd_delete_sized_al),
	HOOK_CXX(_ZdlPvSt11align_val_tRKSt9nothrow_t, hd_delete_al_nt),
	HOOK_CXX(_ZdaPvSt11align_val_tRKSt9nothrow_t, hd_delete_al_nt),
};
#define NHOOKS (sizeof(hooks) / sizeof(hooks[0]))

struct inject {
	int allowed[NHOOKS];
	uintptr_t pagesize;
	long patched;
	int failed;
};

void *hd_real_function(const char *name, void *self)
{
	// LD_PRELOAD: the next definition is libstdc++'s. dlopen()ed
	// without RTLD_GLOBAL: RTLD_NEXT searches only our own dependencies,
	// and the default scope (which does not contain us) has it.
	void *f = dlsym(RTLD_NEXT, name);

	if (!f || f == self)
		f = dlsym(RTLD_DEFAULT, name);
	if (!f || f == self)
		abort();
	return f;
}

static int contains(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
			return 1;
	}
	return 0;
}

// Whether the process resolves name to the library it should come from.
static int from_runtime(const char *name, int cxx, const void *libc_base)
{
	void *def = dlsym(RTLD_DEFAULT, name);
	Dl_info info;

	if (!def || !dladdr(def, &info) || !info.dli_fname)
		return 0;
	if (cxx)
		return strstr(info.dli_fname, "libstdc++") != NULL;
	return info.dli_fbase == libc_base;
}

static void patch(struct inject *in, uintptr_t slot, uintptr_t value,
		  uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t page = slot & ~(in->pagesize - 1);
	int ro = slot >= relro_lo && slot < relro_hi;

	if (*(volatile uintptr_t *)slot == value)
		return;
	if (ro && mprotect((void *)page, in->pagesize, PROT_READ | PROT_WRITE)) {
		in->failed = 1;
		return;
	}
	__atomic_store_n((uintptr_t *)slot, value, __ATOMIC_RELAXED);
	if (ro)
		mprotect((void *)page, in->pagesize, PROT_READ);
	in->patched++;
}

static void patch_relocs(struct inject *in, uintptr_t base, const ElfW(Rela) *rel,
			 size_t bytes, const ElfW(Sym) *symtab, const char *strtab,
			 size_t strsz, uintptr_t relro_lo, uintptr_t relro_hi)
{
	for (size_t k = 0; k < bytes / sizeof(*rel); k++) {
		unsigned type = ELF64_R_TYPE(rel[k].r_info);
		size_t sym = ELF64_R_SYM(rel[k].r_info);
		const char *name;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !sym)
			continue;
		if (symtab[sym].st_name >= strsz)
			continue;
		name = strtab + symtab[sym].st_name;
		for (size_t h = 0; h < NHOOKS; h++) {
			if (!in->allowed[h] || strcmp(name, hooks[h].name))
				continue;
			patch(in, base + rel[k].r_offset,
			      (uintptr_t)hooks[h].fn +
				      (type == R_X86_64_GLOB_DAT ? rel[k].r_addend : 0),
			      relro_lo, relro_hi);
			break;
		}
	}
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct inject *in = data;
	uintptr_t base = info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0;
	size_t strsz = 0, pltrelsz = 0, relasz = 0;
	long pltrel = DT_RELA;

	if (contains(info, (uintptr_t)&hd_state))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			// As the loader protects it: whole pages only.
			relro_lo = (base + ph->p_vaddr) & ~(in->pagesize - 1);
			relro_hi = (base + ph->p_vaddr + ph->p_memsz) &
				   ~(in->pagesize - 1);
		}
	}
	if (!dyn)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		// The loader rebased these in place for most objects, not for
		// those whose dynamic section is read-only (the vDSO).
		uintptr_t ptr = dyn->d_un.d_ptr;

		if (ptr < base)
			ptr += base;
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = ptr; break;
		case DT_STRTAB: strtab = ptr; break;
		case DT_STRSZ: strsz = dyn->d_un.d_val; break;
		case DT_JMPREL: jmprel = ptr; break;
		case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
		case DT_RELA: rela = ptr; break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel && pltrel == DT_RELA)
		patch_relocs(in, base, (const ElfW(Rela) *)jmprel, pltrelsz,
			     (const ElfW(Sym) *)symtab, (const char *)strtab, strsz,
			     relro_lo, relro_hi);
	if (rela)
		patch_relocs(in, base, (const ElfW(Rela) *)rela, relasz,
			     (const ElfW(Sym) *)symtab, (const char *)strtab, strsz,
			     relro_lo, relro_hi);
	return 0;
}

HD_EXPORT int heapdom_trace_inject(void)
{
	struct inject in;
	Dl_info libc;

	memset(&in, 0, sizeof in);
	in.pagesize = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (!dladdr((void *)__libc_malloc, &libc))
		return -1;
	// Looked up before dl_iterate_phdr, which holds the loader's lock.
	for (size_t h = 0; h < NHOOKS; h++)
		in.allowed[h] = from_runtime(hooks[h].name, hooks[h].cxx, libc.dli_fbase);
	dl_iterate_phdr(patch_object, &in);
	if (in.failed)
		return -1;
	return (int)in.patched;
}
