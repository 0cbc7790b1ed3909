// The mimalloc backend (core/heap/mimalloc/) over a synthetic memory
// image, then the graph, the dominators, and the stats, dominators and
// leaks reports, as fuzz_pool does for poolalloc.
//
// mimalloc is found as in a process: a module named libmimalloc.so.2 (a
// small ELF file made once by this harness, a memfd) whose .data holds
// the main heap and its tld, and whose symbol table names mi_version,
// whose code (`mov $209, %eax; ret`) the harness serves. Input: 24 bytes,
// the main heap's cookie, its thread_delayed_free list and its thread id,
// then one segment at SEGMENT: the input's first SEG_HEADER bytes are the
// segment's header (struct mi_segment_s and its slices), the rest is the
// memory from SEGMENT + 64 KiB on (the first pages), mapped up to the next
// 64 KiB; the rest of the segment is not in the target (its pages past
// that are unreadable). Seeds (seed_mimalloc.py): small,
// medium and huge pages with free, local_free and thread_free lists and a
// delayed-free block.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "fuzz_util.h"

#define BIAS 0x7f0000000000ull
#define TEXT_VADDR 0x2000ull
#define DATA_VADDR 0x4000ull
#define DATA_SIZE 0x2000ull
#define SEGMENT 0x20000000000ull
#define SEG_HEADER 41304u // 264 + 513 slices of 80 bytes
#define PAGES 0x10000ull  // where the input's tail is served
#define MAX_TAIL (4u << 20)
#define HEAP_DELAYED_FREE 2840
#define HEAP_THREAD_ID 2848
#define HEAP_COOKIE 2864

static char module_path[64];

// The module's file: an x86-64 ELF file with .text, .data, .bss and a
// symbol table naming mi_version and mi_malloc.
static void make_module(void)
{
	static const char shstr[] = "\0.text\0.data\0.bss\0.symtab\0.strtab\0.shstrtab";
	static const char str[] = "\0mi_version\0mi_malloc";
	Elf64_Sym syms[3] = {
		{0},
		{.st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
		 .st_shndx = 1, .st_value = TEXT_VADDR, .st_size = 6},
		{.st_name = 12, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
		 .st_shndx = 1, .st_value = TEXT_VADDR + 16, .st_size = 1},
	};
	size_t sym_off = sizeof(Elf64_Ehdr), str_off = sym_off + sizeof(syms);
	size_t shstr_off = str_off + sizeof(str);
	size_t sh_off = (shstr_off + sizeof(shstr) + 7) & ~(size_t)7;
	Elf64_Ehdr eh = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = sh_off, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 7, .e_shstrndx = 6,
	};
	// .text and .data are NOBITS here: their bytes come from the target.
	Elf64_Shdr sh[7] = {
		{0},
		{.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		 .sh_addr = TEXT_VADDR, .sh_offset = sym_off, .sh_size = 32,
		 .sh_addralign = 16},
		{.sh_name = 7, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
		 .sh_addr = DATA_VADDR, .sh_offset = sym_off, .sh_size = DATA_SIZE,
		 .sh_addralign = 64},
		{.sh_name = 13, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
		 .sh_addr = DATA_VADDR + DATA_SIZE, .sh_offset = sym_off, .sh_size = 64,
		 .sh_addralign = 64},
		{.sh_name = 18, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
		 .sh_size = sizeof(syms), .sh_link = 5, .sh_info = 1,
		 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)},
		{.sh_name = 26, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(str), .sh_addralign = 1},
		{.sh_name = 34, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
		 .sh_size = sizeof(shstr), .sh_addralign = 1},
	};
	uint8_t f[2048] = {0};
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + sym_off, syms, sizeof(syms));
	memcpy(f + str_off, str, sizeof(str));
	memcpy(f + shstr_off, shstr, sizeof(shstr));
	memcpy(f + sh_off, sh, sizeof(sh));
	int fd = memfd_create("hd-fuzz-mimalloc-module", 0);
	size_t size = sh_off + sizeof(sh);
	if (fd < 0 || write(fd, f, size) != (ssize_t)size) {
		perror("fuzz_mimalloc: module file");
		abort();
	}
	snprintf(module_path, sizeof(module_path), "/proc/self/fd/%d", fd);
}

