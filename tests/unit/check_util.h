// Shared by the Check unit tests: an assertion that a libheapdom call
// returned no error, printing its message when it did, and the runner.
#ifndef HD_TEST_CHECK_UTIL_H
#define HD_TEST_CHECK_UTIL_H

#include <check.h>

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

#endif
