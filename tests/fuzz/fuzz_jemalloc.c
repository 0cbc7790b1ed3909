// The jemalloc backend (core/heap/jemalloc/) over a synthetic memory
// image, then the graph, the dominators, and the stats, dominators and
// leaks reports, as fuzz_pool does for poolalloc.
//
// The target (a callback target) has one module named libjemalloc.so.2,
// a small ELF file made once by this harness (a memfd) holding jemalloc's
// version string and a symbol table naming je_arena_emap_global and
// je_arenas in its .bss, so the backend finds the globals by symbol. The
// emap's rtree has one leaf, the first GiB's, served at LEAF; the input
// gives everything else. Input: 64 bytes (b0, the base the rtree names;
// root[0], the leaf's address; arenas[0..5]), then 2048 bytes (the leaf's
// entries for the 256 pages of the image), then the memory image, served
// at IMAGE (whole pages, zeros after the input, 4 MiB mapped). Seeds
// (seed_jemalloc.py): slabs of several classes with their bitmaps, a
// large extent, a dirty extent, an arena with its base and a thread cache
// holding regions.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "fuzz_util.h"

#define BIAS 0x6a0000000000ull
#define EMAP_VADDR 0x10000ull          // je_arena_emap_global
#define EMAP_SIZE 0x200078ull          // rtree: base, mutex, 1 << 18 roots
#define ARENAS_VADDR 0x220000ull       // je_arenas[4095]
#define ARENAS_SIZE (4095 * 8ull)
#define BSS_END 0x228000ull
#define LEAF 0x20000000ull             // the first GiB's leaf (2 MiB)
#define LEAF_SIZE 0x200000ull
#define IMAGE 0x10000000ull            // page 0x10000 of the first GiB
#define IMAGE_MAPPED 0x400000ull
#define MAX_IMAGE (1u << 20)
#define HEADER 64
#define ENTRIES 2048

static const uint64_t emap_addr = BIAS + EMAP_VADDR;
static const uint64_t arenas_addr = BIAS + ARENAS_VADDR;
static char module_path[64];

// An x86-64 ELF file: .rodata with the version string, a .bss holding
// the two globals, and the symbol table naming them.
static void make_module(void)
{
	static const char shstr[] = "\0.bss\0.symtab\0.strtab\0.shstrtab\0.rodata";
	static const char str[] = "\0je_arena_emap_global\0je_arenas";
	static const char ro[] = "\0005.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";
	Elf64_Sym syms[3] = {
		{0},
		{.st_name = 1, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = EMAP_VADDR, .st_size = EMAP_SIZE},
		{.st_name = 22, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = ARENAS_VADDR, .st_size = ARENAS_SIZE},
	};
	size_t sym_off = sizeof(Elf64_Ehdr), str_off = sym_off + sizeof(syms);
	size_t shstr_off = str_off + sizeof(str);
	size_t ro_off = shstr_off + sizeof(shstr);
	size_t sh_off = (ro_off + sizeof(ro) + 7) & ~(size_t)7;
	Elf64_Ehdr eh = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = sh_off, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 6, .e_shstrndx = 4,
	};
	Elf64_Shdr sh[6] = {
		{0},
		{.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
		 .sh_addr = EMAP_VADDR, .sh_offset = sym_off,
		 .sh_size = BSS_END - EMAP_VADDR, .sh_addralign = 64},
		{.sh_name = 6, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
		 .sh_size = sizeof(syms), .sh_link = 3, .sh_info = 3,
		 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)},
		{.sh_name = 14, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(str), .sh_addralign = 1},
		{.sh_name = 22, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
		 .sh_size = sizeof(shstr), .sh_addralign = 1},
		{.sh_name = 32, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		 .sh_addr = 0x1000, .sh_offset = ro_off, .sh_size = sizeof(ro),
		 .sh_addralign = 1},
	};
	uint8_t f[2048] = {0};
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sym_off, syms, sizeof(syms));
	memcpy(f + str_off, str, sizeof(str));
	memcpy(f + shstr_off, shstr, sizeof(shstr));
	memcpy(f + ro_off, ro, sizeof(ro));
	memcpy(f + sh_off, sh, sizeof(sh));
	int fd = memfd_create("hd-fuzz-jemalloc-module", 0);
	size_t size = sh_off + sizeof(sh);
	if (fd < 0 || write(fd, f, size) != (ssize_t)size) {
		perror("fuzz_jemalloc: module file");
		abort();
	}
	snprintf(module_path, sizeof(module_path), "/proc/self/fd/%d", fd);
}

