// ELF core file backend. The file is mapped once; reads of memory that the
// core holds are copies (or zero-copy views) from that mapping, read-only
// file-backed ranges the core omits come from the mapped file itself, and
// anything else is a fault, never zeros.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_internal.h"
#include "util/vec.h"
#include "util/sort.h"
#include "util/search.h"

struct core_segment {
	uint64_t start, end;   // virtual range [start, end)
	uint64_t offset;       // file offset of the data
	uint64_t avail;        // bytes present in the file (truncation applied)
	uint64_t filesz;       // bytes the header claims
	uint32_t prot;
	int file_index;        // backing file from NT_FILE, -1 if anonymous
	uint64_t file_offset;  // offset in that file at start
};

struct core_file {
	int fd;
	const uint8_t *data;
	size_t size;
	struct core_segment *segs;
	size_t num_segs, cap_segs;
	// Backing files opened on demand for omitted read-only ranges.
	char **file_paths;
	int *file_fds;
	size_t num_files;
	// Anonymous private memory was dumped (coredump_filter bit 0, or a
	// gcore that dumps everything): a private file mapping left out was
	// then never written, and its file's bytes are its content.
	bool anon_dumped;
};

// Why a mapped file on this machine cannot stand for the memory the core
// left out: it is another build than the process mapped (the module's
// build-id in the core differs), or NULL if it can.
static const struct hd_module_issue *refused_file(const struct hd_target *t,
						  const char *path)
{
	for (size_t i = 0; i < t->num_issues; i++)
		if (t->issues[i].mismatch && strcmp(t->issues[i].name, path) == 0)
			return &t->issues[i];
	return NULL;
}

// The file to read for path: --exe's for the executable, else path under
// the sysroot.
static char *backing_path(const struct hd_target *t, const char *path)
{
	for (size_t i = 0; i < t->num_modules; i++)
		if (t->modules[i].is_exe && t->exe_override &&
		    strcmp(t->modules[i].name, path) == 0)
			return strdup(t->exe_override);
	return hd_target_resolve_path(t, path);
}

static struct core_segment *find_segment(struct core_file *c, uint64_t addr)
{
	size_t lo = HD_FIRST_ENDING_AFTER(c->segs, c->num_segs, end, addr);
	if (lo < c->num_segs && c->segs[lo].start <= addr)
		return &c->segs[lo];
	return NULL;
}

// Whether the file behind path can be read (not opened here: a process
// maps hundreds of files, each in several NT_FILE entries).
static bool backing_exists(const struct hd_target *t, const char *path)
{
	char *file = backing_path(t, path);
	bool ok = file && access(file, R_OK) == 0;
	free(file);
	return ok;
}

// Opens the file behind NT_FILE entry idx once; false if it cannot be.
static bool open_backing(struct hd_target *t, struct core_file *c, int idx)
{
	if (c->file_fds[idx] == -1) {
		char *path = backing_path(t, c->file_paths[idx]);
		c->file_fds[idx] = path ? open(path, O_RDONLY | O_CLOEXEC) : -2;
		if (c->file_fds[idx] < 0)
			c->file_fds[idx] = -2;
		free(path);
	}
	return c->file_fds[idx] >= 0;
}

static struct hd_error *read_backing_file(struct hd_target *t,
					  struct core_file *c,
					  struct core_segment *s, uint64_t addr,
					  uint8_t *buf, size_t n)
{
	int idx = s->file_index;
	if (t->core_only)
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "memory at 0x%llx is not in the core",
				   (unsigned long long)addr);
	const struct hd_module_issue *is = refused_file(t, c->file_paths[idx]);
	if (is)
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "memory at 0x%llx is not in the core, and %s on this machine is another build than the process mapped (build-id %s in the core, %s in the file)",
				   (unsigned long long)addr, is->file,
				   is->target_id, is->file_id);
	if (!open_backing(t, c, idx))
		return hd_error_at(HD_ERROR_FAULT, addr,
				   "memory at 0x%llx is not in the core and its file %s cannot be opened (use --sysroot)",
				   (unsigned long long)addr, c->file_paths[idx]);
	uint64_t off = s->file_offset + (addr - s->start);
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(c->file_fds[idx], buf + done, n - done,
				  (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			// Name the first byte the file does not hold.
			uint64_t at = addr + done;
			return hd_error_at(HD_ERROR_FAULT, at,
					   "memory at 0x%llx is not in the core and lies past the end of %s",
					   (unsigned long long)at,
					   c->file_paths[idx]);
		}
		done += (size_t)r;
	}
	return NULL;
}

