// How one call is written into the tables (record.c has the design and
// its limits).
//
// Each traced call takes a fast path, inlined here: the call site is in
// its home slot (and, with threads, in its home entry of the thread's
// shard), the block's live entry goes to (or is found in) its home slot,
// its size fits the entry. Anything else (a site's first call, a thread's
// first call, probing, stale entries, big sizes, lost races) is handed,
// by a tail call, to the general code in record.c, which does the whole
// job again from where the fast path stopped. Since every call the fast
// path makes is a tail call, nothing lives across a call: the recording
// runs in caller-saved registers (a traced malloc + free pair costs the
// tracer about 150 instructions, cachegrind).
#ifndef HD_TRACE_TABLES_H
#define HD_TRACE_TABLES_H

#include <sys/single_threaded.h>

#include "trace_internal.h"

#define HD_GOLDEN 0x9E3779B97F4A7C15ull
#define HD_ADDR_LIMIT (1ull << 48) // live keys hold 48 address bits

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

HD_INLINE int hd_claim(uint64_t *p, uint64_t expect, uint64_t v, int mt)
{
	if (!mt) {
		*p = v;
		return 1;
	}
	return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

// While the process has one thread (glibc's __libc_single_threaded) the
// shared tables take plain adds and stores; with threads, each thread
// counts into its shard (plain adds too) and claims live entries with a
// CAS. An atomic read-modify-write costs ~20 cycles, drains the store
// buffer, and bounces the counter's line between the threads' caches.
// Neither case is hinted as the likely one: GCC would move the other out
// of line.
#define HD_MT() (!__builtin_expect_with_probability(__libc_single_threaded, 1, 0.5))

// Class k of n: its bit length (0 for 0). A block that was allocated is
// below 2^63 bytes, so 2n + 1 does not overflow and k stays below 64.
HD_INLINE unsigned hd_size_class(uint64_t n)
{
	return 63 - (unsigned)__builtin_clzll(2 * n + 1);
}

// The age row of a block born in epoch birth.
HD_INLINE unsigned hd_age(uint32_t birth)
{
	uint32_t age = hd_state.epoch - birth;

	return age < HD_TRACE_AGES ? age : HD_TRACE_AGES - 1;
}

// The home slot of call site pc.
HD_INLINE uint32_t hd_site_home(uint64_t pc)
{
	return (uint32_t)((pc * HD_GOLDEN) >> 48);
}

// Blocks are at least 32 bytes apart in glibc, so p >> 5 is distinct for
// live blocks, and neighbouring blocks land in neighbouring slots (cache
// and TLB friendly when a program allocates many blocks in a row). The
// bits above the 64 MiB window are mixed in, through a multiplication,
// so that heaps at 64 MiB aligned addresses (non-main arenas, often
// adjacent) start far apart: a plain shift-and-xor puts them a few
// hundred slots apart, and their blocks then overflow the probe limit.
HD_INLINE uint32_t hd_live_home(uint64_t p)
{
	uint64_t h = (p >> 5) ^ (((p >> 26) * HD_GOLDEN) >> 43);

	return (uint32_t)(h & (HD_TRACE_LIVE - 1));
}

// Whether live key k is address p's (the site's bits do not count).
HD_INLINE int hd_key_is(uint64_t k, uint64_t p)
{
	return ((k ^ p) << 16) == 0;
}

// The general paths (record.c). Each finishes the call the fast path
// began, and returns what the hook returns. Not inlined into the copies
// of the fast paths, which are in the same file: they would need
// registers saved there.
#define HD_SLOW HD_HIDDEN __attribute__((noinline, cold))
HD_SLOW void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n,
			      uint64_t pc);
HD_SLOW void *hd_alloc_live_slow(void *p, uint64_t n, uint32_t site,
				   uint32_t birth);
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

// Records block p of n bytes, allocated by op at pc; returns p. mt: the
// process has threads; the counts then go to the thread's shard.
HD_INLINE void *hd_alloc_fast(enum hd_trace_op op, void *ptr, uint64_t n,
			      uint64_t pc, int mt)
{
	uint64_t p = (uintptr_t)ptr;
	struct hd_trace_live *e;
	struct hd_fast f;
	uint32_t birth;
	uint64_t cur;

	if (HD_UNLIKELY(!hd_fast_rows(pc, op, mt, &f)))
		return hd_alloc_slow(op, ptr, n, pc);
	hd_count(f.row, n, 0);
	hd_count(&f.classes[hd_size_class(n)], n, 0);
	e = &hd_state.live[hd_live_home(p)];
	cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
	birth = hd_state.epoch;
	// n + 1 < 2^32: n is below HD_TRACE_BIG_SIZE.
	if (HD_UNLIKELY(((n + 1) >> 32 | p >> 48) != 0 || cur > 1 ||
			!hd_claim(&e->key, cur, p | (uint64_t)f.site << 48, mt)))
		return hd_alloc_live_slow(ptr, n, f.site, birth);
	e->info = (uint64_t)birth << 32 | n;
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

// Records the free of p at pc, then frees it. The entry is taken before
// the block goes back to glibc: no other thread can have been given the
// same address yet. Only the thread freeing p touches p's entry (the
// program may not free a block twice nor use it after free), so taking it
// needs no CAS.
HD_INLINE void hd_free_fast(void *ptr, uint64_t pc, int mt)
{
	uint64_t p = (uintptr_t)ptr;
	struct hd_trace_live *e = &hd_state.live[hd_live_home(p)];
	uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
	struct hd_fast f;
	uint64_t info, size;
	uint32_t birth;

	if (HD_UNLIKELY(!hd_key_is(cur, p)))
		return hd_free_slow(ptr, pc);
	info = e->info;
	size = HD_TRACE_INFO_SIZE(info);
	birth = HD_TRACE_INFO_BIRTH(info);
	if (HD_UNLIKELY(size == HD_TRACE_BIG_SIZE))
		return hd_free_slow(ptr, pc);
	__atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
	if (HD_UNLIKELY(!hd_fast_rows(pc, HD_TRACE_FREE, mt, &f)))
		return hd_free_site_slow(ptr, pc, size, birth);
	hd_count(f.row, size, 0);
	hd_count(&f.ages[hd_age(birth)], size, 0);
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
