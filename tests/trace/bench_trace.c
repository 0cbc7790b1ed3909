/* bench_trace: a malloc-bound loop for the tracer's benchmark
   (bench_trace.sh runs it without the tracer, with it off, with it on).

     bench_trace [ITERATIONS [SLOTS [THREADS]]]

   A working set of SLOTS blocks (default 4096); each iteration frees a
   pseudo-random slot and puts a new block of a pseudo-random size
   (16..1024 bytes) there, writing its first and last bytes the way a
   program initialising a small object would. Every few iterations a
   calloc, a realloc of a slot, or a C++-like aligned request, so that
   all the traced paths run.

   THREADS 0 (default): the loop runs in the main thread of a process
   that has no other (glibc's and the tracer's single-threaded paths).
   THREADS N >= 1: N threads run the loop at once, each on a working set
   of its own (the threaded paths: glibc's arenas, the tracer's shards and
   atomic claims); with N = 1 the main thread only waits.

   Prints "ns_per_op N" (wall time over ITERATIONS; one op = one
   allocation and one free, in each thread) and a checksum that keeps the
   work alive. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct loop {
  unsigned long iters, slots;
  uint64_t rng, sum;
  int failed;
};

static inline uint64_t next(uint64_t *rng) {
  *rng ^= *rng << 13;
  *rng ^= *rng >> 7;
  *rng ^= *rng << 17;
  return *rng;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *run(void *arg) {
  struct loop *l = arg;
  unsigned char **v = calloc(l->slots, sizeof *v);
  if (!v) {
    l->failed = 1;
    return NULL;
  }
  for (unsigned long i = 0; i < l->iters; i++) {
    uint64_t r = next(&l->rng);
    unsigned long k = r % l->slots;
    size_t n = 16 + (r >> 32) % 1009;
    unsigned char *p;
    switch ((r >> 20) & 15) {
    case 0:
      p = calloc(1, n);
      break;
    case 1:
      /* realloc instead of free + malloc */
      p = realloc(v[k], n);
      v[k] = NULL;
      break;
    case 2:
      p = aligned_alloc(64, n);
      break;
    default:
      p = malloc(n);
      break;
    }
    if (!p) {
      l->failed = 1;
      break;
    }
    free(v[k]);
    p[0] = (unsigned char)i;
    p[n - 1] = (unsigned char)(i >> 8);
    l->sum += p[0] + p[n / 2];
    v[k] = p;
  }
  for (unsigned long k = 0; k < l->slots; k++) free(v[k]);
  free(v);
  return NULL;
}

int main(int argc, char **argv) {
  unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
  unsigned long slots = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
  unsigned long threads = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
  if (!iters || !slots || threads > 64) return 2;
  unsigned long n = threads ? threads : 1;
  struct loop l[64];
  pthread_t t[64];
  for (unsigned long i = 0; i < n; i++)
    l[i] = (struct loop){ iters, slots, 0x9E3779B97F4A7C15ull + i * 0x2545F4914F6CDD1Dull, 0, 0 };
  double t0 = now();
  if (!threads) {
    run(&l[0]);
  } else {
    for (unsigned long i = 0; i < n; i++)
      if (pthread_create(&t[i], NULL, run, &l[i])) return 1;
    for (unsigned long i = 0; i < n; i++) pthread_join(t[i], NULL);
  }
  double t1 = now();
  uint64_t sum = 0;
  for (unsigned long i = 0; i < n; i++) {
    if (l[i].failed) return 1;
    sum += l[i].sum;
  }
  printf("ns_per_op %.2f\nchecksum %llu\n", (t1 - t0) * 1e9 / iters, (unsigned long long)sum);
  return 0;
}
