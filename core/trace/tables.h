// How one call is written into the tables (record.c has the design and
// its limits).
//
// Each traced call takes a fast path, inlined here: the call site is in
// its home slot (and, with threads, in its home entry of the thread's
// shard). Anything else (a site's first call, a thread's first call,
// probing, a free of a block without a tag) is handed, by a tail call, to
// the general code in record.c, which does the whole job again from where
// the fast path stopped. Since every call the fast path makes is a tail
// call, nothing lives across a call: the recording runs in caller-saved
// registers. A block's site, size and birth are in its tag
// (heapdom_trace.h), in the block's last usable word.
#ifndef HD_TRACE_TABLES_H
#define HD_TRACE_TABLES_H

#include <sys/single_threaded.h>

#include "trace_internal.h"

#define HD_GOLDEN 0x9E3779B97F4A7C15ull

#define HD_INLINE static inline __attribute__((always_inline))
#define HD_LIKELY(x) __builtin_expect(!!(x), 1)
#define HD_UNLIKELY(x) __builtin_expect(!!(x), 0)

// atomic: the counter is shared by threads; every caller passes a
// constant.
HD_INLINE void hd_add(uint64_t *p, uint64_t v, int atomic)
{
	if (atomic)
		__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
	else
		*p += v;
}

HD_INLINE void hd_count(struct hd_trace_count *c, uint64_t bytes, int atomic)
{
	hd_add(&c->count, 1, atomic);
	hd_add(&c->bytes, bytes, atomic);
}

// While the process has one thread (glibc's __libc_single_threaded) the
// shared tables take plain adds; with threads, each thread counts into its
// shard (plain adds too). An atomic read-modify-write costs ~20 cycles,
// drains the store buffer, and bounces the counter's line between the
// threads' caches.
// Neither case is hinted as the likely one: GCC would move the other out
// of line.
#define HD_MT() (!__builtin_expect_with_probability(__libc_single_threaded, 1, 0.5))

// Class k of n: its bit length (0 for 0). A block that was allocated is
// below 2^63 bytes, so 2n + 1 does not overflow and k stays below 64.
HD_INLINE unsigned hd_size_class(uint64_t n)
{
	return 63 - (unsigned)__builtin_clzll(2 * n + 1);
}

// The age row of a block born in epoch birth (its tag's bits of it).
HD_INLINE unsigned hd_age(uint32_t birth)
{
	uint32_t age = (hd_state.epoch - birth) & HD_TRACE_TAG_BIRTH_MASK;

	return age < HD_TRACE_AGES ? age : HD_TRACE_AGES - 1;
}

// The home slot of call site pc.
HD_INLINE uint32_t hd_site_home(uint64_t pc)
{
	return (uint32_t)((pc * HD_GOLDEN) >> 48);
}

// What glibc is asked for a traced allocation of n bytes: the block and
// its tag. Where n + HD_TRACE_TAG overflows, SIZE_MAX: glibc fails it with
// ENOMEM, as it fails every size that close to it.
HD_INLINE size_t hd_tagged_size(size_t n)
{
	return n <= (size_t)-1 - HD_TRACE_TAG ? n + HD_TRACE_TAG : (size_t)-1;
}

// The usable size of a glibc chunk whose header (the word before the
// block: chunk size and flag bits) is h: mmapped chunks lose 16 bytes, the
// others 8.
HD_INLINE uint64_t hd_chunk_usable(uint64_t h)
{
	return (h & ~7ull) - 8 - ((h & 2) << 2);
}

// The usable size of glibc's block p, from its chunk header. 0 for a
// header no glibc block has, which glibc's free will report itself.
HD_INLINE uint64_t hd_usable(uint64_t p)
{
	uint64_t h = ((const uint64_t *)p)[-1], size = h & ~7ull;

	if (HD_UNLIKELY(size < 32 || (size & 15) != 0 || size > (1ull << 47)))
		return 0;
	return hd_chunk_usable(h);
}

// The tag of block p (usable bytes u), in its last HD_TRACE_TAG bytes.
HD_INLINE uint64_t *hd_tag_of(uint64_t p, uint64_t u)
{
	return (uint64_t *)(p + u - HD_TRACE_TAG);
}

// Writes block p's tag: n bytes asked for, allocated at site in epoch
// birth. The header is the one glibc has just written: hd_usable's checks
// are left out. Should glibc give less than asked, no tag, and the
// block's free is untracked.
HD_INLINE void hd_tag_write(uint64_t p, uint64_t n, uint32_t site, uint32_t birth)
{
	uint64_t u = hd_chunk_usable(((const uint64_t *)p)[-1]);

	hd_trace_tag_write(hd_tag_of(p, u), p, hd_state.tag_key, u, n, site, birth);
}

// The general paths (record.c). Each finishes the call the fast path
// began, and returns what the hook returns. Not inlined into the copies
// of the fast paths, which are in the same file: they would need
// registers saved there.
#define HD_SLOW HD_HIDDEN __attribute__((noinline, cold))
HD_SLOW void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n,
			      uint64_t pc);
HD_SLOW void hd_free_slow(void *p, uint64_t pc);
HD_SLOW void hd_free_site_slow(void *p, uint64_t pc, uint64_t size,
				 uint32_t birth);

// The calling thread's shard row for site (its home entry), or NULL.
HD_INLINE struct hd_trace_shard_site *hd_shard_site(struct hd_trace_shard *sh,
						     uint32_t site)
{
	struct hd_trace_shard_site *ss;

	if (HD_UNLIKELY((uintptr_t)sh <= (uintptr_t)HD_NO_SHARD))
		return NULL;
	ss = &sh->sites[site & (HD_TRACE_SHARD_SITES - 1)];
	return HD_LIKELY(ss->slot == site + 1) ? ss : NULL;
}

