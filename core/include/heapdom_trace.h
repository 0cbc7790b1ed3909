// heapdom allocation tracing — the tables libheapdom-trace.so keeps inside
// the traced process.
//
// libheapdom-trace.so interposes malloc, calloc, realloc, reallocarray,
// free, memalign, posix_memalign, aligned_alloc, valloc, pvalloc and the
// C++ operators new and delete (LD_PRELOAD, or loaded into a running
// process by `heap-trace start`). Its counters live in one object,
// `heapdom_trace` (struct hd_trace_state), of fixed size, and what it
// knows of each live allocation (site, size, birth) in a tag at the end of
// the block (below): no event stream, no allocation and no unwinding
// inside the hooks. A debugger or `heapdom trace CORE` reads the object
// and the heap's tags from the process's memory (or the core) and
// reports; the debugger switches tracing on and off and advances the epoch
// by writing `enabled` and `epoch`.
//
// The layout is shared by the library (which writes it) and libheapdom
// (which reads it from another process): only fixed-width types, and
// `version`/`size` checked before anything else is read.
#ifndef HEAPDOM_TRACE_H
#define HEAPDOM_TRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HD_TRACE_MAGIC 0x4543415254444548ull // "HDTRACE" + 'E'
#define HD_TRACE_VERSION 4
#define HD_TRACE_SYMBOL "heapdom_trace"

// Call sites: the return address into the caller of malloc (or of
// operator new). Open addressing on pc. The last slot, HD_TRACE_NO_SITE,
// is never a call site: its pc is HD_TRACE_PC_NONE and it counts the calls
// whose site found no slot. The calls of an operation are the sum of its
// counts over all slots.
#define HD_TRACE_SITES 65536
#define HD_TRACE_NO_SITE (HD_TRACE_SITES - 1)
#define HD_TRACE_PC_NONE 1
// Size classes: class 0 is size 0, class k (1..63) holds sizes in
// [2^(k-1), 2^k).
#define HD_TRACE_CLASSES 64
// Ages at free, in epochs: bucket a < 63 holds age a exactly, bucket 63
// ages of 63 and more.
#define HD_TRACE_AGES 64

// Per-thread counters: once the process has threads, each thread counts
// into a shard of its own (plain adds, no atomic read-modify-write, no
// cache line shared with other threads), claimed on its first traced
// call. The counts of a table are the shared table's plus every shard's.
// A shard keeps the counts of up to HD_TRACE_SHARD_SITES call sites; the
// calls of other sites, and of the threads that found no shard left, go
// to the shared tables (atomic adds).
#define HD_TRACE_SHARDS 64
#define HD_TRACE_SHARD_SITES 512

enum hd_trace_op {
	HD_TRACE_MALLOC,   // malloc, operator new (all forms)
	HD_TRACE_CALLOC,
	HD_TRACE_REALLOC,  // realloc, reallocarray (the new block)
	HD_TRACE_MEMALIGN, // memalign, posix_memalign, aligned_alloc, valloc,
			   // pvalloc, aligned operator new
	HD_TRACE_FREE,     // free, operator delete, realloc's old block,
			   // realloc(p, 0)
	HD_TRACE_OPS,
};

// Calls and bytes, side by side: a call updates one cache line.
struct hd_trace_count {
	uint64_t count;
	uint64_t bytes;
};

struct hd_trace_site {
	uint64_t pc; // 0: empty slot
	// Per operation: calls, and bytes asked for (free: the bytes the
	// block was allocated with, when it was traced; else 0).
	struct hd_trace_count op[HD_TRACE_OPS];
};

// A traced block's tag: what the tracer knows of a live allocation, kept
// in the block itself. While tracing is on, each allocation of n bytes
// asks glibc for n + HD_TRACE_TAG bytes and writes the tag in the last
// HD_TRACE_TAG bytes of the block's usable size (glibc's chunk size less
// 8, or 16 for an mmapped chunk): the program's pointer is glibc's, and
// the free finds the tag from glibc's chunk header, on lines the free
// touches anyway (no table outside the blocks, no capacity limit).
//   word 0: bit 63 set; bits 32..62 the slack (usable - HD_TRACE_TAG - n);
//           bits 16..31 the site's slot; bits 0..15 check bits 48..63
//   word 1: bit 63 set; bits 32..62 check bits 32..62; bits 0..31 the
//           epoch at allocation
// check = (block address ^ tag_key) * HD_TRACE_TAG_MUL, tag_key being the
// state's: 47 bits of it, so that a block allocated while tracing was off
// passes for a tagged one only if its bytes there happen to match them.
// Both words have bit 63 set: never a user-space pointer.
#define HD_TRACE_TAG 16
#define HD_TRACE_TAG_MUL 0x9E3779B97F4A7C15ull
#define HD_TRACE_TAG_W0_MASK 0x800000000000ffffull
#define HD_TRACE_TAG_W1_MASK 0xffffffff00000000ull

