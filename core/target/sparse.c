// Never read what was never populated. A process's untouched pages and a
// sparse core's holes read as zeros; reading them costs as much as reading
// data (a 4 GiB block malloc'd and never touched is 4 GiB of zeros through
// /proc/PID/mem, or through a debugger at a fraction of that speed). Views
// and large reads fetch only the data extents and say where the zeros lie,
// so that the scanner and the walkers skip them; the bytes they see are
// the same either way, so no verdict changes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "target_internal.h"
#include "util/vec.h"
#include "util/search.h"

// Windows smaller than a page are read whole: asking costs a system call
// (a pagemap read of one entry costs about what a page of /proc/PID/mem
// does, and a page skipped is a page the target keeps unmapped).
#define SPARSE_MIN 4096u

bool hd_extent_push(struct hd_extent_list *l, uint64_t start, uint64_t end)
{
	if (start >= end)
		return true;
	if (l->n && l->v[l->n - 1].end == start) {
		l->v[l->n - 1].end = end;
		return true;
	}
	struct hd_extent e = {start, end};
	return HD_VEC_PUSH(l->v, l->n, l->cap, e);
}

static void set_problem(struct hd_target *t, struct hd_error *err)
{
	free(t->sparse_problem);
	t->sparse_problem = NULL;
	if (err == &hd_error_no_memory)
		return;
	if (asprintf(&t->sparse_problem, "none: %s", err->message) < 0)
		t->sparse_problem = NULL;
	hd_error_destroy(err);
}

void hd_target_use_pagemap(struct hd_target *t, int pid, int tid)
{
	if (t->sparse_off || t->pagemap)
		return;
	struct hd_error *err = hd_pagemap_open(pid, tid, &t->pagemap);
	if (err)
		set_problem(t, err);
}

struct hd_error *hd_target_set_local_pid(struct hd_target *t, int pid)
{
	if (!t)
		return hd_error_create(HD_ERROR_INVALID,
				       "hd_target_set_local_pid: the target is NULL");
	if (pid <= 0)
		return hd_error_create(HD_ERROR_INVALID,
				       "hd_target_set_local_pid: invalid process id %d", pid);
	if (t->pagemap || t->ops->data_extents || t->sparse_core)
		return hd_error_create(HD_ERROR_INVALID,
			"hd_target_set_local_pid: the %s target already knows its never-populated memory",
			t->kind);
	hd_target_use_pagemap(t, pid, pid);
	t->local_pid = pid;
	// A pid that names another process than the one described (a remote
	// debugger's, reused here) would skip its data: every private
	// anonymous mapping of the process must be one the target has.
	for (size_t i = 0; t->pagemap && t->num_mappings &&
			   i < hd_pagemap_num_anon(t->pagemap); i++) {
		struct hd_extent a = hd_pagemap_anon(t->pagemap, i);
		const struct hd_mapping *m = hd_target_find_mapping(t, a.start);
		if (m && m->end >= a.end)
			continue;
		hd_pagemap_close(t->pagemap);
		t->pagemap = NULL;
		free(t->sparse_problem);
		if (asprintf(&t->sparse_problem,
			     "none: process %d on this machine has memory at 0x%llx-0x%llx that the target does not: not the process described",
			     pid, (unsigned long long)a.start,
			     (unsigned long long)a.end) < 0)
			t->sparse_problem = NULL;
	}
	return NULL;
}

static bool has_source(const struct hd_target *t)
{
	return !t->sparse_off &&
	       (t->pagemap || t->ops->data_extents || t->sparse_core);
}

// Appends [addr, end)'s data extents; all of it without a source.
static struct hd_error *list_extents(struct hd_target *t, uint64_t addr,
				     uint64_t end, struct hd_extent_list *l)
{
	if (t->sparse_off)
		return hd_extent_push(l, addr, end) ? NULL : &hd_error_no_memory;
	if (t->pagemap)
		return hd_pagemap_extents(t->pagemap, addr, end, l);
	if (t->ops->data_extents)
		return t->ops->data_extents(t, addr, end, l);
	if (t->sparse_core)
		return t->sparse_core->ops->data_extents(t->sparse_core, addr,
							 end, l);
	return hd_extent_push(l, addr, end) ? NULL : &hd_error_no_memory;
}

struct hd_error *hd_target_data_extents(struct hd_target *t, uint64_t addr,
					uint64_t len, struct hd_extent **ret,
					size_t *num)
{
	*ret = NULL;
	*num = 0;
	if (addr + len < addr)
		return hd_error_at(HD_ERROR_INVALID, addr,
				   "range of %llu bytes at 0x%llx wraps around",
				   (unsigned long long)len, (unsigned long long)addr);
	struct hd_extent_list l = {0};
	struct hd_error *err = list_extents(t, addr, addr + len, &l);
	if (err) {
		free(l.v);
		return err;
	}
	*ret = l.v;
	*num = l.n;
	return NULL;
}

const char *hd_target_sparse_source(struct hd_target *t)
{
	if (t->sparse_off)
		return "off";
	if (t->pagemap)
		return "pagemap";
	if (t->ops->data_extents)
		return "core holes";
	if (t->sparse_core)
		return t->sparse_core_source;
	return t->sparse_problem ? t->sparse_problem
				 : "none: the target cannot tell populated memory";
}

