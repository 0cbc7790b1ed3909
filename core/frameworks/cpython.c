// The cpython framework module: CPython 3.11's pymalloc as a sub-allocator,
// Python objects named by their type, and the __main__ module's globals as
// semantic nodes.
//
// CPython is usually stripped and without DWARF, so everything here comes
// from exported symbols (Py_Version, _PyRuntime, PyType_Type, PySet_Type,
// PyFrozenSet_Type, PyModule_Type) and from the 3.11 layouts in
// cpython_layout.h.
//
// Choices worth knowing:
// - pymalloc's arena table is a static of obmalloc.c in 3.11, so arenas are
//   found by scanning anonymous writable memory for pool headers that
//   validate strictly; an arena's region starts at its first pool (up to
//   a pool of its mmap before that stays outside).
// - Ownership of a global's data is Python's own: what its container
//   refers to with a refcount of 1 (and so on down) is assigned to the
//   global's node. The pointer scan alone cannot tell: every GC head
//   links to its neighbours in the collector's lists, so unassigned GC
//   objects hang off the interpreter state rather than their owners.
// - A GC head's 16 bytes are marked framework (the collector's links);
//   the rest of an object, its refcount and type pointer included, are
//   the application's. Pool headers, free slots and dead objects on the
//   types' free lists are the framework's, under their own nodes.
//
// This file: detect, the reads the other files share, the order of the
// analyze steps and the ops struct; cpython_internal.h lists the rest.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameworks/cpython_internal.h"

// ------------------------------------------------------------------- reads

bool cpy_read_ok(struct hd_fw *fw, uint64_t addr, void *buf, size_t len)
{
	struct hd_error *err = hd_fw_read(fw, addr, buf, len);
	bool ok = !err;
	hd_error_destroy(err);
	return ok;
}

bool cpy_read_u64(struct hd_fw *fw, uint64_t addr, uint64_t *ret)
{
	return cpy_read_ok(fw, addr, ret, sizeof(*ret));
}

// ------------------------------------------------------------------ detect

// "python3.11" of "/usr/bin/python3.11" or "libpython3.11" of
// "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"; false for other names.
static bool python_module_hint(const char *path, char *hint, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *p = base;
	if (strncmp(p, "lib", 3) == 0)
		p += 3;
	if (strncmp(p, "python3.", 8) != 0)
		return false;
	p += 8;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	size_t n = (size_t)(p - base);
	if (n + 1 > len)
		return false;
	memcpy(hint, base, n);
	hint[n] = '\0';
	return true;
}

