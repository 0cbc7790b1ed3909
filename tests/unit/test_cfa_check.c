// Unit test of the call frame instruction check that keeps corrupt CFI
// away from libdwarf 20210528 (core/debuginfo/cfa_check.c, docs/fuzzing.md
// finding 12): streams cut short in each kind of operand (address, 1-2-4
// byte deltas, ULEB128, SLEB128, the second operand), expression blocks
// longer than the bytes left (a huge length too: the one that made
// libdwarf wrap its pointer into freed memory), unknown opcodes, each
// refused with the opcode, its offset and what is missing; sound streams
// (every opcode with its operands, a block ending exactly at the end)
// pass; and every FDE (with its CIE) of real objects passes:
// this test's own .eh_frame, the frames fixture's and libc's. And the
// fuzzer's inputs, through hd_cfi_step as the unwinder calls it: the step
// is refused with the FDE named (in the gcc build, without the check,
// libdwarf's wild read happens not to crash there, so this is what fails).
//
// Usage: test_cfa_check FRAMES_FIXTURE REGRESS_DIR (tests/fuzz/regress/unwind)
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check_util.h"
#include "debuginfo/cfa_check.h"
#include "debuginfo/frames_internal.h"
#include "heapdom.h"
#include "../fuzz/fuzz_util.h"

static const char *frames_fixture, *regress_dir;

// regress_dir/name, in a static buffer.
static const char *regress_dir_file(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", regress_dir, name);
	return buf;
}

// hd_cfa_check on bytes must fail with exactly message want.
#define REFUSED(want, ...)                                                    \
	do {                                                                  \
		static const uint8_t b[] = {__VA_ARGS__};                     \
		struct hd_error *e = hd_cfa_check(b, sizeof(b), 8);           \
		ck_assert_msg(e, "accepted: %s", want);                       \
		ck_assert_int_eq(e->code, HD_ERROR_FORMAT);                   \
		ck_assert_str_eq(e->message, want);                           \
		hd_error_destroy(e);                                          \
	} while (0)

#define ACCEPTED(asize, ...)                                                  \
	do {                                                                  \
		static const uint8_t b[] = {__VA_ARGS__};                     \
		ck_assert_no_error(hd_cfa_check(b, sizeof(b), asize));        \
	} while (0)

START_TEST(test_truncated_operands)
{
	// def_cfa r7+8, then set_loc with 3 of its 8 address bytes.
	REFUSED("corrupt CFI: DW_CFA_set_loc at offset 3 needs 8 bytes, 3 left",
		0x0c, 0x07, 0x08, 0x01, 0x10, 0x20, 0x30);
	REFUSED("corrupt CFI: DW_CFA_advance_loc1 at offset 0 needs 1 bytes, 0 left",
		0x02);
	REFUSED("corrupt CFI: DW_CFA_advance_loc2 at offset 1 needs 2 bytes, 1 left",
		0x00, 0x03, 0x01);
	REFUSED("corrupt CFI: DW_CFA_advance_loc4 at offset 0 needs 4 bytes, 3 left",
		0x04, 0x01, 0x02, 0x03);
	// A ULEB128 whose last byte still says "more".
	REFUSED("corrupt CFI: DW_CFA_def_cfa_offset at offset 0: its LEB128 operand runs past the instructions' end (2 bytes left)",
		0x0e, 0x80, 0x81);
	// The primary DW_CFA_offset (0x80 | reg) with no offset.
	REFUSED("corrupt CFI: DW_CFA_offset at offset 1: its LEB128 operand runs past the instructions' end (0 bytes left)",
		0x41, 0x86);
	// SLEB128 cut short.
	REFUSED("corrupt CFI: DW_CFA_def_cfa_offset_sf at offset 0: its LEB128 operand runs past the instructions' end (1 bytes left)",
		0x13, 0xff);
	// The second operand missing.
	REFUSED("corrupt CFI: DW_CFA_def_cfa at offset 0: its LEB128 operand runs past the instructions' end (0 bytes left)",
		0x0c, 0x07);
	REFUSED("corrupt CFI: DW_CFA_val_offset_sf at offset 1: its LEB128 operand runs past the instructions' end (0 bytes left)",
		0x0a, 0x15, 0x06);
	REFUSED("corrupt CFI: DW_CFA_GNU_args_size at offset 0: its LEB128 operand runs past the instructions' end (0 bytes left)",
		0x2e);
	// set_loc with a 4-byte address: 3 left is still short.
	static const uint8_t b4[] = {0x01, 0x10, 0x20, 0x30};
	struct hd_error *e = hd_cfa_check(b4, sizeof(b4), 4);
	ck_assert(e);
	ck_assert_str_eq(e->message, "corrupt CFI: DW_CFA_set_loc at offset 0 needs 4 bytes, 3 left");
	hd_error_destroy(e);
}
END_TEST