// pread until n bytes are read; -1 on an error or the end of the file.
static int pread_all(int fd, void *buf, size_t n, off_t off)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

static struct hd_error *core_read(struct hd_target *t, uint64_t addr,
				  void *buf, size_t len)
{
	struct core_file *c = t->impl;
	uint8_t *out = buf;
	while (len) {
		struct core_segment *s = find_segment(c, addr);
		if (!s)
			return hd_error_at(HD_ERROR_FAULT, addr,
					   "address 0x%llx is not mapped in the core",
					   (unsigned long long)addr);
		uint64_t in_seg = addr - s->start;
		size_t n = len;
		if (n > s->end - addr)
			n = s->end - addr;
		if (in_seg < s->avail) {
			if (n > s->avail - in_seg)
				n = s->avail - in_seg;
			// Read, not copied from the mapping: a scattered read
			// (a block's name, a framework module's object) would
			// map the page in and count it toward RSS; passes over
			// whole heaps use views and give their pages back.
			if (pread_all(c->fd, out, n, (off_t)(s->offset + in_seg)) != 0)
				memcpy(out, c->data + s->offset + in_seg, n);
		} else if (s->file_index >= 0 &&
			   (!(s->prot & HD_PROT_WRITE) || c->anon_dumped)) {
			struct hd_error *err =
				read_backing_file(t, c, s, addr, out, n);
			if (err)
				return err;
		} else if (in_seg < s->filesz) {
			return hd_error_at(HD_ERROR_FAULT, addr,
					   "memory at 0x%llx is missing: the core is truncated",
					   (unsigned long long)addr);
		} else {
			return hd_error_at(HD_ERROR_FAULT, addr,
					   "memory at 0x%llx was not dumped into the core",
					   (unsigned long long)addr);
		}
		out += n;
		addr += n;
		len -= n;
	}
	return NULL;
}

static const uint8_t *core_direct(struct hd_target *t, uint64_t addr,
				  size_t len)
{
	struct core_file *c = t->impl;
	struct core_segment *s = find_segment(c, addr);
	if (!s || addr - s->start > s->avail || len > s->avail - (addr - s->start))
		return NULL;
	return c->data + s->offset + (addr - s->start);
}

// Holes of a sparse core file: the kernel skips the pages a process never
// touched with a seek when it writes a core to a file, and `cp
// --sparse=always` or `fallocate --dig-holes` punch out zero blocks, so
// SEEK_DATA/SEEK_HOLE find them. Only the bytes a segment holds in the file
// are asked about: a range the core left out reads from its mapped file or
// fails, and counts as data.
static struct hd_error *core_data_extents(struct hd_target *t, uint64_t addr,
					  uint64_t end,
					  struct hd_extent_list *out)
{
	struct core_file *c = t->impl;
	uint64_t p = addr;
	while (p < end) {
		// The first segment that ends after p.
		size_t lo = HD_FIRST_ENDING_AFTER(c->segs, c->num_segs, end, p);
		struct core_segment *s = lo < c->num_segs ? &c->segs[lo] : NULL;
		if (!s || s->start > p) {
			// Unmapped up to the next segment: reads fault there.
			uint64_t next = s && s->start < end ? s->start : end;
			if (!hd_extent_push(out, p, next < end ? next : end))
				return &hd_error_no_memory;
			p = next;
			continue;
		}
		uint64_t seg_end = s->end < end ? s->end : end;
		uint64_t in_file_end = s->start + s->avail;
		uint64_t stop = in_file_end < seg_end ? in_file_end : seg_end;
		// The segment's bytes in the file, hole by hole.
		while (p < stop) {
			off_t off = (off_t)(s->offset + (p - s->start));
			off_t data = lseek(c->fd, off, SEEK_DATA);
			if (data < 0) {
				// ENXIO: only a hole up to the end of the
				// file; anything else (no SEEK_DATA here):
				// assume data.
				if (errno == ENXIO)
					p = stop;
				else if (!hd_extent_push(out, p, stop))
					return &hd_error_no_memory;
				else
					p = stop;
				break;
			}
			uint64_t dstart = s->start + ((uint64_t)data - s->offset);
			if (dstart >= stop)
				break;
			off_t hole = lseek(c->fd, data, SEEK_HOLE);
			uint64_t dend = hole < 0 ? stop
				       : s->start + ((uint64_t)hole - s->offset);
			if (dend > stop)
				dend = stop;
			if (!hd_extent_push(out, dstart > p ? dstart : p, dend))
				return &hd_error_no_memory;
			p = dend;
		}
		if (!hd_extent_push(out, stop > p ? stop : p, seg_end))
			return &hd_error_no_memory;
		p = seg_end;
	}
	return NULL;
}

