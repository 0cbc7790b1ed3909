// Unit tests of the target layer: the callback backend over a fake address
// space, and the live backend against children of this test.
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heapdom.h"
#include "target/live.h"
#include "check_util.h"

// Checks that err has the given code, then releases it.
#define ck_assert_error(err, want)                                            \
	do {                                                                  \
		struct hd_error *_e = (err);                                  \
		ck_assert_msg(_e, "expected an error, got success");          \
		ck_assert_msg(_e->code == (want), "error code %d, want %d: %s", \
			      _e->code, (want), _e->message);                 \
		hd_error_destroy(_e);                                         \
	} while (0)

// ------------------------------------------------------------ callback

// Two buffers at made-up addresses with a gap between them.
#define REGION_SIZE 4096
#define REGION_A 0x10000
#define REGION_B 0x30000

struct fake_mem {
	uint64_t addr[2];
	uint8_t data[2][REGION_SIZE];
};

static struct hd_error *fake_read(void *arg, uint64_t addr, void *buf,
				  size_t len)
{
	struct fake_mem *fm = arg;
	size_t done = 0;
	while (done < len) {
		uint64_t a = addr + done;
		int r = -1;
		for (int i = 0; i < 2; i++) {
			if (a >= fm->addr[i] && a < fm->addr[i] + REGION_SIZE)
				r = i;
		}
		if (r < 0)
			return hd_error_at(HD_ERROR_FAULT, a,
					   "fake: nothing at 0x%" PRIx64, a);
		size_t n = fm->addr[r] + REGION_SIZE - a;
		if (n > len - done)
			n = len - done;
		memcpy((uint8_t *)buf + done, &fm->data[r][a - fm->addr[r]], n);
		done += n;
	}
	return NULL;
}

static struct fake_mem *fake_mem_new(void)
{
	struct fake_mem *fm = malloc(sizeof(*fm));
	ck_assert_ptr_nonnull(fm);
	fm->addr[0] = REGION_A;
	fm->addr[1] = REGION_B;
	for (int i = 0; i < 2; i++) {
		for (size_t j = 0; j < REGION_SIZE; j++)
			fm->data[i][j] = (uint8_t)(j * 7 + i * 101);
	}
	return fm;
}

static struct hd_target *callback_target(struct fake_mem *fm)
{
	struct hd_target *t = NULL;
	ck_assert_no_error(hd_target_create_callback(fake_read, fm, &t));
	ck_assert_ptr_nonnull(t);
	return t;
}

START_TEST(test_callback_read)
{
	struct fake_mem *fm = fake_mem_new();
	struct hd_target *t = callback_target(fm);
	ck_assert_str_eq(hd_target_kind(t), "callback");
	ck_assert_str_eq(hd_target_name(t), "callback");

	uint8_t buf[64];
	ck_assert_no_error(hd_target_read(t, REGION_A + 100, buf, sizeof(buf)));
	ck_assert_mem_eq(buf, &fm->data[0][100], sizeof(buf));
	// Up to the last byte of a region.
	ck_assert_no_error(hd_target_read(t, REGION_B + REGION_SIZE - 16, buf,
					  16));
	ck_assert_mem_eq(buf, &fm->data[1][REGION_SIZE - 16], 16);
	uint64_t v;
	ck_assert_no_error(hd_target_read_u64(t, REGION_B + 8, &v));
	ck_assert_mem_eq(&v, &fm->data[1][8], 8);

	// Across the end of region A into the gap.
	struct hd_error *err =
		hd_target_read(t, REGION_A + REGION_SIZE - 8, buf, 16);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FAULT);
	ck_assert(err->has_address);
	ck_assert_uint_eq(err->address, REGION_A + REGION_SIZE);
	hd_error_destroy(err);

	// Nowhere near anything.
	err = hd_target_read(t, 0x50000, buf, 8);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FAULT);
	ck_assert_uint_eq(err->address, 0x50000);
	hd_error_destroy(err);

	ck_assert_error(hd_target_read(t, UINT64_MAX - 4, buf, 8),
			HD_ERROR_FAULT);
	hd_target_destroy(t);
	free(fm);
}
END_TEST

