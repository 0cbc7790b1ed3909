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
		// A page never populated holds zeros, no chunk header: only
		// the mapping's data extents are probed (a 4 GiB mapping
		// never touched is not read a page at a time).
		struct hd_extent *ext = NULL;
		size_t next = 0, num_ext = 0;
		struct hd_error *err = hd_target_data_extents(w->t, m->start,
							      m->end - m->start,
							      &ext, &num_ext);
		if (err) {
			if (err == &hd_error_no_memory)
				return err;
			hd_error_destroy(err);
			ext = NULL;
		}
		while (p + PAGE <= m->end) {
			if (ext) {
				while (next < num_ext && ext[next].end <= p)
					next++;
				if (next == num_ext)
					break;
				uint64_t first = ext[next].start & ~(PAGE - 1);
				if (first > p) {
					p = first;
					continue;
				}
			}
			if (covered_by_segment(w, p)) {
				p += PAGE;
				continue;
			}
			uint64_t hdr[2];
			struct hd_error *rerr = hd_target_read(w->t, p, hdr, 16);
			if (rerr) {
				// Reads of readable mappings do not fail
				// except in truncated cores; skip the page.
				hd_error_destroy(rerr);
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
			if (!HD_VEC_PUSH(w->segs, w->num_segs, w->cap_segs, s)) {
				free(ext);
				return &hd_error_no_memory;
			}
			p += size;
		}
		free(ext);
	}
	return NULL;
}

// A core's pages the walk has passed count toward RSS until given back:
// every 16 MiB, the ones behind it are (hd_target_release).
#define RELEASE_STEP (16ull << 20)
static void release_behind(struct glibc_walk *w, uint64_t *done, uint64_t at)
{
	if (at - *done >= RELEASE_STEP) {
		hd_target_release(w->t, *done, at - *done);
		*done = at;
	}
}

