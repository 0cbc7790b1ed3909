#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo/elf_symbols.h"

static bool scan_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, const char *name,
			uint64_t *value, uint64_t *size)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return false;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym) ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		const char *s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (s && strcmp(s, name) == 0) {
			*value = sym.st_value;
			*size = sym.st_size;
			return true;
		}
	}
	return false;
}

bool hd_elf_defines_any(const char *path, const char *const *names, size_t n,
			bool *found)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool any = false;
	for (size_t k = 0; k < n; k++)
		found[k] = false;
	Elf_Scn *scn = NULL;
	while (elf && elf_kind(elf) == ELF_K_ELF && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0 ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t count = data ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			const char *s = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t k = 0; s && k < n; k++) {
				if (!found[k] && strcmp(s, names[k]) == 0) {
					found[k] = true;
					any = true;
				}
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return any;
}

struct hd_error *hd_elf_find_symbol(const char *path, const char *name,
				    uint64_t *value, uint64_t *size)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hd_error_os(errno, path, "cannot open");
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct hd_error *err = NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file: %s",
				    elf_errmsg(-1));
		goto out;
	}
	bool found = false;
	for (int pass = 0; pass < 2 && !found; pass++) {
		Elf_Scn *scn = NULL;
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
				found = scan_symtab(elf, scn, &sh, name, value,
						    size);
		}
	}
	if (!found)
		err = hd_error_file(HD_ERROR_NOT_FOUND, path,
				    "no symbol %s", name);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

#include <stdlib.h>

#include "util/vec.h"
#include "util/sort.h"

static struct hd_error *open_elf(const char *path, int *fd, Elf **elf)
{
	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return hd_error_os(errno, path, "cannot open");
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		close(*fd);
		return hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file: %s",
				     elf_errmsg(-1));
	}
	return NULL;
}

static int symbol_cmp(const void *a, const void *b)
{
	const struct hd_elf_symbol *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	// Among aliases, the global name first.
	return (int)y->global - (int)x->global;
}

void hd_elf_free_symbols(struct hd_elf_symbol *syms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(syms[i].name);
	free(syms);
}

// Data objects, or functions (STT_FUNC, and STT_GNU_IFUNC resolvers such
// as libc's memcpy).
static bool wanted(int type, bool functions)
{
	if (functions)
		return type == STT_FUNC || type == STT_GNU_IFUNC;
	return type == STT_OBJECT || type == STT_COMMON;
}

static struct hd_error *load_symbols(const char *path, bool functions,
				     struct hd_elf_symbol **ret, size_t *ret_n)
{
	int fd;
	Elf *elf;
	struct hd_error *err = open_elf(path, &fd, &elf);
	if (err)
		return err;
	struct hd_elf_symbol *syms = NULL;
	size_t n = 0, cap = 0;
	for (int pass = 0; pass < 2 && !n && !err; pass++) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) && !err) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
			    sh.sh_entsize == 0)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			size_t count = data ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; i < count; i++) {
				GElf_Sym sym;
				if (!gelf_getsym(data, (int)i, &sym) ||
				    sym.st_shndx == SHN_UNDEF ||
				    (sym.st_size == 0 && !functions))
					continue;
				if (!wanted(GELF_ST_TYPE(sym.st_info),
					    functions))
					continue;
				const char *name = elf_strptr(elf, sh.sh_link,
							      sym.st_name);
				struct hd_elf_symbol s = {
					.name = strdup(name ? name : "?"),
					.value = sym.st_value,
					.size = sym.st_size,
					.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL,
				};
				if (!s.name || !HD_VEC_PUSH(syms, n, cap, s)) {
					free(s.name);
					err = &hd_error_no_memory;
					break;
				}
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (err) {
		hd_elf_free_symbols(syms, n);
		return err;
	}
	hd_qsort(syms, n, sizeof(*syms), symbol_cmp);
	*ret = syms;
	*ret_n = n;
	return NULL;
}

struct hd_error *hd_elf_object_symbols(const char *path,
				       struct hd_elf_symbol **ret, size_t *ret_n)
{
	return load_symbols(path, false, ret, ret_n);
}

struct hd_error *hd_elf_function_symbols(const char *path,
					 struct hd_elf_symbol **ret,
					 size_t *ret_n)
{
	return load_symbols(path, true, ret, ret_n);
}

void hd_elf_free_sections(struct hd_elf_section *secs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(secs[i].name);
	free(secs);
}

struct hd_error *hd_elf_sections(const char *path, struct hd_elf_section **ret,
				 size_t *ret_n)
{
	int fd;
	Elf *elf;
	struct hd_error *err = open_elf(path, &fd, &elf);
	if (err)
		return err;
	size_t shstrndx;
	struct hd_elf_section *secs = NULL;
	size_t n = 0, cap = 0;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
			    sh.sh_size == 0)
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			struct hd_elf_section s = {
				.name = strdup(name ? name : "?"),
				.addr = sh.sh_addr,
				.size = sh.sh_size,
				.nobits = sh.sh_type == SHT_NOBITS,
			};
			if (!s.name || !HD_VEC_PUSH(secs, n, cap, s)) {
				free(s.name);
				err = &hd_error_no_memory;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (err) {
		hd_elf_free_sections(secs, n);
		return err;
	}
	*ret = secs;
	*ret_n = n;
	return NULL;
}
