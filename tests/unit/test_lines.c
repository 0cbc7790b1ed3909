// Unit test of hd_debuginfo_locate (core/debuginfo/lines.c).
//
// Usage: test_lines --source DIR --nodebug FILE SAMPLE...
//
// Each SAMPLE is lines_sample.c built with -g at some DWARF version; FILE
// is the same built with -g0. The test runs each one: it prints its
// return addresses (link-time), the function each is in and the marker
// comment of the calling line, which the test finds in the sources in
// DIR, so no line number is written here. libc is checked in this very
// process (read through /proc/self) when its debug file is installed,
// against addr2line when binutils is there.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapdom.h"
#include "debuginfo/elf_symbols.h"
#include "debuginfo/lines.h"
#include "util/demangle.h"
#include "check_util.h"

static const char *source_dir;
static const char *nodebug_sample;
static char **samples;
static int num_samples;

// Where the sample is put in the fake address space: not 0, so link-time
// and run-time addresses differ.
#define BIAS 0x5500000000ull

struct site {
	char fn[64], file[64], marker[32];
	uint64_t ra, start; // link-time
};

struct sample_run {
	uint64_t lo, hi;
	struct site sites[8];
	int num_sites;
};

static void run_sample(const char *path, struct sample_run *r)
{
	memset(r, 0, sizeof(*r));
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s%s'", strchr(path, '/') ? "" : "./",
		 path);
	FILE *f = popen(cmd, "r");
	ck_assert_msg(f, "cannot run %s", path);
	char line[256];
	bool range = false;
	while (fgets(line, sizeof(line), f)) {
		struct site *s = &r->sites[r->num_sites];
		if (sscanf(line, "range %" SCNx64 " %" SCNx64, &r->lo, &r->hi) ==
		    2)
			range = true;
		else if (r->num_sites < 8 &&
			 sscanf(line,
				"site %63s %63s %31s %" SCNx64 " %" SCNx64,
				s->fn, s->file, s->marker, &s->ra,
				&s->start) == 5)
			r->num_sites++;
	}
	ck_assert_int_eq(pclose(f), 0);
	ck_assert(range);
	ck_assert_int_eq(r->num_sites, 4);
}

// The line of DIR/file that carries "MARK marker".
static unsigned marker_line(const char *file, const char *marker)
{
	char path[512], want[64], line[512];
	snprintf(path, sizeof(path), "%s/%s", source_dir, file);
	snprintf(want, sizeof(want), "// MARK %s", marker);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f, "cannot open %s", path);
	unsigned n = 0, found = 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		char *p = strstr(line, want);
		if (p && (p[strlen(want)] == '\n' || p[strlen(want)] == '\0')) {
			ck_assert_msg(!found, "marker %s twice in %s", marker,
				      path);
			found = n;
		}
	}
	fclose(f);
	ck_assert_msg(found, "marker %s not in %s", marker, path);
	return found;
}

static struct hd_error *no_memory(void *arg, uint64_t addr, void *buf,
				  size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return hd_error_at(HD_ERROR_FAULT, addr, "no memory here");
}

// A target holding one module, the file at path, loaded at BIAS.
static void open_module(const char *path, uint64_t lo, uint64_t hi,
			struct hd_target **t, struct hd_debuginfo **di)
{
	ck_assert_no_error(hd_target_create_callback(no_memory, NULL, t));
	struct hd_module m = {
		.name = (char *)path,
		.bias = BIAS,
		.start = BIAS + lo,
		.end = BIAS + hi,
		.is_exe = true,
	};
	ck_assert_no_error(hd_target_add_module(*t, &m));
	ck_assert_no_error(hd_debuginfo_create(*t, NULL, di));
}

static const char *basename_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

// The name a report should show for a symbol.
static char *shown_name(const char *sym)
{
	char *d = hd_demangle(sym);
	return d ? d : strdup(sym);
}

