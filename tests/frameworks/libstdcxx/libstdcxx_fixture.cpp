/*
 * libstdcxx_fixture -- standard containers whose blocks are known by
 * construction, for the libstdc++ framework module's test.
 *
 * Usage: libstdcxx_fixture TRUTH_FILE [--wait READY_FILE]
 *
 * Conventions of type_fixture_cpp.cpp: the structures are built, the
 * stack scrubbed, the truth written with write(2), then hd_fixture_stop();
 * with --wait READY the pid goes to READY and the process sleeps.
 *
 * Ground truth by construction: the global operator new/delete record
 * every live allocation with the tag that was current when it was made
 * (set before each step of building a container), so which blocks belong
 * to which container does not depend on libstdc++'s internals. Nested
 * containers (the string and vector inside each map value) get their own
 * tags, and the node block that holds each of them is computed from an
 * iterator: the value's address minus the node header (32 bytes in an
 * rb-tree node, 16 in a list node, 8 in a hash node).
 *
 * TRUTH FILE FORMAT (one record per line, ADDR = "0x.." hex user pointer,
 * integers decimal):
 *   libstdcxx-truth 1
 *   pid PID
 *   module NAME                 the executable's file name (root names)
 *   node KEY HOLDER FW LABEL..  a container the module must find: KEY
 *        names it for block records, HOLDER is "root:MODULE:GLOBAL" or the
 *        ADDR of the block holding it, FW the framework bytes its own
 *        blocks carry (docs of core/frameworks/libstdcxx.c), LABEL the
 *        rest of the line
 *   block ADDR CHUNK TAG        a live block made while building TAG:
 *        TAG == KEY: one of KEY's own blocks (its object); TAG starting
 *        with KEY + "/": a block only KEY's elements keep alive (in its
 *        bound, not its object); "shared": the control block two
 *        shared_ptr globals share (assigned to neither); "blobs/cb": the
 *        one two shared_ptrs in g_blobs' buffer share (assigned to
 *        neither, in the vector's bound); "docs/cb" the same for
 *        g_docs, whose object holds the string "docs/text"
 *   broken GLOBAL               a container damaged on purpose (a list's
 *        size, a map's node_count, a vector's finish past its
 *        end_of_storage): no node, one warning naming it
 *   end N                       N records before this line
 */
#include <stdint.h>
#include <stdio.h> /* snprintf */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <list>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#define FIXTURE_NAME "libstdcxx_fixture"
#include "../../fixtures/fixture_util.h"

/* ------------------------------------------------ tagged allocations */

/* The log keeps addresses XOR-ed with a mask, so that it is not a root
   pointing at every block (heapdom would see the log keep them alive). */
#define MAXLOG 4096
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static struct {
  uintptr_t p;
  const char *tag;
} alog[MAXLOG];
static size_t nlog;
static const char *cur_tag = "other";

void *operator new(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (nlog == MAXLOG) die("allocation log full");
  alog[nlog].p = (uintptr_t)p ^ HIDE;
  alog[nlog].tag = cur_tag;
  nlog++;
  return p;
}
void *operator new[](size_t n) { return operator new(n); }
void operator delete(void *p) noexcept {
  if (!p) return;
  for (size_t i = nlog; i-- > 0;) {
    if (alog[i].p == ((uintptr_t)p ^ HIDE)) {
      alog[i] = alog[--nlog];
      break;
    }
  }
  free(p);
}
void operator delete[](void *p) noexcept { operator delete(p); }
void operator delete(void *p, size_t) noexcept { operator delete(p); }
void operator delete[](void *p, size_t) noexcept { operator delete(p); }

/* Tags are static strings: the ones of nested containers are made once. */
static char tagmem[64][48];
static size_t ntags;
static const char *mktag(const char *key, long i, const char *sub) {
  if (ntags == 64) die("too many tags");
  char *t = tagmem[ntags++];
  snprintf(t, 48, "%s/%ld%s", key, i, sub);
  return t;
}

/* ------------------------------------------------------------ the data */

struct Session {
  int id = 0;
  std::string name;
  std::vector<int> data;
};
struct Item {
  int id;
  double weight;
  char tag[40];
};
struct Blob {
  long serial;
  char bytes[200];
};
/* A make_shared object holding a container, reached by two shared_ptrs:
   its string is one node, found through the first. */
struct Doc {
  long serial;
  std::string text;
};
struct Registry {
  int generation;
  std::map<std::string, int> by_name;
};

#define NSESS 5
#define NITEMS 6
#define ITEMS_CAP 10
#define NNAMES 4
#define NINDEX 5
#define NIDS 7
#define NREG 3