START_TEST(test_callback_null_read)
{
	struct hd_target *t = NULL;
	ck_assert_error(hd_target_create_callback(NULL, NULL, &t),
			HD_ERROR_INVALID);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_callback_mappings)
{
	struct fake_mem *fm = fake_mem_new();
	struct hd_target *t = callback_target(fm);
	char path[] = "/usr/lib/libfake.so";
	const struct hd_mapping maps[] = {
		{.start = REGION_B, .end = REGION_B + REGION_SIZE,
		 .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true},
		{.start = REGION_A, .end = REGION_A + REGION_SIZE,
		 .prot = HD_PROT_READ, .path = path, .readable = true},
		{.start = 0x20000, .end = 0x20800, .prot = 0},
	};
	for (size_t i = 0; i < 3; i++)
		ck_assert_no_error(hd_target_add_mapping(t, &maps[i]));
	// The path was copied.
	path[0] = 'X';

	ck_assert_uint_eq(hd_target_num_mappings(t), 3);
	ck_assert_uint_eq(hd_target_mapping(t, 0)->start, REGION_A);
	ck_assert_str_eq(hd_target_mapping(t, 0)->path, "/usr/lib/libfake.so");
	ck_assert_uint_eq(hd_target_mapping(t, 1)->start, 0x20000);
	ck_assert_uint_eq(hd_target_mapping(t, 2)->start, REGION_B);
	ck_assert_ptr_null(hd_target_mapping(t, 3));

	// Start inclusive, end exclusive.
	ck_assert_ptr_eq(hd_target_find_mapping(t, REGION_A),
			 hd_target_mapping(t, 0));
	ck_assert_ptr_eq(hd_target_find_mapping(t, REGION_A + REGION_SIZE - 1),
			 hd_target_mapping(t, 0));
	ck_assert_ptr_null(hd_target_find_mapping(t, REGION_A + REGION_SIZE));
	ck_assert_ptr_null(hd_target_find_mapping(t, REGION_A - 1));
	ck_assert_ptr_eq(hd_target_find_mapping(t, 0x207ff),
			 hd_target_mapping(t, 1));
	ck_assert_ptr_null(hd_target_find_mapping(t, 0x20800));
	ck_assert_ptr_eq(hd_target_find_mapping(t, REGION_B + 5),
			 hd_target_mapping(t, 2));
	ck_assert_ptr_null(hd_target_find_mapping(t, 0));
	ck_assert_ptr_null(hd_target_find_mapping(t, UINT64_MAX));

	// Overlapping and empty mappings are refused and leave no trace.
	struct hd_mapping bad = {.start = REGION_A + 0x800,
				 .end = REGION_A + 0x1800};
	ck_assert_error(hd_target_add_mapping(t, &bad), HD_ERROR_INVALID);
	bad = (struct hd_mapping){.start = 0x1f000, .end = 0x20001};
	ck_assert_error(hd_target_add_mapping(t, &bad), HD_ERROR_INVALID);
	bad = (struct hd_mapping){.start = 0x40000, .end = 0x40000};
	ck_assert_error(hd_target_add_mapping(t, &bad), HD_ERROR_INVALID);
	ck_assert_error(hd_target_add_mapping(t, NULL), HD_ERROR_INVALID);
	ck_assert_uint_eq(hd_target_num_mappings(t), 3);

	// Adjacent is fine, and the boundary then belongs to the new one.
	struct hd_mapping next = {.start = REGION_A + REGION_SIZE,
				  .end = REGION_A + 2 * REGION_SIZE};
	ck_assert_no_error(hd_target_add_mapping(t, &next));
	ck_assert_uint_eq(hd_target_num_mappings(t), 4);
	ck_assert_uint_eq(hd_target_find_mapping(t, REGION_A + REGION_SIZE)
				  ->start,
			  REGION_A + REGION_SIZE);
	for (size_t i = 1; i < hd_target_num_mappings(t); i++)
		ck_assert_uint_le(hd_target_mapping(t, i - 1)->end,
				  hd_target_mapping(t, i)->start);
	hd_target_destroy(t);
	free(fm);
}
END_TEST

