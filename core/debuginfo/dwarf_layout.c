// Struct layouts from DWARF, through libdwarf: see dwarf_layout.h.
//
// The DIE tree is walked with an explicit stack, never recursively, so a
// deep or hostile file cannot overflow the C stack. Type chains (typedef ->
// const -> array -> ...) are followed with a hop limit for the same reason
// and to survive reference cycles in broken DWARF.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "heapdom.h"
#include "debuginfo/dwarf_layout.h"
#include "util/vec.h"

// Longest typedef/qualifier/array chain we follow before calling the DWARF
// broken; real programs need a handful of hops.
#define MAX_TYPE_HOPS 64

struct layout_ctx {
	Dwarf_Debug dbg;
	const char *path;
	const char *const *names;
	size_t n;
	struct hd_struct_layout *ret;
	size_t remaining; // names still without a layout
	// From the current CU header: needed to classify attribute forms
	// and to size pointers that carry no DW_AT_byte_size.
	Dwarf_Half version;
	Dwarf_Half offset_size;
	Dwarf_Half address_size;
};

// Turns a libdwarf error into ours and releases it.
static struct hd_error *dw_error(struct layout_ctx *ctx, Dwarf_Error derr,
				 const char *what)
{
	struct hd_error *err = hd_error_file(
		HD_ERROR_FORMAT, ctx->path, "%s: %s", what,
		derr ? dwarf_errmsg(derr) : "unknown libdwarf error");
	if (derr)
		dwarf_dealloc_error(ctx->dbg, derr);
	return err;
}

// ------------------------------------------------------------ attributes

// Reads the value of a constant-class attribute. *found is false when it
// is not a constant (e.g. the exprloc bound of a VLA), which callers treat
// as "unknown" rather than as an error.
static struct hd_error *attr_value_const(struct layout_ctx *ctx,
					 Dwarf_Attribute attr,
					 Dwarf_Half attrnum, uint64_t *ret,
					 bool *found)
{
	Dwarf_Error derr = NULL;
	Dwarf_Half form;
	int rc;

	*found = false;
	if (dwarf_whatform(attr, &form, &derr) != DW_DLV_OK)
		return dw_error(ctx, derr, "reading attribute form");
	if (dwarf_get_form_class(ctx->version, attrnum, ctx->offset_size,
				 form) != DW_FORM_CLASS_CONSTANT)
		return NULL;
	// dwarf_formudata rejects negative sdata, and a lower bound may
	// legitimately be negative, so signed forms go through formsdata.
	if (form == DW_FORM_sdata || form == DW_FORM_implicit_const) {
		Dwarf_Signed s;
		rc = dwarf_formsdata(attr, &s, &derr);
		*ret = (uint64_t)s;
	} else {
		Dwarf_Unsigned u;
		rc = dwarf_formudata(attr, &u, &derr);
		*ret = u;
	}
	if (rc != DW_DLV_OK)
		return dw_error(ctx, derr, "reading constant attribute");
	*found = true;
	return NULL;
}

// Reads a constant-class attribute of die; *found is false if it is absent
// or not a constant.
static struct hd_error *attr_const(struct layout_ctx *ctx, Dwarf_Die die,
				   Dwarf_Half attrnum, uint64_t *ret,
				   bool *found)
{
	Dwarf_Attribute attr;
	Dwarf_Error derr = NULL;

	*found = false;
	int rc = dwarf_attr(die, attrnum, &attr, &derr);
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	if (rc != DW_DLV_OK)
		return dw_error(ctx, derr, "reading attribute");
	struct hd_error *err = attr_value_const(ctx, attr, attrnum, ret, found);
	dwarf_dealloc_attribute(attr);
	return err;
}

