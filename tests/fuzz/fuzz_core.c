// The ELF core reader (core/target/core_file.c): a mutated core is opened
// as a target, and everything a report asks of a target is asked of it:
// mappings, threads and their registers, modules, the auxiliary vector,
// truncation, warnings, and reads and views of memory at the edges of
// every mapping. Files the core names are looked up under a sysroot that
// does not exist, so the input alone decides what is read.
#include <stdint.h>
#include <string.h>

#include "heapdom.h"
#include "fuzz_util.h"

static void read_around(struct hd_target *t, uint64_t addr)
{
	uint8_t buf[64];
	uint64_t u;
	hd_error_destroy(hd_target_read(t, addr, buf, sizeof(buf)));
	hd_error_destroy(hd_target_read(t, addr - 8, buf, 16));
	hd_error_destroy(hd_target_read_u64(t, addr, &u));
	struct hd_view v;
	struct hd_error *err = hd_target_view(t, addr, 4096, &v);
	if (!err)
		hd_view_deinit(&v);
	hd_error_destroy(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = hd_fuzz_file(data, size);
	struct hd_target_options opts = {.sysroot = "/nonexistent-hd-fuzz"};
	struct hd_target *t;
	struct hd_error *err = hd_target_open_core(path, &opts, &t);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	size_t nm = hd_target_num_mappings(t);
	for (size_t i = 0; i < nm && i < 256; i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		read_around(t, m->start);
		read_around(t, m->end - 8);
		hd_target_find_mapping(t, m->start);
		hd_target_find_module(t, m->start);
	}
	for (size_t i = 0; i < hd_target_num_threads(t); i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		if (th->has_regs) {
			read_around(t, th->regs.rsp);
			read_around(t, th->regs.fs_base);
		}
	}
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		read_around(t, m->start);
	}
	uint64_t v;
	hd_target_auxv(t, 3 /* AT_PHDR */, &v);
	hd_target_auxv(t, 33 /* AT_SYSINFO_EHDR */, &v);
	struct hd_truncation tr;
	hd_target_truncation(t, &tr);
	size_t nw = hd_target_num_warnings(t);
	for (size_t i = 0; i < nw; i++)
		(void)strlen(hd_target_warning(t, i));
	(void)strlen(hd_target_kind(t));
	(void)strlen(hd_target_name(t));
	hd_target_destroy(t);
	return 0;
}
