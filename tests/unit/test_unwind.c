// The CFI unwinder (core/debuginfo/frames.c, unwind.c) on this test's own
// stack: a_fn -> b_fn -> c_fn -> capture() copies the live stack and the
// registers; a callback target serves that copy at its addresses, with this
// executable as its module. Intact, the frames are capture, c_fn, b_fn,
// a_fn, named from DWARF; corrupted (a return address overwritten, a saved
// frame pointer pointing down, the whole stack random), the unwinding
// stops with one warning, keeps the frames below the damage, never loops
// and never crashes.

#include <check.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_util.h"
#include "debuginfo/debuginfo_internal.h"
#include "heapdom.h"

#define SNAP 32768

struct snap {
	uint64_t rsp, rbp, rip;
	size_t size; // bytes copied: up to SNAP, not past the stack's end
	uint8_t stack[SNAP];
	uint64_t ret_into_a; // b_fn's return address (into a_fn)
	uint64_t ret_into_b; // c_fn's return address (into b_fn)
};

static struct snap g_snap;

// The copy of our own stack reads the whole of it, ASan's redzones between
// the locals included: a byte loop ASan does not check (memcpy is
// intercepted even in an unchecked function).
__attribute__((no_sanitize_address, noinline)) static void
copy_stack(uint8_t *dst, const volatile uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

__attribute__((noinline)) static void capture(struct snap *s)
{
	__asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1\n\tlea 0(%%rip), %2"
			 : "=r"(s->rsp), "=r"(s->rbp), "=r"(s->rip));
	s->size = SNAP;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= s->rsp &&
		    s->rsp < hi && hi - s->rsp < SNAP)
			s->size = hi - s->rsp;
	if (f)
		fclose(f);
	copy_stack(s->stack, (const volatile uint8_t *)(uintptr_t)s->rsp, s->size);
}

__attribute__((noinline)) static void c_fn(struct snap *s)
{
	volatile int pad[4] = {1, 2, 3, 4};
	s->ret_into_b = (uint64_t)(uintptr_t)__builtin_return_address(0);
	capture(s);
	(void)pad[0];
}

__attribute__((noinline)) static void b_fn(struct snap *s)
{
	volatile int pad[8] = {0};
	s->ret_into_a = (uint64_t)(uintptr_t)__builtin_return_address(0);
	c_fn(s);
	(void)pad[0];
}

__attribute__((noinline)) static void a_fn(struct snap *s)
{
	volatile int pad[2] = {0};
	b_fn(s);
	(void)pad[0];
}

static struct hd_error *read_snap(void *arg, uint64_t addr, void *buf,
				  size_t len)
{
	const struct snap *s = arg;
	if (addr < s->rsp || addr + len > s->rsp + s->size || addr + len < addr)
		return hd_error_at(HD_ERROR_FAULT, addr, "not in the snapshot");
	memcpy(buf, s->stack + (addr - s->rsp), len);
	return NULL;
}

// Every loaded ELF object with a file (the executable first) as a module.
static int add_modules(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct hd_target *t = arg;
	static char exe[4096];
	const char *path = info->dlpi_name;
	if (!path || !*path) {
		if (hd_target_num_modules(t))
			return 0;
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		ck_assert_int_gt(n, 0);
		exe[n] = '\0';
		path = exe;
	}
	if (path[0] != '/')
		return 0; // the vDSO
	struct hd_module m = {.name = (char *)path, .file = (char *)path,
			      .bias = info->dlpi_addr, .is_exe = path == exe};
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + p->p_vaddr < lo)
			lo = info->dlpi_addr + p->p_vaddr;
		if (info->dlpi_addr + p->p_vaddr + p->p_memsz > hi)
			hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
	}
	m.start = lo;
	m.end = hi;
	ck_assert_no_error(hd_target_add_module(t, &m));
	return 0;
}

