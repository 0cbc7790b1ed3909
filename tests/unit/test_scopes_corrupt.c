// The frame scopes (core/debuginfo/scopes.c) on a DW_AT_sibling that leads
// back: libdwarf follows it as written, so the walk over a unit's DIEs
// looking for the function at an address came back to DIEs it had read,
// for ever. Now the walk ends with a corrupt-DWARF error naming the DIE
// and where its sibling leads.
//
// And on a function type whose parameter's type leads back to it: the
// type name of a local of that type recursed until the stack ran out; now
// the local has no type name (it cannot be named).
//
// Usage: test_scopes_corrupt SAMPLE FIXTURE
//
// FIXTURE: frames_fixture.c built with -g -O0 (a local function pointer).
// SAMPLE: a program built with -g -O0 (type_sample.c at DWARF 5). The test
// finds with libdwarf, in its first unit, a DIE with a DW_AT_sibling
// (ref4) followed by a function with code, and makes a copy of the file
// whose DW_AT_sibling points at that DIE itself (libdwarf refuses one
// that points before the DIE, not one that points at it). Expected offsets and
// names come from libdwarf's reading of the sample, not from heapdom.
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <libdwarf.h>

#include "heapdom.h"
#include "debuginfo/frames_internal.h"
#include "debuginfo/scopes.h"
#include "check_util.h"

static const char *sample, *fixture;

struct truth {
	Dwarf_Off die;        // the DIE whose DW_AT_sibling is rewritten
	Dwarf_Off die_cu;     // its unit-relative offset
	Dwarf_Off attr_value; // .debug_info offset of that attribute's value
	uint64_t fn_pc;       // low_pc of a function after it
	char fn_name[128];
};

static void find_truth(struct truth *t)
{
	int fd = open(sample, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Dwarf_Debug dbg;
	Dwarf_Error e = NULL;
	ck_assert_int_eq(dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL,
				      NULL, &dbg, &e), DW_DLV_OK);
	Dwarf_Unsigned hlen, abbr, next, typeoff;
	Dwarf_Half version, asz, osz, esz, htype;
	Dwarf_Sig8 sig;
	ck_assert_int_eq(dwarf_next_cu_header_d(dbg, true, &hlen, &version, &abbr,
						&asz, &osz, &esz, &sig, &typeoff,
						&next, &htype, &e), DW_DLV_OK);
	Dwarf_Die cu, d;
	ck_assert_int_eq(dwarf_siblingof_b(dbg, NULL, true, &cu, &e), DW_DLV_OK);
	ck_assert_int_eq(dwarf_child(cu, &d, &e), DW_DLV_OK);
	t->die = 0;
	t->fn_pc = 0;
	while (d && !t->fn_pc) {
		Dwarf_Attribute a;
		Dwarf_Half tag, form;
		dwarf_tag(d, &tag, &e);
		Dwarf_Addr lo;
		if (t->die && tag == DW_TAG_subprogram && dwarf_lowpc(d, &lo, &e) == DW_DLV_OK) {
			char *name = NULL;
			t->fn_pc = lo;
			if (dwarf_diename(d, &name, &e) == DW_DLV_OK)
				snprintf(t->fn_name, sizeof(t->fn_name), "%s", name);
		}
		if (!t->die && dwarf_attr(d, DW_AT_sibling, &a, &e) == DW_DLV_OK) {
			if (dwarf_whatform(a, &form, &e) == DW_DLV_OK &&
			    form == DW_FORM_ref4) {
				dwarf_dieoffset(d, &t->die, &e);
				dwarf_die_CU_offset(d, &t->die_cu, &e);
				dwarf_attr_offset(d, a, &t->attr_value, &e);
			}
			dwarf_dealloc_attribute(a);
		}
		Dwarf_Die n = NULL;
		if (dwarf_siblingof_b(dbg, d, true, &n, &e) != DW_DLV_OK)
			n = NULL;
		dwarf_dealloc_die(d);
		d = n;
	}
	if (d)
		dwarf_dealloc_die(d);
	dwarf_dealloc_die(cu);
	dwarf_finish(dbg, &e);
	close(fd);
	ck_assert_msg(t->die && t->fn_pc && t->fn_name[0],
		      "%s: no DIE with a DW_AT_sibling before a function", sample);
}

// The file offset of .debug_info.
static uint64_t debug_info_offset(const char *file)
{
	elf_version(EV_CURRENT);
	int fd = open(file, O_RDONLY);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	uint64_t off = 0;
	for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s));) {
		GElf_Shdr sh;
		gelf_getshdr(s, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".debug_info") == 0)
			off = sh.sh_offset;
	}
	elf_end(elf);
	close(fd);
	ck_assert_uint_ne(off, 0);
	return off;
}