START_TEST(test_callback_threads_modules)
{
	struct fake_mem *fm = fake_mem_new();
	struct hd_target *t = callback_target(fm);
	struct hd_thread th = {.tid = 100, .has_regs = true};
	th.regs.rip = 0x401000;
	th.regs.rsp = 0x7ffc0000;
	ck_assert_no_error(hd_target_add_thread(t, &th));
	th = (struct hd_thread){.tid = 101};
	ck_assert_no_error(hd_target_add_thread(t, &th));
	ck_assert_uint_eq(hd_target_num_threads(t), 2);
	ck_assert_int_eq(hd_target_thread(t, 0)->tid, 100);
	ck_assert(hd_target_thread(t, 0)->has_regs);
	ck_assert_uint_eq(hd_target_thread(t, 0)->regs.rip, 0x401000);
	ck_assert_uint_eq(hd_target_thread(t, 0)->regs.rsp, 0x7ffc0000);
	ck_assert_int_eq(hd_target_thread(t, 1)->tid, 101);
	ck_assert(!hd_target_thread(t, 1)->has_regs);
	ck_assert_ptr_null(hd_target_thread(t, 2));

	struct hd_module m = {
		.name = "/nonexistent/heapdom-test/prog",
		.bias = 0x400000,
		.start = 0x400000,
		.end = 0x402000,
		.build_id = {0xde, 0xad, 0xbe, 0xef},
		.build_id_len = 4,
		.is_exe = true,
	};
	ck_assert_no_error(hd_target_add_module(t, &m));
	struct hd_module lib = {
		.name = "/nonexistent/heapdom-test/libx.so",
		.bias = 0x7f0000000000,
		.start = 0x7f0000000000,
		.end = 0x7f0000010000,
	};
	ck_assert_no_error(hd_target_add_module(t, &lib));
	struct hd_module bad = lib;
	bad.end = bad.start;
	ck_assert_error(hd_target_add_module(t, &bad), HD_ERROR_INVALID);
	bad.end = bad.start - 1;
	ck_assert_error(hd_target_add_module(t, &bad), HD_ERROR_INVALID);

	ck_assert_uint_eq(hd_target_num_modules(t), 2);
	const struct hd_module *got = hd_target_module(t, 0);
	ck_assert_str_eq(got->name, m.name);
	ck_assert(got->is_exe);
	ck_assert_uint_eq(got->bias, 0x400000);
	ck_assert_uint_eq(got->build_id_len, 4);
	ck_assert_mem_eq(got->build_id, m.build_id, 4);
	ck_assert(!hd_target_module(t, 1)->is_exe);
	ck_assert_ptr_eq(hd_target_find_module(t, 0x401fff), got);
	ck_assert_ptr_null(hd_target_find_module(t, 0x402000));
	ck_assert_ptr_eq(hd_target_find_module(t, 0x7f0000000000),
			 hd_target_module(t, 1));
	hd_target_destroy(t);
	free(fm);
}
END_TEST

