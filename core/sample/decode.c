// Effective-address decoding of x86-64 instructions with capstone 4.
//
// Capstone gives each memory operand's segment, base, index, scale and
// displacement; this file turns them into addresses with the sampled
// thread's registers and fixes what capstone 4.0.2 gets wrong (checked
// instruction by instruction against its detail output):
// - access flags: stores such as vmovdqu/movnti/pextrd/fstp/stmxcsr and
//   cmpxchg report R only, so a memory first operand of a two-or-more
//   operand instruction counts as written (except cmp/test/bt), a lock
//   prefix means read-modify-write, and one-operand stores are listed;
// - LEA, NOP and prefetch carry memory operands that touch nothing;
// - push/pop/call/ret/leave/enter touch the stack through RSP, which is no
//   operand; xlat reads [RBX+AL], also no operand;
// - EVEX (AVX-512) gathers and scatters show a general register as index
//   where the encoding names a vector register, so they are recognised by
//   mnemonic, not by the index register.
#include <capstone/capstone.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sample/decode.h"

struct hd_decoder {
	csh handle;
	cs_insn *insn;
};

// ------------------------------------------------------------- registers

// Where a capstone general register lives in struct hd_regs. field is the
// index of the uint64_t field plus one (0: not a general register); a
// sub-register is the low bytes of the field shifted right by shift.
struct reg_info {
	uint8_t field;
	uint8_t bytes;
	uint8_t shift;
};

_Static_assert(sizeof(struct hd_regs) % sizeof(uint64_t) == 0 &&
	       sizeof(struct hd_regs) / sizeof(uint64_t) <= 32,
	       "dependency masks hold one bit per struct hd_regs field");

