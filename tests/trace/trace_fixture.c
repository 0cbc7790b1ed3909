/* trace_fixture: known allocation patterns for libheapdom-trace.so.

     trace_fixture TRUTH [--lib PATH] [--inject] [--big]

   Run with LD_PRELOAD=libheapdom-trace.so HEAPDOM_TRACE=1, or (--inject)
   without it under gdb, which stops at hd_inject_point, dlopen()s PATH,
   calls heapdom_trace_inject() and sets heapdom_trace.enabled = 1.

   Every allocation and free happens in a noinline function of its own
   (the "site"), so the tracer's sites can be checked per function: the
   truth file gives each site function's run-time address and the test
   takes its size from the symbol table. The fixture plays the debugger:
   it advances heapdom_trace.epoch between phases and switches `enabled`
   off around its own bookkeeping (which allocates nothing anyway), for
   one phase whose calls must not be counted, and around thread creation
   and exit (which allocate inside the loader and libc).

   Truth file, one record a line:
     pid PID | sizeof N | inject 0|1
     fn NAME ADDR             a site function's run-time address
     off NAME                 a site function only called while tracing off
     alloc FN OP SIZE COUNT   COUNT successful calls of OP for SIZE bytes
     free FN BYTES AGE COUNT  frees at FN of blocks of BYTES bytes at AGE
                              epochs (AGE -1: block allocated while off,
                              untracked; BYTES is then 0)
     live PTR SIZE FN BIRTH   a block still allocated, allocated at FN
     leak PTR                 that block is leaked: nothing points at it
                              once the truth file is closed
     big_skipped              the 4 GiB blocks could not be allocated
     big_reused 0|1           the 4 GiB block asked for again got the
                              address of the one freed while off
     d0 ... / d1 ...          the tracer's state at the start and end (see
                              dump_state); the test compares d1 - d0
     end NREC
   OP: 0 malloc, 1 calloc, 2 realloc, 3 memalign, 4 free (heapdom_trace.h). */
#define FIXTURE_NAME "trace_fixture"
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fixture_util.h"
#include "heapdom_trace.h"
#include "trace_fixture.h"

struct hd_trace_state *st;
unsigned epoch; /* what the fixture wrote into st->epoch */

/* ------------------------------------------------------------ truth */

#define MAXEXP 2048
static struct exp {
  const char *fn;
  int kind; /* 0 alloc, 1 free */
  int op;
  uint64_t size;
  long age;
  uint64_t count;
} exps[MAXEXP];
static int nexp;

static void expect(const char *fn, int kind, int op, uint64_t size, long age, uint64_t count) {
  for (int i = 0; i < nexp; i++) {
    struct exp *e = &exps[i];
    if (e->fn == fn && e->kind == kind && e->op == op && e->size == size && e->age == age) {
      e->count += count;
      return;
    }
  }
  if (nexp == MAXEXP) die("too many expectations");
  exps[nexp++] = (struct exp){ fn, kind, op, size, age, count };
}

void note_alloc(const char *fn, int op, struct blk *b, void *p, uint64_t size) {
  if (!p) die("allocation failed");
  b->p = p;
  b->size = size;
  b->birth = epoch;
  b->tracked = st->enabled != 0;
  b->fn = fn;
  if (b->tracked) expect(fn, 0, op, size, 0, 1);
}

void note_free(const char *fn, struct blk *b) {
  if (!b->p) die("freeing a block the fixture never allocated");
  if (st->enabled) {
    if (b->tracked)
      expect(fn, 1, HD_TRACE_FREE, b->size, (long)(epoch - b->birth), 1);
    else
      expect(fn, 1, HD_TRACE_FREE, 0, -1, 1);
  }
  b->p = NULL;
}

static void set_epoch(unsigned e) {
  epoch = e;
  st->epoch = e;
}

/* ------------------------------------------------------------- sites */

#define NA 1000
#define NB 500
#define NC 300
#define NOFF 100
#define NF 50
#define NSTALE 30
#define NTHREADS 4
#define NMT 1000

static struct blk a[NA + NOFF], b[NB], c, d[45], offb[NOFF], f[NF], stale[NSTALE];

#define SITE __attribute__((noinline, noclone))

/* Sizes that must fail, hidden from the compiler's size checks. */
static volatile size_t huge = SIZE_MAX - 4096, half = SIZE_MAX / 2, all = SIZE_MAX;

