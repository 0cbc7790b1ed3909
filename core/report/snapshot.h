// A heap snapshot summary (snapshot.c makes, writes and reads it; diff.c
// compares them). Nothing in it is an address: it is matched between
// stops and cores by type names and root paths (docs/snapshots.md).
#ifndef HD_REPORT_SNAPSHOT_H
#define HD_REPORT_SNAPSHOT_H

#include "heapdom.h"

#define HD_SNAPSHOT_VERSION 1

struct hd_snap_count {
	uint64_t blocks, bytes; // chunk bytes
};

struct hd_snap_class {
	uint64_t min, max;      // usable sizes [min, max]
	uint64_t blocks, bytes; // used blocks, their usable bytes
};

struct hd_snap_type {
	char *name;    // "struct entry", "char[]"; NULL: untyped
	uint64_t size; // untyped: the usable size of its blocks
	uint64_t count, bytes, retained;
};

// Dominator subtrees with the same root path, together.
struct hd_snap_path {
	char *path;
	uint64_t count;    // subtrees
	uint64_t blocks;   // blocks they retain
	uint64_t retained; // bytes they retain
};

struct hd_snapshot {
	char *source;      // file read, or the target's name
	char *target;      // what the snapshot was made of
	char *target_kind; // "core", "live", "callback"
	bool partial;      // the heap walk found problems
	struct hd_snap_count used, free, top, internal;
	struct hd_snap_class *classes;
	size_t num_classes;
	struct hd_snap_type *types;
	size_t num_types;
	struct hd_snap_path *paths;
	size_t num_paths;
	uint64_t depth;      // levels of children below the top holders
	uint64_t limit;      // root paths kept at most
	uint64_t candidates; // subtrees considered
	uint64_t evaluated;  // of those, given a path (largest first)
};

// "unk<SIZE>" for an untyped row, else its name, into buf.
const char *hd_snap_type_key(const struct hd_snap_type *t, char *buf,
			     size_t len);

// Runs the diff command: loads its operands (snapshot files or cores).
struct hd_error *hd_run_diff(FILE *out, const struct hd_command *c,
			     const struct hd_render_options *o);

#endif
