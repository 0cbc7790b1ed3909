// Free lists: chunks held by tcache and fastbins look used from their
// neighbours' headers, so only walking the lists finds them; bin chunks
// are free by header and the lists say which bin holds them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"
#include "util/vec.h"

// TLS is searched this far below each thread pointer for `tcache`.
#define TLS_SEARCH 8192

// Safe-linking (glibc 2.32+): stored = (address of the field >> 12) ^ next.
static uint64_t reveal(bool safe, uint64_t field_addr, uint64_t stored)
{
	return safe ? (field_addr >> 12) ^ stored : stored;
}

// A plausible next entry: null, or the user pointer of a block we walked.
static bool valid_next(struct glibc_walk *w, uint64_t next, uint64_t bias)
{
	return next == 0 || hd_heap_find_exact(w->h, next + bias) >= 0;
}

// Votes on safe-linking from one list head: +1 protected, -1 plain, 0 can't
// tell. bias converts a list pointer to a user pointer (16 for fastbin
// chunk pointers, 0 for tcache entries).
static int vote(struct glibc_walk *w, uint64_t entry, uint64_t bias)
{
	uint64_t field = entry + bias, stored;
	if (!glibc_read64(w, field, &stored))
		return 0;
	bool plain = valid_next(w, stored, bias);
	bool prot = valid_next(w, reveal(true, field, stored), bias);
	return prot == plain ? 0 : prot ? 1 : -1;
}

struct tcache_set {
	uint64_t *addrs; // user pointers of tcache_perthread_structs
	size_t n, cap;
};

static bool tcache_add(struct tcache_set *set, uint64_t addr)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->addrs[i] == addr)
			return true;
	return HD_VEC_PUSH(set->addrs, set->n, set->cap, addr);
}

// The first heap of its arena: the main heap, or the thread arena's heap
// that holds its malloc_state, where tcache_init allocates a thread's
// tcache before anything else the thread asks of a new arena.
static bool first_heap(const struct glibc_walk *w, const struct glibc_segment *s)
{
	const struct hd_arena *a = &w->arenas[s->arena];
	uint64_t mask = ~(w->lay.heap_max_size - 1);
	return a->is_main || (s->start & mask) == (a->addr & mask);
}

static bool is_tcache_chunk(struct glibc_walk *w, uint64_t addr)
{
	int64_t id = hd_heap_find_exact(w->h, addr);
	return id >= 0 && w->lay.tcache_struct_chunk &&
	       !glibc_chunk_mmapped(w->h, (size_t)id) &&
	       glibc_chunk_size(w->h, (size_t)id) == w->lay.tcache_struct_chunk &&
	       hd_heap_state(w->h, id) == HD_STATE_USED;
}

// Does the chunk at user pointer addr hold a tcache_perthread_struct of
// lay's shape: every list head null or a walked block, and (with counts)
// a count that is zero exactly when its list is empty? A damaged tcache
// (a head pointing at no chunk, a count smashed) is still one: up to
// TCACHE_ANOMALIES such bins are forgiven, and walk_tcache reports them.
// *entries counts the non-empty bins whose head is a chunk of the bin's
// size.
#define TCACHE_ANOMALIES 2
static bool tcache_shape(struct glibc_walk *w, uint64_t addr,
			 const struct glibc_layout *lay, unsigned *entries)
{
	unsigned anomalies = 0;
	*entries = 0;
	for (unsigned i = 0; i < lay->tcache_nbins; i++) {
		uint64_t e = 0, count = 0;
		if (!glibc_read64(w, addr + lay->tcache_off_entries + 8 * i, &e))
			return false;
		int64_t id = e ? hd_heap_find_exact(w->h, e) : -1;
		if (e && id < 0) {
			if (++anomalies > TCACHE_ANOMALIES)
				return false;
		} else if (e && i < lay->tcache_small_bins) {
			if (glibc_chunk_size(w->h, (size_t)id) != 32 + 16 * (uint64_t)i)
				return false;
			++*entries;
		}
		if (lay->tcache_slots)
			continue;
		struct hd_error *err = hd_target_read(
			w->t, addr + lay->tcache_off_counts + i * lay->tcache_count_size,
			&count, lay->tcache_count_size);
		if (err) {
			hd_error_destroy(err);
			return false;
		}
		if (!e != !count && ++anomalies > TCACHE_ANOMALIES)
			return false;
	}
	return true;
}