// Where a call at pc counts on the fast path: its site's slot, the
// site's row for op and the classes and ages it adds to, in the thread's
// shard (mt) or the shared tables. 0: the call needs the general path
// (the site is not in its home slot, or not in its home entry of the
// thread's shard).
struct hd_fast {
	uint32_t site;
	struct hd_trace_count *row, *classes, *ages;
};

HD_INLINE int hd_fast_rows(uint64_t pc, enum hd_trace_op op, int mt,
			   struct hd_fast *f)
{
	f->site = hd_site_home(pc);
	if (HD_UNLIKELY(__atomic_load_n(&hd_state.sites[f->site].pc,
					__ATOMIC_RELAXED) != pc))
		return 0;
	if (mt) {
		struct hd_trace_shard *sh = hd_thread_shard;
		struct hd_trace_shard_site *ss = hd_shard_site(sh, f->site);

		if (HD_UNLIKELY(!ss))
			return 0;
		f->row = &ss->op[op];
		f->classes = sh->classes;
		f->ages = sh->ages;
	} else {
		f->row = &hd_state.sites[f->site].op[op];
		f->classes = hd_state.classes;
		f->ages = hd_state.ages;
	}
	return 1;
}

// Records block p (asked of glibc with its tag) of n bytes, allocated by
// op at pc, and writes its tag; returns p. mt: the process has threads;
// the counts then go to the thread's shard.
HD_INLINE void *hd_alloc_fast(enum hd_trace_op op, void *ptr, uint64_t n,
			      uint64_t pc, int mt)
{
	struct hd_fast f;

	if (HD_UNLIKELY(!hd_fast_rows(pc, op, mt, &f)))
		return hd_alloc_slow(op, ptr, n, pc);
	hd_count(f.row, n, 0);
	hd_count(&f.classes[hd_size_class(n)], n, 0);
	hd_tag_write((uintptr_t)ptr, n, f.site, hd_state.epoch);
	return ptr;
}

// The two copies of hd_alloc_fast (record.c): functions of their own, so
// that the hooks calling them keep only their own values across glibc's
// call, and the single-threaded copy does not save the registers the
// threaded one needs.
HD_HIDDEN void *hd_alloc_st(enum hd_trace_op op, void *p, uint64_t n,
			    uint64_t pc);
HD_HIDDEN void *hd_alloc_mt(enum hd_trace_op op, void *p, uint64_t n,
			    uint64_t pc);

// Records block p of n bytes, allocated by op at pc; returns p.
HD_INLINE void *hd_record_alloc(enum hd_trace_op op, void *p, uint64_t n,
				uint64_t pc)
{
	if (HD_MT())
		return hd_alloc_mt(op, p, n, pc);
	return hd_alloc_st(op, p, n, pc);
}

// Reads block p's tag; 0 if it has none (allocated while tracing was
// off, or its tag overwritten). A tag found is cleared, so that a block
// allocated later at p while tracing is off does not inherit it.
HD_INLINE int hd_tag_take(uint64_t p, uint64_t *size, uint32_t *site, uint32_t *birth)
{
	uint64_t u = hd_usable(p), *t;

	if (HD_UNLIKELY(u < HD_TRACE_TAG))
		return 0;
	t = hd_tag_of(p, u);
	if (HD_UNLIKELY(!hd_trace_tag_read(t, p, hd_state.tag_key, u, size, site, birth)))
		return 0;
	t[0] = 0;
	return 1;
}

// Counts at pc the free of a traced block of size bytes born in epoch
// birth, in the fast path's rows. 0: the call needs the general path.
HD_INLINE int hd_free_rows(uint64_t pc, int mt, uint64_t size, uint32_t birth)
{
	struct hd_fast f;

	if (HD_UNLIKELY(!hd_fast_rows(pc, HD_TRACE_FREE, mt, &f)))
		return 0;
	hd_count(f.row, size, 0);
	hd_count(&f.ages[hd_age(birth)], size, 0);
	return 1;
}

// Records the free of p at pc, then frees it.
HD_INLINE void hd_free_fast(void *ptr, uint64_t pc, int mt)
{
	uint64_t size;
	uint32_t site, birth;

	if (HD_UNLIKELY(!hd_tag_take((uintptr_t)ptr, &size, &site, &birth)))
		return hd_free_slow(ptr, pc);
	if (HD_UNLIKELY(!hd_free_rows(pc, mt, size, birth)))
		return hd_free_site_slow(ptr, pc, size, birth);
	__libc_free(ptr);
}

// The two copies of hd_free_fast, the traced free of p (not NULL) at pc
// (record.c): functions of their own, reached by a tail call from the
// hooks, so that their off path saves no registers.
HD_HIDDEN void hd_free_st(void *p, uint64_t pc);
HD_HIDDEN void hd_free_mt(void *p, uint64_t pc);

// The body of free() and of every operator delete: one branch when off.
// Always inlined, so the return address is the hook's own (GCC's rule for
// inlined functions), and read only after the branch, so the off path
// stays a load, a test and a jump.
HD_INLINE void hd_free_hook(void *p)
{
	if (HD_OFF()) {
		__libc_free(p);
		return;
	}
	// free(NULL) is not counted.
	if (!p) {
		__libc_free(p);
		return;
	}
	if (HD_MT())
		hd_free_mt(p, HD_CALLER_PC());
	else
		hd_free_st(p, HD_CALLER_PC());
}

#endif // HD_TRACE_TABLES_H
