// Type names of local variables as gdb prints them (the gdb front-end
// gives str(val.type.strip_typedefs())), so that the CLI's locals carry
// the same type names and type the same blocks. Written the C way: a
// declarator's prefix ("char *") and suffix ("[4]", ")(int)") around an
// abstract name.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "debuginfo/dwarf_util.h"

Dwarf_Die hd_dw_offdie(Dwarf_Debug dbg, Dwarf_Off off)
{
	Dwarf_Die d = NULL;
	Dwarf_Error derr = NULL;
	if (dwarf_offdie_b(dbg, off, true, &d, &derr) != DW_DLV_OK) {
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		return NULL;
	}
	return d;
}

Dwarf_Die hd_dw_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Attribute a;
	Dwarf_Error derr = NULL;
	Dwarf_Off off;
	Dwarf_Die ret = NULL;
	if (dwarf_attr(die, at, &a, &derr) != DW_DLV_OK) {
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		return NULL;
	}
	if (dwarf_global_formref(a, &off, &derr) == DW_DLV_OK)
		ret = hd_dw_offdie(dbg, off);
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	dwarf_dealloc_attribute(a);
	return ret;
}

Dwarf_Half hd_dw_tag(Dwarf_Debug dbg, Dwarf_Die die)
{
	Dwarf_Half tag = 0;
	Dwarf_Error derr = NULL;
	if (dwarf_tag(die, &tag, &derr) != DW_DLV_OK && derr)
		dwarf_dealloc_error(dbg, derr);
	return tag;
}

void hd_dw_free(Dwarf_Die die)
{
	if (die)
		dwarf_dealloc_die(die);
}

Dwarf_Die hd_dw_next_sibling(Dwarf_Debug dbg, Dwarf_Die die,
			     struct hd_dw_corrupt *bad)
{
	Dwarf_Die s = NULL;
	Dwarf_Error derr = NULL;
	if (dwarf_siblingof_b(dbg, die, dwarf_get_die_infotypes_flag(die), &s,
			      &derr) != DW_DLV_OK) {
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		return NULL;
	}
	Dwarf_Off here = 0, there = 0;
	if (dwarf_dieoffset(die, &here, NULL) != DW_DLV_OK ||
	    dwarf_dieoffset(s, &there, NULL) != DW_DLV_OK || there <= here) {
		if (!bad->found)
			*bad = (struct hd_dw_corrupt){.found = true, .die = here,
						      .sibling = there};
		hd_dw_free(s);
		return NULL;
	}
	return s;
}

Dwarf_Die hd_dw_with_attr(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Die cur = die;
	for (int depth = 0; cur && depth < 8; depth++) {
		Dwarf_Bool has = false;
		Dwarf_Error derr = NULL;
		if (dwarf_hasattr(cur, at, &has, &derr) != DW_DLV_OK && derr)
			dwarf_dealloc_error(dbg, derr);
		if (has)
			return cur;
		Dwarf_Die next = hd_dw_ref(dbg, cur, DW_AT_abstract_origin);
		if (!next)
			next = hd_dw_ref(dbg, cur, DW_AT_specification);
		if (cur != die)
			hd_dw_free(cur);
		cur = next;
	}
	if (cur && cur != die)
		hd_dw_free(cur);
	return NULL;
}

char *hd_dw_string(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Die d = hd_dw_with_attr(dbg, die, at);
	if (!d)
		return NULL;
	Dwarf_Attribute a;
	Dwarf_Error derr = NULL;
	char *s = NULL, *ret = NULL;
	if (dwarf_attr(d, at, &a, &derr) == DW_DLV_OK) {
		if (dwarf_formstring(a, &s, &derr) == DW_DLV_OK && s)
			ret = strdup(s);
		dwarf_dealloc_attribute(a);
	}
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	if (d != die)
		hd_dw_free(d);
	return ret;
}

