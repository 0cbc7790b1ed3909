// libheapdom-trace.so: the tables in the traced process (heapdom_trace.h)
// and how the hooks fill them.
//
// Design. The hooks (hooks.c, hooks_cxx.c) test `enabled` once; when it is
// set they call the real allocator and then the functions here, which
// take no lock, allocate nothing and do not unwind:
// - sites: open addressing on the caller's return address; a new pc is
//   claimed with a CAS on an empty slot; counts and bytes are relaxed
//   atomic adds. At most HD_SITE_PROBES slots are tried, then the call is
//   counted in dropped_sites (its block gets site HD_NO_SITE).
// - live: open addressing on the block's address, claimed with a CAS on
//   an empty (0) or deleted (1) slot, HD_LIVE_PROBES slots at most (then
//   dropped_live). A free looks the address up (stopping at an empty
//   slot: deleted slots keep chains intact), adds the age epoch - birth
//   to the age tables and marks the slot deleted. The lookup happens
//   before the block goes back to malloc, so no other thread can already
//   have received the same address and inserted it.
// - while the process has a single thread (glibc's
//   __libc_single_threaded) the adds and claims are plain stores: an
//   atomic read-modify-write costs ~20 cycles each, and a traced malloc
//   and free do about a dozen of them.
//
// Known limits.
// - A block allocated while tracing is on and freed while it is off keeps
//   its live entry: readers must check live entries against the heap (a
//   later allocation at the same address reuses the stale entry when it
//   meets it on its probe path; if it does not, the stale entry can be
//   found first by a free: that free gets the stale age and size).
// - Blocks allocated while tracing was off (or before injection) are
//   counted at free in untracked_frees, with 0 bytes at the free's site.
// - Deleted slots are reused but never become empty again: in a long run,
//   looking up an address that is not in the table (an untracked free)
//   walks HD_LIVE_PROBES slots. An allocation is dropped (dropped_live)
//   only when that many slots in a row hold live blocks.
// - Allocations that fail are not counted; free(NULL) is not counted.
// - A reader that stops the process in the middle of a hook sees that one
//   call partly recorded (e.g. a live entry whose size is not written yet).
// - After fork() the child inherits the tables and keeps the parent's pid.
// - The site is the return address: a function that tail-calls malloc or
//   free (e.g. libstdc++'s __cxa_free_exception) is not a site, its caller
//   is.
// - A site that finds no slot gives its blocks the site index HD_NO_SITE
//   (UINT32_MAX) in the live table.
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include "trace_internal.h"

#define HD_SITE_PROBES 64
#define HD_LIVE_PROBES 64
#define HD_NO_SITE UINT32_MAX
#define HD_GOLDEN 0x9E3779B97F4A7C15ull

// Exported under its contract name; the hooks use the hidden alias so
// that they reach it without a GOT load.
HD_EXPORT struct hd_trace_state heapdom_trace;
extern struct hd_trace_state hd_state
	__attribute__((alias("heapdom_trace"), visibility("hidden")));

// Statics are zero until the constructor runs: hooks called earlier (by
// the dynamic loader, or by other constructors) see enabled == 0.
// HEAPDOM_TRACE=1 starts with tracing on (LD_PRELOAD use); otherwise a
// debugger switches it on by writing `enabled`.
__attribute__((constructor)) static void hd_trace_init(void)
{
	const char *env = getenv("HEAPDOM_TRACE");

	hd_state.magic = HD_TRACE_MAGIC;
	hd_state.version = HD_TRACE_VERSION;
	hd_state.size = sizeof(struct hd_trace_state);
	hd_state.pid = (uint64_t)getpid();
	if (env && env[0] == '1' && env[1] == '\0')
		hd_state.enabled = 1;
}

// mt selects atomic operations; every caller passes a constant, so each
// record function is compiled twice (see the dispatchers at the end).
static inline __attribute__((always_inline)) void add(uint64_t *p, uint64_t v,
						      int mt)
{
	if (mt)
		__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
	else
		*p += v;
}

static inline __attribute__((always_inline)) int claim(uint64_t *p,
						       uint64_t expect,
						       uint64_t v, int mt)
{
	if (!mt) {
		*p = v;
		return 1;
	}
	return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

static inline unsigned size_class(uint64_t n)
{
	unsigned k = n ? 64 - (unsigned)__builtin_clzll(n) : 0;

	return k < HD_TRACE_CLASSES ? k : HD_TRACE_CLASSES - 1;
}

static inline __attribute__((always_inline)) uint32_t site_slot(uint64_t pc,
								int mt)
{
	uint32_t i = (uint32_t)((pc * HD_GOLDEN) >> 48);

	for (unsigned probe = 0; probe < HD_SITE_PROBES; probe++) {
		struct hd_trace_site *s = &hd_state.sites[i];
		uint64_t cur = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);

		if (cur == pc)
			return i;
		if (cur == 0) {
			if (claim(&s->pc, 0, pc, mt))
				return i;
			// Lost the race: the winner may have claimed it for
			// this same pc.
			if (__atomic_load_n(&s->pc, __ATOMIC_RELAXED) == pc)
				return i;
		}
		i = (i + 1) & (HD_TRACE_SITES - 1);
	}
	add(&hd_state.dropped_sites, 1, mt);
	return HD_NO_SITE;
}

