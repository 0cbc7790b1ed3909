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
