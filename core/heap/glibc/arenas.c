// Arenas: main_arena found by symbol or by the shape of its empty bins,
// the ring of arenas through malloc_state.next, and each arena's heaps.
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/vec.h"

#define MAX_ARENAS 4096
// 16384 heaps of 64 MiB: 1 TiB in one arena.
#define MAX_HEAPS_PER_ARENA 16384
// A heap is at least a page.
#define PAGE_SIZE_MIN 4096

// An empty bin points at itself: fd == bk == &bins[2(i-1)] - 16.
static bool empty_bin_at(const uint8_t *d, uint64_t addr)
{
	uint64_t fd, bk;
	memcpy(&fd, d, 8);
	memcpy(&bk, d + 8, 8);
	return fd == addr - 16 && bk == addr - 16;
}

// Checks that base is a malloc_state whose next-ring comes back to it.
static bool ring_closes(struct glibc_walk *w, uint64_t base,
			const struct glibc_layout *lay)
{
	uint64_t a = base;
	for (int i = 0; i < MAX_ARENAS; i++) {
		uint64_t next;
		if (!glibc_read64(w, a + lay->off_next, &next) || !next ||
		    (next & 7))
			return false;
		if (next == base)
			return true;
		a = next;
	}
	return false;
}

// A thread arena follows the heap_info at the start of its 64 MiB
// aligned heap, whose ar_ptr points back at it.
static bool thread_arena_shape(struct glibc_walk *w, uint64_t a,
			       const struct glibc_layout *lay)
{
	uint64_t off = a & (lay->heap_max_size - 1), ar_ptr;
	return (off == 32 || off == 48) &&
	       glibc_read64(w, a - off + lay->heap_off_ar_ptr, &ar_ptr) &&
	       ar_ptr == a;
}

// The member of base's arena ring that is not a thread arena, or 0.
static uint64_t ring_main(struct glibc_walk *w, uint64_t base,
			  const struct glibc_layout *lay)
{
	uint64_t a = base;
	for (int i = 0; i < MAX_ARENAS; i++) {
		if (!thread_arena_shape(w, a, lay))
			return a;
		if (!glibc_read64(w, a + lay->off_next, &a) || a == base)
			return 0;
	}
	return 0;
}

// Does base's next chain stay on readable, aligned arenas until it comes
// back to one it has passed (Brent's cycle search: no list, at most
// 3 * MAX_ARENAS reads)? A malloc_state of a damaged ring passes; the
// wrong guesses of a scan read garbage within a step or two.
static bool ring_sound(struct glibc_walk *w, uint64_t base,
		       const struct glibc_layout *lay)
{
	uint64_t tortoise = base, a = base;
	size_t power = 1, lam = 0;
	for (size_t i = 0; i < 3 * MAX_ARENAS; i++) {
		if (!glibc_read64(w, a + lay->off_next, &a) || !a || (a & 7))
			return false;
		if (a == tortoise)
			return true;
		if (++lam == power) {
			tortoise = a;
			power *= 2;
			lam = 0;
		}
	}
	return true; // longer than any ring: glibc_collect_arenas cuts it
}

// A top chunk as malloc keeps it: readable, of a valid size, and with
// PREV_INUSE set (a free chunk before top is merged into it).
static bool plausible_top(struct glibc_walk *w, uint64_t top)
{
	uint64_t size;
	return glibc_read64(w, top + 8, &size) && (size & 1) && !(size & 2) &&
	       (size & ~7ULL) >= 32 && !(size & 8);
}

// Rows of the version table whose malloc_state has bins at off_bins.
static uint32_t rows_with_bins(uint64_t off_bins)
{
	uint32_t m = 0;
	for (size_t i = 0; i < glibc_num_versions; i++)
		if (glibc_versions[i].off_bins == off_bins)
			m |= 1u << i;
	return m;
}

// Sets w->lay to the newest row in mask, w->candidates to mask.
static void use_rows(struct glibc_walk *w, uint32_t mask)
{
	for (size_t i = glibc_num_versions; i-- > 0;) {
		if (mask & (1u << i)) {
			glibc_layout_from_version(&w->lay, &glibc_versions[i]);
			w->lay.heap_info_size = 0; // measured, not assumed
			break;
		}
	}
	w->candidates = mask;
}

