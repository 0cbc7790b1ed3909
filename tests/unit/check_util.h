// Shared by the Check unit tests: an assertion that a libheapdom call
// returned no error, printing its message when it did, and the runner.
#ifndef HD_TEST_CHECK_UTIL_H
#define HD_TEST_CHECK_UTIL_H

#include <check.h>
#include <stdint.h>

#include "heapdom.h"

#define ck_assert_no_error(err)                                               \
	do {                                                                  \
		struct hd_error *_e = (err);                                  \
		ck_assert_msg(!_e, "unexpected error: %s",                    \
			      _e ? _e->message : "");                         \
	} while (0)

// Runs every test of suite s (and frees it); returns how many failed.
static inline int hd_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed;
}

// splitmix64, for tests that make random inputs from a seed: the same
// sequence on every machine. The state is one per test program.
static inline uint64_t *hd_rng_state(void)
{
	static uint64_t state;
	return &state;
}

static inline void hd_rng_seed(uint64_t seed)
{
	*hd_rng_state() = seed * 0x9e3779b97f4a7c15ull + 1;
}

static inline uint64_t hd_rng_next(void)
{
	uint64_t z = (*hd_rng_state() += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
