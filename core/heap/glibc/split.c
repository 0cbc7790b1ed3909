// The chunk walk on several threads. A heap's chunks are a chain (each
// size leads to the next header), but a large heap can be cut into
// pieces: a thread starts at a piece's first byte, finds a chunk boundary
// by following a run of headers that chain validly, and walks plain
// chunks past the piece's end, counting them. The sequential walk
// (chunks.c) then goes through every heap as it always does; where it
// lands exactly on one of the chunks a piece's run began with, it takes
// the piece's chunks as rows of the table (written afterwards, on the
// threads again) and goes on from where the piece stopped. A piece it does
// not land on (a run that began inside a block's data) it walks itself,
// chunk by chunk. So the table, the problems and their order are those of
// the sequential walk whatever the number of threads: a piece holds only
// chunks the sequential walk would have pushed with nothing to say.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/thread.h"

#define PREV_INUSE 1ULL
#define IS_MMAPPED 2ULL
#define NON_MAIN_ARENA 4ULL
#define SIZE_BITS 7ULL
#define MINSIZE 32ULL
// Heaps of fewer bytes are walked by one thread unless the user chose the
// threads (the start of a thread costs more than walking them).
#define SPLIT_MIN (4ULL << 20)
// Pieces per thread, so that one dense piece does not leave the other
// threads idle, and the smallest piece.
#define PIECES_PER_THREAD 4
#define PIECE_MIN 4096ULL
// Core pages behind a thread are given back every 16 MiB, as the
// sequential walk does (chunks.c).
#define RELEASE_STEP (16ull << 20)

// Whether the chunk at off is one the sequential walk (walk_segment)
// pushes with nothing to report and no case of its own: its header lies
// before the heap's last 32 bytes (fenceposts, a partial header), it is
// below the top chunk, and its size is valid and leads strictly inside
// the heap and not over the top. Its size field in *field.
static inline bool plain(const struct glibc_segment *s, const uint8_t *d,
			 uint64_t len, uint64_t off, uint64_t *field)
{
	if (off >= len || len - off <= 32)
		return false;
	uint64_t p = s->start + off;
	if (s->top && p >= s->top)
		return false;
	memcpy(field, d + off + 8, 8);
	uint64_t size = *field & ~SIZE_BITS;
	return size >= MINSIZE && !(size & 15) && size < len - off &&
	       !(s->top && size > s->top - p);
}

// Where a run of plain chunks may stop short without casting doubt on
// it: the top chunk, the heap's last bytes, or a chunk that ends the heap.
static bool ends_heap(const struct glibc_segment *s, const uint8_t *d,
		      uint64_t len, uint64_t off)
{
	if (off >= len || len - off <= 32 || s->start + off == s->top)
		return true;
	uint64_t field;
	memcpy(&field, d + off + 8, 8);
	return (field & ~SIZE_BITS) == len - off;
}

// Does a chain of GLIBC_SYNC_RUN plain chunks (or fewer that end the
// heap) start at off? Beyond the walk's own rules, its headers must look
// like an arena's: no mmapped bit, no non-main bit in the main arena, and
// a chunk whose predecessor is free repeats that predecessor's size in
// its prev_size. Only where a piece starts depends on this; a start
// inside a block's data is a piece the sequential walk does not take.
static bool chains(const struct glibc_segment *s, bool main,
		   const uint8_t *d, uint64_t len, uint64_t off)
{
	uint64_t prev = 0;
	for (unsigned n = 0; n < GLIBC_SYNC_RUN; n++) {
		uint64_t field;
		if (!plain(s, d, len, off, &field))
			return n > 0 && ends_heap(s, d, len, off);
		if ((field & IS_MMAPPED) || (main && (field & NON_MAIN_ARENA)))
			return false;
		if (n && !(field & PREV_INUSE)) {
			uint64_t prev_size;
			memcpy(&prev_size, d + off, 8);
			if (prev_size != prev)
				return false;
		}
		prev = field & ~SIZE_BITS;
		off += prev;
	}
	return true;
}

static void release_behind(struct hd_target *t, const struct glibc_segment *s,
			   uint64_t *done, uint64_t off)
{
	if (off - *done >= RELEASE_STEP) {
		hd_target_release(t, s->start + *done, off - *done);
		*done = off;
	}
}

// Finds piece p's start and walks its plain chunks until one starts at or
// past hi (or one is not plain).
static void scout(const struct glibc_walk *w, const uint8_t *const *data,
		  struct glibc_piece *p)
{
	const struct glibc_segment *s = &w->segs[p->seg];
	const uint8_t *d = data[p->seg];
	uint64_t len = s->end - s->start, off = p->lo;
	bool main = w->arenas[s->arena].is_main;
	if (p->lo) {
		while (off < p->hi && !chains(s, main, d, len, off))
			off += 16;
	}
	uint64_t done = off;
	while (off < p->hi) {
		uint64_t field;
		if (!plain(s, d, len, off, &field))
			break;
		if (p->num_sync < GLIBC_SYNC_RUN)
			p->sync[p->num_sync++] = off;
		p->count++;
		p->last = off;
		off += field & ~SIZE_BITS;
		release_behind(w->t, s, &done, off);
	}
	p->end = off;
	if (off > done)
		hd_target_release(w->t, s->start + done, off - done);
}

