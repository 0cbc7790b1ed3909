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

#endif
