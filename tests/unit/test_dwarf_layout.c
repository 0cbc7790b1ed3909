// Unit test of hd_dwarf_struct_layouts.
//
// Usage: test_dwarf_layout SAMPLE [SAMPLE...]
// Each SAMPLE is dwarf_sample.c built with -g (possibly with different
// -gdwarf-N), and every expected value is computed here from
// dwarf_sample.h with offsetof/sizeof. glibc's own layout is checked too
// when libc's separate debug file is installed.
#include <check.h>
#include <elf.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapdom.h"
#include "debuginfo/dwarf_layout.h"
#include "dwarf_sample.h"
#include "check_util.h"

static char **sample_paths;
static int num_samples;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define member_sizeof(type, member) sizeof(((type *)0)->member)

// Asserts that member name of l sits at the compiler's offset with the
// compiler's size, and has count elements (0 for non-arrays).
#define check_member(l, type, member, count_)                                  \
	do {                                                                   \
		const struct hd_member_layout *m_ =                            \
			hd_struct_layout_member((l), #member);                 \
		ck_assert_msg(m_, "member %s missing", #member);               \
		ck_assert_uint_eq(m_->offset, offsetof(type, member));         \
		ck_assert_uint_eq(m_->size, member_sizeof(type, member));      \
		ck_assert_uint_eq(m_->count, (count_));                        \
	} while (0)

static void load(const char *path, const char *cu_suffix,
		 const char *const *names, size_t n,
		 struct hd_struct_layout *ret)
{
	struct hd_error *err =
		hd_dwarf_struct_layouts(path, cu_suffix, names, n, ret);
	ck_assert_msg(!err, "%s", err ? err->message : "");
}

static void deinit_all(struct hd_struct_layout *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hd_struct_layout_deinit(&l[i]);
}

START_TEST(test_sample_struct)
{
	static const char *const names[] = {"sample"};
	for (int i = 0; i < num_samples; i++) {
		struct hd_struct_layout l[1];
		load(sample_paths[i], NULL, names, 1, l);
		ck_assert_str_eq(l[0].name, "sample");
		ck_assert_uint_eq(l[0].size, sizeof(struct sample));
		ck_assert_uint_eq(l[0].num_members, 6);
		// Members come in declaration order.
		ck_assert_str_eq(l[0].members[0].name, "c");
		ck_assert_str_eq(l[0].members[5].name, "d");
		check_member(&l[0], struct sample, c, 0);
		check_member(&l[0], struct sample, l, 0);
		check_member(&l[0], struct sample, arr,
			     sizeof(((struct sample *)0)->arr) / sizeof(int));
		check_member(&l[0], struct sample, next, 0);
		check_member(&l[0], struct sample, cv, 0);
		check_member(&l[0], struct sample, d, 0);
		ck_assert_ptr_null(hd_struct_layout_member(&l[0], "nope"));
		deinit_all(l, 1);
	}
}
END_TEST

START_TEST(test_typedef_and_tag)
{
	// The typedef name and the struct tag find the same layout, and a
	// name asked for twice is filled twice.
	static const char *const names[] = {"inner_t", "inner_s", "inner_t"};
	for (int i = 0; i < num_samples; i++) {
		struct hd_struct_layout l[3];
		load(sample_paths[i], NULL, names, 3, l);
		for (size_t j = 0; j < 3; j++) {
			ck_assert_str_eq(l[j].name, names[j]);
			ck_assert_uint_eq(l[j].size, sizeof(inner_t));
			ck_assert_uint_eq(l[j].num_members, 1);
			check_member(&l[j], inner_t, s, 0);
		}
		deinit_all(l, 3);
	}
}
END_TEST

START_TEST(test_outer)
{
	static const char *const names[] = {"outer", "nested"};
	for (int i = 0; i < num_samples; i++) {
		struct hd_struct_layout l[2];
		load(sample_paths[i], NULL, names, 2, l);
		ck_assert_uint_eq(l[0].size, sizeof(struct outer));
		check_member(&l[0], struct outer, in, 0);
		// row_t rows[2] flattens to 8 ints.
		check_member(&l[0], struct outer, rows, 2 * 4);
		check_member(&l[0], struct outer, u, 0);
		check_member(&l[0], struct outer, after_bits, 0);
		check_member(&l[0], struct outer, n, 0);
		const struct hd_member_layout *m =
			hd_struct_layout_member(&l[0], "bits");
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_ge(m->offset, offsetof(struct outer, u) +
						     sizeof(((struct outer *)0)->u));
		ck_assert_uint_le(m->offset, offsetof(struct outer, after_bits));
		m = hd_struct_layout_member(&l[0], "flex");
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(m->offset, offsetof(struct outer, flex));
		ck_assert_uint_eq(m->size, 0);
		ck_assert_uint_eq(m->count, 0);

		ck_assert_uint_eq(l[1].size, sizeof(struct nested));
		check_member(&l[1], struct nested, x, 0);
		deinit_all(l, 2);
	}
}
END_TEST

START_TEST(test_local_struct)
{
	// Defined inside a function: found by walking into the subprogram.
	struct local_s DWARF_SAMPLE_LOCAL_BODY;
	static const char *const names[] = {"local_s"};
	for (int i = 0; i < num_samples; i++) {
		struct hd_struct_layout l[1];
		load(sample_paths[i], NULL, names, 1, l);
		ck_assert_uint_eq(l[0].size, sizeof(struct local_s));
		check_member(&l[0], struct local_s, x, 0);
		check_member(&l[0], struct local_s, y, 5);
		check_member(&l[0], struct local_s, p, 0);
		deinit_all(l, 1);
	}
}
END_TEST

START_TEST(test_missing_name)
{
	static const char *const names[] = {"no_such_struct", "sample",
					    "row_t"};
	struct hd_struct_layout l[3];
	load(sample_paths[0], NULL, names, 3, l);
	ck_assert_uint_eq(l[0].size, 0);
	ck_assert_ptr_null(l[0].name);
	ck_assert_uint_eq(l[0].num_members, 0);
	ck_assert_uint_eq(l[1].size, sizeof(struct sample));
	// A typedef of something that is not a struct is not a match.
	ck_assert_uint_eq(l[2].size, 0);
	deinit_all(l, 3);
}
END_TEST

START_TEST(test_cu_filter)
{
	static const char *const names[] = {"sample"};
	struct hd_struct_layout l[1];
	load(sample_paths[0], "dwarf_sample.c", names, 1, l);
	ck_assert_uint_eq(l[0].size, sizeof(struct sample));
	deinit_all(l, 1);
	load(sample_paths[0], "no_such_file.c", names, 1, l);
	ck_assert_uint_eq(l[0].size, 0);
}
END_TEST

START_TEST(test_not_elf)
{
	char path[] = "/tmp/test_dwarf_layout.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	static const char text[] = "this is not an ELF file\n";
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);

	static const char *const names[] = {"sample"};
	struct hd_struct_layout l[1];
	struct hd_error *err = hd_dwarf_struct_layouts(path, NULL, names, 1, l);
	unlink(path);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	ck_assert_msg(strstr(err->message, path), "%s", err->message);
	ck_assert_uint_eq(l[0].size, 0);
	hd_error_destroy(err);

	// A truncated ELF header is libdwarf's to reject, without crashing.
	strcpy(path, "/tmp/test_dwarf_layout.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\177ELF\2\1\1", 7), 7);
	close(fd);
	err = hd_dwarf_struct_layouts(path, NULL, names, 1, l);
	unlink(path);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err->message, path), "%s", err->message);
	hd_error_destroy(err);
}
END_TEST

