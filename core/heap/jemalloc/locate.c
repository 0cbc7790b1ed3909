// Finding jemalloc's globals: the emap (whose rtree maps every extent) and
// arenas[]. A build with symbols names them (je_arena_emap_global,
// je_arenas: a static copy, an unstripped library). Debian's
// libjemalloc.so.2 is stripped and hides them, so they are found in the
// code of its exported functions (malloc_usable_size, free, sallocx ...):
// every RIP-relative address those functions and the functions they call
// use is a candidate, and a candidate is taken only when the memory there
// has the shape of the global (an rtree whose leaves map pages to the
// descriptors of those pages; an array whose entry i is an arena of index
// i). Nothing is assumed from where a global sits in the library.
#include <capstone/capstone.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/elf_symbols.h"
#include "heap/jemalloc/jemalloc_internal.h"
#include <unistd.h>

bool je_read64(struct hd_target *t, uint64_t addr, uint64_t *ret)
{
	struct hd_error *err = hd_target_read(t, addr, ret, 8);
	hd_error_destroy(err);
	return !err;
}

bool je_read32(struct hd_target *t, uint64_t addr, uint32_t *ret)
{
	struct hd_error *err = hd_target_read(t, addr, ret, 4);
	hd_error_destroy(err);
	return !err;
}

// A base_t of index ind (base_t starts with its ehooks, whose first word
// is the base's index).
static bool base_shape(struct hd_target *t, uint64_t base, unsigned ind)
{
	uint32_t v;
	return base && base % 8 == 0 && je_read32(t, base, &v) && v == ind;
}

bool je_emap_shape(struct hd_target *t, const struct je_layout *l,
		   uint64_t emap, uint64_t *b0)
{
	uint64_t base;
	if (!emap || emap % 8 || !je_read64(t, emap + l->rtree_base, &base) ||
	    !base_shape(t, base, 0))
		return false;
	size_t nroot = (size_t)1 << l->rtree_bits0;
	struct hd_view root;
	struct hd_error *err = hd_target_view(t, emap + l->rtree_root,
					      nroot * 8, &root);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	bool ok = false;
	// The first leaf: its first mapped page must lie in the extent its
	// descriptor describes.
	for (size_t i = 0; i < nroot && !ok; i++) {
		uint64_t leaf;
		memcpy(&leaf, root.data + i * 8, 8);
		if (!leaf)
			continue;
		if (leaf % 8)
			break;
		size_t nleaf = (size_t)1 << l->rtree_bits1;
		struct hd_view lv;
		err = hd_target_view(t, leaf, nleaf * 8, &lv);
		if (err) {
			hd_error_destroy(err);
			break;
		}
		for (size_t k = 0; k < nleaf; k++) {
			uint64_t bits;
			memcpy(&bits, lv.data + k * 8, 8);
			if (!bits)
				continue;
			unsigned nhib = 64 - l->lg_vaddr;
			uint64_t edata = (uint64_t)((int64_t)(bits << nhib) >> nhib) &
					 ~(uint64_t)(l->edata_align - 1);
			uint64_t page = ((uint64_t)i << (l->rtree_bits1 + l->lg_page)) |
					((uint64_t)k << l->lg_page);
			uint64_t addr, size;
			ok = je_read64(t, edata + l->edata_addr, &addr) &&
			     je_read64(t, edata + l->edata_size_esn, &size);
			addr &= ~((1ULL << l->lg_page) - 1);
			size &= ~((1ULL << l->lg_page) - 1);
			ok = ok && size && addr <= page && page < addr + size;
			break;
		}
		hd_view_deinit(&lv);
		break;
	}
	hd_view_deinit(&root);
	if (ok)
		*b0 = base;
	return ok;
}

// An arena_t of index ind whose base is of index ind (arena 0's is b0).
static bool arena_shape(struct hd_target *t, const struct je_layout *l,
			uint64_t a, unsigned ind, uint64_t b0)
{
	uint32_t v;
	uint64_t base;
	return a && a % 64 == 0 && je_read32(t, a + l->arena_ind, &v) &&
	       v == ind && je_read64(t, a + l->arena_base, &base) &&
	       base_shape(t, base, ind) && (ind || base == b0);
}

// The arenas an array at c holds if it is arenas[] (entry i 0 or an arena
// of index i, entry 0 arena 0), else 0.
static size_t arenas_shape(struct hd_target *t, const struct je_layout *l,
			   uint64_t c, uint64_t b0)
{
	uint64_t a0;
	if (!c || c % 8 || !je_read64(t, c, &a0) || !arena_shape(t, l, a0, 0, b0))
		return 0;
	size_t n = 1;
	for (unsigned i = 1; i < l->arena_limit; i++) {
		uint64_t a;
		if (!je_read64(t, c + 8ULL * i, &a))
			break;
		if (!a)
			continue;
		if (!arena_shape(t, l, a, i, b0))
			return 0;
		n++;
	}
	return n;
}

