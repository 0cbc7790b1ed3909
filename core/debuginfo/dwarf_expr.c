// The DWARF expressions frames need: where a register was saved (CFI
// rules, signal trampolines' expressions) and where a local variable
// lives (DW_OP_fbreg, DW_OP_breg*, DW_OP_call_frame_cfa). Anything else
// (a register-resident value, pieces, entry values) is reported as not
// an address, never guessed.
#include <dwarf.h>

#include "debuginfo/frames_internal.h"

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

static bool sleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	// Unsigned arithmetic: the sign extension of a 63-bit value
	// (-(1 << 63) in int64_t) is undefined (docs/fuzzing.md, finding 13).
	uint64_t v = 0;
	unsigned shift = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			*ret = v;
			return true;
		}
	}
	return false;
}

static bool fixed(const uint8_t **p, const uint8_t *end, size_t n,
		  bool sign, uint64_t *ret)
{
	if ((size_t)(end - *p) < n)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ULL << (8 * n);
	*p += n;
	*ret = v;
	return true;
}

bool hd_dwarf_expr_decode(const uint8_t *p, size_t len,
			  struct hd_dwarf_op *ops, size_t max, size_t *n)
{
	const uint8_t *end = p + len;
	size_t k = 0;
	while (p < end) {
		if (k == max)
			return false;
		struct hd_dwarf_op op = {.atom = *p++};
		bool ok = true;
		uint8_t a = op.atom;
		if ((a >= DW_OP_lit0 && a <= DW_OP_lit31) ||
		    (a >= DW_OP_reg0 && a <= DW_OP_reg31) ||
		    a == DW_OP_deref || a == DW_OP_plus ||
		    a == DW_OP_minus || a == DW_OP_stack_value ||
		    a == DW_OP_call_frame_cfa || a == DW_OP_dup ||
		    a == DW_OP_drop || a == DW_OP_swap)
			;
		else if (a >= DW_OP_breg0 && a <= DW_OP_breg31)
			ok = sleb(&p, end, &op.op1);
		else if (a == DW_OP_fbreg || a == DW_OP_consts)
			ok = sleb(&p, end, &op.op1);
		else if (a == DW_OP_constu || a == DW_OP_plus_uconst ||
			 a == DW_OP_regx || a == DW_OP_piece)
			ok = uleb(&p, end, &op.op1);
		else if (a == DW_OP_bregx)
			ok = uleb(&p, end, &op.op1) && sleb(&p, end, &op.op2);
		else if (a == DW_OP_addr)
			ok = fixed(&p, end, 8, false, &op.op1);
		else if (a == DW_OP_const1u || a == DW_OP_const1s)
			ok = fixed(&p, end, 1, a == DW_OP_const1s, &op.op1);
		else if (a == DW_OP_const2u || a == DW_OP_const2s)
			ok = fixed(&p, end, 2, a == DW_OP_const2s, &op.op1);
		else if (a == DW_OP_const4u || a == DW_OP_const4s)
			ok = fixed(&p, end, 4, a == DW_OP_const4s, &op.op1);
		else if (a == DW_OP_const8u || a == DW_OP_const8s)
			ok = fixed(&p, end, 8, false, &op.op1);
		else
			return false;
		if (!ok)
			return false;
		ops[k++] = op;
	}
	*n = k;
	return true;
}

static bool reg(const struct hd_expr_ctx *ctx, uint64_t r, uint64_t *ret)
{
	if (r >= HD_DW_NREGS || !(ctx->regs->valid & (1u << r)))
		return false;
	*ret = ctx->regs->r[r];
	return true;
}

bool hd_dwarf_expr_eval(const struct hd_dwarf_op *ops, size_t n,
			const struct hd_expr_ctx *ctx, uint64_t *ret,
			bool *is_value)
{
	uint64_t st[16];
	size_t sp = 0;
	*is_value = false;
	for (size_t i = 0; i < n; i++) {
		uint8_t a = ops[i].atom;
		uint64_t v;
		if (a == DW_OP_stack_value) {
			// Must end the expression (a value, not a place).
			if (i + 1 != n)
				return false;
			*is_value = true;
			break;
		}
		if (sp == 16)
			return false;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			st[sp++] = a - DW_OP_lit0;
		} else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			if (!reg(ctx, a - DW_OP_breg0, &v))
				return false;
			st[sp++] = v + ops[i].op1;
		} else if (a == DW_OP_bregx) {
			if (!reg(ctx, ops[i].op1, &v))
				return false;
			st[sp++] = v + ops[i].op2;
		} else if (a == DW_OP_fbreg) {
			if (!ctx->has_frame_base)
				return false;
			st[sp++] = ctx->frame_base + ops[i].op1;
		} else if (a == DW_OP_call_frame_cfa) {
			if (!ctx->has_cfa)
				return false;
			st[sp++] = ctx->cfa;
		} else if (a == DW_OP_addr || a == DW_OP_consts ||
			   a == DW_OP_constu ||
			   (a >= DW_OP_const1u && a <= DW_OP_const8s)) {
			st[sp++] = ops[i].op1;
		} else if (a == DW_OP_plus_uconst) {
			if (!sp)
				return false;
			st[sp - 1] += ops[i].op1;
		} else if (a == DW_OP_plus || a == DW_OP_minus) {
			if (sp < 2)
				return false;
			sp--;
			st[sp - 1] = a == DW_OP_plus ? st[sp - 1] + st[sp]
						     : st[sp - 1] - st[sp];
		} else if (a == DW_OP_deref) {
			if (!sp || !ctx->read || !ctx->read(ctx->arg, st[sp - 1], &v))
				return false;
			st[sp - 1] = v;
		} else if (a == DW_OP_dup) {
			if (!sp)
				return false;
			st[sp] = st[sp - 1];
			sp++;
		} else if (a == DW_OP_drop) {
			if (!sp)
				return false;
			sp--;
		} else if (a == DW_OP_swap) {
			if (sp < 2)
				return false;
			v = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = v;
		} else {
			// DW_OP_reg*, pieces, entry values, implicit values:
			// not a memory location.
			return false;
		}
	}
	if (!sp)
		return false;
	*ret = st[sp - 1];
	return true;
}