// With bins at 104 (glibc 2.17-2.26), attached_threads (2.23+) moves
// system_mem by a word. Without it the words after next_free are
// system_mem and max_system_mem, both whole pages, max >= system; with it
// the first is a thread count (small, never a whole nonzero page count).
static uint32_t attached_rows(struct glibc_walk *w, uint64_t base)
{
	uint64_t x = 0, y = 0;
	glibc_read64(w, base + 2168, &x);
	glibc_read64(w, base + 2176, &y);
	bool attached = !(x && !(x & 4095) && y >= x && !(y & 4095));
	uint32_t m = 0;
	for (size_t i = 0; i < glibc_num_versions; i++)
		if (glibc_versions[i].off_bins == 104 &&
		    (glibc_versions[i].off_system_mem == 2176) == attached)
			m |= 1u << i;
	return m;
}

// bins at 112 (glibc 2.27-2.42: have_fastchunks), 104 (2.17-2.26) or 24
// (2.43: no fastbins).
static const uint64_t bins_offsets[] = {112, 104, 24};
#define NUM_BINS_OFFSETS (sizeof(bins_offsets) / sizeof(bins_offsets[0]))

// Tries each layout family on a malloc_state whose bins[0] is at bins0
// (a scan's guess), or at base when bins0 is 0 (main_arena's symbol).
static bool try_layouts(struct glibc_walk *w, uint64_t bins0, uint64_t at,
			uint64_t *main_arena)
{
	for (size_t k = 0; k < NUM_BINS_OFFSETS; k++) {
		struct glibc_walk probe = *w;
		use_rows(&probe, rows_with_bins(bins_offsets[k]));
		const struct glibc_layout *lay = &probe.lay;
		uint64_t base = bins0 ? bins0 - bins_offsets[k] : at;
		uint64_t top;
		if (!glibc_read64(w, base + lay->off_top, &top) || !top ||
		    (top & 15))
			continue;
		if (!ring_closes(w, base, lay) &&
		    !(w->loose_ring && plausible_top(w, top) &&
		      ring_sound(w, base, lay)))
			continue;
		// The data scanned first may hold a thread arena (its heap
		// lies below libc, and a core without NT_FILE names no
		// libc): main_arena is the one of its ring that no heap_info
		// precedes.
		if (bins0 && !w->loose_ring)
			base = ring_main(w, base, lay);
		else if (bins0 && thread_arena_shape(w, base, lay))
			base = 0;
		else if (thread_arena_shape(w, base, lay))
			base = 0;
		if (!base)
			continue;
		uint32_t rows = probe.candidates;
		if (bins_offsets[k] == 104)
			rows = attached_rows(w, base);
		use_rows(w, rows);
		*main_arena = base;
		return true;
	}
	return false;
}

static bool try_bins_at(struct glibc_walk *w, uint64_t bins0,
			uint64_t *main_arena)
{
	return try_layouts(w, bins0, 0, main_arena);
}

bool glibc_main_arena_at(struct glibc_walk *w, uint64_t addr)
{
	uint64_t found;
	if (try_layouts(w, 0, addr, &found))
		return true;
	// The symbol says where main_arena is: a damaged ring does not
	// make it something else (glibc_collect_arenas reports the ring).
	w->loose_ring = true;
	bool ok = try_layouts(w, 0, addr, &found);
	w->loose_ring = false;
	return ok;
}