// The bits of block addr's tag that depend on its address alone: bit 63
// and the check bits of both words.
static inline void hd_trace_tag_fixed(uint64_t addr, uint64_t key, uint64_t fixed[2])
{
	uint64_t c = (addr ^ key) * HD_TRACE_TAG_MUL;

	fixed[0] = 1ull << 63 | c >> 48;
	fixed[1] = 1ull << 63 | (c & 0x7fffffff00000000ull);
}

static inline void hd_trace_tag_make(uint64_t tag[2], uint64_t addr, uint64_t key,
				     uint64_t slack, uint32_t site, uint32_t birth)
{
	uint64_t fixed[2];

	hd_trace_tag_fixed(addr, key, fixed);
	tag[0] = fixed[0] | slack << 32 | (uint64_t)site << 16;
	tag[1] = fixed[1] | birth;
}

// Whether tag (the last HD_TRACE_TAG of usable bytes of the block at addr)
// is one the tracer wrote there; if so, the block's size, site slot and
// birth epoch.
static inline int hd_trace_tag_read(const uint64_t tag[2], uint64_t addr, uint64_t key,
				    uint64_t usable, uint64_t *size, uint32_t *site,
				    uint32_t *birth)
{
	uint64_t want[2], slack = (tag[0] >> 32) & 0x7fffffff;

	hd_trace_tag_fixed(addr, key, want);
	if (((tag[0] ^ want[0]) & HD_TRACE_TAG_W0_MASK) != 0 ||
	    ((tag[1] ^ want[1]) & HD_TRACE_TAG_W1_MASK) != 0 || usable < HD_TRACE_TAG ||
	    slack > usable - HD_TRACE_TAG)
		return 0;
	*size = usable - HD_TRACE_TAG - slack;
	*site = (uint32_t)(tag[0] >> 16) & 0xffff;
	*birth = (uint32_t)tag[1];
	return 1;
}

// A call site's counters in a shard.
struct hd_trace_shard_site {
	uint32_t slot; // the site's slot in `sites` + 1; 0: unused
	uint32_t reserved;
	struct hd_trace_count op[HD_TRACE_OPS];
};

// One thread's counters, added to the shared ones of the same name.
struct hd_trace_shard {
	uint64_t owner; // thread id of the thread that writes it; 0: free
	uint64_t untracked_frees;
	uint64_t reserved[2];
	struct hd_trace_count classes[HD_TRACE_CLASSES];
	struct hd_trace_count ages[HD_TRACE_AGES];
	struct hd_trace_shard_site sites[HD_TRACE_SHARD_SITES];
};

struct hd_trace_state {
	uint64_t magic;          // HD_TRACE_MAGIC
	uint32_t version;        // HD_TRACE_VERSION
	uint32_t size;           // sizeof(struct hd_trace_state)
	volatile uint32_t enabled; // the switch, written by the debugger
	volatile uint32_t epoch;   // the current generation
	uint64_t pid;            // of the process that initialised it
	uint64_t tag_key;        // the blocks' tags' key (random, never 0)
	// Frees of blocks without a tag (allocated while tracing was off);
	// calls whose site found no slot are counted in
	// sites[HD_TRACE_NO_SITE].
	uint64_t untracked_frees;
	// Allocations by size class (sizes asked for).
	struct hd_trace_count classes[HD_TRACE_CLASSES];
	// Frees by age (epochs between allocation and free).
	struct hd_trace_count ages[HD_TRACE_AGES];
	struct hd_trace_site sites[HD_TRACE_SITES];
	struct hd_trace_shard shards[HD_TRACE_SHARDS];
};

#ifdef __cplusplus
}
#endif

#endif // HEAPDOM_TRACE_H
