// `heapdom sample --live`: while sampling, once a second, each thread's
// busiest address buckets so far — the seed's real-time histogram, in
// text. Addresses only: the heap is mapped once sampling is over.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample/sampler.h"
#include "util/sort.h"

#define LIVE_TOP 5
#define BAR 40

struct bucket {
	uint64_t addr, count;
};

static int by_count(const void *a, const void *b)
{
	const struct bucket *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void hd_sample_live_view(FILE *out, const struct hd_samples *r,
			 const struct hd_sample_options *o, double seconds)
{
	// On a terminal the view replaces the last one; in a file (or a
	// pipe) the views follow each other.
	if (isatty(fileno(out)))
		fputs("\033[H\033[2J", out);
	fprintf(out, "pid %d, %.0f s of %.0f s: %" PRIu64 " rounds at %u Hz\n", r->pid,
		seconds, o->duration, r->rounds, r->hz);
	uint64_t *keys = malloc((r->num_samples ? r->num_samples : 1) * sizeof(*keys));
	struct bucket *b = malloc((r->num_samples ? r->num_samples : 1) * sizeof(*b));
	for (size_t t = 0; keys && b && t < r->num_threads; t++) {
		const struct hd_sample_thread *th = &r->threads[t];
		size_t n = 0;
		for (size_t i = 0; i < r->num_samples; i++) {
			const struct hd_sample *s = &r->samples[i];
			if (s->tid == th->tid && (s->flags & HD_SAMPLE_ACCESS))
				keys[n++] = s->addr / o->granularity * o->granularity;
		}
		fprintf(out, "thread %d: %" PRIu64 " stops, %zu accesses\n", th->tid,
			th->taken, n);
		if (!n)
			continue;
		hd_qsort(keys, n, sizeof(*keys), by_addr);
		size_t nb = 0;
		for (size_t i = 0; i < n; i++) {
			if (nb && b[nb - 1].addr == keys[i])
				b[nb - 1].count++;
			else
				b[nb++] = (struct bucket){keys[i], 1};
		}
		hd_qsort(b, nb, sizeof(*b), by_count);
		for (size_t i = 0; i < nb && i < LIVE_TOP; i++) {
			int w = (int)(BAR * b[i].count / b[0].count);
			fprintf(out, "  0x%016" PRIx64 " %6" PRIu64 " %5.1f%% %.*s\n", b[i].addr,
				b[i].count, 100.0 * (double)b[i].count / (double)n, w,
				"########################################");
		}
	}
	free(keys);
	free(b);
	fflush(out);
}
