// hd_cfa_check: call frame instructions checked before libdwarf runs them.
//
// Debian 12's libdwarf (20210528) runs an FDE's instructions (and its
// CIE's initial ones) in _dwarf_exec_frame_instr, from
// dwarf_get_fde_info_for_all_regs3. Its operand reads stop at the end of
// the instructions, but the block of DW_CFA_def_cfa_expression,
// DW_CFA_expression and DW_CFA_val_expression is skipped with
// instr_ptr += block_len unchecked: a corrupt length moves the pointer
// anywhere (wrapping below the instructions for a huge one), and the
// loop, still "before the end", reads the next opcode and its operands
// there: freed memory, unmapped memory (docs/fuzzing.md, finding 12).
//
// And the instruction bytes themselves come from the FDE's and CIE's
// length fields and augmentation data length, which libdwarf does not
// hold to the section's end: an FDE near the end with a large length has
// "instructions" past the section.
//
// So before each step heapdom checks that both streams lie within the
// section, decodes them itself and refuses an FDE whose instructions have
// an unknown opcode or an operand or block that runs past their end; the unwinder stops that thread's backtrace
// with the message. The check is linear in the instructions' bytes (a few
// dozen per FDE), less than libdwarf's own run of them, so it is not
// cached.
#include <inttypes.h>
#include <stdio.h>

#include <dwarf.h>

#include "debuginfo/cfa_check.h"

// Operand kinds.
enum {
	NONE,
	U,    // ULEB128
	S,    // SLEB128
	B,    // ULEB128 length, then that many bytes
	A,    // an address (address_size bytes)
	F1,   // fixed 1, 2, 4 bytes
	F2,
	F4,
};

struct op_shape {
	const char *name;
	uint8_t operands[2];
};

// The extended opcodes (high two bits 0), by value.
static const struct op_shape extended[0x30] = {
	[DW_CFA_nop] = {"DW_CFA_nop", {NONE}},
	[DW_CFA_set_loc] = {"DW_CFA_set_loc", {A}},
	[DW_CFA_advance_loc1] = {"DW_CFA_advance_loc1", {F1}},
	[DW_CFA_advance_loc2] = {"DW_CFA_advance_loc2", {F2}},
	[DW_CFA_advance_loc4] = {"DW_CFA_advance_loc4", {F4}},
	[DW_CFA_offset_extended] = {"DW_CFA_offset_extended", {U, U}},
	[DW_CFA_restore_extended] = {"DW_CFA_restore_extended", {U}},
	[DW_CFA_undefined] = {"DW_CFA_undefined", {U}},
	[DW_CFA_same_value] = {"DW_CFA_same_value", {U}},
	[DW_CFA_register] = {"DW_CFA_register", {U, U}},
	[DW_CFA_remember_state] = {"DW_CFA_remember_state", {NONE}},
	[DW_CFA_restore_state] = {"DW_CFA_restore_state", {NONE}},
	[DW_CFA_def_cfa] = {"DW_CFA_def_cfa", {U, U}},
	[DW_CFA_def_cfa_register] = {"DW_CFA_def_cfa_register", {U}},
	[DW_CFA_def_cfa_offset] = {"DW_CFA_def_cfa_offset", {U}},
	[DW_CFA_def_cfa_expression] = {"DW_CFA_def_cfa_expression", {B}},
	[DW_CFA_expression] = {"DW_CFA_expression", {U, B}},
	[DW_CFA_offset_extended_sf] = {"DW_CFA_offset_extended_sf", {U, S}},
	[DW_CFA_def_cfa_sf] = {"DW_CFA_def_cfa_sf", {U, S}},
	[DW_CFA_def_cfa_offset_sf] = {"DW_CFA_def_cfa_offset_sf", {S}},
	[DW_CFA_val_offset] = {"DW_CFA_val_offset", {U, U}},
	[DW_CFA_val_offset_sf] = {"DW_CFA_val_offset_sf", {U, S}},
	[DW_CFA_val_expression] = {"DW_CFA_val_expression", {U, B}},
	[0x2d] = {"DW_CFA_GNU_window_save", {NONE}},
	[0x2e] = {"DW_CFA_GNU_args_size", {U}},
	[0x2f] = {"DW_CFA_GNU_negative_offset_extended", {U, U}},
};

