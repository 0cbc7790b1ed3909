// libheapdom-trace.so: the tables in the traced process (heapdom_trace.h)
// and how the hooks fill them.
//
// Design. The hooks (hooks.c, hooks_cxx.c) test `enabled` once; when it
// is set they call the real allocator and then record the call: a fast
// path inlined from tables.h, and the general code here for everything
// else. Neither takes a lock, allocates or unwinds:
// - sites: open addressing on the caller's return address; a new pc is
//   claimed with a CAS on an empty slot. At most HD_SITE_PROBES slots are
//   tried, then the call is counted in the HD_TRACE_NO_SITE row (its
//   block gets that site).
// - live: 16-byte entries, open addressing on the block's address along
//   two chains (live_find), claimed on an empty (0) or deleted (1) slot
//   (then dropped_live). A free looks the address up (stopping at an
//   empty slot: deleted slots keep chains intact), adds the age
//   epoch - birth to the age table and marks the slot deleted. The lookup
//   happens before the block goes back to malloc, so no other thread can
//   already have received the same address and inserted it. Sizes of
//   4 GiB - 1 and more do not fit the entry: they are kept in the `big`
//   table (HD_TRACE_BIG entries; when it is full such allocations are
//   dropped_live).
// - counters: while the process has a single thread (glibc's
//   __libc_single_threaded), plain adds to the shared tables, and live
//   entries claimed with plain stores. Once it has threads, each thread
//   counts with plain adds into a shard of its own (claimed on its first
//   traced call: a free one, else one whose thread has exited; their
//   counts stay and keep adding up), and live entries are claimed with a
//   CAS. A thread that finds no shard, and a site that finds no room in
//   its thread's shard, count into the shared tables with atomic adds.
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
//   walks both chains (80 slots). An allocation is dropped (dropped_live)
//   only when both chains are full of live blocks.
// - Allocations that fail are not counted; free(NULL) is not counted.
// - A reader that stops the process in the middle of a hook sees that one
//   call partly recorded (e.g. a live entry whose size is not written yet).
// - After fork() the child inherits the tables and keeps the parent's pid;
//   its thread claims a shard of its own on its next traced call.
// - Threads past the HD_TRACE_SHARDS-th alive at once, and a thread's call
//   sites past the HD_TRACE_SHARD_SITES its shard holds, pay for atomic
//   adds on lines other threads may be writing.
// - The site is the return address: a function that tail-calls malloc or
//   free (e.g. libstdc++'s __cxa_free_exception) is not a site, its caller
//   is.
// - Blocks at addresses of 2^48 and above (none on x86-64 with 4-level
//   page tables) are counted in dropped_live.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tables.h"

// Exported under its contract name; the hooks use the hidden alias so
// that they reach it without a GOT load.
HD_EXPORT struct hd_trace_state heapdom_trace;
extern struct hd_trace_state hd_state
	__attribute__((alias("heapdom_trace"), visibility("hidden")));

static void shard_after_fork(void);

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
	// Before `enabled` is set: pthread_atfork may allocate.
	pthread_atfork(NULL, NULL, shard_after_fork);
	if (env && env[0] == '1' && env[1] == '\0')
		hd_state.enabled = 1;
}

// The general paths: everything the fast paths (tables.h) leave.

// The slot of call site pc, claimed if new; HD_TRACE_NO_SITE when
// HD_SITE_PROBES slots in a row belong to other sites.
#define HD_SITE_PROBES 64
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

// What the live table knew of a block.
struct hd_block {
	uint64_t size;
	uint32_t site;
	uint32_t birth;
};

// A live entry's slot is looked for along two chains. First from the
// block's home slot (hd_live_home: neighbouring blocks, neighbouring
// slots), HD_LIVE_HOME_PROBES slots at most; when all of those hold live
// blocks (two dense runs of blocks whose homes overlap: a thread's heap
// whose homes fall among the main heap's), from a slot hashed on the whole
// address, HD_LIVE_PROBES slots at most. Slots never become empty again
// (deleted ones stay 1), so a look-up that meets an empty slot on the
// first chain knows the block is not on the second.
#define HD_LIVE_HOME_PROBES 16
#define HD_LIVE_PROBES 64

static uint32_t live_second(uint64_t p)
{
	return (uint32_t)(((p >> 4) * HD_GOLDEN) >> 43) & (HD_TRACE_LIVE - 1);
}

// Where p's entry is or goes: the slot holding p (*found = 1), else the
// first empty or deleted slot on p's chains (*found = 0); NULL when both
// chains are full of other blocks.
static struct hd_trace_live *live_find(uint64_t p, int *found)
{
	struct hd_trace_live *first_free = NULL;
	uint32_t i = hd_live_home(p);
	unsigned limit = HD_LIVE_HOME_PROBES;