START_TEST(test_callback_view_auxv)
{
	struct fake_mem *fm = fake_mem_new();
	struct hd_target *t = callback_target(fm);
	struct hd_view view;
	ck_assert_no_error(hd_target_view(t, REGION_B + 16, 256, &view));
	ck_assert_uint_eq(view.addr, REGION_B + 16);
	ck_assert_uint_eq(view.len, 256);
	// No zero-copy path for a callback target.
	ck_assert_ptr_nonnull(view.owned);
	ck_assert_mem_eq(view.data, &fm->data[1][16], 256);
	hd_view_deinit(&view);
	ck_assert_ptr_null(view.data);

	ck_assert_error(hd_target_view(t, REGION_B + REGION_SIZE - 4, 8, &view),
			HD_ERROR_FAULT);

	uint64_t v = 12345;
	ck_assert(!hd_target_auxv(t, AT_PHDR, &v));
	ck_assert(!hd_target_auxv(t, AT_PAGESZ, &v));
	ck_assert_uint_eq(v, 12345);
	hd_target_destroy(t);
	free(fm);
}
END_TEST

// A view's length from corrupt data (a heap segment 0x3a3a...3bd8 bytes
// long, found by fuzz_heap) is refused as memory the target does not
// have, before anything is allocated for it.
START_TEST(test_view_beyond_mappings)
{
	struct fake_mem *fm = fake_mem_new();
	struct hd_target *t = callback_target(fm);
	const struct hd_mapping m = {.start = REGION_B, .end = REGION_B + REGION_SIZE,
				     .prot = HD_PROT_READ | HD_PROT_WRITE, .readable = true};
	ck_assert_no_error(hd_target_add_mapping(t, &m));
	struct hd_view view;
	ck_assert_no_error(hd_target_view(t, REGION_B, REGION_SIZE, &view));
	hd_view_deinit(&view);
	struct hd_error *err = hd_target_view(t, REGION_B, 1ULL << 44, &view);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FAULT);
	ck_assert_ptr_nonnull(strstr(err->message, "is not mapped"));
	ck_assert(err->has_address);
	ck_assert_uint_eq(err->address, REGION_B + REGION_SIZE);
	hd_error_destroy(err);
	hd_target_destroy(t);
	free(fm);
}
END_TEST

// ------------------------------------------------------------ live

#define MARKER "heapdom-test-marker:0123456789abcdef"

static volatile uint64_t spin_counter;

struct child {
	pid_t pid;
	uint64_t marker_addr;
	uint64_t counter_addr;
};

enum child_kind {
	CHILD_SLEEP,      // main thread sleeps
	CHILD_THREADS,    // plus a sleeping thread and a spinning thread
	CHILD_LEADER_EXIT, // the threads of CHILD_THREADS; main thread exits
};

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	for (;;)
		spin_counter++;
	return NULL;
}

static _Noreturn void child_main(int fd, enum child_kind kind)
{
	// Never outlive a failed test.
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	char *buf = malloc(4096);
	if (!buf)
		_exit(1);
	memset(buf, 0xa5, 4096);
	memcpy(buf, MARKER, sizeof(MARKER));
#ifdef __SANITIZE_ADDRESS__
	// ASan's malloc does not use brk: make a [heap] all the same.
	if (sbrk(4096) == (void *)-1)
		_exit(1);
#endif
	if (kind != CHILD_SLEEP) {
		pthread_t th;
		if (pthread_create(&th, NULL, sleeper, NULL) ||
		    pthread_create(&th, NULL, spinner, NULL))
			_exit(1);
	}
	uint64_t msg[2] = {(uintptr_t)buf, (uintptr_t)&spin_counter};
	if (write(fd, msg, sizeof(msg)) != sizeof(msg))
		_exit(1);
	close(fd);
	if (kind == CHILD_LEADER_EXIT)
		pthread_exit(NULL);
	for (;;)
		pause();
}

static struct child spawn_child(enum child_kind kind)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	struct child c = {0};
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		close(fds[0]);
		child_main(fds[1], kind);
	}
	close(fds[1]);
	uint64_t msg[2];
	ck_assert_int_eq(read(fds[0], msg, sizeof(msg)), sizeof(msg));
	close(fds[0]);
	c.marker_addr = msg[0];
	c.counter_addr = msg[1];
	return c;
}

