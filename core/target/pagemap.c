// Pages a process on this machine never touched, from /proc/PID/pagemap:
// one 64-bit entry per virtual page, bit 63 "present in RAM", bit 62
// "swapped". In a private anonymous mapping (no file, not shared) a page
// with neither bit has no page table entry at all: it was never written,
// or the process discarded it (MADV_DONTNEED), and it reads as zeros. File
// and shared mappings are left alone: a page of theirs that is not mapped
// in still holds the file's or the other sharers' bytes.
//
// Without CAP_SYS_ADMIN the kernel hides the page frame numbers (bits
// 0-54 read as zero) but still gives the present and swapped bits, which
// are all this needs; opening the file takes the same ptrace access as
// /proc/PID/mem.
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "target_internal.h"
#include "util/vec.h"
#include "util/search.h"

#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_PFN_MASK ((1ull << 55) - 1)
// The huge zero page's frames (THP: 2 MiB of 4 KiB frames).
#define HUGE_ZERO_FRAMES 512
// Entries read per system call (32 KiB: 128 MiB of address space).
#define PM_BATCH 4096

struct hd_pagemap {
	int fd;
	uint64_t page;
	// The frames of the kernel's zero pages, or 0 when the kernel hides
	// frame numbers (no CAP_SYS_ADMIN). A read of an untouched page
	// through /proc/PID/mem or ptrace (a debugger's `x`, gcore, an
	// earlier analysis that read everything) maps it to the shared zero
	// page: present, but still never written.
	uint64_t zero_pfn, huge_zero_pfn;
	struct hd_extent *anon; // private anonymous mappings, sorted
	size_t num_anon, cap_anon;
};

// Whether a maps line's mapping is readable private anonymous memory: no file, or
// one of the kernel's names for anonymous memory ([heap], [stack],
// [anon:NAME] from PR_SET_VMA_ANON_NAME).
static bool anon_private(const char *perms, const char *path)
{
	// Unreadable ones (guard pages) are never read, and debuggers
	// leave them out of their lists.
	if (perms[0] != 'r' || perms[3] != 'p')
		return false;
	if (!*path)
		return true;
	return !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6) ||
	       !strncmp(path, "[anon:", 6);
}

static struct hd_error *read_anon_mappings(struct hd_pagemap *pm, int pid,
					   int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", pid, tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT
			       ? hd_error_create(HD_ERROR_NOT_FOUND,
						 "process %d is gone", pid)
			       : hd_error_os(errno, path, "cannot read the mappings");
	char *line = NULL;
	size_t cap = 0;
	struct hd_error *err = NULL;
	while (!err && getline(&line, &cap, f) >= 0) {
		uint64_t start, end;
		char perms[8];
		int at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n",
			   &start, &end, perms, &at) < 3 || !at ||
		    strlen(perms) < 4)
			continue;
		if (!anon_private(perms, line + at))
			continue;
		struct hd_extent e = {start, end};
		if (!HD_VEC_PUSH(pm->anon, pm->num_anon, pm->cap_anon, e))
			err = &hd_error_no_memory;
	}
	free(line);
	fclose(f);
	return err;
}

// The frame of the page at addr in this process, or 0.
static uint64_t own_pfn(int fd, const volatile uint8_t *addr, uint64_t page)
{
	(void)*addr; // a read fault maps the zero page
	uint64_t e;
	if (pread(fd, &e, 8, (off_t)((uintptr_t)addr / page * 8)) != 8 ||
	    !(e & PM_PRESENT))
		return 0;
	return e & PM_PFN_MASK;
}

// Finds the zero pages' frames by reading untouched memory of our own.
static void find_zero_frames(struct hd_pagemap *pm)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t huge = (size_t)pm->page * HUGE_ZERO_FRAMES;
	uint8_t *m = mmap(NULL, 2 * huge, PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m != MAP_FAILED) {
		// A 2 MiB-aligned page inside: THP may map the huge zero
		// page there; the last page of the area stays small.
		uint8_t *aligned = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(aligned, huge, MADV_HUGEPAGE);
		pm->zero_pfn = own_pfn(fd, m + 2 * huge - pm->page, pm->page);
		uint64_t hz = own_pfn(fd, aligned, pm->page);
		if (hz && hz != pm->zero_pfn)
			pm->huge_zero_pfn = hz;
		munmap(m, 2 * huge);
	}
	close(fd);
}

