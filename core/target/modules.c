// Module discovery shared by the core and live backends: which ELF files
// are mapped where, with which load bias and build-id.
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"
#include "util/elf_read.h"
#include "util/vec.h"

static void format_build_id(const uint8_t *id, size_t len, char *buf)
{
	for (size_t i = 0; i < len && i < 40; i++)
		sprintf(buf + 2 * i, "%02x", id[i]);
	buf[2 * (len < 40 ? len : 40)] = '\0';
}

struct hd_error *hd_target_push_module(struct hd_target *t,
				       const struct hd_module *m)
{
	struct hd_module copy = *m;
	copy.name = strdup(m->name);
	copy.file = m->file ? strdup(m->file) : NULL;
	if (!copy.name || (m->file && !copy.file))
		goto nomem;
	if (!copy.build_id_len && copy.file) {
		struct hd_elf_info info;
		struct hd_error *err = hd_elf_read_info(copy.file, &info);
		if (!err) {
			memcpy(copy.build_id, info.build_id, info.build_id_len);
			copy.build_id_len = info.build_id_len;
		}
		hd_error_destroy(err);
	}
	if (!HD_VEC_PUSH(t->modules, t->num_modules, t->cap_modules, copy))
		goto nomem;
	return NULL;
nomem:
	free(copy.name);
	free(copy.file);
	return &hd_error_no_memory;
}

// Reads the build-id note from the module's ELF headers in target memory;
// cores normally keep the first page of every mapped ELF file for this.
static size_t read_build_id(struct hd_target *t, uint64_t base,
			    uint8_t *out, size_t cap)
{
	Elf64_Ehdr eh;
	struct hd_error *err = hd_target_read(t, base, &eh, sizeof(eh));
	if (err || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
		hd_error_destroy(err);
		return 0;
	}
	Elf64_Phdr ph[256];
	err = hd_target_read(t, base + eh.e_phoff, ph, eh.e_phnum * sizeof(*ph));
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	uint64_t min_vaddr = UINT64_MAX;
	for (size_t i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < min_vaddr)
			min_vaddr = ph[i].p_vaddr;
	uint64_t bias = base - (min_vaddr & ~0xfffULL);
	for (size_t i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_memsz > 4096)
			continue;
		uint8_t notes[4096];
		err = hd_target_read(t, bias + ph[i].p_vaddr, notes,
				     ph[i].p_memsz);
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		size_t n = hd_elf_find_build_id(notes, ph[i].p_memsz, out, cap);
		if (n)
			return n;
	}
	return 0;
}

static size_t build_id_from_memory(struct hd_target *t, uint64_t base,
				   uint8_t *out, size_t cap)
{
	bool was = t->core_only;
	t->core_only = true;
	size_t n = read_build_id(t, base, out, cap);
	t->core_only = was;
	return n;
}

enum file_match {
	FILE_USED,      // the file's build-id is the target's
	FILE_UNVERIFIED, // used, but the target shows no build-id to check
	FILE_MISSING,   // no such file, or not an ELF file
	FILE_NOT_IMAGE, // an ELF file but no executable or shared object
	FILE_MISMATCH,  // another build than the process ran
};

