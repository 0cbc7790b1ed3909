// Shared by the fuzz harnesses: the input as a file some readers need a
// path for, without writing to any file system (a memfd, named
// /proc/self/fd/N), and a sink for the renderers' output.
#ifndef HD_FUZZ_UTIL_H
#define HD_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapdom.h"

// Replaces the memfd's contents with data[0..size) and returns its path.
// One memfd per process, truncated and rewritten per input.
static inline const char *hd_fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("hd-fuzz-input", 0);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd write");
		abort();
	}
	return path;
}

// /dev/null, opened once: the renderers run for what they read, not for
// their text.
static inline FILE *hd_fuzz_sink(void)
{
	static FILE *f;
	if (!f && !(f = fopen("/dev/null", "w")))
		abort();
	return f;
}

// An empty directory for hd_debuginfo_options.debug_dir, so no separate
// debug file of this machine (libc6-dbg's) is read for a module an input
// names by build-id: what a harness does depends on the input alone. It
// is made under $TMPDIR and removed at once, kept open and named by its
// descriptor (/proc/self/fd/N): nothing is left behind however the
// fuzzer exits, and nothing can be created in it.
static inline const char *hd_fuzz_empty_dir(void)
{
	static char path[64];
	if (!path[0]) {
		char tmp[128];
		const char *dir = getenv("TMPDIR");
		snprintf(tmp, sizeof(tmp), "%s/hd-fuzz-XXXXXX",
			 dir && strlen(dir) < 100 ? dir : "/tmp");
		int fd = -1;
		if (!mkdtemp(tmp) || (fd = open(tmp, O_RDONLY | O_DIRECTORY)) < 0 ||
		    rmdir(tmp) != 0) {
			perror("hd_fuzz_empty_dir");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	return path;
}

// Destroys err; prints its message first when HD_FUZZ_VERBOSE is set
// (to see where the inputs stop).
static inline void hd_fuzz_report(struct hd_error *err)
{
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("HD_FUZZ_VERBOSE") != NULL;
	if (err && verbose)
		fprintf(stderr, "error: %s\n", err->message);
	hd_error_destroy(err);
}

// The analysis `heapdom dominators` makes, over target t (taken: on
// success the session owns it, on failure it is destroyed): a session
// without debug files (hd_fuzz_empty_dir), untyped — the types have a
// harness of their own (fuzz_dwarf); every block found again by its
// address; the problems read; the ranked dominators (and the plain ones
// with both_views); the stats, dominators and leaks reports. Then
// after(s, arg), when the heap was walked, for a harness's own checks.
// HD_FUZZ_VERBOSE prints the allocator, the counts and the first problem
// (=2: every block too), to see where the inputs stop.
static inline void hd_fuzz_analyse(struct hd_target *t, bool both_views,
				   void (*after)(struct hd_session *s, void *arg),
				   void *arg)
{
	struct hd_session_options so = {.debug = {.debug_dir = hd_fuzz_empty_dir()},
					.untyped = true};
	struct hd_session *s;
	struct hd_error *err = hd_session_create(t, &so, &s);
	if (err) {
		// A session not made leaves the target to its caller.
		hd_error_destroy(err);
		hd_target_destroy(t);
		return;
	}
	const struct hd_heap *h;
	err = hd_session_heap(s, &h);
	if (!err) {
		size_t n = hd_heap_num_blocks(h);
		for (size_t i = 0; i < n; i++) {
			struct hd_block b;
			hd_heap_block(h, i, &b);
			hd_heap_find(h, b.addr);
		}
		for (size_t i = 0; i < hd_heap_num_problems(h); i++)
			(void)hd_heap_problem(h, i);
		const struct hd_dom *d;
		err = hd_session_dom_view(s, HD_DOM_RANKED, &d);
		if (!err) {
			if (both_views)
				hd_error_destroy(hd_session_dom_view(s, HD_DOM_PLAIN, &d));
			struct hd_render_options ro = {.format = HD_FORMAT_JSON,
						       .state_filter = -1,
						       .partial = true};
			hd_error_destroy(hd_render_stats(hd_fuzz_sink(), s, &ro));
			hd_error_destroy(hd_render_dominators(hd_fuzz_sink(), s, &ro));
			hd_error_destroy(hd_render_leaks(hd_fuzz_sink(), s, &ro));
		}
		if (after)
			after(s, arg);
	}
	const char *verbose = getenv("HD_FUZZ_VERBOSE");
	if (verbose && err) {
		fprintf(stderr, "error: %s\n", err->message);
	} else if (verbose) {
		struct hd_heap_info info;
		hd_heap_get_info(h, &info);
		size_t np = hd_heap_num_problems(h);
		fprintf(stderr, "%s: %zu blocks, %zu problems%s%s\n", info.allocator,
			hd_heap_num_blocks(h), np, np ? ": " : "",
			np ? hd_heap_problem(h, 0)->message : "");
		for (size_t i = 0; verbose[0] == '2' && i < hd_heap_num_blocks(h); i++) {
			struct hd_block b;
			hd_heap_block(h, i, &b);
			fprintf(stderr, "  block 0x%llx %s %llu\n", (unsigned long long)b.addr,
				b.list_name ? b.list_name : hd_block_state_name(b.state),
				(unsigned long long)b.usable);
		}
		for (size_t i = 0; verbose[0] == '2' && i < np; i++)
			fprintf(stderr, "  problem: %s\n", hd_heap_problem(h, i)->message);
	}
	hd_error_destroy(err);
	hd_session_destroy(s);
}

#endif
