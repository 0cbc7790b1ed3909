// Warnings are deduplicated and capped (report/format.c): messages that
// differ only in their numbers are one kind, shown once with a count; past
// HD_MAX_WARNING_KINDS kinds only a count is printed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "report/report_internal.h"

struct msgs {
	char text[64][96];
	uint64_t addr[64];
	size_t n;
};

static const char *msg_at(void *arg, size_t i, uint64_t *addr)
{
	struct msgs *m = arg;
	*addr = m->addr[i];
	return m->text[i];
}

static void add(struct msgs *m, uint64_t addr, const char *fmt, unsigned x)
{
	snprintf(m->text[m->n], sizeof(m->text[0]), fmt, x, x * 16);
	m->addr[m->n++] = addr;
}

// The printed text, and how many lines it has.
static char *render(struct msgs *m, size_t dropped, size_t *lines)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	hd_text_warnings(f, false, "  ", m->n, dropped, msg_at, m);
	fclose(f);
	*lines = 0;
	for (char *p = buf; *p; p++)
		*lines += *p == '\n';
	return buf;
}

START_TEST(test_same_kind_is_one_line)
{
	struct msgs m = {.n = 0};
	// 127 empty bins' worth, in short: one kind, different numbers.
	for (unsigned i = 1; i <= 40; i++)
		add(&m, 0x1000 + 16 * i, "bin %u of arena 0x%x ends in a null pointer", i);
	size_t lines;
	char *out = render(&m, 0, &lines);
	ck_assert_uint_eq(lines, 1);
	ck_assert_msg(strstr(out, "  warning: 0x1010: bin 1 of arena 0x10 ends in a null pointer (and 39 more like it)\n"),
		      "%s", out);
	free(out);
}
END_TEST

START_TEST(test_kinds_are_capped)
{
	struct msgs m = {.n = 0};
	static const char *const kinds[] = {
		"alpha %u at 0x%x", "beta %u at 0x%x", "gamma %u at 0x%x",
		"delta %u at 0x%x", "epsilon %u at 0x%x", "zeta %u at 0x%x",
		"eta %u at 0x%x", "theta %u at 0x%x", "iota %u at 0x%x",
		"kappa %u at 0x%x", "lambda %u at 0x%x", "mu %u at 0x%x",
		"nu %u at 0x%x",
	};
	// 13 kinds, 3 of each, interleaved.
	for (unsigned r = 0; r < 3; r++)
		for (unsigned k = 0; k < 13; k++)
			add(&m, 0, kinds[k], r + 1);
	size_t lines;
	char *out = render(&m, 5, &lines);
	// 10 kinds shown, one line of the rest: 3 kinds × 3 + 5 dropped.
	ck_assert_uint_eq(lines, HD_MAX_WARNING_KINDS + 1);
	ck_assert_msg(strstr(out, "  warning: alpha 1 at 0x10 (and 2 more like it)\n"), "%s", out);
	ck_assert_msg(strstr(out, "  warning: kappa 1 at 0x10 (and 2 more like it)\n"), "%s", out);
	ck_assert_msg(!strstr(out, "lambda") && !strstr(out, "nu "), "%s", out);
	ck_assert_msg(strstr(out, "  … and 14 more warnings of other kinds"), "%s", out);
	free(out);
}
END_TEST

START_TEST(test_distinct_words_stay_apart)
{
	struct msgs m = {.n = 0};
	add(&m, 0x10, "tcache bin %u loops (0x%x)", 3);
	add(&m, 0x20, "fastbin %u loops (0x%x)", 3);
	size_t lines;
	char *out = render(&m, 0, &lines);
	ck_assert_uint_eq(lines, 2);
	ck_assert_msg(!strstr(out, "more like it"), "%s", out);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("warnings");
	TCase *tc = tcase_create("dedup");
	tcase_add_test(tc, test_same_kind_is_one_line);
	tcase_add_test(tc, test_kinds_are_capped);
	tcase_add_test(tc, test_distinct_words_stay_apart);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
