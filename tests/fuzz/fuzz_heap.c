// The glibc heap walker over a memory image: the input is a core (seeds:
// tests/synth/mkcore.py's synthetic cores of several glibc versions), the
// walk finds main_arena from the data alone (the synthetic libc's file is
// nowhere), then the pointer graph, the dominators in both views and the
// holders are computed, as `heapdom dominators` does.
#include <stdint.h>

#include "heapdom.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = hd_fuzz_file(data, size);
	struct hd_target_options to = {.sysroot = "/nonexistent-hd-fuzz"};
	struct hd_target *t;
	struct hd_error *err = hd_target_open_core(path, &to, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	hd_fuzz_analyse(t, true, NULL, NULL);
	return 0;
}