static struct hd_error *has_attr(struct layout_ctx *ctx, Dwarf_Die die,
				 Dwarf_Half attrnum, bool *ret)
{
	Dwarf_Bool b = 0;
	Dwarf_Error derr = NULL;
	if (dwarf_hasattr(die, attrnum, &b, &derr) != DW_DLV_OK)
		return dw_error(ctx, derr, "reading attribute");
	*ret = b;
	return NULL;
}

// The DIE's name, or NULL when it has none. Points into libdwarf's string
// section: valid until dwarf_finish, never freed by us.
static struct hd_error *die_name(struct layout_ctx *ctx, Dwarf_Die die,
				 const char **ret)
{
	char *name = NULL;
	Dwarf_Error derr = NULL;
	int rc = dwarf_diename(die, &name, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(ctx, derr, "reading DW_AT_name");
	*ret = rc == DW_DLV_OK ? name : NULL;
	return NULL;
}

static struct hd_error *die_tag(struct layout_ctx *ctx, Dwarf_Die die,
				Dwarf_Half *ret)
{
	Dwarf_Error derr = NULL;
	if (dwarf_tag(die, ret, &derr) != DW_DLV_OK)
		return dw_error(ctx, derr, "reading DIE tag");
	return NULL;
}

// Follows DW_AT_type. *ret is NULL when there is none (void) or when it is
// a type-unit signature we do not chase; otherwise the caller deallocs it.
static struct hd_error *die_type(struct layout_ctx *ctx, Dwarf_Die die,
				 Dwarf_Die *ret)
{
	Dwarf_Attribute attr;
	Dwarf_Error derr = NULL;
	Dwarf_Half form;
	Dwarf_Off off;
	struct hd_error *err = NULL;

	*ret = NULL;
	int rc = dwarf_attr(die, DW_AT_type, &attr, &derr);
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	if (rc != DW_DLV_OK)
		return dw_error(ctx, derr, "reading DW_AT_type");
	if (dwarf_whatform(attr, &form, &derr) != DW_DLV_OK) {
		err = dw_error(ctx, derr, "reading DW_AT_type form");
		goto out;
	}
	if (form == DW_FORM_ref_sig8)
		goto out;
	if (dwarf_global_formref(attr, &off, &derr) != DW_DLV_OK) {
		err = dw_error(ctx, derr, "reading DW_AT_type");
		goto out;
	}
	if (dwarf_offdie_b(ctx->dbg, off, true, ret, &derr) != DW_DLV_OK) {
		*ret = NULL;
		err = dw_error(ctx, derr, "following DW_AT_type");
	}
out:
	dwarf_dealloc_attribute(attr);
	return err;
}

// ------------------------------------------------------------------ types

static bool is_struct_tag(Dwarf_Half tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type;
}

// Tags that only rename or qualify a type: same size as their target.
static bool is_alias_tag(Dwarf_Half tag)
{
	return tag == DW_TAG_typedef || tag == DW_TAG_const_type ||
	       tag == DW_TAG_volatile_type || tag == DW_TAG_restrict_type ||
	       tag == DW_TAG_atomic_type || tag == DW_TAG_immutable_type;
}

static bool is_pointer_tag(Dwarf_Half tag)
{
	return tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
	       tag == DW_TAG_rvalue_reference_type;
}

// Elements of one subrange: DW_AT_count, else upper - lower + 1 with C's
// default lower bound of 0. An unknown bound (flexible array member, VLA)
// gives 0, and so does gcc's upper bound of -1 for `x[0]`.
static struct hd_error *subrange_count(struct layout_ctx *ctx, Dwarf_Die die,
				       uint64_t *ret)
{
	uint64_t count, upper, lower = 0;
	bool found;
	struct hd_error *err;

	*ret = 0;
	if ((err = attr_const(ctx, die, DW_AT_count, &count, &found)))
		return err;
	if (found) {
		*ret = count;
		return NULL;
	}
	if ((err = attr_const(ctx, die, DW_AT_upper_bound, &upper, &found)))
		return err;
	if (!found)
		return NULL;
	if ((err = attr_const(ctx, die, DW_AT_lower_bound, &lower, &found)))
		return err;
	*ret = upper - lower + 1;
	return NULL;
}

// Product of the dimensions of an array DIE (one subrange child per
// dimension: gcc describes int a[3][4] as one array with two subranges).
static struct hd_error *array_elements(struct layout_ctx *ctx, Dwarf_Die die,
				       uint64_t *ret)
{
	Dwarf_Die child, next;
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;
	uint64_t total = 1;
	bool any = false;

	int rc = dwarf_child(die, &child, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(ctx, derr, "reading array dimensions");
	while (rc == DW_DLV_OK) {
		Dwarf_Half tag;
		if ((err = die_tag(ctx, child, &tag)))
			break;
		if (tag == DW_TAG_subrange_type) {
			uint64_t count;
			if ((err = subrange_count(ctx, child, &count)))
				break;
			total *= count;
			any = true;
		}
		next = NULL;
		rc = dwarf_siblingof_b(ctx->dbg, child, true, &next, &derr);
		dwarf_dealloc_die(child);
		child = next;
		if (rc == DW_DLV_ERROR)
			return dw_error(ctx, derr, "reading array dimensions");
	}
	if (err) {
		dwarf_dealloc_die(child);
		return err;
	}
	*ret = any ? total : 0;
	return NULL;
}

// Size in bytes of the type of a member (or of any DIE with DW_AT_type),
// and for arrays the number of elements. Nested arrays, even through a
// typedef (typedef int row[4]; row a[3];), are flattened to the innermost
// non-array element so that size == count * element size always holds.
static struct hd_error *member_type_size(struct layout_ctx *ctx,
					 Dwarf_Die member, uint64_t *size,
					 uint64_t *count)
{
	Dwarf_Die cur = NULL, next;
	struct hd_error *err;
	uint64_t elements = 1, byte_size, array_bytes = 0;
	bool is_array = false, found;

	*size = 0;
	*count = 0;
	if ((err = die_type(ctx, member, &cur)))
		return err;
	for (int hops = 0; cur; hops++) {
		Dwarf_Half tag;
		if (hops == MAX_TYPE_HOPS) {
			err = hd_error_file(HD_ERROR_FORMAT, ctx->path,
					    "type chain too long");
			goto out;
		}
		if ((err = die_tag(ctx, cur, &tag)))
			goto out;
		if ((err = attr_const(ctx, cur, DW_AT_byte_size, &byte_size,
				      &found)))
			goto out;
		if (tag == DW_TAG_array_type) {
			uint64_t n = 0;
			if ((err = array_elements(ctx, cur, &n)))
				goto out;
			// Some producers size the array itself; trust the
			// outermost such size over our product.
			if (found && !is_array)
				array_bytes = byte_size;
			elements *= n;
			is_array = true;
		} else if (found) {
			*size = byte_size;
			break;
		} else if (is_pointer_tag(tag)) {
			*size = ctx->address_size;
			break;
		} else if (!is_alias_tag(tag)) {
			// void, a function type or an incomplete struct:
			// nothing sensible to report.
			break;
		}
		if ((err = die_type(ctx, cur, &next)))
			goto out;
		dwarf_dealloc_die(cur);
		cur = next;
	}
	if (is_array) {
		*count = elements;
		*size = array_bytes ? array_bytes : *size * elements;
	}
out:
	if (cur)
		dwarf_dealloc_die(cur);
	return err;
}

// Decodes an unsigned LEB128 from [*p, end).
static bool read_uleb128(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t value = 0;
	for (unsigned int shift = 0; *p < end; shift += 7) {
		uint8_t byte = *(*p)++;
		if (shift < 64)
			value |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*ret = value;
			return true;
		}
	}
	return false;
}

// A member location expression: C compilers only ever emit
// DW_OP_plus_uconst N (offset N from the struct base). Anything else is a
// C++ virtual-base style computation that has no fixed offset.
static struct hd_error *location_expr(struct layout_ctx *ctx,
				      const char *member, const uint8_t *p,
				      uint64_t len, uint64_t *ret)
{
	const uint8_t *end = p + len;
	if (len > 0 && *p == DW_OP_plus_uconst) {
		p++;
		if (read_uleb128(&p, end, ret) && p == end)
			return NULL;
	}
	return hd_error_file(HD_ERROR_FORMAT, ctx->path,
			     "member %s: unsupported DW_AT_data_member_location expression",
			     member);
}

// Byte offset of a member. DWARF 4+ bitfields carry DW_AT_data_bit_offset
// instead, and union members may carry nothing at all (offset 0).
static struct hd_error *member_offset(struct layout_ctx *ctx, Dwarf_Die die,
				      const char *member, uint64_t *ret)
{
	Dwarf_Attribute attr;
	Dwarf_Error derr = NULL;
	Dwarf_Half form;
	struct hd_error *err = NULL;
	bool found;

	*ret = 0;
	int rc = dwarf_attr(die, DW_AT_data_member_location, &attr, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(ctx, derr, "reading DW_AT_data_member_location");
	if (rc == DW_DLV_NO_ENTRY) {
		uint64_t bits;
		if ((err = attr_const(ctx, die, DW_AT_data_bit_offset, &bits,
				      &found)))
			return err;
		if (found)
			*ret = bits / 8;
		return NULL;
	}
	if (dwarf_whatform(attr, &form, &derr) != DW_DLV_OK) {
		err = dw_error(ctx, derr, "reading DW_AT_data_member_location");
		goto out;
	}
	// Decide by form, not by class: libdwarf classes a DWARF 2 block as
	// an expression, yet only dwarf_formblock can read it.
	if (form == DW_FORM_exprloc) {
		Dwarf_Unsigned len;
		Dwarf_Ptr data;
		if (dwarf_formexprloc(attr, &len, &data, &derr) != DW_DLV_OK) {
			err = dw_error(ctx, derr, "reading member location");
			goto out;
		}
		err = location_expr(ctx, member, data, len, ret);
	} else if (form == DW_FORM_block1 || form == DW_FORM_block2 ||
		   form == DW_FORM_block4 || form == DW_FORM_block) {
		// DWARF 2/3 put the same expression in a block form.
		Dwarf_Block *block;
		if (dwarf_formblock(attr, &block, &derr) != DW_DLV_OK) {
			err = dw_error(ctx, derr, "reading member location");
			goto out;
		}
		err = location_expr(ctx, member, block->bl_data,
				    block->bl_len, ret);
		dwarf_dealloc(ctx->dbg, block, DW_DLA_BLOCK);
	} else if (!(err = attr_value_const(ctx, attr,
					    DW_AT_data_member_location, ret,
					    &found)) &&
		   !found) {
		// A DWARF 3 data4/data8 here is a location list pointer.
		err = hd_error_file(HD_ERROR_FORMAT, ctx->path,
				    "member %s: unsupported DW_AT_data_member_location form 0x%x",
				    member, form);
	}
out:
	dwarf_dealloc_attribute(attr);
	return err;
}

// ---------------------------------------------------------------- structs

static void layout_free_members(struct hd_member_layout *members, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(members[i].name);
	free(members);
}

static struct hd_error *read_member(struct layout_ctx *ctx, Dwarf_Die die,
				    struct hd_member_layout *ret)
{
	const char *name = NULL;
	struct hd_error *err;

	if ((err = die_name(ctx, die, &name)))
		return err;
	// Anonymous struct/union members are kept, in order, with the name ""
	// so that lookups never meet NULL.
	if ((err = member_offset(ctx, die, name ? name : "<anonymous>",
				 &ret->offset)))
		return err;
	if ((err = member_type_size(ctx, die, &ret->size, &ret->count)))
		return err;
	ret->name = strdup(name ? name : "");
	if (!ret->name)
		return &hd_error_no_memory;
	return NULL;
}

// Fills ret from a struct definition DIE. ret is untouched on error.
static struct hd_error *read_struct(struct layout_ctx *ctx, Dwarf_Die die,
				    const char *name,
				    struct hd_struct_layout *ret)
{
	struct hd_member_layout *members = NULL;
	size_t num = 0, cap = 0;
	Dwarf_Die child = NULL, next;
	Dwarf_Error derr = NULL;
	struct hd_error *err;
	uint64_t size;
	bool found;

	if ((err = attr_const(ctx, die, DW_AT_byte_size, &size, &found)))
		return err;
	int rc = dwarf_child(die, &child, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(ctx, derr, "reading struct members");
	while (rc == DW_DLV_OK) {
		Dwarf_Half tag;
		bool decl = false;
		if ((err = die_tag(ctx, child, &tag)))
			goto fail;
		// C++ static data members are declarations in DWARF 4.
		if (tag == DW_TAG_member &&
		    (err = has_attr(ctx, child, DW_AT_declaration, &decl)))
			goto fail;
		if (tag == DW_TAG_member && !decl) {
			struct hd_member_layout m = {0};
			if ((err = read_member(ctx, child, &m)))
				goto fail;
			if (!HD_VEC_PUSH(members, num, cap, m)) {
				free(m.name);
				err = &hd_error_no_memory;
				goto fail;
			}
		}
		next = NULL;
		rc = dwarf_siblingof_b(ctx->dbg, child, true, &next, &derr);
		dwarf_dealloc_die(child);
		child = next;
		if (rc == DW_DLV_ERROR) {
			child = NULL;
			err = dw_error(ctx, derr, "reading struct members");
			goto fail;
		}
	}
	ret->name = strdup(name);
	if (!ret->name) {
		err = &hd_error_no_memory;
		goto fail;
	}
	ret->size = size;
	ret->num_members = num;
	ret->members = members;
	return NULL;

fail:
	if (child)
		dwarf_dealloc_die(child);
	layout_free_members(members, num);
	return err;
}

// Follows a typedef through further typedefs and qualifiers. *ret is the
// struct definition it names, or NULL (pointer typedef, declaration only).
static struct hd_error *typedef_target(struct layout_ctx *ctx, Dwarf_Die die,
				       Dwarf_Die *ret)
{
	Dwarf_Die cur, next;
	struct hd_error *err;

	*ret = NULL;
	if ((err = die_type(ctx, die, &cur)))
		return err;
	for (int hops = 0; cur && hops < MAX_TYPE_HOPS; hops++) {
		Dwarf_Half tag;
		bool decl = false;
		if ((err = die_tag(ctx, cur, &tag)))
			break;
		if (is_struct_tag(tag)) {
			if ((err = has_attr(ctx, cur, DW_AT_declaration,
					    &decl)))
				break;
			if (decl)
				break;
			*ret = cur;
			return NULL;
		}
		if (!is_alias_tag(tag))
			break;
		if ((err = die_type(ctx, cur, &next)))
			break;
		dwarf_dealloc_die(cur);
		cur = next;
	}
	if (cur)
		dwarf_dealloc_die(cur);
	return err;
}

// Reads the layout of a matching struct or typedef into every still-empty
// entry asking for its name (callers may repeat a name).
static struct hd_error *visit_die(struct layout_ctx *ctx, Dwarf_Die die,
				  Dwarf_Half tag)
{
	const char *name = NULL;
	struct hd_error *err;
	size_t i;
	bool decl = false;

	if (!is_struct_tag(tag) && tag != DW_TAG_typedef)
		return NULL;
	if ((err = die_name(ctx, die, &name)) || !name)
		return err;
	for (i = 0; i < ctx->n; i++) {
		if (!ctx->ret[i].name && strcmp(ctx->names[i], name) == 0)
			break;
	}
	if (i == ctx->n)
		return NULL;

	Dwarf_Die target = NULL;
	if (tag == DW_TAG_typedef) {
		if ((err = typedef_target(ctx, die, &target)) || !target)
			return err;
	} else {
		if ((err = has_attr(ctx, die, DW_AT_declaration, &decl)) ||
		    decl)
			return err;
	}
	for (; i < ctx->n && !err; i++) {
		if (ctx->ret[i].name || strcmp(ctx->names[i], name) != 0)
			continue;
		err = read_struct(ctx, target ? target : die, ctx->names[i],
				  &ctx->ret[i]);
		if (!err)
			ctx->remaining--;
	}
	if (target)
		dwarf_dealloc_die(target);
	return err;
}

// Children worth entering: those that can define types. Skipping the rest
// (parameters, variables, inlined-call and call-site trees) keeps the walk
// of a big CU cheap, since libdwarf jumps over them by DW_AT_sibling.
static bool may_hold_types(Dwarf_Half tag)
{
	return is_struct_tag(tag) || tag == DW_TAG_subprogram ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_namespace;
}

struct die_stack {
	Dwarf_Die *dies;
	size_t len, cap;
};

// Walks all DIEs below a CU DIE depth first, stopping as soon as every name
// has a layout. The stack holds the ancestors of the current DIE.
static struct hd_error *search_cu(struct layout_ctx *ctx, Dwarf_Die cu_die)
{
	struct die_stack stack = {0};
	Dwarf_Die die, next;
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;

	int rc = dwarf_child(cu_die, &die, &derr);
	if (rc == DW_DLV_ERROR)
		return dw_error(ctx, derr, "reading compilation unit");
	if (rc == DW_DLV_NO_ENTRY)
		return NULL;
	while (die) {
		Dwarf_Half tag;
		if ((err = die_tag(ctx, die, &tag)) ||
		    (err = visit_die(ctx, die, tag)))
			break;
		if (ctx->remaining == 0)
			break;
		if (may_hold_types(tag)) {
			rc = dwarf_child(die, &next, &derr);
			if (rc == DW_DLV_ERROR) {
				err = dw_error(ctx, derr, "reading DIE children");
				break;
			}
			if (rc == DW_DLV_OK) {
				if (!HD_VEC_PUSH(stack.dies, stack.len,
						 stack.cap, die)) {
					dwarf_dealloc_die(next);
					err = &hd_error_no_memory;
					break;
				}
				die = next;
				continue;
			}
		}
		// No children to enter: move to the next sibling, climbing
		// back up past ancestors that have none left.
		for (;;) {
			rc = dwarf_siblingof_b(ctx->dbg, die, true, &next,
					       &derr);
			dwarf_dealloc_die(die);
			die = NULL;
			if (rc == DW_DLV_ERROR) {
				err = dw_error(ctx, derr, "reading DIE siblings");
				break;
			}
			if (rc == DW_DLV_OK) {
				die = next;
				break;
			}
			if (stack.len == 0)
				break;
			die = stack.dies[--stack.len];
		}
		if (err)
			break;
	}
	if (die)
		dwarf_dealloc_die(die);
	while (stack.len)
		dwarf_dealloc_die(stack.dies[--stack.len]);
	free(stack.dies);
	return err;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t len = strlen(s), slen = strlen(suffix);
	return len >= slen && strcmp(s + len - slen, suffix) == 0;
}

// Iterates over the CUs of .debug_info. With a suffix only the CU DIE's
// own name is read for the others: their children are never parsed.
static struct hd_error *search_cus(struct layout_ctx *ctx,
				   const char *cu_suffix)
{
	Dwarf_Error derr = NULL;
	struct hd_error *err = NULL;
	size_t num_cus = 0;

	while (ctx->remaining > 0) {
		Dwarf_Unsigned cu_len, type_off, next_off;
		Dwarf_Half ext_size, cu_type;
		Dwarf_Off abbrev_off;
		Dwarf_Sig8 sig;
		Dwarf_Die cu_die;

		int rc = dwarf_next_cu_header_d(
			ctx->dbg, true, &cu_len, &ctx->version, &abbrev_off,
			&ctx->address_size, &ctx->offset_size, &ext_size, &sig,
			&type_off, &next_off, &cu_type, &derr);
		if (rc == DW_DLV_NO_ENTRY)
			break;
		if (rc != DW_DLV_OK)
			return dw_error(ctx, derr, "reading CU header");
		num_cus++;
		rc = dwarf_siblingof_b(ctx->dbg, NULL, true, &cu_die, &derr);
		if (rc == DW_DLV_ERROR)
			return dw_error(ctx, derr, "reading CU DIE");
		if (rc == DW_DLV_NO_ENTRY)
			continue;

		bool wanted = true;
		if (cu_suffix) {
			const char *name = NULL;
			err = die_name(ctx, cu_die, &name);
			wanted = !err && name && has_suffix(name, cu_suffix);
		}
		if (!err && wanted)
			err = search_cu(ctx, cu_die);
		dwarf_dealloc_die(cu_die);
		if (err)
			return err;
	}
	if (num_cus == 0 && ctx->remaining > 0)
		return hd_error_file(HD_ERROR_NOT_FOUND, ctx->path,
				     "no DWARF debug info");
	return NULL;
}

// libdwarf says "no entry" for anything it does not recognise, so a text
// file would pass for an object without DWARF; check the magic ourselves.
static struct hd_error *check_elf(int fd, const char *path)
{
	unsigned char magic[4];
	ssize_t r = pread(fd, magic, sizeof(magic), 0);
	if (r < 0)
		return hd_error_os(errno, path, "cannot read");
	if (r != sizeof(magic) || memcmp(magic, "\177ELF", 4) != 0)
		return hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file");
	return NULL;
}

struct hd_error *hd_dwarf_struct_layouts(const char *path,
					 const char *cu_suffix,
					 const char *const *names, size_t n,
					 struct hd_struct_layout *ret)
{
	struct layout_ctx ctx = {
		.path = path,
		.names = names,
		.n = n,
		.ret = ret,
		.remaining = n,
		.address_size = 8,
	};
	Dwarf_Error derr = NULL;
	struct hd_error *err;

	memset(ret, 0, n * sizeof(*ret));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hd_error_os(errno, path, "cannot open");
	if ((err = check_elf(fd, path)))
		goto out_fd;
	int rc = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL,
			      &ctx.dbg, &derr);
	if (rc == DW_DLV_NO_ENTRY) {
		err = hd_error_file(HD_ERROR_NOT_FOUND, path,
				    "no DWARF debug info");
		goto out_fd;
	}
	if (rc != DW_DLV_OK) {
		ctx.dbg = NULL; // the error belongs to no Dwarf_Debug
		err = dw_error(&ctx, derr, "cannot load DWARF");
		goto out_fd;
	}
	err = search_cus(&ctx, cu_suffix);
	dwarf_finish(ctx.dbg, NULL);
	if (err) {
		for (size_t i = 0; i < n; i++)
			hd_struct_layout_deinit(&ret[i]);
	}
out_fd:
	close(fd);
	return err;
}

void hd_struct_layout_deinit(struct hd_struct_layout *l)
{
	if (!l)
		return;
	layout_free_members(l->members, l->num_members);
	free(l->name);
	memset(l, 0, sizeof(*l));
}

const struct hd_member_layout *
hd_struct_layout_member(const struct hd_struct_layout *l, const char *name)
{
	if (!l || !name)
		return NULL;
	for (size_t i = 0; i < l->num_members; i++) {
		if (l->members[i].name && strcmp(l->members[i].name, name) == 0)
			return &l->members[i];
	}
	return NULL;
}
