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

// The HD_COLD functions spell their atomics out: hd_add and hd_claim are
// always_inline, and GCC will not inline them into a general-regs-only
// function.
void hd_live_dropped(int mt)
{
	if (mt)
		__atomic_fetch_add(&hd_state.dropped_live, 1, __ATOMIC_RELAXED);
	else
		hd_state.dropped_live++;
}

// Keeps the size of a big block p; returns the info word of its live
// entry, or 0 when the big table is full. Always atomic: this path is
// rare and not worth a second copy.
uint64_t hd_live_big_info(uint64_t p, uint64_t n, uint32_t birth)
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
uint64_t hd_live_big_take(uint64_t p)
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
	found = hd_live_take((uintptr_t)old, &b);
	p = __libc_realloc(old, n);
	if (!p && n != 0) {
		// Failed: the old block is still there; put its entry back.
		if (found)
			hd_live_insert((uintptr_t)old, b.size, b.site, b.birth,
				       !__libc_single_threaded);
		return NULL;
	}
	hd_record_free_of(found, &b, pc);
	// glibc's realloc(p, 0) frees p and returns NULL.
	if (p)
		hd_record_alloc(HD_TRACE_REALLOC, p, n, pc);
	return p;
}
