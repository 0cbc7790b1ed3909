// How one call is written into the tables (record.c has the design and
// its limits). Everything here is inlined into each hook: a traced
// malloc + free pair costs the tracer about a hundred instructions, and
// each hook then needs no call of its own besides glibc's.
#ifndef HD_TRACE_TABLES_H
#define HD_TRACE_TABLES_H

#include <sys/single_threaded.h>

#include "trace_internal.h"

#define HD_SITE_PROBES 64
#define HD_LIVE_PROBES 64
#define HD_GOLDEN 0x9E3779B97F4A7C15ull
#define HD_ADDR_LIMIT (1ull << 48) // live keys hold 48 address bits

#define HD_INLINE static inline __attribute__((always_inline))

// mt selects atomic operations; every caller passes a constant, so each
// recording function is compiled twice (see hd_record_alloc).
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

HD_INLINE unsigned hd_size_class(uint64_t n)
{
	unsigned k = n ? 64 - (unsigned)__builtin_clzll(n) : 0;

	return k < HD_TRACE_CLASSES ? k : HD_TRACE_CLASSES - 1;
}

// The slot of call site pc; HD_TRACE_NO_SITE when HD_SITE_PROBES slots
// in a row belong to other sites.
HD_INLINE uint32_t hd_site_slot(uint64_t pc, int mt)
{
	uint32_t i = (uint32_t)((pc * HD_GOLDEN) >> 48);

	for (unsigned probe = 0; probe < HD_SITE_PROBES; probe++) {
		struct hd_trace_site *s = &hd_state.sites[i];
		uint64_t cur = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);

		if (__builtin_expect(cur == pc, 1))
			return i;
		if (cur == 0) {
			if (hd_claim(&s->pc, 0, pc, mt))
				return i;
			// Lost the race: the winner may have claimed it for
			// this same pc.
			if (__atomic_load_n(&s->pc, __ATOMIC_RELAXED) == pc)
				return i;
		}
		// HD_TRACE_NO_SITE holds HD_TRACE_PC_NONE: never free, never
		// a return address.
		i = (i + 1) & (HD_TRACE_SITES - 1);
	}
	return HD_TRACE_NO_SITE;
}

// Blocks are at least 32 bytes apart in glibc, so p >> 5 is distinct for
// live blocks, and neighbouring blocks land in neighbouring slots (cache
// and TLB friendly when a program allocates many blocks in a row). The
// bits above the 64 MiB window are mixed in, through a multiplication,
// so that heaps at 64 MiB aligned addresses (non-main arenas, often
// adjacent) start far apart: a plain shift-and-xor puts them a few
// hundred slots apart, and their blocks then overflow the probe limit.
HD_INLINE uint32_t hd_live_hash(uint64_t p)
{
	uint64_t h = (p >> 5) ^ (((p >> 26) * HD_GOLDEN) >> 43);

	return (uint32_t)(h & (HD_TRACE_LIVE - 1));
}

// Whether live key k is address p's (the site's bits do not count).
HD_INLINE int hd_key_is(uint64_t k, uint64_t p)
{
	return ((k ^ p) << 16) == 0;
}

// The rare cases, out of line (record.c): sizes that do not fit the
// entry's 32 bits, addresses that do not fit its 48.
// They save the registers they use: the hot path around their calls then
// needs no registers of its own saved.
#define HD_COLD                                                          \
	HD_HIDDEN __attribute__((cold, no_caller_saved_registers,        \
				 target("general-regs-only")))
HD_COLD uint64_t hd_live_big_info(uint64_t p, uint64_t n, uint32_t birth);
HD_COLD uint64_t hd_live_big_take(uint64_t p);
HD_COLD void hd_live_dropped(int mt);

HD_INLINE void hd_live_insert(uint64_t p, uint64_t n, uint32_t site,
			      uint32_t birth, int mt)
{
	uint32_t i = hd_live_hash(p);
	uint64_t key = p | (uint64_t)site << 48;
	uint64_t info = (uint64_t)birth << 32 | n;

	if (__builtin_expect(n >= HD_TRACE_BIG_SIZE || p >= HD_ADDR_LIMIT, 0)) {
		info = p < HD_ADDR_LIMIT ? hd_live_big_info(p, n, birth) : 0;
		if (!info) {
			hd_live_dropped(mt);
			return;
		}
	}
	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);

		if (__builtin_expect(cur <= 1, 1) && hd_claim(&e->key, cur, key, mt)) {
			e->info = info;
			return;
		}
		// A stale entry (freed while tracing was off): the address is
		// ours now, so the slot is too. A stale big size goes too,
		// unless this block is big as well: hd_live_big_info then
		// reused that very entry for it.
		if (hd_key_is(cur, p)) {
			if (HD_TRACE_INFO_SIZE(e->info) == HD_TRACE_BIG_SIZE &&
			    HD_TRACE_INFO_SIZE(info) != HD_TRACE_BIG_SIZE)
				hd_live_big_take(p);
			e->key = key;
			e->info = info;
			return;
		}
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	if (HD_TRACE_INFO_SIZE(info) == HD_TRACE_BIG_SIZE)
		hd_live_big_take(p);
	hd_live_dropped(mt);
}