START_TEST(test_blocks_past_end)
{
	REFUSED("corrupt CFI: DW_CFA_def_cfa_expression at offset 0: its expression block needs 3 bytes, 2 left",
		0x0f, 0x03, 0x77, 0x08);
	REFUSED("corrupt CFI: DW_CFA_expression at offset 0: its expression block needs 2 bytes, 1 left",
		0x10, 0x06, 0x02, 0x76);
	REFUSED("corrupt CFI: DW_CFA_val_expression at offset 1: its expression block needs 5 bytes, 0 left",
		0x00, 0x16, 0x10, 0x05);
	// The fuzzer's case: a length near 2^64 (libdwarf added it to its
	// pointer, which wrapped to below the instructions).
	REFUSED("corrupt CFI: DW_CFA_expression at offset 0: its expression block needs 18446744073709548475 bytes, 2 left",
		0x10, 0x10, 0xbb, 0xe7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0x01, 0x0b, 0x0c);
	// The block's length itself cut short.
	REFUSED("corrupt CFI: DW_CFA_def_cfa_expression at offset 0: its LEB128 operand runs past the instructions' end (1 bytes left)",
		0x0f, 0x83);
}
END_TEST

START_TEST(test_unknown_opcodes)
{
	REFUSED("corrupt CFI: unknown opcode 0x17 at offset 2", 0x0e, 0x10, 0x17);
	REFUSED("corrupt CFI: unknown opcode 0x1d at offset 0", 0x1d, 0, 0, 0, 0, 0, 0, 0, 0);
	REFUSED("corrupt CFI: unknown opcode 0x3f at offset 0", 0x3f);
	REFUSED("corrupt CFI: unknown opcode 0x30 at offset 1", 0x00, 0x30);
}
END_TEST

START_TEST(test_sound_streams)
{
	ck_assert_no_error(hd_cfa_check(NULL, 0, 8));
	// Every opcode once, operands complete; the last block ends at the
	// last byte.
	ACCEPTED(8,
		 0x00,                                     // nop
		 0x01, 1, 2, 3, 4, 5, 6, 7, 8,             // set_loc
		 0x02, 1, 0x03, 1, 2, 0x04, 1, 2, 3, 4,    // advance_loc1/2/4
		 0x05, 0x81, 0x01, 0x02,                   // offset_extended
		 0x06, 0x03, 0x07, 0x04, 0x08, 0x05,       // restore_ext, undefined, same_value
		 0x09, 0x01, 0x02, 0x0a, 0x0b,             // register, remember, restore
		 0x0c, 0x07, 0x08, 0x0d, 0x06, 0x0e, 0x10, // def_cfa, _register, _offset
		 0x0f, 0x02, 0x77, 0x08,                   // def_cfa_expression
		 0x10, 0x10, 0x01, 0x9c,                   // expression
		 0x11, 0x10, 0x7f, 0x12, 0x07, 0x78,       // offset_extended_sf, def_cfa_sf
		 0x13, 0x80, 0x7f,                         // def_cfa_offset_sf
		 0x14, 0x03, 0x04, 0x15, 0x03, 0x7c,       // val_offset, val_offset_sf
		 0x2d, 0x2e, 0x10, 0x2f, 0x03, 0x02,       // GNU window_save, args_size, neg_offset_ext
		 0x41, 0x86, 0x02, 0xc6,                   // advance_loc, offset, restore
		 0x16, 0x03, 0x03, 0x92, 0x07, 0x00);      // val_expression, to the end
	ACCEPTED(4, 0x01, 1, 2, 3, 4);
	ACCEPTED(8, 0x0f, 0x00); // an empty block
}
END_TEST

