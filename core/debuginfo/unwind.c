// Call frame information: from a frame's registers, its caller's. The FDE
// covering the pc comes from the module's .eh_frame (kept by stripped
// binaries), else from .debug_frame (its debug file or itself); libdwarf
// runs the CFA program up to the pc and gives one rule per register.
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "debuginfo/cfa_check.h"
#include "debuginfo/frames_internal.h"

// Columns the rule table has: x86-64 CIEs name registers up to the
// vector and segment ones (< 64); libdwarf rejects larger columns.
#define RULE_COLUMNS 128

static void load_list(Dwarf_Debug dbg, bool eh, Dwarf_Cie **cies,
		      Dwarf_Signed *num_cies, Dwarf_Fde **fdes,
		      Dwarf_Signed *num_fdes)
{
	Dwarf_Error derr = NULL;
	int rc = eh ? dwarf_get_fde_list_eh(dbg, cies, num_cies, fdes,
					    num_fdes, &derr)
		    : dwarf_get_fde_list(dbg, cies, num_cies, fdes, num_fdes,
					 &derr);
	if (rc != DW_DLV_OK) {
		// No such section, or one libdwarf cannot read: no FDEs
		// from it (a frame it would cover stops the unwinding).
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		*cies = NULL;
		*fdes = NULL;
		*num_cies = *num_fdes = 0;
	}
}

static void load_cfi(struct hd_mod_dwarf *md)
{
	md->cfi_loaded = true;
	if (md->file_dbg)
		load_list(md->file_dbg, true, &md->eh_cies, &md->num_eh_cies,
			  &md->eh_fdes, &md->num_eh_fdes);
	Dwarf_Debug df = md->debug_dbg ? md->debug_dbg : md->file_dbg;
	if (df)
		load_list(df, false, &md->df_cies, &md->num_df_cies,
			  &md->df_fdes, &md->num_df_fdes);
}

void hd_cfi_release(struct hd_mod_dwarf *md)
{
	if (md->eh_fdes)
		dwarf_fde_cie_list_dealloc(md->file_dbg, md->eh_cies,
					   md->num_eh_cies, md->eh_fdes,
					   md->num_eh_fdes);
	if (md->df_fdes)
		dwarf_fde_cie_list_dealloc(md->debug_dbg ? md->debug_dbg
							 : md->file_dbg,
					   md->df_cies, md->num_df_cies,
					   md->df_fdes, md->num_df_fdes);
	md->eh_fdes = md->df_fdes = NULL;
	md->eh_cies = md->df_cies = NULL;
	md->cfi_loaded = false;
}

static bool find_fde(Dwarf_Debug dbg, Dwarf_Fde *fdes, Dwarf_Signed n,
		     uint64_t pc, Dwarf_Fde *ret)
{
	if (!fdes || n <= 0)
		return false;
	Dwarf_Addr lo, hi;
	Dwarf_Error derr = NULL;
	int rc = dwarf_get_fde_at_pc(fdes, pc, ret, &lo, &hi, &derr);
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	return rc == DW_DLV_OK;
}

static bool is_signal_cie(Dwarf_Debug dbg, Dwarf_Fde fde)
{
	Dwarf_Cie cie;
	Dwarf_Error derr = NULL;
	Dwarf_Unsigned bytes, code, ilen;
	Dwarf_Small version;
	char *aug = NULL;
	Dwarf_Signed daf;
	Dwarf_Half ra;
	Dwarf_Ptr instr;
	Dwarf_Half offset_size;
	bool sig = false;
	if (dwarf_get_cie_of_fde(fde, &cie, &derr) == DW_DLV_OK &&
	    dwarf_get_cie_info_b(cie, &bytes, &version, &aug, &code, &daf, &ra,
				 &instr, &ilen, &offset_size, &derr) ==
		    DW_DLV_OK)
		sig = aug && strchr(aug, 'S');
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	return sig;
}

// The value of expression rule block (CFA pushed first, as DWARF says).
static bool eval_rule(const Dwarf_Regtable_Entry3 *e, uint64_t cfa,
		      bool push_cfa, const struct hd_unwind_regs *regs,
		      hd_unwind_read_fn read, void *arg, uint64_t *ret)
{
	struct hd_dwarf_op ops[33];
	size_t n = 0;
	if (push_cfa)
		ops[n++] = (struct hd_dwarf_op){.atom = DW_OP_call_frame_cfa};
	size_t k;
	if (!e->dw_block_ptr ||
	    !hd_dwarf_expr_decode(e->dw_block_ptr, e->dw_offset_or_block_len,
				  ops + n, 32, &k))
		return false;
	struct hd_expr_ctx ctx = {.regs = regs, .cfa = cfa, .has_cfa = push_cfa,
				  .read = read, .arg = arg};
	bool is_value;
	return hd_dwarf_expr_eval(ops, n + k, &ctx, ret, &is_value);
}

