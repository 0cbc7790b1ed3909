// musl's malloc (mallocng, musl 1.2.1 to 1.2.5; Debian 12 ships 1.2.3) as
// a backend of the allocator seam: what context.c (finding the allocator's
// state), areas.c (its meta areas and groups), slots.c (the blocks) and
// walk.c (driving the walk, regions, facts) share.
//
// The layouts, x86-64, as mallocng's meta.h declares them (unchanged from
// 1.2.1 to 1.2.5):
// - struct malloc_context (the hidden global __malloc_context, 928 bytes):
//   secret, init_done, mmap_counter, free_meta_head, avail_meta,
//   avail_meta_count, avail_meta_area_count, meta_alloc_shift,
//   meta_area_head, meta_area_tail, avail_meta_areas, active[48],
//   usage_by_class[48], unmap_seq[32], bounces[32], seq, brk;
// - struct meta_area (one 4 KiB page): check (== secret), next, nslots,
//   then nslots struct meta of 40 bytes;
// - struct meta: prev, next, mem (its group), avail_mask, freed_mask, and
//   one word of bit-fields: last_idx:5, freeable:1, sizeclass:6, maplen;
// - struct group (16 bytes before its slots): its meta, active_idx;
// - a slot's in-band header, the 4 bytes before the pointer malloc
//   returned: [-4] zero (or a 32-bit offset flag), [-3] slot index (5 bits)
//   and reserved code (3 bits), [-2..-1] the offset of the pointer from the
//   group's storage in 16-byte units.
#ifndef HD_HEAP_MUSL_INTERNAL_H
#define HD_HEAP_MUSL_INTERNAL_H

#include "heap/backend.h"

#define MUSL_UNIT 16
#define MUSL_IB 4      // the in-band header
#define MUSL_PAGE 4096
#define MUSL_CLASSES 48
#define MUSL_CLASS_MMAP 63 // an allocation past the mmap threshold

// struct malloc_context
#define MUSL_CTX_SIZE 928
#define MUSL_CTX_SECRET 0
#define MUSL_CTX_INIT_DONE 8
#define MUSL_CTX_MMAP_COUNTER 12
#define MUSL_CTX_FREE_META_HEAD 16
#define MUSL_CTX_AVAIL_META 24
#define MUSL_CTX_AVAIL_META_COUNT 32
#define MUSL_CTX_META_AREA_HEAD 56
#define MUSL_CTX_META_AREA_TAIL 64
#define MUSL_CTX_ACTIVE 80
#define MUSL_CTX_USAGE 464

// struct meta_area and struct meta
#define MUSL_AREA_HEADER 24
#define MUSL_META_SIZE 40
#define MUSL_AREA_SLOTS ((MUSL_PAGE - MUSL_AREA_HEADER) / MUSL_META_SIZE)

// The symbol of the context in a static program's symbol table.
#define MUSL_CTX_SYMBOL "__malloc_context"
// musl's bump allocator (lite_malloc), in static programs without free.
#define MUSL_SIMPLE_SYMBOL "__simple_malloc"

extern const uint16_t musl_size_classes[MUSL_CLASSES];

struct musl_ctx {
	uint64_t addr;
	const char *method; // "symbol" or "heuristic"
	char how[160];      // how it was found, for the version source
	char version[16];   // musl's release from its libc file, or ""

	uint8_t raw[MUSL_CTX_SIZE];
};

static inline uint64_t musl_u64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}
static inline uint32_t musl_u32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}

// Whether the target's malloc is musl's (a musl loader or libc module, or
// the context's symbol in a static program), written to evidence.
bool musl_detect(const struct hd_heap_source *src, char *evidence,
		 size_t len);
// Finds and reads the context: by its symbol, else from the data of musl's
// libc (or a static executable): an initialised context whose first meta
// area begins with its secret. HD_ERROR_NOT_FOUND names what was searched.
struct hd_error *musl_find_ctx(const struct hd_heap_source *src,
			       struct musl_ctx *ret);
// Whether the 928 bytes at addr (raw) are an initialised context whose
// meta area list starts with its secret.
bool musl_ctx_plausible(struct hd_target *t, const uint8_t *raw);

// ------------------------------------------------------------ the walk

// One group, from its meta (areas.c), placed (nesting) and walked.
struct musl_group {
	uint64_t meta, mem, end; // the group's memory [mem, end)
	uint64_t stride;         // bytes a slot takes
	uint64_t maplen;         // pages of its own mapping, 0 if none
	uint32_t avail, freed;   // the meta's masks
	uint32_t containers;     // slots holding a nested group
	unsigned cnt, sc, active_idx;
	bool freeable, skip;
	int parent;              // group whose slot holds it, -1 if none
	uint16_t region;
};

// A walk's state (walk.c drives it: areas.c, then slots.c).
struct musl_walker {
	struct hd_target *t;
	struct hd_heap *h;
	const struct musl_ctx *ctx;
	uint64_t secret;
	struct musl_group *g;
	size_t ng, capg;
	uint64_t last_end; // of the last block added
	size_t areas, nested, mapped, donated;
	uint16_t class_region[MUSL_CLASSES];
	// The memory of the top-level group being walked (nested groups lie
	// inside it), or none.
	struct hd_view v;
	bool have_view;
};

// Reads n bytes at addr: from the view of the group being walked when it
// holds them, else from the target. False if unreadable.
bool musl_read(struct musl_walker *w, uint64_t addr, void *buf, size_t n);
// Every meta area from the context's list and every group in use (areas.c).
struct hd_error *musl_read_areas(struct musl_walker *w);
// Sorts the groups by address and finds which slot holds each nested one
// (areas.c).
struct hd_error *musl_nest(struct musl_walker *w);
// Adds every slot's block in address order (slots.c).
struct hd_error *musl_emit(struct musl_walker *w);

struct hd_error *musl_walk(const struct hd_heap_source *src,
			   struct hd_heap *h);

// Free slots by the mask that holds them: avail_mask ("avail": ready to be
// handed out), freed_mask ("freed"), and freed_mask past the group's
// active_idx ("inactive": slots never handed out yet).
enum musl_list { MUSL_LIST_NONE, MUSL_LIST_AVAIL, MUSL_LIST_FREED,
		 MUSL_LIST_INACTIVE, MUSL_NUM_LISTS };

#endif
