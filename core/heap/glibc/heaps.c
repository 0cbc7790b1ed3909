// An arena's heaps: the main heap (from mp_.sbrk_base, or the brk mapping
// holding top) and a thread arena's chain of heap_infos, each heap pushed
// once however the chain, its sizes or the arena's top are damaged.
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "heap/glibc/glibc_internal.h"
#include "util/sort.h"
#include "util/vec.h"

// 16384 heaps of 64 MiB: 1 TiB in one arena.
#define MAX_HEAPS_PER_ARENA 16384
// A heap is at least a page.
#define PAGE_SIZE_MIN 4096

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

struct hd_error *glibc_main_heap(struct glibc_walk *w, uint16_t idx)
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

// Reads heap h's heap_info: its owner (ar_ptr), prev and size.
static bool heap_info_at(struct glibc_walk *w, uint64_t h, uint64_t *ar_ptr,
			 uint64_t *prev, uint64_t *size)
{
	const struct glibc_layout *lay = &w->lay;
	return glibc_read64(w, h + lay->heap_off_ar_ptr, ar_ptr) &&
	       glibc_read64(w, h + lay->heap_off_prev, prev) &&
	       glibc_read64(w, h + lay->heap_off_size, size);
}

// Reads heap h's heap_info; false (with a problem) unless it belongs to
// the arena.
static bool read_heap_info(struct glibc_walk *w, const struct hd_arena *a,
			   uint64_t h, uint64_t *prev, uint64_t *size)
{
	uint64_t ar_ptr = 0;
	if (!heap_info_at(w, h, &ar_ptr, prev, size)) {
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

// Pushes heap h with the size its heap_info gives or, when that size is
// no heap's (over HEAP_MAX_SIZE, under a page), up to where the heap can
// be seen to end, saying so; *size becomes the size pushed, *cut is set.
static struct hd_error *push_checked(struct glibc_walk *w, uint16_t idx,
				     uint64_t h, uint64_t *size,
				     bool *top_found, bool *cut)
{
	const struct glibc_layout *lay = &w->lay;
	if (*size > lay->heap_max_size || *size < PAGE_SIZE_MIN) {
		uint64_t end = heap_end_without_size(w, &w->arenas[idx], h);
		hd_heap_problem_add(w->h, h,
				    "heap_info at 0x%llx says its heap holds 0x%llx bytes, %s HEAP_MAX_SIZE 0x%llx allows; walked to 0x%llx instead",
				    (unsigned long long)h,
				    (unsigned long long)*size,
				    *size > lay->heap_max_size ? "more than" : "less than",
				    (unsigned long long)lay->heap_max_size,
				    (unsigned long long)end);
		*size = end - h;
		*cut = true;
	}
	return push_heap(w, idx, h, *size, top_found);
}

// A heap whose heap_info names the arena being walked, found without the
// chain (heaps_naming).
struct named_heap {
	uint64_t h, prev, size;
	bool chained;
};

static int named_heap_cmp(const void *x, const void *y)
{
	uint64_t a = ((const struct named_heap *)x)->h;
	uint64_t b = ((const struct named_heap *)y)->h;
	return a < b ? -1 : a > b;
}

// Every heap_info at a HEAP_MAX_SIZE-aligned start of readable memory
// (glibc's new_heap aligns each heap so) whose ar_ptr is arena, but
// skip1 and skip2; sorted by address. One read per aligned start mapped,
// and MAX_HEAPS_PER_ARENA heaps at most (*more says some were left).
static struct hd_error *heaps_naming(struct glibc_walk *w, uint64_t arena,
				     uint64_t skip1, uint64_t skip2,
				     struct named_heap **ret, size_t *n,
				     bool *more)
{
	uint64_t max = w->lay.heap_max_size;
	size_t cap = 0;
	*ret = NULL;
	*n = 0;
	*more = false;
	for (size_t i = 0; i < hd_target_num_mappings(w->t) && !*more; i++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, i);
		if (!m->readable)
			continue;
		for (uint64_t h = (m->start + max - 1) & ~(max - 1);
		     h >= m->start && h < m->end; h += max) {
			struct named_heap c = {.h = h};
			uint64_t owner;
			if (h == skip1 || h == skip2 ||
			    !heap_info_at(w, h, &owner, &c.prev, &c.size) ||
			    owner != arena)
				continue;
			if (*n >= MAX_HEAPS_PER_ARENA) {
				*more = true;
				break;
			}
			if (!HD_VEC_PUSH(*ret, *n, cap, c)) {
				free(*ret);
				*ret = NULL;
				return &hd_error_no_memory;
			}
		}
	}
	hd_qsort(*ret, *n, sizeof(**ret), named_heap_cmp);
	return NULL;
}

// Marks the heaps of c from start back through prev to first; how many,
// or SIZE_MAX (some marked) if the chain leaves c or comes back on itself
// before it gets there. At most n steps: each marks a heap.
static size_t chain_to_first(struct named_heap *c, size_t n, uint64_t start,
			     uint64_t first)
{
	size_t len = 0;
	for (uint64_t p = start; p != first; len++) {
		struct named_heap key = {.h = p};
		struct named_heap *at = hd_bsearch(&key, c, n, sizeof(*c),
						   named_heap_cmp);
		if (!at || at->chained)
			return SIZE_MAX;
		at->chained = true;
		p = at->prev;
	}
	return len;
}

// "0x1, 0x2 and 3 more": the heaps of c whose chained is on.
static void list_heaps(char *buf, size_t len, const struct named_heap *c,
		       size_t n, bool on)
{
	size_t shown = 0, left = 0, used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i].chained != on)
			continue;
		if (shown == 8) {
			left++;
			continue;
		}
		int r = snprintf(buf + used, len - used, "%s0x%llx",
				 shown ? ", " : "", (unsigned long long)c[i].h);
		if (r < 0 || (size_t)r >= len - used)
			break;
		used += (size_t)r;
		shown++;
	}
	if (left)
		snprintf(buf + used, len - used, " and %zu more", left);
}

