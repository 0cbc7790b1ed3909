// Targets described by an embedding program (a debugger front-end): memory
// comes from its read function, the address space from what it adds.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"

struct callback_target {
	hd_read_fn read;
	void *arg;
};

static struct hd_error *callback_read(struct hd_target *t, uint64_t addr,
				      void *buf, size_t len)
{
	struct callback_target *ct = t->impl;
	return ct->read(ct->arg, addr, buf, len);
}

static void callback_destroy(struct hd_target *t)
{
	free(t->impl);
	t->impl = NULL;
}

static const struct hd_target_ops callback_ops = {
	.read = callback_read,
	.destroy = callback_destroy,
};

struct hd_error *hd_target_create_callback(hd_read_fn read, void *arg,
					   struct hd_target **ret)
{
	if (!read)
		return hd_error_create(HD_ERROR_INVALID,
			"hd_target_create_callback: a read function is required");
	if (!ret)
		return hd_error_create(HD_ERROR_INVALID,
			"hd_target_create_callback: ret is NULL");
	struct callback_target *ct = malloc(sizeof(*ct));
	if (!ct)
		return &hd_error_no_memory;
	ct->read = read;
	ct->arg = arg;
	struct hd_target *t;
	struct hd_error *err =
		hd_target_alloc("callback", "callback", &callback_ops, NULL, &t);
	if (err) {
		free(ct);
		return err;
	}
	t->impl = ct;
	*ret = t;
	return NULL;
}

// Core and live targets describe themselves; letting callers add to them
// would silently mix two address spaces.
static struct hd_error *check_callback(struct hd_target *t, const void *arg,
				       const char *fn)
{
	if (!t || !arg)
		return hd_error_create(HD_ERROR_INVALID, "%s: %s is NULL", fn,
				       t ? "the description" : "the target");
	if (t->ops != &callback_ops)
		return hd_error_create(HD_ERROR_INVALID,
			"%s: only a callback target can be described this way, not a %s target",
			fn, t->kind);
	return NULL;
}

struct hd_error *hd_target_add_mapping(struct hd_target *t,
				       const struct hd_mapping *m)
{
	struct hd_error *err = check_callback(t, m, __func__);
	if (err)
		return err;
	if (m->start >= m->end)
		return hd_error_at(HD_ERROR_INVALID, m->start,
			"mapping 0x%" PRIx64 "-0x%" PRIx64 " is empty or reversed",
			m->start, m->end);
	// Insert in place rather than append and sort: front-ends add
	// hundreds of mappings, mostly in order, one call at a time.
	size_t lo = 0, hi = t->num_mappings;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->mappings[mid].start <= m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	// Lookups bisect on the assumption that mappings are disjoint.
	const struct hd_mapping *clash = NULL;
	if (lo > 0 && t->mappings[lo - 1].end > m->start)
		clash = &t->mappings[lo - 1];
	else if (lo < t->num_mappings && m->end > t->mappings[lo].start)
		clash = &t->mappings[lo];
	if (clash)
		return hd_error_at(HD_ERROR_INVALID, m->start,
			"mapping 0x%" PRIx64 "-0x%" PRIx64 " overlaps mapping 0x%" PRIx64 "-0x%" PRIx64,
			m->start, m->end, clash->start, clash->end);
	err = hd_target_push_mapping(t, m);
	if (err)
		return err;
	struct hd_mapping added = t->mappings[t->num_mappings - 1];
	memmove(&t->mappings[lo + 1], &t->mappings[lo],
		(t->num_mappings - 1 - lo) * sizeof(*t->mappings));
	t->mappings[lo] = added;
	return NULL;
}

struct hd_error *hd_target_add_thread(struct hd_target *t,
				      const struct hd_thread *th)
{
	if (t && th && t->frontend_threads)
		return hd_target_push_thread(t, th);
	struct hd_error *err = check_callback(t, th, __func__);
	if (err)
		return err;
	return hd_target_push_thread(t, th);
}

struct hd_error *hd_target_add_module(struct hd_target *t,
				      const struct hd_module *m)
{
	struct hd_error *err = check_callback(t, m, __func__);
	if (err)
		return err;
	if (!m->name)
		return hd_error_create(HD_ERROR_INVALID,
				       "%s: a module needs a name", __func__);
	if (m->start >= m->end)
		return hd_error_at(HD_ERROR_INVALID, m->start,
			"module %s: range 0x%" PRIx64 "-0x%" PRIx64 " is empty or reversed",
			m->name, m->start, m->end);
	if (m->build_id_len > sizeof(m->build_id))
		return hd_error_create(HD_ERROR_INVALID,
			"module %s: build-id of %zu bytes, at most %zu are supported",
			m->name, m->build_id_len, sizeof(m->build_id));
	// The debugger runs on this machine, so the name it gives is a file
	// we can open (heapdom.h: "file may be NULL (then name is used)").
	struct hd_module copy = *m;
	if (!copy.file)
		copy.file = copy.name;
	return hd_target_push_module(t, &copy);
}
