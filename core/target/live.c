// Live processes: every thread is stopped with PTRACE_SEIZE + PTRACE_INTERRUPT
// (unlike PTRACE_ATTACH this sends no SIGSTOP the process could observe or
// lose) and memory is read with process_vm_readv, or through /proc/PID/mem
// (opened read-only) where that cannot: the tool never writes to the process.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live.h"
#include "target_internal.h"
#include "util/vec.h"

// struct hd_regs is copied from PTRACE_GETREGS as is.
_Static_assert(sizeof(struct hd_regs) == sizeof(struct user_regs_struct),
	       "struct hd_regs must match user_regs_struct");
_Static_assert(offsetof(struct hd_regs, rip) ==
		       offsetof(struct user_regs_struct, rip) &&
	       offsetof(struct hd_regs, rsp) ==
		       offsetof(struct user_regs_struct, rsp) &&
	       offsetof(struct hd_regs, gs) ==
		       offsetof(struct user_regs_struct, gs),
	       "struct hd_regs must match user_regs_struct");

// How long a thread may take to reach a ptrace-stop. A thread sleeping
// uninterruptibly in the kernel (state D) stops only when it wakes up.
#define LIVE_STOP_TIMEOUT_MS 10000
// On release, threads still running after a failed attach get this long.
#define LIVE_RELEASE_TIMEOUT_MS 1000

// ---------------------------------------------------------------- registry

// Every thread this process has seized, so that a signal handler can let
// them go. The handler may interrupt anything, on any thread, so slots are
// claimed and released with lock-free atomics rather than under a lock.
// When the registry is full a thread simply goes unregistered: the kernel
// still detaches it when this process exits.
#define LIVE_REGISTRY_SLOTS 4096
static _Atomic int live_registry_tid[LIVE_REGISTRY_SLOTS];
static _Atomic int live_registry_sig[LIVE_REGISTRY_SLOTS];
_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
	       "the signal-safe registry needs lock-free int atomics");

static int registry_claim(int tid)
{
	for (int i = 0; i < LIVE_REGISTRY_SLOTS; i++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&live_registry_tid[i],
						   &expected, tid))
			return i;
	}
	return -1;
}

static void registry_set_sig(int slot, int sig)
{
	if (slot >= 0)
		atomic_store(&live_registry_sig[slot], sig);
}

static void registry_release(int slot)
{
	if (slot < 0)
		return;
	// The signal first, so the next owner of the slot starts with none.
	atomic_store(&live_registry_sig[slot], 0);
	atomic_store(&live_registry_tid[slot], 0);
}

void hd_live_detach_all_for_signal(void)
{
	int saved_errno = errno;
	for (int i = 0; i < LIVE_REGISTRY_SLOTS; i++) {
		int tid = atomic_load(&live_registry_tid[i]);
		if (tid <= 0)
			continue;
		long sig = atomic_load(&live_registry_sig[i]);
		// For PTRACE_DETACH glibc's ptrace() is a bare system call.
		// It fails harmlessly (ESRCH) for a thread not yet stopped or
		// already detached.
		ptrace(PTRACE_DETACH, tid, NULL, (void *)sig);
	}
	errno = saved_errno;
}

// ---------------------------------------------------------------- threads

enum live_state {
	LIVE_SEIZED,  // traced, asked to stop, stop not yet seen
	LIVE_STOPPED, // in a ptrace-stop: registers and memory are stable
	LIVE_GONE,    // exited, a zombie, or never attached
};

struct live_thread {
	int tid;
	int slot; // registry slot, or -1
	enum live_state state;
	// A signal the thread was about to receive when it stopped; it is
	// handed back on detach so the process does not lose it.
	int pending_sig;
};