static void core_destroy(struct hd_target *t)
{
	struct core_file *c = t->impl;
	if (!c)
		return;
	if (c->data)
		munmap((void *)c->data, c->size);
	if (c->fd >= 0)
		close(c->fd);
	for (size_t i = 0; i < c->num_files; i++) {
		free(c->file_paths[i]);
		if (c->file_fds[i] >= 0)
			close(c->file_fds[i]);
	}
	free(c->file_paths);
	free(c->file_fds);
	free(c->segs);
	free(c);
}

// The core is mapped whole, but its pages count toward this process's RSS
// only while mapped in: a pass that has read a range gives its pages back
// (they stay in the page cache; reading them again faults them in).
static void core_release(struct hd_target *t, uint64_t addr, uint64_t len)
{
	struct core_file *c = t->impl;
	uint64_t end = addr + len, p = addr;
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
	while (p < end) {
		size_t i = HD_FIRST_ENDING_AFTER(c->segs, c->num_segs, end, p);
		if (i >= c->num_segs || c->segs[i].start >= end)
			break;
		struct core_segment *s = &c->segs[i];
		uint64_t lo = p > s->start ? p : s->start;
		uint64_t hi = s->end < end ? s->end : end;
		if (hi > s->start + s->avail)
			hi = s->start + s->avail;
		if (hi > lo) {
			// Whole pages of the file inside the range only.
			uintptr_t a = (uintptr_t)(c->data + s->offset + (lo - s->start));
			uintptr_t b = (uintptr_t)(c->data + s->offset + (hi - s->start));
			a = (a + page - 1) & ~(uintptr_t)(page - 1);
			b &= ~(uintptr_t)(page - 1);
			if (b > a)
				madvise((void *)a, b - a, MADV_DONTNEED);
		}
		p = s->end;
	}
}

static const struct hd_target_ops core_ops = {
	.release = core_release,
	.read = core_read,
	.direct = core_direct,
	.destroy = core_destroy,
	.data_extents = core_data_extents,
};

size_t hd_core_num_segments(const struct hd_target *t)
{
	if (t->ops != &core_ops)
		return 0;
	const struct core_file *c = t->impl;
	return c->num_segs;
}

struct hd_extent hd_core_segment(const struct hd_target *t, size_t i)
{
	const struct core_file *c = t->impl;
	const struct core_segment *s = &c->segs[i];
	uint64_t len = s->end - s->start;
	return (struct hd_extent){s->start,
				  s->start + (s->avail < len ? s->avail : len)};
}

struct nt_file_entry {
	uint64_t start, end, pgoff;
};

// A mapped file's range that has no segment in the core at all (gcore and
// the kernel leave out read-only file mappings): its bytes are the file's.
static struct hd_error *add_file_only(struct core_file *c, uint64_t start,
				      uint64_t end, int file, uint64_t offset)
{
	struct core_segment s = {
		.start = start, .end = end, .prot = HD_PROT_READ,
		.file_index = file, .file_offset = offset,
	};
	if (!HD_VEC_PUSH(c->segs, c->num_segs, c->cap_segs, s))
		return &hd_error_no_memory;
	return NULL;
}