uint64_t hd_target_unpopulated_bytes(struct hd_target *t)
{
	if (t->have_unpopulated || !has_source(t))
		return t->unpopulated;
	uint64_t total = 0;
	for (size_t i = 0; i < t->num_mappings; i++) {
		const struct hd_mapping *m = &t->mappings[i];
		if (!m->readable)
			continue;
		struct hd_extent_list l = {0};
		struct hd_error *err = list_extents(t, m->start, m->end, &l);
		if (err) {
			hd_error_destroy(err);
			free(l.v);
			return 0; // not cached: maybe memory comes back
		}
		uint64_t data = 0;
		for (size_t k = 0; k < l.n; k++)
			data += l.v[k].end - l.v[k].start;
		total += (m->end - m->start) - data;
		free(l.v);
	}
	t->unpopulated = total;
	t->have_unpopulated = true;
	return total;
}

// The data extents of a large window, or none (l->n == 0 and false) when
// the window is small, has no source or is all data.
static struct hd_error *window_extents(struct hd_target *t, uint64_t addr,
				       size_t len, struct hd_extent_list *l,
				       bool *sparse)
{
	*sparse = false;
	if (len < SPARSE_MIN || !has_source(t))
		return NULL;
	struct hd_error *err = list_extents(t, addr, addr + len, l);
	if (err)
		return err;
	if (l->n == 1 && l->v[0].start == addr && l->v[0].end == addr + len) {
		l->n = 0;
		return NULL;
	}
	*sparse = true;
	return NULL;
}

// Reads the extents of l into buf (the window at addr), which holds zeros
// elsewhere already.
static struct hd_error *read_extents(struct hd_target *t, uint64_t addr,
				     uint8_t *buf, const struct hd_extent_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct hd_error *err = t->ops->read(t, l->v[i].start,
						    buf + (l->v[i].start - addr),
						    l->v[i].end - l->v[i].start);
		if (err) {
			if (err->code == HD_ERROR_FAULT && t->local_pid)
				hd_target_check_lost(t, false);
			return err;
		}
	}
	return NULL;
}

struct hd_error *hd_target_sparse_read(struct hd_target *t, uint64_t addr,
				       void *buf, size_t len, bool *done)
{
	*done = false;
	// A core mapped in memory reads its holes for free: asking would
	// only add system calls to every read.
	if (t->ops->direct)
		return NULL;
	struct hd_extent_list l = {0};
	bool sparse;
	struct hd_error *err = window_extents(t, addr, len, &l, &sparse);
	if (err || !sparse) {
		free(l.v);
		return err;
	}
	// Zeros between the extents, data in them.
	uint64_t p = addr;
	for (size_t i = 0; i < l.n; i++) {
		memset((uint8_t *)buf + (p - addr), 0, l.v[i].start - p);
		p = l.v[i].end;
	}
	memset((uint8_t *)buf + (p - addr), 0, addr + len - p);
	err = read_extents(t, addr, buf, &l);
	free(l.v);
	*done = true;
	return err;
}

struct hd_error *hd_target_view(struct hd_target *t, uint64_t addr, size_t len,
				struct hd_view *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->addr = addr;
	ret->len = len;
	if (len && addr + len < addr)
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "read of %zu bytes at 0x%llx wraps around",
				   len, (unsigned long long)addr);
	// A length from corrupt data (a heap's size) must not become an
	// allocation: the range must be memory the target has. Not for a
	// live process, whose mappings may have grown since they were read.
	struct hd_error *merr = strcmp(hd_target_kind(t), "live") == 0 ? NULL :
		hd_target_check_mapped(t, addr, len);
	if (merr)
		return merr;
	struct hd_extent_list l = {0};
	bool sparse;
	struct hd_error *err = window_extents(t, addr, len, &l, &sparse);
	if (err) {
		free(l.v);
		return err;
	}
	if (t->ops->direct) {
		const uint8_t *p = t->ops->direct(t, addr, len);
		if (p) {
			ret->data = p;
			ret->sparse = sparse;
			ret->extents = l.v;
			ret->num_extents = l.n;
			return NULL;
		}
	}
	if (!sparse) {
		free(l.v);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf)
			return &hd_error_no_memory;
		err = hd_target_read(t, addr, buf, len);
		if (err) {
			free(buf);
			return err;
		}
		ret->data = buf;
		ret->owned = buf;
		return NULL;
	}
	// Anonymous memory is zeros until written: the holes cost no RAM.
	void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED) {
		free(l.v);
		return &hd_error_no_memory;
	}
	err = read_extents(t, addr, buf, &l);
	if (err) {
		munmap(buf, len);
		free(l.v);
		return err;
	}
	ret->data = buf;
	ret->owned = buf;
	ret->owned_map = len;
	ret->sparse = true;
	ret->extents = l.v;
	ret->num_extents = l.n;
	return NULL;
}

void hd_view_deinit(struct hd_view *view)
{
	if (view->owned_map)
		munmap(view->owned, view->owned_map);
	else
		free(view->owned);
	free(view->extents);
	view->owned = NULL;
	view->owned_map = 0;
	view->extents = NULL;
	view->num_extents = 0;
	view->sparse = false;
	view->data = NULL;
}

bool hd_view_next_data(const struct hd_view *v, uint64_t addr, uint64_t end,
		       uint64_t *lo, uint64_t *hi)
{
	if (addr >= end)
		return false;
	if (!v->sparse) {
		*lo = addr;
		*hi = end;
		return true;
	}
	size_t a = HD_FIRST_ENDING_AFTER(v->extents, v->num_extents, end, addr);
	if (a == v->num_extents || v->extents[a].start >= end)
		return false;
	*lo = v->extents[a].start > addr ? v->extents[a].start : addr;
	*hi = v->extents[a].end < end ? v->extents[a].end : end;
	return true;
}
