// Minimal ELF header reading with pread: enough to identify a file, its
// load bias and its build-id without pulling libelf into the target stage.
#ifndef HD_UTIL_ELF_READ_H
#define HD_UTIL_ELF_READ_H

#include "heapdom.h"

struct hd_elf_info {
	uint16_t type;     // ET_EXEC, ET_DYN, ET_CORE...
	uint16_t machine;  // EM_X86_64...
	uint64_t min_vaddr; // lowest PT_LOAD p_vaddr, page aligned
	uint64_t file_end;  // highest PT_LOAD p_vaddr + p_filesz, page aligned up
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t tls_memsz, tls_align; // PT_TLS, 0 if none
	char debuglink[256]; // .gnu_debuglink file name, "" if none
	uint32_t debuglink_crc;
};

// Reads the identity of the ELF file at path. HD_ERROR_FORMAT if it is not
// a 64-bit little-endian ELF file.
struct hd_error *hd_elf_read_info(const char *path, struct hd_elf_info *ret);

// Finds an NT_GNU_BUILD_ID note in a buffer of ELF notes; returns its
// length (0 if none) and copies at most cap bytes.
size_t hd_elf_find_build_id(const uint8_t *notes, size_t len, uint8_t *out,
			    size_t cap);

// Checks that fd (opened from path) starts with the ELF magic: libdwarf
// says "no entry" for anything it does not recognise, so a text file would
// pass for an object without DWARF.
struct hd_error *hd_elf_check_magic(int fd, const char *path);

#endif