// Every FDE of path's .eh_frame and .debug_frame, with its CIE, passes;
// returns how many there were.
static long check_object(const char *path)
{
	struct hd_mod_dwarf md;
	hd_mod_dwarf_open(&md, NULL, path, NULL);
	ck_assert_msg(md.file_dbg, "libdwarf cannot open %s", path);
	long n = 0;
	for (int eh = 0; eh < 2; eh++) {
		Dwarf_Cie *cies;
		Dwarf_Fde *fdes;
		Dwarf_Signed ncies, nfdes;
		Dwarf_Error derr = NULL;
		int rc = eh ? dwarf_get_fde_list_eh(md.file_dbg, &cies, &ncies,
						    &fdes, &nfdes, &derr)
			    : dwarf_get_fde_list(md.file_dbg, &cies, &ncies,
						 &fdes, &nfdes, &derr);
		if (derr)
			dwarf_dealloc_error(md.file_dbg, derr);
		if (rc != DW_DLV_OK)
			continue;
		for (Dwarf_Signed i = 0; i < nfdes; i++) {
			struct hd_error *e = hd_cfa_check_fde(
				md.file_dbg, fdes[i], eh);
			ck_assert_msg(!e, "%s: %s", path, e ? e->message : "");
			n++;
		}
		dwarf_fde_cie_list_dealloc(md.file_dbg, cies, ncies, fdes, nfdes);
	}
	hd_mod_dwarf_close(&md);
	return n;
}

START_TEST(test_real_objects)
{
	long self = check_object("/proc/self/exe");
	long fixture = check_object(frames_fixture);
	Dl_info info;
	ck_assert(dladdr((void *)printf, &info) && info.dli_fname);
	long libc = check_object(info.dli_fname);
	printf("sound FDEs: %ld in this test, %ld in %s, %ld in %s\n", self,
	       fixture, frames_fixture, libc, info.dli_fname);
	ck_assert_int_gt(self, 0);
	ck_assert_int_gt(fixture, 0);
	ck_assert_int_gt(libc, 1000);
}
END_TEST

// The fuzz_unwind harness's input (tests/fuzz/fuzz_unwind.c): this head,
// then .eh_frame, .debug_frame and the stack.
struct head {
	uint64_t eh_addr, pc;
	uint64_t r[HD_DW_NREGS];
	uint32_t valid;
	uint16_t eh_len, df_len;
} __attribute__((packed));

static bool no_memory(void *arg, uint64_t addr, uint64_t *ret)
{
	(void)arg, (void)addr, (void)ret;
	return false;
}

// One hd_cfi_step, as the unwinder makes it, at the pc of the fuzz_unwind
// input in path: its status, *corrupt its error.
static enum hd_unwind_status step_input(const char *path_in,
					struct hd_error **corrupt)
{
	static uint8_t in[65536];
	gzFile gz = gzopen(path_in, "rb");
	ck_assert_msg(gz, "cannot open %s", path_in);
	int n = gzread(gz, in, sizeof(in));
	gzclose(gz);
	struct head h;
	ck_assert_int_ge(n, (int)sizeof(h));
	memcpy(&h, in, sizeof(h));
	ck_assert_int_le(sizeof(h) + h.eh_len + h.df_len, n);
	const uint8_t *eh = in + sizeof(h), *df = eh + h.eh_len;

