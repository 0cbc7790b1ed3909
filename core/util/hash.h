// Hashes of the open-addressing tables, which need no more than a good
// spread.
#ifndef HD_UTIL_HASH_H
#define HD_UTIL_HASH_H

#include <stdint.h>

// FNV-1a of a NUL-terminated string: the string tables (labels, type
// names, file names).

static inline uint64_t hd_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

// A 64-bit mixer (murmur3's finalizer, halved): tables keyed by address
// or by a packed key, whose low bits alone repeat.
static inline uint64_t hd_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

#endif