#define FIELD(f) (offsetof(struct hd_regs, f) / sizeof(uint64_t) + 1)
#define BIT(f) (UINT32_C(1) << (FIELD(f) - 1))
#define GPR(r64, r32, r16, r8, f)                                            \
	[X86_REG_##r64] = { FIELD(f), 8, 0 },                                 \
	[X86_REG_##r32] = { FIELD(f), 4, 0 },                                 \
	[X86_REG_##r16] = { FIELD(f), 2, 0 },                                 \
	[X86_REG_##r8] = { FIELD(f), 1, 0 }

static const struct reg_info reg_table[X86_REG_ENDING] = {
	GPR(RAX, EAX, AX, AL, rax),
	GPR(RBX, EBX, BX, BL, rbx),
	GPR(RCX, ECX, CX, CL, rcx),
	GPR(RDX, EDX, DX, DL, rdx),
	GPR(RSI, ESI, SI, SIL, rsi),
	GPR(RDI, EDI, DI, DIL, rdi),
	GPR(RBP, EBP, BP, BPL, rbp),
	GPR(RSP, ESP, SP, SPL, rsp),
	GPR(R8, R8D, R8W, R8B, r8),
	GPR(R9, R9D, R9W, R9B, r9),
	GPR(R10, R10D, R10W, R10B, r10),
	GPR(R11, R11D, R11W, R11B, r11),
	GPR(R12, R12D, R12W, R12B, r12),
	GPR(R13, R13D, R13W, R13B, r13),
	GPR(R14, R14D, R14W, R14B, r14),
	GPR(R15, R15D, R15W, R15B, r15),
	[X86_REG_AH] = { FIELD(rax), 1, 8 },
	[X86_REG_BH] = { FIELD(rbx), 1, 8 },
	[X86_REG_CH] = { FIELD(rcx), 1, 8 },
	[X86_REG_DH] = { FIELD(rdx), 1, 8 },
};

static const struct reg_info *reg_lookup(x86_reg reg)
{
	if (reg <= X86_REG_INVALID || reg >= X86_REG_ENDING ||
	    !reg_table[reg].field)
		return NULL;
	return &reg_table[reg];
}

static uint64_t field_value(const struct hd_regs *regs, unsigned field)
{
	uint64_t v;
	memcpy(&v, (const char *)regs + (field - 1) * sizeof(uint64_t),
	       sizeof(v));
	return v;
}

// The value of a general register (sub-registers zero-extended) and the
// dependency bit of its field; false for other registers.
static bool reg_value(const struct hd_regs *regs, x86_reg reg, uint64_t *value,
		      uint32_t *deps)
{
	const struct reg_info *ri = reg_lookup(reg);
	if (!ri)
		return false;
	uint64_t v = field_value(regs, ri->field) >> ri->shift;
	if (ri->bytes < 8)
		v &= (UINT64_C(1) << (ri->bytes * 8)) - 1;
	*value = v;
	*deps |= UINT32_C(1) << (ri->field - 1);
	return true;
}

static bool is_vector_reg(x86_reg reg)
{
	return reg >= X86_REG_XMM0 && reg <= X86_REG_ZMM31;
}

// -------------------------------------------------------------- accesses

// An access and the struct hd_regs fields its address was computed from,
// so that hd_decode_nearest can drop it when a skipped instruction changed
// one of them.
struct access_dep {
	struct hd_access a;
	uint32_t deps;
};

struct accesses {
	struct access_dep v[HD_ACCESS_MAX];
	size_t n;
};

static void add_access(struct accesses *acc, uint64_t addr, uint32_t size,
		       bool write, bool implicit, uint32_t deps)
{
	if (acc->n == HD_ACCESS_MAX)
		return; // cannot happen: no instruction has more
	acc->v[acc->n++] = (struct access_dep){
		.a = { .addr = addr, .size = size, .write = write,
		       .implicit = implicit },
		.deps = deps,
	};
}

// Adds the FS/GS base (the only segments with a base in 64-bit mode) to an
// offset, after truncating it to the address size: a 0x67 prefix makes the
// offset 32 bits, the segment base is still added in full.
static uint64_t linear(const cs_x86 *x, x86_reg segment, uint64_t offset,
		       const struct hd_regs *regs, uint32_t *deps)
{
	if (x->addr_size == 4)
		offset &= UINT32_MAX;
	if (segment == X86_REG_FS) {
		*deps |= BIT(fs_base);
		offset += regs->fs_base;
	} else if (segment == X86_REG_GS) {
		*deps |= BIT(gs_base);
		offset += regs->gs_base;
	}
	return offset;
}

// base + index*scale + disp (RIP-relative: the next instruction's address
// + disp). with_index false leaves the index out (gathers). False when a
// register is not one struct hd_regs holds.
static bool mem_address(const cs_insn *insn, const x86_op_mem *m,
			bool with_index, const struct hd_regs *regs,
			uint64_t *addr, uint32_t *deps)
{
	const cs_x86 *x = &insn->detail->x86;
	uint64_t ea = (uint64_t)m->disp, v;
	if (m->base == X86_REG_RIP || m->base == X86_REG_EIP) {
		ea += insn->address + insn->size;
	} else if (m->base != X86_REG_INVALID) {
		if (!reg_value(regs, m->base, &v, deps))
			return false;
		ea += v;
	}
	if (with_index && m->index != X86_REG_INVALID &&
	    m->index != X86_REG_RIZ && m->index != X86_REG_EIZ) {
		if (is_vector_reg(m->index))
			with_index = false; // an AVX2 gather missed by name
		else if (!reg_value(regs, m->index, &v, deps))
			return false;
		else
			ea += v * (uint64_t)m->scale;
	}
	*addr = linear(x, m->segment, ea, regs, deps);
	return true;
}

static bool is_gather_or_scatter(const cs_insn *insn, bool *scatter)
{
	const char *m = insn->mnemonic;
	if (!strncmp(m, "vgather", 7) || !strncmp(m, "vpgather", 8)) {
		*scatter = false;
		return true;
	}
	if (!strncmp(m, "vscatter", 8) || !strncmp(m, "vpscatter", 9)) {
		*scatter = true;
		return true;
	}
	return false;
}

// Instructions with a memory operand that touch no memory.
static bool touches_nothing(const cs_insn *insn)
{
	switch (insn->id) {
	case X86_INS_LEA:
	case X86_INS_NOP:
		return true;
	}
	// prefetch, prefetchnta/t0/t1/t2, prefetchw (and prefetchwt1, which
	// capstone 4 names but has no id for), and the AVX-512PF
	// gather/scatter prefetches.
	return !strncmp(insn->mnemonic, "prefetch", 8) ||
	       !strncmp(insn->mnemonic, "vgatherpf", 9) ||
	       !strncmp(insn->mnemonic, "vscatterpf", 10);
}

static bool is_string_op(const cs_insn *insn)
{
	const cs_x86 *x = &insn->detail->x86;
	switch (insn->id) {
	case X86_INS_MOVSD:
	case X86_INS_CMPSD:
		// Also SSE scalar double move/compare: those have an xmm
		// operand, the string forms two memory operands.
		return x->op_count == 2 && x->operands[0].type == X86_OP_MEM &&
		       x->operands[1].type == X86_OP_MEM;
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSQ:
	case X86_INS_CMPSB: case X86_INS_CMPSW: case X86_INS_CMPSQ:
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD:
	case X86_INS_STOSQ:
	case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD:
	case X86_INS_LODSQ:
	case X86_INS_SCASB: case X86_INS_SCASW: case X86_INS_SCASD:
	case X86_INS_SCASQ:
	case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
	case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
		return true;
	}
	return false;
}

// String instructions that store through RDI (the others only read it).
static bool string_stores(unsigned id)
{
	switch (id) {
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD:
	case X86_INS_MOVSQ:
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD:
	case X86_INS_STOSQ:
	case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
		return true;
	}
	return false;
}

// One-operand instructions that store to their memory operand but that
// capstone marks as read.
static bool stores_single_operand(unsigned id)
{
	switch (id) {
	case X86_INS_FST: case X86_INS_FSTP: case X86_INS_FSTPNCE:
	case X86_INS_FIST: case X86_INS_FISTP: case X86_INS_FISTTP:
	case X86_INS_FBSTP:
	case X86_INS_FNSTCW: case X86_INS_FNSTSW: case X86_INS_FNSAVE:
	case X86_INS_FNSTENV:
	case X86_INS_STMXCSR: case X86_INS_VSTMXCSR:
	case X86_INS_SGDT: case X86_INS_SIDT: case X86_INS_SLDT:
	case X86_INS_STR: case X86_INS_SMSW:
	case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
	case X86_INS_FXSAVE: case X86_INS_FXSAVE64:
	case X86_INS_XSAVE: case X86_INS_XSAVE64:
	case X86_INS_XSAVEC: case X86_INS_XSAVEC64:
	case X86_INS_XSAVEOPT: case X86_INS_XSAVEOPT64:
	case X86_INS_XSAVES: case X86_INS_XSAVES64:
		return true;
	}
	return false;
}

// Whether the instruction writes its memory operand i.
static bool operand_written(const cs_insn *insn, unsigned i)
{
	const cs_x86 *x = &insn->detail->x86;
	if (x->operands[i].access & CS_AC_WRITE)
		return true;
	if (x->prefix[0] == X86_PREFIX_LOCK)
		return true; // lock only goes with read-modify-write
	if (x->op_count == 1)
		return stores_single_operand(insn->id);
	// Intel order puts the destination first; the instructions whose
	// first operand is only compared are these.
	if (i == 0) {
		switch (insn->id) {
		case X86_INS_CMP:
		case X86_INS_TEST:
		case X86_INS_BT:
			return false;
		}
		return true;
	}
	return false;
}

// Capstone's operand size is the register width for fxsave and xsave.
static uint32_t operand_size(const cs_insn *insn, const cs_x86_op *op)
{
	switch (insn->id) {
	case X86_INS_FXSAVE: case X86_INS_FXSAVE64:
	case X86_INS_FXRSTOR: case X86_INS_FXRSTOR64:
		return 512;
	case X86_INS_XSAVE: case X86_INS_XSAVE64:
	case X86_INS_XSAVEC: case X86_INS_XSAVEC64:
	case X86_INS_XSAVEOPT: case X86_INS_XSAVEOPT64:
	case X86_INS_XSAVES: case X86_INS_XSAVES64:
	case X86_INS_XRSTOR: case X86_INS_XRSTOR64:
	case X86_INS_XRSTORS: case X86_INS_XRSTORS64:
		return 0; // depends on XCR0 and EDX:EAX
	}
	return op->size;
}

static void string_accesses(const cs_insn *insn, const struct hd_regs *regs,
			    struct accesses *acc)
{
	const cs_x86 *x = &insn->detail->x86;
	uint32_t rep_deps = 0;
	if (x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE) {
		// Only the first element is reported: later ones follow at
		// size steps (backward with DF set) and the sample is one
		// moment of the loop anyway. A zero count touches nothing.
		uint64_t count;
		reg_value(regs, x->addr_size == 4 ? X86_REG_ECX : X86_REG_RCX,
			  &count, &rep_deps);
		if (count == 0)
			return;
	}
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		if (op->type != X86_OP_MEM)
			continue;
		uint64_t addr;
		uint32_t deps = rep_deps;
		if (!mem_address(insn, &op->mem, true, regs, &addr, &deps))
			continue;
		bool dst = op->mem.base == X86_REG_RDI ||
			   op->mem.base == X86_REG_EDI;
		add_access(acc, addr, op->size, dst && string_stores(insn->id),
			   true, deps);
	}
}

// The explicit memory operands, with the fixes above.
static void operand_accesses(const cs_insn *insn, const struct hd_regs *regs,
			     struct accesses *acc)
{
	const cs_x86 *x = &insn->detail->x86;
	bool scatter = false;
	bool gather = is_gather_or_scatter(insn, &scatter);
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		if (op->type != X86_OP_MEM)
			continue;
		uint64_t addr;
		uint32_t deps = 0;
		if (!mem_address(insn, &op->mem, !gather, regs, &addr, &deps))
			continue;
		if (gather) {
			// Each lane adds its own element of the vector index,
			// which struct hd_regs does not hold: report where the
			// table starts, size unknown.
			add_access(acc, addr, 0, scatter, false, deps);
			continue;
		}
		bool write = operand_written(insn, i);
		// pop [rsp+d] computes its address after incrementing RSP.
		if ((insn->id == X86_INS_POP) &&
		    (op->mem.base == X86_REG_RSP || op->mem.base == X86_REG_ESP))
			addr += x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 8;
		add_access(acc, addr, operand_size(insn, op), write, false, deps);
	}
}

// Accesses through RSP, RBP (leave) and RBX+AL (xlat), which capstone does
// not list as operands.
static void implicit_accesses(const cs_insn *insn, const struct hd_regs *regs,
			      struct accesses *acc)
{
	const cs_x86 *x = &insn->detail->x86;
	// A 0x66 prefix makes push/pop/leave move 2 bytes; near call and ret
	// always move 8 in 64-bit mode.
	uint32_t slot = x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 8;
	uint32_t deps = BIT(rsp);
	uint64_t rsp = regs->rsp, v;
	switch (insn->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ:
		add_access(acc, rsp - slot, slot, true, true, deps);
		break;
	case X86_INS_ENTER:
		// Only the push of RBP: a nesting level > 0 also copies
		// frame pointers from the old frame, rare outside Pascal.
		add_access(acc, rsp - slot, slot, true, true, deps);
		break;
	case X86_INS_CALL:
		add_access(acc, rsp - 8, 8, true, true, deps);
		break;
	case X86_INS_POP:
	case X86_INS_POPF:
	case X86_INS_POPFQ:
		add_access(acc, rsp, slot, false, true, deps);
		break;
	case X86_INS_RET:
		add_access(acc, rsp, 8, false, true, deps);
		break;
	case X86_INS_RETF:
		// Far return, 32-bit operand size: EIP and CS in 4 bytes each.
		add_access(acc, rsp, 8, false, true, deps);
		break;
	case X86_INS_RETFQ:
		add_access(acc, rsp, 16, false, true, deps);
		break;
	case X86_INS_LEAVE:
		// mov rsp, rbp; pop rbp: the read is at RBP.
		deps = BIT(rbp);
		add_access(acc, regs->rbp, slot, false, true, deps);
		break;
	case X86_INS_XLATB: {
		deps = 0;
		uint64_t base;
		reg_value(regs, x->addr_size == 4 ? X86_REG_EBX : X86_REG_RBX,
			  &base, &deps);
		reg_value(regs, X86_REG_AL, &v, &deps);
		x86_reg seg = x->prefix[1] == X86_PREFIX_FS ? X86_REG_FS :
			      x->prefix[1] == X86_PREFIX_GS ? X86_REG_GS :
			      X86_REG_INVALID;
		add_access(acc, linear(x, seg, base + v, regs, &deps), 1, false,
			   true, deps);
		break;
	}
	}
}

static void insn_accesses(const cs_insn *insn, const struct hd_regs *regs,
			  struct accesses *acc)
{
	acc->n = 0;
	if (touches_nothing(insn))
		return;
	if (is_string_op(insn)) {
		string_accesses(insn, regs, acc);
		return;
	}
	operand_accesses(insn, regs, acc);
	implicit_accesses(insn, regs, acc);
}

// ------------------------------------------------------------ public API

struct hd_error *hd_decoder_create(struct hd_decoder **ret)
{
	struct hd_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return &hd_error_no_memory;
	cs_err err = cs_open(CS_ARCH_X86, CS_MODE_64, &d->handle);
	if (err != CS_ERR_OK) {
		free(d);
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "capstone cannot decode x86-64: %s",
				       cs_strerror(err));
	}
	err = cs_option(d->handle, CS_OPT_DETAIL, CS_OPT_ON);
	if (err == CS_ERR_OK) {
		d->insn = cs_malloc(d->handle);
		if (!d->insn)
			err = CS_ERR_MEM;
	}
	if (err != CS_ERR_OK) {
		cs_close(&d->handle);
		free(d);
		return err == CS_ERR_MEM ? &hd_error_no_memory :
		       hd_error_create(HD_ERROR_UNSUPPORTED,
				       "capstone detail mode: %s",
				       cs_strerror(err));
	}
	*ret = d;
	return NULL;
}

void hd_decoder_destroy(struct hd_decoder *d)
{
	if (!d)
		return;
	if (d->insn)
		cs_free(d->insn, 1);
	cs_close(&d->handle);
	free(d);
}

static struct hd_error *check_args(struct hd_decoder *d, const uint8_t *code,
				   size_t len, const struct hd_regs *regs,
				   struct hd_access *out, size_t cap, size_t *n)
{
	if (!d || (!code && len) || !regs || (!out && cap) || !n)
		return hd_error_create(HD_ERROR_INVALID,
				       "hd_decode: missing argument");
	return NULL;
}

static size_t copy_out(const struct accesses *acc, uint32_t clobbered,
		       struct hd_access *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < acc->n; i++) {
		if (acc->v[i].deps & clobbered)
			continue;
		if (k < cap)
			out[k] = acc->v[i].a;
		k++;
	}
	return k;
}

