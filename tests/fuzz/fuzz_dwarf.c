// The DWARF readers over a mutated debug file (seeds: the unit tests'
// type samples at DWARF 5, 4 and 2, C and C++, with type units, and the
// frames fixture at -O0 and -O2): the type index (core/types/type_index.c)
// and what typing asks of it (names, pointer slots, member paths, struct
// lookup), the line tables (core/debuginfo/lines.c), the ELF symbol
// tables, and the frame scopes (core/debuginfo/scopes.c: unit, function,
// blocks, inlined calls, locals with their locations and type names from
// type_names.c) at addresses of the file's function symbols.
#include <stdint.h>

#include "debuginfo/elf_symbols.h"
#include "debuginfo/frames_internal.h"
#include "debuginfo/lines.h"
#include "debuginfo/scopes.h"
#include "types/type_index.h"
#include "fuzz_util.h"

static void use_index(const struct hd_type_index *ix)
{
	char buf[256];
	struct hd_ptr_slot slots[32];
	size_t total;
	for (size_t i = 0; i < ix->num_types && i < 4096; i++) {
		uint32_t t = (uint32_t)i;
		hd_type_name(ix, t, buf, sizeof(buf));
		uint32_t s = hd_type_strip(ix, t);
		if (s == HD_TYPE_NONE)
			continue;
		hd_type_pointer_slots(ix, s, slots, 32, &total);
		if (ix->types[s].size)
			hd_type_member_path(ix, s, ix->types[s].size / 2, buf, sizeof(buf));
	}
	for (size_t i = 0; i < ix->num_variables && i < 1024; i++)
		hd_type_name(ix, ix->variables[i].type, buf, sizeof(buf));
	hd_type_find_struct(ix, "session");
	hd_type_find_struct(ix, "std::string");
}

// The scopes at the start and the middle of 8 functions spread over the
// symbol table (each lookup reads its unit's line table: more would slow
// the fuzzer down), in the three languages type names can be printed in.
static void use_scopes(const char *path, const struct hd_elf_symbol *syms,
		       size_t n)
{
	struct hd_mod_dwarf md;
	hd_mod_dwarf_open(&md, NULL, path, NULL);
	size_t step = n / 8 + 1;
	for (size_t i = 0; i < n && hd_mod_dwarf_info(&md); i += step) {
		uint64_t pcs[2] = {syms[i].value, syms[i].value + syms[i].size / 2};
		for (int k = 0; k < 2; k++) {
			struct hd_scopes s;
			struct hd_error *err =
				hd_scopes_find(&md, pcs[k], (int)(i / step % 3) - 1, &s);
			if (!err && getenv("HD_FUZZ_VERBOSE"))
				fprintf(stderr, "scopes at 0x%llx: %zu functions (%s), %zu locals (%s)\n",
					(unsigned long long)pcs[k], s.num_fns,
					s.num_fns ? s.fns[0].name : "-", s.num_vars,
					s.num_vars && s.vars[0].type_name ? s.vars[0].type_name : "-");
			if (!err)
				hd_scopes_free(&s);
			hd_fuzz_report(err);
		}
	}
	hd_mod_dwarf_close(&md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = hd_fuzz_file(data, size);
	struct hd_type_index *ix;
	struct hd_error *err = hd_type_index_build(path, &ix);
	if (!err) {
		use_index(ix);
		hd_type_index_destroy(ix);
	}
	hd_error_destroy(err);

	struct hd_line_table *lt;
	err = hd_line_table_build(path, &lt);
	if (!err) {
		hd_line_table_find(lt, 0x1139);
		hd_line_table_bytes(lt);
		hd_line_table_destroy(lt);
	}
	hd_error_destroy(err);

	struct hd_elf_symbol *syms;
	size_t n;
	err = hd_elf_object_symbols(path, &syms, &n);
	if (!err)
		hd_elf_free_symbols(syms, n);
	hd_error_destroy(err);
	err = hd_elf_function_symbols(path, &syms, &n);
	if (!err) {
		use_scopes(path, syms, n);
		hd_elf_free_symbols(syms, n);
	}
	hd_error_destroy(err);
	uint64_t v, sz;
	hd_error_destroy(hd_elf_find_symbol(path, "main", &v, &sz));
	return 0;
}