struct live_target {
	int pid;
	// A stopped thread whose /proc/PID/task/TID files describe the
	// process: /proc/PID itself has no memory once the main thread has
	// called pthread_exit() while others run on.
	int proc_tid;
	int mem_fd;
	// process_vm_readv is refused here (seccomp, an old kernel): only
	// /proc/PID/mem is used.
	bool no_vm_readv;
	struct live_thread *threads;
	size_t num_threads, cap_threads;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Reads a whole /proc file (their size is not known in advance). Returns
// 0 or an errno value; *ret is NUL-terminated.
static int read_proc_file(const char *path, char **ret, size_t *len_ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return ENOMEM;
	}
	for (;;) {
		if (cap - len < 2) {
			char *p = realloc(buf, cap * 2);
			if (!p) {
				free(buf);
				close(fd);
				return ENOMEM;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	*ret = buf;
	if (len_ret)
		*len_ret = len;
	return 0;
}

// The state letter of /proc/PID/task/TID/stat (R, S, D, T, t, Z...), or 0
// if the thread is gone.
static char thread_state(int pid, int tid)
{
	char path[64], *buf;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_proc_file(path, &buf, NULL))
		return 0;
	// The command name may contain ')' itself: the state follows the
	// last one.
	char *p = strrchr(buf, ')');
	char state = p && p[1] == ' ' ? p[2] : 0;
	free(buf);
	return state;
}

struct hd_error *hd_live_threads(int pid, int **tids, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	*tids = NULL;
	*n = 0;
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? hd_error_create(HD_ERROR_NOT_FOUND,
							 "process %d is gone", pid)
				       : hd_error_os(errno, path, "cannot list threads");
	size_t cap = 0;
	struct dirent *ent;
	while ((ent = readdir(dir))) {
		char *end;
		long tid = strtol(ent->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		if (!HD_VEC_PUSH(*tids, *n, cap, (int)tid)) {
			closedir(dir);
			free(*tids);
			*tids = NULL;
			*n = 0;
			return &hd_error_no_memory;
		}
	}
	closedir(dir);
	return NULL;
}

// A thread of pid that is neither a zombie nor dead, or 0.
static int running_thread(int pid)
{
	int *tids;
	size_t n;
	struct hd_error *err = hd_live_threads(pid, &tids, &n);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	int found = 0;
	for (size_t i = 0; i < n && !found; i++) {
		char state = thread_state(pid, tids[i]);
		if (state && state != 'Z' && state != 'X')
			found = tids[i];
	}
	free(tids);
	return found;
}

struct proc_status {
	char state;
	int tgid;
	int tracer;
};

// Returns 0 or an errno value (ENOENT: the process is gone).
static int read_status(int pid, struct proc_status *ret)
{
	char path[64], *buf;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	int e = read_proc_file(path, &buf, NULL);
	if (e)
		return e;
	*ret = (struct proc_status){.tgid = pid};
	for (char *line = buf; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &ret->state);
		else if (!strncmp(line, "Tgid:", 5))
			sscanf(line + 5, "%d", &ret->tgid);
		else if (!strncmp(line, "TracerPid:", 10))
			sscanf(line + 10, "%d", &ret->tracer);
		line = next;
	}
	free(buf);
	return 0;
}

static struct hd_error *busy_error(int pid, int tracer)
{
	if (tracer == getpid())
		return hd_error_create(HD_ERROR_BUSY,
			"process %d is already attached by this program: release the other target first",
			pid);
	char path[64], *comm = NULL;
	snprintf(path, sizeof(path), "/proc/%d/comm", tracer);
	if (!read_proc_file(path, &comm, NULL))
		comm[strcspn(comm, "\n")] = '\0';
	struct hd_error *err = hd_error_create(HD_ERROR_BUSY,
		"process %d is already traced by process %d (%s): run heapdom's commands inside that debugger instead (gdb: `source gdb-plugin/heapdom.py`, then heap-dominators, heap-stats, ...; lldb: `plugin load build/lldb-plugin/libheapdom_lldb.so`, then heapdom dominators, ...)",
		pid, tracer, comm && *comm ? comm : "gdb?");
	free(comm);
	return err;
}

// PTRACE_SEIZE said EPERM: explain what the user can change.
static struct hd_error *permission_error(int pid)
{
	struct proc_status st;
	if (!read_status(pid, &st) && st.tracer)
		return busy_error(pid, st.tracer);
	char *buf;
	int scope = -1;
	if (!read_proc_file("/proc/sys/kernel/yama/ptrace_scope", &buf,
			    NULL)) {
		scope = atoi(buf);
		free(buf);
	}
	struct hd_error *err;
	if (scope >= 3)
		err = hd_error_create(HD_ERROR_OS,
			"cannot attach to process %d: /proc/sys/kernel/yama/ptrace_scope is %d, which forbids ptrace until reboot; analyse a core file instead (gcore %d)",
			pid, scope, pid);
	else if (scope >= 1)
		err = hd_error_create(HD_ERROR_OS,
			"cannot attach to process %d: ptrace not permitted (/proc/sys/kernel/yama/ptrace_scope is %d): run heapdom as root, or as the process's owner after `echo 0 > /proc/sys/kernel/yama/ptrace_scope`",
			pid, scope);
	else
		err = hd_error_create(HD_ERROR_OS,
			"cannot attach to process %d: ptrace not permitted: run heapdom as the process's owner or as root (check /proc/sys/kernel/yama/ptrace_scope; a container needs CAP_SYS_PTRACE)",
			pid);
	if (!err->is_static)
		err->errnum = EPERM;
	return err;
}

struct hd_error *hd_live_exec_error(int pid, const char *when)
{
	char path[64], exe[4096];
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		n = 0;
	exe[n] = '\0';
	struct hd_error *err = hd_error_create(HD_ERROR_NOT_FOUND,
		"process %d executed another program%s%s%s %s: the memory heapdom was reading is gone, and no report is made from it; heapdom let it go",
		pid, n ? " (" : "", exe, n ? ")" : "", when);
	return err;
}

// Waits until th reaches a ptrace-stop, or is found gone. The wait polls so
// that a thread which never stops (state D) cannot hang the tool forever.
static struct hd_error *wait_stop(struct live_target *lt,
				  struct live_thread *th, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	long delay_ns = 20000;
	for (;;) {
		int status;
		pid_t r = waitpid(th->tid, &status, __WALL | WNOHANG);
		if (r == th->tid) {
			if (!WIFSTOPPED(status)) {
				// Exited or killed.
				th->state = LIVE_GONE;
				registry_release(th->slot);
				th->slot = -1;
				return NULL;
			}
			th->state = LIVE_STOPPED;
			// The process executed another program while it was
			// being stopped: what it was is gone. The thread is
			// stopped, so live_destroy lets it go.
			if ((status >> 16) == PTRACE_EVENT_EXEC)
				return hd_live_exec_error(lt->pid, "while heapdom was attaching");
			// Event 0 is a signal-delivery-stop: the signal is
			// suppressed unless we hand it back at detach. Any
			// event stop (interrupt or group-stop) carries none.
			if ((status >> 16) == 0) {
				th->pending_sig = WSTOPSIG(status);
				registry_set_sig(th->slot, th->pending_sig);
			}
			th->state = LIVE_STOPPED;
			return NULL;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD) {
				th->state = LIVE_GONE;
				registry_release(th->slot);
				th->slot = -1;
				return NULL;
			}
			return hd_error_os(errno, NULL,
					   "waiting for thread %d of process %d to stop",
					   th->tid, lt->pid);
		}
		// A thread killed or exiting as it was seized never stops: a
		// zombie (Z) or dead (X) one is gone, not late. Checked once
		// the first polls have passed, when waiting gets slower.
		if (delay_ns >= 1280000) {
			char st = thread_state(lt->pid, th->tid);
			if (st == 'Z' || st == 'X' || st == 0) {
				th->state = LIVE_GONE;
				registry_release(th->slot);
				th->slot = -1;
				return NULL;
			}
		}
		if (now_ms() >= deadline) {
			char state = thread_state(lt->pid, th->tid);
			struct hd_error *err = hd_error_create(HD_ERROR_OS,
				"thread %d of process %d did not stop within %d s (state %c; a thread blocked in the kernel stops only when it wakes up): try again later",
				th->tid, lt->pid, timeout_ms / 1000,
				state ? state : '?');
			if (!err->is_static)
				err->errnum = ETIMEDOUT;
			return err;
		}
		struct timespec ts = {0, delay_ns};
		nanosleep(&ts, NULL);
		if (delay_ns < 10000000)
			delay_ns *= 2;
	}
}

static bool thread_known(struct live_target *lt, int tid)
{
	// Linear: thread counts are small, and this runs once per new tid.
	for (size_t i = 0; i < lt->num_threads; i++) {
		if (lt->threads[i].tid == tid)
			return true;
	}
	return false;
}

struct hd_error *hd_live_seize(int pid, int tid, bool *seized)
{
	*seized = false;
	// The kernel refuses to trace zombies (EPERM), which a leader that
	// called pthread_exit() stays as long as the process lives.
	char state = thread_state(pid, tid);
	if (!state || state == 'Z' || state == 'X')
		return NULL;
	// PTRACE_O_TRACEEXEC: a thread that executes another program while
	// traced stops there (PTRACE_EVENT_EXEC) instead of running on as a
	// new program heapdom would take for the old one.
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) <
	    0) {
		if (errno == ESRCH)
			return NULL;
		if (errno == EPERM) {
			state = thread_state(pid, tid);
			if (!state || state == 'Z' || state == 'X')
				return NULL;
			return permission_error(pid);
		}
		return hd_error_os(errno, NULL,
				   "cannot attach to thread %d of process %d",
				   tid, pid);
	}
	*seized = true;
	return NULL;
}