static void reap_child(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

// The state letter of /proc/PID[/task/TID]/status, 0 if unreadable.
static char task_state(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid,
			 tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char state = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "State: %c", &state) == 1)
			break;
	}
	fclose(f);
	return state;
}

// Waits up to a second for the process to leave (or reach) state.
static char wait_state(pid_t pid, char state, bool want)
{
	char s = 0;
	for (int i = 0; i < 200; i++) {
		s = task_state(pid, 0);
		if ((s == state) == want)
			break;
		sleep_ms(5);
	}
	return s;
}

static struct hd_target *attach(pid_t pid)
{
	struct hd_target *t = NULL;
	ck_assert_no_error(hd_target_attach_pid(pid, NULL, &t));
	ck_assert_ptr_nonnull(t);
	return t;
}

static const char *exe_basename(void)
{
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	const char *slash = strrchr(exe, '/');
	return slash ? slash + 1 : exe;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

START_TEST(test_live_attach)
{
	struct child c = spawn_child(CHILD_SLEEP);
	struct hd_target *t = attach(c.pid);
	char name[32];
	snprintf(name, sizeof(name), "pid %d", c.pid);
	ck_assert_str_eq(hd_target_kind(t), "live");
	ck_assert_str_eq(hd_target_name(t), name);
	ck_assert_int_eq(task_state(c.pid, 0), 't');

	char buf[sizeof(MARKER)];
	ck_assert_no_error(hd_target_read(t, c.marker_addr, buf, sizeof(buf)));
	ck_assert_str_eq(buf, MARKER);
	struct hd_view view;
	ck_assert_no_error(hd_target_view(t, c.marker_addr, 4096, &view));
	ck_assert_mem_eq(view.data, MARKER, sizeof(MARKER));
	ck_assert_uint_eq(view.data[4095], 0xa5);
	hd_view_deinit(&view);

	ck_assert_uint_ge(hd_target_num_threads(t), 1);
	const struct hd_thread *th = hd_target_thread(t, 0);
	ck_assert_int_eq(th->tid, c.pid);
	ck_assert(th->has_regs);
	ck_assert_uint_ne(th->regs.rsp, 0);
	ck_assert_uint_ne(th->regs.rip, 0);
	// The stack pointer lies in readable, writable memory.
	const struct hd_mapping *sm = hd_target_find_mapping(t, th->regs.rsp);
	ck_assert_ptr_nonnull(sm);
	ck_assert(sm->readable && (sm->prot & HD_PROT_WRITE));

	const struct hd_mapping *heap = NULL;
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		if (i > 0)
			ck_assert_uint_le(hd_target_mapping(t, i - 1)->end,
					  m->start);
		if (m->path && !strcmp(m->path, "[heap]"))
			heap = m;
		if (m->path && !strncmp(m->path, "[vvar", 5))
			ck_assert(!m->readable);
		if (m->path)
			ck_assert(!ends_with(m->path, " (deleted)"));
	}
	ck_assert_ptr_nonnull(heap);
	ck_assert(heap->readable);
	ck_assert(heap->prot & HD_PROT_READ);
	ck_assert(heap->prot & HD_PROT_WRITE);
#ifndef __SANITIZE_ADDRESS__
	ck_assert_ptr_eq(hd_target_find_mapping(t, c.marker_addr), heap);
#endif

	const char *base = exe_basename();
	bool found_exe = false;
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (ends_with(m->name, base) && m->is_exe)
			found_exe = true;
	}
	ck_assert_msg(found_exe, "no executable module ending in %s", base);

	uint64_t v;
	ck_assert(hd_target_auxv(t, AT_PAGESZ, &v));
	ck_assert_uint_eq(v, getauxval(AT_PAGESZ));

	// Page 0 is never mapped.
	struct hd_error *err = hd_target_read(t, 8, buf, 8);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FAULT);
	ck_assert_uint_eq(err->address, 8);
	hd_error_destroy(err);
	// A read running off the end of the heap names the first byte past
	// it, when nothing is mapped there.
	if (!hd_target_find_mapping(t, heap->end)) {
		err = hd_target_read(t, heap->end - 8, buf, 16);
		ck_assert_ptr_nonnull(err);
		ck_assert_int_eq(err->code, HD_ERROR_FAULT);
		ck_assert_uint_eq(err->address, heap->end);
		hd_error_destroy(err);
	}

	// Only a callback target takes descriptions.
	struct hd_mapping m = {.start = 0x1000, .end = 0x2000};
	ck_assert_error(hd_target_add_mapping(t, &m), HD_ERROR_INVALID);

	hd_target_destroy(t);
	ck_assert_int_ne(wait_state(c.pid, 't', false), 't');
	ck_assert_int_ne(task_state(c.pid, 0), 0);
	reap_child(&c);
}
END_TEST