// Removes p's live entry; returns 1 and its contents if it had one. Only
// the thread freeing p touches p's entry (the program may not free a
// block twice nor use it after free), so this needs no CAS.
HD_INLINE int hd_live_take(uint64_t p, struct hd_block *b)
{
	uint32_t i = hd_live_hash(p);

	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);

		if (__builtin_expect(hd_key_is(cur, p), 1)) {
			uint64_t info = e->info;

			b->size = HD_TRACE_INFO_SIZE(info);
			b->site = HD_TRACE_KEY_SITE(cur);
			b->birth = HD_TRACE_INFO_BIRTH(info);
			if (__builtin_expect(b->size == HD_TRACE_BIG_SIZE, 0))
				b->size = hd_live_big_take(p);
			__atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
			return 1;
		}
		if (cur == 0)
			return 0;
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	return 0;
}

HD_INLINE void hd_record_alloc_in(enum hd_trace_op op, uint64_t p, uint64_t n,
				  uint64_t pc, int mt)
{
	uint32_t site = hd_site_slot(pc, mt);

	hd_count(&hd_state.sites[site].op[op], n, mt);
	hd_count(&hd_state.classes[hd_size_class(n)], n, mt);
	hd_live_insert(p, n, site, hd_state.epoch, mt);
}

HD_INLINE void hd_record_free_in(int found, const struct hd_block *b,
				 uint64_t pc, int mt)
{
	uint32_t site = hd_site_slot(pc, mt);
	uint64_t bytes = found ? b->size : 0;

	hd_count(&hd_state.sites[site].op[HD_TRACE_FREE], bytes, mt);
	if (__builtin_expect(found, 1)) {
		uint32_t age = hd_state.epoch - b->birth;

		hd_count(&hd_state.ages[age < HD_TRACE_AGES ? age : HD_TRACE_AGES - 1],
			 bytes, mt);
	} else {
		hd_add(&hd_state.untracked_frees, 1, mt);
	}
}

// A block p of n bytes was allocated by op at pc.
HD_INLINE void hd_record_alloc(enum hd_trace_op op, void *p, uint64_t n,
			       uint64_t pc)
{
	// While the process has one thread (glibc's __libc_single_threaded)
	// plain adds and stores do: an atomic read-modify-write costs ~20
	// cycles, and a traced malloc and free do about a dozen.
	if (__libc_single_threaded)
		hd_record_alloc_in(op, (uintptr_t)p, n, pc, 0);
	else
		hd_record_alloc_in(op, (uintptr_t)p, n, pc, 1);
}

// Counts a free at pc of a block hd_live_take found (found = 1) or not.
HD_INLINE void hd_record_free_of(int found, const struct hd_block *b,
				 uint64_t pc)
{
	if (__libc_single_threaded)
		hd_record_free_in(found, b, pc, 0);
	else
		hd_record_free_in(found, b, pc, 1);
}

// hd_live_take + hd_record_free_of: call before the block is released, so
// that no other thread can have been given the same address yet.
HD_INLINE void hd_record_free(void *p, uint64_t pc)
{
	struct hd_block b;
	int found = hd_live_take((uintptr_t)p, &b);

	hd_record_free_of(found, &b, pc);
}

// The body of free() and of every operator delete: one branch when off;
// on, the free is recorded at its call site before the block goes back to
// glibc (see hd_record_free). Always inlined, so the return address is the
// hook's own (GCC's rule for inlined functions), and read only after the
// branch, so the off path stays a load, a test and a jump.
static inline __attribute__((always_inline)) void hd_free_hook(void *p)
{
	if (HD_OFF()) {
		__libc_free(p);
		return;
	}
	if (p)
		hd_record_free(p, HD_CALLER_PC());
	__libc_free(p);
}

#endif // HD_TRACE_TABLES_H
