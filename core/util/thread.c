// Threads that take no signal (thread.h).
#include <signal.h>

#include "util/thread.h"

int hd_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	// The new thread starts with the creating thread's mask.
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}