// The heap holding arena idx's top names owner, not the arena, in its
// heap_info: the chain from it is not the arena's word. The arena's other
// heaps are found by their own heap_info (heaps_naming) and walked only
// if they make one chain to the first heap: from the top's heap's prev
// when that leads there and owner is no arena (then only the owner word
// is damaged, and the top's heap is walked too), else from the one heap
// no other names as prev. Anything else (a fork, a stale heap_info, a
// chain that never arrives) cannot be told apart exactly: those heaps are
// skipped and named.
static struct hd_error *lost_owner(struct glibc_walk *w, uint16_t idx,
				   uint64_t top_heap, uint64_t owner,
				   uint64_t prev, uint64_t size,
				   bool *top_found)
{
	const struct hd_arena *a = &w->arenas[idx];
	uint64_t arena = a->addr, top = a->top;
	uint64_t first = arena & ~(w->lay.heap_max_size - 1);
	struct named_heap *c;
	size_t n;
	bool more, cut = false;
	struct hd_error *err = heaps_naming(w, arena, top_heap, first, &c, &n,
					    &more);
	if (err)
		return err;
	bool owner_arena = owner == w->arenas[0].addr ||
			   glibc_thread_arena_shape(w, owner, &w->lay);
	size_t len = owner_arena ? SIZE_MAX : chain_to_first(c, n, prev, first);
	bool top_linked = len != SIZE_MAX;
	if (!top_linked) {
		// The one heap no other heap of the arena names as prev.
		size_t heads = 0, head = 0;
		for (size_t i = 0; i < n; i++) {
			c[i].chained = false;
			bool named = false;
			for (size_t j = 0; j < n && !named; j++)
				named = c[j].prev == c[i].h;
			if (!named) {
				heads++;
				head = i;
			}
		}
		len = heads == 1 ? chain_to_first(c, n, c[head].h, first) : SIZE_MAX;
		if (len == SIZE_MAX)
			for (size_t i = 0; i < n; i++)
				c[i].chained = false;
	}
	char walked[200], skipped[200];
	list_heaps(walked, sizeof(walked), c, n, true);
	list_heaps(skipped, sizeof(skipped), c, n, false);
	if (top_linked)
		hd_heap_problem_add(w->h, top_heap,
				    "heap_info at 0x%llx, which holds arena 0x%llx's top 0x%llx, names 0x%llx, no arena, as its owner; its prev 0x%llx leads through %zu heap(s) naming the arena%s%s to its first heap 0x%llx, so it is walked as the arena's",
				    (unsigned long long)top_heap,
				    (unsigned long long)arena,
				    (unsigned long long)top,
				    (unsigned long long)owner,
				    (unsigned long long)prev, len,
				    len ? " " : "", walked,
				    (unsigned long long)first);
	else
		hd_heap_problem_add(w->h, top_heap,
				    "heap_info at 0x%llx, which holds arena 0x%llx's top 0x%llx, names 0x%llx as its owner, %s; its heap is skipped",
				    (unsigned long long)top_heap,
				    (unsigned long long)arena,
				    (unsigned long long)top,
				    (unsigned long long)owner,
				    owner_arena ? "another arena"
						: "no arena, and its prev does not lead to the arena's first heap");
	if (!top_linked && len != SIZE_MAX && len)
		hd_heap_problem_add(w->h, top_heap,
				    "arena 0x%llx's heaps %s, found by their heap_info naming it, make one chain to its first heap 0x%llx and are walked",
				    (unsigned long long)arena, walked,
				    (unsigned long long)first);
	if (skipped[0])
		hd_heap_problem_add(w->h, c[0].h,
				    "heaps %s name arena 0x%llx in their heap_info but are on no one chain from its top's heap 0x%llx to its first heap 0x%llx; which of them are live cannot be told, so they are skipped",
				    skipped, (unsigned long long)arena,
				    (unsigned long long)top_heap,
				    (unsigned long long)first);
	if (more)
		hd_heap_problem_add(w->h, top_heap,
				    "more than %d heaps name arena 0x%llx in their heap_info; the rest are not looked at",
				    MAX_HEAPS_PER_ARENA, (unsigned long long)arena);
	if (top_linked)
		err = push_checked(w, idx, top_heap, &size, top_found, &cut);
	for (size_t i = 0; i < n && !err; i++)
		if (c[i].chained)
			err = push_checked(w, idx, c[i].h, &c[i].size, top_found,
					   &cut);
	free(c);
	return err;
}

struct hd_error *glibc_arena_heaps(struct glibc_walk *w, uint16_t idx)
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
		uint64_t owner;
		if (n == 0 && h != first && heap_info_at(w, h, &owner, &prev, &size) &&
		    owner != a->addr) {
			// The top's heap names another owner: the arena's
			// other heaps are found without its chain.
			err = lost_owner(w, idx, h, owner, prev, size, &top_found);
			all_seen = false;
			break;
		}
		if (!read_heap_info(w, a, h, &prev, &size)) {
			all_seen = false;
			break;
		}
		bool cut = false;
		err = push_checked(w, idx, h, &size, &top_found, &cut);
		all_seen &= !cut;
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