// Seizes and interrupts tid, recording it in lt->threads whatever happens
// so that a rescan does not try it again.
static struct hd_error *seize_thread(struct live_target *lt, int tid)
{
	// Room first: once seized the thread must be recorded, or it could
	// not be released.
	if (!hd_vec_reserve((void **)&lt->threads, &lt->cap_threads,
			    lt->num_threads, sizeof(*lt->threads),
			    lt->num_threads + 1))
		return &hd_error_no_memory;
	struct live_thread *th = &lt->threads[lt->num_threads++];
	*th = (struct live_thread){.tid = tid, .slot = -1, .state = LIVE_GONE};
	bool seized;
	struct hd_error *err = hd_live_seize(lt->pid, tid, &seized);
	if (err || !seized)
		return err;
	th->state = LIVE_SEIZED;
	th->slot = registry_claim(tid);
	// ESRCH here means the thread is exiting; waitpid will say so.
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 && errno != ESRCH)
		return hd_error_os(errno, NULL,
				   "cannot stop thread %d of process %d", tid,
				   lt->pid);
	return NULL;
}

// Seizes every thread listed in /proc/PID/task that is not known yet;
// *found tells whether there was any.
static struct hd_error *seize_new_threads(struct live_target *lt, bool *found)
{
	int *tids;
	size_t n;
	struct hd_error *err = hd_live_threads(lt->pid, &tids, &n);
	if (err && err->code == HD_ERROR_NOT_FOUND) {
		hd_error_destroy(err);
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "process %d exited while heapdom was attaching",
				       lt->pid);
	}
	*found = false;
	for (size_t i = 0; i < n && !err; i++) {
		if (thread_known(lt, tids[i]))
			continue;
		*found = true;
		err = seize_thread(lt, tids[i]);
	}
	free(tids);
	return err;
}

