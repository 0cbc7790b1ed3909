// `heapdom sample`: the ptrace loop. Every round interrupts all sampled
// threads at once (PTRACE_INTERRUPT of seized threads: no signal the
// process could see), then for each stopped thread reads its registers
// and the code at its PC, decodes the memory access there, and resumes
// them all. Batching keeps the time the process is stopped to one window
// per round rather than one per thread.
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sample/decode.h"
#include "sample/sampler.h"
#include "target/live.h"
#include "util/vec.h"

#define DEFAULT_DURATION 5.0
#define DEFAULT_HZ 100
#define DEFAULT_GRANULARITY 64
#define DEFAULT_TOP 10
#define MAX_DURATION 86400.0
#define MAX_NEAREST 64
// Memory bound: 40 bytes a sample, 400 MiB at most.
#define MAX_SAMPLES (10u * 1000 * 1000)
// How long one round waits for its threads to stop; a thread blocked in
// the kernel (state D) is skipped this round and waited for in the next.
#define ROUND_STOP_TIMEOUT_NS (50 * 1000000LL)
// At the end every thread must stop once more to be detached.
#define FINAL_STOP_TIMEOUT_NS (2000 * 1000000LL)
// Rounds in a row slower than their period before the rate is lowered:
// one slow round (page faults of the first decode) is no trend.
#define SLOW_ROUNDS 3

#define DEFAULT_MAX_STOPPED 10.0
// The stopped share is judged over windows of this length.
#define STOP_WINDOW_NS 500000000LL

static atomic_int sample_stop_requested;

void hd_sample_stop(void)
{
	atomic_store(&sample_stop_requested, 1);
}

// ---------------------------------------------------------------- options

static struct hd_error *parse_u64(const char *opt, const char *v,
				  uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || end == v || *end || *v == '-')
		return hd_error_create(HD_ERROR_INVALID,
				       "%s takes a number, not '%s'", opt, v);
	*ret = x;
	return NULL;
}

// "A-B" (each decimal or 0x hex): [A, B).
static struct hd_error *parse_range(const char *opt, const char *v,
				    uint64_t *lo, uint64_t *hi)
{
	const char *dash = strchr(v, '-');
	char a[64];
	if (!dash || dash == v || (size_t)(dash - v) >= sizeof(a))
		return hd_error_create(HD_ERROR_INVALID,
				       "%s takes a range A-B, not '%s'", opt, v);
	memcpy(a, v, dash - v);
	a[dash - v] = '\0';
	struct hd_error *err = parse_u64(opt, a, lo);
	if (!err)
		err = parse_u64(opt, dash + 1, hi);
	if (err) {
		hd_error_destroy(err);
		return hd_error_create(HD_ERROR_INVALID,
				       "%s takes a range A-B of addresses, not '%s'",
				       opt, v);
	}
	if (*lo >= *hi)
		return hd_error_create(HD_ERROR_INVALID,
				       "%s %s is empty: A must be below B", opt,
				       v);
	return NULL;
}

static struct hd_error *parse_threads(const char *v,
				      struct hd_sample_options *o)
{
	const char *p = v;
	while (*p) {
		char *end;
		errno = 0;
		long tid = strtol(p, &end, 10);
		if (errno || end == p || tid <= 0 || tid > INT32_MAX ||
		    (*end && *end != ','))
			return hd_error_create(HD_ERROR_INVALID,
					       "--threads takes thread ids separated by commas, not '%s'",
					       v);
		if (o->num_threads == HD_SAMPLE_MAX_THREADS)
			return hd_error_create(HD_ERROR_INVALID,
					       "--threads: at most %d threads",
					       HD_SAMPLE_MAX_THREADS);
		o->threads[o->num_threads++] = (int)tid;
		p = *end ? end + 1 : end;
	}
	if (!o->num_threads)
		return hd_error_create(HD_ERROR_INVALID,
				       "--threads needs at least one thread id");
	return NULL;
}