// Does some thread's static TLS (below its thread pointer) hold addr?
static bool tls_points_at(struct glibc_walk *w, uint64_t addr)
{
	for (size_t i = 0; i < hd_target_num_threads(w->t); i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		uint64_t buf[TLS_SEARCH / 8];
		if (!th->has_regs || th->regs.fs_base < TLS_SEARCH)
			continue;
		struct hd_error *err = hd_target_read(
			w->t, th->regs.fs_base - TLS_SEARCH, buf, sizeof(buf));
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		for (size_t k = 0; k < TLS_SEARCH / 8; k++)
			if (buf[k] == addr)
				return true;
	}
	return false;
}

// Without DWARF, the tcache's shape says which rows of the version table
// remain: its chunk size (0x250 byte counts, 0x290 16-bit counts, 0x300
// 76 bins of free slots) at the start of an arena's first heap, where
// tcache_init puts it. No tcache there: a version without one if the
// layout allows it. firsts: first_chunks().
static void choose_tcache_rows(struct glibc_walk *w,
			       const struct tcache_set *firsts)
{
	if (w->ev.from_dwarf)
		return;
	uint32_t with_tcache = 0;
	for (size_t i = 0; i < glibc_num_versions; i++)
		if (glibc_versions[i].tcache_count_size)
			with_tcache |= 1u << i;
	for (size_t i = 0; i < firsts->n; i++) {
		uint64_t user = firsts->addrs[i];
		int64_t id = hd_heap_find_exact(w->h, user);
		uint64_t chunk = glibc_chunk_size(w->h, (size_t)id);
		for (size_t r = glibc_num_versions; r-- > 0;) {
			const struct glibc_version *v = &glibc_versions[r];
			if (!(w->candidates & (1u << r)) ||
			    v->tcache_struct_chunk != chunk)
				continue;
			struct glibc_layout lay = w->lay;
			glibc_layout_from_version(&lay, v);
			lay.heap_info_size = w->lay.heap_info_size;
			unsigned entries;
			if (!tcache_shape(w, user, &lay, &entries))
				continue;
			// Where a version without tcache is possible too (bins
			// at 104: 2.23-2.25 or 2.26), an application's first
			// block of that size full of zeros has the shape of an
			// empty tcache: ask for a cached entry or a thread's
			// `tcache` pointer to it.
			if ((w->candidates & ~with_tcache) && !entries &&
			    !tls_points_at(w, user))
				continue;
			uint32_t m = 0;
			for (size_t k = 0; k < glibc_num_versions; k++)
				if (glibc_versions[k].tcache_struct_chunk == chunk)
					m |= 1u << k;
			glibc_narrow(w, m);
			w->lay = lay;
			w->ev.tcache_chunk = chunk;
			return;
		}
	}
	// None seen: no tcache walk (a version without one, or a heap whose
	// tcache cannot be told).
	glibc_narrow(w, ~with_tcache);
	w->lay.tcache_struct_chunk = 0;
}

// The used first chunk (its user pointer) of each arena's first heap:
// tcache_init allocates a thread's tcache struct there, before anything
// else the thread asks of a new arena. Both the version's tcache shape
// and the tcaches found without TLS start from these.
static struct hd_error *first_chunks(struct glibc_walk *w,
				     struct tcache_set *firsts)
{
	for (size_t i = 0; i < w->num_segs; i++) {
		const struct glibc_segment *s = &w->segs[i];
		if (s->mmapped || !first_heap(w, s))
			continue;
		int64_t id = hd_heap_find_exact(w->h, s->start + 16);
		if (id >= 0 && hd_heap_state(w->h, id) == HD_STATE_USED &&
		    !tcache_add(firsts, s->start + 16))
			return &hd_error_no_memory;
	}
	return NULL;
}

// Those of the first chunks that hold a tcache of the layout chosen.
static struct hd_error *first_chunk_tcaches(struct glibc_walk *w,
					    const struct tcache_set *firsts,
					    struct tcache_set *set)
{
	for (size_t i = 0; i < firsts->n; i++)
		if (is_tcache_chunk(w, firsts->addrs[i]) &&
		    !tcache_add(set, firsts->addrs[i]))
			return &hd_error_no_memory;
	return NULL;
}