// The local file that stands for module `name`: --exe's for the executable,
// else the module's path under the sysroot, and whether its build-id is the
// one the target's memory shows (id, id_len; 0 when its headers are not in
// the target). *file is set for FILE_USED and FILE_UNVERIFIED only; a file
// the user named that is no image is an error. Mismatches and unverified
// files are recorded as issues here, missing files by the caller (not every
// missing file is a module).
static struct hd_error *pick_file(struct hd_target *t, const char *name,
				  bool is_exe, const uint8_t *id, size_t id_len,
				  char **file_ret, struct hd_elf_info *info,
				  enum file_match *match, char **looked_at)
{
	*file_ret = NULL;
	*looked_at = NULL;
	bool user_named = is_exe && t->exe_override;
	char *file = user_named ? strdup(t->exe_override)
				: hd_target_resolve_path(t, name);
	if (!file)
		return &hd_error_no_memory;
	*looked_at = file;
	struct hd_error *err = hd_elf_read_info(file, info);
	if (err) {
		if (user_named)
			return err;
		hd_error_destroy(err);
		*match = FILE_MISSING;
		return NULL;
	}
	if (info->type != ET_EXEC && info->type != ET_DYN) {
		if (user_named)
			return hd_error_file(HD_ERROR_MISMATCH, file,
					     "is not an executable or shared object");
		*match = FILE_NOT_IMAGE;
		return NULL;
	}
	char want[81], have[81];
	format_build_id(id, id_len, want);
	format_build_id(info->build_id, info->build_id_len, have);
	if (id_len && info->build_id_len &&
	    (id_len != info->build_id_len ||
	     memcmp(id, info->build_id, id_len) != 0)) {
		// Another build than the process ran (a rebuilt program, an
		// updated library): its symbols and types would be wrong, so
		// use none of it, say so, and go on with what the target's
		// memory shows.
		*match = FILE_MISMATCH;
		return hd_target_push_issue(t, name, file, is_exe, true, want,
					    have);
	}
	*match = id_len && info->build_id_len ? FILE_USED : FILE_UNVERIFIED;
	if (*match == FILE_UNVERIFIED) {
		// Nothing to compare: the target's copy of the headers is not
		// there (filtered or cut from the core), or neither has a
		// build-id. The file is used, and the warning says unchecked.
		err = hd_target_push_issue(t, name, file, is_exe, false, want,
					   have);
		if (err)
			return err;
		t->issues[t->num_issues - 1].unverified = true;
	}
	*file_ret = file;
	return NULL;
}

// Fills in one module from the mapping at file offset 0 of its file.
static struct hd_error *add_module(struct hd_target *t, const char *path,
				   uint64_t base, uint64_t start, uint64_t end,
				   bool is_exe)
{
	struct hd_module m = {.start = start, .end = end, .is_exe = is_exe};
	m.name = (char *)path;
	uint8_t mem_id[64];
	size_t mem_id_len = build_id_from_memory(t, base, mem_id, sizeof(mem_id));
	char *file, *looked_at;
	struct hd_elf_info info;
	enum file_match match;
	struct hd_error *err = pick_file(t, path, is_exe, mem_id, mem_id_len,
					 &file, &info, &match, &looked_at);
	if (err) {
		free(looked_at);
		return err;
	}
	if (match == FILE_NOT_IMAGE) {
		free(looked_at);
		return NULL;
	}
	if (match == FILE_MISSING) {
		// The file may be gone or be a data file mapped by the
		// program (locale archive, fonts): not a module then, unless
		// the target's memory shows an ELF image. Only a missing ELF
		// file is worth a word.
		if (mem_id_len || is_exe) {
			char want[81];
			format_build_id(mem_id, mem_id_len, want);
			err = hd_target_push_issue(t, path, looked_at, is_exe,
						   false, want, NULL);
		}
		if (err || !mem_id_len) {
			free(looked_at);
			return err;
		}
		m.bias = base;
	} else {
		m.bias = base - info.min_vaddr;
	}
	m.file = file;
	if (mem_id_len) {
		memcpy(m.build_id, mem_id, mem_id_len);
		m.build_id_len = mem_id_len;
	} else if (file) {
		memcpy(m.build_id, info.build_id, info.build_id_len);
		m.build_id_len = info.build_id_len;
	}
	err = hd_target_push_module(t, &m);
	free(looked_at);
	return err;
}