bool hd_dw_udata(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half at,
		 uint64_t *ret)
{
	Dwarf_Attribute a;
	Dwarf_Error derr = NULL;
	Dwarf_Unsigned v;
	bool ok = false;
	if (dwarf_attr(die, at, &a, &derr) == DW_DLV_OK) {
		ok = dwarf_formudata(a, &v, &derr) == DW_DLV_OK;
		dwarf_dealloc_attribute(a);
	}
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	if (ok)
		*ret = v;
	return ok;
}

// ------------------------------------------------------------ printing

struct buf {
	char s[512];
	size_t n;
	bool bad;
};

static void put(struct buf *b, const char *s)
{
	size_t l = strlen(s);
	if (b->n + l >= sizeof(b->s)) {
		b->bad = true;
		return;
	}
	memcpy(b->s + b->n, s, l + 1);
	b->n += l;
}

static void prepend(struct buf *b, const char *s)
{
	size_t l = strlen(s);
	if (b->n + l >= sizeof(b->s)) {
		b->bad = true;
		return;
	}
	memmove(b->s + l, b->s, b->n + 1);
	memcpy(b->s, s, l);
	b->n += l;
}

static uint64_t type_size(Dwarf_Debug dbg, Dwarf_Die t, int depth,
			  struct hd_dw_corrupt *bad);

static uint64_t array_count(Dwarf_Debug dbg, Dwarf_Die sub)
{
	uint64_t v;
	if (hd_dw_udata(dbg, sub, DW_AT_count, &v))
		return v;
	if (hd_dw_udata(dbg, sub, DW_AT_upper_bound, &v))
		return v + 1;
	return 0;
}

static uint64_t type_size(Dwarf_Debug dbg, Dwarf_Die t, int depth,
			  struct hd_dw_corrupt *bad)
{
	if (!t || depth > 32)
		return 0;
	uint64_t v;
	if (hd_dw_udata(dbg, t, DW_AT_byte_size, &v))
		return v;
	Dwarf_Half tag = hd_dw_tag(dbg, t);
	if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
	    tag == DW_TAG_rvalue_reference_type || tag == DW_TAG_ptr_to_member_type)
		return 8;
	Dwarf_Die sub = hd_dw_ref(dbg, t, DW_AT_type);
	uint64_t n = 0;
	if (tag == DW_TAG_array_type) {
		uint64_t count = 1;
		Dwarf_Die c = NULL;
		Dwarf_Error derr = NULL;
		if (dwarf_child(t, &c, &derr) == DW_DLV_OK) {
			while (c) {
				if (hd_dw_tag(dbg, c) == DW_TAG_subrange_type)
					count *= array_count(dbg, c);
				Dwarf_Die next = hd_dw_next_sibling(dbg, c, bad);
				hd_dw_free(c);
				c = next;
			}
		}
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		n = count * type_size(dbg, sub, depth + 1, bad);
	} else if (tag == DW_TAG_typedef || tag == DW_TAG_const_type ||
		   tag == DW_TAG_volatile_type || tag == DW_TAG_restrict_type ||
		   tag == DW_TAG_atomic_type) {
		n = type_size(dbg, sub, depth + 1, bad);
	}
	hd_dw_free(sub);
	return n;
}

static void name_of(Dwarf_Debug dbg, Dwarf_Die t, bool cplus,
		    struct buf *pre, struct buf *post, int depth,
		    struct hd_dw_corrupt *bad);