// The thread-local `tcache` pointer sits at the same offset below every
// thread's thread pointer (static TLS). Learn it from a thread whose
// tcache we know, then read it for every thread.
static struct hd_error *tls_tcaches(struct glibc_walk *w,
				    struct tcache_set *set)
{
	size_t nthreads = hd_target_num_threads(w->t);
	uint64_t offset = 0;
	for (size_t i = 0; i < nthreads && !offset; i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		if (!th->has_regs || th->regs.fs_base < TLS_SEARCH)
			continue;
		uint64_t buf[TLS_SEARCH / 8];
		uint64_t lo = th->regs.fs_base - TLS_SEARCH;
		struct hd_error *err = hd_target_read(w->t, lo, buf, sizeof(buf));
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		// Nearest to the thread pointer first.
		for (size_t k = TLS_SEARCH / 8; k-- > 0 && !offset;) {
			for (size_t j = 0; j < set->n; j++) {
				if (buf[k] == set->addrs[j]) {
					offset = th->regs.fs_base - (lo + 8 * k);
					break;
				}
			}
		}
	}
	if (!offset)
		return NULL;
	for (size_t i = 0; i < nthreads; i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		uint64_t p;
		if (!th->has_regs || !glibc_read64(w, th->regs.fs_base - offset, &p) ||
		    !p)
			continue;
		if (is_tcache_chunk(w, p)) {
			if (!tcache_add(set, p))
				return &hd_error_no_memory;
		} else if (hd_heap_find_chunk(w->h, p) >= 0) {
			hd_heap_problem_add(w->h, p,
					    "thread %d's tcache pointer 0x%llx does not point at a tcache block",
					    th->tid, (unsigned long long)p);
		}
	}
	return NULL;
}

static const char *list_label(enum glibc_list l)
{
	return glibc_list_name(l);
}

// How a list links its members: a tcache entry's first word is the next
// entry (user pointers, maybe safe-linked); a fastbin chunk's fd (at +16)
// the next chunk (safe-linked from 2.32); a bin chunk's fd the next chunk.
enum link_kind { LINK_TCACHE, LINK_FASTBIN, LINK_BIN };

static bool list_next(struct glibc_walk *w, enum link_kind k, bool safe,
		      uint64_t p, uint64_t *next)
{
	uint64_t field = k == LINK_TCACHE ? p : p + 16, stored;
	if (!glibc_read64(w, field, &stored))
		return false;
	*next = k == LINK_BIN ? stored : reveal(safe, field, stored);
	return true;
}

// Is target among the first n members of the list from first? A member
// met twice makes a loop; one already on another list is a chunk on two
// lists. At most n reads: n is what this walk already marked.
static bool seen_on_list(struct glibc_walk *w, enum link_kind k, bool safe,
			 uint64_t first, uint64_t n, uint64_t target)
{
	uint64_t p = first;
	for (uint64_t i = 0; i < n; i++) {
		if (p == target)
			return true;
		if (!list_next(w, k, safe, p, &p))
			return false;
	}
	return false;
}

// Says where a list pointer that is no chunk points: the reader knows then
// whether it is a stale heap pointer or a wild one.
static void describe_addr(struct glibc_walk *w, uint64_t p, char *buf,
			  size_t len)
{
	int64_t id = hd_heap_find_chunk(w->h, p);
	if (id >= 0) {
		snprintf(buf, len, "inside chunk 0x%llx, not at its start",
			 (unsigned long long)hd_heap_extent_start(w->h, (size_t)id));
		return;
	}
	const struct hd_mapping *m = hd_target_find_mapping(w->t, p);
	if (!m) {
		snprintf(buf, len, "which is not mapped");
		return;
	}
	for (size_t i = 0; i < hd_target_num_threads(w->t); i++) {
		const struct hd_thread *th = hd_target_thread(w->t, i);
		if (th->has_regs && th->regs.rsp >= m->start &&
		    th->regs.rsp < m->end) {
			snprintf(buf, len, "in the stack of thread %d", th->tid);
			return;
		}
	}
	const struct hd_module *mod = hd_target_find_module(w->t, p);
	if (mod)
		snprintf(buf, len, "in %s's %s", mod->name,
			 m->prot & HD_PROT_WRITE ? "data" : "code or read-only data");
	else
		snprintf(buf, len, "in mapping 0x%llx-0x%llx%s%s, outside every heap",
			 (unsigned long long)m->start, (unsigned long long)m->end,
			 m->path ? " " : "", m->path ? m->path : "");
}

