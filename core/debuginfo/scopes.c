// The DIEs around a code address: its unit (from .debug_aranges, else by
// scanning unit ranges), the subprogram containing it, the lexical blocks
// and inlined subroutines nested down to it. Ranges are DW_AT_low_pc /
// DW_AT_high_pc or DW_AT_ranges (DWARF 5 .debug_rnglists or DWARF 4
// .debug_ranges).
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "debuginfo/dwarf_util.h"
#include "debuginfo/scopes.h"
#include "util/demangle.h"

#define MAX_DEPTH 64

static void drop(Dwarf_Debug dbg, Dwarf_Error derr)
{
	if (derr)
		dwarf_dealloc_error(dbg, derr);
}

static bool low_pc(Dwarf_Debug dbg, Dwarf_Die die, uint64_t *ret)
{
	Dwarf_Addr lo;
	Dwarf_Error derr = NULL;
	int rc = dwarf_lowpc(die, &lo, &derr);
	drop(dbg, derr);
	if (rc != DW_DLV_OK)
		return false;
	*ret = lo;
	return true;
}

static bool in_ranges_attr(Dwarf_Debug dbg, Dwarf_Die die, uint64_t addr,
			   uint64_t cu_base, bool *has)
{
	Dwarf_Attribute a;
	Dwarf_Error derr = NULL;
	*has = false;
	if (dwarf_attr(die, DW_AT_ranges, &a, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return false;
	}
	*has = true;
	Dwarf_Half form = 0, version = 0, offset_size = 0;
	bool in = false;
	dwarf_whatform(a, &form, &derr);
	dwarf_get_version_of_die(die, &version, &offset_size);
	Dwarf_Unsigned val = 0;
	int rc;
	if (form == DW_FORM_rnglistx)
		rc = dwarf_formudata(a, &val, &derr);
	else {
		Dwarf_Off off = 0;
		rc = dwarf_global_formref(a, &off, &derr);
		val = off;
	}
	if (rc == DW_DLV_OK && version >= 5) {
		Dwarf_Rnglists_Head head = NULL;
		Dwarf_Unsigned count = 0, global = 0;
		if (dwarf_rnglists_get_rle_head(a, form, val, &head, &count,
						&global, &derr) == DW_DLV_OK) {
			for (Dwarf_Unsigned i = 0; i < count && !in; i++) {
				unsigned len = 0, code = 0;
				Dwarf_Unsigned r1, r2, c1, c2;
				Dwarf_Bool unavail = false;
				if (dwarf_get_rnglists_entry_fields_a(
					    head, i, &len, &code, &r1, &r2,
					    &unavail, &c1, &c2, &derr) != DW_DLV_OK)
					break;
				if (unavail || code == DW_RLE_end_of_list ||
				    code == DW_RLE_base_address ||
				    code == DW_RLE_base_addressx)
					continue;
				in = addr >= c1 && addr < c2;
			}
			dwarf_dealloc_rnglists_head(head);
		}
	} else if (rc == DW_DLV_OK) {
		Dwarf_Ranges *r = NULL;
		Dwarf_Signed n = 0;
		Dwarf_Unsigned bytes = 0;
		Dwarf_Off real = 0;
		if (dwarf_get_ranges_b(dbg, val, die, &real, &r, &n, &bytes,
				       &derr) == DW_DLV_OK) {
			uint64_t base = cu_base;
			for (Dwarf_Signed i = 0; i < n && !in; i++) {
				if (r[i].dwr_type == DW_RANGES_ADDRESS_SELECTION)
					base = r[i].dwr_addr2;
				else if (r[i].dwr_type == DW_RANGES_ENTRY)
					in = addr >= base + r[i].dwr_addr1 &&
					     addr < base + r[i].dwr_addr2;
			}
			dwarf_ranges_dealloc(dbg, r, n);
		}
	}
	drop(dbg, derr);
	dwarf_dealloc_attribute(a);
	return in;
}

// Does die's code (low/high pc or ranges) contain addr?
static bool contains(Dwarf_Debug dbg, Dwarf_Die die, uint64_t addr,
		     uint64_t cu_base)
{
	bool has;
	bool in = in_ranges_attr(dbg, die, addr, cu_base, &has);
	if (has)
		return in;
	uint64_t lo;
	if (!low_pc(dbg, die, &lo))
		return false;
	Dwarf_Addr hi;
	Dwarf_Half form;
	enum Dwarf_Form_Class cls;
	Dwarf_Error derr = NULL;
	if (dwarf_highpc_b(die, &hi, &form, &cls, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return false;
	}
	if (cls == DW_FORM_CLASS_CONSTANT)
		hi += lo;
	return addr >= lo && addr < hi;
}

static Dwarf_Die first_child(Dwarf_Debug dbg, Dwarf_Die d)
{
	Dwarf_Die c = NULL;
	Dwarf_Error derr = NULL;
	if (dwarf_child(d, &c, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return NULL;
	}
	return c;
}

static Dwarf_Die find_unit(struct hd_mod_dwarf *md, Dwarf_Debug dbg,
			   uint64_t addr)
{
	Dwarf_Error derr = NULL;
	if (!md->aranges_loaded) {
		md->aranges_loaded = true;
		if (dwarf_get_aranges(dbg, &md->aranges, &md->num_aranges,
				      &derr) != DW_DLV_OK) {
			drop(dbg, derr);
			derr = NULL;
			md->aranges = NULL;
			md->num_aranges = 0;
		}
	}
	if (md->num_aranges > 0) {
		Dwarf_Arange ar;
		Dwarf_Off off;
		if (dwarf_get_arange(md->aranges, md->num_aranges, addr, &ar,
				     &derr) == DW_DLV_OK &&
		    dwarf_get_cu_die_offset(ar, &off, &derr) == DW_DLV_OK)
			return hd_dw_offdie(dbg, off);
		drop(dbg, derr);
		derr = NULL;
	}
	// No (or incomplete) .debug_aranges: every unit's own ranges.
	Dwarf_Unsigned hlen, abbr, next, typeoff;
	Dwarf_Half version, asz, osz, esz, htype;
	Dwarf_Sig8 sig;
	Dwarf_Die found = NULL;
	for (;;) {
		int rc = dwarf_next_cu_header_d(dbg, true, &hlen, &version, &abbr,
						&asz, &osz, &esz, &sig, &typeoff,
						&next, &htype, &derr);
		if (rc != DW_DLV_OK)
			break;
		if (found)
			continue; // run to the end: the iterator must reset
		Dwarf_Die cu = NULL;
		if (dwarf_siblingof_b(dbg, NULL, true, &cu, &derr) != DW_DLV_OK)
			continue;
		uint64_t base = 0;
		low_pc(dbg, cu, &base);
		if (contains(dbg, cu, addr, base))
			found = cu;
		else
			hd_dw_free(cu);
	}
	drop(dbg, derr);
	return found;
}

// The chain of DIEs from a subprogram down to the innermost lexical block
// or inlined subroutine containing addr.
struct chain {
	Dwarf_Die die[MAX_DEPTH];
	Dwarf_Half tag[MAX_DEPTH];
	size_t n;
};

static bool is_scope(Dwarf_Half tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine;
}

static bool is_container(Dwarf_Half tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_structure_type ||
	       tag == DW_TAG_class_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_module;
}

// Descends from parent into the child scopes containing addr.
static void descend(Dwarf_Debug dbg, Dwarf_Die parent, uint64_t addr,
		    uint64_t base, struct chain *c, struct hd_dw_corrupt *bad)
{
	Dwarf_Die d = first_child(dbg, parent);
	while (d && c->n < MAX_DEPTH) {
		Dwarf_Half tag = hd_dw_tag(dbg, d);
		if (is_scope(tag) && contains(dbg, d, addr, base)) {
			c->die[c->n] = d;
			c->tag[c->n++] = tag;
			descend(dbg, d, addr, base, c, bad);
			return;
		}
		Dwarf_Die next = hd_dw_next_sibling(dbg, d, bad);
		hd_dw_free(d);
		d = next;
	}
	hd_dw_free(d);
}

// Finds the subprogram (within namespaces and classes) containing addr.
static bool find_function(Dwarf_Debug dbg, Dwarf_Die parent, uint64_t addr,
			  uint64_t base, struct chain *c, int depth,
			  struct hd_dw_corrupt *bad)
{
	if (depth > 16)
		return false;
	Dwarf_Die d = first_child(dbg, parent);
	while (d) {
		Dwarf_Half tag = hd_dw_tag(dbg, d);
		if (tag == DW_TAG_subprogram && contains(dbg, d, addr, base)) {
			c->die[0] = d;
			c->tag[0] = tag;
			c->n = 1;
			descend(dbg, d, addr, base, c, bad);
			return true;
		}
		if (is_container(tag) &&
		    find_function(dbg, d, addr, base, c, depth + 1, bad)) {
			hd_dw_free(d);
			return true;
		}
		Dwarf_Die next = hd_dw_next_sibling(dbg, d, bad);
		hd_dw_free(d);
		d = next;
	}
	return false;
}

// gdb's name of a function: C++ names qualified, without parameters (as
// frame.name() prints them); others their DW_AT_linkage_name when they
// have one (glibc's raise is "__GI_raise"), else DW_AT_name.
static char *function_name(Dwarf_Debug dbg, Dwarf_Die die, bool cplus)
{
	if (!cplus) {
		char *link = hd_dw_string(dbg, die, DW_AT_linkage_name);
		if (link)
			return link;
	}
	if (cplus) {
		char *link = hd_dw_string(dbg, die, DW_AT_linkage_name);
		if (!link)
			link = hd_dw_string(dbg, die, DW_AT_MIPS_linkage_name);
		char *d = link ? hd_demangle(link) : NULL;
		free(link);
		if (d) {
			// Cut the parameter list: the last top-level "(".
			int depth = 0;
			char *cut = NULL;
			for (char *p = d; *p; p++) {
				if (*p == '<')
					depth++;
				else if (*p == '>')
					depth--;
				else if (*p == '(' && depth == 0 && !cut)
					cut = p;
			}
			if (cut)
				*cut = '\0';
			return d;
		}
	}
	return hd_dw_string(dbg, die, DW_AT_name);
}

static char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return strdup(s ? s + 1 : path ? path : "?");
}

// The basename of file index idx of the unit's line table.
static char *unit_file(Dwarf_Debug dbg, Dwarf_Die cu, uint64_t idx)
{
	char **files = NULL;
	Dwarf_Signed n = 0;
	Dwarf_Error derr = NULL;
	if (dwarf_srcfiles(cu, &files, &n, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return NULL;
	}
	Dwarf_Half version = 0, osz = 0;
	dwarf_get_version_of_die(cu, &version, &osz);
	// DWARF 5 file indexes start at 0, earlier ones at 1.
	int64_t i = version >= 5 ? (int64_t)idx : (int64_t)idx - 1;
	char *ret = i >= 0 && i < n ? base_name(files[i]) : NULL;
	for (Dwarf_Signed k = 0; k < n; k++)
		dwarf_dealloc(dbg, files[k], DW_DLA_STRING);
	dwarf_dealloc(dbg, files, DW_DLA_LIST);
	return ret;
}

// The row of the unit's line table covering addr: within a sequence, the
// last row at the highest address not above addr (rows at one address
// collapse to the last, as lines.c reads them). DWARF 5 starts the file
// register at 1; this libdwarf says 0 until a DW_LNS_set_file, and gcc
// never sets file 0 (its entry 0 repeats the primary file later), so a 0
// is read as 1 there, as lines.c does.
static void unit_line(Dwarf_Debug dbg, Dwarf_Die cu, uint64_t addr,
		      struct hd_scopes *s)
{
	Dwarf_Unsigned version = 0;
	Dwarf_Small count = 0;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Error derr = NULL;
	if (dwarf_srclines_b(cu, &version, &count, &ctx, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return;
	}
	Dwarf_Line *lines = NULL;
	Dwarf_Signed n = 0, best = -1, cand = -1;
	if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		n = 0;
	}
	for (Dwarf_Signed i = 0; i < n && best < 0; i++) {
		Dwarf_Addr a = 0;
		Dwarf_Bool end = false;
		if (dwarf_lineaddr(lines[i], &a, &derr) != DW_DLV_OK ||
		    dwarf_lineendsequence(lines[i], &end, &derr) != DW_DLV_OK) {
			drop(dbg, derr);
			derr = NULL;
			continue;
		}
		if (a > addr) {
			best = cand;
		} else if (end) {
			cand = -1;
			continue;
		}
		if (a <= addr)
			cand = i;
	}
	Dwarf_Unsigned lineno = 0, fileno = 0;
	if (best >= 0 && dwarf_lineno(lines[best], &lineno, &derr) == DW_DLV_OK &&
	    dwarf_line_srcfileno(lines[best], &fileno, &derr) == DW_DLV_OK) {
		Dwarf_Signed base = 0, nfiles = 0, endidx = 0;
		const char *name = NULL, *name0 = NULL;
		Dwarf_Unsigned dir, mtime, len;
		Dwarf_Form_Data16 *md5;
		if (dwarf_srclines_files_indexes(ctx, &base, &nfiles, &endidx, &derr) !=
		    DW_DLV_OK)
			nfiles = 0;
		if (fileno == 0 && version >= 5 && base == 0 && nfiles > 2 &&
		    dwarf_srclines_files_data_b(ctx, 0, &name0, &dir, &mtime, &len,
						&md5, &derr) == DW_DLV_OK && name0) {
			for (Dwarf_Signed k = 2; k < nfiles; k++)
				if (dwarf_srclines_files_data_b(ctx, k, &name, &dir, &mtime,
								&len, &md5, &derr) ==
					    DW_DLV_OK &&
				    name && strcmp(name, name0) == 0) {
					fileno = 1;
					break;
				}
		}
		name = NULL;
		if ((Dwarf_Signed)fileno >= base && (Dwarf_Signed)fileno < base + nfiles &&
		    dwarf_srclines_files_data_b(ctx, (Dwarf_Signed)fileno, &name, &dir,
						&mtime, &len, &md5, &derr) == DW_DLV_OK &&
		    name) {
			s->file = base_name(name);
			s->line = (unsigned)lineno;
		}
	}
	drop(dbg, derr);
	dwarf_srclines_dealloc_b(ctx);
}

// The operations of the location expression covering addr.
static bool location_ops(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at,
			 uint64_t addr, struct hd_dwarf_op *ops, size_t *n)
{
	Dwarf_Attribute a;
	Dwarf_Error derr = NULL;
	if (dwarf_attr(die, at, &a, &derr) != DW_DLV_OK) {
		drop(dbg, derr);
		return false;
	}
	Dwarf_Loc_Head_c head = NULL;
	Dwarf_Unsigned count = 0;
	bool found = false;
	if (dwarf_get_loclist_c(a, &head, &count, &derr) == DW_DLV_OK) {
		unsigned kind = DW_LKIND_unknown;
		dwarf_get_loclist_head_kind(head, &kind, &derr);
		for (Dwarf_Unsigned i = 0; i < count && !found; i++) {
			Dwarf_Small lle = 0, source = 0;
			Dwarf_Unsigned rawlo, rawhi, nops = 0, eoff, loff;
			Dwarf_Bool unavail = false;
			Dwarf_Addr lo = 0, hi = 0;
			Dwarf_Locdesc_c desc = NULL;
			if (dwarf_get_locdesc_entry_d(head, i, &lle, &rawlo, &rawhi,
						      &unavail, &lo, &hi, &nops,
						      &desc, &source, &eoff, &loff,
						      &derr) != DW_DLV_OK)
				break;
			if (!nops || unavail)
				continue;
			if (kind != DW_LKIND_expression && !(addr >= lo && addr < hi))
				continue;
			if (nops > HD_SCOPE_MAX_OPS)
				break;
			found = true;
			for (Dwarf_Unsigned j = 0; j < nops && found; j++) {
				Dwarf_Small atom;
				Dwarf_Unsigned o1, o2, o3, r1, r2, r3, br;
				if (dwarf_get_location_op_value_d(desc, j, &atom, &o1,
								  &o2, &o3, &r1, &r2,
								  &r3, &br, &derr) !=
				    DW_DLV_OK) {
					found = false;
					break;
				}
				ops[j] = (struct hd_dwarf_op){.atom = atom,
							      .op1 = o1, .op2 = o2};
			}
			*n = nops;
		}
		dwarf_loc_head_c_dealloc(head);
	}
	drop(dbg, derr);
	dwarf_dealloc_attribute(a);
	return found;
}

static bool has_attr(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Bool has = false;
	Dwarf_Error derr = NULL;
	if (dwarf_hasattr(die, at, &has, &derr) != DW_DLV_OK)
		drop(dbg, derr);
	return has;
}

// Variables and parameters directly in block (gdb's block iteration).
static struct hd_error *block_vars(Dwarf_Debug dbg, Dwarf_Die block,
				   uint64_t addr, bool cplus,
				   struct hd_scopes *s, size_t *cap,
				   struct hd_dw_corrupt *bad)
{
	for (Dwarf_Die d = first_child(dbg, block); d;) {
		Dwarf_Half tag = hd_dw_tag(dbg, d);
		if (tag == DW_TAG_variable || tag == DW_TAG_formal_parameter) {
			char *name = hd_dw_string(dbg, d, DW_AT_name);
			bool seen = !name;
			for (size_t i = 0; name && i < s->num_vars && !seen; i++)
				seen = strcmp(s->vars[i].name, name) == 0;
			if (!seen) {
				if (s->num_vars == *cap) {
					size_t nc = *cap ? 2 * *cap : 16;
					void *p = realloc(s->vars, nc * sizeof(*s->vars));
					if (!p) {
						free(name);
						hd_dw_free(d);
						return &hd_error_no_memory;
					}
					s->vars = p;
					*cap = nc;
				}
				struct hd_scope_var *v = &s->vars[s->num_vars++];
				memset(v, 0, sizeof(*v));
				v->name = name;
				name = NULL;
				// A variable without a location of its own
				// (an abstract instance's) has none here.
				if (has_attr(dbg, d, DW_AT_location))
					v->has_loc = location_ops(dbg, d, DW_AT_location,
								  addr, v->ops,
								  &v->num_ops);
				if (v->has_loc) {
					Dwarf_Die td = hd_dw_with_attr(dbg, d, DW_AT_type);
					Dwarf_Die t = td ? hd_dw_ref(dbg, td, DW_AT_type) : NULL;
					if (td && td != d)
						hd_dw_free(td);
					v->type_name = t ? hd_dw_type_name(dbg, t, cplus,
									   &v->size, bad)
							 : NULL;
					hd_dw_free(t);
				}
			}
			free(name);
		}
		Dwarf_Die next = hd_dw_next_sibling(dbg, d, bad);
		hd_dw_free(d);
		d = next;
	}
	return NULL;
}

struct hd_error *hd_scopes_find(struct hd_mod_dwarf *md, uint64_t addr,
				int print_cplus, struct hd_scopes *s)
{
	memset(s, 0, sizeof(*s));
	s->cplus = -1;
	Dwarf_Debug dbg = hd_mod_dwarf_info(md);
	if (!dbg)
		return NULL;
	Dwarf_Die cu = find_unit(md, dbg, addr);
	if (!cu)
		return NULL;
	uint64_t base = 0;
	low_pc(dbg, cu, &base);
	Dwarf_Unsigned lang = 0;
	Dwarf_Error derr = NULL;
	if (dwarf_srclang(cu, &lang, &derr) != DW_DLV_OK)
		drop(dbg, derr);
	bool cplus = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
		     lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
	s->cplus = cplus;
	// Function names follow the unit's language, type names gdb's.
	bool print = print_cplus < 0 ? cplus : print_cplus;
	struct chain c = {.n = 0};
	struct hd_error *err = NULL;
	struct hd_dw_corrupt bad = {.found = false};
	unit_line(dbg, cu, addr, s);
	if (!find_function(dbg, cu, addr, base, &c, 0, &bad))
		goto out;
	// Functions, innermost first: each inlined subroutine, then the
	// subprogram.
	size_t ninl = 0;
	for (size_t i = 0; i < c.n; i++)
		ninl += c.tag[i] == DW_TAG_inlined_subroutine;
	s->fns = calloc(ninl + 1, sizeof(*s->fns));
	if (!s->fns) {
		err = &hd_error_no_memory;
		goto out;
	}
	for (size_t i = c.n; i-- > 0;) {
		if (c.tag[i] != DW_TAG_inlined_subroutine && c.tag[i] != DW_TAG_subprogram)
			continue;
		struct hd_scope_fn *f = &s->fns[s->num_fns++];
		f->name = function_name(dbg, c.die[i], cplus);
		if (c.tag[i] == DW_TAG_inlined_subroutine) {
			uint64_t file = 0, line = 0;
			if (hd_dw_udata(dbg, c.die[i], DW_AT_call_file, &file))
				f->call_file = unit_file(dbg, cu, file);
			if (hd_dw_udata(dbg, c.die[i], DW_AT_call_line, &line))
				f->call_line = (unsigned)line;
		}
	}
	// The out-of-line function's blocks around addr, innermost first:
	// gdb's frame.block() for that frame skips the inlined blocks.
	size_t top = 0;
	while (top + 1 < c.n && c.tag[top + 1] == DW_TAG_lexical_block)
		top++;
	size_t cap = 0;
	for (size_t i = top + 1; i-- > 0 && !err;)
		err = block_vars(dbg, c.die[i], addr, print, s, &cap, &bad);
	s->has_frame_base = location_ops(dbg, c.die[0], DW_AT_frame_base, addr,
					 s->frame_base, &s->num_frame_base);
out:
	for (size_t i = 0; i < c.n; i++)
		hd_dw_free(c.die[i]);
	hd_dw_free(cu);
	// What was found before the corrupt link may be wrong (a variable
	// or function that would come after it is missing): none of it.
	if (!err && bad.found)
		err = hd_error_file(HD_ERROR_FORMAT, md->info_path,
				    "corrupt DWARF: a DW_AT_sibling of the DIE at 0x%llx leads back to 0x%llx, not after it",
				    (unsigned long long)bad.die,
				    (unsigned long long)bad.sibling);
	if (err)
		hd_scopes_free(s);
	return err;
}

void hd_scopes_free(struct hd_scopes *s)
{
	for (size_t i = 0; i < s->num_fns; i++) {
		free(s->fns[i].name);
		free(s->fns[i].call_file);
	}
	free(s->fns);
	for (size_t i = 0; i < s->num_vars; i++) {
		free(s->vars[i].name);
		free(s->vars[i].type_name);
	}
	free(s->vars);
	free(s->file);
	memset(s, 0, sizeof(*s));
}
