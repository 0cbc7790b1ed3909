// A set of non-zero 64-bit values (addresses seen by a walk): open
// addressing, 0 marks an empty slot, grown to stay at most half full.
#ifndef HD_UTIL_U64SET_H
#define HD_UTIL_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/hash.h"

struct hd_u64set {
	uint64_t *v;
	size_t cap, n;
};

static inline bool hd_u64set_has(const struct hd_u64set *s, uint64_t x)
{
	if (!s->cap)
		return false;
	size_t i = hd_hash_u64(x) & (s->cap - 1);
	for (; s->v[i]; i = (i + 1) & (s->cap - 1))
		if (s->v[i] == x)
			return true;
	return false;
}

// Adds x (non-zero); *fresh says whether it was new. False without memory
// (s unchanged).
static inline bool hd_u64set_add(struct hd_u64set *s, uint64_t x, bool *fresh)
{
	*fresh = false;
	if (hd_u64set_has(s, x))
		return true;
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (!v)
			return false;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->v[i])
				continue;
			size_t j = hd_hash_u64(s->v[i]) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = s->v[i];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t i = hd_hash_u64(x) & (s->cap - 1);
	while (s->v[i])
		i = (i + 1) & (s->cap - 1);
	s->v[i] = x;
	s->n++;
	*fresh = true;
	return true;
}

static inline void hd_u64set_free(struct hd_u64set *s)
{
	free(s->v);
	*s = (struct hd_u64set){0};
}

#endif