// Unwinds s as thread 1; returns the target (frames and warnings).
static struct hd_target *unwind(struct snap *s)
{
	struct hd_target *t;
	ck_assert_no_error(hd_target_create_callback(read_snap, s, &t));
	dl_iterate_phdr(add_modules, t);
	struct hd_mapping stack = {.start = s->rsp, .end = s->rsp + s->size,
				   .prot = HD_PROT_READ | HD_PROT_WRITE,
				   .readable = true};
	ck_assert_no_error(hd_target_add_mapping(t, &stack));
	struct hd_thread th = {.tid = 1, .has_regs = true};
	th.regs.rsp = s->rsp;
	th.regs.rbp = s->rbp;
	th.regs.rip = s->rip;
	ck_assert_no_error(hd_target_add_thread(t, &th));
	struct hd_debuginfo *di;
	ck_assert_no_error(hd_debuginfo_create(t, NULL, &di));
	ck_assert_no_error(hd_debuginfo_add_frames(di));
	hd_debuginfo_destroy(di);
	return t;
}

// The function of frame root level (NULL if absent): "#L FN ...".
static const char *frame_fn(struct hd_target *t, unsigned level, char *buf,
			    size_t len)
{
	for (size_t i = 0; i < hd_target_num_frames(t); i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (f->local || f->level != level)
			continue;
		const char *sp = strchr(f->name, ' ');
		ck_assert_ptr_nonnull(sp);
		snprintf(buf, len, "%s", sp + 1);
		char *end = strchr(buf, ' ');
		if (end)
			*end = '\0';
		return buf;
	}
	return NULL;
}

static unsigned num_levels(struct hd_target *t)
{
	unsigned n = 0;
	for (size_t i = 0; i < hd_target_num_frames(t); i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (!f->local && f->level + 1 > n)
			n = f->level + 1;
	}
	return n;
}

// Every frame owns the bytes [sp, caller_sp), a non-empty range.
static void frames_sane(struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_frames(t); i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		ck_assert_msg(f->sp < f->caller_sp, "%s: [0x%llx, 0x%llx)", f->name,
			      (unsigned long long)f->sp,
			      (unsigned long long)f->caller_sp);
	}
}

static size_t stop_warnings(struct hd_target *t)
{
	frames_sane(t);
	size_t n = 0;
	for (size_t i = 0; i < hd_target_num_warnings(t); i++)
		n += strstr(hd_target_warning(t, i), "backtrace stopped") != NULL;
	return n;
}

static void expect_frames(struct hd_target *t, unsigned n)
{
	static const char *const want[] = {"capture", "c_fn", "b_fn", "a_fn"};
	char buf[256];
	for (unsigned i = 0; i < n; i++) {
		const char *fn = frame_fn(t, i, buf, sizeof(buf));
		ck_assert_msg(fn && strcmp(fn, want[i]) == 0,
			      "frame #%u is %s, expected %s", i, fn ? fn : "(none)",
			      want[i]);
	}
}

START_TEST(test_intact)
{
	a_fn(&g_snap);
	struct hd_target *t = unwind(&g_snap);
	expect_frames(t, 4);
	// Each frame's bytes are [sp, caller_sp), one above the other.
	const struct hd_frame *prev = NULL;
	for (unsigned l = 0; l < 4; l++) {
		for (size_t i = 0; i < hd_target_num_frames(t); i++) {
			const struct hd_frame *f = hd_target_frame(t, i);
			if (f->local || f->level != l)
				continue;
			ck_assert_uint_lt(f->sp, f->caller_sp);
			if (prev)
				ck_assert_uint_eq(prev->caller_sp, f->sp);
			prev = f;
		}
	}
	// Locals with memory locations, named and typed as gdb does.
	bool pad = false;
	for (size_t i = 0; i < hd_target_num_frames(t); i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (!f->local || strcmp(f->name, "pad") != 0)
			continue;
		// Its frame (same thread and level) is c_fn's.
		bool in_c = false;
		for (size_t k = 0; k < hd_target_num_frames(t) && !in_c; k++) {
			const struct hd_frame *fr = hd_target_frame(t, k);
			in_c = !fr->local && fr->tid == f->tid && fr->level == f->level &&
			       strstr(fr->name, " c_fn ");
		}
		if (in_c) {
			pad = true;
			ck_assert_str_eq(f->type_name, "volatile int [4]");
			ck_assert_uint_eq(f->caller_sp - f->sp, 16);
		}
	}
	ck_assert_msg(pad, "no local pad in c_fn's frame");
	for (size_t i = 0; i < hd_target_num_warnings(t); i++)
		ck_assert_msg(!strstr(hd_target_warning(t, i), "backtrace stopped"),
			      "%s", hd_target_warning(t, i));
	hd_target_destroy(t);
}
END_TEST