// Parameters "(int, char *)" of a subroutine type.
static void params(Dwarf_Debug dbg, Dwarf_Die t, bool cplus, struct buf *out,
		   int depth, struct hd_dw_corrupt *bad)
{
	uint64_t proto = 0;
	Dwarf_Bool has = false;
	Dwarf_Error derr = NULL;
	if (dwarf_hasattr(t, DW_AT_prototyped, &has, &derr) == DW_DLV_OK && has)
		proto = 1;
	put(out, "(");
	Dwarf_Die c = NULL;
	size_t n = 0;
	bool varargs = false;
	if (dwarf_child(t, &c, &derr) == DW_DLV_OK) {
		// Stops once the name is too long: then the parameters'
		// names cost no more than the text they give (a corrupt
		// DAG of subroutine types would otherwise cost 2^depth).
		while (c && !out->bad) {
			Dwarf_Half tag = hd_dw_tag(dbg, c);
			if (tag == DW_TAG_formal_parameter) {
				Dwarf_Die pt = hd_dw_ref(dbg, c, DW_AT_type);
				struct buf p = {0}, s = {0};
				// The depth goes on: a parameter's type may
				// lead back to this one (corrupt DWARF).
				name_of(dbg, pt, cplus, &p, &s, depth + 1, bad);
				hd_dw_free(pt);
				if (n++)
					put(out, ", ");
				put(out, p.s);
				put(out, s.s);
				out->bad |= p.bad || s.bad;
			} else if (tag == DW_TAG_unspecified_parameters) {
				varargs = true;
			}
			Dwarf_Die next = hd_dw_next_sibling(dbg, c, bad);
			hd_dw_free(c);
			c = next;
		}
		hd_dw_free(c);
	}
	if (derr)
		dwarf_dealloc_error(dbg, derr);
	if (varargs)
		put(out, n ? ", ..." : "...");
	else if (!n && (proto || cplus))
		put(out, "void");
	put(out, ")");
}

// pre gets what goes before the declared name, post what goes after.
static void name_of(Dwarf_Debug dbg, Dwarf_Die t, bool cplus,
		    struct buf *pre, struct buf *post, int depth,
		    struct hd_dw_corrupt *bad)
{
	if (depth > 32 || pre->bad || post->bad) {
		pre->bad = true;
		return;
	}
	if (!t) {
		put(pre, "void");
		return;
	}
	Dwarf_Half tag = hd_dw_tag(dbg, t);
	char *name = hd_dw_string(dbg, t, DW_AT_name);
	Dwarf_Die sub = NULL;
	switch (tag) {
	case DW_TAG_base_type: {
		// gdb names gcc's integer types the short way.
		static const char *const names[][2] = {
			{"long unsigned int", "unsigned long"},
			{"long int", "long"},
			{"short unsigned int", "unsigned short"},
			{"short int", "short"},
			{"long long int", "long long"},
			{"long long unsigned int", "unsigned long long"},
			{"__int128 unsigned", "unsigned __int128"},
		};
		const char *shown = name ? name : "?";
		for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(name, names[i][0]) == 0)
				shown = names[i][1];
		put(pre, shown);
		break;
	}
	case DW_TAG_typedef:
	case DW_TAG_unspecified_type:
		put(pre, name ? name : "?");
		break;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_class_type: {
		const char *kw = tag == DW_TAG_structure_type ? "struct"
				 : tag == DW_TAG_union_type   ? "union"
				 : tag == DW_TAG_enumeration_type ? "enum"
								 : "class";
		if (!name) {
			put(pre, kw);
			put(pre, " {...}");
		} else {
			if (!cplus) {
				put(pre, kw);
				put(pre, " ");
			}
			put(pre, name);
		}
		break;
	}
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		const char *op = tag == DW_TAG_pointer_type ? "*"
				 : tag == DW_TAG_reference_type ? "&"
								: "&&";
		sub = hd_dw_ref(dbg, t, DW_AT_type);
		Dwarf_Half st = sub ? hd_dw_tag(dbg, sub) : 0;
		struct buf p = {0}, s = {0};
		name_of(dbg, sub, cplus, &p, &s, depth + 1, bad);
		put(pre, p.s);
		// "char *", "char **", "int (*)[4]", "void (*)(int)".
		if (st == DW_TAG_array_type || st == DW_TAG_subroutine_type) {
			if (p.n && p.s[p.n - 1] != '(' && p.s[p.n - 1] != '*' &&
			    p.s[p.n - 1] != ' ')
				put(pre, " ");
			put(pre, "(");
			put(pre, op);
			prepend(&s, ")");
		} else {
			if (p.n && p.s[p.n - 1] != '*' && p.s[p.n - 1] != '&')
				put(pre, " ");
			put(pre, op);
		}
		put(post, s.s);
		pre->bad |= p.bad || s.bad;
		break;
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type: {
		const char *q = tag == DW_TAG_const_type ? "const"
				: tag == DW_TAG_volatile_type ? "volatile"
							      : "restrict";
		sub = hd_dw_ref(dbg, t, DW_AT_type);
		Dwarf_Half st = sub ? hd_dw_tag(dbg, sub) : 0;
		struct buf p = {0}, s = {0};
		name_of(dbg, sub, cplus, &p, &s, depth + 1, bad);
		if (st == DW_TAG_array_type) {
			// C qualifies an array's elements, which gcc's DWARF
			// already marks: "volatile int [4]", said once.
			put(pre, p.s);
		} else if (st == DW_TAG_pointer_type || st == DW_TAG_reference_type) {
			// "char * const"
			put(pre, p.s);
			put(pre, " ");
			put(pre, q);
		} else {
			put(pre, q);
			put(pre, " ");
			put(pre, p.s);
		}
		put(post, s.s);
		pre->bad |= p.bad || s.bad;
		break;
	}
	case DW_TAG_array_type: {
		sub = hd_dw_ref(dbg, t, DW_AT_type);
		struct buf p = {0}, s = {0};
		name_of(dbg, sub, cplus, &p, &s, depth + 1, bad);
		put(pre, p.s);
		if (p.n && p.s[p.n - 1] != '*')
			put(pre, " ");
		Dwarf_Die c = NULL;
		Dwarf_Error derr = NULL;
		if (dwarf_child(t, &c, &derr) == DW_DLV_OK) {
			while (c) {
				if (hd_dw_tag(dbg, c) == DW_TAG_subrange_type) {
					uint64_t n = array_count(dbg, c);
					char num[32];
					if (n)
						snprintf(num, sizeof(num), "[%llu]",
							 (unsigned long long)n);
					else
						snprintf(num, sizeof(num), "[]");
					put(post, num);
				}
				Dwarf_Die next = hd_dw_next_sibling(dbg, c, bad);
				hd_dw_free(c);
				c = next;
			}
		}
		if (derr)
			dwarf_dealloc_error(dbg, derr);
		put(post, s.s);
		pre->bad |= p.bad || s.bad;
		break;
	}
	case DW_TAG_subroutine_type: {
		sub = hd_dw_ref(dbg, t, DW_AT_type);
		struct buf p = {0}, s = {0};
		name_of(dbg, sub, cplus, &p, &s, depth + 1, bad);
		put(pre, p.s);
		put(pre, " ");
		params(dbg, t, cplus, post, depth, bad);
		put(post, s.s);
		pre->bad |= p.bad || s.bad;
		break;
	}
	default:
		pre->bad = true;
		break;
	}
	free(name);
	hd_dw_free(sub);
}

