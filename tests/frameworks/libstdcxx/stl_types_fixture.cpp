/*
 * stl_types_fixture -- an ordinary C++ program's heap, with the type of
 * every block it allocated, for heapdom's per-block typing test.
 *
 * Usage: stl_types_fixture TRUTH_FILE [--wait READY_FILE]
 *
 * Conventions of type_fixture_cpp.cpp: the structures are built, the
 * stack scrubbed, the truth written with write(2), then hd_fixture_stop();
 * with --wait READY the pid goes to READY and the process sleeps.
 *
 * The program: sessions in a std::map<std::string, std::shared_ptr<
 * Session>> made with std::make_shared, series in a std::unordered_map<int,
 * std::vector<double>>, shapes of a virtual hierarchy in a
 * std::vector<std::unique_ptr<Shape>>, names in a std::list<std::string>,
 * one std::make_shared<Config>() whose object holds a std::string and a
 * std::vector, a std::deque<int> of jobs, a std::vector<long> of 4096
 * samples (a buffer of exactly 32768 bytes) and a pool of raw pointers to
 * Items.
 *
 * Ground truth: the global operator new/delete (as leak checkers replace
 * them) keep the set of live allocations and their sizes. After the
 * scenario the program explains every live allocation from its own
 * structures -- a node is an element's address minus the node header (32
 * bytes in an rb-tree node, 16 in a list node, 8 in a hash node), a
 * vector's buffer is data() with capacity() elements, a string's body is
 * data() with capacity() + 1 chars, a make_shared control block is the
 * object's address minus its two counts and vtable pointer, a deque's map
 * and buffers come from its iterators' public _M_node -- and dies if an
 * allocation is left unexplained or explained twice. Types are written
 * as typeid(T).name() (mangled: c++filt -t, not heapdom, spells them).
 *
 * TRUTH FILE FORMAT (one record per line, ADDR = "0x.." hex user pointer):
 *   stl_types-truth 1
 *   pid PID
 *   module NAME
 *   block ADDR SIZE MANGLED [N]   the block's type: MANGLED, an array of
 *        N of them when N is given (SIZE: the size operator new was asked)
 *   member ADDR NAME              the block at ADDR is held by the member
 *        NAME of an object inside another block: a Session's user string
 *        (the Session lives in a make_shared control block), a session
 *        key's body (first, in a map node), a series' buffer (second, in a
 *        hash node)
 *   end N                         N records before this line
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#define FIXTURE_NAME "stl_types_fixture"
#include "../../fixtures/fixture_util.h"

/* ------------------------------------------------ recorded allocations */

/* Addresses are kept XOR-ed with a mask: the log must not be a root that
   keeps every block alive. */
#define MAXLOG 8192
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static struct rec {
  uintptr_t p;
  size_t size;
  const char *type; /* mangled, set when explained */
  size_t count;     /* array elements, 0: one object */
} alog[MAXLOG];
static size_t nlog;

