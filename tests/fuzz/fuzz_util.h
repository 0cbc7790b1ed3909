// Shared by the fuzz harnesses: the input as a file some readers need a
// path for, without writing to any file system (a memfd, named
// /proc/self/fd/N), and a sink for the renderers' output.
#ifndef HD_FUZZ_UTIL_H
#define HD_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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

#endif
