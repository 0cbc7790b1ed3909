// libheapdom-trace.so: the tables in the traced process (heapdom_trace.h)
// and how the hooks fill them.
//
// Design. The hooks (hooks.c, hooks_cxx.c) test `enabled` once; when it
// is set they call the real allocator and then the recording functions
// (tables.h, inlined into each hook), which take no lock, allocate nothing
// and do not unwind:
// - sites: open addressing on the caller's return address; a new pc is
//   claimed with a CAS on an empty slot; counts and bytes are relaxed
//   atomic adds. At most HD_SITE_PROBES slots are tried, then the call is
//   counted in the HD_TRACE_NO_SITE row (its block gets that site).
// - live: 16-byte entries, open addressing on the block's address,
//   claimed with a CAS on an empty (0) or deleted (1) slot, HD_LIVE_PROBES
//   slots at most (then dropped_live). A free looks the address up
//   (stopping at an empty slot: deleted slots keep chains intact), adds
//   the age epoch - birth to the age table and marks the slot deleted.
//   The lookup happens before the block goes back to malloc, so no other
//   thread can already have received the same address and inserted it.
//   Sizes of 4 GiB - 1 and more do not fit the entry: they are kept in the
//   `big` table (HD_TRACE_BIG entries; when it is full such allocations
//   are dropped_live).
// - while the process has a single thread (glibc's
//   __libc_single_threaded) the adds and claims are plain stores.
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
// - Blocks at addresses of 2^48 and above (none on x86-64 with 4-level
//   page tables) are counted in dropped_live.
#include <stdlib.h>
#include <unistd.h>

#include "tables.h"

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
	hd_state.sites[HD_TRACE_NO_SITE].pc = HD_TRACE_PC_NONE;
	if (env && env[0] == '1' && env[1] == '\0')
		hd_state.enabled = 1;
}

// The general paths: everything the fast paths (tables.h) leave.

// The slot of call site pc, claimed if new; HD_TRACE_NO_SITE when
// HD_SITE_PROBES slots in a row belong to other sites.
static uint32_t site_slot(uint64_t pc, int mt)
{
	uint32_t i = hd_site_home(pc);

	for (unsigned probe = 0; probe < HD_SITE_PROBES; probe++) {
		struct hd_trace_site *s = &hd_state.sites[i];
		uint64_t cur = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);

		if (cur == pc)
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

// Keeps the size of a big block p; returns the info word of its live
// entry, or 0 when the big table is full. Always atomic: this path is
// rare and not worth a second copy.
static uint64_t big_info(uint64_t p, uint64_t n, uint32_t birth)
{
	for (unsigned i = 0; i < HD_TRACE_BIG; i++) {
		struct hd_trace_big *e = &hd_state.big[i];
		uint64_t cur = __atomic_load_n(&e->ptr, __ATOMIC_RELAXED);

		// cur == p: stale, like a live entry freed while off.
		if (cur == p || (cur <= 1 && __atomic_compare_exchange_n(
						     &e->ptr, &cur, p, 0, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))) {
			e->size = n;
			return (uint64_t)birth << 32 | HD_TRACE_BIG_SIZE;
		}
	}
	return 0;
}

// Removes big block p's entry and returns its size (0 if it had none).
static uint64_t big_take(uint64_t p)
{
	for (unsigned i = 0; i < HD_TRACE_BIG; i++) {
		struct hd_trace_big *e = &hd_state.big[i];

		if (__atomic_load_n(&e->ptr, __ATOMIC_RELAXED) == p) {
			uint64_t n = e->size;

			__atomic_store_n(&e->ptr, 1, __ATOMIC_RELEASE);
			return n;
		}
	}
	return 0;
}

// Open addressing from p's home slot: an empty (0) or deleted (1) slot is
// claimed with a CAS; at most HD_LIVE_PROBES slots, then dropped_live.
static void live_insert(uint64_t p, uint64_t n, uint32_t site, uint32_t birth,
			int mt)
{
	uint32_t i = hd_live_home(p);
	uint64_t key = p | (uint64_t)site << 48;
	uint64_t info = (uint64_t)birth << 32 | n;

	if (n >= HD_TRACE_BIG_SIZE || p >= HD_ADDR_LIMIT) {
		info = p < HD_ADDR_LIMIT ? big_info(p, n, birth) : 0;
		if (!info) {
			hd_add(&hd_state.dropped_live, 1, mt);
			return;
		}
	}
	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);

		if (cur <= 1 && hd_claim(&e->key, cur, key, mt)) {
			e->info = info;
			return;
		}
		// A stale entry (freed while tracing was off): the address is
		// ours now, so the slot is too. A stale big size goes too,
		// unless this block is big as well: big_info then reused that
		// very entry for it.
		if (hd_key_is(cur, p)) {
			if (HD_TRACE_INFO_SIZE(e->info) == HD_TRACE_BIG_SIZE &&
			    HD_TRACE_INFO_SIZE(info) != HD_TRACE_BIG_SIZE)
				big_take(p);
			e->key = key;
			e->info = info;
			return;
		}
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	if (HD_TRACE_INFO_SIZE(info) == HD_TRACE_BIG_SIZE)
		big_take(p);
	hd_add(&hd_state.dropped_live, 1, mt);
}