static void check_sites(const char *path, bool has_dwarf)
{
	struct sample_run r;
	run_sample(path, &r);
	struct hd_target *t;
	struct hd_debuginfo *di;
	open_module(path, r.lo, r.hi, &t, &di);
	for (int pass = 0; pass < 2; pass++) {
		// The second pass uses the cached tables.
		for (int i = 0; i < r.num_sites; i++) {
			const struct site *s = &r.sites[i];
			struct hd_location loc;
			ck_assert_no_error(
				hd_debuginfo_locate(di, BIAS + s->ra - 1, &loc));
			ck_assert_str_eq(loc.module, basename_of(path));
			char *want = shown_name(s->fn);
			ck_assert_msg(loc.function &&
					      strcmp(loc.function, want) == 0,
				      "%s: site %s: function %s, want %s", path,
				      s->marker, loc.function, want);
			free(want);
			ck_assert_uint_eq(loc.offset, s->ra - 1 - s->start);
			if (!has_dwarf) {
				ck_assert_ptr_null(loc.file);
				ck_assert_uint_eq(loc.line, 0);
				continue;
			}
			char suffix[80];
			snprintf(suffix, sizeof(suffix), "unit/%s", s->file);
			ck_assert_msg(loc.file && ends_with(loc.file, suffix),
				      "%s: site %s: file %s, want .../%s", path,
				      s->marker, loc.file, suffix);
			ck_assert_uint_eq(loc.line,
					  marker_line(s->file, s->marker));
			// The function's first byte is in the function too.
			ck_assert_no_error(
				hd_debuginfo_locate(di, BIAS + s->start, &loc));
			ck_assert_uint_eq(loc.offset, 0);
			ck_assert_ptr_nonnull(loc.file);
			ck_assert_uint_gt(loc.line, 0);
		}
	}
	// "Session::add(int)" when a demangler is there.
	char *d = hd_demangle("_ZN7Session3addEi");
	if (d)
		ck_assert_str_eq(d, "Session::add(int)");
	free(d);

	// Outside the module: below, and past its end.
	struct hd_location loc;
	struct hd_error *err = hd_debuginfo_locate(di, BIAS + r.lo - 1, &loc);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_NOT_FOUND);
	hd_error_destroy(err);
	err = hd_debuginfo_locate(di, BIAS + r.hi + 0x10000, &loc);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_NOT_FOUND);
	ck_assert_ptr_null(loc.function);
	hd_error_destroy(err);
	hd_debuginfo_destroy(di);
	hd_target_destroy(t);
}

START_TEST(test_sample_sites)
{
	for (int i = 0; i < num_samples; i++)
		check_sites(samples[i], true);
}
END_TEST

START_TEST(test_nodebug)
{
	check_sites(nodebug_sample, false);
}
END_TEST

START_TEST(test_line_table)
{
	// The sample's table directly: sorted rows, and every name is one
	// of the sample's files or a system header.
	for (int i = 0; i < num_samples; i++) {
		struct hd_line_table *tab;
		ck_assert_no_error(hd_line_table_build(samples[i], &tab));
		ck_assert_uint_gt(tab->num_rows, 10);
		ck_assert_uint_eq(tab->bad_units, 0);
		ck_assert_uint_ge(tab->num_units, 1);
		for (size_t r = 1; r < tab->num_rows; r++)
			ck_assert_uint_le(tab->rows[r - 1].addr,
					  tab->rows[r].addr);
		ck_assert_uint_eq(tab->rows[tab->num_rows - 1].file,
				  HD_LINE_END);
		bool c = false, h = false;
		for (size_t f = 0; f < tab->num_files; f++) {
			c |= ends_with(tab->files[f], "unit/lines_sample.c");
			h |= ends_with(tab->files[f], "unit/lines_sample.h");
			for (size_t g = 0; g < f; g++)
				ck_assert_str_ne(tab->files[f], tab->files[g]);
		}
		ck_assert(c && h);
		ck_assert_ptr_null(hd_line_table_find(tab, 0));
		ck_assert_ptr_null(hd_line_table_find(tab, UINT64_MAX));
		ck_assert_uint_gt(hd_line_table_bytes(tab),
				  tab->num_rows * sizeof(*tab->rows));
		hd_line_table_destroy(tab);
	}
	struct hd_line_table *tab;
	struct hd_error *err = hd_line_table_build(nodebug_sample, &tab);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_NOT_FOUND);
	hd_error_destroy(err);
	err = hd_line_table_build("/nonexistent/lines_sample", &tab);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_OS);
	hd_error_destroy(err);
}
END_TEST

