// An in-place sort for arrays of any element type, as a template: defines
// static void NAME(T *a, size_t n), ordering by BEFORE(const T *, const T *)
// (true when the first goes first). Quicksort on the middle of three, the
// smaller side first (a stack of at most log2 n entries), insertion sort
// below 17 elements. Unlike qsort it allocates nothing: glibc's qsort
// copies the whole array, tens of MiB for a list of millions at a
// report's peak. The elements must be distinct under BEFORE.
#ifndef HD_UTIL_SORT_INPLACE_H
#define HD_UTIL_SORT_INPLACE_H

#include <stddef.h>

#define HD_DEFINE_SORT_INPLACE(NAME, T, BEFORE)					\
static void NAME(T *a, size_t n)						\
{										\
	struct { size_t lo, hi; } stack[64];					\
	size_t sp = 0, lo = 0, hi = n;						\
	for (;;) {								\
		while (hi - lo > 16) {						\
			size_t mid = lo + (hi - lo) / 2;			\
			T t;							\
			/* The middle of three into a[mid]. */			\
			if (BEFORE(&a[mid], &a[lo])) { t = a[lo]; a[lo] = a[mid]; a[mid] = t; } \
			if (BEFORE(&a[hi - 1], &a[mid])) { t = a[mid]; a[mid] = a[hi - 1]; a[hi - 1] = t; } \
			if (BEFORE(&a[mid], &a[lo])) { t = a[lo]; a[lo] = a[mid]; a[mid] = t; } \
			T pivot = a[mid];					\
			size_t i = lo, j = hi - 1;				\
			for (;;) {						\
				while (BEFORE(&a[i], &pivot))			\
					i++;					\
				while (BEFORE(&pivot, &a[j]))			\
					j--;					\
				if (i >= j)					\
					break;					\
				t = a[i]; a[i] = a[j]; a[j] = t;		\
				i++;						\
				j--;						\
			}							\
			/* [lo, j] and [j + 1, hi): the larger waits. */	\
			size_t split = j + 1;					\
			if (split - lo < hi - split) {				\
				stack[sp].lo = split;				\
				stack[sp++].hi = hi;				\
				hi = split;					\
			} else {						\
				stack[sp].lo = lo;				\
				stack[sp++].hi = split;				\
				lo = split;					\
			}							\
		}								\
		for (size_t i = lo + 1; i < hi; i++) {				\
			T x = a[i];						\
			size_t j = i;						\
			for (; j > lo && BEFORE(&x, &a[j - 1]); j--)		\
				a[j] = a[j - 1];				\
			a[j] = x;						\
		}								\
		if (!sp)							\
			break;							\
		sp--;								\
		lo = stack[sp].lo;						\
		hi = stack[sp].hi;						\
	}									\
}

#endif