struct hd_error *hd_decode_accesses(struct hd_decoder *d, const uint8_t *code,
				    size_t len, uint64_t pc,
				    const struct hd_regs *regs,
				    struct hd_access *out, size_t cap, size_t *n,
				    size_t *insn_len)
{
	struct hd_error *err = check_args(d, code, len, regs, out, cap, n);
	if (err)
		return err;
	const uint8_t *p = code;
	size_t left = len;
	uint64_t addr = pc;
	if (!len || !cs_disasm_iter(d->handle, &p, &left, &addr, d->insn))
		return hd_error_at(HD_ERROR_FORMAT, pc,
				   "no valid x86-64 instruction at 0x%" PRIx64,
				   pc);
	struct accesses acc;
	insn_accesses(d->insn, regs, &acc);
	*n = copy_out(&acc, 0, out, cap);
	if (insn_len)
		*insn_len = d->insn->size;
	return NULL;
}

// The struct hd_regs fields an instruction may write. Capstone's lists
// miss some implicit writes (cmpxchg's RAX, enter's RSP/RBP, xlat's AL,
// wrfsbase); those are added. Unknown: everything.
static uint32_t written_fields(csh handle, const cs_insn *insn)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr;
	if (cs_regs_access(handle, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return UINT32_MAX;
	uint32_t mask = 0;
	for (unsigned i = 0; i < nwr; i++) {
		const struct reg_info *ri = reg_lookup(wr[i]);
		if (ri)
			mask |= UINT32_C(1) << (ri->field - 1);
	}
	const cs_x86 *x = &insn->detail->x86;
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		const struct reg_info *ri;
		if (op->type == X86_OP_REG && (op->access & CS_AC_WRITE) &&
		    (ri = reg_lookup(op->reg)))
			mask |= UINT32_C(1) << (ri->field - 1);
	}
	switch (insn->id) {
	case X86_INS_CMPXCHG:
	case X86_INS_XLATB:
		mask |= BIT(rax);
		break;
	case X86_INS_CMPXCHG8B:
	case X86_INS_CMPXCHG16B:
		mask |= BIT(rax) | BIT(rdx);
		break;
	case X86_INS_ENTER:
	case X86_INS_LEAVE:
		mask |= BIT(rsp) | BIT(rbp);
		break;
	case X86_INS_WRFSBASE:
		mask |= BIT(fs_base);
		break;
	case X86_INS_WRGSBASE:
		mask |= BIT(gs_base);
		break;
	}
	return mask;
}

