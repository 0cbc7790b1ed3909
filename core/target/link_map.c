// Modules of a core without NT_FILE (old gcores): which files were mapped
// is not written down, but the process's memory still says it. The kernel's
// auxiliary vector gives the executable's program headers (AT_PHDR); its
// PT_DYNAMIC holds DT_DEBUG, which the dynamic linker points at its
// `struct r_debug`, whose r_map heads the list of loaded objects
// (`struct link_map`: l_addr, l_name, l_ld, l_next). Each object's ELF
// header and program headers are in the core when its first page was
// dumped, and give its range and build-id.
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"
#include "util/elf_read.h"
#include "util/sort.h"

// At most this many program headers and loaded objects: more is no list a
// dynamic linker made.
#define MAX_PHDRS 256
#define MAX_OBJECTS 4096
// How far below an object's dynamic section its ELF header may lie.
#define MAX_IMAGE (1ULL << 30)

struct image_info {
	uint64_t dynamic;  // PT_DYNAMIC's address, 0 if none
	uint64_t interp;   // PT_INTERP's address, 0 if none
	uint64_t interp_len;
};

// The first thing that stopped the search, for the warning.
static void set_problem(struct hd_target *t, const char *fmt, ...)
{
	if (t->recovery_problem)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&t->recovery_problem, fmt, ap) < 0)
		t->recovery_problem = NULL;
	va_end(ap);
}

// Reads a NUL-terminated string of at most cap - 1 bytes, a page at a time
// so that a string near the end of a mapping reads.
static bool read_string(struct hd_target *t, uint64_t addr, char *buf,
			size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		size_t n = 0x1000 - ((addr + got) & 0xfff);
		if (n > cap - 1 - got)
			n = cap - 1 - got;
		struct hd_error *err = hd_target_read(t, addr + got, buf + got, n);
		if (err) {
			hd_error_destroy(err);
			return false;
		}
		void *nul = memchr(buf + got, '\0', n);
		if (nul)
			return true;
		got += n;
	}
	buf[cap - 1] = '\0';
	return false;
}

// Range, build-id and dynamic section of an image whose program headers
// and load bias are known.
static void describe(struct hd_target *t, const Elf64_Phdr *ph, size_t n,
		     uint64_t bias, struct hd_image *im,
		     struct image_info *info)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_vaddr < lo)
				lo = ph[i].p_vaddr;
			// The file-backed part: .bss past the file's last page
			// is an anonymous mapping, as with NT_FILE.
			if (ph[i].p_vaddr + ph[i].p_filesz > hi)
				hi = ph[i].p_vaddr + ph[i].p_filesz;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			info->dynamic = bias + ph[i].p_vaddr;
		} else if (ph[i].p_type == PT_INTERP) {
			info->interp = bias + ph[i].p_vaddr;
			info->interp_len = ph[i].p_filesz;
		}
	}
	im->bias = bias;
	im->have_range = lo < hi;
	if (im->have_range) {
		im->start = bias + (lo & ~0xfffULL);
		im->end = bias + ((hi + 0xfff) & ~0xfffULL);
	}
	im->build_id_len = 0;
	for (size_t i = 0; i < n && !im->build_id_len; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 4096)
			continue;
		uint8_t notes[4096];
		struct hd_error *err = hd_target_read(t, bias + ph[i].p_vaddr,
						      notes, ph[i].p_filesz);
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		im->build_id_len = hd_elf_find_build_id(notes, ph[i].p_filesz,
							im->build_id,
							sizeof(im->build_id));
	}
}

