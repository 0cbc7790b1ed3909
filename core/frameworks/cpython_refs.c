// References in the cpython framework module: what a list, tuple, dict,
// set or class instance refers to and owns, the objects in it and the
// blocks it keeps its items in (3.11 layouts).
#include <inttypes.h>
#include <stdlib.h>

#include "frameworks/cpython_internal.h"

// Upper bound for walks over target memory: a corrupted count must not
// make the module read (or loop over) gigabytes.
#define MAX_ITEMS (1u << 26)        // items of one list, tuple, dict or set

static struct hd_error *refs_push(struct refs *r, uint64_t p)
{
	if (!p)
		return NULL;
	if (r->num_objs == r->cap_objs) {
		size_t cap = r->cap_objs ? 2 * r->cap_objs : 64;
		uint64_t *n = realloc(r->objs, cap * sizeof(*n));
		if (!n)
			return &hd_error_no_memory;
		r->objs = n;
		r->cap_objs = cap;
	}
	r->objs[r->num_objs++] = p;
	return NULL;
}

void cpy_refs_aux(struct refs *r, uint64_t addr, const char *name)
{
	if (addr && r->num_aux < 2) {
		r->aux[r->num_aux] = addr;
		r->aux_name[r->num_aux] = name;
		r->num_aux++;
	}
}

// n pointers at addr, read in pieces.
static struct hd_error *push_array(struct hd_fw *fw, struct refs *r,
				   uint64_t addr, uint64_t n)
{
	uint64_t buf[256];
	for (uint64_t i = 0; i < n;) {
		uint64_t k = n - i < 256 ? n - i : 256;
		if (!cpy_read_ok(fw, addr + 8 * i, buf, k * 8)) {
			hd_fw_warn(fw, addr + 8 * i, "item array unreadable");
			return NULL;
		}
		for (uint64_t j = 0; j < k; j++) {
			struct hd_error *err = refs_push(r, buf[j]);
			if (err)
				return err;
		}
		i += k;
	}
	return NULL;
}

static struct hd_error *list_refs(struct hd_fw *fw, const struct pyobj *o,
				  struct refs *r)
{
	uint64_t n, items, allocated;
	if (!cpy_read_u64(fw, o->addr + HD_PY311_OB_SIZE, &n) ||
	    !cpy_read_u64(fw, o->addr + HD_PY311_LIST_ITEM, &items) ||
	    !cpy_read_u64(fw, o->addr + HD_PY311_LIST_ALLOCATED, &allocated))
		return NULL;
	if (n > allocated || allocated > MAX_ITEMS) {
		hd_fw_warn(fw, o->addr, "list of %" PRId64 " items in %" PRId64
			   " slots: not followed", (int64_t)n,
			   (int64_t)allocated);
		return NULL;
	}
	cpy_refs_aux(r, items, "list items");
	return push_array(fw, r, items, n);
}

static struct hd_error *tuple_refs(struct hd_fw *fw, const struct pyobj *o,
				   struct refs *r)
{
	uint64_t n;
	if (!cpy_read_u64(fw, o->addr + HD_PY311_OB_SIZE, &n))
		return NULL;
	uint64_t room = o->block + o->size - (o->addr + HD_PY311_TUPLE_ITEM);
	if (n > room / 8) {
		hd_fw_warn(fw, o->addr, "tuple of %" PRId64 " items does not "
			   "fit its block", (int64_t)n);
		return NULL;
	}
	return push_array(fw, r, o->addr + HD_PY311_TUPLE_ITEM, n);
}

