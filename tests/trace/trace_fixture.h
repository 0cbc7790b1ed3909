/* Shared by trace_fixture.c and its C++ sites (trace_fixture_cxx.cpp). */
#ifndef TRACE_FIXTURE_H
#define TRACE_FIXTURE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A block the fixture allocated, as the tracer should have seen it. */
struct blk {
  void *p;
  uint64_t size;   /* bytes asked for */
  unsigned birth;  /* epoch at allocation */
  int tracked;     /* allocated while tracing was on */
  const char *fn;  /* the site function */
};

/* Record an allocation by op (HD_TRACE_*) at fn / a free at fn. Both
   count only while tracing is on, as the tracer does. */
void note_alloc(const char *fn, int op, struct blk *b, void *p, uint64_t size);
void note_free(const char *fn, struct blk *b);

/* The C++ sites: operator new and delete in their forms. */
void site_e(void);
void delete_e_objects(void);
void delete_e_rest(void);
void cxx_failures(void);

#ifdef __cplusplus
}
#endif

#endif