void *operator new(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (nlog == MAXLOG) die("allocation log full");
  alog[nlog].p = (uintptr_t)p ^ HIDE;
  alog[nlog].size = n;
  alog[nlog].type = nullptr;
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

/* ------------------------------------------------------------ the data */

struct Session {
  std::string user;
  std::vector<int> history;
  long id = 0;
};
struct Shape {
  virtual ~Shape() {}
  virtual double area() const = 0;
  int id = 0;
};
struct Circle : Shape {
  double r = 1;
  double area() const override { return 3.14159 * r * r; }
};
struct Rect : Shape {
  double w = 1, h = 2;
  std::string name;
  double area() const override { return w * h; }
};
struct Config {
  std::string path;
  std::vector<double> weights;
};
struct Item {
  int id;
  double weight;
  char label[24];
};

#define NSESS 40
#define NSERIES 30
#define NSHAPES 24
#define NNAMES 12
#define NJOBS 700
#define NSAMPLES 4096
#define NPOOL 20

std::map<std::string, std::shared_ptr<Session>> g_sessions;
std::unordered_map<int, std::vector<double>> g_series;
std::vector<std::unique_ptr<Shape>> g_shapes;
std::list<std::string> g_names;
std::shared_ptr<Config> g_config;
std::deque<int> g_jobs;
std::vector<long> g_samples;
Item *g_pool[NPOOL];

static char module[256];

extern "C" __attribute__((noinline, used)) void hd_fixture_stop(void) { __asm__ volatile(""); }

static std::string words(const char *what, int i) {
  std::string s = what;
  s += " number ";
  s += std::to_string(i);
  if (i % 3) s += " with a few more words to be long";
  return s;
}

__attribute__((noinline)) static void build() {
  for (int i = 0; i < NSESS; i++) {
    auto s = std::make_shared<Session>();
    s->id = i;
    s->user = words("user", i);
    for (int k = 0; k < i % 7; k++) s->history.push_back(k * i);
    g_sessions[words("session key", i)] = s;
  }
  for (int i = 0; i < NSERIES; i++) {
    std::vector<double> v;
    for (int k = 0; k <= i % 9; k++) v.push_back(k / 3.0);
    g_series.emplace(i * 7, std::move(v));
  }
  for (int i = 0; i < NSHAPES; i++) {
    if (i % 3 == 0) {
      auto r = std::make_unique<Rect>();
      r->id = i;
      r->name = words("rectangle", i);
      g_shapes.push_back(std::move(r));
    } else {
      auto c = std::make_unique<Circle>();
      c->id = i;
      c->r = i;
      g_shapes.push_back(std::move(c));
    }
  }
  for (int i = 0; i < NNAMES; i++) g_names.push_back(words("name", i));
  g_config = std::make_shared<Config>();
  g_config->path = "/etc/an/ordinary/configuration/file.conf";
  for (int k = 0; k < 5; k++) g_config->weights.push_back(k);
  for (int i = 0; i < NJOBS; i++) g_jobs.push_back(i);
  g_samples.reserve(NSAMPLES);
  for (int i = 0; i < NSAMPLES; i++) g_samples.push_back(i * 3L);
  for (int i = 0; i < NPOOL; i++) {
    g_pool[i] = new Item();
    g_pool[i]->id = i;
  }
}

/* ------------------------------------------------------- explanations */

static struct rec *find(const void *p) {
  for (size_t i = 0; i < nlog; i++)
    if (alog[i].p == ((uintptr_t)p ^ HIDE)) return &alog[i];
  return nullptr;
}

static void explain(const void *p, const std::type_info &t, size_t count = 0) {
  struct rec *r = find(p);
  if (!r) die("explained a block operator new did not make");
  if (r->type) die("a block explained twice");
  r->type = t.name();
  r->count = count;
}

template <class T> static void string_body(const std::basic_string<T> &s) {
  if (s.capacity() > 15) explain(s.data(), typeid(T), s.capacity() + 1);
}
template <class T> static void vector_buffer(const std::vector<T> &v) {
  if (v.capacity()) explain(v.data(), typeid(T), v.capacity());
}
/* make_shared's control block: the object follows the vtable pointer and
   the two counts; its dynamic type (which allocator make_shared used is
   libstdc++'s business) comes from its vtable, as C++ itself finds it. */
template <class T> static void control_block(const std::shared_ptr<T> &sp) {
  const std::_Sp_counted_base<> *cb =
      (const std::_Sp_counted_base<> *)((const char *)sp.get() - 16);
  explain(cb, typeid(*cb));
}

__attribute__((noinline)) static void explain_all() {
  typedef std::map<std::string, std::shared_ptr<Session>> smap;
  for (auto &kv : g_sessions) {
    explain((const char *)&kv - 32, typeid(std::_Rb_tree_node<smap::value_type>));
    string_body(kv.first);
    control_block(kv.second);
    string_body(kv.second->user);
    vector_buffer(kv.second->history);
  }
  typedef std::unordered_map<int, std::vector<double>> hmap;
  for (auto &kv : g_series) {
    explain((const char *)&kv - 8,
            typeid(std::__detail::_Hash_node<hmap::value_type, false>));
    vector_buffer(kv.second);
  }
  /* The bucket array: the one block of bucket_count pointers left. */
  for (size_t i = 0; i < nlog; i++) {
    if (!alog[i].type && alog[i].size == g_series.bucket_count() * sizeof(void *)) {
      alog[i].type = typeid(std::__detail::_Hash_node_base *).name();
      alog[i].count = g_series.bucket_count();
      break;
    }
  }
  vector_buffer(g_shapes);
  for (auto &s : g_shapes) {
    explain(s.get(), typeid(*s));
    if (Rect *r = dynamic_cast<Rect *>(s.get())) string_body(r->name);
  }
  for (auto &s : g_names) {
    explain((const char *)&s - 16, typeid(std::_List_node<std::string>));
    string_body(s);
  }
  control_block(g_config);
  string_body(g_config->path);
  vector_buffer(g_config->weights);
  /* the deque: its map (the block holding the iterators' _M_node, as
     long as operator new was asked) and a 512-byte buffer per node */
  int **first = g_jobs.begin()._M_node, **last = g_jobs.end()._M_node;
  for (size_t i = 0; i < nlog; i++) {
    uintptr_t a = alog[i].p ^ HIDE;
    if (a <= (uintptr_t)first && (uintptr_t)last < a + alog[i].size) {
      alog[i].type = typeid(int *).name();
      alog[i].count = alog[i].size / sizeof(int *);
    }
  }
  for (int **n = first; n <= last; n++) explain(*n, typeid(int), 512 / sizeof(int));
  vector_buffer(g_samples);
  for (int i = 0; i < NPOOL; i++) explain(g_pool[i], typeid(Item));
  for (size_t i = 0; i < nlog; i++)
    if (!alog[i].type) die("a live allocation the program cannot explain");
}

/* --------------------------------------------------------- truth writer */

static char obuf_mem[1 << 18];
static struct obuf out = {obuf_mem, 0, sizeof obuf_mem, -1, 0};

static void r_member(const void *p, const char *name) {
  ostr(&out, "member ");
  ohex(&out, (uintptr_t)p);
  ostr(&out, " ");
  ostr(&out, name);
  ostr(&out, "\n");
  out.nrec++;
}

__attribute__((noinline)) static void write_truth(const char *path) {
  otruth_open(&out, path);
  ostr(&out, "stl_types-truth 1\npid ");
  odec(&out, (uintptr_t)getpid());
  ostr(&out, "\nmodule ");
  ostr(&out, module);
  ostr(&out, "\n");
  out.nrec += 2;
  for (size_t i = 0; i < nlog; i++) {
    ostr(&out, "block ");
    ohex(&out, alog[i].p ^ HIDE);
    ostr(&out, " ");
    odec(&out, alog[i].size);
    ostr(&out, " ");
    ostr(&out, alog[i].type);
    if (alog[i].count) {
      ostr(&out, " ");
      odec(&out, alog[i].count);
    }
    ostr(&out, "\n");
    out.nrec++;
  }
  for (auto &kv : g_sessions) {
    if (kv.second->user.capacity() > 15) r_member(kv.second->user.data(), "user");
    if (kv.first.capacity() > 15) r_member(kv.first.data(), "first");
  }
  for (auto &kv : g_series) r_member(kv.second.data(), "second");
  otruth_close(&out);
}

int main(int argc, char **argv) {
  const char *truth, *ready;
  fixture_args(argc, argv, "usage: stl_types_fixture TRUTH_FILE [--wait READY_FILE]",
               nullptr, nullptr, 0, &truth, &ready);
  find_module(module, sizeof module);
  build();
  explain_all();
  scrub();
  write_truth(truth);
  scrub();
  hd_fixture_stop();
  fixture_wait(ready, 1);
  return 0;
}