static struct hd_error *scopes_at(const char *path, uint64_t pc, struct hd_scopes *s)
{
	struct hd_mod_dwarf md;
	hd_mod_dwarf_open(&md, NULL, path, NULL);
	ck_assert_ptr_nonnull(hd_mod_dwarf_info(&md));
	struct hd_error *err = hd_scopes_find(&md, pc, -1, s);
	hd_mod_dwarf_close(&md);
	return err;
}

START_TEST(test_sibling_leads_back)
{
	struct truth t;
	find_truth(&t);
	// Intact: the function is found.
	struct hd_scopes s;
	ck_assert_no_error(scopes_at(sample, t.fn_pc, &s));
	ck_assert_uint_ge(s.num_fns, 1);
	ck_assert_str_eq(s.fns[s.num_fns - 1].name, t.fn_name);
	hd_scopes_free(&s);

	// The copy, its DW_AT_sibling pointing at its own DIE.
	FILE *in = fopen(sample, "rb");
	fseek(in, 0, SEEK_END);
	long size = ftell(in);
	rewind(in);
	uint8_t *buf = malloc((size_t)size);
	ck_assert_int_eq(fread(buf, 1, (size_t)size, in), (size_t)size);
	fclose(in);
	uint64_t at = debug_info_offset(sample) + t.attr_value;
	for (int i = 0; i < 4; i++)
		buf[at + i] = (uint8_t)(t.die_cu >> (8 * i));
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/hd-scopes-XXXXXX", dir ? dir : "/tmp");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, (size_t)size), size);
	close(fd);
	free(buf);

	struct hd_error *err = scopes_at(path, t.fn_pc, &s);
	char want[4400];
	snprintf(want, sizeof(want),
		 "%s: corrupt DWARF: a DW_AT_sibling of the DIE at 0x%llx leads back to 0x%llx, not after it",
		 path, (unsigned long long)t.die, (unsigned long long)t.die);
	ck_assert_msg(err, "no error; %zu functions", s.num_fns);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	ck_assert_str_eq(err->message, want);
	hd_error_destroy(err);
	unlink(path);
}
END_TEST

// A function-level local whose type is a pointer to a function type with
// a parameter typed by a DW_FORM_ref4 (found with libdwarf).
struct fnptr_truth {
	uint64_t fn_pc;          // low_pc of the function holding it
	char var[64];            // the local's name
	Dwarf_Off ptr_cu;        // the pointer type's unit-relative offset
	Dwarf_Off param_type_at; // .debug_info offset of the parameter's DW_AT_type value
};

static Dwarf_Die ref_die(Dwarf_Debug dbg, Dwarf_Die d, Dwarf_Half tag_wanted)
{
	Dwarf_Attribute a;
	Dwarf_Error e = NULL;
	Dwarf_Off off;
	Dwarf_Die r = NULL;
	Dwarf_Half tag;
	if (dwarf_attr(d, DW_AT_type, &a, &e) != DW_DLV_OK)
		return NULL;
	if (dwarf_global_formref(a, &off, &e) == DW_DLV_OK &&
	    dwarf_offdie_b(dbg, off, true, &r, &e) == DW_DLV_OK &&
	    (dwarf_tag(r, &tag, &e) != DW_DLV_OK || tag != tag_wanted)) {
		dwarf_dealloc_die(r);
		r = NULL;
	}
	dwarf_dealloc_attribute(a);
	return r;
}