// Writes the rows of a piece the sequential walk took, as walk_segment
// pushes a plain chunk (hd_heap_push).
static void fill(const struct glibc_walk *w, const uint8_t *const *data,
		 const struct glibc_piece *p)
{
	const struct glibc_segment *s = &w->segs[p->seg];
	const uint8_t *d = data[p->seg];
	struct hd_heap *h = w->h;
	uint64_t len = s->end - s->start, off = p->sync[p->from];
	uint64_t done = off;
	for (size_t r = 0; r < p->rows; r++) {
		uint64_t field;
		memcpy(&field, d + off + 8, 8);
		uint64_t size = field & ~SIZE_BITS;
		bool in_use = true;
		if (off + size + 16 <= len) {
			uint64_t next;
			memcpy(&next, d + off + size + 8, 8);
			in_use = next & PREV_INUSE;
		}
		hd_heap_put(h, p->base + r, s->start + off + 16, size,
			    in_use ? HD_STATE_USED : HD_STATE_FREE,
			    in_use ? HD_LIST_NONE : HD_LIST_UNKNOWN, s->arena,
			    GLIBC_SHAPE_ARENA);
		off += size;
		release_behind(w->t, s, &done, off);
	}
	if (off > done)
		hd_target_release(w->t, s->start + done, off - done);
}

// The pieces handed out one at a time to whichever thread is free: what
// a piece holds depends on the piece alone, not on who walks it.
struct run {
	const struct glibc_walk *w;
	const uint8_t *const *data;
	struct glibc_split *sp;
	bool filling;
	atomic_size_t next;
};

static void *run_pieces(void *arg)
{
	struct run *r = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&r->next, 1);
		if (i >= r->sp->num)
			break;
		struct glibc_piece *p = &r->sp->pieces[i];
		if (!r->filling)
			scout(r->w, r->data, p);
		else if (p->joined && p->rows)
			fill(r->w, r->data, p);
	}
	return NULL;
}

// This thread and sp->threads - 1 more; a thread that cannot start leaves
// its pieces to the others.
static void run(struct run *r)
{
	pthread_t tid[64];
	unsigned n = r->sp->threads - 1, started = 0;
	if (n > 64)
		n = 64;
	for (unsigned i = 0; i < n; i++)
		if (hd_thread_create(&tid[started], run_pieces, r) == 0)
			started++;
	run_pieces(r);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}

void glibc_split_deinit(struct glibc_split *sp)
{
	free(sp->pieces);
	free(sp->first);
	memset(sp, 0, sizeof(*sp));
}

struct hd_error *glibc_split_heaps(struct glibc_walk *w,
				   const uint8_t *const *data,
				   struct glibc_split *sp)
{
	memset(sp, 0, sizeof(*sp));
	unsigned k = w->threads;
	if (k < 2)
		return NULL;
	uint64_t total = 0;
	for (size_t i = 0; i < w->num_segs; i++)
		if (data[i])
			total += w->segs[i].end - w->segs[i].start;
	if (!total || (!w->threads_asked && total < SPLIT_MIN))
		return NULL;
	uint64_t piece = total / ((uint64_t)PIECES_PER_THREAD * k);
	piece = piece < PIECE_MIN ? PIECE_MIN : piece & ~15ULL;
	size_t num = 0;
	for (size_t i = 0; i < w->num_segs; i++)
		if (data[i])
			num += (w->segs[i].end - w->segs[i].start + piece - 1) / piece;
	sp->pieces = calloc(num, sizeof(*sp->pieces));
	sp->first = calloc(w->num_segs + 1, sizeof(*sp->first));
	if (!sp->pieces || !sp->first) {
		glibc_split_deinit(sp);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < w->num_segs; i++) {
		sp->first[i] = sp->num;
		if (!data[i])
			continue;
		uint64_t len = w->segs[i].end - w->segs[i].start;
		uint64_t n = (len + piece - 1) / piece, step = len / n;
		for (uint64_t j = 0; j < n; j++) {
			struct glibc_piece *p = &sp->pieces[sp->num++];
			p->seg = i;
			p->lo = (j * step) & ~15ULL;
			p->hi = j + 1 == n ? len : ((j + 1) * step) & ~15ULL;
		}
	}
	sp->first[w->num_segs] = sp->num;
	sp->threads = sp->num < k ? (unsigned)sp->num : k;
	struct run r = {.w = w, .data = data, .sp = sp};
	atomic_init(&r.next, 0);
	run(&r);
	return NULL;
}

void glibc_fill_pieces(struct glibc_walk *w, const uint8_t *const *data,
		       struct glibc_split *sp)
{
	struct run r = {.w = w, .data = data, .sp = sp, .filling = true};
	atomic_init(&r.next, 0);
	run(&r);
}
