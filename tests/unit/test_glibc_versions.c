// The glibc layout table (core/heap/glibc/versions.c): rows cover every
// release from 2.12 to 2.43 once, in order; identical rows are merged; each
// row's offsets follow from its struct definitions; a layout read from DWARF
// finds its own row.
#include <string.h>

#include "check_util.h"
#include "heap/glibc/glibc_internal.h"

START_TEST(test_rows_cover_every_release_once)
{
	ck_assert_uint_gt(glibc_num_versions, 0);
	ck_assert_uint_le(glibc_num_versions, 32); // rows are bits of a mask
	ck_assert_uint_eq(glibc_versions[0].lo, 12);
	for (size_t i = 0; i < glibc_num_versions; i++) {
		ck_assert_uint_le(glibc_versions[i].lo, glibc_versions[i].hi);
		if (i)
			ck_assert_uint_eq(glibc_versions[i].lo,
					  glibc_versions[i - 1].hi + 1);
	}
	ck_assert_uint_eq(glibc_versions[glibc_num_versions - 1].hi, 43);
}
END_TEST

START_TEST(test_adjacent_rows_differ)
{
	for (size_t i = 1; i < glibc_num_versions; i++) {
		struct glibc_version a = glibc_versions[i - 1],
				     b = glibc_versions[i];
		a.lo = b.lo = a.hi = b.hi = 0;
		ck_assert_msg(memcmp(&a, &b, sizeof(a)) != 0,
			      "rows %zu and %zu are the same layout", i - 1, i);
	}
}
END_TEST

START_TEST(test_offsets_follow_the_structs)
{
	for (size_t i = 0; i < glibc_num_versions; i++) {
		const struct glibc_version *v = &glibc_versions[i];
		// top, last_remainder, bins[254], binmap[4], next, next_free,
		// [attached_threads], system_mem, max_system_mem.
		ck_assert_uint_eq(v->off_top + 16, v->off_bins);
		ck_assert_uint_eq(v->off_next, v->off_bins + 254 * 8 + 16);
		ck_assert(v->off_system_mem == v->off_next + 16 ||
			  v->off_system_mem == v->off_next + 24);
		ck_assert_uint_eq(v->state_size, v->off_system_mem + 16);
		if (v->nfastbins)
			ck_assert_uint_eq(v->off_fastbins + 8 * v->nfastbins,
					  v->off_top);
		ck_assert(v->heap_info_size == 32 || v->heap_info_size == 48);
		if (!v->tcache_count_size)
			continue;
		uint64_t counts = v->tcache_count_size * v->tcache_nbins;
		ck_assert_uint_eq(v->tcache_off_entries, (counts + 7) & ~7ULL);
		uint64_t size = v->tcache_off_entries + 8 * v->tcache_nbins;
		ck_assert_uint_eq(v->tcache_struct_chunk, (size + 8 + 15) & ~15ULL);
	}
}
END_TEST

START_TEST(test_a_layout_finds_its_row)
{
	for (size_t i = 0; i < glibc_num_versions; i++) {
		struct glibc_layout lay;
		memset(&lay, 0, sizeof(lay));
		glibc_layout_from_version(&lay, &glibc_versions[i]);
		lay.heap_info_size = glibc_versions[i].heap_info_size;
		uint32_t rows = glibc_rows_matching_layout(&lay);
		ck_assert_msg(rows & (1u << i), "row %zu does not match itself", i);
		// Rows it matches differ only in what no struct shows.
		for (size_t j = 0; j < glibc_num_versions; j++) {
			if (!(rows & (1u << j)))
				continue;
			ck_assert_uint_eq(glibc_versions[j].state_size,
					  glibc_versions[i].state_size);
			// DWARF without tcache_perthread_struct is a build
			// without tcache, which a tcache release allows.
			if (glibc_versions[i].tcache_struct_chunk)
				ck_assert_uint_eq(glibc_versions[j].tcache_struct_chunk,
						  glibc_versions[i].tcache_struct_chunk);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("glibc_versions");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, test_rows_cover_every_release_once);
	tcase_add_test(tc, test_adjacent_rows_differ);
	tcase_add_test(tc, test_offsets_follow_the_structs);
	tcase_add_test(tc, test_a_layout_finds_its_row);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
