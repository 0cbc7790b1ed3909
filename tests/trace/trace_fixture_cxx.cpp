/* trace_fixture's C++ site: every form of operator new from site_e, the
   deletes from two other functions (at different epochs). */
#include <cstdint>
#include <cstdlib>
#include <new>

#include "heapdom_trace.h"
#include "trace_fixture.h"

#define SITE __attribute__((noinline, noclone))

namespace {
struct Obj {
  uint64_t v[5];
};
struct alignas(64) Al {
  char c[128];
};

const int NOBJ = 200, NARR = 100, NAL = 20, NNT = 10, NZERO = 3, NALA = 5;
blk objs[NOBJ], arrs[NARR], als[NAL], nts[NNT], zeros[NZERO], alas[NALA];
}  // namespace

extern "C" SITE void site_e(void) {
  for (int i = 0; i < NOBJ; i++)
    note_alloc("site_e", HD_TRACE_MALLOC, &objs[i], new Obj, sizeof(Obj));          // _Znwm
  for (int i = 0; i < NARR; i++)
    note_alloc("site_e", HD_TRACE_MALLOC, &arrs[i], new int[25], 25 * sizeof(int)); // _Znam
  for (int i = 0; i < NAL; i++)
    note_alloc("site_e", HD_TRACE_MEMALIGN, &als[i], new Al, sizeof(Al)); // _ZnwmSt11align_val_t
  for (int i = 0; i < NNT; i++)
    note_alloc("site_e", HD_TRACE_MALLOC, &nts[i], new (std::nothrow) char[7], 7);
  for (int i = 0; i < NZERO; i++)
    note_alloc("site_e", HD_TRACE_MALLOC, &zeros[i], ::operator new(0), 0);
  for (int i = 0; i < NALA; i++)
    note_alloc("site_e", HD_TRACE_MEMALIGN, &alas[i],
               ::operator new[](256, std::align_val_t(32)), 256);
  for (int i = 0; i < NAL; i++)
    if (reinterpret_cast<uintptr_t>(als[i].p) % 64) std::abort();  // misaligned
}

// Failures: new throws std::bad_alloc (through the tracer's C frames), the
// nothrow form returns null. Called while tracing is off: throwing
// allocates the exception object inside libstdc++, which the fixture
// cannot count.
extern "C" SITE void cxx_failures(void) {
  static volatile size_t huge = SIZE_MAX / 4;
  bool thrown = false;
  try {
    char *p = new char[huge];
    p[0] = 1;
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  if (!thrown) std::abort();
  if (new (std::nothrow) char[huge] != nullptr) std::abort();
  thrown = false;
  try {
    ::operator delete(::operator new(huge, std::align_val_t(64)), std::align_val_t(64));
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  if (!thrown) std::abort();
}

extern "C" SITE void delete_e_objects(void) {
  for (int i = 0; i < NOBJ; i++) {
    delete static_cast<Obj *>(objs[i].p);  // sized: _ZdlPvm
    note_free("delete_e_objects", &objs[i]);
  }
}

extern "C" SITE void delete_e_rest(void) {
  for (int i = 0; i < NARR; i++) {
    delete[] static_cast<int *>(arrs[i].p);
    note_free("delete_e_rest", &arrs[i]);
  }
  for (int i = 0; i < NAL; i++) {
    delete static_cast<Al *>(als[i].p);  // aligned (sized) delete
    note_free("delete_e_rest", &als[i]);
  }
  for (int i = 0; i < NNT; i++) {
    delete[] static_cast<char *>(nts[i].p);
    note_free("delete_e_rest", &nts[i]);
  }
  for (int i = 0; i < NZERO; i++) {
    ::operator delete(zeros[i].p);
    note_free("delete_e_rest", &zeros[i]);
  }
  for (int i = 0; i < NALA; i++) {
    ::operator delete[](alas[i].p, std::align_val_t(32));
    note_free("delete_e_rest", &alas[i]);
  }
}
