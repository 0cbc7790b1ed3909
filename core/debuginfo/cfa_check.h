// A check of call frame instructions that libdwarf 20210528 cannot be
// trusted with (cfa_check.c says why).
#ifndef HD_DEBUGINFO_CFA_CHECK_H
#define HD_DEBUGINFO_CFA_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <libdwarf.h>

#include "heapdom.h"

// Checks one call frame instruction stream of len bytes (DWARF 5 §6.4.2
// and the GNU extensions): NULL when every opcode is known and every
// operand and expression block lies within the bytes; else
// HD_ERROR_FORMAT "corrupt CFI: OPCODE at offset N ..." (N from instr).
// address_size: DW_CFA_set_loc's operand size.
struct hd_error *hd_cfa_check(const uint8_t *instr, uint64_t len,
			      unsigned address_size);

// Checks the instructions libdwarf runs for fde of dbg (its CIE's initial
// instructions, then its own): that they lie within the section its list
// came from (.eh_frame if eh, else .debug_frame), then hd_cfa_check. The
// error names the FDE (section, offset, pc range) and which of the two
// streams is bad.
struct hd_error *hd_cfa_check_fde(Dwarf_Debug dbg, Dwarf_Fde fde, bool eh);

#endif
