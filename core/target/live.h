// Live-process backend internals for the rest of the library.
#ifndef HD_TARGET_LIVE_H
#define HD_TARGET_LIVE_H

#include "heapdom.h"

// Detaches every thread of every live target this process holds, so that
// the processes run again even if heapdom is killed by a signal. It is
// async-signal-safe: a SIGINT/SIGTERM handler calls it and then _exit().
// Only the thread that attached can detach (a ptrace rule); threads that
// remain are released by the kernel when this process exits.
// Programs outside the library call it as hd_live_release_all().
void hd_live_detach_all_for_signal(void);

// For the sampler, which seizes and resumes threads itself. A registered
// thread is detached by hd_live_detach_all_for_signal(); register returns
// the slot to unregister (-1 when the registry is full).
int hd_live_register(int tid);
void hd_live_unregister(int slot);
// The checks hd_target_attach_pid makes before stopping anything (no such
// process, a thread id, heapdom itself, a zombie, already traced).
struct hd_error *hd_live_check_process(int pid);
// PTRACE_SEIZE of thread tid of pid. *seized is false, with no error, when
// the thread is gone or a zombie (which the kernel refuses to trace); an
// error names why the kernel refused otherwise (ptrace_scope, a tracer).
struct hd_error *hd_live_seize(int pid, int tid, bool *seized);
// The threads are seized with PTRACE_O_TRACEEXEC: a PTRACE_EVENT_EXEC stop
// means the process executed another program. This error says so, naming
// the pid, the new program and when ("while it was sampled").
struct hd_error *hd_live_exec_error(int pid, const char *when);
// A thread of pid that is neither a zombie nor dead, or 0 (the process
// has exited).
int hd_live_running_thread(int pid);
// The thread ids in /proc/PID/task, in a new array the caller frees.
// HD_ERROR_NOT_FOUND when the process is gone.
struct hd_error *hd_live_threads(int pid, int **tids, size_t *n);

#endif
