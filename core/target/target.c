// Backend-independent part of a target: the address-space tables and
// the read entry points.
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"
#include "util/vec.h"

struct hd_error *hd_target_alloc(const char *kind, const char *name,
				 const struct hd_target_ops *ops,
				 const struct hd_target_options *opts,
				 struct hd_target **ret)
{
	struct hd_target *t = calloc(1, sizeof(*t));
	if (!t)
		return &hd_error_no_memory;
	t->kind = kind;
	t->ops = ops;
	t->name = strdup(name);
	if (opts && opts->sysroot)
		t->sysroot = strdup(opts->sysroot);
	if (opts && opts->exe)
		t->exe_override = strdup(opts->exe);
	if (!t->name || (opts && opts->sysroot && !t->sysroot) ||
	    (opts && opts->exe && !t->exe_override)) {
		hd_target_destroy(t);
		return &hd_error_no_memory;
	}
	*ret = t;
	return NULL;
}

struct hd_error *hd_target_push_mapping(struct hd_target *t,
					const struct hd_mapping *m)
{
	struct hd_mapping copy = *m;
	if (m->path && !(copy.path = strdup(m->path)))
		return &hd_error_no_memory;
	if (!HD_VEC_PUSH(t->mappings, t->num_mappings, t->cap_mappings, copy)) {
		free(copy.path);
		return &hd_error_no_memory;
	}
	return NULL;
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct hd_mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

void hd_target_sort_mappings(struct hd_target *t)
{
	qsort(t->mappings, t->num_mappings, sizeof(*t->mappings), mapping_cmp);
}

struct hd_error *hd_target_push_thread(struct hd_target *t,
				       const struct hd_thread *th)
{
	if (!HD_VEC_PUSH(t->threads, t->num_threads, t->cap_threads, *th))
		return &hd_error_no_memory;
	return NULL;
}

char *hd_target_resolve_path(const struct hd_target *t, const char *path)
{
	if (!t->sysroot || path[0] != '/')
		return strdup(path);
	char *out;
	if (asprintf(&out, "%s%s", t->sysroot, path) < 0)
		return NULL;
	return out;
}

void hd_target_destroy(struct hd_target *t)
{
	if (!t)
		return;
	if (t->ops && t->ops->destroy)
		t->ops->destroy(t);
	for (size_t i = 0; i < t->num_mappings; i++)
		free(t->mappings[i].path);
	free(t->mappings);
	free(t->threads);
	for (size_t i = 0; i < t->num_frames; i++) {
		free(t->frames[i].name);
		free(t->frames[i].type_name);
	}
	free(t->frames);
	for (size_t i = 0; i < t->num_modules; i++) {
		free(t->modules[i].name);
		free(t->modules[i].file);
	}
	free(t->modules);
	free(t->auxv);
	free(t->name);
	free(t->sysroot);
	free(t->exe_override);
	free(t);
}

struct hd_error *hd_target_set_name(struct hd_target *t, const char *name)
{
	char *copy = strdup(name);
	if (!copy)
		return &hd_error_no_memory;
	free(t->name);
	t->name = copy;
	return NULL;
}

const char *hd_target_kind(const struct hd_target *t) { return t->kind; }
const char *hd_target_name(const struct hd_target *t) { return t->name; }

struct hd_error *hd_target_read(struct hd_target *t, uint64_t addr, void *buf,
				size_t len)
{
	if (len == 0)
		return NULL;
	if (addr + len < addr)
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "read of %zu bytes at 0x%llx wraps around",
				   len, (unsigned long long)addr);
	return t->ops->read(t, addr, buf, len);
}

struct hd_error *hd_target_read_u64(struct hd_target *t, uint64_t addr,
				    uint64_t *ret)
{
	return hd_target_read(t, addr, ret, sizeof(*ret));
}

size_t hd_target_num_mappings(const struct hd_target *t)
{
	return t->num_mappings;
}

const struct hd_mapping *hd_target_mapping(const struct hd_target *t,
					   size_t i)
{
	return i < t->num_mappings ? &t->mappings[i] : NULL;
}

const struct hd_mapping *hd_target_find_mapping(const struct hd_target *t,
						uint64_t addr)
{
	size_t lo = 0, hi = t->num_mappings;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->mappings[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->num_mappings && t->mappings[lo].start <= addr &&
	    addr < t->mappings[lo].end)
		return &t->mappings[lo];
	return NULL;
}

size_t hd_target_num_threads(const struct hd_target *t)
{
	return t->num_threads;
}

const struct hd_thread *hd_target_thread(const struct hd_target *t, size_t i)
{
	return i < t->num_threads ? &t->threads[i] : NULL;
}

struct hd_error *hd_target_add_frame(struct hd_target *t,
				     const struct hd_frame *f)
{
	if (f->caller_sp < f->sp)
		return hd_error_create(HD_ERROR_INVALID,
				       "frame #%u of thread %d: caller's stack pointer 0x%llx lies below its own 0x%llx",
				       f->level, f->tid,
				       (unsigned long long)f->caller_sp,
				       (unsigned long long)f->sp);
	struct hd_frame copy = *f;
	copy.name = strdup(f->name ? f->name : "?");
	copy.type_name = f->type_name ? strdup(f->type_name) : NULL;
	if (!copy.name || (f->type_name && !copy.type_name) ||
	    !HD_VEC_PUSH(t->frames, t->num_frames, t->cap_frames, copy)) {
		free(copy.name);
		free(copy.type_name);
		return &hd_error_no_memory;
	}
	return NULL;
}

size_t hd_target_num_frames(const struct hd_target *t)
{
	return t->num_frames;
}

const struct hd_frame *hd_target_frame(const struct hd_target *t, size_t i)
{
	return i < t->num_frames ? &t->frames[i] : NULL;
}

size_t hd_target_num_modules(const struct hd_target *t)
{
	return t->num_modules;
}

const struct hd_module *hd_target_module(const struct hd_target *t, size_t i)
{
	return i < t->num_modules ? &t->modules[i] : NULL;
}

const struct hd_module *hd_target_find_module(const struct hd_target *t,
					      uint64_t addr)
{
	for (size_t i = 0; i < t->num_modules; i++) {
		if (t->modules[i].start <= addr && addr < t->modules[i].end)
			return &t->modules[i];
	}
	return NULL;
}

bool hd_target_auxv(const struct hd_target *t, uint64_t type, uint64_t *ret)
{
	for (size_t i = 0; i + 1 < t->auxv_len; i += 2) {
		if (t->auxv[i] == type) {
			*ret = t->auxv[i + 1];
			return true;
		}
	}
	return false;
}

struct hd_error *hd_target_view(struct hd_target *t, uint64_t addr, size_t len,
				struct hd_view *ret)
{
	ret->addr = addr;
	ret->len = len;
	ret->owned = NULL;
	if (t->ops->direct) {
		const uint8_t *p = t->ops->direct(t, addr, len);
		if (p) {
			ret->data = p;
			return NULL;
		}
	}
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return &hd_error_no_memory;
	struct hd_error *err = hd_target_read(t, addr, buf, len);
	if (err) {
		free(buf);
		return err;
	}
	ret->data = buf;
	ret->owned = buf;
	return NULL;
}

void hd_view_deinit(struct hd_view *view)
{
	free(view->owned);
	view->owned = NULL;
	view->data = NULL;
}

#include "target/live.h"

void hd_live_release_all(void)
{
	hd_live_detach_all_for_signal();
}