static bool symbol(struct hd_fw *fw, const char *hint, const char *name,
		   uint64_t *addr)
{
	uint64_t size;
	struct hd_error *err = hd_fw_symbol(fw, hint, name, addr, &size);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

// Checks one python module: its version and the symbols the module needs.
static struct hd_error *detect_module(struct hd_fw *fw, const char *hint,
				      bool *detected, bool *has_version)
{
	uint64_t addr, version;
	if (!symbol(fw, hint, "Py_Version", &addr))
		return NULL;
	*has_version = true;
	if (!cpy_read_u64(fw, addr, &version)) {
		hd_fw_note(fw, "%s: Py_Version at 0x%" PRIx64 " is not readable",
			   hint, addr);
		return NULL;
	}
	unsigned major = (version >> 24) & 0xff, minor = (version >> 16) & 0xff,
		 micro = (version >> 8) & 0xff;
	if ((version & 0xffff0000ul) != HD_PY311_VERSION_HEX_3_11) {
		hd_fw_note(fw, "%s: CPython %u.%u.%u found: not supported (the "
			   "module knows the layouts of 3.11)", hint, major,
			   minor, micro);
		return NULL;
	}
	uint64_t runtime, type_type;
	if (!symbol(fw, hint, "_PyRuntime", &runtime) ||
	    !symbol(fw, hint, "PyType_Type", &type_type)) {
		hd_fw_note(fw, "%s: CPython %u.%u.%u without the _PyRuntime or "
			   "PyType_Type symbol", hint, major, minor, micro);
		return NULL;
	}
	struct cpy_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return &hd_error_no_memory;
	snprintf(p->hint, sizeof(p->hint), "%s", hint);
	p->version = version;
	p->runtime = runtime;
	p->type_type = type_type;
	// Sets have no tp_flags bit; without these symbols sets are only named.
	symbol(fw, hint, "PySet_Type", &p->set_type);
	symbol(fw, hint, "PyFrozenSet_Type", &p->frozenset_type);
	symbol(fw, hint, "PyModule_Type", &p->module_type);
	void **slot = hd_fw_private(fw);
	free(*slot);
	*slot = p;
	hd_fw_note(fw, "CPython %u.%u.%u (%s)", major, minor, micro, hint);
	*detected = true;
	return NULL;
}

static struct hd_error *cpy_detect(struct hd_fw *fw, bool *detected)
{
	*detected = false;
	struct hd_target *t = hd_fw_target(fw);
	size_t n = hd_target_num_modules(t);
	// A python executable may only be linked with libpython, which holds
	// the interpreter: every python module is tried, and a missing
	// Py_Version only means "before 3.11" when no module has it.
	char names[256] = "";
	size_t seen = 0;
	bool has_version = false;
	for (size_t i = 0; i < n && !*detected; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		char hint[64];
		if (!python_module_hint(m->name, hint, sizeof(hint)) &&
		    !(m->file && python_module_hint(m->file, hint, sizeof(hint))))
			continue;
		size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s%s",
			 seen++ ? ", " : "", hint);
		struct hd_error *err = detect_module(fw, hint, detected,
						     &has_version);
		if (err)
			return err;
	}
	if (!seen)
		hd_fw_note(fw, "no python3.N or libpython3.N module mapped");
	else if (!has_version)
		hd_fw_note(fw, "%s: no Py_Version symbol: CPython before 3.11, "
			   "not supported (the module knows 3.11)", names);
	return NULL;
}

// ----------------------------------------------------------------- analyze

// The interpreter's node and pymalloc's under it, then every block named
// (cpython_naming.c), then the globals of __main__ (cpython_globals.c).
static struct hd_error *cpy_analyze(struct hd_fw *fw)
{
	struct analysis a = {.fw = fw, .freelists = HD_FW_NO_NODE};
	struct hd_error *err = hd_fw_node(fw, HD_FW_NO_NODE, HD_DOM_NONE,
					  "CPython", "interpreter",
					  HD_OWNER_FRAMEWORK, &a.cpython);
	if (!err)
		err = hd_fw_node(fw, a.cpython, HD_DOM_NONE, "pymalloc",
				 "allocator", HD_OWNER_FRAMEWORK, &a.pymalloc);
	if (!err)
		err = cpy_name_blocks(&a);
	if (!err)
		err = cpy_main_globals(&a);
	if (!err) {
		size_t valid = 0;
		for (size_t i = 0; i < a.types.cap; i++)
			valid += a.types.slots[i].valid;
		hd_fw_note(fw, "%" PRIu64 " objects of %zu types named (%" PRIu64
			   " with a GC head, marked framework), %" PRIu64
			   " item arrays and tables, %" PRIu64 " dead objects "
			   "on free lists; %zu globals of __main__",
			   a.objects, valid, a.gc_objects, a.aux_named, a.dead,
			   a.globals);
	}
	cpy_type_cache_deinit(&a.types);
	return err;
}

const struct hd_framework hd_framework_cpython = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "cpython",
	.version = "1.0",
	.description = "CPython 3.11: pymalloc arenas, objects named by type, "
		       "__main__ globals",
	.detect = cpy_detect,
	.blocks = cpy_blocks,
	.analyze = cpy_analyze,
};