struct hd_error *hd_target_add_image_module(struct hd_target *t,
					    const struct hd_image *im)
{
	struct hd_module m = {.name = (char *)im->name, .bias = im->bias,
			      .start = im->start, .end = im->end,
			      .is_exe = im->is_exe};
	char *file, *looked_at;
	struct hd_elf_info info;
	enum file_match match;
	struct hd_error *err = pick_file(t, im->name, im->is_exe, im->build_id,
					 im->build_id_len, &file, &info, &match,
					 &looked_at);
	if (!err && (match == FILE_MISSING || match == FILE_NOT_IMAGE)) {
		char want[81];
		format_build_id(im->build_id, im->build_id_len, want);
		err = hd_target_push_issue(t, im->name, looked_at, im->is_exe,
					   false, want, NULL);
	}
	if (!err && file && !im->have_range) {
		// No program headers in the target: the file's say where the
		// image lies.
		m.start = im->bias + info.min_vaddr;
		m.end = im->bias + info.file_end;
	}
	if (!err) {
		m.file = file;
		memcpy(m.build_id, im->build_id, im->build_id_len);
		m.build_id_len = im->build_id_len;
		if (!m.build_id_len && file) {
			memcpy(m.build_id, info.build_id, info.build_id_len);
			m.build_id_len = info.build_id_len;
		}
		err = hd_target_push_module(t, &m);
	}
	free(looked_at);
	return err;
}

struct hd_error *hd_target_modules_from_mappings(struct hd_target *t)
{
	uint64_t phdr = 0;
	bool have_phdr = hd_target_auxv(t, AT_PHDR, &phdr);
	bool exe_marked = false;
	for (size_t i = 0; i < t->num_mappings; i++) {
		const struct hd_mapping *m = &t->mappings[i];
		if (!m->path || m->path[0] != '/' || m->file_offset != 0)
			continue;
		// A file mapped at offset 0 twice (rare) counts once.
		bool seen = false;
		for (size_t j = 0; j < t->num_modules && !seen; j++)
			seen = strcmp(t->modules[j].name, m->path) == 0;
		if (seen)
			continue;
		uint64_t start = m->start, end = m->end;
		// A loaded object maps its segments one by one: code, or a
		// segment past the file's first page. A single mapping at
		// offset 0 without code is the file read as data (mmap of
		// the whole file: a debug file being indexed, which a fork's
		// child inherits), whose symbols would be looked up at the
		// wrong addresses. Only /proc/PID/maps is known to list every
		// mapping with its permissions; a core's list may be partial.
		bool loaded = (m->prot & HD_PROT_EXEC) || strcmp(t->kind, "live") != 0;
		// Following mappings of the same file belong to the module,
		// up to the next file's (or this file's) first page.
		for (size_t j = i + 1; j < t->num_mappings; j++) {
			const struct hd_mapping *n = &t->mappings[j];
			if (n->path && n->path[0] == '/' && n->file_offset == 0)
				break;
			if (n->path && strcmp(n->path, m->path) == 0) {
				end = n->end;
				loaded = true;
			}
		}
		bool is_exe = have_phdr ? (start <= phdr && phdr < end)
					: !exe_marked;
		if (is_exe && exe_marked)
			is_exe = false;
		if (!loaded && !is_exe)
			continue;
		size_t before = t->num_modules;
		struct hd_error *err =
			add_module(t, m->path, m->start, start, end, is_exe);
		if (err)
			return err;
		if (is_exe && t->num_modules > before)
			exe_marked = true;
	}
	return NULL;
}

struct hd_error *hd_target_discover_modules(struct hd_target *t)
{
	hd_target_sort_mappings(t);
	return hd_target_modules_from_mappings(t);
}

struct hd_error *hd_target_set_module_file(struct hd_target *t, size_t i,
					   const char *file)
{
	if (i >= t->num_modules)
		return hd_error_create(HD_ERROR_INVALID, "no module %zu", i);
	struct hd_module *m = &t->modules[i];
	struct hd_elf_info info;
	struct hd_error *err = hd_elf_read_info(file, &info);
	if (err)
		return err;
	if (m->build_id_len && info.build_id_len &&
	    (m->build_id_len != info.build_id_len ||
	     memcmp(m->build_id, info.build_id, m->build_id_len) != 0))
		return hd_error_file(HD_ERROR_MISMATCH, file,
				     "build-id differs from %s's in the target",
				     m->name);
	char *copy = strdup(file);
	if (!copy)
		return &hd_error_no_memory;
	free(m->file);
	m->file = copy;
	if (!m->build_id_len) {
		memcpy(m->build_id, info.build_id, info.build_id_len);
		m->build_id_len = info.build_id_len;
	}
	return NULL;
}