struct mem {
	uint8_t data[DATA_SIZE]; // the main heap at 0, its tld at 0x1000
	const uint8_t *header, *tail;
	size_t header_len, tail_len;
	uint64_t mapped; // bytes mapped at SEGMENT
};

static const uint8_t text[32] = {0xb8, 0xd1, 0x00, 0x00, 0x00, 0xc3};

// Bytes of [off, off + len) of src (n bytes, zeros after) into buf.
static void serve(uint8_t *buf, uint64_t off, size_t len, const uint8_t *src,
		  size_t n)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = off + i < n ? src[off + i] : 0;
}

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = arg;
	uint64_t text_at = BIAS + TEXT_VADDR, data_at = BIAS + DATA_VADDR;
	if (addr >= text_at && addr - text_at <= 0x1000 && len <= 0x1000 - (addr - text_at)) {
		serve(buf, addr - text_at, len, text, sizeof(text));
		return NULL;
	}
	if (addr >= data_at && addr - data_at <= DATA_SIZE + 0x1000 &&
	    len <= DATA_SIZE + 0x1000 - (addr - data_at)) {
		serve(buf, addr - data_at, len, m->data, sizeof(m->data));
		return NULL;
	}
	if (addr >= SEGMENT && addr - SEGMENT <= m->mapped &&
	    len <= m->mapped - (addr - SEGMENT)) {
		uint64_t off = addr - SEGMENT;
		uint8_t *b = buf;
		memset(b, 0, len);
		if (off < m->header_len) {
			size_t n = m->header_len - off < len ? m->header_len - off : len;
			memcpy(b, m->header + off, n);
		}
		uint64_t lo = off > PAGES ? off : PAGES, hi = off + len;
		if (hi > PAGES + m->tail_len)
			hi = PAGES + m->tail_len;
		if (lo < hi)
			memcpy(b + (lo - off), m->tail + (lo - PAGES), hi - lo);
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
	struct hd_mapping maps[] = {
		{.start = BIAS + TEXT_VADDR, .end = BIAS + TEXT_VADDR + 0x1000,
		 .prot = HD_PROT_READ | HD_PROT_EXEC, .readable = true},
		{.start = BIAS + DATA_VADDR, .end = BIAS + DATA_VADDR + DATA_SIZE + 0x1000,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
		{.start = SEGMENT, .end = SEGMENT + mem->mapped,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
	};
	for (size_t i = 0; i < 3 && !err; i++)
		err = hd_target_add_mapping(t, &maps[i]);
	struct hd_module mod = {.name = "/fuzz/libmimalloc.so.2", .file = module_path,
				.bias = BIAS, .start = maps[0].start,
				.end = maps[1].end};
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
	if (size < 24)
		return 0;
	static struct mem mem;
	memset(mem.data, 0, sizeof(mem.data));
	uint64_t heap = BIAS + DATA_VADDR, tld = heap + 0x1000;
	memcpy(mem.data, &tld, 8);
	memcpy(mem.data + 0x1000 + 16, &heap, 8); // tld->heap_backing
	memcpy(mem.data + 0x1000 + 24, &heap, 8); // tld->heaps
	memcpy(mem.data + HEAP_COOKIE, data, 8);
	memcpy(mem.data + HEAP_DELAYED_FREE, data + 8, 8);
	memcpy(mem.data + HEAP_THREAD_ID, data + 16, 8);
	mem.header = data + 24;
	mem.header_len = size - 24 < SEG_HEADER ? size - 24 : SEG_HEADER;
	mem.tail = mem.header + mem.header_len;
	mem.tail_len = size - 24 - mem.header_len;
	if (mem.tail_len > MAX_TAIL)
		mem.tail_len = MAX_TAIL;
	// Only what the input holds is mapped (as in a core that lacks the
	// rest of the segment): glibc's search for an arena after the walk
	// scans every writable byte, and 32 MiB of zeros made 2 inputs a
	// second.
	mem.mapped = (PAGES + mem.tail_len + 0xffff) & ~0xffffull;

	struct hd_target *t;
	struct hd_error *err = make_target(&mem, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	hd_fuzz_analyse(t, false, NULL, NULL);
	return 0;
}