// Marks one chunk as held by a list; returns false (saying why, naming
// the list and the link it stops at) if it cannot be: no block, one on
// another list already, or the allocator's own. prev is the chunk whose
// link led here, or the list's head (n == 0).
static bool mark(struct glibc_walk *w, uint64_t user, enum glibc_list list,
		 const char *what, uint64_t prev, uint64_t n)
{
	int64_t id = hd_heap_find_exact(w->h, user);
	if (id < 0) {
		char where[160];
		describe_addr(w, user - 16, where, sizeof(where));
		hd_heap_problem_add(w->h, user - 16,
				    "%s: %s 0x%llx links to 0x%llx, %s; the rest of the list is skipped",
				    what, n ? "chunk" : "the head at",
				    (unsigned long long)prev,
				    (unsigned long long)(user - 16), where);
		return false;
	}
	enum hd_block_state st = hd_heap_state(w->h, id);
	if (st == HD_STATE_FREE && hd_heap_list(w->h, id) != HD_LIST_UNKNOWN) {
		hd_heap_problem_add(w->h, user - 16,
				    "chunk 0x%llx is on two free lists (%s and %s); %s is cut there",
				    (unsigned long long)(user - 16),
				    list_label(hd_heap_list(w->h, id)),
				    list_label(list), what);
		return false;
	}
	if (st == HD_STATE_INTERNAL) {
		hd_heap_problem_add(w->h, user - 16,
				    "%s: %s 0x%llx links to allocator bookkeeping at 0x%llx; the rest of the list is skipped",
				    what, n ? "chunk" : "the head at",
				    (unsigned long long)prev,
				    (unsigned long long)(user - 16));
		return false;
	}
	bool by_header_free = st == HD_STATE_FREE;
	bool keeps_inuse = list == HD_LIST_TCACHE || list == HD_LIST_FASTBIN;
	if (by_header_free == keeps_inuse)
		hd_heap_problem_add(w->h, user - 16,
				    "chunk 0x%llx is on the %s list but its neighbour's header says %s",
				    (unsigned long long)(user - 16),
				    list_label(list),
				    by_header_free ? "free" : "in use");
	hd_heap_set(w->h, (size_t)id, HD_STATE_FREE, list);
	return true;
}

// What a tcache entry's second word holds says which glibc freed it:
// nothing kept (2.26-2.28), its tcache (2.29-2.33), the random key (2.34+).
static void note_key(struct glibc_walk *w, uint64_t tc, uint64_t key)
{
	struct glibc_evidence *ev = &w->ev;
	if (!ev->entries)
		ev->first_key = key;
	ev->entries++;
	ev->keys_tcache += key == tc;
	ev->keys_zero += key == 0;
	ev->keys_same += key == ev->first_key;
}

// Is p (as the list holds it) already on this very list, a loop? Then
// says so, naming the member whose link closes it, and returns true. The
// list is read again only for a chunk already marked with this kind of
// list, which ends the walk either way: O(n) once.
static bool loops_back(struct glibc_walk *w, enum link_kind k, bool safe,
		       uint64_t first, uint64_t n, uint64_t prev, uint64_t p,
		       enum glibc_list list, const char *what)
{
	int64_t id = hd_heap_find_exact(w->h, k == LINK_TCACHE ? p : p + 16);
	if (id < 0 || hd_heap_state(w->h, id) != HD_STATE_FREE ||
	    hd_heap_list(w->h, id) != list ||
	    !seen_on_list(w, k, safe, first, n, p))
		return false;
	hd_heap_problem_add(w->h, prev,
			    "%s loops%s: 0x%llx links back to 0x%llx, %s; the list is cut there",
			    what, k == LINK_BIN ? " without coming back to the bin" : "",
			    (unsigned long long)prev, (unsigned long long)p,
			    p == first ? "its first member" : "a member after its first");
	return true;
}