// Stops every thread. Threads can be created until their creator stops, so
// the task list is read again after each round until it shows none new;
// once all known threads are stopped, nothing can create another.
static struct hd_error *stop_all_threads(struct live_target *lt)
{
	for (;;) {
		size_t first = lt->num_threads;
		bool found = false;
		struct hd_error *err = seize_new_threads(lt, &found);
		if (err)
			return err;
		if (!found)
			break;
		for (size_t i = first; i < lt->num_threads; i++) {
			if (lt->threads[i].state != LIVE_SEIZED)
				continue;
			err = wait_stop(lt, &lt->threads[i],
					LIVE_STOP_TIMEOUT_MS);
			if (err)
				return err;
		}
	}
	lt->proc_tid = 0;
	for (size_t i = 0; i < lt->num_threads; i++) {
		const struct live_thread *th = &lt->threads[i];
		if (th->state == LIVE_STOPPED &&
		    (!lt->proc_tid || th->tid == lt->pid))
			lt->proc_tid = th->tid;
	}
	if (lt->proc_tid)
		return NULL;
	// Every thread seized is gone but the process lives: an untraced
	// thread executed another program, which ended the others and took
	// over the leader's id (still listed as known) without an exec stop.
	if (running_thread(lt->pid))
		return hd_live_exec_error(lt->pid, "while heapdom was attaching");
	return hd_error_create(HD_ERROR_NOT_FOUND,
			       "process %d exited while heapdom was attaching",
			       lt->pid);
}