// NT_FILE: count, page size, count × {start, end, pgoff}, count names.
static struct hd_error *parse_nt_file(struct hd_target *t, const uint8_t *d,
				      size_t len)
{
	struct core_file *c = t->impl;
	if (len < 16)
		return NULL;
	uint64_t count, page;
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (count > (len - 16) / 24)
		return hd_error_file(HD_ERROR_FORMAT, t->name,
				     "NT_FILE note is truncated");
	if (c->file_paths)
		return hd_error_file(HD_ERROR_FORMAT, t->name,
				     "core has two NT_FILE notes");
	const char *names = (const char *)d + 16 + count * 24;
	const char *end = (const char *)d + len;
	c->file_paths = calloc(count ? count : 1, sizeof(char *));
	c->file_fds = calloc(count ? count : 1, sizeof(int));
	if (!c->file_paths || !c->file_fds)
		return &hd_error_no_memory;
	for (uint64_t i = 0; i < count; i++) {
		struct nt_file_entry e;
		memcpy(&e, d + 16 + i * 24, sizeof(e));
		size_t n = strnlen(names, (size_t)(end - names));
		if (names + n >= end)
			return hd_error_file(HD_ERROR_FORMAT, t->name,
					     "NT_FILE note names are truncated");
		c->file_paths[i] = strndup(names, n);
		c->file_fds[i] = -1;
		if (!c->file_paths[i])
			return &hd_error_no_memory;
		c->num_files = i + 1;
		names += n + 1;
		// Attach the file to the segments it covers.
		size_t nsegs = c->num_segs; // the core's own, sorted
		uint64_t p = e.start;
		for (size_t s = 0; s < nsegs; s++) {
			struct core_segment *seg = &c->segs[s];
			if (seg->start >= e.start && seg->start < e.end &&
			    seg->file_index < 0) {
				seg->file_index = (int)i;
				seg->file_offset =
					e.pgoff * page + (seg->start - e.start);
			}
			if (seg->end <= p || seg->start >= e.end)
				continue;
			if (seg->start > p) {
				struct hd_error *err = add_file_only(c, p, seg->start,
								     (int)i, e.pgoff * page + (p - e.start));
				if (err)
					return err;
				// The push may have moved the array.
				seg = &c->segs[s];
			}
			if (seg->end > p)
				p = seg->end;
		}
		if (p < e.end) {
			struct hd_error *err = add_file_only(c, p, e.end, (int)i,
							     e.pgoff * page + (p - e.start));
			if (err)
				return err;
		}
	}
	return NULL;
}

static struct hd_error *parse_prstatus(struct hd_target *t, const uint8_t *d,
				       size_t len)
{
	// struct elf_prstatus on x86-64: pr_pid at 32, pr_reg at 112.
	if (len < 112 + sizeof(struct hd_regs))
		return hd_error_file(HD_ERROR_FORMAT, t->name,
				     "NT_PRSTATUS note is too short (%zu bytes)",
				     len);
	struct hd_thread th = {.has_regs = true};
	int32_t pid;
	memcpy(&pid, d + 32, 4);
	th.tid = pid;
	memcpy(&th.regs, d + 112, sizeof(th.regs));
	return hd_target_push_thread(t, &th);
}

static struct hd_error *parse_notes(struct hd_target *t, const uint8_t *d,
				    size_t len)
{
	size_t off = 0;
	while (off + sizeof(Elf64_Nhdr) <= len) {
		Elf64_Nhdr nh;
		memcpy(&nh, d + off, sizeof(nh));
		// 64-bit arithmetic: n_namesz + 3 must not wrap in 32 bits.
		size_t desc = off + sizeof(nh) +
			      (((uint64_t)nh.n_namesz + 3) & ~3ULL);
		if (desc > len || nh.n_descsz > len - desc)
			return hd_error_file(HD_ERROR_FORMAT, t->name,
					     "note at offset %zu of the notes segment runs past its end",
					     off);
		const uint8_t *dd = d + desc;
		struct hd_error *err = NULL;
		switch (nh.n_type) {
		case NT_PRSTATUS:
			err = parse_prstatus(t, dd, nh.n_descsz);
			break;
		case NT_FILE:
			if (nh.n_namesz == 5 && memcmp(d + off + sizeof(nh), "CORE", 5) == 0)
				err = parse_nt_file(t, dd, nh.n_descsz);
			break;
		case NT_AUXV:
			free(t->auxv);
			t->auxv = malloc(nh.n_descsz ? nh.n_descsz : 1);
			if (!t->auxv)
				return &hd_error_no_memory;
			memcpy(t->auxv, dd, nh.n_descsz);
			t->auxv_len = nh.n_descsz / 8;
			break;
		}
		if (err)
			return err;
		off = desc + (((uint64_t)nh.n_descsz + 3) & ~3ULL);
	}
	return NULL;
}

