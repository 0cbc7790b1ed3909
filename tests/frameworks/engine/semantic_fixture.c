/* The semantic engine's fixture: a small "framework" (a registry of two
   groups, a slot pool malloc'd in one chunk, objects in a mapping of its
   own) whose memory probe_module.c explains to heapdom. It records every
   block's address and chunk size, so the test can add up what each
   semantic node must keep alive.

   usage: semantic_fixture TRUTH [--wait READY]
   Truth lines: "NAME ADDRESS CHUNK" (CHUNK: chunk bytes from the malloc
   header, or the sub-block size), after a first line "semantic-truth 1". */
#define FIXTURE_NAME "semantic_fixture"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include "../../fixtures/fixture_util.h"

#define REG_MAGIC 0x5245474953545259ull  /* "REGISTRY" */
#define GROUP_MAGIC 0x47524f5550475250ull
#define POOL_MAGIC 0x504f4f4c504f4f4cull
#define SLOT_USED 0x55534544u
#define SLOT_FREE 0x46524545u
#define SLOT_SIZE 64
#define NSLOTS 8
#define REGION_SIZE (64 * 1024)
#define ROBJ_SIZE 256

struct item { struct item *next; char *text; char pad[32]; };
struct group { uint64_t magic; struct item *items; void *shared; void *cross; void *data; };
struct pool { uint64_t magic; uint64_t nslots; unsigned char slots[NSLOTS][SLOT_SIZE]; };
struct registry {
  uint64_t magic;
  struct group *a, *b;
  struct pool *pool;
  unsigned char *region;
  uint64_t region_size;
  void *other;
};

struct registry *g_reg;
void *g_slot1;

static char obuf_mem[1 << 16];
static struct obuf g_out = {obuf_mem, 0, sizeof obuf_mem, -1, 0};

static void rec(const char *name, const void *p, uintptr_t size) {
  ostr(&g_out, name);
  ostr(&g_out, " ");
  ohex(&g_out, (uintptr_t)p);
  ostr(&g_out, " ");
  odec(&g_out, size);
  ostr(&g_out, "\n");
}

static void *slot(struct pool *p, int i) { return p->slots[i]; }

__attribute__((noinline)) static struct group *make_group(const char *tag, int nitems,
                                                          size_t text) {
  struct group *g = xcalloc(sizeof *g);
  g->magic = GROUP_MAGIC;
  char name[32];
  rec(tag, g, csize(g));
  for (int i = 0; i < nitems; i++) {
    struct item *it = xcalloc(sizeof *it);
    it->text = xcalloc(text);
    it->next = g->items;
    g->items = it;
    memcpy(name, tag, strlen(tag) + 1);
    strcat(name, ".item");
    size_t n = strlen(name);
    name[n] = (char)('0' + i);
    name[n + 1] = 0;
    rec(name, it, csize(it));
    strcat(name, ".text");
    rec(name, it->text, csize(it->text));
  }
  return g;
}

__attribute__((noinline)) static void build(void) {
  struct registry *r = xcalloc(sizeof *r);
  r->magic = REG_MAGIC;
  rec("registry", r, csize(r));
  r->a = make_group("a", 5, 100);
  r->b = make_group("b", 3, 200);
  void *shared = xcalloc(300);
  r->a->shared = r->b->shared = shared;
  rec("shared", shared, csize(shared));
  void *cross = xcalloc(400);
  r->a->cross = cross;
  r->other = cross;
  rec("cross", cross, csize(cross));

  struct pool *p = xcalloc(sizeof *p);
  p->magic = POOL_MAGIC;
  p->nslots = NSLOTS;
  r->pool = p;
  rec("pool", p, csize(p));
  for (int i = 0; i < NSLOTS; i++) {
    int used = i == 1 || i == 3 || i == 5;
    *(uint32_t *)slot(p, i) = used ? SLOT_USED : SLOT_FREE;
    char name[16] = "slot.";
    name[5] = (char)('0' + i);
    name[6] = 0;
    rec(name, slot(p, i), SLOT_SIZE);
  }
  void *payload = xcalloc(500);
  memcpy((char *)slot(p, 3) + 8, &payload, sizeof payload);
  rec("slot.3.payload", payload, csize(payload));
  r->b->data = slot(p, 3);
  g_slot1 = slot(p, 1);

  unsigned char *region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) die("mmap failed");
  r->region = region;
  r->region_size = REGION_SIZE;
  rec("region", region, REGION_SIZE);
  for (int i = 0; i < 4; i++) {
    char name[16] = "robj.";
    name[5] = (char)('0' + i);
    name[6] = 0;
    *(uint64_t *)(region + i * ROBJ_SIZE) = 0x524f424aull + (uint64_t)i;
    rec(name, region + i * ROBJ_SIZE, ROBJ_SIZE);
  }
  unsigned char *obj1 = region + ROBJ_SIZE;
  memcpy(region + 8, &obj1, sizeof obj1);
  void *rpayload = xcalloc(600);
  memcpy(region + 2 * ROBJ_SIZE + 8, &rpayload, sizeof rpayload);
  rec("robj.2.payload", rpayload, csize(rpayload));
  r->a->data = region + 2 * ROBJ_SIZE;
  g_reg = r;
}

__attribute__((noinline)) void hd_fixture_stop(void) { __asm__ volatile("" ::: "memory"); }

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--wait") == 0)) {
    static const char u[] = "usage: semantic_fixture TRUTH [--wait READY]\n";
    ssize_t w = write(2, u, sizeof u - 1);
    (void)w;
    return 2;
  }
  ostr(&g_out, "semantic-truth 1\n");
  build();
  scrub();
  g_out.fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_out.fd < 0) die("cannot open truth file");
  oflush(&g_out);
  close(g_out.fd);
  if (argc == 4) {
    int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("cannot create ready file");
    close(fd);
    for (;;) pause();
  }
  hd_fixture_stop();
  return 0;
}
