// The monotonic clock, in seconds: what the phase times --profile prints
// are measured with.
#ifndef HD_UTIL_CLOCK_H
#define HD_UTIL_CLOCK_H

#include <time.h>

static inline double hd_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