std::map<int, Session> g_sessions;
std::vector<Item *> g_items;
std::list<std::string> g_names;
std::unordered_map<std::string, int> g_index;
std::set<long> g_ids;
std::shared_ptr<Blob> g_blob_a, g_blob_b;
std::vector<std::shared_ptr<Blob>> g_blobs;
std::vector<std::shared_ptr<Doc>> g_docs;
Registry *g_registry;
std::vector<int> g_plain;
std::string g_long;
/* Damaged on purpose (after building): the module must warn and skip. */
std::list<int> g_broken_list;
std::map<int, int> g_broken_map;
std::vector<int> g_broken_vec;

static char module[256];

extern "C" __attribute__((noinline, used)) void hd_fixture_stop(void) { __asm__ volatile(""); }

static std::string long_text(const char *what, int i) {
  std::string s = "no small-string buffer here: ";
  s += what;
  s += '-';
  s += (char)('0' + i);
  s.append((size_t)(8 * i), 'z');
  return s;
}

/* Static tag strings, so a tag never allocates. */
static const char *sess_name[NSESS], *sess_data[NSESS], *items_elem, *idx_key[NINDEX],
    *reg_key[NREG], *names_elem[NNAMES];

__attribute__((noinline)) static void build() {
  for (int i = 0; i < NSESS; i++) {
    sess_name[i] = mktag("sessions", i, ".name");
    sess_data[i] = mktag("sessions", i, ".data");
  }
  for (int i = 0; i < NINDEX; i++) idx_key[i] = mktag("index", i, ".key");
  for (int i = 0; i < NREG; i++) reg_key[i] = mktag("registry", i, ".key");
  for (int i = 0; i < NNAMES; i++) names_elem[i] = mktag("names", i, "");
  items_elem = "items/elem";

  /* map<int, Session>: keys 10, 20, .. inserted out of order; element i
     in key order gets tags sessions/i.name and sessions/i.data */
  static const int order[NSESS] = {3, 0, 4, 1, 2};
  for (int j = 0; j < NSESS; j++) {
    int i = order[j];
    cur_tag = "sessions";
    Session &s = g_sessions[10 * (i + 1)];
    s.id = i;
    std::string text = long_text("session", i); /* moved: no copy */
    cur_tag = sess_name[i];
    s.name.reserve(text.size() + 3 * i);
    s.name.assign(text);
    cur_tag = sess_data[i];
    s.data.reserve(4 + (size_t)i);
    for (int k = 0; k < 2 + i; k++) s.data.push_back(k * i);
  }

  /* vector<Item *> owning its items: spare capacity */
  cur_tag = "items";
  g_items.reserve(ITEMS_CAP);
  cur_tag = items_elem;
  for (int i = 0; i < NITEMS; i++) {
    Item *it = new Item;
    it->id = i;
    it->weight = i * 1.5;
    memset(it->tag, 'a' + i, sizeof it->tag);
    g_items.push_back(it);
  }

  /* list<string>: node i holds a long string tagged names/i */
  for (int i = 0; i < NNAMES; i++) {
    cur_tag = names_elem[i];
    std::string s = long_text("name", i + 1);
    cur_tag = "names";
    g_names.push_back(std::move(s));
  }

  /* unordered_map<string, int>: the keys' buffers are tagged by the
     position of their node in iteration order, known only afterwards:
     build with a temporary tag, retag below */
  cur_tag = "index";
  g_index.reserve(16);
  for (int i = 0; i < NINDEX; i++) {
    cur_tag = "index/key";
    std::string k = long_text("key", i + 1);
    cur_tag = "index";
    g_index.emplace(std::move(k), i);
  }

  cur_tag = "ids";
  for (int i = 0; i < NIDS; i++) g_ids.insert((long)(i * 37 % 11));

  /* two shared_ptr globals share one make_shared block */
  cur_tag = "shared";
  g_blob_a = std::make_shared<Blob>();
  g_blob_a->serial = 1;
  g_blob_b = g_blob_a;

  /* a vector of two shared_ptrs to one object: the two shared_ptr nodes
     are held by the vector's buffer and have no common node, so their
     control block stays unassigned, below the buffer: in the vector's
     bound, not its object */
  cur_tag = "blobs";
  g_blobs.reserve(4);
  cur_tag = "blobs/cb";
  {
    std::shared_ptr<Blob> b = std::make_shared<Blob>();
    b->serial = 2;
    g_blobs.push_back(b);
    g_blobs.push_back(b);
  }

  /* the same with an object that holds a string: the string is one
     node, held by the control block (found through g_docs[0]; through
     g_docs[1] it is the same string again) */
  cur_tag = "docs";
  g_docs.reserve(4);
  {
    cur_tag = "docs/cb";
    std::shared_ptr<Doc> d = std::make_shared<Doc>();
    d->serial = 3;
    cur_tag = "docs/text";
    d->text = long_text("doc", 3);
    g_docs.push_back(d);
    g_docs.push_back(d);
  }

  /* a heap struct holding a map: its holder is that block */
  cur_tag = "other";
  g_registry = new Registry;
  g_registry->generation = 7;
  for (int i = 0; i < NREG; i++) {
    cur_tag = "registry/key";
    std::string k = long_text("registry", i + 1);
    cur_tag = "registry";
    g_registry->by_name.emplace(std::move(k), i);
  }

  /* baseline: a vector of ints, nothing else */
  cur_tag = "plain";
  g_plain.reserve(100);
  for (int i = 0; i < 60; i++) g_plain.push_back(i);

  cur_tag = "long";
  g_long = long_text("g_long", 9);

  /* the damage: a list's size (after next, prev), a map's node_count
     (the last word of the tree), a vector's finish beyond its
     end_of_storage; written as raw words, as a stray store would */
  cur_tag = "broken";
  for (int i = 0; i < 3; i++) g_broken_list.push_back(i);
  for (int i = 0; i < 4; i++) g_broken_map[i] = i;
  g_broken_vec.reserve(4);
  g_broken_vec.push_back(1);
  uintptr_t w;
  w = 5;
  memcpy((char *)&g_broken_list + 16, &w, sizeof w);
  w = 9;
  memcpy((char *)&g_broken_map + sizeof g_broken_map - 8, &w, sizeof w);
  memcpy(&w, (char *)&g_broken_vec + 16, sizeof w);
  w += 64;
  memcpy((char *)&g_broken_vec + 8, &w, sizeof w);
  cur_tag = "other";
}