/* A: malloc(24); a failing malloc (not counted). */
SITE void site_a(struct blk *out, int n) {
  for (int i = 0; i < n; i++) note_alloc("site_a", HD_TRACE_MALLOC, &out[i], malloc(24), 24);
  if (malloc(huge) != NULL) die("huge malloc succeeded");
}

/* B: calloc(10, 100); an overflowing calloc (not counted). */
SITE void site_b(void) {
  for (int i = 0; i < NB; i++) note_alloc("site_b", HD_TRACE_CALLOC, &b[i], calloc(10, 100), 1000);
  if (calloc(half, 4) != NULL) die("overflowing calloc succeeded");
}

/* C: one block grown by realloc NC times: realloc(NULL, 16) then each
   realloc frees the previous block (at this site) and makes a new one. */
SITE void site_c(void) {
  void *p = NULL;
  for (int i = 1; i <= NC; i++) {
    void *q = realloc(p, 16 * (size_t)i);
    if (p) note_free("site_c", &c);
    note_alloc("site_c", HD_TRACE_REALLOC, &c, q, 16 * (uint64_t)i);
    p = q;
  }
}

/* D: the aligned family and reallocarray, and their error cases. */
SITE void site_d(void) {
  int k = 0;
  void *p;
  for (int i = 0; i < 10; i++) {
    note_alloc("site_d", HD_TRACE_MEMALIGN, &d[k++], memalign(64, 100), 100);
    note_alloc("site_d", HD_TRACE_MEMALIGN, &d[k++], aligned_alloc(256, 512), 512);
    p = NULL;
    if (posix_memalign(&p, 128, 1000) != 0) die("posix_memalign failed");
    if ((uintptr_t)p % 128) die("posix_memalign misaligned");
    note_alloc("site_d", HD_TRACE_MEMALIGN, &d[k++], p, 1000);
  }
  for (int i = 0; i < 5; i++) {
    note_alloc("site_d", HD_TRACE_MEMALIGN, &d[k++], valloc(100), 100);
    note_alloc("site_d", HD_TRACE_MEMALIGN, &d[k++], pvalloc(5000), 5000);
  }
  for (int i = 0; i < 5; i++)
    note_alloc("site_d", HD_TRACE_REALLOC, &d[k++], reallocarray(NULL, 10, 30), 300);
  if (k != 45) die("site_d: wrong number of blocks");
  if ((uintptr_t)d[0].p % 64 || (uintptr_t)d[1].p % 256 || (uintptr_t)d[30].p % 4096 || (uintptr_t)d[31].p % 4096)
    die("misaligned block");
  /* Errors: not counted, and the standard's error values. */
  p = (void *)1;
  if (posix_memalign(&p, 24, 10) != EINVAL || p != (void *)1) die("posix_memalign(24) not EINVAL");
  if (posix_memalign(&p, 4, 10) != EINVAL) die("posix_memalign(4) not EINVAL");
  errno = 0;
  if (aligned_alloc(3, 10) != NULL || errno != EINVAL) die("aligned_alloc(3) not EINVAL");
  errno = 0;
  if (reallocarray(NULL, all, 2) != NULL || errno != ENOMEM)
    die("reallocarray overflow not ENOMEM");
}

/* Allocated while on, freed while off: their tags stay in the freed
   memory, and a reader must not count them as live (it reads the tags of
   used blocks only). A size nothing else here asks for, so no later
   block reuses their memory (a block of the same usable size there whose
   last bytes the program leaves alone would be taken for the old one). */
SITE void site_stale(void) {
  for (int i = 0; i < NSTALE; i++)
    note_alloc("site_stale", HD_TRACE_MALLOC, &stale[i], malloc(1720), 1720);
}

/* --big: sizes past 32 bits: blocks of 4 GiB - 1 and 4 GiB + 4 KiB,
   address space only (mmapped, never touched but for their tags; not for
   runs that dump a core: gdb writes those pages out). The first is freed
   while tracing is off (its tag stays) and asked for again while on,
   which mmap answers at the same address (said in the truth file): the
   new block must have its own size and site. Skipped, and said so, where the machine refuses
   that much address space. */
#define BIG1 0xffffffffull
#define BIG2 ((1ull << 32) + 4096)
static struct blk bigb[2];
static int big, big_skipped, big_reused;
static void *big_stale;