static int segment_cmp(const void *a, const void *b)
{
	const struct core_segment *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static struct hd_error *check_header(const char *path, const uint8_t *d,
				     size_t size)
{
	if (size < SELFMAG || memcmp(d, ELFMAG, SELFMAG) != 0)
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "not an ELF file (expected a core dump)");
	if (size < sizeof(Elf64_Ehdr))
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "truncated: %zu bytes, shorter than an ELF header",
				     size);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return hd_error_file(HD_ERROR_UNSUPPORTED, path,
				     "not a 64-bit little-endian ELF file; heapdom reads x86-64 cores");
	if (eh->e_type != ET_CORE)
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "is an ELF %s, not a core dump (make one with gcore or `ulimit -c unlimited`)",
				     eh->e_type == ET_EXEC ? "executable" :
				     eh->e_type == ET_DYN ? "shared object or PIE executable" :
				     "file");
	if (eh->e_machine != EM_X86_64)
		return hd_error_file(HD_ERROR_UNSUPPORTED, path,
				     "core of a foreign architecture (e_machine %u); heapdom reads x86-64 cores",
				     eh->e_machine);
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phoff > size ||
	    (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "truncated or corrupt: program headers lie outside the file");
	// Every core writer puts them at an 8-byte boundary (the ELF
	// header's size); load_core reads them in place.
	if (eh->e_phoff % 8)
		return hd_error_file(HD_ERROR_FORMAT, path,
				     "corrupt: program headers at offset 0x%llx, not 8-byte aligned",
				     (unsigned long long)eh->e_phoff);
	return NULL;
}

