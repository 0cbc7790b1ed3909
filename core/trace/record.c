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
// - tags: while tracing is on, an allocation of n bytes asks glibc for
//   n + HD_TRACE_TAG and writes the block's site, size and birth epoch in
//   its last usable word (heapdom_trace.h); the program's pointer is
//   glibc's own. A free finds the tag from glibc's chunk header
//   (the usable size), checks it against the state's tag_key, adds the age
//   epoch - birth to the age table and clears it. A block without a valid
//   tag (allocated while tracing was off, or before the library came in)
//   is an untracked free.
// - counters: while the process has a single thread (glibc's
//   __libc_single_threaded), plain adds to the shared tables. Once it has
//   threads, each thread counts with plain adds into a shard of its own
//   (claimed on its first traced call: a free one, else one whose thread
//   has exited; their counts stay and keep adding up). A thread that finds
//   no shard, and a site that finds no room in its thread's shard, count
//   into the shared tables with atomic adds. A tag is written and read
//   only by the thread that owns the block: no atomics.
//
// Known limits.
// - A traced block takes HD_TRACE_TAG bytes more of glibc, which grows
//   its chunk by 16 bytes for half the sizes (a 24-byte request takes a
//   48-byte chunk instead of 32; a 16-byte one stays in 32), and
//   malloc_usable_size counts them: a program that writes into its block
//   past the size it asked for overwrites the tag, and the block's free
//   is then untracked.
// - The tag keeps 23 check bits: a block allocated while tracing was off
//   whose last word happens to match them (one in 2^22 of those whose
//   last word has bit 63 set) is taken for a traced one at its free.
// - The tag keeps the birth epoch modulo 2^20: a block that lives for
//   2^20 epochs or more is given a younger age (and birth).
// - A block allocated while tracing is on and freed while it is off keeps
//   its tag in the freed memory: a block allocated there later while off,
//   of the same usable size, whose bytes there the program leaves alone,
//   is taken for the old one at its free (its age and size). Realloc
//   while off leaves the tag where it was: if the usable size stays the
//   same, the block keeps its old site, size and birth.
// - Blocks allocated while tracing was off (or before injection) are
//   counted at free in untracked_frees, with 0 bytes at the free's site.
// - Allocations that fail are not counted; free(NULL) is not counted.
// - A reader that stops the process in the middle of a hook sees that one
//   call partly recorded (e.g. a counted allocation whose tag is not
//   written yet).
// - After fork() the child inherits the tables and keeps the parent's pid;
//   its thread claims a shard of its own on its next traced call.
// - Threads past the HD_TRACE_SHARDS-th alive at once, and a thread's call
//   sites past the HD_TRACE_SHARD_SITES its shard holds, pay for atomic
//   adds on lines other threads may be writing.
// - The site is the return address: a function that tail-calls malloc or
//   free (e.g. libstdc++'s __cxa_free_exception) is not a site, its caller
//   is.
#include <errno.h>
#include <string.h>
#include <sys/auxv.h>
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

// The tags' key: the kernel's 16 random bytes for this process
// (AT_RANDOM), never 0.
static uint64_t tag_key(void)
{
	const uint8_t *r = (const uint8_t *)getauxval(AT_RANDOM);
	uint64_t k[2] = {0, 0};

	if (r)
		memcpy(k, r, sizeof(k));
	k[0] ^= k[1] * HD_GOLDEN ^ (uint64_t)getpid();
	return k[0] ? k[0] : HD_GOLDEN;
}

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
	hd_state.tag_key = tag_key();
	hd_state.sites[HD_TRACE_NO_SITE].pc = HD_TRACE_PC_NONE;
	// Before `enabled` is set: pthread_atfork may allocate.
	pthread_atfork(NULL, NULL, shard_after_fork);
	if (env && env[0] == '1' && env[1] == '\0')
		hd_state.enabled = 1;
}

// The general paths: everything the fast paths (tables.h) leave.

// Sets *p from expect to v: a CAS if the process has threads (mt).
static int hd_claim(uint64_t *p, uint64_t expect, uint64_t v, int mt)
{
	if (!mt) {
		*p = v;
		return 1;
	}
	return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

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

// What a block's tag says.
struct hd_block {
	uint64_t size;
	uint32_t site;
	uint32_t birth;
};

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
	int mt; // the process has threads
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

// Counts a free at pc of a block whose tag was found (found = 1) or not.
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
	hd_tag_write((uintptr_t)p, n, site, hd_state.epoch);
}

void *hd_alloc_slow(enum hd_trace_op op, void *p, uint64_t n, uint64_t pc)
{
	count_alloc(sink_get(), op, p, n, pc);
	return p;
}

void hd_free_slow(void *p, uint64_t pc)
{
	struct hd_block b;
	int found = hd_tag_take((uintptr_t)p, &b.size, &b.site, &b.birth);

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

// Counts realloc's free of its old block: in the fast path's rows when
// the block had a tag and the site is in its home slot (and entry), else
// the general path.
static void count_realloc_free(int found, const struct hd_block *b, uint64_t pc)
{
	if (HD_LIKELY(found) && HD_LIKELY(hd_free_rows(pc, HD_MT(), b->size, b->birth)))
		return;
	count_free(sink_get(), found, b, pc);
}

void *hd_traced_realloc(void *old, size_t n, uint64_t pc)
{
	size_t asked = hd_tagged_size(n);
	struct hd_block b;
	int found;
	void *p;

	if (!old) {
		p = __libc_realloc(NULL, asked);
		return p ? hd_record_alloc(HD_TRACE_REALLOC, p, n, pc) : p;
	}
	// glibc's realloc(p, 0) frees p and returns NULL.
	if (n == 0)
		asked = 0;
	// Taken before the call: once realloc returns, the old block's
	// memory may be another thread's.
	found = hd_tag_take((uintptr_t)old, &b.size, &b.site, &b.birth);
	p = __libc_realloc(old, asked);
	if (!p && n != 0) {
		// Failed: the old block is still there; its tag goes back.
		if (found)
			hd_tag_write((uintptr_t)old, b.size, b.site, b.birth);
		return NULL;
	}
	count_realloc_free(found, &b, pc);
	return p ? hd_record_alloc(HD_TRACE_REALLOC, p, n, pc) : p;
}