// Counts the chunks of a heap with the same rules as walk_segment, so the
// block table can be allocated once at its exact size.
static size_t count_segment(struct glibc_walk *w, const struct glibc_segment *s,
			    const uint8_t *d)
{
	uint64_t len = s->end - s->start, off = 0, done = s->start;
	size_t n = 0;
	while (len - off >= 16) {
		release_behind(w, &done, s->start + off);
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
	hd_target_release(w->t, done, s->end - done);
	return n;
}

// Where the walk of a heap can pick up again after a chunk whose size
// lies: bit i of the map says whether the chain of chunk sizes from
// s->start + 16 i lands exactly on the heap's end (its top chunk, its
// closing fenceposts, or its last byte when top is lost). Built once per
// damaged heap, from its end down, in one pass: a bit per 16 bytes.
static uint64_t *chain_map(const struct glibc_walk *w,
			   const struct glibc_segment *s, const uint8_t *d)
{
	uint64_t len = s->end - s->start, n = len / 16 + 1;
	uint64_t *bits = calloc((n + 63) / 64, sizeof(*bits));
	if (!bits)
		return NULL;
	bool main = w->arenas[s->arena].is_main;
#define BIT(i) ((bits[(i) / 64] >> ((i) % 64)) & 1)
	for (uint64_t i = n; i-- > 0;) {
		uint64_t off = 16 * i, field = 0, size = 0;
		bool good;
		if (off + 16 <= len) {
			memcpy(&field, d + off + 8, 8);
			size = field & ~SIZE_BITS;
		}
		if (s->start + off == s->top)
			good = true;
		else if (s->top && s->start + off > s->top)
			good = false;
		else if (off + 16 > len)
			good = off == len && !s->top;
		else if (!s->top && len - off <= 32 && (size == 0 || size == 16))
			good = true; // the closing fenceposts
		else if (size < MINSIZE || (size & 15) || size > len - off ||
			 (field & IS_MMAPPED) || (main && (field & 4)))
			good = false; // 4: NON_MAIN_ARENA, never in main's chunks
		else if (size == len - off)
			good = !s->top;
		else
			good = BIT((off + size) / 16);
		if (good)
			bits[i / 64] |= 1ULL << (i % 64);
	}
	return bits;
}

// The lowest position after off (in 16-byte units) from which the chain
// lands on the heap's end, or 0.
static uint64_t resume_after(const uint64_t *bits, uint64_t len, uint64_t off)
{
	for (uint64_t i = off / 16 + 1; i <= len / 16; i++)
		if (BIT(i))
			return 16 * i;
#undef BIT
	return 0;
}

// Bytes a walk could not read as chunks: no blocks there, and the graph
// scans them as an unnamed region, so what they point at is never called
// leaked.
static bool add_gap(struct glibc_walk *w, uint64_t start, uint64_t end)
{
	struct glibc_gap g = {start, end};
	return HD_VEC_PUSH(w->gaps, w->num_gaps, w->cap_gaps, g);
}

// A chunk at off whose size is invalid or runs past the heap: resumes the
// walk at the first chunk after it from which the sizes lead to the
// heap's end, reporting the bytes in between (and dropping the chunk
// before, last, whose size overlapped that chunk). Returns the offset to
// go on from, or len when the rest of the heap is lost.
static uint64_t resync(struct glibc_walk *w, const struct glibc_segment *s,
		       const uint8_t *d, uint64_t **bits, uint64_t off,
		       uint64_t field, bool has_last, uint64_t last)
{
	struct hd_heap *h = w->h;
	uint64_t len = s->end - s->start, p = s->start + off;
	if (!*bits)
		*bits = chain_map(w, s, d);
	uint64_t q = *bits ? resume_after(*bits, len, has_last ? last : off) : 0;
	if (q && has_last && q < off) {
		// The chunk before claims bytes of a chunk the sizes lead on
		// from: its size is the lie.
		uint64_t lp = s->start + last, lsize;
		memcpy(&lsize, d + last + 8, 8);
		h->num_blocks--;
		hd_heap_problem_add(h, lp,
				    "chunk at 0x%llx has size 0x%llx, which overlaps the chunk at 0x%llx; bytes 0x%llx-0x%llx are not walked",
				    (unsigned long long)lp,
				    (unsigned long long)(lsize & ~SIZE_BITS),
				    (unsigned long long)(s->start + q),
				    (unsigned long long)lp,
				    (unsigned long long)(s->start + q));
		return add_gap(w, lp, s->start + q) ? q : len;
	}
	if (q > off) {
		hd_heap_problem_add(h, p,
				    "chunk at 0x%llx has an invalid size field 0x%llx%s (heap 0x%llx-0x%llx); bytes 0x%llx-0x%llx are not walked, the walk resumes at 0x%llx",
				    (unsigned long long)p, (unsigned long long)field,
				    (field & ~SIZE_BITS) > len - off ? ", running past the heap's end" : "",
				    (unsigned long long)s->start,
				    (unsigned long long)s->end,
				    (unsigned long long)p,
				    (unsigned long long)(s->start + q),
				    (unsigned long long)(s->start + q));
		return add_gap(w, p, s->start + q) ? q : len;
	}
	hd_heap_problem_add(h, p,
			    "chunk at 0x%llx has an invalid size field 0x%llx%s (heap 0x%llx-0x%llx); the rest of this heap is skipped",
			    (unsigned long long)p, (unsigned long long)field,
			    (field & ~SIZE_BITS) > len - off ? ", running past the heap's end" : "",
			    (unsigned long long)s->start,
			    (unsigned long long)s->end);
	add_gap(w, p, s->end);
	return len;
}

// Whether the walk, at off, takes piece p from one of the chunks its run
// began with (*k: which), walks on to reach one (WALK), or has passed
// them all (DROP: the piece began inside a block's data, or past a chunk
// the walk reported; its chunks are walked here).
enum piece_join { PIECE_WALK, PIECE_TAKE, PIECE_DROP };
static enum piece_join piece_at(const struct glibc_piece *p, uint64_t off,
				unsigned *k)
{
	if (!p->num_sync || off > p->sync[p->num_sync - 1])
		return PIECE_DROP;
	for (unsigned i = 0; i < p->num_sync && p->sync[i] <= off; i++) {
		if (p->sync[i] == off) {
			*k = i;
			return PIECE_TAKE;
		}
	}
	return PIECE_WALK;
}

// Walks one arena heap segment; blocks are appended in address order.
// pieces (num_pieces of them, in order): what threads walked ahead
// (split.c); a piece the walk lands on has its rows reserved here, to be
// written by glibc_fill_pieces.
static struct hd_error *walk_segment(struct glibc_walk *w,
				     const struct glibc_segment *s,
				     const uint8_t *d, struct glibc_piece *pieces,
				     size_t num_pieces)
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
	uint64_t off = 0, last = 0, done = s->start;
	bool has_last = false;
	uint64_t *bits = NULL;
	size_t next_piece = 0;
	// The piece whose last chunk is the table's last row, if it is.
	struct glibc_piece *last_piece = NULL;
	while (off < len) {
		while (next_piece < num_pieces) {
			struct glibc_piece *pc = &pieces[next_piece];
			unsigned k = 0;
			enum piece_join j = piece_at(pc, off, &k);
			if (j == PIECE_WALK)
				break;
			next_piece++;
			if (j == PIECE_DROP)
				continue;
			// Its chunks from the k-th are the ones this walk
			// would push, one after the other.
			pc->joined = true;
			pc->from = k;
			pc->base = h->num_blocks;
			pc->rows = pc->count - k;
			if (!hd_heap_reserve(h, h->num_blocks + pc->rows))
				goto no_memory;
			h->num_blocks += pc->rows;
			has_last = true;
			last = pc->last;
			last_piece = pc;
			// The piece's thread gave its pages back; so did this
			// walk up to here.
			hd_target_release(w->t, done, s->start + off - done);
			off = pc->end;
			done = s->start + off;
		}
		if (off >= len)
			break;
		uint64_t p = s->start + off;
		release_behind(w, &done, p);
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
				goto no_memory;
			break;
		}
		if (s->top_lost && size == len - off && size >= MINSIZE &&
		    !(size & 15)) {
			// The arena's top is damaged: the chunk that ends the
			// heap is where malloc keeps top.
			if (!hd_heap_push(h, p, size, HD_STATE_FREE, HD_LIST_TOP,
					  s->arena, false))
				goto no_memory;
			break;
		}
		if (size == 0 && !s->top && len - off <= 32)
			break; // the closing fencepost of an old heap
		if (size == 16 && !s->top && len - off <= 32) {
			// Fenceposts close a heap that was left for a new one.
			if (!hd_heap_push(h, p, 16, HD_STATE_INTERNAL,
					  HD_LIST_NONE, s->arena, false))
				goto no_memory;
			last_piece = NULL;
			off += 16;
			continue;
		}
		if (size < MINSIZE || (size & 15) || size > len - off ||
		    (s->top && p < s->top && size > s->top - p)) {
			// A size that lies: invalid, past the heap's end, or
			// over the top chunk.
			size_t rows = h->num_blocks;
			off = resync(w, s, d, &bits, off, field, has_last, last);
			// The row resync dropped was a piece's last.
			if (h->num_blocks < rows && last_piece)
				last_piece->rows--;
			last_piece = NULL;
			has_last = false;
			continue;
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
			goto no_memory;
		last_piece = NULL;
		has_last = true;
		last = off;
		off += size;
	}
	hd_target_release(w->t, done, s->end - done);
	free(bits);
	return NULL;
no_memory:
	free(bits);
	return &hd_error_no_memory;
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
	// Threads walk pieces of large heaps ahead (split.c): then the rows
	// are those they counted, with room for the few chunks at each
	// heap's end they leave to this walk (its table is fitted after).
	struct glibc_split sp = {0};
	if (!err)
		err = glibc_split_heaps(w, data, &sp);
	size_t total = 0;
	for (size_t i = 0; i < w->num_segs && !err; i++) {
		if (w->segs[i].mmapped) {
			total++;
		} else if (data[i] && sp.num) {
			for (size_t j = sp.first[i]; j < sp.first[i + 1]; j++)
				total += sp.pieces[j].count;
			total += 2;
		} else if (data[i]) {
			total += count_segment(w, &w->segs[i], data[i]);
		}
	}
	if (!err && !hd_heap_reserve(w->h, total))
		err = &hd_error_no_memory;
	for (size_t i = 0; i < w->num_segs && !err; i++) {
		if (i && w->segs[i].start < w->segs[i - 1].end)
			continue;
		size_t np = sp.num ? sp.first[i + 1] - sp.first[i] : 0;
		err = walk_segment(w, &w->segs[i], data[i],
				   np ? &sp.pieces[sp.first[i]] : NULL, np);
	}
	if (!err && sp.num) {
		glibc_fill_pieces(w, data, &sp);
		hd_heap_fit(w->h);
	}
	glibc_split_deinit(&sp);
	free(data);
	return err;
}
