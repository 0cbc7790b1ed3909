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

// The most parts hd_threads_run gives threads of their own.
#define HD_THREADS_RUN_MAX 64

// Runs fn on each of k parts, part j at (char *)parts + j * stride: part 0
// on this thread, the others on threads of their own (hd_thread_create);
// a part whose thread cannot start, or past HD_THREADS_RUN_MAX, runs on
// this thread after part 0. Returns once every part is done.
void hd_threads_run(void *(*fn)(void *), void *parts, size_t stride,
		    unsigned k);

#endif
