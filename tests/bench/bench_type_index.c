// Benchmark of core/types: hd_type_index_build on the files given (libc's
// separate debug file is the reference), then the queries over every type.
// Prints figures, checks nothing.
//
// Usage: bench_type_index FILE [FILE...]
//
// Time is the best of RUNS builds. "retained" is what the index keeps
// allocated (mallinfo2 before and after, so libdwarf's memory, released by
// dwarf_finish, is not in it); "peak" is the resident growth during the
// build, libdwarf's decompressed sections included, measured by resetting
// VmHWM through /proc/self/clear_refs.
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapdom.h"
#include "types/type_index.h"

#define RUNS 3

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kb = -1;
	size_t len = strlen(field);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, len) && line[len] == ':') {
			kb = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

// Resets the peak RSS to the current RSS; returns the current RSS in kB,
// or -1 if the kernel does not let us.
static long peak_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int ok = fputs("5", f) >= 0;
	if (fclose(f) || !ok)
		return -1;
	return status_kb("VmRSS");
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

// Queries over every type: what a heap typing pass would ask.
static void bench_queries(const struct hd_type_index *ix)
{
	static struct hd_ptr_slot slots[4096];
	char buf[512];
	size_t structs = 0, num_slots = 0;
	double t0 = now();
	for (size_t i = 0; i < ix->num_types; i++) {
		const struct hd_type *t = &ix->types[i];
		if ((t->kind != HD_TYPE_STRUCT && t->kind != HD_TYPE_UNION) ||
		    t->declaration)
			continue;
		size_t total;
		structs++;
		hd_type_pointer_slots(ix, i, slots, 4096, &total);
		num_slots += total;
	}
	double t1 = now();
	for (size_t i = 0; i < ix->num_types; i++)
		hd_type_name(ix, i, buf, sizeof(buf));
	double t2 = now();
	size_t found = 0;
	for (size_t i = 0; i < ix->num_types; i++) {
		const struct hd_type *t = &ix->types[i];
		if (t->kind == HD_TYPE_STRUCT && t->name &&
		    hd_type_find_struct(ix, t->name) != HD_TYPE_NONE)
			found++;
	}
	double t3 = now();
	printf("  slots of %zu structs/unions: %zu slots, %.1f ms\n", structs,
	       num_slots, (t1 - t0) * 1e3);
	printf("  names of all types: %.1f ms; find_struct x%zu: %.1f ms\n",
	       (t2 - t1) * 1e3, found, (t3 - t2) * 1e3);
}

static int bench_file(const char *path)
{
	double best = 1e9;
	long base_kb = -1, peak_kb = -1;
	size_t retained = 0;
	struct hd_type_index *ix = NULL;

	for (int run = 0; run < RUNS; run++) {
		hd_type_index_destroy(ix);
		ix = NULL;
		malloc_trim(0);
		size_t before = heap_in_use();
		base_kb = peak_reset();
		double t0 = now();
		struct hd_error *err = hd_type_index_build(path, &ix);
		double t = now() - t0;
		if (err) {
			fprintf(stderr, "%s\n", err->message);
			hd_error_destroy(err);
			return 1;
		}
		if (base_kb >= 0)
			peak_kb = status_kb("VmHWM") - base_kb;
		retained = heap_in_use() - before;
		if (t < best)
			best = t;
	}
	size_t arrays = ix->num_types * sizeof(*ix->types) +
			ix->num_members * sizeof(*ix->members) +
			ix->num_variables * sizeof(*ix->variables);
	printf("%s\n", path);
	printf("  %zu types, %zu members, %zu variables\n", ix->num_types,
	       ix->num_members, ix->num_variables);
	printf("  build: %.3f s (best of %d)\n", best, RUNS);
	printf("  retained: %.1f MB (%.1f MB arrays, rest names, maps, "
	       "flags): %.1f bytes per type+member\n",
	       retained / 1048576.0, arrays / 1048576.0,
	       (double)retained / (ix->num_types + ix->num_members));
	if (peak_kb >= 0)
		printf("  peak resident growth during build: %.1f MB\n",
		       peak_kb / 1024.0);
	bench_queries(ix);
	hd_type_index_destroy(ix);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [FILE...]\n", argv[0]);
		return 2;
	}
	int rc = 0;
	for (int i = 1; i < argc; i++)
		rc |= bench_file(argv[i]);
	return rc;
}