// Removes p's live entry; returns 1 and its contents if it had one.
// Stops at an empty slot (deleted slots keep chains intact).
static int live_take(uint64_t p, struct hd_block *b)
{
	uint32_t i = hd_live_home(p);

	for (unsigned probe = 0; probe < HD_LIVE_PROBES; probe++) {
		struct hd_trace_live *e = &hd_state.live[i];
		uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);

		if (hd_key_is(cur, p)) {
			uint64_t info = e->info;

			b->size = HD_TRACE_INFO_SIZE(info);
			b->site = HD_TRACE_KEY_SITE(cur);
			b->birth = HD_TRACE_INFO_BIRTH(info);
			if (b->size == HD_TRACE_BIG_SIZE)
				b->size = big_take(p);
			__atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
			return 1;
		}
		if (cur == 0)
			return 0;
		i = (i + 1) & (HD_TRACE_LIVE - 1);
	}
	return 0;
}

// Counts a free at pc of a block live_take found (found = 1) or not.
static void count_free(int found, const struct hd_block *b, uint64_t pc,
		       int mt)
{
	uint32_t site = site_slot(pc, mt);
	uint64_t bytes = found ? b->size : 0;

	hd_count(&hd_state.sites[site].op[HD_TRACE_FREE], bytes, mt);
	if (found)
		hd_count(hd_age_row(b->birth), bytes, mt);
	else
		hd_add(&hd_state.untracked_frees, 1, mt);
}

void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	int mt = HD_MT();
	uint32_t site = site_slot(pc, mt);

	hd_count(&hd_state.sites[site].op[op], n, mt);
	hd_count(&hd_state.classes[hd_size_class(n)], n, mt);
	live_insert((uintptr_t)p, n, site, hd_state.epoch, mt);
	return p;
}

void *hd_alloc_live_slow(void *p, uint64_t n, uint32_t site, uint32_t birth)
{
	live_insert((uintptr_t)p, n, site, birth, HD_MT());
	return p;
}

void hd_free_slow(void *p, uint64_t pc)
{
	struct hd_block b;
	int found = live_take((uintptr_t)p, &b);

	count_free(found, &b, pc, HD_MT());
	__libc_free(p);
}

void hd_free_site_slow(void *p, uint64_t pc, uint64_t size, uint32_t birth)
{
	struct hd_block b = { .size = size, .birth = birth };

	count_free(1, &b, pc, HD_MT());
	__libc_free(p);
}

void hd_free_on(void *p, uint64_t pc)
{
	if (HD_MT())
		hd_free_fast(p, pc, 1);
	else
		hd_free_fast(p, pc, 0);
}

void *hd_traced_realloc(void *old, size_t n, uint64_t pc)
{
	struct hd_block b;
	int found;
	void *p;

	if (!old) {
		p = __libc_realloc(NULL, n);
		return p ? hd_record_alloc(HD_TRACE_REALLOC, p, n, pc) : p;
	}
	// Taken before the call: once realloc returns, another thread may
	// be given the old address and insert it.
	found = live_take((uintptr_t)old, &b);
	p = __libc_realloc(old, n);
	if (!p && n != 0) {
		// Failed: the old block is still there; put its entry back.
		if (found)
			live_insert((uintptr_t)old, b.size, b.site, b.birth,
				    HD_MT());
		return NULL;
	}
	count_free(found, &b, pc, HD_MT());
	// glibc's realloc(p, 0) frees p and returns NULL.
	return p ? hd_record_alloc(HD_TRACE_REALLOC, p, n, pc) : p;
}
