// Chunk walks: every arena heap from its first chunk to its end, and the
// mmapped chunks, which no list records and which are found by their
// headers at page starts of anonymous memory.
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/vec.h"
#include "util/sort.h"

#define PAGE 4096ULL
#define PREV_INUSE 1ULL
#define IS_MMAPPED 2ULL
#define SIZE_BITS 7ULL
#define MINSIZE 32ULL
// How far into an mmapped chunk an aligned inner chunk (memalign) is
// looked for.
#define MEMALIGN_SEARCH (64ULL << 10)

static bool covered_by_segment(struct glibc_walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->num_segs; i++) {
		const struct glibc_segment *s = &w->segs[i];
		if (s->mmapped)
			continue;
		// Non-main heaps start at their heap_info; the main heap at
		// its first chunk.
		uint64_t lo = s->start & ~(PAGE - 1);
		if (!w->arenas[s->arena].is_main)
			lo = s->start & ~(w->lay.heap_max_size - 1);
		if (addr >= lo && addr < s->end)
			return true;
	}
	return false;
}

// memalign on an mmapped chunk leaves the original header in place and
// writes a second one further in: prev_size = lead, size = rest | 2.
static uint64_t inner_memalign_chunk(struct glibc_walk *w, const uint8_t *d,
				     uint64_t size)
{
	uint64_t lim = size < MEMALIGN_SEARCH ? size : MEMALIGN_SEARCH;
	for (uint64_t o = 16; o + 16 <= lim; o += 16) {
		uint64_t ps, sz;
		memcpy(&ps, d + o, 8);
		memcpy(&sz, d + o + 8, 8);
		if (ps == o && sz == ((size - o) | IS_MMAPPED))
			return o;
	}
	(void)w;
	return 0;
}

static bool plausible_stack(struct glibc_walk *w, const struct hd_mapping *m)
{
	for (size_t i = 0; i < hd_target_num_threads(w->t); i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		if (th->has_regs && th->regs.rsp >= m->start &&
		    th->regs.rsp < m->end)
			return true;
	}
	return m->path && strcmp(m->path, "[stack]") == 0;
}

struct hd_error *glibc_find_mmapped(struct glibc_walk *w)
{
	size_t nmaps = hd_target_num_mappings(w->t);
	for (size_t i = 0; i < nmaps; i++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, i);
		if (!m->readable || !(m->prot & HD_PROT_WRITE) ||
		    (m->prot & HD_PROT_EXEC))
			continue;
		if (m->path && m->path[0] == '/')
			continue;
		if (m->path && strcmp(m->path, "[heap]") != 0 &&
		    strcmp(m->path, "[stack]") != 0 && m->path[0] == '[')
			continue;
		bool stack = plausible_stack(w, m);
		uint64_t p = (m->start + PAGE - 1) & ~(PAGE - 1);
		while (p + PAGE <= m->end) {
			if (covered_by_segment(w, p)) {
				p += PAGE;
				continue;
			}
			uint64_t hdr[2];
			if (hd_target_read(w->t, p, hdr, 16) != NULL) {
				// Reads of readable mappings do not fail
				// except in truncated cores; skip the page.
				p += PAGE;
				continue;
			}
			uint64_t size = hdr[1] & ~SIZE_BITS;
			bool ok = hdr[0] == 0 && (hdr[1] & SIZE_BITS) == IS_MMAPPED &&
				  size >= PAGE && (size & (PAGE - 1)) == 0 &&
				  size <= m->end - p;
			// A thread's stack pages hold anything; only trust a
			// header there if it spans whole pages below rsp.
			if (ok && stack) {
				for (size_t t = 0; t < hd_target_num_threads(w->t); t++) {
					const struct hd_thread *th =
						hd_target_thread(w->t, t);
					if (th->regs.rsp >= p && th->regs.rsp < p + size)
						ok = false;
				}
			}
			if (!ok) {
				p += PAGE;
				continue;
			}
			uint64_t lead = 0;
			struct hd_view v;
			uint64_t look = size < MEMALIGN_SEARCH ? size : MEMALIGN_SEARCH;
			if (!hd_target_view(w->t, p, look, &v)) {
				lead = inner_memalign_chunk(w, v.data, size);
				hd_view_deinit(&v);
			}
			struct glibc_segment s = {
				.map_start = p,
				.start = p + lead,
				.end = p + size,
				.arena = HD_ARENA_NONE,
				.mmapped = true,
			};
			if (!HD_VEC_PUSH(w->segs, w->num_segs, w->cap_segs, s))
				return &hd_error_no_memory;
			p += size;
		}
	}
	return NULL;
}

// Counts the chunks of a heap with the same rules as walk_segment, so the
// block table can be allocated once at its exact size.
static size_t count_segment(const struct glibc_segment *s, const uint8_t *d)
{
	uint64_t len = s->end - s->start, off = 0;
	size_t n = 0;
	while (len - off >= 16) {
		uint64_t field;
		memcpy(&field, d + off + 8, 8);
		uint64_t size = field & ~SIZE_BITS;
		n++;
		if (s->start + off == s->top)
			break;
		if (size == 16 && !s->top && len - off <= 32) {
			off += 16;
			continue;
		}
		if (size < MINSIZE || (size & 15) || size > len - off)
			break;
		off += size;
	}
	return n;
}