	*found = 0;
	for (int chain = 0; chain < 2; chain++) {
		for (unsigned probe = 0; probe < limit; probe++) {
			struct hd_trace_live *e = &hd_state.live[i];
			uint64_t cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);

			if (cur > 1 && hd_key_is(cur, p)) {
				*found = 1;
				return e;
			}
			if (cur <= 1 && !first_free)
				first_free = e;
			if (cur == 0)
				return first_free;
			i = (i + 1) & (HD_TRACE_LIVE - 1);
		}
		i = live_second(p);
		limit = HD_LIVE_PROBES;
	}
	return first_free;
}

// Claims a slot on p's chains for its entry (with a CAS if mt; a stale
// entry of p's, freed while tracing was off, is taken over: the address is
// ours now). Returns 0, or 1 if the block was dropped (no slot, or the big
// table is full).
static int live_insert(uint64_t p, uint64_t n, uint32_t site, uint32_t birth,
		       int mt)
{
	uint64_t key = p | (uint64_t)site << 48;
	uint64_t info = (uint64_t)birth << 32 | n;

	if (n >= HD_TRACE_BIG_SIZE || p >= HD_ADDR_LIMIT) {
		info = p < HD_ADDR_LIMIT ? big_info(p, n, birth) : 0;
		if (!info)
			return 1;
	}
	// Another thread may claim the slot first: look again.
	for (;;) {
		int found;
		struct hd_trace_live *e = live_find(p, &found);
		uint64_t cur;

		if (!e)
			break;
		if (found) {
			// A stale big size goes too, unless this block is big
			// as well: big_info then reused that very entry for it.
			if (HD_TRACE_INFO_SIZE(e->info) == HD_TRACE_BIG_SIZE &&
			    HD_TRACE_INFO_SIZE(info) != HD_TRACE_BIG_SIZE)
				big_take(p);
			e->key = key;
			e->info = info;
			return 0;
		}
		cur = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
		if (cur <= 1 && hd_claim(&e->key, cur, key, mt)) {
			e->info = info;
			return 0;
		}
	}
	if (HD_TRACE_INFO_SIZE(info) == HD_TRACE_BIG_SIZE)
		big_take(p);
	return 1;
}

// Removes p's live entry; returns 1 and its contents if it had one. Only
// the thread freeing p touches p's entry: no CAS.
static int live_take(uint64_t p, struct hd_block *b)
{
	int found;
	struct hd_trace_live *e = live_find(p, &found);
	uint64_t cur, info;

	if (!found)
		return 0;
	cur = e->key;
	info = e->info;
	b->size = HD_TRACE_INFO_SIZE(info);
	b->site = HD_TRACE_KEY_SITE(cur);
	b->birth = HD_TRACE_INFO_BIRTH(info);
	if (b->size == HD_TRACE_BIG_SIZE)
		b->size = big_take(p);
	__atomic_store_n(&e->key, 1, __ATOMIC_RELEASE);
	return 1;
}

// Shards (heapdom_trace.h).

__thread struct hd_trace_shard *hd_thread_shard
	__attribute__((tls_model("initial-exec")));

// Whether thread tid of this process has exited (tids are unique among a
// process's live threads).
static int thread_gone(pid_t pid, uint64_t tid)
{
	return syscall(SYS_tgkill, pid, (pid_t)tid, 0) == -1 && errno == ESRCH;
}

// A shard for the calling thread: a free one, else one whose thread has
// exited (its counts stay: they are added up, whoever adds to them), else
// HD_NO_SHARD. Once per thread; errno is left as it was.
static struct hd_trace_shard *shard_claim(void)
{
	int saved = errno;
	uint64_t me = (uint64_t)gettid();
	pid_t pid = getpid();
	struct hd_trace_shard *got = HD_NO_SHARD;

	for (int pass = 0; pass < 2 && got == HD_NO_SHARD; pass++) {
		for (unsigned i = 0; i < HD_TRACE_SHARDS; i++) {
			struct hd_trace_shard *sh = &hd_state.shards[i];
			uint64_t owner = __atomic_load_n(&sh->owner, __ATOMIC_RELAXED);

			// owner == me: a thread that had our tid, gone.
			if (!(owner == me || (pass == 0 && owner == 0) ||
			      (pass == 1 && owner != 0 && thread_gone(pid, owner))))
				continue;
			if (owner == me || __atomic_compare_exchange_n(
						   &sh->owner, &owner, me, 0,
						   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				got = sh;
				break;
			}
		}
	}
	errno = saved;
	return got;
}

// The forking thread's shard belongs to the parent's thread of that tid;
// in the child it claims one of its own.
static void shard_after_fork(void)
{
	hd_thread_shard = NULL;
}

// Where the counts of a call go: the calling thread's shard, or the shared
// tables (atomic: other threads add to them too).
struct sink {
	struct hd_trace_shard *shard; // NULL: the shared tables
	int atomic;
	int mt; // the process has threads: live entries are claimed by CAS
};

static struct sink sink_get(void)
{
	struct sink k = { NULL, 0, 0 };
	struct hd_trace_shard *sh;

