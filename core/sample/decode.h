// Effective addresses of the memory accesses of one x86-64 instruction, for
// access sampling (issue 9): a sampler stops a thread, reads the bytes at
// its PC and asks which addresses that instruction touches. Decoding is
// capstone's; what capstone gets wrong or leaves out (access flags, implicit
// stack and string operands, segment bases, gathers) is fixed up here.
#ifndef HD_SAMPLE_DECODE_H
#define HD_SAMPLE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapdom.h"

// One memory access of an instruction.
struct hd_access {
	uint64_t addr;   // effective (linear) address, segment base included
	uint32_t size;   // bytes (0 if unknown: gathers/scatters, xsave)
	bool write;      // a store (read-modify-write counts as write)
	// Not an operand the instruction spells out: through RSP (push, pop,
	// call, ret, leave, enter), a string instruction's RSI/RDI, xlat's
	// RBX+AL.
	bool implicit;
};

// The most accesses one instruction yields (push [mem]: 2, movs: 2).
#define HD_ACCESS_MAX 4

// Wraps a capstone handle (x86-64, detail on) and its instruction buffer.
// Not thread-safe: one decoder per sampling thread.
struct hd_decoder;

struct hd_error *hd_decoder_create(struct hd_decoder **ret);
void hd_decoder_destroy(struct hd_decoder *d);

// Decodes the instruction at code[0..len) located at pc with registers
// regs (fs_base/gs_base included) and returns its memory accesses: at most
// cap are written to out, *n is set to how many there are. Order: explicit
// operands in capstone's operand order, then the implicit stack access.
// *insn_len (may be NULL) gets the instruction's length.
//
// No access for LEA, NOP (also multi-byte nop with a memory operand),
// prefetch*, and instructions that touch no memory. A rep string
// instruction reports its first element only (none when the count register
// is 0). Gathers and scatters report base + displacement with size 0: the
// per-lane addresses need the vector index register, which struct hd_regs
// does not hold. HD_ERROR_FORMAT when the bytes are no valid instruction.
struct hd_error *hd_decode_accesses(struct hd_decoder *d, const uint8_t *code,
				    size_t len, uint64_t pc,
				    const struct hd_regs *regs,
				    struct hd_access *out, size_t cap, size_t *n,
				    size_t *insn_len);

// The seed's "nearest memory instruction" collection method: when the
// instruction at pc touches no memory, decodes forward (without executing)
// from pc through at most forward_limit further instructions and returns
// the accesses of the first one that has any, its address in *insn_pc.
// Registers are those at pc, so an access whose address depends on a
// register a skipped instruction writes is dropped (an instruction left
// with none is skipped too); *approximate is set when the result is not
// the instruction at pc. The search stops at a branch, call, return or
// system call (the bytes after it need not run next) and at the end of
// code. Forward only: x86 instructions have variable length, so decoding
// backward from pc cannot know where the previous instruction starts.
// Nothing found: *n = 0, *insn_pc = pc. HD_ERROR_FORMAT only when the
// instruction at pc itself is invalid.
struct hd_error *hd_decode_nearest(struct hd_decoder *d, const uint8_t *code,
				   size_t len, uint64_t pc,
				   const struct hd_regs *regs,
				   unsigned forward_limit,
				   struct hd_access *out, size_t cap, size_t *n,
				   uint64_t *insn_pc, bool *approximate);

#endif
