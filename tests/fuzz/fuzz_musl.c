// The musl backend (core/heap/musl/, mallocng) over a synthetic memory
// image, then the graph, the dominators, and the stats, dominators and
// leaks reports, as fuzz_pool does for poolalloc.
//
// The context is found by its symbol __malloc_context (as in a static
// program with a symbol table): the target (a callback target) has one
// module, a small ELF file made once by this harness (a memfd) whose
// symbol table defines it. Input: the context's 928 bytes, then the memory
// image, served at IMAGE (whole pages, zeros after the input): meta areas,
// groups and their slots. Seeds (seed_musl.py): a meta area, groups of
// several classes with used, avail, freed and inactive slots, a group
// nested in another's slot, an mmapped large allocation, slots with an
// offset and with a size trailer.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "fuzz_util.h"

#define BIAS 0x6a0000000000ull
#define GLOBAL_VADDR 0x4000ull // the context's link-time address
#define CTX_SIZE 928
#define IMAGE 0x10000000ull
#define MAX_IMAGE (1u << 20)

static const uint64_t global_addr = BIAS + GLOBAL_VADDR;
static char module_path[64];

// The module's file: an x86-64 ELF file with a .bss holding
// __malloc_context and the symbol table naming it.
static void make_module(void)
{
	static const char shstr[] = "\0.bss\0.symtab\0.strtab\0.shstrtab";
	static const char str[] = "\0__malloc_context";
	Elf64_Sym syms[2] = {
		{0},
		{.st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = GLOBAL_VADDR, .st_size = CTX_SIZE},
	};
	size_t sym_off = sizeof(Elf64_Ehdr), str_off = sym_off + sizeof(syms);
	size_t shstr_off = str_off + sizeof(str);
	size_t sh_off = (shstr_off + sizeof(shstr) + 7) & ~(size_t)7;
	Elf64_Ehdr eh = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = sh_off, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 5, .e_shstrndx = 4,
	};
	Elf64_Shdr sh[5] = {
		{0},
		{.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
		 .sh_addr = GLOBAL_VADDR, .sh_offset = sym_off, .sh_size = CTX_SIZE,
		 .sh_addralign = 8},
		{.sh_name = 6, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
		 .sh_size = sizeof(syms), .sh_link = 3, .sh_info = 1,
		 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)},
		{.sh_name = 14, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(str), .sh_addralign = 1},
		{.sh_name = 22, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
		 .sh_size = sizeof(shstr), .sh_addralign = 1},
	};
	uint8_t f[1024] = {0};
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sym_off, syms, sizeof(syms));
	memcpy(f + str_off, str, sizeof(str));
	memcpy(f + shstr_off, shstr, sizeof(shstr));
	memcpy(f + sh_off, sh, sizeof(sh));
	int fd = memfd_create("hd-fuzz-musl-module", 0);
	size_t size = sh_off + sizeof(sh);
	if (fd < 0 || write(fd, f, size) != (ssize_t)size) {
		perror("fuzz_musl: module file");
		abort();
	}
	snprintf(module_path, sizeof(module_path), "/proc/self/fd/%d", fd);
}

struct mem {
	uint8_t ctx[CTX_SIZE];
	const uint8_t *image;
	size_t len, mapped;
};

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = arg;
	// The context's page: the context, then zeros.
	uint64_t page = global_addr & ~0xfffull;
	if (addr >= page && addr - page < 0x1000 && len <= 0x1000 - (addr - page)) {
		for (size_t i = 0; i < len; i++) {
			uint64_t a = addr + i;
			((uint8_t *)buf)[i] = a >= global_addr && a - global_addr < CTX_SIZE
						      ? m->ctx[a - global_addr] : 0;
		}
		return NULL;
	}
	if (addr >= IMAGE && addr - IMAGE <= m->mapped && len <= m->mapped - (addr - IMAGE)) {
		uint64_t off = addr - IMAGE;
		for (size_t i = 0; i < len; i++)
			((uint8_t *)buf)[i] = off + i < m->len ? m->image[off + i] : 0;
		return NULL;
	}
	return hd_error_at(HD_ERROR_FAULT, addr, "no memory at 0x%llx",
			   (unsigned long long)addr);
}

static struct hd_error *make_target(struct mem *mem, struct hd_target **ret)
{
	struct hd_target *t;
	struct hd_error *err = hd_target_create_callback(read_mem, mem, &t);
	if (err)
		return err;
	struct hd_mapping img = {.start = IMAGE, .end = IMAGE + mem->mapped,
				 .prot = HD_PROT_READ | HD_PROT_WRITE,
				 .readable = true};
	struct hd_mapping g = {.start = global_addr & ~0xfffull,
			       .end = (global_addr & ~0xfffull) + 0x1000,
			       .prot = HD_PROT_READ | HD_PROT_WRITE,
			       .readable = true};
	if (mem->mapped)
		err = hd_target_add_mapping(t, &img);
	if (!err)
		err = hd_target_add_mapping(t, &g);
	struct hd_module mod = {.name = "/fuzz/musl", .file = module_path,
				.bias = BIAS, .start = g.start, .end = g.end,
				.is_exe = true};
	if (!err)
		err = hd_target_add_module(t, &mod);
	if (err) {
		hd_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!module_path[0])
		make_module();
	if (size < CTX_SIZE)
		return 0;
	struct mem mem = {.image = data + CTX_SIZE, .len = size - CTX_SIZE};
	memcpy(mem.ctx, data, CTX_SIZE);
	if (mem.len > MAX_IMAGE)
		mem.len = MAX_IMAGE;
	mem.mapped = (mem.len + 0xfff) & ~(size_t)0xfff;

	struct hd_target *t;
	struct hd_error *err = make_target(&mem, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	hd_fuzz_analyse(t, false, NULL, NULL);
	return 0;
}
