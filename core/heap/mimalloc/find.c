// Where mimalloc's heap is. Debian's libmimalloc exports no internal
// global (no _mi_heap_main, no segment map, no abandoned list in .dynsym)
// and ships no debug info, so everything is found from the data:
// - the library: a module named libmimalloc*, or an executable that
//   defines mi_malloc (a static link);
// - its version: what mi_version() returns, read from its code;
// - the main heap (_mi_heap_main) in the library's .data: the one heap
//   whose tld's heap_backing points back at it;
// - each thread's default heap (_mi_heap_default, a TLS variable) among
//   the words below the thread pointer: a heap whose thread_id is that
//   thread pointer;
// - the segments: at every MI_SEGMENT_SIZE-aligned address of the
//   address space, a header whose cookie is the address xor the main
//   heap's cookie. That finds the segments of every thread, the abandoned
//   segments of exited threads included, with no list to follow.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo/elf_symbols.h"
#include "heap/mimalloc/mimalloc_internal.h"
#include "util/sort.h"

#define TLS_SEARCH 8192
#define MAX_HEAPS 65000
#define MAX_SEGMENTS (1u << 20)

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const struct hd_module *hd_mi_find_lib(struct hd_target *t, char *evidence,
				       size_t len)
{
	size_t n = hd_target_num_modules(t);
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		const char *b = m->name ? base_name(m->name) : "";
		if (strncmp(b, "libmimalloc.so", 14) == 0 ||
		    strncmp(b, "libmimalloc-", 12) == 0) {
			snprintf(evidence, len, "%s is loaded", base_name(m->name));
			return m;
		}
	}
	// Statically linked: the executable defines mimalloc's API.
	// (mi_version may be left out of a static link that never calls it.)
	static const char *const names[] = {"mi_malloc", "mi_version"};
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(t, i);
		bool found[2];
		if (m->is_exe && m->file &&
		    hd_elf_defines_any(m->file, names, 2, found) && found[0]) {
			snprintf(evidence, len,
				 "statically linked: %s defines mi_malloc",
				 base_name(m->file));
			return m;
		}
	}
	return NULL;
}

// len bytes at link-time address vaddr of the ELF file at path, from its
// PT_LOAD segments (a core holds no code).
static bool read_file_vaddr(const char *path, uint64_t vaddr, void *buf,
			    size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = false;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t np;
	if (elf && elf_getphdrnum(elf, &np) == 0) {
		for (size_t i = 0; i < np && !ok; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    vaddr < ph.p_vaddr ||
			    vaddr + len > ph.p_vaddr + ph.p_filesz)
				continue;
			ok = pread(fd, buf, len,
				   (off_t)(ph.p_offset + vaddr - ph.p_vaddr)) ==
			     (ssize_t)len;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ok;
}

// mi_version() is `mov $VERSION, %eax; ret` in a release build: 209 is
// 2.0.9. The layouts of mimalloc_internal.h are 2.0.9's: walk() refuses
// another version it recognises.
void hd_mi_version(struct mi_walk *w)
{
	uint64_t value, size;
	uint8_t code[6];
	const struct hd_module *m = w->lib;
	if (!m->file) {
		snprintf(w->version_how, sizeof(w->version_how),
			 "%s: its file is not on this machine, so mi_version() could not be read; layout of mimalloc 2.0.9 assumed",
			 base_name(m->name));
		return;
	}
	struct hd_error *err = hd_elf_find_symbol(m->file, "mi_version", &value, &size);
	if (err) {
		hd_error_destroy(err);
		snprintf(w->version_how, sizeof(w->version_how),
			 "%s defines no mi_version; layout of mimalloc 2.0.9 assumed",
			 base_name(m->file));
		return;
	}
	err = hd_target_read(w->t, value + m->bias, code, sizeof(code));
	if (err) {
		hd_error_destroy(err);
		if (!read_file_vaddr(m->file, value, code, sizeof(code)))
			memset(code, 0, sizeof(code));
	}
	uint32_t v;
	memcpy(&v, code + 1, 4);
	if (code[0] != 0xb8 || code[5] != 0xc3 || v < 100 || v > 999) {
		snprintf(w->version_how, sizeof(w->version_how),
			 "mi_version() in %s is not `mov $N, %%eax; ret`; layout of mimalloc 2.0.9 assumed",
			 base_name(m->file));
		return;
	}
	snprintf(w->version, sizeof(w->version), "%u.%u.%u", v / 100,
		 v / 10 % 10, v % 10);
	snprintf(w->version_how, sizeof(w->version_how),
		 "mi_version() in %s returns %u (read from its code)",
		 base_name(m->file), v);
}

// [start, end) of the module's .data and .bss at run time.
static bool data_range(const struct hd_module *m, uint64_t *data,
		       uint64_t *data_end, uint64_t *end)
{
	struct hd_elf_section *secs;
	size_t n;
	if (!m->file)
		return false;
	struct hd_error *err = hd_elf_sections(m->file, &secs, &n);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	*data = *end = *data_end = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(secs[i].name, ".data") == 0) {
			*data = secs[i].addr + m->bias;
			*data_end = *data + secs[i].size;
		}
		if (strcmp(secs[i].name, ".bss") == 0)
			*end = secs[i].addr + secs[i].size + m->bias;
	}
	hd_elf_free_sections(secs, n);
	if (*end < *data_end)
		*end = *data_end;
	return *data != 0;
}

