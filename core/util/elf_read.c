#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/elf_read.h"

static bool pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return true;
}

size_t hd_elf_find_build_id(const uint8_t *notes, size_t len, uint8_t *out,
			    size_t cap)
{
	size_t off = 0;
	while (off + sizeof(Elf64_Nhdr) <= len) {
		Elf64_Nhdr nh;
		memcpy(&nh, notes + off, sizeof(nh));
		size_t name_off = off + sizeof(nh);
		size_t desc_off = name_off + (((uint64_t)nh.n_namesz + 3) & ~3ULL);
		size_t next = desc_off + (((uint64_t)nh.n_descsz + 3) & ~3ULL);
		if (desc_off > len || nh.n_descsz > len - desc_off)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(notes + name_off, "GNU", 4) == 0) {
			size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
			memcpy(out, notes + desc_off, n);
			return n;
		}
		off = next;
	}
	return 0;
}

static void read_debuglink(int fd, const Elf64_Ehdr *eh, struct hd_elf_info *ret)
{
	if (eh->e_shoff == 0 || eh->e_shnum == 0 || eh->e_shnum > 4096 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shstrndx >= eh->e_shnum)
		return;
	Elf64_Shdr *sh = calloc(eh->e_shnum, sizeof(*sh));
	if (!sh)
		return;
	if (!pread_full(fd, sh, eh->e_shnum * sizeof(*sh), eh->e_shoff))
		goto out;
	const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
	for (size_t i = 0; i < eh->e_shnum; i++) {
		char name[32] = {0};
		if (sh[i].sh_name >= strs->sh_size)
			continue;
		if (!pread_full(fd, name, sizeof(name) - 1,
				strs->sh_offset + sh[i].sh_name))
			continue;
		if (strcmp(name, ".gnu_debuglink") != 0 || sh[i].sh_size < 8 ||
		    sh[i].sh_size > sizeof(ret->debuglink) + 4)
			continue;
		uint8_t buf[sizeof(ret->debuglink) + 8];
		if (!pread_full(fd, buf, sh[i].sh_size, sh[i].sh_offset))
			break;
		size_t n = strnlen((char *)buf, sh[i].sh_size);
		if (n >= sizeof(ret->debuglink) || n + 4 > sh[i].sh_size)
			break;
		memcpy(ret->debuglink, buf, n);
		ret->debuglink[n] = '\0';
		memcpy(&ret->debuglink_crc, buf + sh[i].sh_size - 4, 4);
		break;
	}
out:
	free(sh);
}

struct hd_error *hd_elf_read_info(const char *path, struct hd_elf_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hd_error_os(errno, path, "cannot open");
	struct hd_error *err = NULL;
	Elf64_Ehdr eh;
	if (!pread_full(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		err = hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file");
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		err = hd_error_file(HD_ERROR_UNSUPPORTED, path,
				    "not a 64-bit little-endian ELF file");
		goto out;
	}
	ret->type = eh.e_type;
	ret->machine = eh.e_machine;
	if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 &&
	    eh.e_phnum < 4096) {
		Elf64_Phdr *ph = calloc(eh.e_phnum, sizeof(*ph));
		if (!ph) {
			err = &hd_error_no_memory;
			goto out;
		}
		if (pread_full(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff)) {
			uint64_t min = UINT64_MAX, end = 0;
			for (size_t i = 0; i < eh.e_phnum; i++) {
				if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < min)
					min = ph[i].p_vaddr;
				if (ph[i].p_type == PT_LOAD &&
				    ph[i].p_vaddr + ph[i].p_filesz > end)
					end = ph[i].p_vaddr + ph[i].p_filesz;
				if (ph[i].p_type == PT_TLS) {
					ret->tls_memsz = ph[i].p_memsz;
					ret->tls_align = ph[i].p_align;
				}
				if (ph[i].p_type == PT_NOTE && !ret->build_id_len &&
				    ph[i].p_filesz < (1 << 20)) {
					uint8_t *notes = malloc(ph[i].p_filesz);
					if (notes && pread_full(fd, notes, ph[i].p_filesz,
								ph[i].p_offset))
						ret->build_id_len = hd_elf_find_build_id(
							notes, ph[i].p_filesz,
							ret->build_id,
							sizeof(ret->build_id));
					free(notes);
				}
			}
			ret->min_vaddr = min == UINT64_MAX ? 0 : min & ~0xfffULL;
			ret->file_end = (end + 0xfff) & ~0xfffULL;
		}
		free(ph);
	}
	read_debuglink(fd, &eh, ret);
out:
	close(fd);
	return err;
}

struct hd_error *hd_elf_check_magic(int fd, const char *path)
{
	unsigned char magic[4];
	ssize_t r = pread(fd, magic, sizeof(magic), 0);
	if (r < 0)
		return hd_error_os(errno, path, "cannot read");
	if (r != sizeof(magic) || memcmp(magic, "\177ELF", 4) != 0)
		return hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file");
	return NULL;
}