struct hd_error *hd_sample_parse(int argc, char *const *argv,
				 struct hd_sample_options *ret)
{
	struct hd_sample_options *o = ret;
	memset(o, 0, sizeof(*o));
	o->pid = -1;
	o->duration = DEFAULT_DURATION;
	o->hz = DEFAULT_HZ;
	o->granularity = DEFAULT_GRANULARITY;
	o->top = DEFAULT_TOP;
	o->format = HD_FORMAT_TEXT;
	o->max_stopped = DEFAULT_MAX_STOPPED;
	if (argc < 1 || strcmp(argv[0], "sample") != 0)
		return hd_error_create(HD_ERROR_INVALID,
				       "not a sample command");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		static const char *const valued[] = {
			"--duration", "--hz", "--threads", "--pc-range",
			"--addr-range", "--nearest", "--granularity", "--top",
			"--format", "--output", "--max-stopped"};
		bool takes = false;
		for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
			takes |= !strcmp(a, valued[k]);
		if (takes) {
			if (i + 1 >= argc)
				return hd_error_create(HD_ERROR_INVALID,
						       "%s needs a value", a);
			v = argv[++i];
		}
		struct hd_error *err = NULL;
		uint64_t x;
		if (!strcmp(a, "--duration")) {
			char *end;
			double d = strtod(v, &end);
			if (end == v || *end || !(d > 0) || d > MAX_DURATION)
				return hd_error_create(HD_ERROR_INVALID,
						       "--duration takes seconds (0 < S <= %.0f), not '%s'",
						       MAX_DURATION, v);
			o->duration = d;
		} else if (!strcmp(a, "--hz")) {
			err = parse_u64(a, v, &x);
			if (!err && x == 0)
				err = hd_error_create(HD_ERROR_INVALID,
						      "--hz must be at least 1");
			// The cap is applied (and said) by hd_sample_run.
			o->hz = x > UINT32_MAX ? UINT32_MAX : (unsigned)x;
		} else if (!strcmp(a, "--threads")) {
			err = parse_threads(v, o);
		} else if (!strcmp(a, "--pc-range")) {
			err = parse_range(a, v, &o->pc_lo, &o->pc_hi);
			o->has_pc_range = true;
		} else if (!strcmp(a, "--addr-range")) {
			err = parse_range(a, v, &o->addr_lo, &o->addr_hi);
			o->has_addr_range = true;
		} else if (!strcmp(a, "--nearest")) {
			err = parse_u64(a, v, &x);
			if (!err && x > MAX_NEAREST)
				err = hd_error_create(HD_ERROR_INVALID,
						      "--nearest: at most %d instructions",
						      MAX_NEAREST);
			o->nearest = (unsigned)x;
		} else if (!strcmp(a, "--granularity")) {
			err = parse_u64(a, v, &x);
			if (!err && x == 0)
				err = hd_error_create(HD_ERROR_INVALID,
						      "--granularity must be at least 1 byte");
			o->granularity = x;
		} else if (!strcmp(a, "--top")) {
			err = parse_u64(a, v, &x);
			if (!err && x == 0)
				err = hd_error_create(HD_ERROR_INVALID,
						      "--top must be at least 1");
			o->top = (size_t)x;
		} else if (!strcmp(a, "--format")) {
			if (!strcmp(v, "json"))
				o->format = HD_FORMAT_JSON;
			else if (!strcmp(v, "text"))
				o->format = HD_FORMAT_TEXT;
			else
				err = hd_error_create(HD_ERROR_INVALID,
						      "sample: --format is text or json, not '%s'",
						      v);
		} else if (!strcmp(a, "--json")) {
			o->format = HD_FORMAT_JSON;
		} else if (!strcmp(a, "--live")) {
			o->live = true;
		} else if (!strcmp(a, "--max-stopped")) {
			char *end;
			double d = strtod(v, &end);
			if (end == v || *end || !(d > 0) || d > 100)
				return hd_error_create(HD_ERROR_INVALID,
						       "--max-stopped takes a percentage (0 < P <= 100), not '%s'",
						       v);
			o->max_stopped = d;
		} else if (!strcmp(a, "--output")) {
			o->output = v;
		} else {
			err = hd_error_create(HD_ERROR_INVALID,
					      "sample: unknown option '%s'", a);
		}
		if (err)
			return err;
	}
	return NULL;
}

// ---------------------------------------------------------------- threads

enum sthread_state {
	ST_RUNNING,
	ST_ASKED,   // interrupted, stop not yet seen
	ST_STOPPED, // in a ptrace-stop
	ST_GONE,
};

struct sthread {
	int tid;
	int slot;     // registry slot
	enum sthread_state state;
	bool group;   // in a group-stop: resumed with PTRACE_LISTEN
	size_t stats; // index into r->threads
};