enum hd_unwind_status hd_cfi_step(struct hd_mod_dwarf *md, uint64_t lookup_pc,
				  const struct hd_unwind_regs *regs,
				  hd_unwind_read_fn read, void *arg,
				  struct hd_unwind_regs *caller, uint64_t *cfa_ret,
				  bool *signal_frame, struct hd_error **corrupt)
{
	*corrupt = NULL;
	if (!md->cfi_loaded)
		load_cfi(md);
	Dwarf_Fde fde;
	Dwarf_Debug dbg = md->file_dbg;
	bool eh = true;
	if (!find_fde(dbg, md->eh_fdes, md->num_eh_fdes, lookup_pc, &fde)) {
		dbg = md->debug_dbg ? md->debug_dbg : md->file_dbg;
		eh = false;
		if (!find_fde(dbg, md->df_fdes, md->num_df_fdes, lookup_pc, &fde))
			return HD_UNWIND_NO_CFI;
	}
	*signal_frame = is_signal_cie(dbg, fde);
	// libdwarf 20210528 runs off the end of corrupt instructions
	// (cfa_check.c): check them first.
	if ((*corrupt = hd_cfa_check_fde(dbg, fde, eh)))
		return HD_UNWIND_CORRUPT;
	static __thread Dwarf_Regtable_Entry3 rules[RULE_COLUMNS];
	Dwarf_Regtable3 table = {.rt3_reg_table_size = RULE_COLUMNS,
				 .rt3_rules = rules};
	Dwarf_Addr row_pc;
	Dwarf_Error derr = NULL;
	if (dwarf_get_fde_info_for_all_regs3(fde, lookup_pc, &table, &row_pc,
					     &derr) != DW_DLV_OK) {
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		return HD_UNWIND_BAD;
	}
	// The CFA: register + offset, or an expression's value.
	const Dwarf_Regtable_Entry3 *c = &table.rt3_cfa_rule;
	uint64_t cfa;
	if (c->dw_value_type == DW_EXPR_OFFSET ||
	    c->dw_value_type == DW_EXPR_VAL_OFFSET) {
		if (c->dw_regnum >= HD_DW_NREGS ||
		    !(regs->valid & (1u << c->dw_regnum)))
			return HD_UNWIND_BAD;
		cfa = regs->r[c->dw_regnum] +
		      (c->dw_offset_relevant ? c->dw_offset_or_block_len : 0);
	} else if (c->dw_value_type == DW_EXPR_EXPRESSION ||
		   c->dw_value_type == DW_EXPR_VAL_EXPRESSION) {
		if (!eval_rule(c, 0, false, regs, read, arg, &cfa))
			return HD_UNWIND_BAD;
	} else {
		return HD_UNWIND_BAD;
	}
	memset(caller, 0, sizeof(*caller));
	for (unsigned i = 0; i < HD_DW_NREGS; i++) {
		const Dwarf_Regtable_Entry3 *e = &rules[i];
		uint64_t v = 0;
		bool ok = false;
		if (e->dw_regnum == DW_FRAME_UNDEFINED_VAL) {
			ok = false;
		} else if (e->dw_regnum == DW_FRAME_SAME_VAL &&
			   e->dw_value_type == DW_EXPR_OFFSET &&
			   !e->dw_offset_relevant) {
			// Same value; the return address column has no
			// register of its own: it stays unknown.
			ok = i != HD_DW_RA && (regs->valid & (1u << i));
			v = regs->r[i];
		} else if (e->dw_value_type == DW_EXPR_OFFSET) {
			if (e->dw_offset_relevant) {
				ok = read(arg, cfa + e->dw_offset_or_block_len, &v);
			} else if (e->dw_regnum < HD_DW_NREGS) {
				ok = regs->valid & (1u << e->dw_regnum);
				v = regs->r[e->dw_regnum];
			}
		} else if (e->dw_value_type == DW_EXPR_VAL_OFFSET) {
			ok = true;
			v = cfa + e->dw_offset_or_block_len;
		} else if (e->dw_value_type == DW_EXPR_EXPRESSION) {
			uint64_t a;
			ok = eval_rule(e, cfa, true, regs, read, arg, &a) &&
			     read(arg, a, &v);
		} else if (e->dw_value_type == DW_EXPR_VAL_EXPRESSION) {
			ok = eval_rule(e, cfa, true, regs, read, arg, &v);
		}
		if (ok) {
			caller->r[i] = v;
			caller->valid |= 1u << i;
		}
	}
	// The caller's stack pointer is the CFA (x86-64 psABI), unless a
	// rule says otherwise.
	if (rules[HD_DW_RSP].dw_regnum == DW_FRAME_SAME_VAL &&
	    rules[HD_DW_RSP].dw_value_type == DW_EXPR_OFFSET &&
	    !rules[HD_DW_RSP].dw_offset_relevant) {
		caller->r[HD_DW_RSP] = cfa;
		caller->valid |= 1u << HD_DW_RSP;
	}
	*cfa_ret = cfa;
	if (rules[HD_DW_RA].dw_regnum == DW_FRAME_UNDEFINED_VAL)
		return HD_UNWIND_OUTERMOST;
	if (!(caller->valid & (1u << HD_DW_RA)))
		return HD_UNWIND_BAD;
	return HD_UNWIND_OK;
}