static bool symbol(const struct hd_heap_source *src, const struct hd_module *m,
		   const char *name, uint64_t *addr)
{
	uint64_t size;
	if (src->di) {
		const char *hint = NULL;
		if (m && !m->is_exe) {
			hint = strrchr(m->name, '/');
			hint = hint ? hint + 1 : m->name;
		}
		struct hd_error *err = hd_debuginfo_find_symbol(src->di, hint, name,
								addr, &size);
		if (!err)
			return true;
		hd_error_destroy(err);
	}
	if (m && m->file) {
		struct hd_error *err = hd_elf_find_symbol(m->file, name, addr, &size);
		if (!err) {
			*addr += m->bias;
			return true;
		}
		hd_error_destroy(err);
	}
	return false;
}

// Exported functions whose code (or callees') reaches the globals.
static const char *const entry_points[] = {
	"malloc_usable_size", "sallocx", "free", "dallocx", "sdallocx",
	"mallocx", "rallocx", "xallocx", "realloc", "malloc", "calloc",
	"je_malloc_usable_size", "je_sallocx", "je_free", "je_mallocx",
};
#define MAX_FUNCS 256
#define MAX_FUNC_BYTES 4096
#define MAX_CANDIDATES 4096

struct scan {
	uint64_t funcs[MAX_FUNCS];
	unsigned depth[MAX_FUNCS];
	size_t nfuncs;
	uint64_t cand[MAX_CANDIDATES];
	size_t ncand;
};

static void push_func(struct scan *s, uint64_t addr, unsigned depth)
{
	for (size_t i = 0; i < s->nfuncs; i++)
		if (s->funcs[i] == addr)
			return;
	if (s->nfuncs < MAX_FUNCS) {
		s->depth[s->nfuncs] = depth;
		s->funcs[s->nfuncs++] = addr;
	}
}

static void push_cand(struct scan *s, uint64_t addr)
{
	for (size_t i = 0; i < s->ncand; i++)
		if (s->cand[i] == addr)
			return;
	if (s->ncand < MAX_CANDIDATES)
		s->cand[s->ncand++] = addr;
}

// Code from the module's file when the target does not hold it (a core
// read through lldb has no file-backed text): the PT_LOAD segment holding
// the link-time address, read at its file offset.
static bool read_file_code(const struct hd_module *m, uint64_t addr,
			   uint8_t *buf, size_t len)
{
	if (!m->file)
		return false;
	int fd = open(m->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	Elf64_Ehdr eh;
	bool ok = false;
	uint64_t vaddr = addr - m->bias;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) &&
	    eh.e_phnum < 256) {
		for (unsigned i = 0; i < eh.e_phnum && !ok; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr ||
			    vaddr + len > ph.p_vaddr + ph.p_filesz)
				continue;
			ok = pread(fd, buf, len, (off_t)(ph.p_offset + vaddr - ph.p_vaddr)) ==
			     (ssize_t)len;
		}
	}
	close(fd);
	return ok;
}

// Decodes the functions breadth first (to depth 3), collecting the data
// addresses they name RIP-relatively inside the module's range.
static void scan_code(struct hd_target *t, const struct hd_module *m,
		      uint64_t data_end, struct scan *s)
{
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *insn = cs_malloc(cs);
	uint8_t *code = malloc(MAX_FUNC_BYTES);
	for (size_t f = 0; insn && code && f < s->nfuncs; f++) {
		size_t len = MAX_FUNC_BYTES;
		while (len >= 16) {
			struct hd_error *err = hd_target_read(t, s->funcs[f], code, len);
			if (!err)
				break;
			hd_error_destroy(err);
			if (read_file_code(m, s->funcs[f], code, len))
				break;
			len /= 2;
		}
		if (len < 16)
			continue;
		const uint8_t *p = code;
		size_t left = len;
		uint64_t addr = s->funcs[f];
		while (cs_disasm_iter(cs, &p, &left, &addr, insn)) {
			cs_x86 *x = &insn->detail->x86;
			for (int o = 0; o < x->op_count; o++) {
				cs_x86_op *op = &x->operands[o];
				if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP &&
				    op->mem.index == X86_REG_INVALID) {
					uint64_t a = insn->address + insn->size +
						     (uint64_t)op->mem.disp;
					if (a >= m->start && a < data_end)
						push_cand(s, a);
				}
				if (op->type == X86_OP_IMM &&
				    (insn->id == X86_INS_CALL || insn->id == X86_INS_JMP) &&
				    s->depth[f] < 3 && (uint64_t)op->imm >= m->start &&
				    (uint64_t)op->imm < m->end)
					push_func(s, (uint64_t)op->imm, s->depth[f] + 1);
			}
			if (insn->id == X86_INS_INT3 || insn->id == X86_INS_UD2)
				break;
		}
	}
	free(code);
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
}

