// Backend-independent part of a target: the address-space tables and
// the read entry points.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"
#include "util/vec.h"
#include "util/search.h"
#include "util/sort.h"

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
	// For comparison runs: every byte read, as before sparse.c.
	const char *sparse = getenv("HEAPDOM_SPARSE");
	t->sparse_off = sparse && strcmp(sparse, "0") == 0;
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
	hd_qsort(t->mappings, t->num_mappings, sizeof(*t->mappings), mapping_cmp);
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
	hd_pagemap_close(t->pagemap);
	hd_target_destroy(t->sparse_core);
	free(t->sparse_core_source);
	free(t->sparse_problem);
	free(t->lost);
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
	for (size_t i = 0; i < t->num_issues; i++) {
		free(t->issues[i].name);
		free(t->issues[i].file);
	}
	free(t->issues);
	for (size_t i = 0; i < t->num_warnings; i++)
		free(t->warnings[i]);
	free(t->warnings);
	for (size_t i = 0; i < t->num_notes; i++)
		free(t->notes[i]);
	free(t->notes);
	free(t->auxv);
	free(t->name);
	free(t->sysroot);
	free(t->exe_override);
	free(t->recovery_problem);
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
	bool done;
	struct hd_error *err = hd_target_sparse_read(t, addr, buf, len, &done);
	if (!done && !err)
		err = t->ops->read(t, addr, buf, len);
	if (err && err->code == HD_ERROR_FAULT && t->local_pid && !t->lost &&
	    !t->ops->direct)
		hd_target_check_lost(t, false);
	return err;
}

void hd_target_release(struct hd_target *t, uint64_t addr, uint64_t len)
{
	if (t->ops->release && len && addr + len > addr)
		t->ops->release(t, addr, len);
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
	size_t lo = HD_FIRST_ENDING_AFTER(t->mappings, t->num_mappings, end, addr);
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

struct hd_error *hd_target_check_mapped(const struct hd_target *t,
					uint64_t addr, size_t len)
{
	if (!t->num_mappings || !len)
		return NULL;
	uint64_t end = addr + len;
	if (end < addr)
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "range of %zu bytes at 0x%llx wraps around",
				   len, (unsigned long long)addr);
	for (uint64_t p = addr; p < end;) {
		const struct hd_mapping *m = hd_target_find_mapping(t, p);
		if (!m)
			return hd_error_at(HD_ERROR_FAULT, p,
					   "0x%llx is not mapped (in 0x%llx-0x%llx)",
					   (unsigned long long)p, (unsigned long long)addr,
					   (unsigned long long)end);
		p = m->end;
	}
	return NULL;
}

#include "target/live.h"

void hd_live_release_all(void)
{
	hd_live_detach_all_for_signal();
}