// The program headers of the ELF image whose header is at hdr, and its load
// bias; false if no ELF header is there.
static bool image_at(struct hd_target *t, uint64_t hdr, Elf64_Phdr *ph,
		     size_t *n, uint64_t *bias)
{
	Elf64_Ehdr eh;
	struct hd_error *err = hd_target_read(t, hdr, &eh, sizeof(eh));
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > MAX_PHDRS ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return false;
	err = hd_target_read(t, hdr + eh.e_phoff, ph, eh.e_phnum * sizeof(*ph));
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	uint64_t lo = UINT64_MAX;
	for (size_t i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
	if (lo == UINT64_MAX)
		return false;
	*n = eh.e_phnum;
	*bias = hdr - (lo & ~0xfffULL);
	return true;
}

// The ELF header of the object with load bias l_addr and dynamic section
// l_ld: at the start of one of the mappings below l_ld (a shared library
// linked at 0 has it at l_addr; a prelinked one at its link address).
static bool find_object(struct hd_target *t, uint64_t l_addr, uint64_t l_ld,
			Elf64_Phdr *ph, size_t *n)
{
	size_t i = hd_target_num_mappings(t);
	while (i > 0) {
		const struct hd_mapping *m = hd_target_mapping(t, --i);
		if (m->start > l_ld)
			continue;
		if (l_ld - m->start > MAX_IMAGE)
			break;
		uint64_t bias;
		if (!image_at(t, m->start, ph, n, &bias) || bias != l_addr)
			continue;
		for (size_t k = 0; k < *n; k++)
			if (ph[k].p_type == PT_DYNAMIC &&
			    bias + ph[k].p_vaddr == l_ld)
				return true;
	}
	return false;
}

// The core's mappings that lie in an image's file-backed part get its name
// and their offset in its file, as NT_FILE would have given them: the
// module's writable data is then named as with NT_FILE ("PATH+0xOFFSET").
static struct hd_error *label_mappings(struct hd_target *t, const char *name,
				       const Elf64_Phdr *ph, size_t n,
				       uint64_t bias)
{
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || !ph[i].p_filesz)
			continue;
		uint64_t page = (bias + ph[i].p_vaddr) & ~0xfffULL;
		uint64_t off = ph[i].p_offset & ~0xfffULL;
		uint64_t end = (bias + ph[i].p_vaddr + ph[i].p_filesz + 0xfff) &
			       ~0xfffULL;
		for (size_t j = 0; j < t->num_mappings; j++) {
			struct hd_mapping *m = &t->mappings[j];
			if (m->path || m->start < page || m->end > end)
				continue;
			m->path = strdup(name);
			if (!m->path)
				return &hd_error_no_memory;
			m->file_offset = off + (m->start - page);
		}
	}
	return NULL;
}

static bool have_module_at(const struct hd_target *t, uint64_t start)
{
	for (size_t i = 0; i < t->num_modules; i++)
		if (t->modules[i].start == start)
			return true;
	return false;
}

// The executable from auxv: its program headers are at AT_PHDR, and
// PT_PHDR's link-time address gives the load bias (or, without PT_PHDR,
// the ELF header on the same page).
static bool find_exe(struct hd_target *t, Elf64_Phdr *ph, size_t *n,
		     uint64_t *bias)
{
	uint64_t phdr = 0, phnum = 0;
	if (!hd_target_auxv(t, AT_PHDR, &phdr) ||
	    !hd_target_auxv(t, AT_PHNUM, &phnum) || !phnum ||
	    phnum > MAX_PHDRS) {
		set_problem(t, "the core's auxiliary vector (NT_AUXV) has no AT_PHDR");
		return false;
	}
	struct hd_error *err = hd_target_read(t, phdr, ph, phnum * sizeof(*ph));
	if (err) {
		hd_error_destroy(err);
		set_problem(t, "the executable's program headers (AT_PHDR 0x%llx) are not in the core",
			    (unsigned long long)phdr);
		return false;
	}
	*n = phnum;
	for (size_t i = 0; i < phnum; i++) {
		if (ph[i].p_type == PT_PHDR) {
			*bias = phdr - ph[i].p_vaddr;
			return true;
		}
	}
	// A static executable may lack PT_PHDR: its header then shares the
	// page, and its e_phoff must lead to AT_PHDR.
	Elf64_Ehdr eh;
	uint64_t hdr = phdr & ~0xfffULL;
	err = hd_target_read(t, hdr, &eh, sizeof(eh));
	if (!err && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    hdr + eh.e_phoff == phdr) {
		uint64_t lo = UINT64_MAX;
		for (size_t i = 0; i < phnum; i++)
			if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo)
				lo = ph[i].p_vaddr;
		if (lo != UINT64_MAX) {
			*bias = hdr - (lo & ~0xfffULL);
			return true;
		}
	}
	hd_error_destroy(err);
	set_problem(t, "the executable's load address is unknown (no PT_PHDR, and no ELF header on AT_PHDR's page 0x%llx)",
		    (unsigned long long)phdr);
	return false;
}

