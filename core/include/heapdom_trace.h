// heapdom allocation tracing — the tables libheapdom-trace.so keeps inside
// the traced process.
//
// libheapdom-trace.so interposes malloc, calloc, realloc, reallocarray,
// free, memalign, posix_memalign, aligned_alloc, valloc, pvalloc and the
// C++ operators new and delete (LD_PRELOAD, or loaded into a running
// process by `heap-trace start`). Everything it records lives in one
// object, `heapdom_trace` (struct hd_trace_state), of fixed size: no event
// stream, no allocation and no unwinding inside the hooks. A debugger or
// `heapdom trace CORE` reads the object from the process's memory (or the
// core) and reports; the debugger switches tracing on and off and advances
// the epoch by writing `enabled` and `epoch`.
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
#define HD_TRACE_VERSION 3
#define HD_TRACE_SYMBOL "heapdom_trace"

// Call sites: the return address into the caller of malloc (or of
// operator new). Open addressing on pc. The last slot, HD_TRACE_NO_SITE,
// is never a call site: its pc is HD_TRACE_PC_NONE and it counts the calls
// whose site found no slot. The calls of an operation are the sum of its
// counts over all slots.
#define HD_TRACE_SITES 65536
#define HD_TRACE_NO_SITE (HD_TRACE_SITES - 1)
#define HD_TRACE_PC_NONE 1
// Live allocations, for ages: open addressing on the pointer.
#define HD_TRACE_LIVE (1u << 21)
// Live allocations of HD_TRACE_BIG_SIZE bytes or more keep their size here.
#define HD_TRACE_BIG 64
#define HD_TRACE_BIG_SIZE 0xffffffffu
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

// A live allocation in 16 bytes: four to a cache line, so the free's
// look-up touches one line.
struct hd_trace_live {
	// The block's address (bits 0..47) and its site's slot (48..63);
	// 0: empty slot, 1: deleted.
	uint64_t key;
	// Bytes asked for (bits 0..31; HD_TRACE_BIG_SIZE: the size is in
	// `big`) and the epoch at allocation (32..63).
	uint64_t info;
};

#define HD_TRACE_KEY_ADDR(key) ((key) & 0xffffffffffffull)
#define HD_TRACE_KEY_SITE(key) ((uint32_t)((key) >> 48))
#define HD_TRACE_INFO_SIZE(info) ((uint32_t)(info))
#define HD_TRACE_INFO_BIRTH(info) ((uint32_t)((info) >> 32))

struct hd_trace_big {
	uint64_t ptr; // 0: empty, 1: deleted
	uint64_t size;
};

// A call site's counters in a shard.
struct hd_trace_shard_site {
	uint32_t slot; // the site's slot in `sites` + 1; 0: unused
	uint32_t reserved;
	struct hd_trace_count op[HD_TRACE_OPS];
};

// One thread's counters, added to the shared ones of the same name.
struct hd_trace_shard {
	uint64_t owner; // thread id of the thread that writes it; 0: free
	uint64_t dropped_live;
	uint64_t untracked_frees;
	uint64_t reserved;
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
	// What could not be recorded (calls whose site found no slot are
	// counted in sites[HD_TRACE_NO_SITE]).
	uint64_t dropped_live;   // allocations whose live entry found no slot
	uint64_t untracked_frees; // frees of blocks not in the live table
	// Allocations by size class (sizes asked for).
	struct hd_trace_count classes[HD_TRACE_CLASSES];
	// Frees by age (epochs between allocation and free).
	struct hd_trace_count ages[HD_TRACE_AGES];
	struct hd_trace_big big[HD_TRACE_BIG];
	struct hd_trace_site sites[HD_TRACE_SITES];
	struct hd_trace_live live[HD_TRACE_LIVE];
	struct hd_trace_shard shards[HD_TRACE_SHARDS];
};

#ifdef __cplusplus
}
#endif

#endif // HEAPDOM_TRACE_H