START_TEST(test_file_names)
{
	static const struct {
		const char *comp_dir, *dir, *name, *want;
	} cases[] = {
		// The compilation directory itself, named or implied.
		{"/b", "/b", "a.c", "a.c"},
		{"/b", NULL, "../src/a.c", "../src/a.c"},
		{"./malloc", "./malloc", "malloc.c", "malloc.c"},
		// A directory relative to the compilation directory.
		{"./csu", "../sysdeps/x86", "abi-note.c",
		 "../sysdeps/x86/abi-note.c"},
		{"/b", "../tests/unit", "s.h", "../tests/unit/s.h"},
		{"/b", "sub/", "s.h", "sub/s.h"},
		// Absolute: shortened only below the compilation directory.
		{"/b", "/b/src", "a.c", "src/a.c"},
		{"/b/", "/b/src", "a.c", "src/a.c"},
		{"/b", "/usr/include", "stdio.h", "/usr/include/stdio.h"},
		{"/b", "/bin", "x.c", "/bin/x.c"},
		{"/b", "/other", "/b/abs.c", "abs.c"},
		{NULL, "/usr/include", "stdio.h", "/usr/include/stdio.h"},
		{NULL, NULL, "./a.c", "a.c"},
		{"/b", "/b", "", "?"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = hd_line_file_name(cases[i].comp_dir, cases[i].dir,
					      cases[i].name);
		ck_assert_ptr_nonnull(got);
		ck_assert_msg(strcmp(got, cases[i].want) == 0,
			      "case %zu: %s, want %s", i, got, cases[i].want);
		free(got);
	}
}
END_TEST

START_TEST(test_not_elf)
{
	// A module whose file is not ELF: located, with nothing known.
	char path[] = "/tmp/test_lines.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\177ELF\2\1\1", 7), 7);
	close(fd);
	struct hd_target *t;
	struct hd_debuginfo *di;
	open_module(path, 0x1000, 0x2000, &t, &di);
	struct hd_location loc;
	ck_assert_no_error(hd_debuginfo_locate(di, BIAS + 0x1800, &loc));
	unlink(path);
	ck_assert_str_eq(loc.module, basename_of(path));
	ck_assert_ptr_null(loc.function);
	ck_assert_uint_eq(loc.offset, 0);
	ck_assert_ptr_null(loc.file);
	ck_assert_uint_eq(loc.line, 0);
	hd_debuginfo_destroy(di);
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------------------------ libc

static const struct hd_module *libc_module(struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (strstr(basename_of(m->name), "libc.so"))
			return m;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

// gdb's "info line *ADDR" on the debug file agrees with file:line? The
// second oracle, for rows addr2line misreads: binutils 2.40 takes a DWARF 5
// line program's initial file register (1) as entry 0, so a static function
// of an included header (libc's __ctype_toupper_loc in ctype.h, its
// __libc_start_call_main in libc_start_call_main.h) is put in the unit's
// main file; gdb and objdump --dwarf=decodedline read entry 1.
static bool gdb_agrees(const char *debug, uint64_t addr, const char *file,
		       unsigned line)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "gdb -q -nx -batch -ex 'info line *%#" PRIx64 "' '%s' 2>/dev/null",
		 addr, debug);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	char out[1024];
	bool ok = false;
	unsigned l;
	char path[512];
	while (fgets(out, sizeof(out), p))
		if (sscanf(out, "Line %u of \"%511[^\"]\"", &l, path) == 2)
			ok = l == line && strcmp(basename_of(path), basename_of(file)) == 0;
	pclose(p);
	return ok;
}

// Compares our file:line with addr2line's for addrs (link-time) of the
// debug file (or, where they differ, gdb's); returns how many addr2line
// could name.
static size_t compare_addr2line(struct hd_debuginfo *di,
				const struct hd_module *m, const char *debug,
				const uint64_t *addrs, size_t n)
{
	char in[] = "/tmp/test_lines_addrs.XXXXXX";
	int fd = mkstemp(in);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%#" PRIx64 "\n", addrs[i]);
	fclose(f);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' < '%s'", debug, in);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	char line[1024];
	size_t i = 0, named = 0;
	for (; i < n && fgets(line, sizeof(line), p); i++) {
		struct hd_location loc;
		ck_assert_no_error(
			hd_debuginfo_locate(di, m->bias + addrs[i], &loc));
		char *colon = strrchr(line, ':');
		ck_assert_ptr_nonnull(colon);
		*colon = '\0';
		unsigned want = (unsigned)strtoul(colon + 1, NULL, 10);
		if (strcmp(line, "??") == 0 || want == 0) {
			ck_assert_msg(loc.line == 0 || !loc.file,
				      "%#" PRIx64 ": %s:%u, addr2line: none",
				      addrs[i], loc.file, loc.line);
			continue;
		}
		named++;
		bool same = loc.file &&
			    strcmp(basename_of(loc.file), basename_of(line)) == 0 &&
			    loc.line == want;
		ck_assert_msg(same || (loc.file && gdb_agrees(debug, addrs[i],
							      loc.file, loc.line)),
			      "%#" PRIx64 " (%s+%#" PRIx64 "): %s:%u, "
			      "addr2line: %s:%u (and gdb disagrees too)",
			      addrs[i], loc.function, loc.offset, loc.file,
			      loc.line, line, want);
	}
	pclose(p);
	unlink(in);
	ck_assert_uint_eq(i, n);
	return named;
}