static struct hd_error *push_thread_regs(struct hd_target *t,
					 struct live_thread *th)
{
	struct live_target *lt = t->impl;
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, th->tid, NULL, &regs) < 0) {
		// Only SIGKILL takes a thread out of a ptrace-stop.
		if (errno == ESRCH)
			return NULL;
		return hd_error_os(errno, NULL,
				   "cannot read the registers of thread %d of process %d",
				   th->tid, lt->pid);
	}
	struct hd_thread out = {.tid = th->tid, .has_regs = true};
	memcpy(&out.regs, &regs, sizeof(out.regs));
	return hd_target_push_thread(t, &out);
}

static struct hd_error *read_threads(struct hd_target *t)
{
	struct live_target *lt = t->impl;
	// The main thread first: it is the one users think of as "the
	// process", and later stages rely on the order.
	for (size_t i = 0; i < lt->num_threads; i++) {
		struct live_thread *th = &lt->threads[i];
		if (th->tid == lt->pid && th->state == LIVE_STOPPED) {
			struct hd_error *err = push_thread_regs(t, th);
			if (err)
				return err;
		}
	}
	for (size_t i = 0; i < lt->num_threads; i++) {
		struct live_thread *th = &lt->threads[i];
		if (th->tid != lt->pid && th->state == LIVE_STOPPED) {
			struct hd_error *err = push_thread_regs(t, th);
			if (err)
				return err;
		}
	}
	return NULL;
}

// ---------------------------------------------------------------- maps

// Parses one line of /proc/PID/maps:
// "start-end perms offset dev inode    path".
static bool parse_maps_line(char *line, struct hd_mapping *m)
{
	line[strcspn(line, "\n")] = '\0';
	char perms[8];
	int path_at = 0;
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
		   &m->start, &m->end, perms, &m->file_offset, &path_at) < 4 ||
	    !path_at)
		return false;
	m->prot = (perms[0] == 'r' ? HD_PROT_READ : 0) |
		  (perms[1] == 'w' ? HD_PROT_WRITE : 0) |
		  (perms[2] == 'x' ? HD_PROT_EXEC : 0);
	char *path = line + path_at;
	m->path = *path ? path : NULL;
	if (m->path) {
		static const char deleted[] = " (deleted)";
		size_t n = strlen(path), d = sizeof(deleted) - 1;
		if (n > d && !strcmp(path + n - d, deleted))
			path[n - d] = '\0';
	}
	// The kernel's vvar pages fault when read through /proc/PID/mem, and
	// vsyscall is not part of the process's mm.
	m->readable = (m->prot & HD_PROT_READ) &&
		      !(m->path && (!strncmp(m->path, "[vvar", 5) ||
				    !strcmp(m->path, "[vsyscall]")));
	return true;
}