static void walk_tcache(struct glibc_walk *w, uint64_t tc, bool safe)
{
	const struct glibc_layout *lay = &w->lay;
	for (unsigned i = 0; i < lay->tcache_nbins; i++) {
		uint64_t count = 0, entry;
		struct hd_error *rerr = hd_target_read(w->t, tc + lay->tcache_off_counts +
							       i * lay->tcache_count_size,
						       &count, lay->tcache_count_size);
		hd_error_destroy(rerr);
		if (rerr || !glibc_read64(w, tc + lay->tcache_off_entries + 8 * i, &entry)) {
			hd_heap_problem_add(w->h, tc, "tcache 0x%llx is unreadable",
					    (unsigned long long)tc);
			return;
		}
		uint64_t want_chunk = 32 + 16 * (uint64_t)i, n = 0;
		uint64_t first = entry, prev = tc + lay->tcache_off_entries + 8 * i;
		char what[64];
		snprintf(what, sizeof(what), "tcache 0x%llx bin %u",
			 (unsigned long long)tc, i);
		// 2.42's large bins hold a range of sizes each.
		bool one_size = i < lay->tcache_small_bins;
		// Every pass marks a new block or stops: n never exceeds the
		// blocks walked, whatever the list or count says.
		while (entry) {
			// Never reached (each pass marks a new block), kept as
			// the bound the loop stands on.
			if (n > w->h->num_blocks)
				break;
			if (n && loops_back(w, LINK_TCACHE, safe, first, n, prev,
					    entry, HD_LIST_TCACHE, what))
				break;
			int64_t id = hd_heap_find_exact(w->h, entry);
			if (id < 0) {
				char where[160];
				describe_addr(w, entry, where, sizeof(where));
				hd_heap_problem_add(w->h, entry,
						    "%s: %s 0x%llx links to 0x%llx, %s; the rest of the list is skipped",
						    what, n ? "entry" : "the head at",
						    (unsigned long long)prev,
						    (unsigned long long)entry, where);
				break;
			}
			if (one_size &&
			    glibc_chunk_size(w->h, (size_t)id) != want_chunk)
				hd_heap_problem_add(w->h, entry - 16,
						    "tcache bin %u (chunks of 0x%llx bytes) holds a chunk of 0x%llx bytes at 0x%llx",
						    i, (unsigned long long)want_chunk,
						    (unsigned long long)glibc_chunk_size(w->h, (size_t)id),
						    (unsigned long long)(entry - 16));
			if (!mark(w, entry, HD_LIST_TCACHE, what, prev, n))
				break;
			n++;
			uint64_t key = 0;
			if (glibc_read64(w, entry + 8, &key))
				note_key(w, tc, key);
			prev = entry;
			if (!list_next(w, LINK_TCACHE, safe, entry, &entry))
				break;
		}
		// num_slots (2.42+) is the room left, not the length: nothing
		// to compare without mp_.tcache_count.
		if (!lay->tcache_slots && n != count && !(n < count && entry))
			hd_heap_problem_add(w->h, tc,
					    "tcache 0x%llx bin %u: count says %llu entries, the list has %llu",
					    (unsigned long long)tc, i,
					    (unsigned long long)count,
					    (unsigned long long)n);
	}
}

// Walks a fastbin or bin list from its head's link p to end (0 for a
// fastbin, the bin itself for a bin). Every pass marks a block not marked
// before or stops (mark, loops_back): the walk costs the blocks the chunk
// walk found at most, however long or cyclic the damaged list is, and
// the warning names the list and the link it stopped at.
static void walk_chain(struct glibc_walk *w, enum link_kind k, bool safe,
		       uint64_t head, uint64_t p, uint64_t end,
		       enum glibc_list list, const char *what)
{
	uint64_t first = p, prev = head, n = 0;
	for (; p != end; n++) {
		// Never reached (each pass marks a new block), kept as the
		// bound the loop stands on.
		if (n > w->h->num_blocks) {
			hd_heap_problem_add(w->h, p,
					    "%s is longer than the %zu blocks walked; cut at 0x%llx",
					    what, w->h->num_blocks,
					    (unsigned long long)p);
			break;
		}
		if (!p) {
			hd_heap_problem_add(w->h, head, "%s ends in a null pointer",
					    what);
			break;
		}
		if (n && loops_back(w, k, safe, first, n, prev, p, list, what))
			break;
		if (!mark(w, p + 16, list, what, prev, n))
			break;
		prev = p;
		if (!list_next(w, k, safe, p, &p))
			break;
	}
}

