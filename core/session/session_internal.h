// Session stages that only the library's renderers use.
#ifndef HD_SESSION_INTERNAL_H
#define HD_SESSION_INTERNAL_H

#include "heapdom.h"

struct hd_semantic;

// The semantic tree with the named framework modules (n == 0: the built-in
// ones and HEAPDOM_FRAMEWORK_PATH's), computed once per list of names.
struct hd_error *hd_session_semantic(struct hd_session *s,
				     const char *const *names, size_t n,
				     const struct hd_semantic **ret);

#endif