START_TEST(test_no_file)
{
	static const char *const names[] = {"sample"};
	struct hd_struct_layout l[1];
	struct hd_error *err = hd_dwarf_struct_layouts(
		"/nonexistent/dwarf_sample", NULL, names, 1, l);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_OS);
	ck_assert_ptr_nonnull(strstr(err->message, "/nonexistent/dwarf_sample"));
	hd_error_destroy(err);
}
END_TEST

// Finds the build-id of the libc this test runs with, from its PT_NOTE.
struct build_id {
	unsigned char id[64];
	size_t len;
};

static int find_libc_build_id(struct dl_phdr_info *info, size_t size,
			      void *arg)
{
	struct build_id *b = arg;
	if (!strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= sizeof(b->id)) {
				memcpy(b->id, desc, nh->n_descsz);
				b->len = nh->n_descsz;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static bool libc_debug_file(char *path, size_t size)
{
	struct build_id b = {0};
	if (!dl_iterate_phdr(find_libc_build_id, &b) || b.len < 2)
		return false;
	int off = snprintf(path, size, "/usr/lib/debug/.build-id/%02x/",
			   b.id[0]);
	for (size_t i = 1; i < b.len; i++)
		off += snprintf(path + off, size - off, "%02x", b.id[i]);
	snprintf(path + off, size - off, ".debug");
	return access(path, R_OK) == 0;
}

START_TEST(test_glibc)
{
	char path[256];
	if (!libc_debug_file(path, sizeof(path))) {
		fprintf(stderr, "test_glibc: libc debug file not installed, "
				"skipped\n");
		return;
	}
	static const char *const names[] = {
		"malloc_state", "malloc_chunk", "heap_info",
		"tcache_perthread_struct", "malloc_par", "tcache_entry",
	};
	struct hd_struct_layout l[ARRAY_SIZE(names)];
	load(path, "malloc.c", names, ARRAY_SIZE(names), l);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		ck_assert_msg(l[i].size > 0, "%s not found", names[i]);

	const struct hd_member_layout *m;
	ck_assert_ptr_nonnull(hd_struct_layout_member(&l[0], "have_fastchunks"));
	m = hd_struct_layout_member(&l[0], "fastbinsY");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->count, 10);
	ck_assert_uint_eq(m->size, 10 * sizeof(void *));
	m = hd_struct_layout_member(&l[0], "bins");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->count, 254);
	ck_assert_uint_eq(l[1].size, 6 * sizeof(size_t));
	m = hd_struct_layout_member(&l[2], "ar_ptr");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->offset, 0);
	m = hd_struct_layout_member(&l[3], "entries");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->count, 64);
	ck_assert_ptr_nonnull(hd_struct_layout_member(&l[4], "sbrk_base"));
	ck_assert_ptr_nonnull(hd_struct_layout_member(&l[4], "n_mmaps"));
	ck_assert_ptr_nonnull(hd_struct_layout_member(&l[5], "next"));