// A process with no mappings is a kernel thread (PF_KTHREAD in the flags
// of /proc/PID/stat) or one whose memory is already gone: killed or
// exiting while heapdom reads it (the kernel empties maps before the
// process becomes a zombie), which the user must be told as such.
static struct hd_error *no_mappings_error(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	unsigned long flags = 0;
	FILE *f = fopen(path, "re");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		// Fields after the command's closing parenthesis: state, ppid,
		// pgrp, session, tty_nr, tpgid, flags.
		const char *p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
			flags = 0;
	}
	if (flags & 0x00200000ul) // PF_KTHREAD
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "process %d is a kernel thread: it has no memory of its own to analyse",
				       pid);
	return hd_error_create(HD_ERROR_NOT_FOUND,
			       "process %d exited (or was killed) during the analysis: its memory is gone",
			       pid);
}

// A /proc file of the process that vanished under heapdom (ESRCH: the
// task is gone; ENOENT: its directory is) means the process was killed or
// exited after it was attached: say that, not the errno of one file.
static struct hd_error *proc_read_error(int pid, int e, const char *path,
					const char *what)
{
	if (e == ESRCH || e == ENOENT)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "process %d exited (or was killed) during the analysis: its memory is gone (%s: %s)",
				       pid, path, strerror(e));
	return hd_error_os(e, path, what);
}

static struct hd_error *read_mappings(struct hd_target *t)
{
	struct live_target *lt = t->impl;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/maps", lt->pid,
		 lt->proc_tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return proc_read_error(lt->pid, errno, path, "cannot read the mappings");
	struct hd_error *err = NULL;
	char *line = NULL;
	size_t cap = 0;
	while (!err && getline(&line, &cap, f) >= 0) {
		struct hd_mapping m = {0};
		if (!parse_maps_line(line, &m)) {
			err = hd_error_file(HD_ERROR_FORMAT, path,
					    "unexpected line: %s", line);
			break;
		}
		err = hd_target_push_mapping(t, &m);
	}
	if (!err && ferror(f))
		err = proc_read_error(lt->pid, errno, path, "cannot read the mappings");
	free(line);
	fclose(f);
	if (!err && !t->num_mappings)
		err = no_mappings_error(lt->pid);
	return err;
}

static struct hd_error *read_auxv(struct hd_target *t)
{
	struct live_target *lt = t->impl;
	char path[64], *buf;
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/auxv", lt->pid,
		 lt->proc_tid);
	int e = read_proc_file(path, &buf, &len);
	if (e)
		return proc_read_error(lt->pid, e, path,
				       "cannot read the auxiliary vector");
	t->auxv = (uint64_t *)buf;
	t->auxv_len = len / sizeof(uint64_t);
	return NULL;
}

// Mappings, auxiliary vector and modules, from a thread of the process
// that still has its memory.
static struct hd_error *read_address_space(struct hd_target *t)
{
	struct hd_error *err = read_mappings(t);
	if (!err)
		err = read_auxv(t);
	if (err)
		return err;
	hd_target_sort_mappings(t);
	return hd_target_modules_from_mappings(t);
}

// ---------------------------------------------------------------- ops

// Reads from this size on use process_vm_readv.
#define VM_READV_MIN (64u << 10)