// Looks at the variables directly under subprogram fn.
static bool find_fnptr_in(Dwarf_Debug dbg, Dwarf_Die fn, struct fnptr_truth *t)
{
	Dwarf_Error e = NULL;
	Dwarf_Die d = NULL;
	Dwarf_Addr lo;
	if (dwarf_lowpc(fn, &lo, &e) != DW_DLV_OK || dwarf_child(fn, &d, &e) != DW_DLV_OK)
		return false;
	bool found = false;
	while (d && !found) {
		Dwarf_Half tag;
		dwarf_tag(d, &tag, &e);
		Dwarf_Die ptr = tag == DW_TAG_variable ? ref_die(dbg, d, DW_TAG_pointer_type) : NULL;
		Dwarf_Die sub = ptr ? ref_die(dbg, ptr, DW_TAG_subroutine_type) : NULL;
		Dwarf_Die p = NULL;
		if (sub && dwarf_child(sub, &p, &e) == DW_DLV_OK) {
			Dwarf_Attribute a;
			Dwarf_Half form;
			char *name = NULL;
			if (dwarf_attr(p, DW_AT_type, &a, &e) == DW_DLV_OK) {
				if (dwarf_whatform(a, &form, &e) == DW_DLV_OK &&
				    form == DW_FORM_ref4 &&
				    dwarf_diename(d, &name, &e) == DW_DLV_OK) {
					found = true;
					t->fn_pc = lo;
					snprintf(t->var, sizeof(t->var), "%s", name);
					dwarf_die_CU_offset(ptr, &t->ptr_cu, &e);
					dwarf_attr_offset(p, a, &t->param_type_at, &e);
				}
				dwarf_dealloc_attribute(a);
			}
			dwarf_dealloc_die(p);
		}
		if (sub)
			dwarf_dealloc_die(sub);
		if (ptr)
			dwarf_dealloc_die(ptr);
		Dwarf_Die n = NULL;
		if (dwarf_siblingof_b(dbg, d, true, &n, &e) != DW_DLV_OK)
			n = NULL;
		dwarf_dealloc_die(d);
		d = n;
	}
	if (d)
		dwarf_dealloc_die(d);
	return found;
}

static void find_fnptr(struct fnptr_truth *t)
{
	int fd = open(fixture, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Dwarf_Debug dbg;
	Dwarf_Error e = NULL;
	ck_assert_int_eq(dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL,
				      NULL, &dbg, &e), DW_DLV_OK);
	Dwarf_Unsigned hlen, abbr, next, typeoff;
	Dwarf_Half version, asz, osz, esz, htype;
	Dwarf_Sig8 sig;
	ck_assert_int_eq(dwarf_next_cu_header_d(dbg, true, &hlen, &version, &abbr,
						&asz, &osz, &esz, &sig, &typeoff,
						&next, &htype, &e), DW_DLV_OK);
	Dwarf_Die cu, d;
	ck_assert_int_eq(dwarf_siblingof_b(dbg, NULL, true, &cu, &e), DW_DLV_OK);
	ck_assert_int_eq(dwarf_child(cu, &d, &e), DW_DLV_OK);
	bool found = false;
	while (d && !found) {
		Dwarf_Half tag;
		dwarf_tag(d, &tag, &e);
		if (tag == DW_TAG_subprogram)
			found = find_fnptr_in(dbg, d, t);
		Dwarf_Die n = NULL;
		if (dwarf_siblingof_b(dbg, d, true, &n, &e) != DW_DLV_OK)
			n = NULL;
		dwarf_dealloc_die(d);
		d = n;
	}
	if (d)
		dwarf_dealloc_die(d);
	dwarf_dealloc_die(cu);
	dwarf_finish(dbg, &e);
	close(fd);
	ck_assert_msg(found, "%s: no local function pointer", fixture);
}

START_TEST(test_param_leads_back)
{
	struct fnptr_truth t;
	find_fnptr(&t);
	FILE *in = fopen(fixture, "rb");
	fseek(in, 0, SEEK_END);
	long size = ftell(in);
	rewind(in);
	uint8_t *buf = malloc((size_t)size);
	ck_assert_int_eq(fread(buf, 1, (size_t)size, in), (size_t)size);
	fclose(in);
	// The parameter's type: the pointer to its own function type.
	uint64_t at = debug_info_offset(fixture) + t.param_type_at;
	for (int i = 0; i < 4; i++)
		buf[at + i] = (uint8_t)(t.ptr_cu >> (8 * i));
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/hd-scopes-XXXXXX", dir ? dir : "/tmp");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, (size_t)size), size);
	close(fd);
	free(buf);

	struct hd_scopes s;
	ck_assert_no_error(scopes_at(path, t.fn_pc, &s));
	unlink(path);
	const struct hd_scope_var *v = NULL;
	for (size_t i = 0; i < s.num_vars; i++)
		if (strcmp(s.vars[i].name, t.var) == 0)
			v = &s.vars[i];
	ck_assert_msg(v, "local %s not found", t.var);
	ck_assert_msg(v->has_loc, "local %s has no location", t.var);
	ck_assert_msg(!v->type_name, "local %s named \"%s\"", t.var, v->type_name);
	hd_scopes_free(&s);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SAMPLE FIXTURE\n", argv[0]);
		return 2;
	}
	sample = argv[1];
	fixture = argv[2];
	Suite *s = suite_create("scopes_corrupt");
	TCase *tc = tcase_create("core");
	// Without the check the walk never ends: the timeout is the failure.
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_sibling_leads_back);
	tcase_add_test(tc, test_param_leads_back);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
