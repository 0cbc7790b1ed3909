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
#define HD_TRACE_VERSION 5
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
// ages of 63 and more (an age is taken modulo 2^HD_TRACE_TAG_BIRTH_BITS,
// the tag's birth bits).
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
// word of the block's usable size (glibc's chunk size less 8, or 16 for
// an mmapped chunk): the program's pointer is glibc's, and the free finds
// the tag from glibc's chunk header (no table outside the blocks, no
// capacity limit). One word, so that the request grows only where glibc's
// rounding leaves less than a word spare (half the sizes):
//   bit 63:      set, so that a tag is never a user-space pointer
//   bits 58..62: the slack (usable - HD_TRACE_TAG - n), if below
//                HD_TRACE_TAG_SLACK_FAR; else HD_TRACE_TAG_SLACK_FAR, and
//                the word before the tag (within the slack) holds it
//   bits 42..57: the site's slot
//   bits 22..41: the epoch at allocation, modulo 2^HD_TRACE_TAG_BIRTH_BITS
//   bits 0..21:  bits 42..63 of the check
// The word before, for a far slack: bit 63 set; bits 47..62 bits 47..62
// of the check; bits 0..46 the slack.
// check = (block address ^ tag_key) * HD_TRACE_TAG_MUL, tag_key being the
// state's: a block allocated while tracing was off passes for a tagged one
// only if its last word happens to match 23 bits that depend on its
// address and the key.
#define HD_TRACE_TAG 8
#define HD_TRACE_TAG_MUL 0x9E3779B97F4A7C15ull
#define HD_TRACE_TAG_SLACK_FAR 31
#define HD_TRACE_TAG_BIRTH_BITS 20
#define HD_TRACE_TAG_BIRTH_MASK ((1u << HD_TRACE_TAG_BIRTH_BITS) - 1)
#define HD_TRACE_TAG_CHECK 0x80000000003fffffull // bit 63 and the check bits
#define HD_TRACE_TAG_FAR_CHECK 0xffff800000000000ull
#define HD_TRACE_TAG_FAR_SLACK 0x00007fffffffffffull

static inline uint64_t hd_trace_tag_hash(uint64_t addr, uint64_t key)
{
	return (addr ^ key) * HD_TRACE_TAG_MUL;
}

// The tag of block addr: slack (below HD_TRACE_TAG_SLACK_FAR, or that
// value for a far slack), allocated at site in epoch birth.
static inline uint64_t hd_trace_tag_word(uint64_t addr, uint64_t key, uint64_t slack,
					 uint32_t site, uint32_t birth)
{
	return 1ull << 63 | slack << 58 | (uint64_t)site << 42 |
	       (uint64_t)(birth & HD_TRACE_TAG_BIRTH_MASK) << 22 |
	       hd_trace_tag_hash(addr, key) >> 42;
}

// The word before block addr's tag, for a slack of HD_TRACE_TAG_SLACK_FAR
// or more (below 2^47).
static inline uint64_t hd_trace_tag_far(uint64_t addr, uint64_t key, uint64_t slack)
{
	return 1ull << 63 | (hd_trace_tag_hash(addr, key) & HD_TRACE_TAG_FAR_CHECK) | slack;
}

// Writes the tag of block addr, of usable bytes of which n were asked
// for, allocated at site in epoch birth, at tag (its last usable word),
// and for a far slack the word before it too. Nothing if usable is less
// than n + HD_TRACE_TAG (the slack wraps).
static inline void hd_trace_tag_write(uint64_t *tag, uint64_t addr, uint64_t key,
				      uint64_t usable, uint64_t n, uint32_t site,
				      uint32_t birth)
{
	uint64_t slack = usable - HD_TRACE_TAG - n;

	if (__builtin_expect(slack >= HD_TRACE_TAG_SLACK_FAR, 0)) {
		if (slack > usable)
			return;
		tag[-1] = hd_trace_tag_far(addr, key, slack);
		slack = HD_TRACE_TAG_SLACK_FAR;
	}
	tag[0] = hd_trace_tag_word(addr, key, slack, site, birth);
}

// Whether tag (the last word of the usable bytes of the block at addr;
// usable >= HD_TRACE_TAG, and tag[-1] readable if usable >=
// 2 * HD_TRACE_TAG) is one the tracer wrote there; if so, the block's
// size, site slot and birth epoch modulo 2^HD_TRACE_TAG_BIRTH_BITS
// (hd_trace_tag_birth has the whole of it).
static inline int hd_trace_tag_read(const uint64_t *tag, uint64_t addr, uint64_t key,
				    uint64_t usable, uint64_t *size, uint32_t *site,
				    uint32_t *birth)
{
	uint64_t w = tag[0], c = hd_trace_tag_hash(addr, key), slack = w >> 58 & 31;

	if (((w ^ (1ull << 63 | c >> 42)) & HD_TRACE_TAG_CHECK) != 0)
		return 0;
	if (__builtin_expect(slack == HD_TRACE_TAG_SLACK_FAR, 0)) {
		if (usable < 2 * HD_TRACE_TAG ||
		    ((tag[-1] ^ (1ull << 63 | c)) & HD_TRACE_TAG_FAR_CHECK) != 0)
			return 0;
		slack = tag[-1] & HD_TRACE_TAG_FAR_SLACK;
		if (slack < HD_TRACE_TAG_SLACK_FAR)
			return 0;
	}
	if (slack > usable - HD_TRACE_TAG)
		return 0;
	*size = usable - HD_TRACE_TAG - slack;
	*site = (uint32_t)(w >> 42) & 0xffff;
	*birth = (uint32_t)(w >> 22) & HD_TRACE_TAG_BIRTH_MASK;
	return 1;
}

// The epoch a block was born in, from its tag's birth bits and the
// current epoch: the latest one not after it. Exact for blocks younger
// than 2^HD_TRACE_TAG_BIRTH_BITS epochs.
static inline uint32_t hd_trace_tag_birth(uint32_t epoch, uint32_t bits)
{
	return epoch - ((epoch - bits) & HD_TRACE_TAG_BIRTH_MASK);
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
