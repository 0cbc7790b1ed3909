// hd_dwarf_check_rnglists: the unit headers of .debug_rnglists, checked
// from the ELF section bytes before libdwarf sees the file.
//
// Debian 12's libdwarf (20210528) loads every .debug_rnglists unit header
// as soon as it loads .debug_info (dwarf_next_cu_header_d ->
// _dwarf_load_debug_info -> dwarf_load_rnglists). When one header is
// corrupt (a length past the section's end, a version other than 5, an
// address size other than 2, 4 or 8, a header cut short), its
// internal_load_rnglists_contexts frees the contexts read so far and goes
// on instead of returning the error: it frees them again on the next
// header and loops (a double free, an abort in glibc; docs/fuzzing.md,
// finding 8). .debug_loclists has the same loader with the missing return
// in place, so it gives libdwarf's error and needs no check here.
//
// A file whose .debug_rnglists has a bad header is refused, with an error
// naming the file, the unit's section offset and the problem. Hiding the
// section from libdwarf (dwarf_object_init_b with an object-access
// interface of our own) would keep the file's types but means a second
// ELF section loader (relocations, compressed sections) to keep in step
// with libdwarf's, and every DW_AT_ranges of the file would then fail
// while the rest read as sound; a corrupt file said to be corrupt is the
// honest answer, and the caller reports what it then lacks.
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>

#include "debuginfo/rnglists_check.h"

// The names libdwarf 20210528 reads as .debug_rnglists (dwarf_init_finish.c
// SET_UP_SECTION, with the .zdebug_ prefix of GNU-compressed sections).
static bool is_rnglists(const char *name)
{
	static const char *const names[] = {
		".debug_rnglists", ".debug_rnglists.dwo",
		".zdebug_rnglists", ".zdebug_rnglists.dwo",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

static uint64_t get(const uint8_t *p, size_t n, bool big)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

// The first bad unit header of a section's bytes: NULL if all are sound,
// else a description written to why (offset of the unit in *at).
static const char *check_units(const uint8_t *d, uint64_t size, bool big,
			       uint64_t *at, char *why, size_t cap)
{
	uint64_t off = 0;
	while (off < size) {
		*at = off;
		uint64_t left = size - off;
		if (left < 4) {
			snprintf(why, cap, "%" PRIu64 " bytes left, too few for a unit length",
				 left);
			return why;
		}
		uint64_t len = get(d + off, 4, big), hdr = 4, osz = 4;
		if (len == 0xffffffff) {
			if (left < 12) {
				snprintf(why, cap, "64-bit unit length cut short (%" PRIu64
					 " bytes left)", left);
				return why;
			}
			len = get(d + off + 4, 8, big);
			hdr = 12;
			osz = 8;
		} else if (len >= 0xfffffff0) {
			snprintf(why, cap, "reserved unit length 0x%" PRIx64, len);
			return why;
		}
		if (len > left - hdr) {
			snprintf(why, cap, "unit length 0x%" PRIx64
				 " runs past the end of the section (0x%" PRIx64 " bytes)",
				 len, size);
			return why;
		}
		// version (2), address_size (1), segment_selector_size (1),
		// offset_entry_count (4).
		if (len < 8) {
			snprintf(why, cap, "unit length 0x%" PRIx64 " shorter than its header",
				 len);
			return why;
		}
		const uint8_t *h = d + off + hdr;
		uint64_t version = get(h, 2, big);
		unsigned asz = h[2];
		uint64_t count = get(h + 4, 4, big);
		if (version != 5) {
			snprintf(why, cap, "version %" PRIu64 ", not 5", version);
			return why;
		}
		if (asz != 2 && asz != 4 && asz != 8) {
			snprintf(why, cap, "address size %u", asz);
			return why;
		}
		if (count > (len - 8) / osz) {
			snprintf(why, cap, "%" PRIu64 " offset entries do not fit in the unit (length 0x%" PRIx64 ")",
				 count, len);
			return why;
		}
		off += hdr + len;
	}
	return NULL;
}

struct hd_error *hd_dwarf_check_rnglists(int fd, const char *path)
{
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "cannot read its ELF headers to check .debug_rnglists: %s",
				     elf_errmsg(-1));
	struct hd_error *err = NULL;
	size_t shstrndx;
	if (elf_kind(elf) != ELF_K_ELF) {
		err = hd_error_file(HD_ERROR_FORMAT, path, "not an ELF file");
		goto out;
	}
	const char *ident = elf_getident(elf, NULL);
	bool big = ident && ident[EI_DATA] == ELFDATA2MSB;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		// libdwarf reads the section headers with a reader of its own,
		// which might still find the section: not checked, not read.
		err = hd_error_file(HD_ERROR_FORMAT, path,
				    "corrupt ELF: cannot read its section names to check .debug_rnglists: %s",
				    elf_errmsg(-1));
		goto out;
	}
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		// SHT_NOBITS: libdwarf sees an empty section.
		if (!name || !is_rnglists(name) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_size == 0)
			continue;
		// Compressed sections are checked as libdwarf reads them,
		// inflated.
		int rc = 0;
		if (sh.sh_flags & SHF_COMPRESSED)
			rc = elf_compress(scn, 0, 0);
		else if (strncmp(name, ".zdebug_", 8) == 0)
			rc = elf_compress_gnu(scn, 0, 0);
		Elf_Data *data = rc < 0 ? NULL : elf_getdata(scn, NULL);
		if (!data || (!data->d_buf && data->d_size)) {
			err = hd_error_file(HD_ERROR_FORMAT, path,
					    "corrupt DWARF: cannot read section %s to check its headers: %s",
					    name, elf_errmsg(-1));
			break;
		}
		char why[160];
		uint64_t at = 0;
		if (check_units(data->d_buf, data->d_size, big, &at, why, sizeof(why)))
			err = hd_error_file(HD_ERROR_FORMAT, path,
					    "corrupt DWARF: %s unit at section offset 0x%" PRIx64
					    ": %s; the file's DWARF is not read",
					    name, at, why);
	}
out:
	elf_end(elf);
	return err;
}
