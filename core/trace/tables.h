// How one call is written into the tables (record.c has the design and
// its limits).
//
// Each traced call takes a fast path, inlined here: the call site is in
// its home slot, the block's live entry goes to (or is found in) its home
// slot, its size fits the entry. Anything else (a site's first call,
// probing, stale entries, big sizes, lost races) is handed, by a tail
// call, to the general code in record.c, which does the whole job again
// from where the fast path stopped. Since every call the fast path makes
// is a tail call, nothing lives across a call: the traced paths run in
// the caller-saved registers, with no frame of their own (a traced
// malloc + free pair costs the tracer about 110 instructions).
#ifndef HD_TRACE_TABLES_H
#define HD_TRACE_TABLES_H

#include <sys/single_threaded.h>

#include "trace_internal.h"

#define HD_SITE_PROBES 64
#define HD_LIVE_PROBES 64
#define HD_GOLDEN 0x9E3779B97F4A7C15ull
#define HD_ADDR_LIMIT (1ull << 48) // live keys hold 48 address bits

#define HD_INLINE static inline __attribute__((always_inline))
#define HD_LIKELY(x) __builtin_expect(!!(x), 1)
#define HD_UNLIKELY(x) __builtin_expect(!!(x), 0)

// mt selects atomic operations; every caller passes a constant, so each
// recording function is compiled twice (see hd_free_on).
HD_INLINE void hd_add(uint64_t *p, uint64_t v, int mt)
{
	if (mt)
		__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
	else
		*p += v;
}

HD_INLINE void hd_count(struct hd_trace_count *c, uint64_t bytes, int mt)
{
	hd_add(&c->count, 1, mt);
	hd_add(&c->bytes, bytes, mt);
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

// While the process has one thread (glibc's __libc_single_threaded)
// plain adds and stores do: an atomic read-modify-write costs ~20 cycles,
// and a traced malloc and free do about a dozen. Neither case is hinted as
// the likely one: GCC would move the other out of line.
#define HD_MT() (!__builtin_expect_with_probability(__libc_single_threaded, 1, 0.5))

// Class k of n: its bit length (0 for 0). A block that was allocated is
// below 2^63 bytes, so 2n + 1 does not overflow and k stays below 64.
HD_INLINE unsigned hd_size_class(uint64_t n)
{
	return 63 - (unsigned)__builtin_clzll(2 * n + 1);
}

HD_INLINE struct hd_trace_count *hd_age_row(uint32_t birth)
{
	uint32_t age = hd_state.epoch - birth;

	return &hd_state.ages[age < HD_TRACE_AGES ? age : HD_TRACE_AGES - 1];
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
// began, and returns what the hook returns. Not inlined into hd_free_on,
// which is in the same file: they would need registers saved there.
#define HD_SLOW HD_HIDDEN __attribute__((noinline, cold))
HD_SLOW void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n,
			      uint64_t pc);
HD_SLOW void *hd_alloc_live_slow(void *p, uint64_t n, uint32_t site,
				   uint32_t birth);
HD_SLOW void hd_free_slow(void *p, uint64_t pc);
HD_SLOW void hd_free_site_slow(void *p, uint64_t pc, uint64_t size,
				 uint32_t birth);

// Records block p of n bytes, allocated by op at pc; returns p.
HD_INLINE void *hd_alloc_fast(enum hd_trace_op op, void *ptr, uint64_t n,
			      uint64_t pc, int mt)
{
	uint64_t p = (uintptr_t)ptr;
	uint32_t site = hd_site_home(pc);
	struct hd_trace_live *e;
	uint32_t birth;
	uint64_t cur;

	if (HD_UNLIKELY(__atomic_load_n(&hd_state.sites[site].pc,
					__ATOMIC_RELAXED) != pc))
		return hd_alloc_slow(op, ptr, n, pc);
	hd_count(&hd_state.sites[site].op[op], n, mt);
	hd_count(&hd_state.classes[hd_size_class(n)], n, mt);
	e = &hd_state.live[hd_live_home(p)];
	cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
	birth = hd_state.epoch;
	// n + 1 < 2^32: n is below HD_TRACE_BIG_SIZE.
	if (HD_UNLIKELY(((n + 1) >> 32 | p >> 48) != 0 || cur > 1 ||
			!hd_claim(&e->key, cur, p | (uint64_t)site << 48, mt)))
		return hd_alloc_live_slow(ptr, n, site, birth);
	e->info = (uint64_t)birth << 32 | n;
	return ptr;
}

// Both copies of hd_alloc_fast; returns p.
HD_INLINE void *hd_record_alloc(enum hd_trace_op op, void *p, uint64_t n,
				uint64_t pc)
{
	if (HD_MT())
		return hd_alloc_fast(op, p, n, pc, 1);
	return hd_alloc_fast(op, p, n, pc, 0);
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
	uint64_t info, size;
	uint32_t site, birth;

	if (HD_UNLIKELY(!hd_key_is(cur, p)))
		return hd_free_slow(ptr, pc);
	info = e->info;
	size = HD_TRACE_INFO_SIZE(info);
	birth = HD_TRACE_INFO_BIRTH(info);
	if (HD_UNLIKELY(size == HD_TRACE_BIG_SIZE))
		return hd_free_slow(ptr, pc);
	__atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
	site = hd_site_home(pc);
	if (HD_UNLIKELY(__atomic_load_n(&hd_state.sites[site].pc,
					__ATOMIC_RELAXED) != pc))
		return hd_free_site_slow(ptr, pc, size, birth);
	hd_count(&hd_state.sites[site].op[HD_TRACE_FREE], size, mt);
	hd_count(hd_age_row(birth), size, mt);
	__libc_free(ptr);
}

// The traced free of p (not NULL) at pc (record.c): a function of its
// own, reached by a tail call from the hooks, so that their off path
// saves no registers.
HD_HIDDEN void hd_free_on(void *p, uint64_t pc);

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
	hd_free_on(p, HD_CALLER_PC());
}

#endif // HD_TRACE_TABLES_H
