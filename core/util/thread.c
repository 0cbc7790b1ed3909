// Threads that take no signal (thread.h).
#include <signal.h>
#include <stdbool.h>

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

void hd_threads_run(void *(*fn)(void *), void *parts, size_t stride,
		    unsigned k)
{
	pthread_t tid[HD_THREADS_RUN_MAX];
	bool started[HD_THREADS_RUN_MAX] = {false};
	char *base = parts;
	for (unsigned j = 1; j < k && j < HD_THREADS_RUN_MAX; j++)
		started[j] = hd_thread_create(&tid[j], fn, base + j * stride) == 0;
	fn(base);
	for (unsigned j = 1; j < k; j++) {
		if (j < HD_THREADS_RUN_MAX && started[j])
			pthread_join(tid[j], NULL);
		else
			fn(base + j * stride);
	}
}
