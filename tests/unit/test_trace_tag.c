// Unit tests of the tracer's block tags (heapdom_trace.h): what the tracer
// writes in a traced block's last usable word, read back as the tracer's
// free and the reports read it, and the words that must not pass for one.
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom_trace.h"
#include "check_util.h"

#define KEY 0x0123456789abcdefull

// A block of `usable` usable bytes at addr (the first bytes of mem),
// tagged as the tracer tags an allocation of n bytes. Returns its last
// word.
static uint64_t *tag_block(uint64_t *mem, uint64_t addr, uint64_t usable, uint64_t n,
			   uint32_t site, uint32_t birth)
{
	uint64_t *t = mem + usable / 8 - 1;

	hd_trace_tag_write(t, addr, KEY, usable, n, site, birth);
	return t;
}

static uint64_t mem[8192 / 8];

// Every size that fits, near and far slacks alike, reads back as written;
// the birth keeps its low HD_TRACE_TAG_BIRTH_BITS bits.
START_TEST(test_round_trip)
{
	static const uint64_t usables[] = {24, 40, 56, 1032, 4096 - 16, 8192};
	uint64_t addr = 0x55555555a2a0ull;

	for (size_t i = 0; i < sizeof(usables) / sizeof(usables[0]); i++) {
		uint64_t u = usables[i];
		for (uint64_t n = 0; n + HD_TRACE_TAG <= u; n++) {
			uint32_t site = (uint32_t)(n * 7919 % HD_TRACE_SITES);
			uint32_t birth = (uint32_t)(0xfff00000u + n);
			uint64_t size;
			uint32_t s, b;

			memset(mem, 0, sizeof(mem));
			uint64_t *t = tag_block(mem, addr, u, n, site, birth);
			ck_assert_msg(hd_trace_tag_read(t, addr, KEY, u, &size, &s, &b),
				      "usable %lu, n %lu: tag not recognised", (unsigned long)u,
				      (unsigned long)n);
			ck_assert_uint_eq(size, n);
			ck_assert_uint_eq(s, site);
			ck_assert_uint_eq(b, birth & HD_TRACE_TAG_BIRTH_MASK);
			ck_assert_msg(t[0] >> 63, "a tag must not look like a pointer");
		}
		addr += 0x1230;
	}
}
END_TEST

// A tag moved to another block (another address), read under another key,
// or without its bit 63 is no tag.
START_TEST(test_rejects_other_blocks)
{
	uint64_t size;
	uint32_t s, b;
	unsigned accepted = 0;

	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t addr = 0x7f0000001000ull + i * 48, u = 40;
		uint64_t *t = tag_block(mem, addr, u, 20, 3, 9);

		ck_assert(hd_trace_tag_read(t, addr, KEY, u, &size, &s, &b));
		accepted += hd_trace_tag_read(t, addr + 16, KEY, u, &size, &s, &b);
		accepted += hd_trace_tag_read(t, addr, KEY ^ (i + 1) << 20, u, &size, &s, &b);
		t[0] &= ~(1ull << 63);
		ck_assert(!hd_trace_tag_read(t, addr, KEY, u, &size, &s, &b));
	}
	// 23 check bits: one in 2^22 of these could pass (their bit 63 is
	// set); these fixed inputs give none.
	ck_assert_uint_eq(accepted, 0);
}
END_TEST

// A slack that the usable size cannot hold, and a far slack whose word
// before the tag is missing, damaged or too small, are no tag.
START_TEST(test_rejects_bad_slack)
{
	uint64_t addr = 0x55555555b000ull, size;
	uint32_t s, b;
	uint64_t *t = mem + 2;

	// Near slack 20 in a 24-byte block: 20 > 24 - 8.
	t[0] = hd_trace_tag_word(addr, KEY, 20, 1, 1);
	ck_assert(!hd_trace_tag_read(t, addr, KEY, 24, &size, &s, &b));
	ck_assert(hd_trace_tag_read(t, addr, KEY, 40, &size, &s, &b));
	ck_assert_uint_eq(size, 12);

	// A block smaller than asked for and its tag: nothing written.
	memset(mem, 0, sizeof(mem));
	hd_trace_tag_write(t, addr, KEY, 24, 20, 1, 1);
	ck_assert(t[0] == 0 && t[-1] == 0);

	// Far slack: 100 bytes.
	t = tag_block(mem, addr, 200, 92, 5, 6);
	ck_assert(hd_trace_tag_read(t, addr, KEY, 200, &size, &s, &b));
	ck_assert_uint_eq(size, 92);
	// Too small a block to have a word before its tag.
	ck_assert(!hd_trace_tag_read(t, addr, KEY, 8, &size, &s, &b));
	// More slack than the block has.
	ck_assert(!hd_trace_tag_read(t, addr, KEY, 100, &size, &s, &b));
	// The word before damaged: its check bits, then its slack below the
	// far threshold.
	uint64_t far = t[-1];
	t[-1] = far ^ 1ull << 50;
	ck_assert(!hd_trace_tag_read(t, addr, KEY, 200, &size, &s, &b));
	t[-1] = (far & ~HD_TRACE_TAG_FAR_SLACK) | 7;
	ck_assert(!hd_trace_tag_read(t, addr, KEY, 200, &size, &s, &b));
}
END_TEST

// Random last words (bit 63 set, so that only the check bits stand in
// the way) rarely pass: the false positives a block allocated while
// tracing was off may give, about one in 2^22.
START_TEST(test_random_words)
{
	uint64_t x = 0x9E3779B97F4A7C15ull, size;
	uint32_t s, b;
	unsigned accepted = 0;

	for (unsigned i = 0; i < (1u << 22); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t w[2] = {x * 3, x | 1ull << 63};
		accepted += hd_trace_tag_read(&w[1], 0x55555555c000ull + 16 * (uint64_t)i, KEY,
					      1024, &size, &s, &b);
	}
	ck_assert_msg(accepted <= 8, "%u of 2^22 random words passed for tags", accepted);
}
END_TEST

// The whole birth epoch, from its low bits and the current epoch, across
// the bits' wrap and the epoch's own.
START_TEST(test_birth)
{
	uint32_t m = HD_TRACE_TAG_BIRTH_MASK;

	ck_assert_uint_eq(hd_trace_tag_birth(0, 0), 0);
	ck_assert_uint_eq(hd_trace_tag_birth(74, 3), 3);
	ck_assert_uint_eq(hd_trace_tag_birth(m + 5, m - 2), m - 2);
	ck_assert_uint_eq(hd_trace_tag_birth(m + 5, m + 5), m + 5);
	ck_assert_uint_eq(hd_trace_tag_birth(3 * (m + 1) + 1, 7), 2 * (m + 1) + 7);
	ck_assert_uint_eq(hd_trace_tag_birth(3, 0xfffffffeu & m), 0xfffffffeu);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace_tag");
	TCase *tc = tcase_create("trace_tag");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_rejects_other_blocks);
	tcase_add_test(tc, test_rejects_bad_slack);
	tcase_add_test(tc, test_random_words);
	tcase_add_test(tc, test_birth);
	suite_add_tcase(s, tc);
	int failed = hd_run_suite(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
