// The CFI unwinder (core/debuginfo/unwind.c, with libdwarf's CIE/FDE
// parsing and the expression evaluator of dwarf_expr.c) over mutated
// .eh_frame and .debug_frame, a frame's registers and its stack.
//
// Input: a head (struct head), then eh_len bytes of .eh_frame, df_len
// bytes of .debug_frame, and the rest the stack: memory at r[rsp] of
// frame 0 onwards (reads elsewhere fail). The harness wraps both sections
// in a small ELF file (.eh_frame at eh_addr, for its pc-relative
// pointers), opens it as a module's file, and unwinds up to 16 frames from
// pc. Seeds (seed_unwind.py): the sections of small programs built with
// .eh_frame and with .debug_frame, pcs inside their functions.
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/frames_internal.h"
#include "fuzz_util.h"

struct head {
	uint64_t eh_addr; // .eh_frame's sh_addr
	uint64_t pc;      // frame 0's pc (link-time)
	uint64_t r[HD_DW_NREGS];
	uint32_t valid;
	uint16_t eh_len, df_len;
} __attribute__((packed));

struct stack {
	const uint8_t *bytes;
	size_t len;
	uint64_t base;
};

static bool read_stack(void *arg, uint64_t addr, uint64_t *ret)
{
	const struct stack *s = arg;
	if (addr < s->base || addr - s->base > s->len || s->len - (addr - s->base) < 8)
		return false;
	memcpy(ret, s->bytes + (addr - s->base), 8);
	return true;
}

// An x86-64 ELF file holding .eh_frame and .debug_frame; malloc'd.
static uint8_t *make_elf(const struct head *h, const uint8_t *eh,
			 const uint8_t *df, size_t *size)
{
	static const char names[] = "\0.eh_frame\0.debug_frame\0.shstrtab";
	size_t eh_off = sizeof(Elf64_Ehdr), df_off = eh_off + h->eh_len;
	size_t str_off = df_off + h->df_len;
	size_t sh_off = (str_off + sizeof(names) + 7) & ~(size_t)7;
	*size = sh_off + 4 * sizeof(Elf64_Shdr);
	uint8_t *f = calloc(1, *size);
	if (!f)
		abort();
	Elf64_Ehdr eh_hdr = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = sh_off, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 3,
	};
	memcpy(f, &eh_hdr, sizeof(eh_hdr));
	memcpy(f + eh_off, eh, h->eh_len);
	memcpy(f + df_off, df, h->df_len);
	memcpy(f + str_off, names, sizeof(names));
	Elf64_Shdr sh[4] = {
		{0},
		{.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		 .sh_addr = h->eh_addr, .sh_offset = eh_off, .sh_size = h->eh_len,
		 .sh_addralign = 8},
		{.sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = df_off,
		 .sh_size = h->df_len, .sh_addralign = 8},
		{.sh_name = 24, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(names), .sh_addralign = 1},
	};
	memcpy(f + sh_off, sh, sizeof(sh));
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct head h;
	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	size -= sizeof(h);
	data += sizeof(h);
	if (h.eh_len > size || h.df_len > size - h.eh_len)
		return 0;
	size_t elf_size;
	uint8_t *elf = make_elf(&h, data, data + h.eh_len, &elf_size);
	const char *path = hd_fuzz_file(elf, elf_size);
	free(elf);
	struct stack st = {.bytes = data + h.eh_len + h.df_len,
			   .len = size - h.eh_len - h.df_len,
			   .base = h.r[HD_DW_RSP]};

	struct hd_mod_dwarf md;
	hd_mod_dwarf_open(&md, NULL, path, NULL);
	struct hd_unwind_regs regs = {.valid = h.valid & ((1u << HD_DW_NREGS) - 1)};
	memcpy(regs.r, h.r, sizeof(regs.r));
	regs.r[HD_DW_RA] = h.pc;
	regs.valid |= 1u << HD_DW_RA;
	bool sig = false;
	int k = 0;
	for (; k < 16; k++) {
		uint64_t pc = regs.r[HD_DW_RA];
		uint64_t lookup = k == 0 || sig ? pc : pc - 1;
		struct hd_unwind_regs caller;
		uint64_t cfa = 0;
		struct hd_error *corrupt;
		enum hd_unwind_status status =
			hd_cfi_step(&md, lookup, &regs, read_stack, &st, &caller,
				    &cfa, &sig, &corrupt);
		if (status == HD_UNWIND_CORRUPT) {
			if (getenv("HD_FUZZ_VERBOSE"))
				fprintf(stderr, "%s\n", corrupt->message);
			hd_error_destroy(corrupt);
		}
		if (status != HD_UNWIND_OK)
			break;
		regs = caller;
	}
	if (getenv("HD_FUZZ_VERBOSE"))
		fprintf(stderr, "unwound %d frames from 0x%llx\n", k,
			(unsigned long long)h.pc);
	hd_mod_dwarf_close(&md);
	return 0;
}
