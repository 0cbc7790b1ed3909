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
#define HD_TRACE_VERSION 1
#define HD_TRACE_SYMBOL "heapdom_trace"

// Call sites: the return address into the caller of malloc (or of
// operator new). Open addressing on pc; a site that finds no slot is
// counted in dropped_sites.
#define HD_TRACE_SITES 65536
// Live allocations, for ages: open addressing on the pointer.
#define HD_TRACE_LIVE (1u << 21)
// Size classes: class 0 is size 0, class k (1..63) holds sizes in
// [2^(k-1), 2^k).
#define HD_TRACE_CLASSES 64
// Ages at free, in epochs: bucket a < 63 holds age a exactly, bucket 63
// ages of 63 and more.
#define HD_TRACE_AGES 64

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

struct hd_trace_site {
	uint64_t pc;                    // 0: empty slot
	uint64_t count[HD_TRACE_OPS];   // calls
	uint64_t bytes[HD_TRACE_OPS];   // bytes asked for (free: the bytes
					// the block was allocated with, when
					// it was traced; else 0)
};

struct hd_trace_live {
	uint64_t ptr;   // 0: empty, 1: deleted
	uint64_t size;  // bytes asked for
	uint32_t site;  // index into sites
	uint32_t birth; // epoch at allocation
};

struct hd_trace_state {
	uint64_t magic;          // HD_TRACE_MAGIC
	uint32_t version;        // HD_TRACE_VERSION
	uint32_t size;           // sizeof(struct hd_trace_state)
	volatile uint32_t enabled; // the switch, written by the debugger
	volatile uint32_t epoch;   // the current generation
	uint64_t pid;            // of the process that initialised it
	// Allocations and frees seen while enabled, and what could not be
	// recorded.
	uint64_t calls[HD_TRACE_OPS];
	uint64_t dropped_sites;  // calls whose site found no slot
	uint64_t dropped_live;   // allocations whose live entry found no slot
	uint64_t untracked_frees; // frees of blocks not in the live table
	// Allocations by size class (sizes asked for).
	uint64_t class_count[HD_TRACE_CLASSES];
	uint64_t class_bytes[HD_TRACE_CLASSES];
	// Frees by age (epochs between allocation and free).
	uint64_t age_count[HD_TRACE_AGES];
	uint64_t age_bytes[HD_TRACE_AGES];
	struct hd_trace_site sites[HD_TRACE_SITES];
	struct hd_trace_live live[HD_TRACE_LIVE];
};

#ifdef __cplusplus
}
#endif

#endif // HEAPDOM_TRACE_H