SITE void site_big(void) {
  if (!big) return;
  void *p = malloc(BIG1), *q = p ? malloc(BIG2) : NULL;
  if (!p || !q) {
    free(p);
    big_skipped = 1;
    return;
  }
  note_alloc("site_big", HD_TRACE_MALLOC, &bigb[0], p, BIG1);
  note_alloc("site_big", HD_TRACE_MALLOC, &bigb[1], q, BIG2);
}

SITE void free_big(void) {
  if (!big || big_skipped) return;
  free(bigb[1].p);
  note_free("free_big", &bigb[1]);
}

SITE void site_big_again(void) {
  if (!big || big_skipped) return;
  note_alloc("site_big_again", HD_TRACE_MALLOC, &bigb[0], malloc(BIG1), BIG1);
  big_reused = bigb[0].p == big_stale;
}

/* Leaked: NLEAK blocks allocated at site_leak (and, with --big, a 4 GiB - 1
   block at site_big_leak) that nothing points at once the truth is written: the records
   keep their addresses only until then (forget_leaks). Live at their
   site, and leaked: `heapdom leaks` names the site. */
#define NLEAK 7
static struct blk leakb[NLEAK + 1];
static int nleakb;

SITE void site_leak(void) {
  for (int i = 0; i < NLEAK; i++)
    note_alloc("site_leak", HD_TRACE_MALLOC, &leakb[nleakb++], malloc(40 + 16 * (size_t)i),
               40 + 16 * (uint64_t)i);
}

SITE void site_big_leak(void) {
  if (!big || big_skipped) return;
  void *p = malloc(BIG1);
  if (p) note_alloc("site_big_leak", HD_TRACE_MALLOC, &leakb[nleakb++], p, BIG1);
}

static void forget_leaks(void) {
  for (int i = 0; i < nleakb; i++) ((volatile struct blk *)&leakb[i])->p = NULL;
  scrub();
}

/* Only called while tracing is off: must not appear at all. */
SITE void site_off(void) {
  for (int i = 0; i < NOFF; i++) note_alloc("site_off", HD_TRACE_MALLOC, &offb[i], malloc(48), 48);
}

/* Allocated while off, freed while on: untracked frees. */
SITE void site_f(void) {
  for (int i = 0; i < NF; i++) note_alloc("site_f", HD_TRACE_MALLOC, &f[i], malloc(64), 64);
}

SITE void free_x(struct blk *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].p);
    note_free("free_x", &v[i]);
  }
}

SITE void free_y(struct blk *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].p);
    note_free("free_y", &v[i]);
  }
}

/* glibc's realloc(p, 0) frees p: a free at this site. */
SITE void free_y_realloc0(struct blk *v) {
  if (realloc(v->p, 0) != NULL) die("realloc(p, 0) returned a block");
  note_free("free_y_realloc0", v);
}

SITE void free_z(struct blk *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].p);
    note_free("free_z", &v[i]);
  }
  free(NULL); /* not counted */
}

SITE void free_off(struct blk *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].p);
    note_free("free_off", &v[i]);
  }
}

/* While off: bigb[0]'s tag stays in the unmapped block's place. */
static void free_big_off(void) {
  if (!big || big_skipped) return;
  big_stale = bigb[0].p;
  free_off(bigb, 1);
}

SITE void free_untracked(struct blk *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].p);
    note_free("free_untracked", &v[i]);
  }
}

/* ----------------------------------------------------------- threads */

static pthread_barrier_t go, done;
static void *mt_blocks[NTHREADS][NMT];

SITE void mt_site(void **v) {
  for (int i = 0; i < NMT; i++) {
    v[i] = malloc(40);
    if (!v[i]) die("thread malloc failed");
  }
}

SITE void mt_free(void **v) {
  for (int i = 0; i < NMT; i++) free(v[i]);
}

static void *thread_main(void *arg) {
  void **v = (void **)arg;
  pthread_barrier_wait(&go);
  mt_site(v);
  mt_free(v);
  pthread_barrier_wait(&done);
  return NULL;
}

/* Runs main(arg(i)) in n threads (at most MAXTHREADS), created and joined
   while tracing is off (the loader and libc allocate for them); they
   allocate between the barriers go and done, all alive, while on. */
