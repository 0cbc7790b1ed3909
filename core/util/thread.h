// Threads of the library.
#ifndef HD_UTIL_THREAD_H
#define HD_UTIL_THREAD_H

#include <pthread.h>

// pthread_create with every signal blocked in the new thread; 0 or an
// errno value. The process that loads the library (gdb, lldb) waits for
// its own signals: gdb sleeps in sigsuspend until SIGCHLD reaches its main
// thread, and a SIGCHLD the kernel gave one of ours instead left gdb
// waiting for ever at `run` (a plugin's DWARF read-ahead was running).
int hd_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
