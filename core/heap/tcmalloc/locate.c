// Finding tcmalloc's state. Debian's libtcmalloc_minimal.so.4 exports
// ThreadCache::thread_heaps_ and Static::inited_ but hides the page heap,
// the central free lists and the size map, so they are found by their
// shapes in the library's writable data (.data and .bss): the size map's
// class_to_size_ (0, 8, 16 ... rising to 256 KiB, then zeros, and
// num_size_classes counting them); the central free lists, an array whose
// entry i says size class i; the page heap's free_[128], 256 dummy spans
// of zero start and length whose links are set, after a page map whose
// allocator_ is a function of the library. Nothing is assumed from where
// a global sits in the library.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfo/elf_symbols.h"
#include "heap/tcmalloc/tcmalloc_internal.h"

bool tc_read64(struct hd_target *t, uint64_t addr, uint64_t *ret)
{
	struct hd_error *err = hd_target_read(t, addr, ret, 8);
	hd_error_destroy(err);
	return !err;
}

bool tc_find_version(const char *file, char *ret, size_t len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool found = false;
	if (fstat(fd, &st) == 0 && st.st_size > 64 && st.st_size < (1LL << 32)) {
		const char *m = mmap(NULL, (size_t)st.st_size, PROT_READ,
				     MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			const char *end = m + st.st_size;
			static const char key[] = "gperftools ";
			for (const char *p = m; !found;) {
				p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1);
				if (!p)
					break;
				const char *v = p + sizeof(key) - 1, *e = v;
				while (e < end && e - v < 16 &&
				       ((*e >= '0' && *e <= '9') || *e == '.'))
					e++;
				// The string alone ("gperftools 2.10\0"), not prose.
				if (e > v && e < end && *e == '\0' && p > m && p[-1] == '\0') {
					snprintf(ret, len, "%.*s", (int)(e - v), v);
					found = true;
				}
				p = v;
			}
			munmap((void *)m, (size_t)st.st_size);
		}
	}
	close(fd);
	return found;
}

static bool symbol(const struct hd_heap_source *src, const struct hd_module *m,
		   const char *name, uint64_t *addr)
{
	uint64_t size;
	if (src->di) {
		const char *hint = strrchr(m->name, '/');
		hint = hint ? hint + 1 : m->name;
		struct hd_error *err = hd_debuginfo_find_symbol(
			src->di, m->is_exe ? NULL : hint, name, addr, &size);
		if (!err)
			return true;
		hd_error_destroy(err);
	}
	if (m->file) {
		struct hd_error *err = hd_elf_find_symbol(m->file, name, addr, &size);
		if (!err) {
			*addr += m->bias;
			return true;
		}
		hd_error_destroy(err);
	}
	return false;
}

static uint64_t u64(const struct hd_view *v, uint64_t a)
{
	uint64_t x = 0;
	if (a >= v->addr && a + 8 <= v->addr + v->len)
		memcpy(&x, v->data + (a - v->addr), 8);
	return x;
}

static uint32_t u32(const struct hd_view *v, uint64_t a)
{
	uint32_t x = 0;
	if (a >= v->addr && a + 4 <= v->addr + v->len)
		memcpy(&x, v->data + (a - v->addr), 4);
	return x;
}

// The size map: class_to_size_ at a (see the file's comment).
static bool sizemap_at(const struct hd_view *v, uint64_t a,
		       struct tc_globals *g)
{
	if (u32(v, a) != 0 || u32(v, a + 4) != 8 || u32(v, a + 8) != 16)
		return false;
	unsigned n = 1;
	uint32_t prev = 0;
	for (; n < TC_CLASSES_MAX; n++) {
		uint32_t s = u32(v, a + 4ull * n);
		if (!s)
			break;
		if (s <= prev || s % 8)
			return false;
		prev = s;
	}
	if (prev != TC_MAX_SIZE)
		return false;
	for (unsigned i = n; i < TC_CLASSES_MAX; i++)
		if (u32(v, a + 4ull * i))
			return false;
	uint64_t pages = (a + 4 * TC_CLASSES_MAX + 7) & ~7ull;
	if (u64(v, pages + 8 * TC_CLASSES_MAX) != n)
		return false;
	g->num_classes = n;
	g->class_to_size = a;
	g->class_to_pages = pages;
	for (unsigned i = 0; i < n; i++) {
		g->size[i] = u32(v, a + 4ull * i);
		g->move[i] = u32(v, a + TC_SM_MOVE + 4ull * i);
		g->pages[i] = u64(v, pages + 8ull * i);
		if (i && (!g->pages[i] || g->pages[i] > TC_MAX_PAGES ||
			  !g->move[i] || g->move[i] > 1024))
			return false;
	}
	return true;
}