static void walk_fastbins(struct glibc_walk *w, const struct hd_arena *a,
			  bool safe)
{
	const struct glibc_layout *lay = &w->lay;
	for (unsigned i = 0; i < lay->nfastbins; i++) {
		uint64_t head = a->addr + lay->off_fastbins + 8 * i, p;
		if (!glibc_read64(w, head, &p))
			return;
		char what[64];
		snprintf(what, sizeof(what), "fastbin %u of arena 0x%llx", i,
			 (unsigned long long)a->addr);
		walk_chain(w, LINK_FASTBIN, safe, head, p, 0, HD_LIST_FASTBIN,
			   what);
	}
}

static void walk_bins(struct glibc_walk *w, const struct hd_arena *a)
{
	const struct glibc_layout *lay = &w->lay;
	for (unsigned i = 1; i <= lay->nbins / 2; i++) {
		// bin_at(i): a fake chunk whose fd/bk are bins[2(i-1)], [+1].
		uint64_t head = a->addr + lay->off_bins + 16 * (i - 1) - 16, p;
		enum glibc_list list = i == 1 ? HD_LIST_UNSORTED
				       : i < 64 ? HD_LIST_SMALL
						: HD_LIST_LARGE;
		if (!glibc_read64(w, head + 16, &p))
			return;
		char what[64];
		snprintf(what, sizeof(what), "bin %u of arena 0x%llx", i,
			 (unsigned long long)a->addr);
		walk_chain(w, LINK_BIN, false, head, p, head, list, what);
	}
}

static bool detect_safe_linking(struct glibc_walk *w,
				const struct tcache_set *set)
{
	const struct glibc_layout *lay = &w->lay;
	int score = 0;
	for (size_t t = 0; t < set->n; t++) {
		for (unsigned i = 0; i < lay->tcache_nbins; i++) {
			uint64_t e;
			if (glibc_read64(w, set->addrs[t] + lay->tcache_off_entries + 8 * i, &e) && e)
				score += vote(w, e, 0);
		}
	}
	for (size_t a = 0; a < w->num_arenas; a++) {
		for (unsigned i = 0; i < lay->nfastbins; i++) {
			uint64_t p;
			if (glibc_read64(w, w->arenas[a].addr + lay->off_fastbins + 8 * i, &p) && p)
				score += vote(w, p, 16);
		}
	}
	w->ev.safe_votes = score;
	if (score)
		return score > 0;
	// No evidence either way: what the versions left say, if they agree
	// (nothing is on a singly linked list, so it decides nothing).
	bool any_safe = false, any_plain = false;
	for (size_t i = 0; i < glibc_num_versions; i++) {
		if (!(w->candidates & (1u << i)))
			continue;
		any_safe |= glibc_versions[i].safe_linking;
		any_plain |= !glibc_versions[i].safe_linking;
	}
	return any_safe || !any_plain;
}

struct hd_error *glibc_walk_free_lists(struct glibc_walk *w)
{
	struct tcache_set set = {0}, firsts = {0};
	struct hd_error *err = first_chunks(w, &firsts);
	if (!err) {
		choose_tcache_rows(w, &firsts);
		err = first_chunk_tcaches(w, &firsts, &set);
	}
	free(firsts.addrs);
	if (!err)
		err = tls_tcaches(w, &set);
	if (err) {
		free(set.addrs);
		return err;
	}
	bool safe = detect_safe_linking(w, &set);
	w->safe_linking = safe;
	w->num_tcaches = set.n;
	for (size_t i = 0; i < set.n; i++) {
		int64_t id = hd_heap_find_exact(w->h, set.addrs[i]);
		hd_heap_set(w->h, (size_t)id, HD_STATE_INTERNAL, HD_LIST_NONE);
	}
	for (size_t i = 0; i < set.n; i++)
		walk_tcache(w, set.addrs[i], safe);
	for (size_t a = 0; a < w->num_arenas; a++) {
		walk_fastbins(w, &w->arenas[a], safe);
		walk_bins(w, &w->arenas[a]);
	}
	free(set.addrs);
	for (size_t i = 0; i < w->h->num_blocks; i++) {
		if (hd_heap_state(w->h, i) == HD_STATE_FREE &&
		    hd_heap_list(w->h, i) == HD_LIST_UNKNOWN)
			hd_heap_problem_add(w->h, w->h->addr[i] - 16,
					    "free chunk 0x%llx is on no free list",
					    (unsigned long long)(w->h->addr[i] - 16));
	}
	return NULL;
}