// Walks one arena heap segment; blocks are appended in address order.
static struct hd_error *walk_segment(struct glibc_walk *w,
				     const struct glibc_segment *s,
				     const uint8_t *d)
{
	struct hd_heap *h = w->h;
	if (s->mmapped) {
		if (!hd_heap_push(h, s->start, s->end - s->start, HD_STATE_USED,
				  HD_LIST_NONE, HD_ARENA_NONE, true))
			return &hd_error_no_memory;
		return NULL;
	}
	if (!d)
		return NULL; // unreadable, already reported
	uint64_t len = s->end - s->start;
	uint64_t off = 0;
	while (off < len) {
		uint64_t p = s->start + off;
		if (len - off < 16) {
			hd_heap_problem_add(h, p,
					    "heap 0x%llx ends in a partial chunk header at 0x%llx",
					    (unsigned long long)s->start,
					    (unsigned long long)p);
			break;
		}
		uint64_t field;
		memcpy(&field, d + off + 8, 8);
		uint64_t size = field & ~SIZE_BITS;
		if (p == s->top) {
			if (size != len - off)
				hd_heap_problem_add(h, p,
						    "top chunk 0x%llx has size 0x%llx but its heap ends 0x%llx bytes later",
						    (unsigned long long)p,
						    (unsigned long long)size,
						    (unsigned long long)(len - off));
			if (!hd_heap_push(h, p, len - off, HD_STATE_FREE,
					  HD_LIST_TOP, s->arena, false))
				return &hd_error_no_memory;
			break;
		}
		if (size == 0 && !s->top && len - off <= 32)
			break; // the closing fencepost of an old heap
		if (size == 16 && !s->top && len - off <= 32) {
			// Fenceposts close a heap that was left for a new one.
			if (!hd_heap_push(h, p, 16, HD_STATE_INTERNAL,
					  HD_LIST_NONE, s->arena, false))
				return &hd_error_no_memory;
			off += 16;
			continue;
		}
		if (size < MINSIZE || (size & 15) || size > len - off) {
			hd_heap_problem_add(h, p,
					    "chunk at 0x%llx has an invalid size field 0x%llx (heap 0x%llx-0x%llx); the rest of this heap is skipped",
					    (unsigned long long)p,
					    (unsigned long long)field,
					    (unsigned long long)s->start,
					    (unsigned long long)s->end);
			break;
		}
		bool in_use = true;
		if (off + size + 16 <= len) {
			uint64_t next;
			memcpy(&next, d + off + size + 8, 8);
			in_use = next & PREV_INUSE;
		}
		if (!hd_heap_push(h, p, size,
				  in_use ? HD_STATE_USED : HD_STATE_FREE,
				  in_use ? HD_LIST_NONE : HD_LIST_UNKNOWN,
				  s->arena, false))
			return &hd_error_no_memory;
		off += size;
	}
	if (off > len)
		hd_heap_problem_add(h, s->start + off,
				    "the last chunk runs past the end of heap 0x%llx-0x%llx",
				    (unsigned long long)s->start,
				    (unsigned long long)s->end);
	return NULL;
}

static int segment_cmp(const void *a, const void *b)
{
	const struct glibc_segment *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

// Reads every arena heap once; the views stay for the free-list walk.
static struct hd_error *view_segments(struct glibc_walk *w, const uint8_t **data)
{
	for (size_t i = 0; i < w->num_segs; i++) {
		const struct glibc_segment *s = &w->segs[i];
		data[i] = NULL;
		if (s->mmapped || s->end <= s->start)
			continue;
		if (i && s->start < w->segs[i - 1].end) {
			hd_heap_problem_add(w->h, s->start,
					    "heap 0x%llx overlaps the previous one; skipped",
					    (unsigned long long)s->start);
			continue;
		}
		struct hd_view v;
		struct hd_error *err =
			hd_target_view(w->t, s->start, s->end - s->start, &v);
		if (err) {
			hd_heap_problem_add(w->h,
					    err->has_address ? err->address : s->start,
					    "heap 0x%llx-0x%llx cannot be read (%s); its blocks are missing",
					    (unsigned long long)s->start,
					    (unsigned long long)s->end, err->message);
			hd_error_destroy(err);
			continue;
		}
		if (!HD_VEC_PUSH(w->views, w->num_views, w->cap_views, v)) {
			hd_view_deinit(&v);
			return &hd_error_no_memory;
		}
		data[i] = v.data;
	}
	return NULL;
}

struct hd_error *glibc_walk_chunks(struct glibc_walk *w)
{
	hd_qsort(w->segs, w->num_segs, sizeof(*w->segs), segment_cmp);
	const uint8_t **data = calloc(w->num_segs ? w->num_segs : 1, sizeof(*data));
	if (!data)
		return &hd_error_no_memory;
	struct hd_error *err = view_segments(w, data);
	size_t total = 0;
	for (size_t i = 0; i < w->num_segs && !err; i++)
		total += w->segs[i].mmapped ? 1
			 : data[i] ? count_segment(&w->segs[i], data[i]) : 0;
	if (!err && !hd_heap_reserve(w->h, total))
		err = &hd_error_no_memory;
	for (size_t i = 0; i < w->num_segs && !err; i++) {
		if (i && w->segs[i].start < w->segs[i - 1].end)
			continue;
		err = walk_segment(w, &w->segs[i], data[i]);
	}
	free(data);
	return err;
}