static bool scan_range(struct glibc_walk *w, const struct hd_mapping *m,
		       uint64_t *main_arena)
{
	struct hd_view v;
	struct hd_error *err = hd_target_view(w->t, m->start, m->end - m->start, &v);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	bool found = false;
	uint64_t len = m->end - m->start;
	for (uint64_t off = 0; off + 16 <= len && !found; off += 8) {
		uint64_t x = m->start + off;
		if (!empty_bin_at(v.data + off, x))
			continue;
		// Require a run of empty bins to rule out chance matches.
		int run = 0;
		for (uint64_t o = off; o + 16 <= len && run < 8; o += 16, run++)
			if (!empty_bin_at(v.data + o, m->start + o))
				break;
		if (run < 4)
			continue;
		// x is bins[2j] for some bin j; try every j.
		for (uint64_t j = 0; j < 127 && !found; j++) {
			if (x < m->start + 16 * j)
				break;
			found = try_bins_at(w, x - 16 * j, main_arena);
		}
		// Only the first run can belong to main_arena's bins.
		if (!found)
			off += 16 * 127;
	}
	hd_view_deinit(&v);
	return found;
}

static bool search_main_arena(struct glibc_walk *w, uint64_t *main_arena)
{
	// libc's writable data first, then every other module's.
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < hd_target_num_modules(w->t); i++) {
			const struct hd_module *mod = hd_target_module(w->t, i);
			bool is_libc = glibc_is_libc_path(mod->name);
			if (is_libc != (pass == 0))
				continue;
			for (size_t j = 0; j < hd_target_num_mappings(w->t); j++) {
				const struct hd_mapping *m =
					hd_target_mapping(w->t, j);
				// .bss continues into an anonymous mapping.
				if (m->start < mod->start || m->start >= mod->end + (1 << 20) ||
				    !(m->prot & HD_PROT_WRITE) || !m->readable)
					continue;
				if (m->path && strcmp(m->path, mod->name) != 0)
					continue;
				if (m->end - m->start > (64 << 20))
					continue;
				if (scan_range(w, m, main_arena))
					return true;
			}
		}
	}
	// libc's data without its module: a core whose NT_FILE lacks libc's
	// first mapping (some gcores leave read-only ranges out), or a core
	// with no libc module at all (no NT_FILE and no dynamic linker's list
	// to find it by), when any writable mapping outside the modules found
	// may be it.
	bool no_libc = !glibc_libc_module(w->t);
	for (size_t j = 0; j < hd_target_num_mappings(w->t); j++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, j);
		bool libc = glibc_is_libc_path(m->path);
		bool outside = !hd_target_find_module(w->t, m->start);
		if ((libc && outside) ||
		    (no_libc && outside && (!m->path || m->path[0] == '/'))) {
			if ((m->prot & HD_PROT_WRITE) && m->readable &&
			    m->end - m->start <= (64 << 20) &&
			    scan_range(w, m, main_arena))
				return true;
		}
	}
	// .bss continues into the anonymous mapping after libc's data.
	for (size_t j = 0; j + 1 < hd_target_num_mappings(w->t); j++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, j);
		const struct hd_mapping *n = hd_target_mapping(w->t, j + 1);
		if (glibc_is_libc_path(m->path) &&
		    !hd_target_find_module(w->t, m->start) && !n->path &&
		    n->start == m->end && (n->prot & HD_PROT_WRITE) && n->readable &&
		    n->end - n->start <= (64 << 20) && scan_range(w, n, main_arena))
			return true;
	}
	return false;
}

struct hd_error *glibc_find_main_arena(struct glibc_walk *w,
				       uint64_t *main_arena)
{
	if (search_main_arena(w, main_arena))
		return NULL;
	// No arena whose ring comes back to it: a ring damaged (an arena's
	// next pointing at itself, a ring longer than MAX_ARENAS) still
	// leaves main_arena, its empty bins and its top chunk where they
	// were. glibc_collect_arenas then says what is wrong with the ring.
	w->loose_ring = true;
	bool found = search_main_arena(w, main_arena);
	w->loose_ring = false;
	if (found)
		return NULL;
	return hd_error_create(HD_ERROR_NOT_FOUND,
			       "%s: no glibc malloc arena found (not a glibc heap, or a static program without symbols)",
			       hd_target_name(w->t));
}