static struct hd_error *live_read(struct hd_target *t, uint64_t addr,
				  void *buf, size_t len)
{
	struct live_target *lt = t->impl;
	size_t done = 0;
	while (done < len) {
		// Large reads with process_vm_readv: it copies straight from
		// the process's pages, where /proc/PID/mem copies each page
		// twice, but checks ptrace access on every call (small reads
		// stay on the open file). It stops at a page it may not read
		// (no PROT_READ, unmapped): /proc/PID/mem, which reads what a
		// debugger may, reads that piece or says why not, as it
		// always did.
		if (!lt->no_vm_readv && len - done >= VM_READV_MIN) {
			struct iovec local = {(char *)buf + done, len - done};
			struct iovec remote = {(void *)(uintptr_t)(addr + done),
					       len - done};
			ssize_t r = process_vm_readv(lt->proc_tid, &local, 1,
						     &remote, 1, 0);
			if (r > 0) {
				done += r;
				continue;
			}
			if (r < 0 && (errno == ENOSYS || errno == EPERM))
				lt->no_vm_readv = true;
		}
		// /proc/PID/mem takes offsets as unsigned, so addresses above
		// 2^63 pass through the signed off_t unharmed.
		ssize_t r = pread(lt->mem_fd, (char *)buf + done, len - done,
				  (off_t)(addr + done));
		if (r > 0) {
			done += r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		// The kernel returns what it could copy, then EIO at the
		// first unmapped page: that page is the missing address. 0
		// means the process's memory is gone (it exited or executed
		// another program).
		if (r == 0)
			hd_target_check_lost(t, true);
		uint64_t at = addr + done;
		if (r == 0 || errno == EIO || errno == EFAULT)
			return hd_error_at(HD_ERROR_FAULT, at,
					   "cannot read %zu bytes at 0x%" PRIx64
					   " of process %d",
					   len - done, at, lt->pid);
		return hd_error_at(HD_ERROR_FAULT, at,
				   "cannot read %zu bytes at 0x%" PRIx64
				   " of process %d: %s",
				   len - done, at, lt->pid, strerror(errno));
	}
	return NULL;
}

// Lets every thread go. Also the clean-up of a failed attach: threads
// seized but not yet seen stopped are waited for, since ptrace can only
// detach a stopped thread.
static void live_destroy(struct hd_target *t)
{
	struct live_target *lt = t->impl;
	if (!lt)
		return;
	for (size_t i = 0; i < lt->num_threads; i++) {
		struct live_thread *th = &lt->threads[i];
		if (th->state == LIVE_SEIZED)
			hd_error_destroy(
				wait_stop(lt, th, LIVE_RELEASE_TIMEOUT_MS));
		// A thread still running now stays traced until this
		// process exits; nothing more can be done for it.
		if (th->state == LIVE_STOPPED)
			ptrace(PTRACE_DETACH, th->tid, NULL,
			       (void *)(long)th->pending_sig);
		registry_release(th->slot);
		th->slot = -1;
		th->state = LIVE_GONE;
	}
	if (lt->mem_fd >= 0)
		close(lt->mem_fd);
	free(lt->threads);
	free(lt);
	t->impl = NULL;
}

static const struct hd_target_ops live_ops = {
	.read = live_read,
	.direct = NULL,
	.destroy = live_destroy,
};

// Checks what can be checked before stopping anything, so that the common
// mistakes get a precise message.
static struct hd_error *check_process(int pid)
{
	if (pid <= 0)
		return hd_error_create(HD_ERROR_INVALID,
				       "invalid process id %d", pid);
	struct proc_status st;
	int e = read_status(pid, &st);
	if (e == ENOENT || e == ESRCH)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "process %d does not exist", pid);
	if (e)
		return hd_error_os(e, NULL, "cannot read /proc/%d/status", pid);
	if (st.tgid == getpid())
		return hd_error_create(HD_ERROR_INVALID,
			"process %d is heapdom itself: a process cannot trace itself",
			pid);
	if (st.tgid != pid)
		return hd_error_create(HD_ERROR_INVALID,
			"%d is a thread of process %d: attach to process %d",
			pid, st.tgid, st.tgid);
	if ((st.state == 'Z' || st.state == 'X') && !running_thread(pid))
		return hd_error_create(HD_ERROR_NOT_FOUND,
			"process %d has exited (it is a zombie): its memory is gone",
			pid);
	if (st.tracer)
		return busy_error(pid, st.tracer);
	return NULL;
}

struct hd_error *hd_target_attach_pid(int pid,
				      const struct hd_target_options *opts,
				      struct hd_target **ret)
{
	struct hd_error *err = check_process(pid);
	if (err)
		return err;

