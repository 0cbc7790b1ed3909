// The tcmalloc backend (core/heap/tcmalloc/, gperftools 2.10) over a
// synthetic memory image, then the graph, the dominators, and the stats,
// dominators and leaks reports, as fuzz_musl does for mallocng.
//
// The target (a callback target) has one module, /fuzz/libtcmalloc_minimal
// .so.4, a small ELF file made once by this harness (a memfd) with the
// string "gperftools 2.10", a .bss of BSS_SIZE bytes and the symbols
// ThreadCache::thread_heaps_ and Static::inited_ in it; the backend finds
// the page heap, central free lists and size map in that .bss by their
// shapes. Two memories, zeros but for what the input writes: the .bss,
// and the heap at IMAGE (HEAP_SIZE bytes: pages of spans, Span structs,
// thread caches, a page map leaf). Input: records of
//   u8 where (0: .bss, else the heap), u32 offset, u16 length, bytes,
// until the input ends (a record past its memory is cut). Seeds
// (seed_tcmalloc.py): a consistent heap of small spans of two classes
// with objects on a thread cache, the transfer cache and a span's object
// list, a large span and a free span; the same with a list that loops.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "fuzz_util.h"

#define BIAS 0x6a0000000000ull
#define BSS_VADDR 0x10000ull
#define BSS_SIZE 0x1ab000u
#define THREAD_HEAPS 0x1aa810u // offsets in the .bss
#define INITED 0x1aa818u
#define IMAGE 0x10000000ull
#define HEAP_SIZE 0x400000u
#define MAX_RECORDS 4096

static const uint64_t bss_addr = BIAS + BSS_VADDR;
static char module_path[64];
static uint8_t *bss, *heap;

static void make_module(void)
{
	static const char shstr[] = "\0.bss\0.symtab\0.strtab\0.shstrtab\0.rodata";
	static const char str[] = "\0_ZN8tcmalloc11ThreadCache13thread_heaps_E"
				  "\0_ZN8tcmalloc6Static7inited_E";
	static const char ro[] = "\0gperftools 2.10\0";
	Elf64_Sym syms[3] = {
		{0},
		{.st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = BSS_VADDR + THREAD_HEAPS, .st_size = 8},
		{.st_name = 43, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = BSS_VADDR + INITED, .st_size = 1},
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
		 .sh_addr = BSS_VADDR, .sh_offset = sym_off, .sh_size = BSS_SIZE,
		 .sh_addralign = 32},
		{.sh_name = 6, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
		 .sh_size = sizeof(syms), .sh_link = 3, .sh_info = 1,
		 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)},
		{.sh_name = 14, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(str), .sh_addralign = 1},
		{.sh_name = 22, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
		 .sh_size = sizeof(shstr), .sh_addralign = 1},
		{.sh_name = 32, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		 .sh_addr = 0x1000, .sh_offset = ro_off, .sh_size = sizeof(ro),
		 .sh_addralign = 1},
	};
	uint8_t f[1024] = {0};
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sym_off, syms, sizeof(syms));
	memcpy(f + str_off, str, sizeof(str));
	memcpy(f + shstr_off, shstr, sizeof(shstr));
	memcpy(f + ro_off, ro, sizeof(ro));
	memcpy(f + sh_off, sh, sizeof(sh));
	int fd = memfd_create("hd-fuzz-tcmalloc-module", 0);
	size_t size = sh_off + sizeof(sh);
	bss = calloc(1, BSS_SIZE);
	heap = calloc(1, HEAP_SIZE);
	if (fd < 0 || write(fd, f, size) != (ssize_t)size || !bss || !heap) {
		perror("fuzz_tcmalloc: module file");
		abort();
	}
	snprintf(module_path, sizeof(module_path), "/proc/self/fd/%d", fd);
}

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	if (addr >= bss_addr && addr - bss_addr <= BSS_SIZE &&
	    len <= BSS_SIZE - (addr - bss_addr)) {
		memcpy(buf, bss + (addr - bss_addr), len);
		return NULL;
	}
	if (addr >= IMAGE && addr - IMAGE <= HEAP_SIZE &&
	    len <= HEAP_SIZE - (addr - IMAGE)) {
		memcpy(buf, heap + (addr - IMAGE), len);
		return NULL;
	}
	return hd_error_at(HD_ERROR_FAULT, addr, "no memory at 0x%llx",
			   (unsigned long long)addr);
}

static struct hd_error *make_target(struct hd_target **ret)
{
	struct hd_target *t;
	struct hd_error *err = hd_target_create_callback(read_mem, NULL, &t);
	if (err)
		return err;
	struct hd_mapping img = {.start = IMAGE, .end = IMAGE + HEAP_SIZE,
				 .prot = HD_PROT_READ | HD_PROT_WRITE,
				 .readable = true};
	struct hd_mapping g = {.start = bss_addr, .end = bss_addr + BSS_SIZE,
			       .prot = HD_PROT_READ | HD_PROT_WRITE,
			       .readable = true};
	err = hd_target_add_mapping(t, &img);
	if (!err)
		err = hd_target_add_mapping(t, &g);
	struct hd_module mod = {.name = "/fuzz/libtcmalloc_minimal.so.4",
				.file = module_path, .bias = BIAS,
				.start = g.start, .end = g.end};
	if (!err)
		err = hd_target_add_module(t, &mod);
	if (err) {
		hd_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

// Writes the input's records into the two memories (zeroed first).
static void apply(const uint8_t *data, size_t size)
{
	memset(bss, 0, BSS_SIZE);
	memset(heap, 0, HEAP_SIZE);
	size_t pos = 0;
	for (unsigned n = 0; n < MAX_RECORDS && pos + 7 <= size; n++) {
		uint8_t where = data[pos];
		uint32_t off;
		uint16_t len;
		memcpy(&off, data + pos + 1, 4);
		memcpy(&len, data + pos + 5, 2);
		pos += 7;
		if (len > size - pos)
			len = (uint16_t)(size - pos);
		uint8_t *mem = where ? heap : bss;
		uint32_t cap = where ? HEAP_SIZE : BSS_SIZE;
		if (off < cap)
			memcpy(mem + off, data + pos, len < cap - off ? len : cap - off);
		pos += len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!module_path[0])
		make_module();
	apply(data, size);
	struct hd_target *t;
	struct hd_error *err = make_target(&t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	hd_fuzz_analyse(t, false, NULL, NULL);
	return 0;
}