static const struct op_shape primary[4] = {
	{NULL, {NONE}},
	{"DW_CFA_advance_loc", {NONE}},
	{"DW_CFA_offset", {U}},
	{"DW_CFA_restore", {NONE}},
};

// Skips a LEB128 at *off: false when its last byte (high bit clear) is
// not within len.
static bool skip_leb(const uint8_t *p, uint64_t len, uint64_t *off,
		     uint64_t *value)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (*off < len) {
		uint8_t b = p[(*off)++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*value = v;
			return true;
		}
	}
	return false;
}

struct hd_error *hd_cfa_check(const uint8_t *p, uint64_t len,
			      unsigned address_size)
{
	uint64_t off = 0;
	while (off < len) {
		uint64_t at = off;
		uint8_t instr = p[off++];
		const struct op_shape *shape =
			instr >> 6 ? &primary[instr >> 6]
			: instr < sizeof(extended) / sizeof(extended[0])
				? &extended[instr]
				: NULL;
		if (!shape || !shape->name)
			return hd_error_create(HD_ERROR_FORMAT,
					       "corrupt CFI: unknown opcode 0x%02x at offset %" PRIu64,
					       instr, at);
		for (int i = 0; i < 2 && shape->operands[i] != NONE; i++) {
			uint64_t left = len - off, need = 0, v;
			switch (shape->operands[i]) {
			case U:
			case S:
			case B:
				if (!skip_leb(p, len, &off, &v))
					return hd_error_create(HD_ERROR_FORMAT,
							       "corrupt CFI: %s at offset %" PRIu64
							       ": its LEB128 operand runs past the instructions' end (%" PRIu64 " bytes left)",
							       shape->name, at, left);
				if (shape->operands[i] == B) {
					left = len - off;
					if (v > left)
						return hd_error_create(HD_ERROR_FORMAT,
								       "corrupt CFI: %s at offset %" PRIu64
								       ": its expression block needs %" PRIu64
								       " bytes, %" PRIu64 " left",
								       shape->name, at, v, left);
					off += v;
				}
				continue;
			case A:
				need = address_size;
				break;
			case F1:
				need = 1;
				break;
			case F2:
				need = 2;
				break;
			case F4:
				need = 4;
				break;
			}
			if (need > left)
				return hd_error_create(HD_ERROR_FORMAT,
						       "corrupt CFI: %s at offset %" PRIu64
						       " needs %" PRIu64 " bytes, %" PRIu64 " left",
						       shape->name, at, need, left);
			off += need;
		}
	}
	return NULL;
}

// The size of the section libdwarf read fde's list from, as loaded
// (decompressed); false when libdwarf does not give it.
static bool section_size(Dwarf_Debug dbg, bool eh, uint64_t *size)
{
	Dwarf_Error derr = NULL;
	if (eh) {
		Dwarf_Addr addr;
		Dwarf_Unsigned sz = 0;
		int rc = dwarf_get_section_info_by_name(dbg, ".eh_frame", &addr,
							&sz, &derr);
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		*size = sz;
		return rc == DW_DLV_OK;
	}
	Dwarf_Unsigned s[20] = {0};
	if (dwarf_get_section_max_offsets_d(dbg, &s[0], &s[1], &s[2], &s[3],
					    &s[4], &s[5], &s[6], &s[7], &s[8],
					    &s[9], &s[10], &s[11], &s[12],
					    &s[13], &s[14], &s[15], &s[16],
					    &s[17], &s[18], &s[19]) != DW_DLV_OK)
		return false;
	*size = s[8]; // debug_frame_size
	return true;
}

// Whether [p, p + len) lies within the section [sec, sec + size). libdwarf
// computes an FDE's or CIE's instruction bytes from its length field and
// its augmentation data, neither checked against the section's end.
static bool within(const void *sec, uint64_t size, const void *p, uint64_t len)
{
	uintptr_t s = (uintptr_t)sec, q = (uintptr_t)p;
	return q >= s && q - s <= size && len <= size - (q - s);
}

