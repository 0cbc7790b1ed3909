// Interned small sets of uint32 (sorted, deduplicated), for the joint
// holders: millions of blocks share a handful of distinct root sets, so
// each set is stored once and named by an id, and unions are memoised.
#ifndef HD_DOM_SETPOOL_H
#define HD_DOM_SETPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Id 0 is the empty set.
#define HD_SET_EMPTY 0u

struct hd_setpool {
	uint32_t *items;   // every set's members, back to back
	size_t num_items, cap_items;
	uint64_t *start;   // set id -> offset in items; start[id + 1] ends it
	uint32_t num_sets, cap_sets;
	uint32_t *table;   // open addressing: set id + 1, 0 for empty slots
	size_t table_size; // a power of two
	uint64_t *memo_key; // union memo: (a << 32 | b) + 1, 0 for empty
	uint32_t *memo_val;
	size_t memo_size;
	size_t memo_used;
	// Sets stop growing past this many members: the union then keeps the
	// first max_members of them.
	size_t max_members;
};

bool hd_setpool_init(struct hd_setpool *p, size_t max_members);
void hd_setpool_deinit(struct hd_setpool *p);
// The id of the set {x}; UINT32_MAX when out of memory.
uint32_t hd_setpool_single(struct hd_setpool *p, uint32_t x);
// The id of a ∪ b; UINT32_MAX when out of memory.
uint32_t hd_setpool_union(struct hd_setpool *p, uint32_t a, uint32_t b);
static inline const uint32_t *hd_setpool_items(const struct hd_setpool *p,
					       uint32_t id, size_t *n)
{
	*n = (size_t)(p->start[id + 1] - p->start[id]);
	// While only the empty set exists items is NULL, and NULL + 0 is
	// undefined in C (UBSan: fuzz finding 11).
	return p->items ? p->items + p->start[id] : NULL;
}

#endif
