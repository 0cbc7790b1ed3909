/* bench_trace: a malloc-bound loop for the tracer's benchmark
   (bench_trace.sh runs it without the tracer, with it off, with it on).

     bench_trace [ITERATIONS [SLOTS]]

   A working set of SLOTS blocks (default 4096); each iteration frees a
   pseudo-random slot and puts a new block of a pseudo-random size
   (16..1024 bytes) there, writing its first and last bytes the way a
   program initialising a small object would. Every few iterations a
   calloc, a realloc of a slot, or a C++-like aligned request, so that
   all the traced paths run. Prints "ns_per_op N" (one op = one
   allocation and one free) and a checksum that keeps the work alive. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static inline uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
  unsigned long slots = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
  unsigned char **v = calloc(slots, sizeof *v);
  uint64_t sum = 0;
  if (!v || !iters || !slots) return 2;
  double t0 = now();
  for (unsigned long i = 0; i < iters; i++) {
    uint64_t r = next();
    unsigned long k = r % slots;
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
    if (!p) return 1;
    free(v[k]);
    p[0] = (unsigned char)i;
    p[n - 1] = (unsigned char)(i >> 8);
    sum += p[0] + p[n / 2];
    v[k] = p;
  }
  double t1 = now();
  for (unsigned long k = 0; k < slots; k++) free(v[k]);
  free(v);
  printf("ns_per_op %.2f\nchecksum %llu\n", (t1 - t0) * 1e9 / iters, (unsigned long long)sum);
  return 0;
}