/* Retags the blocks of a container's keys by element position. */
static void retag(const void *p, const char *tag) {
  for (size_t i = 0; i < nlog; i++) {
    if (alog[i].p == ((uintptr_t)p ^ HIDE)) {
      alog[i].tag = tag;
      return;
    }
  }
  die("retag: not a live allocation");
}

/* --------------------------------------------------------- truth writer */

static char obuf_mem[1 << 16];
static struct obuf out = {obuf_mem, 0, sizeof obuf_mem, -1, 0};

static void oend() {
  ostr(&out, "\n");
  out.nrec++;
}
static void r_node(const char *key, const char *global, const void *holder, uintptr_t fw,
                   const char *label) {
  ostr(&out, "node ");
  ostr(&out, key);
  ostr(&out, " ");
  if (global) {
    oroot(&out, module, global);
  } else {
    ohex(&out, (uintptr_t)holder);
  }
  ostr(&out, " ");
  odec(&out, fw);
  ostr(&out, " ");
  ostr(&out, label);
  oend();
}

static char lbuf[256];
static const char *label(const char *a, long i, const char *b) {
  if (i >= 0) snprintf(lbuf, sizeof lbuf, "%s[%ld]%s", a, i, b);
  else snprintf(lbuf, sizeof lbuf, "%s%s", a, b);
  return lbuf;
}

static uintptr_t str_spare(const std::string &s) { return s.capacity() - s.size(); }
template <class T> static uintptr_t vec_spare(const std::vector<T> &v) {
  return (v.capacity() - v.size()) * sizeof(T);
}