struct mem {
	uint64_t header[HEADER / 8];
	const uint8_t *entries; // ENTRIES bytes
	const uint8_t *image;
	size_t len, mapped;
};

// Byte i of the module's .bss: the rtree's base and root[0], arenas[0..5].
static uint8_t bss_byte(const struct mem *m, uint64_t addr)
{
	uint64_t w = 0, off;
	if (addr >= emap_addr && addr < emap_addr + 8)
		w = m->header[0], off = addr - emap_addr;
	else if (addr >= emap_addr + 120 && addr < emap_addr + 128)
		w = m->header[1], off = addr - emap_addr - 120;
	else if (addr >= arenas_addr && addr < arenas_addr + 48)
		w = m->header[2 + (addr - arenas_addr) / 8], off = (addr - arenas_addr) % 8;
	else
		return 0;
	return (uint8_t)(w >> (8 * off));
}

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = arg;
	uint8_t *out = buf;
	if (addr >= BIAS + EMAP_VADDR && addr - (BIAS + EMAP_VADDR) <= BSS_END - EMAP_VADDR &&
	    len <= BSS_END - EMAP_VADDR - (addr - (BIAS + EMAP_VADDR))) {
		memset(out, 0, len);
		// Only the first words of each global are not zero.
		for (size_t i = 0; i < len && addr + i < emap_addr + 128; i++)
			out[i] = bss_byte(m, addr + i);
		for (uint64_t a = arenas_addr; a < arenas_addr + 48; a++)
			if (a >= addr && a < addr + len)
				out[a - addr] = bss_byte(m, a);
		return NULL;
	}
	if (addr >= LEAF && addr - LEAF <= LEAF_SIZE && len <= LEAF_SIZE - (addr - LEAF)) {
		// Zeros but the entries of the image's pages.
		uint64_t first = LEAF + 8 * (IMAGE >> 12);
		uint64_t lo = addr > first ? addr : first;
		uint64_t hi = addr + len < first + ENTRIES ? addr + len : first + ENTRIES;
		memset(out, 0, len);
		if (lo < hi)
			memcpy(out + (lo - addr), m->entries + (lo - first), hi - lo);
		return NULL;
	}
	if (addr >= IMAGE && addr - IMAGE <= m->mapped && len <= m->mapped - (addr - IMAGE)) {
		uint64_t off = addr - IMAGE;
		if (off < m->len) {
			size_t n = m->len - off < len ? m->len - off : len;
			memcpy(out, m->image + off, n);
			memset(out + n, 0, len - n);
		} else {
			memset(out, 0, len);
		}
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
	struct hd_mapping maps[3] = {
		{.start = IMAGE, .end = IMAGE + mem->mapped,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
		{.start = LEAF, .end = LEAF + LEAF_SIZE,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
		{.start = BIAS + EMAP_VADDR, .end = BIAS + BSS_END,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
	};
	for (size_t i = 0; i < 3 && !err; i++)
		err = hd_target_add_mapping(t, &maps[i]);
	struct hd_module mod = {.name = "/fuzz/libjemalloc.so.2", .file = module_path,
				.bias = BIAS, .start = BIAS + EMAP_VADDR,
				.end = BIAS + BSS_END};
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
	if (size < HEADER + ENTRIES)
		return 0;
	struct mem mem = {.entries = data + HEADER, .image = data + HEADER + ENTRIES,
			  .len = size - HEADER - ENTRIES, .mapped = IMAGE_MAPPED};
	memcpy(mem.header, data, HEADER);
	if (mem.len > MAX_IMAGE)
		mem.len = MAX_IMAGE;

	struct hd_target *t;
	struct hd_error *err = make_target(&mem, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	hd_fuzz_analyse(t, false, NULL, NULL);
	return 0;
}