// A malloc_state as libc's data holds it before malloc_init_state: every
// byte before `next` zero, `next` pointing at itself, then next_free 0,
// attached_threads 1 (2.23+, absent before), system_mem and
// max_system_mem 0.
static bool fresh_at(const uint8_t *d, uint64_t addr, uint64_t off_next)
{
	uint64_t w[5];
	memcpy(w, d + off_next, sizeof(w));
	if (w[0] != addr || w[1] != 0 || w[3] != 0 ||
	    !(w[2] == 1 || (w[2] == 0 && w[4] == 0)))
		return false;
	for (uint64_t o = 0; o < off_next; o += 8) {
		uint64_t x;
		memcpy(&x, d + o, 8);
		if (x)
			return false;
	}
	return true;
}

bool glibc_find_fresh_main_arena(struct glibc_walk *w, uint64_t *main_arena)
{
	// next follows the 254 bins words and binmap.
	for (size_t i = 0; i < hd_target_num_modules(w->t); i++) {
		const struct hd_module *mod = hd_target_module(w->t, i);
		if (!glibc_is_libc_path(mod->name))
			continue;
		for (size_t j = 0; j < hd_target_num_mappings(w->t); j++) {
			const struct hd_mapping *m = hd_target_mapping(w->t, j);
			if (m->start < mod->start || m->start >= mod->end + (1 << 20) ||
			    !(m->prot & HD_PROT_WRITE) || !m->readable ||
			    m->end - m->start > (64 << 20))
				continue;
			if (m->path && strcmp(m->path, mod->name) != 0)
				continue;
			struct hd_view v;
			struct hd_error *err = hd_target_view(w->t, m->start,
							      m->end - m->start, &v);
			if (err) {
				hd_error_destroy(err);
				continue;
			}
			bool found = false;
			uint64_t len = m->end - m->start;
			// The self-pointer first: it is rare, the zeros are not.
			for (uint64_t o = 0; o + 8 <= len && !found; o += 8) {
				uint64_t x;
				memcpy(&x, v.data + o, 8);
				for (size_t k = 0; k < NUM_BINS_OFFSETS && !found; k++) {
					uint64_t off_next = bins_offsets[k] + 254 * 8 + 16;
					if (o < off_next || o + 40 > len ||
					    x != m->start + o - off_next)
						continue;
					if (!fresh_at(v.data + o - off_next, x, off_next))
						continue;
					uint32_t rows = rows_with_bins(bins_offsets[k]);
					if (bins_offsets[k] == 104) {
						uint64_t att;
						memcpy(&att, v.data + o + 16, 8);
						rows &= attached_rows(w, x) |
							(att == 1 ? 0 : ~0u);
					}
					use_rows(w, rows);
					*main_arena = x;
					found = true;
				}
			}
			hd_view_deinit(&v);
			if (found)
				return true;
		}
	}
	return false;
}

static uint16_t push_arena(struct glibc_walk *w, uint64_t addr, bool is_main)
{
	struct hd_arena a = {.addr = addr, .is_main = is_main};
	glibc_read64(w, addr + w->lay.off_top, &a.top);
	glibc_read64(w, addr + w->lay.off_system_mem, &a.system_mem);
	if (!HD_VEC_PUSH(w->arenas, w->num_arenas, w->cap_arenas, a))
		return HD_ARENA_NONE;
	return (uint16_t)(w->num_arenas - 1);
}

static bool push_segment(struct glibc_walk *w, const struct glibc_segment *s)
{
	return HD_VEC_PUSH(w->segs, w->num_segs, w->cap_segs, *s);
}

static uint64_t align_chunk(uint64_t p)
{
	// The chunk's user pointer (p + 16) is 16-byte aligned.
	return (p + 15) & ~15ULL;
}

// Does the chain of chunk sizes from start land exactly on top? Each
// step costs one of *budget; none left is a no.
static bool chains_to_top(const uint8_t *d, uint64_t base, uint64_t start,
			  uint64_t top, uint64_t *budget)
{
	uint64_t p = start;
	while (p < top) {
		if (!*budget)
			return false;
		--*budget;
		uint64_t size;
		memcpy(&size, d + (p - base) + 8, 8);
		size &= ~7ULL;
		if (size < 32 || (size & 15) || size > top - p)
			return false;
		p += size;
	}
	return p == top;
}