struct sampler {
	const struct hd_sample_options *o;
	struct hd_samples *r;
	struct hd_decoder *dec;
	int mem_fd;
	struct sthread *th;
	size_t num_th, cap_th;
	bool execed; // a thread stopped at PTRACE_EVENT_EXEC
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void note(struct hd_samples *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct hd_samples *r, const char *fmt, ...)
{
	size_t n = strlen(r->notes);
	if (n && n + 2 < sizeof(r->notes)) {
		strcpy(r->notes + n, "; ");
		n += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->notes + n, sizeof(r->notes) - n, fmt, ap);
	va_end(ap);
}

static bool wanted(const struct hd_sample_options *o, int tid)
{
	if (!o->num_threads)
		return true;
	for (size_t i = 0; i < o->num_threads; i++)
		if (o->threads[i] == tid)
			return true;
	return false;
}

static bool known(const struct sampler *sp, int tid)
{
	for (size_t i = 0; i < sp->num_th; i++)
		if (sp->th[i].tid == tid)
			return true;
	return false;
}

static struct hd_error *seize(struct sampler *sp, int tid)
{
	struct hd_samples *r = sp->r;
	// Room first: once seized, a thread must be recorded to be let go.
	if (!hd_vec_reserve((void **)&sp->th, &sp->cap_th, sp->num_th,
			    sizeof(*sp->th), sp->num_th + 1) ||
	    !hd_vec_reserve((void **)&r->threads, &r->cap_threads,
			    r->num_threads, sizeof(*r->threads),
			    r->num_threads + 1))
		return &hd_error_no_memory;
	struct sthread *t = &sp->th[sp->num_th++];
	*t = (struct sthread){.tid = tid, .slot = -1, .state = ST_GONE};
	bool seized;
	struct hd_error *err = hd_live_seize(r->pid, tid, &seized);
	if (err || !seized)
		return err;
	t->state = ST_RUNNING;
	t->slot = hd_live_register(tid);
	t->stats = r->num_threads++;
	r->threads[t->stats] = (struct hd_sample_thread){.tid = tid};
	return NULL;
}

// Seizes the threads of /proc/PID/task not seen before (threads created
// since the last round); *alive: whether the process still has threads.
static struct hd_error *seize_new(struct sampler *sp, bool *alive)
{
	int *tids;
	size_t n;
	struct hd_error *err = hd_live_threads(sp->r->pid, &tids, &n);
	*alive = !err || err->code != HD_ERROR_NOT_FOUND;
	if (err) {
		if (*alive)
			return err;
		hd_error_destroy(err);
		return NULL;
	}
	for (size_t i = 0; i < n && !err; i++)
		if (!known(sp, tids[i]) && wanted(sp->o, tids[i]))
			err = seize(sp, tids[i]);
	free(tids);
	return err;
}

static void gone(struct sthread *t)
{
	t->state = ST_GONE;
	hd_live_unregister(t->slot);
	t->slot = -1;
}

// Waits until every ST_ASKED thread has stopped, exited, or the deadline
// passed. A signal arriving meanwhile stops its thread first
// (signal-delivery-stop): it is handed back at once and the interrupt's
// own stop waited for, so the process loses no signal.
static void wait_stops(struct sampler *sp, int64_t timeout_ns)
{
	int64_t deadline = now_ns() + timeout_ns;
	long delay_ns = 10000;
	for (;;) {
		bool pending = false, progress = false;
		for (size_t i = 0; i < sp->num_th; i++) {
			struct sthread *t = &sp->th[i];
			if (t->state != ST_ASKED)
				continue;
			int status;
			pid_t w = waitpid(t->tid, &status, __WALL | WNOHANG);
			if (w < 0 && errno == EINTR) {
				pending = true;
				continue;
			}
			if (w < 0) { // ECHILD: no longer ours
				gone(t);
				continue;
			}
			if (w == 0) {
				pending = true;
				continue;
			}
			progress = true;
			if (!WIFSTOPPED(status)) {
				gone(t);
				continue;
			}
			int event = status >> 16;
			int sig = WSTOPSIG(status);
			if (event == PTRACE_EVENT_EXEC) {
				// The process executed another program
				// (threads are seized with
				// PTRACE_O_TRACEEXEC): stopped there, it
				// is detached by release_all.
				sp->execed = true;
				t->group = false;
				t->state = ST_STOPPED;
				continue;
			}
			if (event == 0) {
				// A signal: deliver it, the interrupt
				// still stops the thread afterwards.
				if (ptrace(PTRACE_CONT, t->tid, NULL,
					   (void *)(long)sig) < 0)
					gone(t);
				pending = true;
				continue;
			}
			t->group = event == PTRACE_EVENT_STOP &&
				   (sig == SIGSTOP || sig == SIGTSTP ||
				    sig == SIGTTIN || sig == SIGTTOU);
			t->state = ST_STOPPED;
		}
		if (!pending || now_ns() >= deadline)
			return;
		if (progress) {
			delay_ns = 10000;
			continue;
		}
		struct timespec ts = {0, delay_ns};
		nanosleep(&ts, NULL);
		if (delay_ns < 1000000)
			delay_ns *= 2;
	}
}

static void interrupt_all(struct sampler *sp)
{
	for (size_t i = 0; i < sp->num_th; i++) {
		struct sthread *t = &sp->th[i];
		if (t->state != ST_RUNNING)
			continue;
		// ESRCH: exiting; the wait sees it go.
		ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
		t->state = ST_ASKED;
	}
}

static void resume_all(struct sampler *sp)
{
	for (size_t i = 0; i < sp->num_th; i++) {
		struct sthread *t = &sp->th[i];
		if (t->state != ST_STOPPED)
			continue;
		// A thread in a group-stop stays stopped (job control) until
		// SIGCONT; PTRACE_LISTEN lets that SIGCONT wake it.
		long r = ptrace(t->group ? PTRACE_LISTEN : PTRACE_CONT, t->tid,
				NULL, NULL);
		// ESRCH: killed in its stop (another thread exited the
		// process or executed a program). It stays a zombie until
		// this tracer reaps it, and an exec waits for that: the
		// next wait_stops reaps it.
		t->state = r < 0 && errno == ESRCH ? ST_ASKED : ST_RUNNING;
	}
}

// ---------------------------------------------------------------- samples

static bool in_range(uint64_t x, uint64_t lo, uint64_t hi)
{
	return x >= lo && x < hi;
}

static bool push_sample(struct hd_samples *r, const struct hd_sample *s)
{
	if (r->num_samples >= MAX_SAMPLES) {
		r->truncated = true;
		return false;
	}
	return HD_VEC_PUSH(r->samples, r->num_samples, r->cap_samples, *s);
}

// One stopped thread: its registers, the code at its PC, the access.
static struct hd_error *take_sample(struct sampler *sp, struct sthread *t)
{
	const struct hd_sample_options *o = sp->o;
	struct hd_samples *r = sp->r;
	struct hd_sample_thread *st = &r->threads[t->stats];
	struct user_regs_struct ur;
	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &ur) < 0) {
		if (errno == ESRCH) {
			// Killed meanwhile: reaped by the next wait.
			t->state = ST_ASKED;
			return NULL;
		}
		return hd_error_os(errno, NULL,
				   "cannot read the registers of thread %d",
				   t->tid);
	}
	struct hd_regs regs;
	memcpy(&regs, &ur, sizeof(regs));
	r->taken++;
	st->taken++;
	uint64_t pc = regs.rip;
	if (o->has_pc_range && !in_range(pc, o->pc_lo, o->pc_hi)) {
		st->filtered++;
		return NULL;
	}
	// One instruction is at most 15 bytes; the nearest method needs
	// room for the ones after it.
	uint8_t code[16 + 15 * MAX_NEAREST];
	size_t want = o->nearest ? 16 + 15 * (size_t)o->nearest : 16;
	ssize_t got;
	do
		got = pread(sp->mem_fd, code, want, (off_t)pc);
	while (got < 0 && errno == EINTR);
	if (got <= 0) {
		st->failed++;
		return NULL;
	}
	struct hd_access acc[HD_ACCESS_MAX];
	size_t n = 0;
	uint64_t insn_pc = pc;
	bool approx = false;
	struct hd_error *err =
		o->nearest ? hd_decode_nearest(sp->dec, code, (size_t)got, pc,
					       &regs, o->nearest, acc,
					       HD_ACCESS_MAX, &n, &insn_pc,
					       &approx)
			   : hd_decode_accesses(sp->dec, code, (size_t)got, pc,
						&regs, acc, HD_ACCESS_MAX, &n,
						NULL);
	if (err) {
		// Bytes that are no instruction: JIT code being written,
		// or data executed by mistake. Counted, not fatal.
		hd_error_destroy(err);
		st->failed++;
		return NULL;
	}
	if (n > HD_ACCESS_MAX)
		n = HD_ACCESS_MAX;
	struct hd_sample s = {.tid = t->tid, .pc = pc, .insn_pc = insn_pc};
	if (n) {
		// One access per sample: the operand the instruction spells
		// out rather than its implicit stack access.
		size_t k = 0;
		while (k < n && acc[k].implicit)
			k++;
		if (k == n)
			k = 0;
		s.addr = acc[k].addr;
		s.size = acc[k].size;
		s.flags = HD_SAMPLE_ACCESS |
			  (acc[k].write ? HD_SAMPLE_WRITE : 0) |
			  (acc[k].implicit ? HD_SAMPLE_IMPLICIT : 0) |
			  (approx ? HD_SAMPLE_APPROXIMATE : 0);
	}
	if (o->has_addr_range &&
	    (!n || !in_range(s.addr, o->addr_lo, o->addr_hi))) {
		st->filtered++;
		return NULL;
	}
	if (!push_sample(r, &s))
		return r->truncated ? NULL : &hd_error_no_memory;
	if (n)
		st->accesses++;
	else
		st->no_access++;
	return NULL;
}