char *hd_dw_type_name(Dwarf_Debug dbg, Dwarf_Die type, bool cplus,
		      uint64_t *size, struct hd_dw_corrupt *bad)
{
	bool was_bad = bad->found;
	*size = type_size(dbg, type, 0, bad);
	// strip_typedefs: the typedefs at the top only ("pthread_t" is
	// "unsigned long"; "pthread_t *" stays).
	Dwarf_Die t = type, owned = NULL;
	for (int i = 0; t && i < 16 && hd_dw_tag(dbg, t) == DW_TAG_typedef; i++) {
		Dwarf_Die next = hd_dw_ref(dbg, t, DW_AT_type);
		hd_dw_free(owned);
		owned = t = next;
	}
	struct buf pre = {0}, post = {0};
	name_of(dbg, t, cplus, &pre, &post, 0, bad);
	hd_dw_free(owned);
	if (pre.bad || post.bad || bad->found != was_bad)
		return NULL;
	// "int (*)[4]" has no space before "[": gdb writes "char [16]".
	char *ret = malloc(pre.n + post.n + 2);
	if (!ret)
		return NULL;
	if (post.n && post.s[0] == '[' && pre.n && pre.s[pre.n - 1] != ' ' &&
	    pre.s[pre.n - 1] != '*')
		sprintf(ret, "%s %s", pre.s, post.s);
	else
		sprintf(ret, "%s%s", pre.s, post.s);
	return ret;
}