	if (!HD_MT())
		return k;
	k.mt = 1;
	sh = hd_thread_shard;
	if (!sh)
		sh = hd_thread_shard = shard_claim();
	if (sh == HD_NO_SHARD)
		k.atomic = 1;
	else
		k.shard = sh;
	return k;
}

// Site's row for op in the sink: in a shard, the site's entry (claimed if
// new, up to HD_SHARD_PROBES entries from its home); when the shard has
// no room, the shared row, atomically (*atomic).
#define HD_SHARD_PROBES 8
static struct hd_trace_count *site_row(struct sink k, uint32_t site,
				       enum hd_trace_op op, int *atomic)
{
	*atomic = k.atomic;
	if (k.shard) {
		uint32_t j = site & (HD_TRACE_SHARD_SITES - 1);

		for (unsigned probe = 0; probe < HD_SHARD_PROBES; probe++) {
			struct hd_trace_shard_site *ss = &k.shard->sites[j];

			// Only this thread writes its shard: no CAS.
			if (ss->slot == 0)
				ss->slot = site + 1;
			if (ss->slot == site + 1)
				return &ss->op[op];
			j = (j + 1) & (HD_TRACE_SHARD_SITES - 1);
		}
		*atomic = 1;
	}
	return &hd_state.sites[site].op[op];
}

static void count_site(struct sink k, uint32_t site, enum hd_trace_op op,
		       uint64_t bytes)
{
	int atomic;
	struct hd_trace_count *c = site_row(k, site, op, &atomic);

	hd_count(c, bytes, atomic);
}

// The sink's counter or table `name`.
#define SINK_FIELD(k, name) ((k).shard ? &(k).shard->name : &hd_state.name)
#define SINK_TABLE(k, name) ((k).shard ? (k).shard->name : hd_state.name)

static void count_dropped(struct sink k)
{
	hd_add(SINK_FIELD(k, dropped_live), 1, k.atomic);
}

// Counts a free at pc of a block live_take found (found = 1) or not.
static void count_free(struct sink k, int found, const struct hd_block *b,
		       uint64_t pc)
{
	uint32_t site = site_slot(pc, k.mt);
	uint64_t bytes = found ? b->size : 0;

	count_site(k, site, HD_TRACE_FREE, bytes);
	if (found)
		hd_count(&SINK_TABLE(k, ages)[hd_age(b->birth)], bytes, k.atomic);
	else
		hd_add(SINK_FIELD(k, untracked_frees), 1, k.atomic);
}

static void count_alloc(struct sink k, enum hd_trace_op op, void *p,
			uint64_t n, uint64_t pc)
{
	uint32_t site = site_slot(pc, k.mt);

	count_site(k, site, op, n);
	hd_count(&SINK_TABLE(k, classes)[hd_size_class(n)], n, k.atomic);
	if (live_insert((uintptr_t)p, n, site, hd_state.epoch, k.mt))
		count_dropped(k);
}

void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	count_alloc(sink_get(), op, p, n, pc);
	return p;
}

void *hd_alloc_live_slow(void *p, uint64_t n, uint32_t site, uint32_t birth)
{
	struct sink k = sink_get();

	if (live_insert((uintptr_t)p, n, site, birth, k.mt))
		count_dropped(k);
	return p;
}

void hd_free_slow(void *p, uint64_t pc)
{
	struct hd_block b;
	int found = live_take((uintptr_t)p, &b);

	count_free(sink_get(), found, &b, pc);
	__libc_free(p);
}

void hd_free_site_slow(void *p, uint64_t pc, uint64_t size, uint32_t birth)
{
	struct hd_block b = { .size = size, .birth = birth };

	count_free(sink_get(), 1, &b, pc);
	__libc_free(p);
}

void *hd_alloc_st(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	return hd_alloc_fast(op, p, n, pc, 0);
}

void *hd_alloc_mt(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	return hd_alloc_fast(op, p, n, pc, 1);
}

void hd_free_st(void *p, uint64_t pc)
{
	hd_free_fast(p, pc, 0);
}

void hd_free_mt(void *p, uint64_t pc)
{
	hd_free_fast(p, pc, 1);
}

void *hd_traced_realloc(void *old, size_t n, uint64_t pc)
{
	struct sink k;
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
	k = sink_get();
	if (!p && n != 0) {
		// Failed: the old block is still there; put its entry back.
		if (found && live_insert((uintptr_t)old, b.size, b.site, b.birth,
					 k.mt))
			count_dropped(k);
		return NULL;
	}
	count_free(k, found, &b, pc);
	// glibc's realloc(p, 0) frees p and returns NULL.
	return p ? hd_record_alloc(HD_TRACE_REALLOC, p, n, pc) : p;
}