#if defined(__x86_64__)
	// glibc 2.36 on x86-64, as read by hand from its debug file.
	if (strcmp(gnu_get_libc_version(), "2.36") == 0) {
		ck_assert_uint_eq(l[0].size, 2200);
		ck_assert_uint_eq(hd_struct_layout_member(&l[0], "top")->offset,
				  96);
		ck_assert_uint_eq(
			hd_struct_layout_member(&l[0], "max_system_mem")->offset,
			2192);
		ck_assert_uint_eq(
			hd_struct_layout_member(&l[2], "pagesize")->offset, 32);
	}
#endif
	deinit_all(l, ARRAY_SIZE(names));
}
END_TEST

static Suite *dwarf_layout_suite(void)
{
	Suite *s = suite_create("dwarf_layout");
	TCase *tc = tcase_create("sample");
	tcase_add_test(tc, test_sample_struct);
	tcase_add_test(tc, test_typedef_and_tag);
	tcase_add_test(tc, test_outer);
	tcase_add_test(tc, test_local_struct);
	tcase_add_test(tc, test_missing_name);
	tcase_add_test(tc, test_cu_filter);
	tcase_add_test(tc, test_not_elf);
	tcase_add_test(tc, test_no_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("glibc");
	// Decompressing libc's debug sections is slow under valgrind.
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_glibc);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DWARF_SAMPLE [DWARF_SAMPLE...]\n",
			argv[0]);
		return 2;
	}
	sample_paths = argv + 1;
	num_samples = argc - 1;

	int failed = hd_run_suite(dwarf_layout_suite());
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