START_TEST(test_libc)
{
	struct hd_target *t;
	ck_assert_no_error(hd_target_open_proc(getpid(), NULL, &t));
	struct hd_debuginfo *di;
	ck_assert_no_error(hd_debuginfo_create(t, NULL, &di));
	const struct hd_module *m = libc_module(t);
	ck_assert_ptr_nonnull(m);
	const char *debug = hd_debuginfo_debug_file(di, m);
	if (!debug) {
		fprintf(stderr, "test_libc: libc debug file not installed, "
				"skipped\n");
		goto out;
	}

	// What the table costs for libc.
	double t0 = now();
	struct hd_line_table *tab;
	ck_assert_no_error(hd_line_table_build(debug, &tab));
	double secs = now() - t0;
	fprintf(stderr,
		"test_libc: %s: %zu rows, %zu files, %zu units, %zu bytes, "
		"%.0f ms\n",
		debug, tab->num_rows, tab->num_files, tab->num_units,
		hd_line_table_bytes(tab), secs * 1000);
	ck_assert_uint_gt(tab->num_rows, 10000);
	hd_line_table_destroy(tab);

	uint64_t addr, size;
	ck_assert_no_error(
		hd_debuginfo_find_symbol(di, "libc.so", "malloc", &addr, &size));
	ck_assert_uint_gt(size, 8);
	struct hd_location loc;
	ck_assert_no_error(hd_debuginfo_locate(di, addr + size / 2, &loc));
	ck_assert_msg(loc.function && (strcmp(loc.function, "malloc") == 0 ||
				       strcmp(loc.function, "__libc_malloc") == 0),
		      "malloc is %s", loc.function);
	ck_assert_uint_eq(loc.offset, size / 2);
	ck_assert_ptr_nonnull(loc.file);
	ck_assert_str_eq(basename_of(loc.file), "malloc.c");
	ck_assert_uint_gt(loc.line, 0);

	// Against binutils: the middle and the start of functions spread
	// over all of libc.
	if (system("addr2line --version > /dev/null 2>&1") != 0) {
		fprintf(stderr, "test_libc: no addr2line, not compared\n");
		goto out;
	}
	struct hd_elf_symbol *fns;
	size_t num_fns;
	ck_assert_no_error(hd_elf_function_symbols(debug, &fns, &num_fns));
	uint64_t addrs[600];
	size_t n = 0;
	size_t step = num_fns / 300 ? num_fns / 300 : 1;
	for (size_t i = 0; i < num_fns && n + 2 <= 600; i += step) {
		addrs[n++] = fns[i].value;
		addrs[n++] = fns[i].value + fns[i].size / 2;
	}
	hd_elf_free_symbols(fns, num_fns);
	size_t named = compare_addr2line(di, m, debug, addrs, n);
	fprintf(stderr, "test_libc: %zu of %zu addresses agree with "
			"addr2line, %zu without a line\n",
		named, n, n - named);
	ck_assert_uint_gt(named, n / 2);
out:
	hd_debuginfo_destroy(di);
	hd_target_destroy(t);
}
END_TEST

static Suite *lines_suite(void)
{
	Suite *s = suite_create("lines");
	TCase *tc = tcase_create("sample");
	tcase_add_test(tc, test_sample_sites);
	tcase_add_test(tc, test_nodebug);
	tcase_add_test(tc, test_line_table);
	tcase_add_test(tc, test_file_names);
	tcase_add_test(tc, test_not_elf);
	suite_add_tcase(s, tc);

	tc = tcase_create("libc");
	// Decompressing libc's debug sections is slow under valgrind.
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_libc);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--source") == 0)
			source_dir = argv[i + 1];
		else if (strcmp(argv[i], "--nodebug") == 0)
			nodebug_sample = argv[i + 1];
		else
			break;
	}
	if (!source_dir || !nodebug_sample || i >= argc) {
		fprintf(stderr,
			"usage: %s --source DIR --nodebug FILE SAMPLE...\n",
			argv[0]);
		return 2;
	}
	samples = argv + i;
	num_samples = argc - i;

	int failed = hd_run_suite(lines_suite());
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