static bool central_at(const struct hd_view *v, uint64_t a, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t c = a + (uint64_t)TC_CFL_SIZE * i;
		if (u64(v, c + TC_CFL_CLASS) != i ||
		    !u64(v, c + TC_CFL_EMPTY + TC_SPAN_NEXT) ||
		    !u64(v, c + TC_CFL_NONEMPTY + TC_SPAN_NEXT) ||
		    u32(v, c + TC_CFL_USED_SLOTS) > TC_CFL_MAX_SLOTS)
			return false;
	}
	return true;
}

// free_[0] of the page heap at a.
static bool free_lists_at(const struct hd_view *v, uint64_t a,
			  const struct hd_module *m)
{
	for (unsigned k = 0; k < 2 * TC_MAX_PAGES; k++) {
		uint64_t s = a + (uint64_t)TC_SPAN_SIZE * k;
		if (u64(v, s + TC_SPAN_START) || u64(v, s + TC_SPAN_LENGTH) ||
		    !u64(v, s + TC_SPAN_NEXT) || !u64(v, s + TC_SPAN_PREV))
			return false;
	}
	uint64_t alloc = u64(v, a - TC_PH_FREE + TC_PH_ALLOCATOR);
	return alloc >= m->start && alloc < m->end;
}

// The module's writable data, [*lo, *hi) in the target.
static bool data_range(const struct hd_module *m, uint64_t *lo, uint64_t *hi)
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
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(secs[i].name, ".data") == 0 ||
		    strcmp(secs[i].name, ".bss") == 0) {
			if (secs[i].addr < *lo)
				*lo = secs[i].addr;
			if (secs[i].addr + secs[i].size > *hi)
				*hi = secs[i].addr + secs[i].size;
		}
	hd_elf_free_sections(secs, n);
	if (*lo >= *hi)
		return false;
	*lo = (*lo + m->bias) & ~7ull;
	*hi += m->bias;
	return true;
}

struct hd_error *tc_locate(const struct hd_heap_source *src,
			   const struct hd_module *m, struct tc_globals *g,
			   bool *inited)
{
	struct hd_target *t = src->t;
	memset(g, 0, sizeof(*g));
	*inited = true;
	uint64_t a;
	uint8_t b;
	if (symbol(src, m, "_ZN8tcmalloc6Static7inited_E", &a)) {
		struct hd_error *err = hd_target_read(t, a, &b, 1);
		if (!err && !b) {
			*inited = false;
			return NULL;
		}
		hd_error_destroy(err);
	}
	if (!symbol(src, m, "_ZN8tcmalloc11ThreadCache13thread_heaps_E",
		    &g->thread_heaps))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: tcmalloc's ThreadCache::thread_heaps_ has no symbol in %s",
				       hd_target_name(t), m->name);
	uint64_t lo, hi;
	if (!data_range(m, &lo, &hi))
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: the sections of %s are not readable on this machine: tcmalloc's page heap is found in its data",
				       hd_target_name(t), m->file ? m->file : m->name);
	struct hd_view v;
	struct hd_error *err = hd_target_view(t, lo, hi - lo, &v);
	if (err)
		return err;
	// Two passes: the size map (which says how many central free lists
	// there are) lies after the other two in Debian's build.
	unsigned found = 0;
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t p = lo; p + 16 <= hi; p += pass ? 8 : 4) {
			uint64_t dlo, dhi;
			if (!hd_view_next_data(&v, p, hi, &dlo, &dhi))
				break;
			if (dlo > p)
				p = dlo & ~7ull;
			if (pass == 0) {
				if (sizemap_at(&v, p, g)) {
					found |= 1;
					break;
				}
				continue;
			}
			if (!(found & 4) && free_lists_at(&v, p, m)) {
				g->pageheap = p - TC_PH_FREE;
				found |= 4;
			}
			if ((found & 1) && !(found & 2) &&
			    central_at(&v, p, g->num_classes)) {
				g->central = p;
				found |= 2;
			}
		}
	hd_view_deinit(&v);
	if (found != 7)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: tcmalloc's %s%s%swere not found in the data of %s [0x%llx, 0x%llx)",
				       hd_target_name(t),
				       found & 1 ? "" : "size map ",
				       found & 2 ? "" : "central free lists ",
				       found & 4 ? "" : "page heap ", m->name,
				       (unsigned long long)lo, (unsigned long long)hi);
	snprintf(g->method, sizeof(g->method),
		 "thread_heaps_ from its symbol; page heap, central free lists and size map by their shapes in %s's data",
		 strrchr(m->name, '/') ? strrchr(m->name, '/') + 1 : m->name);
	return NULL;
}
