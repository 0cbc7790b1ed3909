// Shared by the unwinder (unwind.c), the frame scopes (scopes.c) and the
// driver that adds frames and locals to a target (frames.c): the libdwarf
// handles of one module, opened once per pass over the threads.
#ifndef HD_DEBUGINFO_FRAMES_INTERNAL_H
#define HD_DEBUGINFO_FRAMES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libdwarf.h>

#include "heapdom.h"

// x86-64 DWARF register numbers 0..16 (16 is the return address column).
enum {
	HD_DW_RAX, HD_DW_RDX, HD_DW_RCX, HD_DW_RBX, HD_DW_RSI, HD_DW_RDI,
	HD_DW_RBP, HD_DW_RSP, HD_DW_R8, HD_DW_R9, HD_DW_R10, HD_DW_R11,
	HD_DW_R12, HD_DW_R13, HD_DW_R14, HD_DW_R15, HD_DW_RA,
	HD_DW_NREGS
};

// A frame's registers: r[HD_DW_RA] is its pc; valid has bit i set when
// r[i] is known.
struct hd_unwind_regs {
	uint64_t r[HD_DW_NREGS];
	uint32_t valid;
};

// One module's DWARF as the frame passes need it. file: the module's own
// ELF file (its .eh_frame survives stripping); debug: its separate debug
// file, or NULL (then file's DWARF, if any, is used).
struct hd_mod_dwarf {
	const struct hd_module *m;
	bool opened;
	int file_fd, debug_fd;
	Dwarf_Debug file_dbg, debug_dbg;
	// The path of the DWARF with .debug_info (hd_mod_dwarf_info's), for
	// messages.
	const char *info_path;
	// CFI: .eh_frame of file, .debug_frame of debug (else file).
	bool cfi_loaded;
	Dwarf_Cie *eh_cies, *df_cies;
	Dwarf_Signed num_eh_cies, num_df_cies;
	Dwarf_Fde *eh_fdes, *df_fdes;
	Dwarf_Signed num_eh_fdes, num_df_fdes;
	// Scopes: .debug_aranges of the DWARF with .debug_info.
	bool aranges_loaded;
	Dwarf_Arange *aranges;
	Dwarf_Signed num_aranges;
};

// Opens md for module m (its ELF file and separate debug file, each may
// be NULL): the handles of the files libdwarf can read (NULL for the
// others, as if absent), their CFI rules set up for hd_cfi_step.
void hd_mod_dwarf_open(struct hd_mod_dwarf *md, const struct hd_module *m,
		       const char *file, const char *debug);
// Releases what hd_mod_dwarf_open and the passes over md loaded.
void hd_mod_dwarf_close(struct hd_mod_dwarf *md);

// The DWARF with .debug_info of a module (debug file, else the file), or
// NULL.
Dwarf_Debug hd_mod_dwarf_info(struct hd_mod_dwarf *md);

// Reads target memory for the frame passes (8 bytes at addr).
typedef bool (*hd_unwind_read_fn)(void *arg, uint64_t addr, uint64_t *ret);

enum hd_unwind_status {
	HD_UNWIND_OK,        // *caller holds the caller's registers
	HD_UNWIND_OUTERMOST, // the CFI says there is no caller (_start, clone)
	HD_UNWIND_NO_CFI,    // no FDE covers the pc
	HD_UNWIND_BAD,       // a rule needs a register or memory not known
	HD_UNWIND_CORRUPT,   // the FDE's instructions are corrupt (*corrupt)
};

// One step of CFI unwinding: from the registers of a frame whose code is
// at link-time address lookup_pc of md's module, the caller's registers
// (its pc in r[HD_DW_RA], its stack pointer = this frame's CFA) and this
// frame's CFA. *signal_frame tells whether the FDE's CIE is a signal
// trampoline's ("S" augmentation): its caller's pc is looked up as is.
// HD_UNWIND_CORRUPT: *corrupt is the HD_ERROR_FORMAT error naming the FDE
// and the problem (cfa_check.h), the caller's to destroy.
enum hd_unwind_status hd_cfi_step(struct hd_mod_dwarf *md, uint64_t lookup_pc,
				  const struct hd_unwind_regs *regs,
				  hd_unwind_read_fn read, void *arg,
				  struct hd_unwind_regs *caller, uint64_t *cfa,
				  bool *signal_frame, struct hd_error **corrupt);
// Frees the FDE lists.
void hd_cfi_release(struct hd_mod_dwarf *md);

// A small DWARF expression evaluator for CFI rules and variable locations
// (dwarf_expr.c): lit/const/addr/breg/fbreg/call_frame_cfa/plus/minus/
// plus_uconst/deref/stack_value. Operations come decoded (libdwarf's
// location lists) or are decoded from raw bytes (CFI rules).
struct hd_dwarf_op {
	uint8_t atom;
	uint64_t op1, op2;
};
struct hd_expr_ctx {
	const struct hd_unwind_regs *regs;
	uint64_t cfa;
	bool has_cfa;
	uint64_t frame_base;
	bool has_frame_base;
	hd_unwind_read_fn read;
	void *arg;
};
// Decodes raw expression bytes; false if an operation is unknown or the
// expression is longer than max ops.
bool hd_dwarf_expr_decode(const uint8_t *p, size_t len,
			  struct hd_dwarf_op *ops, size_t max, size_t *n);
// Evaluates ops; *ret is an address, or a value when *is_value
// (DW_OP_stack_value). False if an operation is not supported (registers
// DW_OP_reg*, pieces, entry values...) or a register or memory it needs is
// not known.
bool hd_dwarf_expr_eval(const struct hd_dwarf_op *ops, size_t n,
			const struct hd_expr_ctx *ctx, uint64_t *ret,
			bool *is_value);

#endif