struct hd_error *je_locate(const struct hd_heap_source *src,
			   const struct hd_module *m,
			   const struct je_layout *l, struct je_globals *ret)
{
	struct hd_target *t = src->t;
	memset(ret, 0, sizeof(*ret));
	ret->l = l;
	uint64_t emap = 0, arenas = 0;
	bool sym_emap = symbol(src, m, "je_arena_emap_global", &emap) &&
			je_emap_shape(t, l, emap, &ret->b0);
	if (sym_emap)
		ret->emap = emap;
	if (sym_emap && symbol(src, m, "je_arenas", &arenas) &&
	    arenas_shape(t, l, arenas, ret->b0)) {
		ret->arenas = arenas;
		snprintf(ret->method, sizeof(ret->method),
			 "symbols je_arena_emap_global and je_arenas");
		return NULL;
	}
	if (!m)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: jemalloc's emap and arenas[] have no symbols and no library to read their code from",
				       hd_target_name(t));
	struct scan *s = calloc(1, sizeof(*s));
	if (!s)
		return &hd_error_no_memory;
	for (size_t i = 0; i < sizeof(entry_points) / sizeof(entry_points[0]); i++) {
		uint64_t a;
		if (symbol(src, m, entry_points[i], &a) && a >= m->start && a < m->end)
			push_func(s, a, 0);
	}
	// The module's range ends with its file's mappings; .bss (where the
	// globals are) continues past them, to its sections' end.
	uint64_t data_end = m->end;
	struct hd_elf_section *secs;
	size_t nsecs;
	if (m->file && !hd_elf_sections(m->file, &secs, &nsecs)) {
		for (size_t i = 0; i < nsecs; i++)
			if (secs[i].addr && secs[i].addr + secs[i].size + m->bias > data_end)
				data_end = secs[i].addr + secs[i].size + m->bias;
		hd_elf_free_sections(secs, nsecs);
	}
	scan_code(t, m, data_end, s);
	// rtree lookups name the emap itself (rtree_leaf_elm_lookup_hard's
	// argument) or its root array.
	for (size_t i = 0; i < s->ncand && !ret->emap; i++) {
		uint64_t c = s->cand[i];
		if (je_emap_shape(t, l, c, &ret->b0))
			ret->emap = c;
		else if (c > l->rtree_root &&
			 je_emap_shape(t, l, c - l->rtree_root, &ret->b0))
			ret->emap = c - l->rtree_root;
	}
	size_t best = 0;
	for (size_t i = 0; i < s->ncand && ret->emap; i++) {
		size_t n = arenas_shape(t, l, s->cand[i], ret->b0);
		if (n > best) {
			best = n;
			arenas = s->cand[i];
		}
	}
	size_t nfuncs = s->nfuncs, ncand = s->ncand;
	free(s);
	if (!ret->emap || !best)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: jemalloc %s in %s: %s not found (%zu functions decoded, %zu data addresses checked)",
				       hd_target_name(t), l->version, m->name,
				       !ret->emap ? "its emap (the rtree of extents)" : "arenas[]",
				       nfuncs, ncand);
	ret->arenas = arenas;
	snprintf(ret->method, sizeof(ret->method),
		 "%s from the code of its exported functions (%zu functions, %zu data addresses), checked by shape",
		 sym_emap ? "emap from symbol je_arena_emap_global, arenas[]"
			  : "emap and arenas[]", nfuncs, ncand);
	return NULL;
}



// jemalloc never initialised (nothing allocated yet): its library's .bss,
// where every global it writes lives, is still all zeros.
bool je_never_initialised(struct hd_target *t, const struct hd_module *m)
{
	struct hd_elf_section *secs;
	size_t nsecs;
	if (!m->file || hd_elf_sections(m->file, &secs, &nsecs))
		return false;
	bool zero = false;
	for (size_t i = 0; i < nsecs; i++) {
		if (strcmp(secs[i].name, ".bss") != 0 || !secs[i].size ||
		    secs[i].size > (64u << 20))
			continue;
		struct hd_view v;
		struct hd_error *err = hd_target_view(t, secs[i].addr + m->bias,
						      secs[i].size, &v);
		if (err) {
			hd_error_destroy(err);
			break;
		}
		zero = true;
		for (size_t k = 0; k < v.len && zero; k++)
			zero = !v.data[k];
		hd_view_deinit(&v);
		break;
	}
	hd_elf_free_sections(secs, nsecs);
	return zero;
}