// Blocks are at least 32 bytes apart in glibc, so p >> 5 is distinct for
// live blocks, and neighbouring blocks land in neighbouring slots (cache
// and TLB friendly when a program allocates many blocks in a row). The
// bits above the 64 MiB window are mixed in so that heaps at 64 MiB
// aligned addresses (non-main arenas) do not all start at one slot.
static inline uint32_t live_hash(uint64_t p)
{
	uint64_t h = (p >> 5) ^ (((p >> 26) * HD_GOLDEN) >> 43);

	return (uint32_t)(h & (HD_TRACE_LIVE - 1));
}

static inline __attribute__((always_inline)) void
live_insert(uint64_t p, uint64_t n, uint32_t site, uint32_t birth, int mt)
{
	uint32_t i = live_hash(p);

	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->ptr, __ATOMIC_RELAXED);

		// cur == p: a stale entry (freed while tracing was off);
		// the address is ours now, so the slot is too.
		if (cur == p || ((cur == 0 || cur == 1) && claim(&e->ptr, cur, p, mt))) {
			e->size = n;
			e->site = site;
			e->birth = birth;
			return;
		}
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	add(&hd_state.dropped_live, 1, mt);
}

static inline __attribute__((always_inline)) void
record_alloc(enum hd_trace_op op, uint64_t p, uint64_t n, uint64_t pc, int mt)
{
	uint32_t site = site_slot(pc, mt);
	unsigned k = size_class(n);

	if (site != HD_NO_SITE) {
		add(&hd_state.sites[site].count[op], 1, mt);
		add(&hd_state.sites[site].bytes[op], n, mt);
	}
	add(&hd_state.calls[op], 1, mt);
	add(&hd_state.class_count[k], 1, mt);
	add(&hd_state.class_bytes[k], n, mt);
	live_insert(p, n, site, hd_state.epoch, mt);
}

static inline __attribute__((always_inline)) void
record_free_of(int found, const struct hd_block *b, uint64_t pc, int mt)
{
	uint32_t site = site_slot(pc, mt);
	uint64_t bytes = found ? b->size : 0;

	if (site != HD_NO_SITE) {
		add(&hd_state.sites[site].count[HD_TRACE_FREE], 1, mt);
		add(&hd_state.sites[site].bytes[HD_TRACE_FREE], bytes, mt);
	}
	add(&hd_state.calls[HD_TRACE_FREE], 1, mt);
	if (found) {
		uint32_t age = hd_state.epoch - b->birth;
		unsigned a = age < HD_TRACE_AGES ? age : HD_TRACE_AGES - 1;

		add(&hd_state.age_count[a], 1, mt);
		add(&hd_state.age_bytes[a], bytes, mt);
	} else {
		add(&hd_state.untracked_frees, 1, mt);
	}
}

void hd_record_alloc(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	if (__libc_single_threaded)
		record_alloc(op, (uintptr_t)p, n, pc, 0);
	else
		record_alloc(op, (uintptr_t)p, n, pc, 1);
}

void hd_record_free_of(int found, const struct hd_block *b, uint64_t pc)
{
	if (__libc_single_threaded)
		record_free_of(found, b, pc, 0);
	else
		record_free_of(found, b, pc, 1);
}

// Only the thread freeing p touches p's entry (the program may not free a
// block twice nor use it after free), so finding it needs no CAS.
int hd_live_take(void *ptr, struct hd_block *b)
{
	uint64_t p = (uintptr_t)ptr;
	uint32_t i = live_hash(p);

	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->ptr, __ATOMIC_RELAXED);

		if (cur == 0)
			return 0;
		if (cur == p) {
			b->size = e->size;
			b->site = e->site;
			b->birth = e->birth;
			__atomic_store_n(&e->ptr, 1, __ATOMIC_RELEASE);
			return 1;
		}
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	return 0;
}

void hd_live_restore(void *p, const struct hd_block *b)
{
	live_insert((uintptr_t)p, b->size, b->site, b->birth,
		    !__libc_single_threaded);
}

void hd_record_free(void *p, uint64_t pc)
{
	struct hd_block b;
	int found = hd_live_take(p, &b);

	hd_record_free_of(found, &b, pc);
}

void *hd_traced_realloc(void *old, size_t n, uint64_t pc)
{
	struct hd_block b;
	int found;
	void *p;

	if (!old) {
		p = __libc_realloc(NULL, n);
		if (p)
			hd_record_alloc(HD_TRACE_REALLOC, p, n, pc);
		return p;
	}
	// Taken before the call: once realloc returns, another thread may
	// be given the old address and insert it.
	found = hd_live_take(old, &b);
	p = __libc_realloc(old, n);
	if (!p && n != 0) {
		// Failed: the old block is still there.
		if (found)
			hd_live_restore(old, &b);
		return NULL;
	}
	hd_record_free_of(found, &b, pc);
	// glibc's realloc(p, 0) frees p and returns NULL.
	if (p)
		hd_record_alloc(HD_TRACE_REALLOC, p, n, pc);
	return p;
}