// A heap's thread_id: 0 before mimalloc initialised it, else the thread
// pointer of the thread that did (a target whose threads have no
// registers proves nothing).
static bool is_thread(struct hd_target *t, uint64_t id)
{
	bool regs = false;
	if (!id)
		return true;
	for (size_t i = 0; i < hd_target_num_threads(t); i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		regs |= th->has_regs && th->regs.fs_base;
		if (th->has_regs && th->regs.fs_base == id)
			return true;
	}
	return !regs;
}

struct hd_error *hd_mi_find_main_heap(struct mi_walk *w)
{
	uint64_t data, data_end, end;
	if (!data_range(w->lib, &data, &data_end, &end))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: the .data section of %s is unknown (its file is not on this machine?), so mimalloc's main heap cannot be found",
				       hd_target_name(w->t), w->lib->name);
	size_t len = data_end - data;
	if (len < HEAP_SIZE || len > (1u << 24))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: .data of %s is %zu bytes: %s",
				       hd_target_name(w->t), w->lib->name, len,
				       len < HEAP_SIZE ? "too small for mimalloc's main heap"
						       : "more than heapdom searches for mimalloc's main heap (16 MiB)");
	uint8_t *buf = malloc(len);
	if (!buf)
		return &hd_error_no_memory;
	struct hd_error *err = hd_target_read(w->t, data, buf, len);
	if (err) {
		free(buf);
		return hd_error_prefix(err, "mimalloc's .data");
	}
	// First a heap of a thread the target has, then any (the thread that
	// initialised mimalloc may have exited).
	for (int pass = 0; pass < 2; pass++) {
		for (size_t o = 0; o + HEAP_SIZE <= len; o += 8) {
			uint64_t tld = hd_mi_u64(buf + o), back;
			if (tld < data || tld + 32 > end || tld % 8 ||
			    !hd_mi_read64(w->t, tld + TLD_HEAP_BACKING, &back) ||
			    back != data + o ||
			    (!pass && !is_thread(w->t, hd_mi_u64(buf + o + HEAP_THREAD_ID))))
				continue;
			w->main_heap = data + o;
			w->main_cookie = hd_mi_u64(buf + o + HEAP_COOKIE);
			free(buf);
			return NULL;
		}
	}
	free(buf);
	return hd_error_create(HD_ERROR_NOT_FOUND,
			       "%s: no mimalloc heap (a tld whose heap_backing points back) in .data of %s [0x%llx, 0x%llx)",
			       hd_target_name(w->t), w->lib->name,
			       (unsigned long long)data,
			       (unsigned long long)data_end);
}