#define MAXTHREADS 128
static void run_threads(int n, void *(*main)(void *), void *(*arg)(int)) {
  pthread_t t[MAXTHREADS];
  if (n > MAXTHREADS) die("too many threads");
  st->enabled = 0;
  if (pthread_barrier_init(&go, NULL, n + 1) || pthread_barrier_init(&done, NULL, n + 1))
    die("barrier");
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, main, arg(i))) die("pthread_create");
  st->enabled = 1;
  pthread_barrier_wait(&go);
  pthread_barrier_wait(&done);
  st->enabled = 0;
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&go);
  pthread_barrier_destroy(&done);
  st->enabled = 1;
}

static void *mt_arg(int i) { return mt_blocks[i]; }

static void threads_phase(void) {
  run_threads(NTHREADS, thread_main, mt_arg);
  expect("mt_site", 0, HD_TRACE_MALLOC, 40, 0, NTHREADS * NMT);
  expect("mt_free", 1, HD_TRACE_FREE, 40, 0, NTHREADS * NMT);
}

/* One thread with more call sites than its shard has room for
   (HD_TRACE_SHARD_SITES): the rest go to the shared rows. Every
   malloc below is a call site of its own. */
#define R4(x) x x x x
#define R16(x) R4(R4(x))
#define NWIDE (3 * 16 * 16)
static void *wide[NWIDE];

SITE void wide_site(void) {
  int n = 0;
  R16(R16(wide[n] = malloc(8); if (!wide[n++]) die("wide malloc failed");))
  R16(R16(wide[n] = malloc(8); if (!wide[n++]) die("wide malloc failed");))
  R16(R16(wide[n] = malloc(8); if (!wide[n++]) die("wide malloc failed");))
}

SITE void wide_free(void) {
  for (int i = 0; i < NWIDE; i++) free(wide[i]);
}

/* More threads alive at once than there are shards, after the threads of
   threads_phase have exited: free shards first, then those of exited
   threads, and the last threads find none and count into the shared
   tables (atomically). */
#define NMANY (HD_TRACE_SHARDS + 6)
static void *many_blocks[NMANY][2];

SITE void many_site(void **v) {
  for (int i = 0; i < 2; i++)
    if (!(v[i] = malloc(24))) die("thread malloc failed");
}

SITE void many_free(void **v) {
  for (int i = 0; i < 2; i++) free(v[i]);
}

static void *many_main(void *arg) {
  pthread_barrier_wait(&go);
  many_site((void **)arg);
  many_free((void **)arg);
  pthread_barrier_wait(&done);
  return NULL;
}

static void *many_arg(int i) { return many_blocks[i]; }

static void many_threads_phase(void) {
  run_threads(NMANY, many_main, many_arg);
  expect("many_site", 0, HD_TRACE_MALLOC, 24, 0, NMANY * 2);
  expect("many_free", 1, HD_TRACE_FREE, 24, 0, NMANY * 2);
}

/* -------------------------------------------------------------- dump */

static char obuf_mem[1 << 16];
static struct obuf o = { obuf_mem, 0, sizeof obuf_mem, -1, 0 };

static void rec_begin(const char *tag) {
  ostr(&o, tag);
  o.nrec++;
}
static void field(uint64_t v) {
  ostr(&o, " ");
  odec(&o, (uintptr_t)v);
}
static void hfield(uint64_t v) {
  ostr(&o, " ");
  ohex(&o, (uintptr_t)v);
}

/* dN state MAGIC VERSION SIZE ENABLED EPOCH PID
   dN calls C0..C4   (per op, the sum over all site slots)
   dN dropped SITES UNTRACKED       (SITES: the HD_TRACE_NO_SITE row's calls)
   dN shards N                      (shards claimed by a thread)
   dN class K COUNT BYTES | dN age A COUNT BYTES  (non-zero ones)
   dN site PC COUNT0..4 BYTES0..4                  (used slots)
   dN live PTR SIZE SITEPC BIRTH   (the tags of the blocks left allocated;
                                    d1 only; none for a block without one) */
/* The counts as a reader sees them: the shared tables plus every thread's
   shard (heapdom_trace.h). Static: the dump may run while tracing is on,
   and must not allocate. */
static struct hd_trace_site f_sites[HD_TRACE_SITES];
static struct hd_trace_count f_classes[HD_TRACE_CLASSES], f_ages[HD_TRACE_AGES];
static uint64_t f_untracked;
static unsigned f_shards_used;