// A page with no data: never touched, or mapped to a zero page.
static bool untouched(const struct hd_pagemap *pm, uint64_t e)
{
	if (!(e & (PM_PRESENT | PM_SWAPPED)))
		return true;
	if (!(e & PM_PRESENT) || !pm->zero_pfn)
		return false;
	uint64_t pfn = e & PM_PFN_MASK;
	return pfn == pm->zero_pfn ||
	       (pm->huge_zero_pfn && pfn - pm->huge_zero_pfn < HUGE_ZERO_FRAMES);
}

struct hd_error *hd_pagemap_open(int pid, int tid, struct hd_pagemap **ret)
{
	struct hd_pagemap *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return &hd_error_no_memory;
	long page = sysconf(_SC_PAGESIZE);
	pm->page = page > 0 ? (uint64_t)page : 4096;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/pagemap", pid, tid);
	pm->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->fd < 0) {
		struct hd_error *err = hd_error_os(errno, path, "cannot open");
		free(pm);
		return err;
	}
	struct hd_error *err = read_anon_mappings(pm, pid, tid);
	if (err) {
		hd_pagemap_close(pm);
		return err;
	}
	find_zero_frames(pm);
	*ret = pm;
	return NULL;
}

void hd_pagemap_close(struct hd_pagemap *pm)
{
	if (!pm)
		return;
	if (pm->fd >= 0)
		close(pm->fd);
	free(pm->anon);
	free(pm);
}

// Appends the touched pages of [addr, end), which lies in one private
// anonymous mapping. A read that fails counts the rest as data: skipping
// is an optimisation, never a guess.
static bool touched_pages(struct hd_pagemap *pm, uint64_t addr, uint64_t end,
			  struct hd_extent_list *out)
{
	uint64_t buf[PM_BATCH];
	uint64_t first = addr / pm->page, last = (end - 1) / pm->page;
	for (uint64_t p = first; p <= last;) {
		uint64_t n = last - p + 1 < PM_BATCH ? last - p + 1 : PM_BATCH;
		ssize_t r = pread(pm->fd, buf, n * 8, (off_t)(p * 8));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 8)
			return hd_extent_push(out, p * pm->page > addr ? p * pm->page : addr, end);
		n = (uint64_t)r / 8;
		for (uint64_t i = 0; i < n; i++, p++) {
			if (untouched(pm, buf[i]))
				continue;
			uint64_t lo = p * pm->page, hi = lo + pm->page;
			if (!hd_extent_push(out, lo > addr ? lo : addr,
					    hi < end ? hi : end))
				return false;
		}
	}
	return true;
}

struct hd_error *hd_pagemap_extents(struct hd_pagemap *pm, uint64_t addr,
				    uint64_t end, struct hd_extent_list *out)
{
	// The first anonymous mapping that ends after addr.
	size_t lo = HD_FIRST_ENDING_AFTER(pm->anon, pm->num_anon, end, addr);
	uint64_t p = addr;
	for (size_t i = lo; i < pm->num_anon && p < end; i++) {
		const struct hd_extent *a = &pm->anon[i];
		if (a->start >= end)
			break;
		if (a->start > p && !hd_extent_push(out, p, a->start))
			return &hd_error_no_memory;
		uint64_t s = a->start > p ? a->start : p;
		uint64_t e = a->end < end ? a->end : end;
		if (!touched_pages(pm, s, e, out))
			return &hd_error_no_memory;
		p = e;
	}
	if (p < end && !hd_extent_push(out, p, end))
		return &hd_error_no_memory;
	return NULL;
}

size_t hd_pagemap_num_anon(const struct hd_pagemap *pm)
{
	return pm->num_anon;
}

struct hd_extent hd_pagemap_anon(const struct hd_pagemap *pm, size_t i)
{
	return pm->anon[i];
}
