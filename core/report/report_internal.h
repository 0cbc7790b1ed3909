// Shared by the renderers: JSON string escaping and the heap header.
#ifndef HD_REPORT_INTERNAL_H
#define HD_REPORT_INTERNAL_H

#include "heapdom.h"

void hd_json_string(FILE *out, const char *s);
// "target", "method", "partial", "problems", "arenas" members (no braces).
void hd_json_heap_header(FILE *out, struct hd_target *t,
			 const struct hd_heap *h);
// Problems as text lines on out, prefixed "warning: ".
void hd_text_problems(FILE *out, const struct hd_heap *h);

#endif