// Keys and values of a dict (3.11: a keys object with an index table then
// dk_nentries entries; a split dict keeps its values apart, in ma_values).
// keys may be NULL (values only). A split dict's keys object is its
// class's, so only its values block is its own.
struct hd_error *cpy_dict_entries(struct hd_fw *fw, uint64_t dict,
				  struct refs *keys, struct refs *values)
{
	uint64_t k, vals;
	if (!cpy_read_u64(fw, dict + HD_PY311_DICT_KEYS, &k) ||
	    !cpy_read_u64(fw, dict + HD_PY311_DICT_VALUES, &vals))
		return NULL;
	uint8_t h[HD_PY311_DK_INDICES];
	if (!cpy_read_ok(fw, k, h, sizeof(h))) {
		hd_fw_warn(fw, dict, "dict keys at 0x%" PRIx64 " unreadable", k);
		return NULL;
	}
	unsigned log2_size = h[HD_PY311_DK_LOG2_SIZE];
	unsigned log2_index = h[HD_PY311_DK_LOG2_INDEX_BYTES];
	uint64_t nentries = cpy_ld64(h + HD_PY311_DK_NENTRIES);
	if (log2_size > 30 || log2_index > 33 || nentries > MAX_ITEMS ||
	    nentries > (1ull << log2_size)) {
		hd_fw_warn(fw, dict, "dict keys at 0x%" PRIx64 " do not look "
			   "like 3.11's", k);
		return NULL;
	}
	bool general = h[HD_PY311_DK_KIND] == HD_PY311_DICT_KEYS_GENERAL;
	uint64_t esz = general ? HD_PY311_SIZEOF_DICT_KEY_ENTRY :
				 HD_PY311_SIZEOF_DICT_UNICODE_ENTRY;
	uint64_t koff = general ? HD_PY311_DKE_KEY : HD_PY311_DKU_KEY;
	uint64_t voff = general ? HD_PY311_DKE_VALUE : HD_PY311_DKU_VALUE;
	uint64_t entries = k + HD_PY311_DK_INDICES + (1ull << log2_index);
	if (vals) {
		cpy_refs_aux(values, vals, "dict values");
	} else {
		cpy_refs_aux(values, k, "dict keys");
	}
	for (uint64_t i = 0; i < nentries; i++) {
		uint64_t key, value;
		if (!cpy_read_u64(fw, entries + i * esz + koff, &key)) {
			hd_fw_warn(fw, dict, "dict entries unreadable");
			return NULL;
		}
		if (!key)
			continue;
		if (vals) {
			if (!cpy_read_u64(fw, vals + 8 * i, &value))
				return NULL;
		} else if (!cpy_read_u64(fw, entries + i * esz + voff,
					 &value)) {
			return NULL;
		}
		if (!value)
			continue;
		struct hd_error *err = keys ? refs_push(keys, key) : NULL;
		if (!err)
			err = refs_push(values, value);
		if (err)
			return err;
	}
	return NULL;
}

static struct hd_error *set_refs(struct hd_fw *fw, const struct pyobj *o,
				 struct refs *r)
{
	uint64_t mask, table;
	if (!cpy_read_u64(fw, o->addr + HD_PY311_SET_MASK, &mask) ||
	    !cpy_read_u64(fw, o->addr + HD_PY311_SET_TABLE, &table))
		return NULL;
	if (mask >= MAX_ITEMS || ((mask + 1) & mask)) {
		hd_fw_warn(fw, o->addr, "set mask %" PRIu64 " is not 2^n - 1",
			   mask);
		return NULL;
	}
	if (table != o->addr + HD_PY311_SET_SMALLTABLE)
		cpy_refs_aux(r, table, "set table");
	for (uint64_t i = 0; i <= mask; i++) {
		uint64_t key;
		if (!cpy_read_u64(fw, table + i * HD_PY311_SIZEOF_SETENTRY +
					      HD_PY311_SETENTRY_KEY, &key)) {
			hd_fw_warn(fw, o->addr, "set table unreadable");
			return NULL;
		}
		// Deleted entries hold the shared dummy key: it is an object
		// whose refcount is never 1, so it is not taken as owned.
		struct hd_error *err = refs_push(r, key);
		if (err)
			return err;
	}
	return NULL;
}