// Does the heap look like it starts at p: a first chunk with PREV_INUSE
// (malloc sets it on the first chunk) followed by a second of a valid
// size? A static program's TLS block, which may come first, does not.
static bool starts_heap(const uint8_t *d, uint64_t base, uint64_t p,
			uint64_t top)
{
	uint64_t s1, s2;
	if (p + 16 > top)
		return false;
	memcpy(&s1, d + (p - base) + 8, 8);
	uint64_t n = s1 & ~7ULL;
	if (!(s1 & 1) || n < 32 || (n & 15) || n > top - p)
		return false;
	if (p + n == top)
		return true;
	memcpy(&s2, d + (p + n - base) + 8, 8);
	s2 &= ~7ULL;
	return s2 >= 32 && !(s2 & 15) && s2 <= top - (p + n);
}

// Steps of chunk chains heap_start may try in all: a damaged heap, from
// which no chain lands on top, costs this at most, not starts x chunks.
#define HEAP_START_BUDGET (1ULL << 24)

// Where the main heap's first chunk is, when mp_.sbrk_base is unknown:
// the start of the brk mapping, except in a static program, whose startup
// takes its TLS block from brk before malloc does. Then the heap began
// system_mem bytes below its end (sbrk_base; the first chunk is aligned
// up from it), or failing that at the lowest 16-byte boundary of the
// first 64 KiB whose chunk chain lands on top. A damaged heap lands on
// top from nowhere: if the mapping's start looks like a heap's, it is
// the start (the walk reports the damage), not a chunk past the damage.
static uint64_t heap_start(struct glibc_walk *w, uint64_t map_start,
			   uint64_t top, uint64_t end, uint64_t system_mem)
{
	struct hd_view v;
	struct hd_error *err = hd_target_view(w->t, map_start,
					      top + 16 - map_start, &v);
	if (err) {
		hd_error_destroy(err);
		return map_start;
	}
	uint64_t found = map_start, budget = HEAP_START_BUDGET;
	uint64_t guess = system_mem && system_mem <= end - map_start
				 ? end - system_mem : map_start;
	if (!chains_to_top(v.data, map_start, align_chunk(map_start), top, &budget) &&
	    !starts_heap(v.data, map_start, align_chunk(map_start), top)) {
		if (chains_to_top(v.data, map_start, align_chunk(guess), top, &budget)) {
			found = guess;
		} else {
			for (uint64_t p = align_chunk(map_start);
			     p < top && p < map_start + (64 << 10) && budget; p += 16) {
				uint64_t size;
				memcpy(&size, v.data + (p - map_start) + 8, 8);
				// The first chunk always has PREV_INUSE.
				if ((size & 1) && chains_to_top(v.data, map_start, p, top, &budget)) {
					found = p;
					break;
				}
			}
		}
	}
	hd_view_deinit(&v);
	return found;
}

// The mapping holding the chunks main_arena's bins and fastbins point at:
// the main heap, when top cannot say where it is.
static const struct hd_mapping *bins_mapping(struct glibc_walk *w,
					     const struct hd_arena *a)
{
	const struct glibc_layout *lay = &w->lay;
	for (unsigned i = 0; i < lay->nfastbins + lay->nbins; i++) {
		uint64_t field = i < lay->nfastbins
			? a->addr + lay->off_fastbins + 8 * i
			: a->addr + lay->off_bins + 8 * (i - lay->nfastbins);
		uint64_t p;
		if (!glibc_read64(w, field, &p) || !p ||
		    (p >= a->addr && p < a->addr + lay->state_size))
			continue;
		const struct hd_mapping *m = hd_target_find_mapping(w->t, p);
		if (m && m->readable && (m->prot & HD_PROT_WRITE) &&
		    (!m->path || m->path[0] != '/'))
			return m;
	}
	return NULL;
}

