// Fast paths of the framework API for the built-in modules, whose calls
// run once per container of millions (the libstdc++ module). Each answers
// what the public call it stands for answers; they only skip work that
// call repeats on every call (decoding a whole block, hashing a name).
#ifndef HD_FW_FAST_H
#define HD_FW_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapdom_framework.h"

// Whether a used block (heap or sub-allocator) starts at addr with at
// least need usable bytes: hd_fw_vertex_at then hd_fw_vertex_block,
// without decoding the block. Sets *v (and *usable when not NULL) when it
// does.
bool hd_fw_used_block_at(struct hd_fw *fw, uint64_t addr, uint64_t need,
			 uint32_t *v, uint64_t *usable);
// Fetches into the CPU's cache, in parallel, what hd_fw_used_block_at
// reads for each of the n (at most 64) addresses: a hint, no answer.
void hd_fw_prefetch_blocks(struct hd_fw *fw, const uint64_t *addrs, size_t n);
// The typing's entry (an index among the types it gave blocks) whose name
// hd_typing_block_name writes for heap block id whatever the block's size,
// or UINT32_MAX (not typed, or an array whose length the block's size
// bounds): blocks of one entry have one name.
uint32_t hd_fw_block_entry(struct hd_fw *fw, size_t id);
// Fetches what naming vertex v (hd_fw_name) writes: a hint.
void hd_fw_prefetch_vertex(struct hd_fw *fw, uint32_t v);
// The index of name among the interned labels (entered if new, so call it
// when hd_fw_name would first have met name: labels keep the order they
// were first named in); UINT32_MAX without memory.
uint32_t hd_fw_label(struct hd_fw *fw, const char *name);
// hd_fw_name(fw, v, name) for label = hd_fw_label(fw, name).
struct hd_error *hd_fw_name_label(struct hd_fw *fw, uint32_t v, uint32_t label);
// The DWARF type hd_fw_type would find for name: false when none (its
// HD_ERROR_NOT_FOUND), else *key for hd_fw_type_key (keys stay valid for
// the analysis).
bool hd_fw_type_lookup(struct hd_fw *fw, const char *name, uint64_t *key);
// hd_fw_type(fw, v, name) for a name hd_fw_type_lookup found.
struct hd_error *hd_fw_type_key(struct hd_fw *fw, uint32_t v, uint64_t key);
// hd_fw_objects for a caller that only asks whether an object's where
// holds a '[' (an array's element): where is "[" when hd_fw_objects' would
// hold one, else "" (member paths are not written out per object).
struct hd_error *hd_fw_objects_brackets(struct hd_fw *fw,
					const char *const *prefixes, size_t n,
					hd_fw_object_fn fn, void *arg);
// hd_fw_objects_in(fw, type, ...) for the key hd_fw_type_lookup gave for
// type.
struct hd_error *hd_fw_objects_in_key(struct hd_fw *fw, uint64_t key,
				      uint64_t addr, uint32_t holder,
				      const char *where,
				      const char *const *prefixes, size_t n,
				      hd_fw_object_fn fn, void *arg);
// Leaves the memo hd_fw_objects_in keeps for prefixes as calls calls of
// it on type would (a caller that lists the objects later, through
// other prefixes, keeps the memo's state what it was when listing them
// at once: the state decides which calls of types not whole are cut
// short).
void hd_fw_objects_touch(struct hd_fw *fw, const char *type,
			 const char *const *prefixes, size_t n, size_t calls);
// Whether every hd_fw_objects_in of (type, prefixes) lists all the
// type's objects (none is cut short at the cap of one call, and warns), so
// that when such a call is made cannot change what it does.
bool hd_fw_objects_whole(struct hd_fw *fw, const char *type,
			 const char *const *prefixes, size_t n);

struct hd_graph;
struct hd_csr;
struct hd_fw_holders;

// A built-in module that names blocks only through containers it finds
// itself, and may therefore wait until a report asks about a block it
// could name (defer.c): it finds its containers only with hd_fw_objects
// and these prefixes (in global variables and typed heap blocks), and
// names a block only after reaching it through an aligned pointer word
// held by such a container or by a block it named before.
struct hd_fw_deferral {
	const struct hd_framework *ops;
	const char *const *prefixes;
	size_t num_prefixes;
	// Optional: names block id as the module's whole run would, when
	// that can be shown from one container of it alone (its names and
	// DWARF types set with hd_fw_set_alone): true when named so; false
	// when it cannot be shown (the module then runs). g and rev are the
	// analysis graph and its predecessors, hs the holders of the
	// prefixes' objects; *state is the module's own between calls,
	// freed with alone_free.
	bool (*name_alone)(struct hd_fw *fw, size_t id, const struct hd_graph *g,
			   const struct hd_csr *rev, struct hd_fw_holders *hs,
			   void **state);
	void (*alone_free)(void *state);
};

// Whether u points at the start of v in g (an aligned word holding v's
// address), not only inside it.
bool hd_fw_exact_edge(const struct hd_graph *g, uint32_t u, uint32_t v);
// The globals' objects of prefixes alone, as hd_fw_objects lists them
// after the heap blocks'.
struct hd_error *hd_fw_objects_globals(struct hd_fw *fw,
				       const char *const *prefixes, size_t n,
				       hd_fw_object_fn fn, void *arg);
// The objects of prefixes in typed heap block id alone, as hd_fw_objects
// lists them.
struct hd_error *hd_fw_objects_block(struct hd_fw *fw,
				     const char *const *prefixes, size_t n,
				     size_t id, hd_fw_object_fn fn, void *arg);
// Gives vertex v the name label (hd_fw_label) and, unless key is
// UINT64_MAX, the DWARF type key (hd_fw_type_lookup) the deferred module
// would have given it, outside its run.
struct hd_error *hd_fw_set_alone(struct hd_fw *fw, uint32_t v, uint32_t label,
				 uint64_t key);

#endif