static struct hd_error *load_core(struct hd_target *t, struct core_file *c)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)c->data;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(c->data + eh->e_phoff);
	bool have_notes = false;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0)
			continue;
		struct core_segment s = {
			.start = ph[i].p_vaddr,
			.end = ph[i].p_vaddr + ph[i].p_memsz,
			.offset = ph[i].p_offset,
			.filesz = ph[i].p_filesz,
			.file_index = -1,
		};
		if (s.end < s.start)
			return hd_error_file(HD_ERROR_FORMAT, t->name,
					     "segment at 0x%llx wraps around",
					     (unsigned long long)s.start);
		uint64_t fs = ph[i].p_filesz < ph[i].p_memsz ? ph[i].p_filesz
							     : ph[i].p_memsz;
		s.avail = s.offset >= c->size ? 0
			  : (fs < c->size - s.offset ? fs : c->size - s.offset);
		s.prot = ((ph[i].p_flags & PF_R) ? HD_PROT_READ : 0) |
			 ((ph[i].p_flags & PF_W) ? HD_PROT_WRITE : 0) |
			 ((ph[i].p_flags & PF_X) ? HD_PROT_EXEC : 0);
		if (!HD_VEC_PUSH(c->segs, c->num_segs, c->cap_segs, s))
			return &hd_error_no_memory;
	}
	hd_qsort(c->segs, c->num_segs, sizeof(*c->segs), segment_cmp);
	// What a truncated file lacks: the memory of every segment whose
	// data runs past its end, the lowest range first.
	uint64_t expected = 0;
	for (size_t i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_offset + ph[i].p_filesz > expected)
			expected = ph[i].p_offset + ph[i].p_filesz;
	struct hd_truncation *tr = &t->truncation;
	for (size_t i = 0; i < c->num_segs; i++) {
		const struct core_segment *s = &c->segs[i];
		uint64_t fs = s->filesz < s->end - s->start ? s->filesz
							     : s->end - s->start;
		if (s->avail >= fs)
			continue;
		if (!tr->num_ranges) {
			tr->first_start = s->start + s->avail;
			tr->first_end = s->start + fs;
		}
		tr->num_ranges++;
		tr->missing_bytes += fs - s->avail;
	}
	if (expected > c->size) {
		t->truncated = true;
		tr->file_size = c->size;
		tr->expected_size = expected;
	}
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE)
			continue;
		if (ph[i].p_offset > c->size ||
		    ph[i].p_filesz > c->size - ph[i].p_offset)
		{
			char mem[128] = "";
			if (tr->num_ranges)
				snprintf(mem, sizeof(mem),
					 "; the first missing memory is 0x%llx-0x%llx (%zu range%s missing)",
					 (unsigned long long)tr->first_start,
					 (unsigned long long)tr->first_end,
					 tr->num_ranges, tr->num_ranges == 1 ? "" : "s");
			return hd_error_file(HD_ERROR_FORMAT, t->name,
					     "truncated: the file has %zu of the %llu bytes its headers describe, and its notes segment (threads, mapped files; bytes %llu-%llu) is cut, so nothing can be read even partially%s",
					     c->size, (unsigned long long)expected,
					     (unsigned long long)ph[i].p_offset,
					     (unsigned long long)(ph[i].p_offset + ph[i].p_filesz),
					     mem);
		}
		struct hd_error *err = parse_notes(t, c->data + ph[i].p_offset,
						   ph[i].p_filesz);
		if (err)
			return err;
		have_notes = true;
	}
	if (!have_notes)
		return hd_error_file(HD_ERROR_FORMAT, t->name,
				     "core has no notes segment (no threads or mapped files)");
	t->no_file_note = !c->file_paths;
	for (size_t i = 0; i < c->num_segs && !c->anon_dumped; i++)
		c->anon_dumped = c->segs[i].file_index < 0 &&
				 (c->segs[i].prot & HD_PROT_WRITE) &&
				 c->segs[i].filesz > 0;
	// NT_FILE added the file ranges the core left out.
	hd_qsort(c->segs, c->num_segs, sizeof(*c->segs), segment_cmp);
	for (size_t i = 0; i < c->num_segs; i++) {
		struct core_segment *s = &c->segs[i];
		struct hd_mapping m = {
			.start = s->start,
			.end = s->end,
			.prot = s->prot,
			.file_offset = s->file_offset,
			.path = s->file_index >= 0 ? c->file_paths[s->file_index]
						   : NULL,
			.readable = s->avail == s->end - s->start ||
				    (s->file_index >= 0 &&
				     (!(s->prot & HD_PROT_WRITE) || c->anon_dumped)),
		};
		struct hd_error *err = hd_target_push_mapping(t, &m);
		if (err)
			return err;
	}
	hd_target_sort_mappings(t);
	struct hd_error *err = t->no_file_note
				       ? hd_target_modules_from_link_map(t)
				       : hd_target_modules_from_mappings(t);
	if (err)
		return err;
	// A left-out range whose file is another build, or is not here, is
	// not readable.
	for (size_t i = 0; i < t->num_mappings; i++) {
		struct hd_mapping *m = &t->mappings[i];
		const struct core_segment *s = find_segment(c, m->start);
		if (m->path && s && s->file_index >= 0 &&
		    s->avail < s->end - s->start &&
		    (refused_file(t, m->path) || !backing_exists(t, m->path)))
			m->readable = false;
	}
	return NULL;
}

struct hd_error *hd_target_open_core(const char *path,
				     const struct hd_target_options *opts,
				     struct hd_target **ret)
{
	struct hd_target *t;
	struct hd_error *err = hd_target_alloc("core", path, &core_ops, opts, &t);
	if (err)
		return err;
	struct core_file *c = calloc(1, sizeof(*c));
	if (!c) {
		hd_target_destroy(t);
		return &hd_error_no_memory;
	}
	c->fd = -1;
	t->impl = c;
	c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (c->fd < 0) {
		err = hd_error_os(errno, path, "cannot open core file");
		goto fail;
	}
	struct stat st;
	if (fstat(c->fd, &st) < 0) {
		err = hd_error_os(errno, path, "cannot stat core file");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = hd_error_file(HD_ERROR_FORMAT, path,
				    "not a regular file");
		goto fail;
	}
	c->size = (size_t)st.st_size;
	if (c->size == 0) {
		err = hd_error_file(HD_ERROR_FORMAT, path, "empty file");
		goto fail;
	}
	void *p = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, c->fd, 0);
	if (p == MAP_FAILED) {
		err = hd_error_os(errno, path, "cannot map core file");
		goto fail;
	}
	c->data = p;
	err = check_header(path, c->data, c->size);
	if (err)
		goto fail;
	err = load_core(t, c);
	if (err)
		goto fail;
	*ret = t;
	return NULL;
fail:
	hd_target_destroy(t);
	return err;
}