// Stops every thread one last time and detaches it: the process runs on
// untraced. A thread that does not stop in time stays traced until this
// process exits, when the kernel lets it go.
static void release_all(struct sampler *sp)
{
	interrupt_all(sp);
	wait_stops(sp, FINAL_STOP_TIMEOUT_NS);
	for (size_t i = 0; i < sp->num_th; i++) {
		struct sthread *t = &sp->th[i];
		if (t->state == ST_STOPPED)
			ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
		if (t->state != ST_GONE)
			gone(t);
	}
}

static bool any_alive(const struct sampler *sp)
{
	for (size_t i = 0; i < sp->num_th; i++)
		if (sp->th[i].state != ST_GONE)
			return true;
	return false;
}

static void sleep_until(int64_t t)
{
	struct timespec ts = {t / 1000000000, t % 1000000000};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR) {
		if (atomic_load(&sample_stop_requested))
			return;
	}
}

// Whether the process executed another program: a thread stopped at the
// exec, or (the thread that executed was not sampled, --threads) the
// memory file opened at the start says its address space is gone (a read
// returns nothing, where an unmapped address of a live one fails) while
// the process lives on.
static bool execed(struct sampler *sp)
{
	if (sp->execed)
		return true;
	char c;
	ssize_t n;
	do
		n = pread(sp->mem_fd, &c, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == 0 && hd_live_running_thread(sp->r->pid);
}

// The loop proper; the threads are released by the caller whatever it
// returns.
static struct hd_error *sample_loop(struct sampler *sp)
{
	const struct hd_sample_options *o = sp->o;
	struct hd_samples *r = sp->r;
	int64_t start = now_ns();
	int64_t end = start + (int64_t)(o->duration * 1e9);
	int64_t next = start;
	unsigned slow = 0;
	int64_t window = start, window_stopped = 0, last_live = start;
	r->started = (int64_t)time(NULL);
	for (;;) {
		if (atomic_load(&sample_stop_requested)) {
			r->interrupted = true;
			break;
		}
		int64_t round = now_ns();
		if (round >= end || r->truncated)
			break;
		bool alive;
		struct hd_error *err = seize_new(sp, &alive);
		if (err)
			return err;
		if (!alive || !any_alive(sp)) {
			if (alive && execed(sp))
				break;
			r->exited = true;
			break;
		}
		int64_t t0 = now_ns();
		interrupt_all(sp);
		wait_stops(sp, ROUND_STOP_TIMEOUT_NS);
		// Code read from the new program would be decoded as the
		// old one's: no sample after an exec.
		if (execed(sp))
			break;
		for (size_t i = 0; !err && i < sp->num_th; i++)
			if (sp->th[i].state == ST_STOPPED)
				err = take_sample(sp, &sp->th[i]);
		resume_all(sp);
		int64_t t1 = now_ns();
		r->stopped_ns += (uint64_t)(t1 - t0);
		window_stopped += t1 - t0;
		r->rounds++;
		if (err)
			return err;
		if (o->live && t1 - last_live >= 1000000000LL) {
			hd_sample_live_view(stderr, r, o, (t1 - start) / 1e9);
			last_live = t1;
		}
		// The program must keep running: over each window, the share
		// of the time it was stopped stays under --max-stopped.
		if (t1 - window >= STOP_WINDOW_NS) {
			double share = 100.0 * (double)window_stopped / (double)(t1 - window);
			if (share > o->max_stopped && r->hz > 1) {
				unsigned old = r->hz;
				unsigned hz = (unsigned)(old * o->max_stopped / share);
				r->hz = hz < 1 ? 1 : hz < old ? hz : old - 1;
				note(r, "rate lowered from %u to %u Hz: the process was stopped %.0f%% of the time (--max-stopped %.0f%%)",
				     old, r->hz, share, o->max_stopped);
			}
			window = t1;
			window_stopped = 0;
		}
		// A round longer than its period would keep the process
		// stopped most of the time: halve the rate until it fits.
		int64_t period = 1000000000LL / r->hz;
		int64_t took = t1 - round;
		if (took > period && r->hz > 1) {
			if (++slow >= SLOW_ROUNDS) {
				unsigned old = r->hz;
				unsigned hz = (unsigned)(500000000LL / took);
				r->hz = hz < 1 ? 1 : hz < old ? hz : old / 2;
				note(r, "rate lowered from %u to %u Hz: a round took %.2f ms",
				     old, r->hz, took / 1e6);
				period = 1000000000LL / r->hz;
				slow = 0;
			}
		} else {
			slow = 0;
		}
		next += period;
		int64_t now = now_ns();
		// Behind schedule (the process was slow to stop): start
		// afresh rather than firing rounds back to back.
		if (next < now)
			next = now;
		sleep_until(next < end ? next : end);
	}
	return NULL;
}

static struct hd_error *check_threads(const struct hd_sample_options *o)
{
	for (size_t i = 0; i < o->num_threads; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task/%d", o->pid,
			 o->threads[i]);
		if (access(path, F_OK) != 0)
			return hd_error_create(HD_ERROR_NOT_FOUND,
					       "--threads: %d is not a thread of process %d",
					       o->threads[i], o->pid);
	}
	return NULL;
}