struct hd_error *hd_cfa_check_fde(Dwarf_Debug dbg, Dwarf_Fde fde, bool eh)
{
	const char *section = eh ? ".eh_frame" : ".debug_frame";
	Dwarf_Error derr = NULL;
	Dwarf_Addr lo = 0;
	Dwarf_Unsigned flen = 0, fde_len = 0;
	Dwarf_Ptr fde_bytes = NULL;
	Dwarf_Off cie_off, fde_off = 0;
	Dwarf_Signed cie_index;
	char what[128];
	int rc = dwarf_get_fde_range(fde, &lo, &flen, &fde_bytes, &fde_len,
				     &cie_off, &cie_index, &fde_off, &derr);
	if (derr) {
		dwarf_dealloc_error(dbg, derr);
		derr = NULL;
	}
	if (rc != DW_DLV_OK || !fde_bytes)
		return hd_error_create(HD_ERROR_FORMAT,
				       "corrupt CFI: an FDE of %s cannot be read",
				       section);
	snprintf(what, sizeof(what),
		 "the FDE at %s offset 0x%" PRIx64 " for [0x%" PRIx64
		 ", 0x%" PRIx64 ")",
		 section, (uint64_t)fde_off, (uint64_t)lo, (uint64_t)(lo + flen));
	// The section's bytes as libdwarf holds them: the FDE's offset is
	// from their start.
	const uint8_t *sec = (const uint8_t *)fde_bytes - fde_off;
	uint64_t sec_size;
	if (!section_size(dbg, eh, &sec_size))
		return hd_error_create(HD_ERROR_FORMAT,
				       "corrupt CFI: %s: the size of %s is not known",
				       what, section);
	// DW_CFA_set_loc's operand: libdwarf reads the CIE's address size,
	// which for .eh_frame and for .debug_frame before version 4 is the
	// file's; a version 4 CIE's own field is not available through
	// libdwarf's interface and is the file's in every file we read.
	Dwarf_Half asize = 8;
	if (dwarf_get_address_size(dbg, &asize, &derr) != DW_DLV_OK) {
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		derr = NULL;
		asize = 8;
	}

	Dwarf_Cie cie;
	Dwarf_Unsigned bytes, code, ilen = 0;
	Dwarf_Small version;
	char *aug = NULL;
	Dwarf_Signed daf;
	Dwarf_Half ra, offset_size;
	Dwarf_Ptr instr = NULL;
	struct hd_error *err = NULL;
	// The CIE's section offset (dwarf_get_fde_range's is .eh_frame's
	// relative CIE pointer as written).
	Dwarf_Off cie_sec_off = 0;
	if (dwarf_get_cie_of_fde(fde, &cie, &derr) != DW_DLV_OK ||
	    dwarf_cie_section_offset(dbg, cie, &cie_sec_off, &derr) != DW_DLV_OK ||
	    dwarf_get_cie_info_b(cie, &bytes, &version, &aug, &code, &daf, &ra,
				 &instr, &ilen, &offset_size, &derr) != DW_DLV_OK) {
		err = hd_error_create(HD_ERROR_FORMAT,
				      "%s: corrupt CFI: its CIE cannot be read",
				      what);
	} else if (ilen && !within(sec, sec_size, instr, ilen)) {
		err = hd_error_create(HD_ERROR_FORMAT,
				      "%s: corrupt CFI: the initial instructions of its CIE at offset 0x%" PRIx64
				      " (0x%" PRIx64 " bytes by its length fields) lie outside %s (0x%" PRIx64 " bytes)",
				      what, (uint64_t)cie_sec_off, (uint64_t)ilen,
				      section, sec_size);
	} else if ((err = hd_cfa_check(instr, ilen, asize))) {
		err = hd_error_prefix(err, "the initial instructions of the CIE at %s offset 0x%" PRIx64 " of %s",
				      section, (uint64_t)cie_sec_off, what);
	}
	if (derr) {
		dwarf_dealloc_error(dbg, derr);
		derr = NULL;
	}
	if (err)
		return err;

	ilen = 0;
	instr = NULL;
	if (dwarf_get_fde_instr_bytes(fde, &instr, &ilen, &derr) != DW_DLV_OK)
		err = hd_error_create(HD_ERROR_FORMAT,
				      "%s: corrupt CFI: its instructions cannot be read",
				      what);
	else if (ilen && !within(sec, sec_size, instr, ilen))
		err = hd_error_create(HD_ERROR_FORMAT,
				      "%s: corrupt CFI: its instructions (0x%" PRIx64
				      " bytes by its length fields) lie outside %s (0x%" PRIx64 " bytes)",
				      what, (uint64_t)ilen, section, sec_size);
	else if ((err = hd_cfa_check(instr, ilen, asize)))
		err = hd_error_prefix(err, "%s", what);
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	return err;
}