	// The two sections in an x86-64 ELF file, as the harness makes it.
	static const char names[] = "\0.eh_frame\0.debug_frame\0.shstrtab";
	static uint8_t f[65536 + 512];
	memset(f, 0, sizeof(f));
	size_t eh_off = sizeof(Elf64_Ehdr), df_off = eh_off + h.eh_len;
	size_t str_off = df_off + h.df_len;
	size_t sh_off = (str_off + sizeof(names) + 7) & ~(size_t)7;
	Elf64_Ehdr eh_hdr = {
		.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
			    ELFDATA2LSB, EV_CURRENT},
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = sh_off, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 3,
	};
	Elf64_Shdr sh[4] = {
		{0},
		{.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		 .sh_addr = h.eh_addr, .sh_offset = eh_off, .sh_size = h.eh_len,
		 .sh_addralign = 8},
		{.sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = df_off,
		 .sh_size = h.df_len, .sh_addralign = 8},
		{.sh_name = 24, .sh_type = SHT_STRTAB, .sh_offset = str_off,
		 .sh_size = sizeof(names), .sh_addralign = 1},
	};
	memcpy(f, &eh_hdr, sizeof(eh_hdr));
	memcpy(f + eh_off, eh, h.eh_len);
	memcpy(f + df_off, df, h.df_len);
	memcpy(f + str_off, names, sizeof(names));
	memcpy(f + sh_off, sh, sizeof(sh));
	const char *path = hd_fuzz_file(f, sh_off + sizeof(sh));

	struct hd_mod_dwarf md;
	hd_mod_dwarf_open(&md, NULL, path, NULL);
	struct hd_unwind_regs regs = {.valid = h.valid & ((1u << HD_DW_NREGS) - 1)};
	memcpy(regs.r, h.r, sizeof(regs.r));
	regs.r[HD_DW_RA] = h.pc;
	regs.valid |= 1u << HD_DW_RA;
	struct hd_unwind_regs caller;
	uint64_t cfa;
	bool sig;
	*corrupt = NULL;
	enum hd_unwind_status st = hd_cfi_step(&md, h.pc, &regs, no_memory, NULL,
					       &caller, &cfa, &sig, corrupt);
	hd_mod_dwarf_close(&md);
	return st;
}

START_TEST(test_regress_inputs)
{
	// What the inputs hold, decoded by hand (a few lines of Python over
	// the harness's layout), not taken from heapdom:
	// - the libdwarf finding: pc 0x138d is covered by the .debug_frame
	//   FDE at offset 0xd8 (initial location 0x138d, range
	//   0x068641000000005a), whose 34 instruction bytes are 9c 7c (offset
	//   r28), 00 (nop), 0e 00 (def_cfa_offset 0), then at offset 5 10 00
	//   (expression r0) with a 10-byte block length 2^64 - 3141, 17
	//   bytes left;
	// - the one the fuzzer then found in this check's first version: the
	//   FDE at .eh_frame offset 0x48 has its CIE at 0x30 (pointer 0x1c),
	//   20 bytes long, whose augmentation data length 0x1b puts its
	//   instructions 19 bytes past its end: length -19. (Its pc range is
	//   libdwarf's reading of a corrupt pointer encoding: not checked.)
	struct hd_error *e;
	ck_assert_int_eq(step_input(regress_dir_file("cfa-expression-block-past-end.gz"), &e),
			 HD_UNWIND_CORRUPT);
	ck_assert(e);
	ck_assert_int_eq(e->code, HD_ERROR_FORMAT);
	ck_assert_str_eq(e->message,
			 "the FDE at .debug_frame offset 0xd8 for [0x138d, 0x6864100000013e7): "
			 "corrupt CFI: DW_CFA_expression at offset 5: its expression block needs "
			 "18446744073709548475 bytes, 17 left");
	hd_error_destroy(e);

	ck_assert_int_eq(step_input(regress_dir_file("cie-augmentation-past-cie.gz"), &e),
			 HD_UNWIND_CORRUPT);
	ck_assert(e);
	ck_assert_int_eq(e->code, HD_ERROR_FORMAT);
	ck_assert_msg(strncmp(e->message, "the FDE at .eh_frame offset 0x48 for [", 38) == 0,
		      "%s", e->message);
	const char *tail = strstr(e->message, "): corrupt CFI: ");
	ck_assert_msg(tail, "%s", e->message);
	ck_assert_str_eq(tail,
			 "): corrupt CFI: the initial instructions of its CIE at offset 0x30 "
			 "(0xffffffffffffffed bytes by its length fields) lie outside "
			 ".eh_frame (0x88 bytes)");
	hd_error_destroy(e);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FRAMES_FIXTURE REGRESS_DIR\n", argv[0]);
		return 2;
	}
	frames_fixture = argv[1];
	regress_dir = argv[2];
	Suite *s = suite_create("cfa_check");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_truncated_operands);
	tcase_add_test(tc, test_blocks_past_end);
	tcase_add_test(tc, test_unknown_opcodes);
	tcase_add_test(tc, test_sound_streams);
	tcase_add_test(tc, test_real_objects);
	tcase_add_test(tc, test_regress_inputs);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
