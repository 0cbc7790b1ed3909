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

// Waits for the DWARF reading hd_session_prepare_types started, if any.
// Whatever started it calls this before it returns, even on error: a
// front-end keeps its session between commands, and no thread of ours may
// run while the debugger goes on (or quits and unloads us).
void hd_session_join_prefetch(struct hd_session *s);
// The default framework modules (the built-in ones and
// HEAPDOM_FRAMEWORK_PATH's) after analyze, for their block names in every
// report (hd_fw_block_name): the default semantic tree's when it was
// computed, else an analysis of their own, computed once.
struct hd_fw;
struct hd_error *hd_session_framework_names(struct hd_session *s,
					    const struct hd_fw **ret);
// The default modules' semantic tree when they found sub-allocator blocks
// the program uses (pymalloc's objects): those blocks are vertices of that
// tree alone, so `types` counts and `why` explains them there. NULL
// (success) when they found none: the plain graph has every used block.
struct hd_error *hd_session_subblock_semantic(struct hd_session *s,
					      const struct hd_semantic **ret);

#endif