// DT_DEBUG's value from the executable's dynamic section: the dynamic
// linker's struct r_debug, 0 if the program is static (*tagged false) or
// the linker had not set it.
static uint64_t find_r_debug(struct hd_target *t, uint64_t dynamic,
			     bool *tagged)
{
	*tagged = false;
	for (size_t i = 0; i < 4096; i++) {
		Elf64_Dyn d;
		struct hd_error *err = hd_target_read(t, dynamic + i * sizeof(d),
						      &d, sizeof(d));
		if (err) {
			hd_error_destroy(err);
			set_problem(t, "the executable's dynamic section at 0x%llx is not in the core",
				    (unsigned long long)dynamic);
			return 0;
		}
		if (d.d_tag == DT_NULL)
			return 0;
		if (d.d_tag == DT_DEBUG) {
			*tagged = true;
			return d.d_un.d_val;
		}
	}
	return 0;
}

static struct hd_error *add_object(struct hd_target *t, const char *name,
				   uint64_t l_addr, uint64_t l_ld)
{
	Elf64_Phdr ph[MAX_PHDRS];
	size_t n = 0;
	struct hd_image im = {.name = name, .bias = l_addr};
	struct image_info info;
	bool found = find_object(t, l_addr, l_ld, ph, &n);
	if (found) {
		describe(t, ph, n, l_addr, &im, &info);
	} else {
		// Its headers were not dumped: its bias is known, its range
		// comes from its file if that is here, else is the mapping
		// that holds its dynamic section (its data).
		const struct hd_mapping *m = hd_target_find_mapping(t, l_ld);
		if (m) {
			im.start = m->start;
			im.end = m->end;
		} else {
			im.start = im.end = l_ld;
		}
	}
	if (have_module_at(t, im.start))
		return NULL;
	struct hd_error *err = hd_target_add_image_module(t, &im);
	if (!err && found)
		err = label_mappings(t, name, ph, n, l_addr);
	return err;
}