static void add_count(struct hd_trace_count *to, const struct hd_trace_count *c) {
  to->count += c->count;
  to->bytes += c->bytes;
}

static void fold(void) {
  memcpy(f_sites, st->sites, sizeof f_sites);
  memcpy(f_classes, st->classes, sizeof f_classes);
  memcpy(f_ages, st->ages, sizeof f_ages);
  f_untracked = st->untracked_frees;
  f_shards_used = 0;
  for (unsigned i = 0; i < HD_TRACE_SHARDS; i++) {
    const struct hd_trace_shard *sh = &st->shards[i];
    f_shards_used += sh->owner != 0;
    f_untracked += sh->untracked_frees;
    for (int k = 0; k < HD_TRACE_CLASSES; k++) add_count(&f_classes[k], &sh->classes[k]);
    for (int k = 0; k < HD_TRACE_AGES; k++) add_count(&f_ages[k], &sh->ages[k]);
    for (unsigned j = 0; j < HD_TRACE_SHARD_SITES; j++) {
      const struct hd_trace_shard_site *ss = &sh->sites[j];
      if (!ss->slot) continue;
      for (int k = 0; k < HD_TRACE_OPS; k++) add_count(&f_sites[ss->slot - 1].op[k], &ss->op[k]);
    }
  }
}

/* dN live PTR SIZE SITEPC BIRTH: the tag the tracer wrote in block b
   (heapdom_trace.h: the last word of its usable size, from glibc's chunk
   header), if it has one. */
static void dump_tag(const char *tag, const struct blk *b) {
  uint64_t p = (uintptr_t)b->p, h = ((const uint64_t *)p)[-1], size;
  uint64_t usable = (h & ~7ull) - ((h & 2) ? 16 : 8);
  uint32_t site, birth;
  if (!b->p || !hd_trace_tag_read((const uint64_t *)(p + usable - HD_TRACE_TAG), p,
                                  st->tag_key, usable, &size, &site, &birth))
    return;
  rec_begin(tag);
  ostr(&o, " live");
  hfield(p);
  field(size);
  hfield(st->sites[site].pc);
  field(hd_trace_tag_birth(st->epoch, birth));
  ostr(&o, "\n");
}

static void dump_state(const char *tag, int live) {
  fold();
  rec_begin(tag);
  ostr(&o, " state");
  hfield(st->magic);
  field(st->version);
  field(st->size);
  field(st->enabled);
  field(st->epoch);
  field(st->pid);
  ostr(&o, "\n");
  rec_begin(tag);
  ostr(&o, " calls");
  for (int k = 0; k < HD_TRACE_OPS; k++) {
    uint64_t n = 0;
    for (unsigned i = 0; i < HD_TRACE_SITES; i++) n += f_sites[i].op[k].count;
    field(n);
  }
  ostr(&o, "\n");
  rec_begin(tag);
  ostr(&o, " dropped");
  uint64_t unsited = 0;
  for (int k = 0; k < HD_TRACE_OPS; k++) unsited += f_sites[HD_TRACE_NO_SITE].op[k].count;
  field(unsited);
  field(f_untracked);
  ostr(&o, "\n");
  rec_begin(tag);
  ostr(&o, " shards");
  field((uint64_t)f_shards_used);
  ostr(&o, "\n");
  for (int k = 0; k < HD_TRACE_CLASSES; k++) {
    if (!f_classes[k].count && !f_classes[k].bytes) continue;
    rec_begin(tag);
    ostr(&o, " class");
    field((uint64_t)k);
    field(f_classes[k].count);
    field(f_classes[k].bytes);
    ostr(&o, "\n");
  }
  for (int k = 0; k < HD_TRACE_AGES; k++) {
    if (!f_ages[k].count && !f_ages[k].bytes) continue;
    rec_begin(tag);
    ostr(&o, " age");
    field((uint64_t)k);
    field(f_ages[k].count);
    field(f_ages[k].bytes);
    ostr(&o, "\n");
  }
  for (unsigned i = 0; i < HD_TRACE_SITES; i++) {
    struct hd_trace_site *s = &f_sites[i];
    if (!s->pc || i == HD_TRACE_NO_SITE) continue;
    rec_begin(tag);
    ostr(&o, " site");
    hfield(s->pc);
    for (int k = 0; k < HD_TRACE_OPS; k++) field(s->op[k].count);
    for (int k = 0; k < HD_TRACE_OPS; k++) field(s->op[k].bytes);
    ostr(&o, "\n");
  }
  if (!live) return;
  for (int i = 750; i < NA; i++) dump_tag(tag, &a[i]);
  for (int i = 0; i < nleakb; i++) dump_tag(tag, &leakb[i]);
  if (bigb[0].p) dump_tag(tag, &bigb[0]);
}