START_TEST(test_live_threads)
{
	struct child c = spawn_child(CHILD_THREADS);
	struct hd_target *t = attach(c.pid);
	ck_assert_uint_eq(hd_target_num_threads(t), 3);
	ck_assert_int_eq(hd_target_thread(t, 0)->tid, c.pid);
	for (size_t i = 0; i < 3; i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		ck_assert(th->has_regs);
		ck_assert_uint_ne(th->regs.rsp, 0);
		ck_assert_uint_ne(th->regs.rip, 0);
		ck_assert_int_eq(task_state(c.pid, th->tid), 't');
		for (size_t j = 0; j < i; j++)
			ck_assert_int_ne(hd_target_thread(t, j)->tid, th->tid);
	}
	// The spinning thread is stopped too.
	uint64_t before, after;
	ck_assert_no_error(hd_target_read_u64(t, c.counter_addr, &before));
	sleep_ms(50);
	ck_assert_no_error(hd_target_read_u64(t, c.counter_addr, &after));
	ck_assert_uint_eq(before, after);
	hd_target_destroy(t);

	// And runs again once released.
	ck_assert_int_ne(wait_state(c.pid, 't', false), 't');
	sleep_ms(50);
	t = attach(c.pid);
	ck_assert_no_error(hd_target_read_u64(t, c.counter_addr, &after));
	ck_assert_uint_gt(after, before);
	hd_target_destroy(t);
	reap_child(&c);
}
END_TEST

START_TEST(test_live_leader_exited)
{
	struct child c = spawn_child(CHILD_LEADER_EXIT);
	ck_assert_int_eq(wait_state(c.pid, 'Z', true), 'Z');
	struct hd_target *t = attach(c.pid);
	// The zombie main thread cannot be traced; the others are.
	ck_assert_uint_eq(hd_target_num_threads(t), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert_int_ne(hd_target_thread(t, i)->tid, c.pid);
	char buf[sizeof(MARKER)];
	ck_assert_no_error(hd_target_read(t, c.marker_addr, buf, sizeof(buf)));
	ck_assert_str_eq(buf, MARKER);
	hd_target_destroy(t);
	reap_child(&c);
}
END_TEST

START_TEST(test_live_busy)
{
	struct child c = spawn_child(CHILD_SLEEP);
	struct hd_target *t = attach(c.pid);
	struct hd_target *t2 = NULL;
	struct hd_error *err = hd_target_attach_pid(c.pid, NULL, &t2);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_BUSY);
	ck_assert_ptr_null(t2);
	hd_error_destroy(err);
	// The failed attach disturbed nothing.
	ck_assert_int_eq(task_state(c.pid, 0), 't');
	char buf[sizeof(MARKER)];
	ck_assert_no_error(hd_target_read(t, c.marker_addr, buf, sizeof(buf)));
	hd_target_destroy(t);
	ck_assert_int_ne(wait_state(c.pid, 't', false), 't');
	t = attach(c.pid);
	hd_target_destroy(t);
	reap_child(&c);
}
END_TEST