// Walks r_debug.r_map: (l_addr, l_name, l_ld, l_next) at offsets 0, 8,
// 16, 24 of every glibc's struct link_map, as <link.h> declares them.
static struct hd_error *walk_link_map(struct hd_target *t, uint64_t r_debug,
				      uint64_t exe_dynamic, bool *walked)
{
	uint64_t vdso = 0;
	hd_target_auxv(t, AT_SYSINFO_EHDR, &vdso);
	uint64_t map;
	struct hd_error *err = hd_target_read_u64(t, r_debug + 8, &map);
	if (err) {
		hd_error_destroy(err);
		set_problem(t, "the dynamic linker's r_debug at 0x%llx is not in the core",
			    (unsigned long long)r_debug);
		return NULL;
	}
	size_t count = 0;
	for (; map && count < MAX_OBJECTS; count++) {
		uint64_t lm[4];
		err = hd_target_read(t, map, lm, sizeof(lm));
		if (err) {
			hd_error_destroy(err);
			set_problem(t, "the dynamic linker's list is cut at 0x%llx (not in the core)",
				    (unsigned long long)map);
			break;
		}
		*walked = true;
		uint64_t l_addr = lm[0], l_name = lm[1], l_ld = lm[2];
		map = lm[3];
		if (l_ld == exe_dynamic)
			continue; // the executable, already added
		char name[4096];
		if (!l_name || !read_string(t, l_name, name, sizeof(name))) {
			set_problem(t, "a loaded object's name (at 0x%llx) is not in the core",
				    (unsigned long long)l_name);
			continue;
		}
		// The vDSO is the kernel's, with no file (NT_FILE has none
		// either); an empty name is no file to look for.
		if (!name[0] || (vdso && l_addr == vdso) ||
		    strncmp(name, "linux-vdso", 10) == 0 ||
		    strncmp(name, "linux-gate", 10) == 0)
			continue;
		err = add_object(t, name, l_addr, l_ld);
		if (err)
			return err;
	}
	if (count == MAX_OBJECTS)
		set_problem(t, "the dynamic linker's list has more than %d objects (a cycle?); the rest is ignored",
			    MAX_OBJECTS);
	return NULL;
}

static int module_cmp(const void *a, const void *b)
{
	const struct hd_module *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct hd_error *find_modules(struct hd_target *t);

// What the core holds, not what files on this machine say, is searched.
struct hd_error *hd_target_modules_from_link_map(struct hd_target *t)
{
	bool was = t->core_only;
	t->core_only = true;
	struct hd_error *err = find_modules(t);
	t->core_only = was;
	return err;
}

static struct hd_error *find_modules(struct hd_target *t)
{
	Elf64_Phdr ph[MAX_PHDRS];
	size_t n;
	uint64_t bias;
	if (!find_exe(t, ph, &n, &bias))
		return NULL;
	// The executable's name: the path it was started by (AT_EXECFN,
	// a string on the initial stack).
	char name[4096] = "";
	uint64_t execfn;
	if (!hd_target_auxv(t, AT_EXECFN, &execfn) ||
	    !read_string(t, execfn, name, sizeof(name)) || !name[0])
		snprintf(name, sizeof(name), "[executable]");
	struct hd_image im = {.name = name, .is_exe = true};
	struct image_info exe;
	describe(t, ph, n, bias, &im, &exe);
	struct hd_error *err = hd_target_add_image_module(t, &im);
	if (!err)
		err = label_mappings(t, name, ph, n, bias);
	if (err)
		return err;
	bool walked = false, tagged = false;
	uint64_t r_debug = exe.dynamic ? find_r_debug(t, exe.dynamic, &tagged)
				       : 0;
	if (r_debug)
		err = walk_link_map(t, r_debug, exe.dynamic, &walked);
	if (err)
		return err;
	// No list (a static program, or a core made before the dynamic
	// linker set it up): the interpreter is at AT_BASE, named by the
	// executable's PT_INTERP.
	uint64_t base = 0;
	char interp[4096];
	uint64_t ibias;
	if (!walked && exe.interp && hd_target_auxv(t, AT_BASE, &base) &&
	    base && read_string(t, exe.interp, interp, sizeof(interp)) &&
	    image_at(t, base, ph, &n, &ibias)) {
		struct hd_image ii = {.name = interp};
		struct image_info info;
		describe(t, ph, n, ibias, &ii, &info);
		if (!have_module_at(t, ii.start))
			err = hd_target_add_image_module(t, &ii);
		if (!err)
			err = label_mappings(t, interp, ph, n, ibias);
		if (err)
			return err;
	}
	if (exe.interp && !walked)
		set_problem(t, "the executable's DT_DEBUG is %s (the dynamic linker had not set up its list), so no library is known",
			    tagged ? "0" : "missing");
	t->recovered_modules = t->num_modules;
	hd_qsort(t->modules, t->num_modules, sizeof(*t->modules), module_cmp);
	return NULL;
}
