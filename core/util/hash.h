// FNV-1a of a NUL-terminated string: the hash of the string tables (labels,
// type names, file names), which need no more than a good spread.
#ifndef HD_UTIL_HASH_H
#define HD_UTIL_HASH_H

#include <stdint.h>

static inline uint64_t hd_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

#endif
