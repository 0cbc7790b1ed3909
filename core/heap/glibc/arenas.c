// Arenas: main_arena found by symbol or by the shape of its empty bins,
// and the ring of arenas through malloc_state.next (heaps.c finds each
// arena's heaps).
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/vec.h"

#define MAX_ARENAS 4096

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

bool glibc_thread_arena_shape(struct glibc_walk *w, uint64_t a,
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
		if (!glibc_thread_arena_shape(w, a, lay))
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
		else if (bins0 && glibc_thread_arena_shape(w, base, lay))
			base = 0;
		else if (glibc_thread_arena_shape(w, base, lay))
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

struct hd_error *glibc_collect_arenas(struct glibc_walk *w,
				      uint64_t main_arena)
{
	uint64_t a = main_arena;
	for (size_t n = 0; n < MAX_ARENAS; n++) {
		uint16_t idx = push_arena(w, a, a == main_arena);
		if (idx == HD_ARENA_NONE)
			return &hd_error_no_memory;
		struct hd_error *err = a == main_arena ? glibc_main_heap(w, idx)
						       : glibc_arena_heaps(w, idx);
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
		if (!glibc_thread_arena_shape(w, next, &w->lay)) {
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