	char name[32];
	snprintf(name, sizeof(name), "pid %d", pid);
	struct hd_target *t;
	err = hd_target_alloc("live", name, &live_ops, opts, &t);
	if (err)
		return err;
	struct live_target *lt = calloc(1, sizeof(*lt));
	if (!lt) {
		hd_target_destroy(t);
		return &hd_error_no_memory;
	}
	lt->pid = pid;
	lt->mem_fd = -1;
	t->impl = lt;

	err = stop_all_threads(lt);
	if (err)
		goto fail;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", pid,
		 lt->proc_tid);
	lt->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (lt->mem_fd < 0 && (errno == ENOENT || errno == ESRCH)) {
		err = hd_error_create(HD_ERROR_NOT_FOUND,
			"process %d exited (or was killed) while heapdom was attaching",
			pid);
		goto fail;
	}
	if (lt->mem_fd < 0) {
		err = hd_error_os(errno, path, "cannot open process memory");
		goto fail;
	}
	err = read_threads(t);
	if (err)
		goto fail;
	err = read_address_space(t);
	if (err)
		goto fail;
	hd_target_use_pagemap(t, pid, lt->proc_tid);
	t->local_pid = pid;
	*ret = t;
	return NULL;

fail:
	hd_target_destroy(t);
	return err;
}

// A process stopped by a debugger: everything but the threads, which the
// debugger supplies. Nothing here stops or resumes anything: it holds no
// thread, so live_destroy only closes its memory.
static const struct hd_target_ops proc_ops = {
	.read = live_read,
	.direct = NULL,
	.destroy = live_destroy,
};

struct hd_error *hd_target_open_proc(int pid,
				     const struct hd_target_options *opts,
				     struct hd_target **ret)
{
	if (pid <= 0)
		return hd_error_create(HD_ERROR_INVALID, "invalid process id %d",
				       pid);
	char name[32];
	snprintf(name, sizeof(name), "pid %d", pid);
	struct hd_target *t;
	struct hd_error *err = hd_target_alloc("live", name, &proc_ops, opts, &t);
	if (err)
		return err;
	struct live_target *lt = calloc(1, sizeof(*lt));
	if (!lt) {
		hd_target_destroy(t);
		return &hd_error_no_memory;
	}
	lt->pid = pid;
	lt->proc_tid = pid;
	lt->mem_fd = -1;
	t->impl = lt;
	t->frontend_threads = true;
	// The main thread may have exited while others run: use a thread
	// that still has the process's memory.
	char path[64];
	char st = thread_state(pid, pid);
	if (st == 'Z' || st == 'X') {
		int tid = running_thread(pid);
		if (tid)
			lt->proc_tid = tid;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", pid, lt->proc_tid);
	lt->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (lt->mem_fd < 0 && (errno == ENOENT || errno == ESRCH)) {
		err = hd_error_create(HD_ERROR_NOT_FOUND,
			"process %d has exited (or was killed): there is no memory left to analyse",
			pid);
		goto fail;
	}
	if (lt->mem_fd < 0) {
		err = hd_error_os(errno, path, "cannot open process memory");
		goto fail;
	}
	err = read_address_space(t);
	if (err)
		goto fail;
	hd_target_use_pagemap(t, pid, lt->proc_tid);
	t->local_pid = pid;
	*ret = t;
	return NULL;

fail:
	hd_target_destroy(t);
	return err;
}

// ---------------------------------------------------------------- sampler

// The sampler (core/sample/sampler.c) seizes and resumes threads many times
// a second, which the one-stop target above does not do; it shares the
// registry (so a signal lets its threads go too) and the checks that give
// precise messages.
int hd_live_register(int tid)
{
	return registry_claim(tid);
}

void hd_live_unregister(int slot)
{
	registry_release(slot);
}

int hd_live_running_thread(int pid)
{
	return running_thread(pid);
}

struct hd_error *hd_live_check_process(int pid)
{
	return check_process(pid);
}