static struct hd_error *main_heap(struct glibc_walk *w, uint16_t idx)
{
	struct hd_arena *a = &w->arenas[idx];
	// A fresh arena's top is its unsorted bin: no heap yet.
	if (a->top == a->addr + w->lay.off_bins - 16)
		return NULL;
	uint64_t top_size;
	const struct hd_mapping *m = hd_target_find_mapping(w->t, a->top);
	if (!m || !m->readable || !glibc_read64(w, a->top + 8, &top_size)) {
		// Without top, the heap is the mapping its bins' chunks lie
		// in, and the chunk that ends it is top.
		const struct hd_mapping *hm = bins_mapping(w, a);
		hd_heap_problem_add(w->h, a->top,
				    "main arena's top chunk 0x%llx is %s; %s",
				    (unsigned long long)a->top,
				    m ? "unreadable" : "not mapped",
				    hm ? "its heap is taken as the mapping its bins' chunks lie in, and the chunk that ends it as top"
				       : "no bin points into a heap either, so the main heap is missing");
		if (!hm)
			return NULL;
		uint64_t start = 0;
		if (w->lay.mp_known)
			glibc_read64(w, w->lay.mp_addr + w->lay.mp_off_sbrk_base, &start);
		if (start < hm->start || start >= hm->end)
			start = hm->start;
		struct glibc_segment s = {
			.map_start = start,
			.start = align_chunk(start),
			.end = hm->end,
			.arena = idx,
			.top_lost = true,
		};
		a->num_heaps = 1;
		return push_segment(w, &s) ? NULL : &hd_error_no_memory;
	}
	uint64_t end = a->top + (top_size & ~7ULL);
	if (end > m->end || end < a->top) {
		// Top's size runs past its mapping: the heap ends with the
		// mapping (walk_segment reports the top's size).
		end = m->end;
	}
	uint64_t start = 0;
	if (w->lay.mp_known) {
		glibc_read64(w, w->lay.mp_addr + w->lay.mp_off_sbrk_base, &start);
	}
	if (!start) {
		// Without mp_, the heap is the brk mapping holding top.
		start = heap_start(w, m->start, a->top, end, a->system_mem);
	}
	struct glibc_segment s = {
		.map_start = start,
		.start = align_chunk(start),
		.end = end,
		.arena = idx,
		.top = a->top,
	};
	if (s.end < s.start || a->top < s.start) {
		hd_heap_problem_add(w->h, a->top,
				    "main arena's top 0x%llx lies below the heap start 0x%llx",
				    (unsigned long long)a->top,
				    (unsigned long long)s.start);
		return NULL;
	}
	a->num_heaps = 1;
	return push_segment(w, &s) ? NULL : &hd_error_no_memory;
}

// Was heap h of arena idx pushed already (segments from seg0 on)?
static bool heap_seen(const struct glibc_walk *w, size_t seg0, uint64_t h)
{
	for (size_t i = seg0; i < w->num_segs; i++)
		if (w->segs[i].map_start == h)
			return true;
	return false;
}

// Reads heap h's heap_info; false (with a problem) unless it belongs to
// the arena.
static bool read_heap_info(struct glibc_walk *w, const struct hd_arena *a,
			   uint64_t h, uint64_t *prev, uint64_t *size)
{
	const struct glibc_layout *lay = &w->lay;
	uint64_t ar_ptr = 0;
	if (!glibc_read64(w, h + lay->heap_off_ar_ptr, &ar_ptr) ||
	    !glibc_read64(w, h + lay->heap_off_prev, prev) ||
	    !glibc_read64(w, h + lay->heap_off_size, size)) {
		hd_heap_problem_add(w->h, h,
				    "heap_info at 0x%llx of arena 0x%llx is unreadable; its heap is skipped",
				    (unsigned long long)h, (unsigned long long)a->addr);
		return false;
	}
	if (ar_ptr != a->addr) {
		hd_heap_problem_add(w->h, h,
				    "heap_info at 0x%llx belongs to arena 0x%llx, not to arena 0x%llx; its heap is skipped",
				    (unsigned long long)h, (unsigned long long)ar_ptr,
				    (unsigned long long)a->addr);
		return false;
	}
	return true;
}

