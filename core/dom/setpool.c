// Interned sets: a hash of each set's members finds an existing copy;
// unions are memoised by the pair of ids, since a chain of a million
// blocks asks for the same union a million times.
#include <stdlib.h>
#include <string.h>

#include "dom/setpool.h"
#include "util/vec.h"

static uint64_t hash_items(const uint32_t *x, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (size_t i = 0; i < n; i++) {
		h ^= x[i];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h;
}

static bool same(const struct hd_setpool *p, uint32_t id, const uint32_t *x,
		 size_t n)
{
	size_t m;
	const uint32_t *y = hd_setpool_items(p, id, &m);
	return m == n && memcmp(x, y, n * sizeof(*x)) == 0;
}

static bool grow_table(struct hd_setpool *p)
{
	size_t size = p->table_size ? 2 * p->table_size : 64;
	uint32_t *t = calloc(size, sizeof(*t));
	if (!t)
		return false;
	for (uint32_t id = 0; id < p->num_sets; id++) {
		size_t n;
		const uint32_t *x = hd_setpool_items(p, id, &n);
		size_t i = hash_items(x, n) & (size - 1);
		while (t[i])
			i = (i + 1) & (size - 1);
		t[i] = id + 1;
	}
	free(p->table);
	p->table = t;
	p->table_size = size;
	return true;
}

// The id of the sorted set x[0..n), added if new.
static uint32_t intern(struct hd_setpool *p, const uint32_t *x, size_t n)
{
	if (2 * (size_t)(p->num_sets + 1) > p->table_size && !grow_table(p))
		return UINT32_MAX;
	size_t i = hash_items(x, n) & (p->table_size - 1);
	while (p->table[i]) {
		if (same(p, p->table[i] - 1, x, n))
			return p->table[i] - 1;
		i = (i + 1) & (p->table_size - 1);
	}
	if (!hd_vec_reserve((void **)&p->items, &p->cap_items, p->num_items,
			    sizeof(*p->items), p->num_items + n))
		return UINT32_MAX;
	if (p->num_sets + 2 > p->cap_sets) {
		uint32_t cap = p->cap_sets ? 2 * p->cap_sets : 64;
		uint64_t *s = realloc(p->start, (size_t)cap * sizeof(*s));
		if (!s)
			return UINT32_MAX;
		p->start = s;
		p->cap_sets = cap;
	}
	// x may point into items, which the reserve above may have moved:
	// callers pass scratch memory, never the pool's own. The empty set
	// (init) has x and items NULL: memcpy's arguments must not be.
	if (n)
		memcpy(p->items + p->num_items, x, n * sizeof(*x));
	p->num_items += n;
	uint32_t id = p->num_sets++;
	p->start[id + 1] = p->num_items;
	p->table[i] = id + 1;
	return id;
}

bool hd_setpool_init(struct hd_setpool *p, size_t max_members)
{
	*p = (struct hd_setpool){.max_members = max_members};
	p->start = malloc(64 * sizeof(*p->start));
	if (!p->start)
		return false;
	p->cap_sets = 64;
	p->start[0] = 0;
	return intern(p, NULL, 0) == HD_SET_EMPTY;
}

void hd_setpool_deinit(struct hd_setpool *p)
{
	free(p->items);
	free(p->start);
	free(p->table);
	free(p->memo_key);
	free(p->memo_val);
	*p = (struct hd_setpool){0};
}

uint32_t hd_setpool_single(struct hd_setpool *p, uint32_t x)
{
	return intern(p, &x, 1);
}

static bool grow_memo(struct hd_setpool *p)
{
	size_t size = p->memo_size ? 2 * p->memo_size : 256;
	uint64_t *k = calloc(size, sizeof(*k));
	uint32_t *v = malloc(size * sizeof(*v));
	if (!k || !v) {
		free(k);
		free(v);
		return false;
	}
	for (size_t i = 0; i < p->memo_size; i++) {
		if (!p->memo_key[i])
			continue;
		size_t j = (p->memo_key[i] * 0x9e3779b97f4a7c15ull >> 20) & (size - 1);
		while (k[j])
			j = (j + 1) & (size - 1);
		k[j] = p->memo_key[i];
		v[j] = p->memo_val[i];
	}
	free(p->memo_key);
	free(p->memo_val);
	p->memo_key = k;
	p->memo_val = v;
	p->memo_size = size;
	return true;
}

uint32_t hd_setpool_union(struct hd_setpool *p, uint32_t a, uint32_t b)
{
	if (a == b || b == HD_SET_EMPTY)
		return a;
	if (a == HD_SET_EMPTY)
		return b;
	if (a > b) {
		uint32_t t = a;
		a = b;
		b = t;
	}
	if (2 * (p->memo_used + 1) > p->memo_size && !grow_memo(p))
		return UINT32_MAX;
	uint64_t key = ((uint64_t)a << 32 | b) + 1;
	size_t j = (key * 0x9e3779b97f4a7c15ull >> 20) & (p->memo_size - 1);
	while (p->memo_key[j]) {
		if (p->memo_key[j] == key)
			return p->memo_val[j];
		j = (j + 1) & (p->memo_size - 1);
	}
	size_t na, nb;
	const uint32_t *x = hd_setpool_items(p, a, &na);
	const uint32_t *y = hd_setpool_items(p, b, &nb);
	uint32_t *m = malloc((na + nb) * sizeof(*m));
	if (!m)
		return UINT32_MAX;
	size_t i = 0, k = 0, n = 0;
	while (i < na || k < nb) {
		uint32_t v;
		if (k == nb || (i < na && x[i] < y[k]))
			v = x[i++];
		else if (i == na || y[k] < x[i])
			v = y[k++];
		else
			v = x[i++], k++;
		if (n == p->max_members)
			break;
		m[n++] = v;
	}
	uint32_t id = intern(p, m, n);
	free(m);
	if (id == UINT32_MAX)
		return id;
	p->memo_key[j] = key;
	p->memo_val[j] = id;
	p->memo_used++;
	return id;
}
