// Unit test of the .debug_rnglists header check that keeps corrupt
// sections away from libdwarf 20210528 (core/debuginfo/rnglists_check.c,
// docs/fuzzing.md finding 8): without it the fuzzer's input and most
// cases below abort in a double free inside libdwarf; in the others (a
// unit longer than the bytes left, more offsets than the unit holds)
// libdwarf would read past the unit.
//
// Usage: test_rnglists_check REGRESS_INPUT CPP_SAMPLE
//
// REGRESS_INPUT is the fuzzer's input (tests/fuzz/regress/dwarf/, gzip'd
// or not); CPP_SAMPLE is type_sample_cpp.cpp built with -gdwarf-5, whose
// .debug_rnglists the test corrupts field by field. What each message must
// name (section size, unit length, field values) is read from the files
// here with libelf, not taken from heapdom.
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "heapdom.h"
#include "debuginfo/lines.h"
#include "types/type_index.h"
#include "check_util.h"

static const char *regress_input, *cpp_sample;

struct file {
	uint8_t *data;
	size_t size;
	uint64_t sec_off, sec_size; // .debug_rnglists in the file
};

// Reads a file (through zlib: plain or gzip'd) and finds its
// .debug_rnglists with libelf.
static void load(const char *path, struct file *f)
{
	gzFile g = gzopen(path, "rb");
	ck_assert_msg(g, "cannot open %s", path);
	size_t cap = 1 << 20;
	f->data = malloc(cap);
	f->size = 0;
	int r;
	while ((r = gzread(g, f->data + f->size, (unsigned)(cap - f->size))) > 0) {
		f->size += (size_t)r;
		if (f->size == cap)
			f->data = realloc(f->data, cap *= 2);
	}
	gzclose(g);
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)f->data, f->size);
	ck_assert_ptr_nonnull(elf);
	size_t shstrndx;
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	f->sec_size = 0;
	for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s));) {
		GElf_Shdr sh;
		gelf_getshdr(s, &sh);
		const char *n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, ".debug_rnglists") == 0) {
			f->sec_off = sh.sh_offset;
			f->sec_size = sh.sh_size;
		}
	}
	elf_end(elf);
	ck_assert_msg(f->sec_size >= 12, "%s: no .debug_rnglists", path);
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

// Writes data to a new temporary file; returns its path (malloc'd).
static char *write_tmp(const uint8_t *data, size_t size)
{
	const char *dir = getenv("TMPDIR");
	char *path = malloc(4096);
	snprintf(path, 4096, "%s/hd-rnglists-XXXXXX", dir ? dir : "/tmp");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, size), (ssize_t)size);
	close(fd);
	return path;
}

// The type index and the line table (both open the file through
// hd_dwarf_open) refuse path with an HD_ERROR_FORMAT naming it and saying
// `want`.
static void check_refused(const char *path, const char *want)
{
	struct hd_type_index *ix = NULL;
	struct hd_error *err = hd_type_index_build(path, &ix);
	ck_assert_msg(err, "%s: indexed, expected \"%s\"", path, want);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	ck_assert_msg(strstr(err->message, path) && strstr(err->message, want),
		      "message \"%s\" lacks \"%s\" or the path", err->message, want);
	hd_error_destroy(err);

	struct hd_line_table *lt = NULL;
	err = hd_line_table_build(path, &lt);
	ck_assert_msg(err, "%s: line table built", path);
	ck_assert_msg(strstr(err->message, want), "line table: \"%s\"", err->message);
	hd_error_destroy(err);
}

// The fuzzer's input: its first unit's length runs past the section.
START_TEST(test_regress_input)
{
	struct file f;
	load(regress_input, &f);
	uint32_t len = get32(f.data + f.sec_off);
	ck_assert_uint_gt(len, f.sec_size - 4);
	char want[200];
	snprintf(want, sizeof(want),
		 "corrupt DWARF: .debug_rnglists unit at section offset 0x0: "
		 "unit length 0x%x runs past the end of the section (0x%llx bytes)",
		 len, (unsigned long long)f.sec_size);
	char *path = write_tmp(f.data, f.size);
	check_refused(path, want);
	unlink(path);
	free(path);
	free(f.data);
}
END_TEST

// The sound sample opens; each corrupt header field is named.
START_TEST(test_each_field)
{
	struct file f;
	load(cpp_sample, &f);
	struct hd_type_index *ix = NULL;
	ck_assert_no_error(hd_type_index_build(cpp_sample, &ix));
	hd_type_index_destroy(ix);

	uint8_t *u = f.data + f.sec_off; // gcc writes one unit per unit
	uint32_t len = get32(u);
	ck_assert_uint_eq(len + 4, f.sec_size);
	ck_assert_uint_eq(u[4] | u[5] << 8, 5);
	char want[200];
	for (int c = 0; c < 6; c++) {
		uint8_t *m = malloc(f.size);
		memcpy(m, f.data, f.size);
		uint8_t *h = m + f.sec_off;
		switch (c) {
		case 0: // one byte longer than the section holds
			put32(h, len + 1);
			snprintf(want, sizeof(want), "unit at section offset 0x0: unit length 0x%x runs past the end of the section (0x%llx bytes)",
				 len + 1, (unsigned long long)f.sec_size);
			break;
		case 1: // DWARF 4's version
			h[4] = 4;
			snprintf(want, sizeof(want), "unit at section offset 0x0: version 4, not 5");
			break;
		case 2:
			h[6] = 3;
			snprintf(want, sizeof(want), "unit at section offset 0x0: address size 3");
			break;
		case 3: // 3 bytes after a shortened unit
			put32(h, len - 3);
			snprintf(want, sizeof(want), "unit at section offset 0x%x: 3 bytes left, too few for a unit length",
				 len + 1);
			break;
		case 4:
			put32(h, 0xfffffff7);
			snprintf(want, sizeof(want), "unit at section offset 0x0: reserved unit length 0xfffffff7");
			break;
		case 5: // more offsets than the unit holds
			put32(h + 8, len / 4);
			snprintf(want, sizeof(want), "unit at section offset 0x0: %u offset entries do not fit",
				 len / 4);
			break;
		}
		char *path = write_tmp(m, f.size);
		check_refused(path, want);
		unlink(path);
		free(path);
		free(m);
	}
	free(f.data);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s REGRESS_INPUT CPP_SAMPLE\n", argv[0]);
		return 2;
	}
	regress_input = argv[1];
	cpp_sample = argv[2];
	Suite *s = suite_create("rnglists_check");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_regress_input);
	tcase_add_test(tc, test_each_field);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