START_TEST(test_live_bad_pid)
{
	struct hd_target *t = NULL;
	// No pid is above pid_max.
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	ck_assert_ptr_nonnull(f);
	int pid_max = 0;
	ck_assert_int_eq(fscanf(f, "%d", &pid_max), 1);
	fclose(f);
	struct hd_error *err = hd_target_attach_pid(pid_max + 1, NULL, &t);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err->message, "does not exist"));
	hd_error_destroy(err);
	ck_assert_error(hd_target_attach_pid(0, NULL, &t), HD_ERROR_INVALID);
	ck_assert_error(hd_target_attach_pid(-1, NULL, &t), HD_ERROR_INVALID);
	ck_assert_error(hd_target_attach_pid(getpid(), NULL, &t),
			HD_ERROR_INVALID);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_live_group_stopped)
{
	// A process stopped by the user stays stopped after analysis.
	struct child c = spawn_child(CHILD_SLEEP);
	kill(c.pid, SIGSTOP);
	ck_assert_int_eq(wait_state(c.pid, 'T', true), 'T');
	struct hd_target *t = attach(c.pid);
	char buf[sizeof(MARKER)];
	ck_assert_no_error(hd_target_read(t, c.marker_addr, buf, sizeof(buf)));
	ck_assert_str_eq(buf, MARKER);
	hd_target_destroy(t);
	ck_assert_int_eq(wait_state(c.pid, 'T', true), 'T');
	sleep_ms(20);
	ck_assert_int_eq(task_state(c.pid, 0), 'T');
	kill(c.pid, SIGCONT);
	ck_assert_int_ne(wait_state(c.pid, 'T', false), 'T');
	reap_child(&c);
}
END_TEST

START_TEST(test_live_signal_detach)
{
	struct child c = spawn_child(CHILD_THREADS);
	struct hd_target *t = attach(c.pid);
	ck_assert_int_eq(task_state(c.pid, 0), 't');
	hd_live_detach_all_for_signal();
	ck_assert_int_ne(wait_state(c.pid, 't', false), 't');
	for (size_t i = 0; i < hd_target_num_threads(t); i++)
		ck_assert_int_ne(task_state(c.pid, hd_target_thread(t, i)->tid),
				 't');
	// Destroying after the emergency detach is harmless, and frees
	// the process for another attach.
	hd_target_destroy(t);
	t = attach(c.pid);
	ck_assert_uint_eq(hd_target_num_threads(t), 3);
	hd_target_destroy(t);
	reap_child(&c);
}
END_TEST

// Containers often forbid ptrace; say so rather than fail on it.
static bool ptrace_works(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	bool ok = ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
	return ok;
}

int main(void)
{
	Suite *s = suite_create("target");
	TCase *tc = tcase_create("callback");
	tcase_add_test(tc, test_callback_read);
	tcase_add_test(tc, test_callback_null_read);
	tcase_add_test(tc, test_callback_mappings);
	tcase_add_test(tc, test_callback_threads_modules);
	tcase_add_test(tc, test_callback_view_auxv);
	tcase_add_test(tc, test_view_beyond_mappings);
	suite_add_tcase(s, tc);

	tc = tcase_create("live");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_live_bad_pid);
	if (ptrace_works()) {
		tcase_add_test(tc, test_live_attach);
		tcase_add_test(tc, test_live_threads);
		tcase_add_test(tc, test_live_leader_exited);
		tcase_add_test(tc, test_live_busy);
		tcase_add_test(tc, test_live_group_stopped);
		tcase_add_test(tc, test_live_signal_detach);
	} else {
		fprintf(stderr,
			"test_target: ptrace is not permitted here, live attach tests skipped\n");
	}
	suite_add_tcase(s, tc);

	int failed = hd_run_suite(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