struct mi_heap_info *hd_mi_add_heap(struct mi_walk *w, uint64_t addr, bool tls)
{
	for (size_t i = 0; i < w->num_heaps; i++)
		if (w->heaps[i].addr == addr) {
			w->heaps[i].tls |= tls;
			return &w->heaps[i];
		}
	if (w->num_heaps == MAX_HEAPS)
		return NULL;
	if (w->num_heaps == w->cap_heaps) {
		size_t cap = w->cap_heaps ? 2 * w->cap_heaps : 16;
		struct mi_heap_info *n = realloc(w->heaps, cap * sizeof(*n));
		if (!n)
			return NULL;
		w->heaps = n;
		w->cap_heaps = cap;
	}
	struct mi_heap_info *hi = &w->heaps[w->num_heaps++];
	memset(hi, 0, sizeof(*hi));
	hi->addr = addr;
	hi->tls = tls;
	hi->main = addr == w->main_heap;
	hi->region = HD_REGION_NONE;
	uint8_t b[HEAP_SIZE];
	struct hd_error *err = hd_target_read(w->t, addr, b, sizeof(b));
	if (err) {
		hd_error_destroy(err);
		hi->bad = true;
		return hi;
	}
	hi->thread_id = hd_mi_u64(b + HEAP_THREAD_ID);
	hi->delayed = hd_mi_u64(b + HEAP_DELAYED_FREE);
	return hi;
}

// _mi_heap_default of each thread: in the static TLS below the thread
// pointer, a heap whose thread_id is that thread pointer (mimalloc's
// thread id on x86-64 is the thread pointer).
void hd_mi_find_tls_heaps(struct mi_walk *w)
{
	for (size_t i = 0; i < hd_target_num_threads(w->t); i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		uint64_t buf[TLS_SEARCH / 8];
		uint64_t fs = th->has_regs ? th->regs.fs_base : 0;
		if (fs < TLS_SEARCH)
			continue;
		struct hd_error *err = hd_target_read(w->t, fs - TLS_SEARCH, buf,
						      sizeof(buf));
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		for (size_t k = TLS_SEARCH / 8; k-- > 0;) {
			uint64_t p = buf[k], tid;
			if (!p || p % 8)
				continue;
			const struct hd_mapping *m = hd_target_find_mapping(w->t, p);
			if (!m || !(m->prot & HD_PROT_WRITE) ||
			    !hd_mi_read64(w->t, p + HEAP_THREAD_ID, &tid) ||
			    tid != fs)
				continue;
			uint64_t tld, back;
			if (!hd_mi_read64(w->t, p + HEAP_TLD, &tld) || !tld ||
			    !hd_mi_read64(w->t, tld + TLD_HEAP_BACKING, &back) ||
			    !back)
				continue;
			hd_mi_add_heap(w, p, true);
			break;
		}
	}
}

bool hd_mi_in_use(struct mi_walk *w)
{
	for (size_t i = 0; i < hd_target_num_mappings(w->t); i++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, i);
		if (!m->readable || !(m->prot & HD_PROT_WRITE))
			continue;
		uint64_t a = (m->start + MI_SEGMENT_SIZE - 1) & ~(MI_SEGMENT_SIZE - 1);
		for (; a + SEG_HEADER_SIZE <= m->end && a >= m->start; a += MI_SEGMENT_SIZE) {
			uint64_t cookie, used;
			if (hd_mi_read64(w->t, a + SEG_COOKIE, &cookie) &&
			    cookie == (a ^ w->main_cookie) &&
			    hd_mi_read64(w->t, a + SEG_USED, &used) && used)
				return true;
		}
	}
	return false;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct mi_segment_info *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

// One segment at addr, whose cookie matched: its header read and checked.
static bool read_segment(struct mi_walk *w, uint64_t addr,
			 struct mi_segment_info *s)
{
	memset(s, 0, sizeof(*s));
	s->addr = addr;
	s->header = malloc(SEG_HEADER_SIZE);
	if (!s->header)
		return false;
	struct hd_error *err = hd_target_read(w->t, addr, s->header, SEG_HEADER_SIZE);
	if (err) {
		hd_heap_problem_add(w->h, addr,
				    "mimalloc segment 0x%llx: its header is unreadable (%s); its blocks are missing",
				    (unsigned long long)addr, err->message);
		hd_error_destroy(err);
		free(s->header);
		s->header = NULL;
		return true;
	}
	const uint8_t *b = s->header;
	uint64_t slices = hd_mi_u64(b + SEG_SEGMENT_SLICES);
	s->info_slices = hd_mi_u64(b + SEG_INFO_SLICES);
	s->slice_entries = hd_mi_u64(b + SEG_SLICE_ENTRIES);
	s->kind = hd_mi_u32(b + SEG_KIND);
	s->thread_id = hd_mi_u64(b + SEG_THREAD_ID);
	s->used = hd_mi_u64(b + SEG_USED);
	s->abandoned = hd_mi_u64(b + SEG_ABANDONED);
	if (s->kind > 1 || !slices || slices > MI_MAX_SEGMENT_SLICES ||
	    (s->kind == 0 && slices != MI_SLICES_PER_SEGMENT) ||
	    !s->info_slices || s->slice_entries > MI_SLICES_PER_SEGMENT ||
	    s->info_slices >= s->slice_entries || s->slice_entries > slices) {
		hd_heap_problem_add(w->h, addr,
				    "mimalloc segment 0x%llx: its header is damaged (kind %u, %llu slices, %llu info slices, %llu entries); its blocks are missing",
				    (unsigned long long)addr, s->kind,
				    (unsigned long long)slices,
				    (unsigned long long)s->info_slices,
				    (unsigned long long)s->slice_entries);
		free(s->header);
		s->header = NULL;
		s->size = MI_SEGMENT_SIZE;
		return true;
	}
	s->size = slices << MI_SLICE_SHIFT;
	return true;
}

