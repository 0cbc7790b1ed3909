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

#endif
