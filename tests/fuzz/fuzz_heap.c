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
	// No debug files; untyped: the types have a harness of their
	// own (fuzz_dwarf), and this one is about the heap and the graph.
	struct hd_session_options so = {.debug = {.debug_dir = hd_fuzz_empty_dir()},
					.untyped = true};
	struct hd_session *s;
	err = hd_session_create(t, &so, &s);
	if (err) {
		// A session not made leaves the target to its caller.
		hd_error_destroy(err);
		hd_target_destroy(t);
		return 0;
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
			hd_error_destroy(hd_session_dom_view(s, HD_DOM_PLAIN, &d));
			struct hd_render_options ro = {.format = HD_FORMAT_JSON,
						       .state_filter = -1,
						       .partial = true};
			hd_error_destroy(hd_render_stats(hd_fuzz_sink(), s, &ro));
			hd_error_destroy(hd_render_dominators(hd_fuzz_sink(), s, &ro));
			hd_error_destroy(hd_render_leaks(hd_fuzz_sink(), s, &ro));
		}
	}
	hd_error_destroy(err);
	hd_session_destroy(s);
	return 0;
}