__attribute__((noinline)) static void write_truth(const char *path) {
  otruth_open(&out, path);

  /* keys of the hash map and the registry by element position */
  long i = 0;
  for (auto &kv : g_index) retag(kv.first.data(), idx_key[i++]);
  if (i != NINDEX) die("index size");
  i = 0;
  for (auto &kv : g_registry->by_name) retag(kv.first.data(), reg_key[i++]);

  ostr(&out, "libstdcxx-truth 1\npid ");
  odec(&out, (uintptr_t)getpid());
  ostr(&out, "\nmodule ");
  ostr(&out, module);
  ostr(&out, "\n");
  out.nrec += 2;

  /* map<int, Session>: 32 bytes of links in each node */
  if (g_sessions.size() != NSESS) die("sessions");
  r_node("sessions", "g_sessions", nullptr, 32 * NSESS, "std::map<int, Session> g_sessions");
  i = 0;
  for (auto &kv : g_sessions) {
    const void *node = (const char *)&kv - 32;
    if (kv.second.name.size() < 16 || kv.second.id != i) die("session");
    r_node(sess_name[i], nullptr, node, str_spare(kv.second.name),
           label("std::string g_sessions", i, ".second.name"));
    r_node(sess_data[i], nullptr, node, vec_spare(kv.second.data),
           label("std::vector<int> g_sessions", i, ".second.data"));
    i++;
  }

  r_node("items", "g_items", nullptr, vec_spare(g_items), "std::vector<Item*> g_items");

  i = 0;
  for (auto &s : g_names) {
    const void *node = (const char *)&s - 16;
    r_node(names_elem[i], nullptr, node, str_spare(s), label("std::string g_names", i, ""));
    i++;
  }
  r_node("names", "g_names", nullptr, 16 * NNAMES, "std::list<std::string> g_names");

  /* hash nodes of a string key cache the hash: 16 bytes, plus the whole
     bucket array */
  uintptr_t buckets = 0;
  for (size_t k = 0; k < nlog; k++) {
    if (strcmp(alog[k].tag, "index")) continue;
    bool node = false;
    const void *blk = (const void *)(alog[k].p ^ HIDE);
    for (auto &kv : g_index) node |= (const char *)&kv - 8 == blk;
    if (!node) {
      if (buckets) die("two bucket arrays");
      buckets = csize(blk);
    }
  }
  if (!buckets) die("no bucket array");
  r_node("index", "g_index", nullptr, 16 * NINDEX + buckets,
         "std::unordered_map<std::string, int> g_index");
  i = 0;
  for (auto &kv : g_index) {
    r_node(idx_key[i], nullptr, (const char *)&kv - 8, str_spare(kv.first),
           label("std::string g_index", i, ".first"));
    i++;
  }

  r_node("ids", "g_ids", nullptr, 32 * g_ids.size(), "std::set<long int> g_ids");

  /* the shared block goes to neither global's node */
  r_node("blob_a", "g_blob_a", nullptr, 0, "std::shared_ptr<Blob> g_blob_a");
  r_node("blob_b", "g_blob_b", nullptr, 0, "std::shared_ptr<Blob> g_blob_b");
  /* the vector's shared control block: 16 bytes of counts, marked though
     it stays unassigned */
  if (g_blobs.size() != 2 || g_blobs[0].get() != g_blobs[1].get()) die("blobs");
  r_node("blobs", "g_blobs", nullptr, vec_spare(g_blobs) + 16,
         "std::vector<std::shared_ptr<Blob>> g_blobs");
  r_node("blobs/0", nullptr, g_blobs.data(), 0, "std::shared_ptr<Blob> g_blobs[0]");
  r_node("blobs/1", nullptr, g_blobs.data(), 0, "std::shared_ptr<Blob> g_blobs[1]");

  if (g_docs.size() != 2 || g_docs[0].get() != g_docs[1].get()) die("docs");
  r_node("docs", "g_docs", nullptr, vec_spare(g_docs) + 16,
         "std::vector<std::shared_ptr<Doc>> g_docs");
  r_node("docs/0", nullptr, g_docs.data(), 0, "std::shared_ptr<Doc> g_docs[0]");
  r_node("docs/1", nullptr, g_docs.data(), 0, "std::shared_ptr<Doc> g_docs[1]");
  /* make_shared: the object follows the control block's vtable pointer
     and counts */
  r_node("docs/text", nullptr, (const char *)g_docs[0].get() - 16,
         str_spare(g_docs[0]->text), "std::string (*g_docs[0]).text");

  r_node("registry", nullptr, g_registry, 32 * NREG, "std::map<std::string, int> Registry.by_name");
  i = 0;
  for (auto &kv : g_registry->by_name) {
    r_node(reg_key[i], nullptr, (const char *)&kv - 32, str_spare(kv.first),
           label("std::string Registry.by_name", i, ".first"));
    i++;
  }

  r_node("plain", "g_plain", nullptr, vec_spare(g_plain), "std::vector<int> g_plain");
  r_node("long", "g_long", nullptr, str_spare(g_long), "std::string g_long");
  ostr(&out, "broken g_broken_list\n");
  ostr(&out, "broken g_broken_map\n");
  ostr(&out, "broken g_broken_vec\n");
  out.nrec += 3;

  for (size_t k = 0; k < nlog; k++) {
    ostr(&out, "block ");
    ohex(&out, alog[k].p ^ HIDE);
    ostr(&out, " ");
    odec(&out, csize((const void *)(alog[k].p ^ HIDE)));
    ostr(&out, " ");
    ostr(&out, alog[k].tag);
    oend();
  }

  otruth_close(&out);
}

int main(int argc, char **argv) {
  const char *truth, *ready;
  fixture_args(argc, argv, "usage: libstdcxx_fixture TRUTH_FILE [--wait READY_FILE]", nullptr,
               nullptr, 0, &truth, &ready);
  find_module(module, sizeof module);
  build();
  scrub();
  write_truth(truth);
  scrub();
  hd_fixture_stop();
  fixture_wait(ready, 1);
  _exit(0); /* the damaged containers must not be destroyed */
}