// A managed dict's values (new_values() in 3.11): a block of its own, a
// prefix of prefix_size bytes, then the value slots. The prefix's last
// byte is prefix_size, the one before it the number of values set, and
// before that, backwards, the slot index of each value in insertion
// order. Only those slots are read: the rest of the block may hold stale
// pointers.
static struct hd_error *values_refs(struct hd_fw *fw, const struct pyobj *o,
				    uint64_t values, struct refs *r)
{
	uint32_t v = hd_fw_vertex_at(fw, values);
	uint64_t start, size;
	uint8_t tail[2];
	if (v == HD_DOM_NONE || !cpy_vertex_used_block(fw, v, &start, &size) ||
	    !cpy_read_ok(fw, values - 2, tail, sizeof(tail)))
		goto bad;
	uint8_t count = tail[0], prefix = tail[1];
	if (prefix < 8 || prefix % 8 || values - prefix != start ||
	    count + 2 > prefix || values >= start + size)
		goto bad;
	uint64_t slots = (start + size - values) / 8;
	uint8_t order[256];
	if (count && !cpy_read_ok(fw, values - 2 - count, order, count))
		goto bad;
	cpy_refs_aux(r, values, "instance values");
	for (unsigned k = 0; k < count; k++) {
		// order[count - 1 - k] is the k-th value's slot index.
		uint8_t idx = order[count - 1 - k];
		uint64_t p;
		if (idx >= slots)
			goto bad;
		if (!cpy_read_u64(fw, values + 8 * (uint64_t)idx, &p))
			goto bad;
		struct hd_error *err = refs_push(r, p);
		if (err)
			return err;
	}
	return NULL;
bad:
	hd_fw_warn(fw, o->addr, "instance values at 0x%" PRIx64 " do not "
		   "look like 3.11's", values);
	return NULL;
}

// An instance of a class: its managed dict's values (3.11 keeps the
// pointer to them 4 words before the object, the materialized dict 3
// words before), or its dict at tp_dictoffset, and its slots.
static struct hd_error *instance_refs(struct hd_fw *fw, const struct pyobj *o,
				      struct refs *r)
{
	const struct pytype *t = o->type;
	struct hd_error *err;
	if (t->flags & HD_PY311_TPFLAGS_MANAGED_DICT) {
		uint64_t values, dict;
		if (!cpy_read_u64(fw, o->addr - 32, &values) ||
		    !cpy_read_u64(fw, o->addr - 24, &dict))
			return NULL;
		if ((err = refs_push(r, dict)))
			return err;
		if (values && (err = values_refs(fw, o, values, r)))
			return err;
	} else if (t->dictoffset > 0 &&
		   (uint64_t)t->dictoffset + 8 <= o->size) {
		uint64_t dict;
		if (cpy_read_u64(fw, o->addr + t->dictoffset, &dict) &&
		    (err = refs_push(r, dict)))
			return err;
	}
	// Slots (__slots__ members) lie between the object header and
	// tp_basicsize; other words there are not pointers to objects, and
	// the caller checks every candidate is an object.
	for (uint64_t off = 16; off + 8 <= t->basicsize; off += 8) {
		if ((int64_t)off == t->dictoffset ||
		    (int64_t)off == t->weaklistoffset)
			continue;
		uint64_t p;
		if (cpy_read_u64(fw, o->addr + off, &p) &&
		    (err = refs_push(r, p)))
			return err;
	}
	return NULL;
}

struct hd_error *cpy_object_refs(struct hd_fw *fw, const struct pyobj *o,
				 struct refs *r)
{
	r->num_objs = 0;
	r->num_aux = 0;
	switch (o->type->kind) {
	case K_LIST:
		return list_refs(fw, o, r);
	case K_TUPLE:
		return tuple_refs(fw, o, r);
	case K_DICT:
		return cpy_dict_entries(fw, o->addr, r, r);
	case K_SET:
		return set_refs(fw, o, r);
	case K_INSTANCE:
		return instance_refs(fw, o, r);
	default:
		return NULL;
	}
}