// The offset in the snapshot of the first word equal to v.
static size_t find_word(const struct snap *s, uint64_t v)
{
	for (size_t o = 0; o + 8 <= s->size; o += 8) {
		uint64_t w;
		memcpy(&w, s->stack + o, 8);
		if (w == v)
			return o;
	}
	ck_abort_msg("word 0x%llx not on the stack", (unsigned long long)v);
	return 0;
}

START_TEST(test_bad_return_address)
{
	a_fn(&g_snap);
	size_t o = find_word(&g_snap, g_snap.ret_into_a);
	uint64_t junk = 0x4141414141414141ULL;
	memcpy(g_snap.stack + o, &junk, 8);
	struct hd_target *t = unwind(&g_snap);
	// b_fn has a caller (at a junk pc): it keeps its frame; nothing
	// above it is named.
	expect_frames(t, 3);
	ck_assert_uint_eq(num_levels(t), 3);
	ck_assert_uint_eq(stop_warnings(t), 1);
	bool named = false;
	for (size_t i = 0; i < hd_target_num_warnings(t); i++)
		named |= strstr(hd_target_warning(t, i), "thread 1: backtrace stopped at frame #3") != NULL;
	ck_assert_msg(named, "the warning names the thread and frame");
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_frame_pointer_down)
{
	a_fn(&g_snap);
	// c_fn's saved frame pointer (b_fn's rbp) sits just below the return
	// address into b_fn; point it below the stack pointer.
	uint64_t ret_into_b = 0;
	size_t o_ra = 0;
	for (size_t o = 8; o + 8 <= g_snap.size; o += 8) {
		uint64_t w;
		memcpy(&w, g_snap.stack + o, 8);
		// Found by value, not by a window after b_fn: b_fn's size
		// depends on the build (ASan instruments it).
		if (w == g_snap.ret_into_b) {
			ret_into_b = w;
			o_ra = o;
			break;
		}
	}
	ck_assert_uint_ne(ret_into_b, 0);
	// Inside the copy (readable), below every frame of b_fn and c_fn.
	uint64_t down = g_snap.rsp;
	memcpy(g_snap.stack + o_ra - 8, &down, 8);
	struct hd_target *t = unwind(&g_snap);
	// c_fn's caller is b_fn (its stack pointer is c_fn's CFA); b_fn's
	// caller would lie below it: b_fn has no frame, as in gdb.
	ck_assert_uint_eq(num_levels(t), 2);
	expect_frames(t, 2);
	ck_assert_uint_eq(stop_warnings(t), 1);
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_random_stacks)
{
	a_fn(&g_snap);
	struct snap *s = malloc(sizeof(*s));
	ck_assert_ptr_nonnull(s);
	srand(19);
	for (int round = 0; round < 200; round++) {
		*s = g_snap;
		// Garbage above capture's own frame; sometimes words that
		// look like stack addresses, to make loops.
		for (size_t o = 64; o + 8 <= s->size; o += 8) {
			uint64_t w = (uint64_t)rand() << 33 ^ (uint64_t)rand();
			if (rand() % 3 == 0)
				w = s->rsp + (uint64_t)rand() % s->size;
			memcpy(s->stack + o, &w, 8);
		}
		struct hd_target *t = unwind(s);
		ck_assert_uint_le(num_levels(t), 4096);
		ck_assert_uint_le(stop_warnings(t), 1);
		hd_target_destroy(t);
	}
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("cfi");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_intact);
	tcase_add_test(tc, test_bad_return_address);
	tcase_add_test(tc, test_frame_pointer_down);
	tcase_add_test(tc, test_random_stacks);
	suite_add_tcase(s, tc);
	return hd_run_suite(s) ? 1 : 0;
}