// The end of heap h when its heap_info's size cannot be believed: where
// the arena's top chunk ends if it lies there, else the end of the
// readable memory from h, HEAP_MAX_SIZE at most.
static uint64_t heap_end_without_size(struct glibc_walk *w,
				      const struct hd_arena *a, uint64_t h)
{
	uint64_t max = h + w->lay.heap_max_size, top_size;
	if (a->top > h && a->top < max && glibc_read64(w, a->top + 8, &top_size) &&
	    (top_size & ~7ULL) <= max - a->top)
		return a->top + (top_size & ~7ULL);
	const struct hd_mapping *m = hd_target_find_mapping(w->t, h);
	uint64_t end = m && m->readable ? m->end : h;
	return end < max ? end : max;
}

static struct hd_error *push_heap(struct glibc_walk *w, uint16_t idx,
				  uint64_t h, uint64_t size, bool *top_found)
{
	struct hd_arena *a = &w->arenas[idx];
	const struct glibc_layout *lay = &w->lay;
	uint64_t first = a->addr & ~(lay->heap_max_size - 1);
	struct glibc_segment s = {
		.arena = idx,
		.map_start = h,
		.end = h + size,
		.start = h == first ? align_chunk(a->addr + lay->state_size)
				    : align_chunk(h + lay->heap_info_size),
	};
	if (a->top >= h && a->top < h + size) {
		s.top = a->top;
		*top_found = true;
	}
	if (!push_segment(w, &s))
		return &hd_error_no_memory;
	a->num_heaps++;
	return NULL;
}

static struct hd_error *arena_heaps(struct glibc_walk *w, uint16_t idx)
{
	struct hd_arena *a = &w->arenas[idx];
	const struct glibc_layout *lay = &w->lay;
	uint64_t mask = ~(lay->heap_max_size - 1);
	uint64_t h = a->top & mask;
	uint64_t first = a->addr & mask;
	// A thread arena's malloc_state follows its first heap's heap_info:
	// 32 bytes before glibc 2.35, 48 with pagesize.
	uint64_t measured = a->addr - first;
	if (!lay->heap_info_size) {
		w->lay.heap_info_size = measured;
		if (measured == 32 || measured == 48)
			w->ev.heap_info = measured;
	}
	if (measured != lay->heap_info_size)
		hd_heap_problem_add(w->h, a->addr,
				    "arena 0x%llx lies 0x%llx bytes into its heap, not after a heap_info of 0x%llx bytes",
				    (unsigned long long)a->addr,
				    (unsigned long long)measured,
				    (unsigned long long)lay->heap_info_size);
	// The heaps from the one holding top back through heap_info.prev to
	// the first. A damaged chain (a loop, a size beyond HEAP_MAX_SIZE, a
	// heap_info of another arena) costs the heaps it hides, never a
	// loop: every heap is pushed once, and at most MAX_HEAPS_PER_ARENA.
	size_t seg0 = w->num_segs;
	uint64_t heap_bytes = 0;
	bool all_seen = true, top_found = false;
	struct hd_error *err = NULL;
	for (size_t n = 0; h && !err; n++) {
		uint64_t prev = 0, size = 0;
		if (n >= MAX_HEAPS_PER_ARENA) {
			hd_heap_problem_add(w->h, h,
					    "arena 0x%llx has more than %d heaps; the rest are skipped",
					    (unsigned long long)a->addr,
					    MAX_HEAPS_PER_ARENA);
			all_seen = false;
			break;
		}
		if (heap_seen(w, seg0, h)) {
			hd_heap_problem_add(w->h, h,
					    "the heap_info chain of arena 0x%llx loops: it comes back to heap 0x%llx, already passed; the chain is cut there",
					    (unsigned long long)a->addr,
					    (unsigned long long)h);
			all_seen = false;
			break;
		}
		if (!read_heap_info(w, a, h, &prev, &size)) {
			all_seen = false;
			break;
		}
		if (size > lay->heap_max_size || size < PAGE_SIZE_MIN) {
			uint64_t end = heap_end_without_size(w, a, h);
			hd_heap_problem_add(w->h, h,
					    "heap_info at 0x%llx says its heap holds 0x%llx bytes, %s HEAP_MAX_SIZE 0x%llx allows; walked to 0x%llx instead",
					    (unsigned long long)h,
					    (unsigned long long)size,
					    size > lay->heap_max_size ? "more than" : "less than",
					    (unsigned long long)lay->heap_max_size,
					    (unsigned long long)end);
			size = end - h;
			all_seen = false;
		}
		err = push_heap(w, idx, h, size, &top_found);
		heap_bytes += size;
		if (h == first)
			break;
		if (prev & ~mask) {
			hd_heap_problem_add(w->h, h,
					    "heap_info at 0x%llx: prev 0x%llx is not a heap's start; the chain is cut there",
					    (unsigned long long)h,
					    (unsigned long long)prev);
			all_seen = false;
			break;
		}
		h = prev;
	}
	// The first heap holds the arena's malloc_state: whatever the chain
	// did, it is there.
	uint64_t prev, size;
	if (!err && !heap_seen(w, seg0, first) && read_heap_info(w, a, first, &prev, &size)) {
		if (size > lay->heap_max_size || size < PAGE_SIZE_MIN)
			size = heap_end_without_size(w, a, first) - first;
		err = push_heap(w, idx, first, size, &top_found);
		all_seen = false;
	}
	if (err)
		return err;
	a = &w->arenas[idx];
	if (!top_found) {
		hd_heap_problem_add(w->h, a->top,
				    "arena 0x%llx's top 0x%llx lies outside its heaps; a chunk that ends a heap exactly is taken as its top",
				    (unsigned long long)a->addr,
				    (unsigned long long)a->top);
		for (size_t i = seg0; i < w->num_segs; i++)
			w->segs[i].top_lost = true;
	}
	// An arena's system_mem is the sum of its heaps' sizes: a wrong
	// layout (system_mem a word off) shows here.
	if (all_seen && heap_bytes && a->system_mem != heap_bytes)
		hd_heap_problem_add(w->h, a->addr,
				    "arena 0x%llx: system_mem 0x%llx but its heaps hold 0x%llx bytes",
				    (unsigned long long)a->addr,
				    (unsigned long long)a->system_mem,
				    (unsigned long long)heap_bytes);
	return NULL;
}