struct hd_error *hd_target_push_issue(struct hd_target *t, const char *name,
				      const char *file, bool is_exe,
				      bool mismatch, const char *target_id,
				      const char *file_id)
{
	struct hd_module_issue is = {.is_exe = is_exe, .mismatch = mismatch};
	is.name = strdup(name);
	is.file = file ? strdup(file) : NULL;
	snprintf(is.target_id, sizeof(is.target_id), "%s", target_id ? target_id : "");
	snprintf(is.file_id, sizeof(is.file_id), "%s", file_id ? file_id : "");
	if (!is.name || (file && !is.file) ||
	    !HD_VEC_PUSH(t->issues, t->num_issues, t->cap_issues, is)) {
		free(is.name);
		free(is.file);
		return &hd_error_no_memory;
	}
	return NULL;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

// A module's issue is void once a front-end gave it a file; an unverified
// file's stands while the file is used.
static bool issue_open(const struct hd_target *t, const struct hd_module_issue *is)
{
	for (size_t i = 0; i < t->num_modules; i++)
		if (strcmp(t->modules[i].name, is->name) == 0)
			return is->unverified ? t->modules[i].file != NULL
					      : !t->modules[i].file;
	return !is->unverified;
}

enum issue_kind { ISSUE_MISSING, ISSUE_MISMATCH, ISSUE_UNVERIFIED };

static enum issue_kind kind_of(const struct hd_module_issue *is)
{
	return is->unverified ? ISSUE_UNVERIFIED
	       : is->mismatch ? ISSUE_MISMATCH : ISSUE_MISSING;
}


// "libm.so.6, libz.so.1 and 3 more": the first names of a list.
static void list_names(char *buf, size_t len, size_t *used, size_t n,
		       const char *name)
{
	if (n < 3 && *used < len) {
		int r = snprintf(buf + *used, len - *used, "%s%s",
				 n ? ", " : "", base_of(name));
		*used += r > 0 ? (size_t)r : 0;
	}
}

// The libraries with one kind of issue: "libm.so.6, libz.so.1 and 3 more".
static void list_libraries(const struct hd_target *t, enum issue_kind kind,
			   char *buf, size_t len, size_t *count, bool *libc)
{
	size_t n = 0, used = 0;
	buf[0] = '\0';
	*libc = false;
	for (size_t i = 0; i < t->num_issues; i++) {
		const struct hd_module_issue *is = &t->issues[i];
		if (is->is_exe || kind_of(is) != kind || !issue_open(t, is))
			continue;
		const char *b = base_of(is->name);
		*libc |= strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0;
		list_names(buf, len, &used, n, is->name);
		n++;
	}
	if (n > 3 && used < len)
		snprintf(buf + used, len - used, " and %zu more", n - 3);
	*count = n;
}

static bool push_line(struct hd_target *t, char *line)
{
	if (!line)
		return false;
	char **w = realloc(t->warnings, (t->num_warnings + 1) * sizeof(*w));
	if (!w) {
		free(line);
		return false;
	}
	t->warnings = w;
	t->warnings[t->num_warnings++] = line;
	return true;
}

size_t hd_target_num_warnings(struct hd_target *t)
{
	for (size_t i = 0; i < t->num_warnings; i++)
		free(t->warnings[i]);
	t->num_warnings = 0;
	char *line;
	if (t->no_file_note && t->recovered_modules) {
		char names[512];
		size_t used = 0;
		for (size_t i = 0; i < t->num_modules; i++)
			list_names(names, sizeof(names), &used, i,
				   t->modules[i].name);
		if (t->num_modules > 3 && used < sizeof(names))
			snprintf(names + used, sizeof(names) - used,
				 " and %zu more", t->num_modules - 3);
		if (asprintf(&line, "the core has no NT_FILE note (an old gcore?): %zu module%s found from the process's memory (the executable's program headers through auxv, the libraries through the dynamic linker's list): %s%s%s; memory outside them is named by address",
			     t->num_modules, t->num_modules == 1 ? "" : "s",
			     names, t->recovery_problem ? "; " : "",
			     t->recovery_problem ? t->recovery_problem : "") < 0)
			line = NULL;
		push_line(t, line);
	} else if (t->no_file_note) {
		if (asprintf(&line, "the core has no NT_FILE note (an old gcore?) and no module was found from the process's memory either (%s): no symbol or type of any module is used, roots are named by address, and the heap is found from its data alone",
			     t->recovery_problem ? t->recovery_problem
						 : "no executable in it") < 0)
			line = NULL;
		push_line(t, line);
	}
	for (size_t i = 0; i < t->num_issues; i++) {
		const struct hd_module_issue *is = &t->issues[i];
		if (!is->is_exe || !issue_open(t, is))
			continue;
		// Reachability does not need the file: the executable's
		// writable memory is in the target and is scanned all the same.
		static const char lost[] =
			"blocks typed only through its DWARF (its globals' "
			"types, its classes' vtables) stay unk<N>, its global "
			"variables are roots named by mapping (\"PATH+0xOFFSET\") "
			"instead of by name, its functions are unnamed in "
			"allocation sites and samples, threads are not unwound "
			"through its code (the rest of their stacks stays "
			"\"thread N stack\"), and framework modules "
			"find none of its symbols; the blocks and what reaches "
			"them are unaffected (its memory is in the target and "
			"is scanned word by word)";
		if (is->unverified) {
			if (asprintf(&line,
				     "the executable %s cannot be checked against %s: the core holds no build-id for it (its headers were not dumped, or it has none), so it is used unverified; if it is not the build that ran, its symbols and types are wrong",
				     is->file, t->name) < 0)
				line = NULL;
		} else if (is->mismatch) {
			if (asprintf(&line,
				     "the executable %s is not the one that made %s (build-id %s in %s, %s in the file): it is not used, so %s; give the right one with --exe",
				     is->file, t->name, is->target_id, t->name,
				     is->file_id, lost) < 0)
				line = NULL;
		} else {
			// The file looked for, and the target's name for it
			// when --exe or --sysroot made them differ.
			char where[1024] = "";
			if (is->file && strcmp(is->file, is->name) != 0)
				snprintf(where, sizeof(where), " (the process ran %s)",
					 is->name);
			if (asprintf(&line,
				     "the executable %s was not found%s: %s; give it with --exe",
				     is->file ? is->file : is->name, where, lost) < 0)
				line = NULL;
		}
		push_line(t, line);
	}
	for (int kind = ISSUE_MISSING; kind <= ISSUE_MISMATCH; kind++) {
		char names[512];
		size_t n;
		bool libc;
		bool mismatch = kind == ISSUE_MISMATCH;
		list_libraries(t, kind, names, sizeof(names), &n, &libc);
		if (!n)
			continue;
		if (asprintf(&line, "%zu librar%s %s (%s): %s symbols, types and call frame information are not used (threads are not unwound through their code)%s; give %s with --sysroot",
			     n, n == 1 ? "y" : "ies",
			     mismatch ? (n == 1 ? "on this machine is not the build the process loaded"
					: "on this machine are not the build the process loaded")
				      : (n == 1 ? "was not found" : "were not found"),
			     names, n == 1 ? "its" : "their",
			     libc ? " (libc's: the heap is found from its data alone)" : "",
			     mismatch ? "the right files" : "them") < 0)
			line = NULL;
		push_line(t, line);
	}
	{
		char names[512];
		size_t n;
		bool libc;
		list_libraries(t, ISSUE_UNVERIFIED, names, sizeof(names), &n, &libc);
		if (n && asprintf(&line, "%zu librar%s (%s) cannot be checked against %s: the core holds no build-id for %s (headers not dumped), so the files on this machine are used unverified",
				  n, n == 1 ? "y" : "ies", names, t->name,
				  n == 1 ? "it" : "them") >= 0)
			push_line(t, line);
	}
	for (size_t i = 0; i < t->num_notes; i++)
		push_line(t, strdup(t->notes[i]));
	if (t->dropped_notes &&
	    asprintf(&line, "%zu more thread%s stopped their backtrace early (their stacks stay in \"thread N stack\")",
		     t->dropped_notes, t->dropped_notes == 1 ? "" : "s") >= 0)
		push_line(t, line);
	return t->num_warnings;
}

// A few notes are kept; past them, only how many more there were.
#define MAX_NOTES 4

void hd_target_note(struct hd_target *t, char *msg)
{
	for (size_t i = 0; i < t->num_notes; i++) {
		if (strcmp(t->notes[i], msg) == 0) {
			free(msg);
			return;
		}
	}
	char **n = t->num_notes < MAX_NOTES
			   ? realloc(t->notes, (t->num_notes + 1) * sizeof(*n))
			   : NULL;
	if (!n) {
		t->dropped_notes++;
		free(msg);
		return;
	}
	t->notes = n;
	t->notes[t->num_notes++] = msg;
}

const char *hd_target_warning(const struct hd_target *t, size_t i)
{
	return i < t->num_warnings ? t->warnings[i] : NULL;
}

bool hd_target_truncation(const struct hd_target *t, struct hd_truncation *ret)
{
	if (t->truncated && ret)
		*ret = t->truncation;
	return t->truncated;
}

// The state letter of /proc/PID/stat, or 0 when the process is gone.
static char process_state(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	// The command name may hold ')': the state follows the last one.
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

void hd_target_check_lost(struct hd_target *t, bool mm_gone)
{
	if (t->lost || !t->local_pid)
		return;
	char st = process_state(t->local_pid);
	const char *why = NULL;
	if (!st || st == 'Z' || st == 'X')
		why = "exited (or was killed) during the analysis: its memory is gone";
	else if (mm_gone)
		why = "executed another program or is exiting: the memory heapdom was reading is gone";
	if (why && asprintf(&t->lost, "process %d %s; no report is made from what could not be read: run the analysis again on a process that stays stopped",
			    t->local_pid, why) < 0)
		t->lost = NULL;
}

const char *hd_target_lost(const struct hd_target *t)
{
	return t->lost;
}