struct hd_error *hd_mi_find_segments(struct mi_walk *w)
{
	size_t cap = 64;
	w->segs = malloc(cap * sizeof(*w->segs));
	if (!w->segs)
		return &hd_error_no_memory;
	uint64_t next = 0; // the end of the last segment: huge ones span many
	for (size_t i = 0; i < hd_target_num_mappings(w->t); i++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, i);
		if (!m->readable || !(m->prot & HD_PROT_WRITE))
			continue;
		uint64_t a = (m->start + MI_SEGMENT_SIZE - 1) & ~(MI_SEGMENT_SIZE - 1);
		if (a < next)
			a = next;
		for (; a + SEG_HEADER_SIZE <= m->end && a >= m->start;
		     a += MI_SEGMENT_SIZE) {
			uint64_t cookie;
			if (a < next || !hd_mi_read64(w->t, a + SEG_COOKIE, &cookie) ||
			    cookie != (a ^ w->main_cookie))
				continue;
			if (w->num_segs == MAX_SEGMENTS) {
				hd_heap_problem_add(w->h, a,
						    "more than %u mimalloc segments; the rest are skipped",
						    MAX_SEGMENTS);
				goto out;
			}
			if (w->num_segs == cap) {
				cap *= 2;
				struct mi_segment_info *n =
					realloc(w->segs, cap * sizeof(*n));
				if (!n)
					return &hd_error_no_memory;
				w->segs = n;
			}
			struct mi_segment_info *s = &w->segs[w->num_segs];
			if (!read_segment(w, a, s))
				return &hd_error_no_memory;
			w->num_segs++;
			next = a + s->size;
			// A huge segment's next aligned address is its data.
			a = ((next + MI_SEGMENT_SIZE - 1) & ~(MI_SEGMENT_SIZE - 1)) -
			    MI_SEGMENT_SIZE;
			if (a + MI_SEGMENT_SIZE < next)
				break;
		}
	}
out:
	hd_qsort(w->segs, w->num_segs, sizeof(*w->segs), seg_cmp);
	return NULL;
}

// mimalloc's size bins (_mi_bin, as Debian builds it: 8 bytes, then
// 16-byte steps up to 64 bytes, then four bins per power of two). A block
// of a bin's size serves every request of that bin; blocks of more than
// 128 KiB (MI_MEDIUM_OBJ_SIZE_MAX) serve only requests above it.
static unsigned bin_of(uint64_t size)
{
	uint64_t wsize = (size + 7) / 8;
	if (wsize <= 1)
		return 1;
	if (wsize <= 8)
		return (unsigned)((wsize + 1) & ~1ULL);
	wsize--;
	unsigned b = 63 - (unsigned)__builtin_clzll(wsize);
	return ((b << 2) + (unsigned)((wsize >> (b - 2)) & 3)) - 3;
}

uint64_t hd_mi_min_request(uint64_t bsize)
{
	if (bsize < 8)
		return 0;
	if (bsize > MI_MEDIUM_OBJ_SIZE_MAX)
		return MI_MEDIUM_OBJ_SIZE_MAX + 1;
	// The smallest size of bsize's bin: bins grow with size.
	unsigned bin = bin_of(bsize);
	uint64_t lo = 1, hi = bsize;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (bin_of(mid) < bin)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
