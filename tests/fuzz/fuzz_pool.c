// The poolalloc backend (core/heap/poolalloc/) over a synthetic memory
// image, then the graph, the dominators, and the stats, dominators and
// leaks reports, as fuzz_heap does for glibc.
//
// poolalloc is found by its global `poolalloc_pools`: the target (a
// callback target) has one module, a small ELF file made once by this
// harness (a memfd) whose symbol table defines that global, so the
// backend finds the symbol as in a process using the allocator. (This
// executable's own symbols would do too, but every session scans the
// module's symbols for foreign allocators: ten times slower.) Input: 8
// bytes, the global's value (the first pool), then the memory image,
// served at IMAGE (whole pages, zeros after the input). Seeds
// (seed_pool.py): pools with used and free blocks, free lists, a second
// pool linked from the first.
//
// Then the merged path (several allocators in one process, merge.c): the
// pool's heap walked alone (--allocator poolalloc) is merged with a table
// of glibc chunks the same input describes (its last 256 bytes: chunks that
// may overlap the pool's blocks, share their addresses, or lie in no
// region), and the merged table is checked for what every reader relies
// on: address order, no two extents overlapping, each block found at its
// address, totals that add up to the table. A violation aborts.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "heap/backend.h"
#include "heap/glibc/glibc_internal.h"
#include "fuzz_util.h"

#define BIAS 0x6a0000000000ull
#define GLOBAL_VADDR 0x4000ull // the global's link-time address
#define IMAGE 0x10000000ull
#define MAX_IMAGE (1u << 20)

static const uint64_t global_addr = BIAS + GLOBAL_VADDR;
static char module_path[64];

// The module's file: an x86-64 ELF file with a .bss holding
// poolalloc_pools and the symbol table naming it.
static void make_module(void)
{
	static const char shstr[] = "\0.bss\0.symtab\0.strtab\0.shstrtab";
	static const char str[] = "\0poolalloc_pools";
	Elf64_Sym syms[2] = {
		{0},
		{.st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
		 .st_shndx = 1, .st_value = GLOBAL_VADDR, .st_size = 8},
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
		 .sh_addr = GLOBAL_VADDR, .sh_offset = sym_off, .sh_size = 8,
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
	int fd = memfd_create("hd-fuzz-pool-module", 0);
	size_t size = sh_off + sizeof(sh);
	if (fd < 0 || write(fd, f, size) != (ssize_t)size) {
		perror("fuzz_pool: module file");
		abort();
	}
	snprintf(module_path, sizeof(module_path), "/proc/self/fd/%d", fd);
}

struct mem {
	uint64_t global;
	const uint8_t *image;
	size_t len, mapped;
};

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = arg;
	if (addr >= global_addr && addr - global_addr < 8 && len <= 8 - (addr - global_addr)) {
		memcpy(buf, (const uint8_t *)&m->global + (addr - global_addr), len);
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
	struct hd_module mod = {.name = "/fuzz/pool", .file = module_path,
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

// glibc chunks from the input's last words: offset into the image, size,
// state, mmapped.
static struct hd_heap *glibc_part(const uint8_t *data, size_t size)
{
	if (size > 256) {
		data += size - 256;
		size = 256;
	}
	struct hd_heap *g = NULL;
	if (hd_heap_alloc(&g))
		abort();
	glibc_heap_declare(g);
	struct hd_region arena = {.addr = IMAGE, .kind = "arena", .primary = true};
	hd_heap_add_region(g, &arena);
	uint64_t next = 0; // chunks in order, apart (the backend's contract)
	for (size_t i = 0; i + 4 <= size; i += 4) {
		uint32_t w;
		memcpy(&w, data + i, 4);
		uint64_t chunk = IMAGE + ((uint64_t)(w & 0xffff) << 4);
		uint64_t csize = (uint64_t)((w >> 16) % 64 + 2) << 4;
		if (chunk < next)
			continue;
		bool mmapped = w >> 31;
		if (!hd_heap_push(g, chunk, csize,
				  (w >> 22) & 1 ? HD_STATE_FREE : HD_STATE_USED,
				  (w >> 22) & 1 ? HD_LIST_TCACHE : HD_LIST_NONE,
				  mmapped ? HD_ARENA_NONE : 0, mmapped))
			abort();
		next = chunk + csize;
	}
	hd_heap_count_totals(g);
	return g;
}

static void check_merged(const struct hd_heap *h)
{
	uint64_t counted = 0;
	for (size_t a = 0; a < hd_heap_num_allocators(h); a++) {
		struct hd_allocator_totals t;
		hd_heap_allocator_totals(h, a, &t);
		counted += t.used_blocks + t.free_blocks + t.reserve_blocks +
			   t.internal_blocks;
	}
	if (counted != hd_heap_num_blocks(h))
		abort();
	for (size_t i = 0; i < hd_heap_num_blocks(h); i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		if (b.allocator >= hd_heap_num_allocators(h) ||
		    b.list >= hd_heap_num_free_lists(h))
			abort();
		if (i && (h->addr[i] <= h->addr[i - 1] ||
			  hd_heap_extent_start(h, i) < hd_heap_extent_end(h, i - 1)))
			abort();
		if (b.usable && hd_heap_find(h, b.addr) != (int64_t)i)
			abort();
	}
}

static void fuzz_merge(struct hd_session *s, const uint8_t *data, size_t size)
{
	struct hd_heap_options o = {.allocators = "poolalloc"};
	struct hd_heap *parts[2] = {NULL, glibc_part(data, size)}, *h = NULL;
	struct hd_error *err = hd_heap_walk(hd_session_target(s),
					    hd_session_debuginfo(s), &o, &parts[0]);
	if (err) {
		hd_error_destroy(err);
		hd_heap_destroy(parts[1]);
		return;
	}
	hd_heap_count_totals(parts[0]);
	err = hd_heap_merge(parts, 2, &h);
	if (err) {
		hd_error_destroy(err);
		return;
	}
	check_merged(h);
	if (getenv("HD_FUZZ_VERBOSE"))
		fprintf(stderr, "merged: %zu blocks of %zu allocators, %zu problems\n",
			hd_heap_num_blocks(h), hd_heap_num_allocators(h),
			hd_heap_num_problems(h));
	hd_heap_destroy(h);
}

struct input {
	const uint8_t *data;
	size_t size;
};

static void merge_after(struct hd_session *s, void *arg)
{
	const struct input *in = arg;
	fuzz_merge(s, in->data, in->size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!module_path[0])
		make_module();
	if (size < 8)
		return 0;
	struct mem mem = {.image = data + 8, .len = size - 8};
	memcpy(&mem.global, data, 8);
	if (mem.len > MAX_IMAGE)
		mem.len = MAX_IMAGE;
	mem.mapped = (mem.len + 0xfff) & ~(size_t)0xfff;

	struct hd_target *t;
	struct hd_error *err = make_target(&mem, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	struct input in = {data + 8, size - 8};
	hd_fuzz_analyse(t, false, merge_after, &in);
	return 0;
}