struct hd_error *hd_sample_run(const struct hd_sample_options *o,
			       struct hd_samples **ret)
{
	struct hd_error *err = hd_live_check_process(o->pid);
	if (!err)
		err = check_threads(o);
	if (err)
		return err;
	struct hd_samples *r = calloc(1, sizeof(*r));
	if (!r)
		return &hd_error_no_memory;
	r->pid = o->pid;
	r->requested_hz = o->hz;
	r->hz = o->hz ? o->hz : DEFAULT_HZ;
	if (r->hz > HD_SAMPLE_MAX_HZ) {
		note(r, "--hz %u capped at %d Hz", r->hz, HD_SAMPLE_MAX_HZ);
		r->hz = HD_SAMPLE_MAX_HZ;
	}
	struct sampler sp = {.o = o, .r = r, .mem_fd = -1};
	atomic_store(&sample_stop_requested, 0);
	err = hd_decoder_create(&sp.dec);
	if (err)
		goto out;
	bool alive;
	err = seize_new(&sp, &alive);
	if (err)
		goto out;
	if (!any_alive(&sp)) {
		err = hd_error_create(HD_ERROR_NOT_FOUND,
				      "process %d has no thread to sample",
				      o->pid);
		goto out;
	}
	// The memory of the process through a thread that is alive (the
	// leader may be a zombie); the file keeps the address space, so it
	// serves after that thread exits too.
	for (size_t i = 0; sp.mem_fd < 0 && i < sp.num_th; i++) {
		if (sp.th[i].state == ST_GONE)
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", o->pid,
			 sp.th[i].tid);
		sp.mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (sp.mem_fd < 0) {
			err = hd_error_os(errno, path,
					  "cannot open process memory");
			goto out;
		}
	}
	int64_t t0 = now_ns();
	err = sample_loop(&sp);
	r->wall_ns = (uint64_t)(now_ns() - t0);
	if (!err && (sp.execed || execed(&sp))) {
		char when[128];
		snprintf(when, sizeof(when),
			 "while it was sampled (after %" PRIu64
			 " rounds, whose samples are dropped)",
			 r->rounds);
		err = hd_live_exec_error(o->pid, when);
	}
	if (r->truncated)
		note(r, "stopped at %u samples (the limit)", MAX_SAMPLES);
out:
	release_all(&sp);
	if (sp.mem_fd >= 0)
		close(sp.mem_fd);
	free(sp.th);
	hd_decoder_destroy(sp.dec);
	if (err) {
		hd_samples_destroy(r);
		return err;
	}
	*ret = r;
	return NULL;
}

void hd_samples_destroy(struct hd_samples *r)
{
	if (!r)
		return;
	free(r->samples);
	free(r->threads);
	free(r);
}
