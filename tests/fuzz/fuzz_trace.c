// The allocation tracer's tables as `heapdom trace` reads them
// (core/report/trace_tables.c, trace.c): the tracer's state object,
// struct hd_trace_state, is built from the input and shown at the address
// of this harness's own `heapdom_trace` symbol, the module being this
// executable, so hd_trace_locate finds it as in a traced process.
//
// Input: the first bytes are the state's head (magic, version, size,
// epoch, key, class and age counts); the rest is a list of patches,
// (u32 offset, u8 length, bytes), written anywhere into the state: call
// sites, per-thread shards. With HD_FUZZ_CORE naming a core (run.sh and
// the replay test give a mkcore.py synthetic core), its memory and threads
// are the rest of the address space, so the heap walk, the tags and the
// report run too; without, the load stops where it needs the heap.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "heapdom_trace.h"
#include "debuginfo/elf_symbols.h"
#include "fuzz_util.h"

// What hd_trace_locate looks up; never written by this program except
// through `state` below (the module's bytes are served from there).
__attribute__((used)) struct hd_trace_state heapdom_trace;

#define BIAS 0x6a0000000000ull // clear of the synthetic cores' mappings

static struct hd_trace_state *state;
static uint64_t state_addr;
static struct hd_target *core; // HD_FUZZ_CORE, or NULL

struct patch {
	uint32_t off, len;
};

static struct hd_error *read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	if (addr >= state_addr && addr - state_addr <= sizeof(*state) &&
	    len <= sizeof(*state) - (addr - state_addr)) {
		memcpy(buf, (uint8_t *)state + (addr - state_addr), len);
		return NULL;
	}
	// The rest of the state's pages: zeros, as in a process.
	uint64_t lo = state_addr & ~0xfffull;
	uint64_t hi = (state_addr + sizeof(*state) + 0xfff) & ~0xfffull;
	if (addr >= lo && addr < hi && len <= hi - addr) {
		uint64_t s = state_addr, e = state_addr + sizeof(*state);
		for (size_t i = 0; i < len; i++)
			((uint8_t *)buf)[i] = addr + i >= s && addr + i < e ?
				((uint8_t *)state)[addr + i - s] : 0;
		return NULL;
	}
	if (core)
		return hd_target_read(core, addr, buf, len);
	return hd_error_at(HD_ERROR_FAULT, addr, "no memory at 0x%llx",
			   (unsigned long long)addr);
}

static void init(void)
{
	state = calloc(1, sizeof(*state));
	uint64_t value, size;
	struct hd_error *err = hd_elf_find_symbol("/proc/self/exe", HD_TRACE_SYMBOL,
						  &value, &size);
	if (!state || err) {
		fprintf(stderr, "fuzz_trace: %s\n", err ? err->message : "no memory");
		abort();
	}
	state_addr = BIAS + value;
	const char *path = getenv("HD_FUZZ_CORE");
	struct hd_target_options to = {.sysroot = "/nonexistent-hd-fuzz"};
	if (path && (err = hd_target_open_core(path, &to, &core))) {
		fprintf(stderr, "fuzz_trace: %s\n", err->message);
		abort();
	}
}

static struct hd_error *make_target(struct hd_target **ret)
{
	struct hd_target *t;
	struct hd_error *err = hd_target_create_callback(read_mem, NULL, &t);
	if (err)
		return err;
	for (size_t i = 0; core && !err && i < hd_target_num_mappings(core); i++)
		err = hd_target_add_mapping(t, hd_target_mapping(core, i));
	for (size_t i = 0; core && !err && i < hd_target_num_threads(core); i++)
		err = hd_target_add_thread(t, hd_target_thread(core, i));
	struct hd_mapping m = {.start = state_addr & ~0xfffull,
			       .end = (state_addr + sizeof(*state) + 0xfff) & ~0xfffull,
			       .prot = HD_PROT_READ | HD_PROT_WRITE,
			       .readable = true};
	if (!err)
		err = hd_target_add_mapping(t, &m);
	struct hd_module mod = {.name = "/fuzz/traced", .file = "/proc/self/exe",
				.bias = BIAS, .start = m.start, .end = m.end,
				.is_exe = true};
	if (!err)
		err = hd_target_add_module(t, &mod);
	if (err) {
		hd_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// One session for every input: the heap walk and the debug info (the
	// sites' functions and lines in this executable) are computed once;
	// the tracer's state is read anew from memory by each report.
	static struct hd_session *s;
	if (!state) {
		init();
		struct hd_target *t;
		struct hd_session_options so = {.debug = {.debug_dir = hd_fuzz_empty_dir()},
						.untyped = true};
		struct hd_error *err = make_target(&t);
		if (!err && (err = hd_session_create(t, &so, &s)))
			hd_target_destroy(t); // not taken by a session not made
		if (err) {
			fprintf(stderr, "fuzz_trace: %s\n", err->message);
			abort();
		}
	}
	// The head, then the patches; each remembered to be zeroed after.
	size_t head = offsetof(struct hd_trace_state, sites);
	size_t n = size < head ? size : head;
	memcpy(state, data, n);
	struct patch patches[256];
	size_t np = 0;
	for (size_t i = n; i + 5 <= size && np < 256; np++) {
		uint32_t off;
		memcpy(&off, data + i, 4);
		uint32_t len = data[i + 4];
		i += 5;
		if (len > size - i)
			len = (uint32_t)(size - i);
		off %= (uint32_t)(sizeof(*state) - len);
		memcpy((uint8_t *)state + off, data + i, len);
		patches[np] = (struct patch){off, len};
		i += len;
	}

	// Each report reads the whole state (8 MiB): one text report, by
	// what the input's length picks, the JSON one and the blocks with
	// their allocation sites.
	struct hd_render_options ro = {.format = HD_FORMAT_TEXT,
				       .trace_by = (int)(size % (HD_TRACE_BY_AGE + 1))};
	hd_fuzz_report(hd_render_trace(hd_fuzz_sink(), s, &ro));
	ro.format = HD_FORMAT_JSON;
	hd_fuzz_report(hd_render_trace(hd_fuzz_sink(), s, &ro));
	ro.state_filter = -1;
	hd_fuzz_report(hd_render_blocks(hd_fuzz_sink(), s, &ro));

	memset(state, 0, head);
	for (size_t i = 0; i < np; i++)
		memset((uint8_t *)state + patches[i].off, 0, patches[i].len);
	return 0;
}