// Control leaves the straight line here (or may): the bytes that follow
// need not be what runs next.
static bool ends_straight_line(const cs_insn *insn)
{
	const cs_detail *det = insn->detail;
	for (unsigned i = 0; i < det->groups_count; i++) {
		switch (det->groups[i]) {
		case CS_GRP_JUMP:
		case CS_GRP_CALL:
		case CS_GRP_RET:
		case CS_GRP_INT:
		case CS_GRP_IRET:
		case CS_GRP_BRANCH_RELATIVE:
			return true;
		}
	}
	return false;
}

struct hd_error *hd_decode_nearest(struct hd_decoder *d, const uint8_t *code,
				   size_t len, uint64_t pc,
				   const struct hd_regs *regs,
				   unsigned forward_limit,
				   struct hd_access *out, size_t cap, size_t *n,
				   uint64_t *insn_pc, bool *approximate)
{
	struct hd_error *err = check_args(d, code, len, regs, out, cap, n);
	if (err)
		return err;
	if (!insn_pc || !approximate)
		return hd_error_create(HD_ERROR_INVALID,
				       "hd_decode_nearest: missing argument");
	*n = 0;
	*insn_pc = pc;
	*approximate = false;
	const uint8_t *p = code;
	size_t left = len;
	uint64_t addr = pc;
	uint32_t clobbered = 0;
	for (unsigned i = 0; i <= forward_limit; i++) {
		if (!left || !cs_disasm_iter(d->handle, &p, &left, &addr,
					     d->insn)) {
			if (i == 0)
				return hd_error_at(HD_ERROR_FORMAT, pc,
						   "no valid x86-64 instruction at 0x%" PRIx64,
						   pc);
			break; // end of the bytes read, or data
		}
		struct accesses acc;
		insn_accesses(d->insn, regs, &acc);
		size_t k = copy_out(&acc, clobbered, out, cap);
		if (k) {
			*n = k;
			*insn_pc = d->insn->address;
			*approximate = i > 0;
			return NULL;
		}
		if (ends_straight_line(d->insn))
			break;
		clobbered |= written_fields(d->handle, d->insn);
	}
	return NULL;
}