static void out_live(const struct blk *b) {
  rec_begin("live");
  hfield((uintptr_t)b->p);
  field(b->size);
  ostr(&o, " ");
  ostr(&o, b->fn);
  field(b->birth);
  ostr(&o, "\n");
}

static void out_fn(const char *name, void (*fn)(void)) {
  rec_begin("fn ");
  ostr(&o, name);
  hfield((uintptr_t)fn);
  ostr(&o, "\n");
}

/* gdb stops here in --inject runs. */
__attribute__((noinline)) void hd_inject_point(void) { __asm__ volatile(""); }

/* Inlined into main: its first instruction is no call boundary, and
   heap-trace start must refuse to call into the process there. */
static inline __attribute__((always_inline)) void hd_inline_point(void) {
  __asm__ volatile("nop");
}

static struct hd_trace_state *find_state(const char *lib) {
  void *s = dlsym(RTLD_DEFAULT, HD_TRACE_SYMBOL);
  if (!s && lib) {
    /* Injected: loaded RTLD_LOCAL, out of the default scope. */
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (h) s = dlsym(h, HD_TRACE_SYMBOL);
  }
  if (!s) die("heapdom_trace not found: run with LD_PRELOAD or --inject under gdb");
  return (struct hd_trace_state *)s;
}

int main(int argc, char **argv) {
  const char *truth = NULL, *lib = NULL;
  int inject = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--lib") && i + 1 < argc)
      lib = argv[++i];
    else if (!strcmp(argv[i], "--inject"))
      inject = 1;
    else if (!strcmp(argv[i], "--big"))
      big = 1;
    else if (argv[i][0] != '-' && !truth)
      truth = argv[i];
    else
      die("usage: trace_fixture TRUTH [--lib PATH] [--inject] [--big]");
  }
  if (!truth) die("usage: trace_fixture TRUTH [--lib PATH] [--inject] [--big]");
  /* Keep every block on the heap, where the test expects it. */
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  hd_inline_point();
  hd_inject_point();
  st = find_state(lib);
  /* Tracing is on here (HEAPDOM_TRACE=1 or gdb); the baseline is taken
     with it off. */
  uint32_t enabled_at_start = st->enabled;
  st->enabled = 0;
  otruth_open(&o, truth);
  rec_begin("pid");
  field((uint64_t)getpid());
  ostr(&o, "\n");
  rec_begin("sizeof");
  field(sizeof(struct hd_trace_state));
  ostr(&o, "\n");
  rec_begin("inject");
  field((uint64_t)inject);
  ostr(&o, "\n");
  /* Each thread that allocates while on and the process has threads counts
     into a shard of its own, while there are shards left: the NTHREADS of
     threads_phase, the main thread, the NMANY of many_threads_phase. */
  rec_begin("shards");
  field((uint64_t)(NTHREADS + 1 + NMANY < HD_TRACE_SHARDS ? NTHREADS + 1 + NMANY : HD_TRACE_SHARDS));
  ostr(&o, "\n");
  rec_begin("enabled_at_start");
  field(enabled_at_start);
  ostr(&o, "\n");
  dump_state("d0", 0);
  /* Three epochs short of a multiple of 2^HD_TRACE_TAG_BIRTH_BITS: the
     tags keep a birth's low bits only, and the phases below cross the
     wrap (births before it, frees and births after it). */
  unsigned e0 = (st->epoch | HD_TRACE_TAG_BIRTH_MASK) - 2;

  /* Phase 1, epoch e0: every site allocates. */
  set_epoch(e0);
  st->enabled = 1;
  site_a(a, NA);
  site_b();
  site_c();
  site_d();
  site_e();
  site_big();
  /* Frees at ages 1, 3 and 73 (bucket 63). */
  set_epoch(e0 + 1);
  free_x(a, 250);
  delete_e_objects();
  set_epoch(e0 + 3);
  free_y(a + 250, 250);
  free_y(b, NB);
  free_y_realloc0(&c);
  free_big();
  set_epoch(e0 + 73);
  free_z(a + 500, 250);
  free_z(d, 45);
  delete_e_rest();

  /* Threads, before any stale entry exists: their allocations (and glibc's
     for them, while off) must not land at a stale entry's address. */
  threads_phase();
  /* The main thread, now one of several: its own shard. */
  wide_site();
  expect("wide_site", 0, HD_TRACE_MALLOC, 8, 0, NWIDE);
  wide_free();
  expect("wide_free", 1, HD_TRACE_FREE, 8, 0, NWIDE);
  many_threads_phase();

  site_stale();
  /* Off: nothing here may be counted, not even at site_a. */
  st->enabled = 0;
  /* The untracked blocks first: while the blocks freed below (whose live
     entries stay, stale) are still allocated, so that none of them can
     be at a stale entry's address: a free there would take the stale
     entry (a known limit) instead of counting as untracked. */
  site_f();
  free_off(stale, NSTALE);
  site_a(a + NA, NOFF);
  free_off(a + NA, NOFF);
  site_off();
  free_off(offb, NOFF);
  free_big_off();
  cxx_failures();
  st->enabled = 1;
  set_epoch(e0 + 74);
  free_untracked(f, NF);
  site_big_again();
  site_leak();
  site_big_leak();

  st->enabled = 0;
  /* a[750..999] stay allocated, born at e0. */
  for (int i = 0; i < nexp; i++) {
    struct exp *e = &exps[i];
    rec_begin(e->kind ? "free " : "alloc ");
    ostr(&o, e->fn);
    if (e->kind) {
      field(e->size);
      ostr(&o, " ");
      if (e->age < 0)
        ostr(&o, "-1");
      else
        odec(&o, (uintptr_t)e->age);
    } else {
      field((uint64_t)e->op);
      field(e->size);
    }
    field(e->count);
    ostr(&o, "\n");
  }
  for (int i = 750; i < NA; i++) out_live(&a[i]);
  for (int i = 0; i < nleakb; i++) {
    out_live(&leakb[i]);
    rec_begin("leak");
    hfield((uintptr_t)leakb[i].p);
    ostr(&o, "\n");
  }
  if (bigb[0].p) out_live(&bigb[0]);
  if (big_skipped) rec_begin("big_skipped\n");
  if (big && !big_skipped) {
    rec_begin("big_reused");
    field((uint64_t)big_reused);
    ostr(&o, "\n");
  }
  out_fn("site_a", (void (*)(void))site_a);
  out_fn("site_b", (void (*)(void))site_b);
  out_fn("site_c", (void (*)(void))site_c);
  out_fn("site_d", (void (*)(void))site_d);
  out_fn("site_e", (void (*)(void))site_e);
  out_fn("site_off", (void (*)(void))site_off);
  out_fn("site_f", (void (*)(void))site_f);
  out_fn("site_stale", (void (*)(void))site_stale);
  out_fn("site_big", (void (*)(void))site_big);
  out_fn("free_big", (void (*)(void))free_big);
  out_fn("site_big_again", (void (*)(void))site_big_again);
  out_fn("site_leak", (void (*)(void))site_leak);
  out_fn("site_big_leak", (void (*)(void))site_big_leak);
  out_fn("free_x", (void (*)(void))free_x);
  out_fn("free_y", (void (*)(void))free_y);
  out_fn("free_y_realloc0", (void (*)(void))free_y_realloc0);
  out_fn("free_z", (void (*)(void))free_z);
  out_fn("free_off", (void (*)(void))free_off);
  out_fn("free_untracked", (void (*)(void))free_untracked);
  out_fn("delete_e_objects", (void (*)(void))delete_e_objects);
  out_fn("delete_e_rest", (void (*)(void))delete_e_rest);
  out_fn("mt_site", (void (*)(void))mt_site);
  out_fn("mt_free", (void (*)(void))mt_free);
  out_fn("wide_site", (void (*)(void))wide_site);
  out_fn("wide_free", (void (*)(void))wide_free);
  out_fn("many_site", (void (*)(void))many_site);
  out_fn("many_free", (void (*)(void))many_free);
  rec_begin("off site_off\n");
  rec_begin("off site_f\n");
  rec_begin("off free_off\n");
  dump_state("d1", 1);
  otruth_close(&o);
  forget_leaks();
  return 0;
}
