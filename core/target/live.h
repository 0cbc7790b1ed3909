// Live-process backend internals shared with the command-line tool.
#ifndef HD_TARGET_LIVE_H
#define HD_TARGET_LIVE_H

#include "heapdom.h"

// Detaches every thread of every live target this process holds, so that
// the processes run again even if heapdom is killed by a signal. It is
// async-signal-safe: a SIGINT/SIGTERM handler calls it and then _exit().
// Only the thread that attached can detach (a ptrace rule); threads that
// remain are released by the kernel when this process exits.
// Exported (but not in heapdom.h) because the tool links the shared library.
HD_EXPORT void hd_live_detach_all_for_signal(void);

#endif
