// What a sampling run collected, shared by the sampler (sampler.c) and its
// report (report/sample.c).
#ifndef HD_SAMPLE_SAMPLER_H
#define HD_SAMPLE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapdom.h"

enum {
	HD_SAMPLE_ACCESS = 1,      // the instruction touches memory: addr, size
	HD_SAMPLE_WRITE = 2,       // a store
	HD_SAMPLE_IMPLICIT = 4,    // through RSP or a string register
	HD_SAMPLE_APPROXIMATE = 8, // a later instruction than the PC's
};

// One thread stopped once. Only kept samples are stored: filtered ones are
// only counted.
struct hd_sample {
	int tid;
	uint8_t flags;   // HD_SAMPLE_*
	uint32_t size;   // bytes accessed (0: unknown)
	uint64_t pc;     // where the thread was stopped
	uint64_t insn_pc; // the instruction whose access this is
	uint64_t addr;
};

struct hd_sample_thread {
	int tid;
	uint64_t taken;       // times stopped and read
	uint64_t accesses;    // kept samples with an access
	uint64_t no_access;   // kept samples whose instruction touches nothing
	uint64_t filtered;    // dropped by --pc-range or --addr-range
	uint64_t failed;      // code unreadable or no valid instruction
};

struct hd_samples {
	int pid;
	struct hd_sample *samples;
	size_t num_samples, cap_samples;
	struct hd_sample_thread *threads; // in the order first seen
	size_t num_threads, cap_threads;
	uint64_t rounds;
	uint64_t taken;        // threads stopped and read, over all rounds
	uint64_t stopped_ns;   // from the first interrupt to the last resume,
			       // summed over rounds
	uint64_t wall_ns;      // the whole sampling
	unsigned requested_hz; // as asked (before the cap)
	unsigned hz;           // the rate used at the end
	bool interrupted;      // ended by hd_sample_stop()
	bool exited;           // the process exited while sampled
	bool truncated;        // the sample buffer limit was reached
	int64_t started;       // when sampling began (seconds since 1970)
	char notes[512];       // "; "-separated remarks (rate cap, lowering)
};

// --output's name with %p (pid), %t (start time) and %% replaced.
void hd_sample_output_name(const char *pattern, const struct hd_samples *r,
			   char *buf, size_t len);
// The --live view: each thread's busiest buckets so far (live_view.c).
void hd_sample_live_view(FILE *out, const struct hd_samples *r,
			 const struct hd_sample_options *o, double seconds);

#endif