struct hd_error *glibc_collect_arenas(struct glibc_walk *w,
				      uint64_t main_arena)
{
	uint64_t a = main_arena;
	for (size_t n = 0; n < MAX_ARENAS; n++) {
		uint16_t idx = push_arena(w, a, a == main_arena);
		if (idx == HD_ARENA_NONE)
			return &hd_error_no_memory;
		struct hd_error *err = a == main_arena ? main_heap(w, idx)
						       : arena_heaps(w, idx);
		if (err)
			return err;
		uint64_t next;
		if (!glibc_read64(w, a + w->lay.off_next, &next)) {
			hd_heap_problem_add(w->h, a,
					    "arena 0x%llx: next pointer unreadable; later arenas are missing",
					    (unsigned long long)a);
			return NULL;
		}
		if (next == main_arena)
			return NULL;
		for (size_t i = 0; i < w->num_arenas; i++) {
			if (w->arenas[i].addr == next) {
				hd_heap_problem_add(w->h, a,
						    "arena ring loops: arena 0x%llx's next is 0x%llx, already passed, without returning to main_arena 0x%llx; the ring is cut there",
						    (unsigned long long)a,
						    (unsigned long long)next,
						    (unsigned long long)main_arena);
				return NULL;
			}
		}
		// Every arena but main_arena follows a heap_info that points
		// back at it: anything else is no arena, and its bins would
		// be 127 broken lists.
		if (!thread_arena_shape(w, next, &w->lay)) {
			hd_heap_problem_add(w->h, next,
					    "arena 0x%llx's next, 0x%llx, is no arena (no heap_info before it points back at it); the ring is cut there and later arenas are missing",
					    (unsigned long long)a,
					    (unsigned long long)next);
			return NULL;
		}
		a = next;
	}
	hd_heap_problem_add(w->h, a,
			    "the arena ring is longer than %d arenas (at 0x%llx), more than any process has; the rest are skipped",
			    MAX_ARENAS, (unsigned long long)a);
	return NULL;
}
