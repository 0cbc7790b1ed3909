// Heap statistics: per region and in total, by state and free list, and a
// power-of-two size-class table of used blocks (like malloc_info).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define NCLASSES HD_SIZE_CLASSES

struct count {
	uint64_t blocks, bytes;
};

struct tally {
	struct count used, internal, mmapped;
	struct count *free; // one per free list of the heap (every allocator's)
	uint64_t usable; // usable bytes of used blocks (mmapped included)
};

static void add(struct count *c, uint64_t bytes)
{
	c->blocks++;
	c->bytes += bytes;
}

static void tally_block(struct tally *t, const struct hd_block *b)
{
	switch (b->state) {
	case HD_STATE_USED:
		add(b->mmapped ? &t->mmapped : &t->used, b->extent);
		t->usable += b->usable;
		break;
	case HD_STATE_FREE:
		add(&t->free[b->list], b->extent);
		break;
	case HD_STATE_INTERNAL:
		add(&t->internal, b->extent);
		break;
	}
}

unsigned hd_size_class(uint64_t usable)
{
	// Class k holds sizes in (2^(k-1), 2^k]; class 0 holds 0 and 1.
	unsigned k = 0;
	while (k + 1 < NCLASSES && (1ULL << k) < usable)
		k++;
	return k;
}

// Tallies of the whole heap, each region, each allocator and the blocks
// in mappings of their own; their free counts share one array.
struct stats {
	struct tally total, mmapped_only;
	struct tally *regions, *allocs;
	struct count *free_counts;
	struct count classes[NCLASSES];
};

static void stats_deinit(struct stats *s)
{
	free(s->regions);
	free(s->allocs);
	free(s->free_counts);
}

static struct hd_error *compute(const struct hd_heap *h, struct stats *s)
{
	memset(s, 0, sizeof(*s));
	size_t na = hd_heap_num_regions(h), nal = hd_heap_num_allocators(h);
	size_t nl = hd_heap_num_free_lists(h);
	s->regions = calloc(na ? na : 1, sizeof(*s->regions));
	s->allocs = calloc(nal ? nal : 1, sizeof(*s->allocs));
	s->free_counts = calloc((na + nal + 2) * nl, sizeof(*s->free_counts));
	if (!s->regions || !s->allocs || !s->free_counts) {
		stats_deinit(s);
		return &hd_error_no_memory;
	}
	struct count *fc = s->free_counts;
	s->total.free = fc;
	s->mmapped_only.free = fc + nl;
	for (size_t i = 0; i < na; i++)
		s->regions[i].free = fc + (2 + i) * nl;
	for (size_t i = 0; i < nal; i++)
		s->allocs[i].free = fc + (2 + na + i) * nl;
	size_t n = hd_heap_num_blocks(h);
	for (size_t i = 0; i < n; i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		tally_block(&s->total, &b);
		tally_block(b.region == HD_NO_REGION || b.region >= na
				    ? &s->mmapped_only : &s->regions[b.region], &b);
		if (nal > 1 && b.allocator < nal)
			tally_block(&s->allocs[b.allocator], &b);
		if (b.state == HD_STATE_USED)
			add(&s->classes[hd_size_class(b.usable)], b.usable);
	}
	return NULL;
}

// Free blocks, not the memory the allocator has not carved yet (a
// reserve list: glibc's top chunks).
static uint64_t free_blocks(const struct hd_heap *h, const struct tally *t)
{
	uint64_t n = 0;
	for (size_t l = 0; l < hd_heap_num_free_lists(h); l++)
		if (!hd_heap_free_list(h, l)->reserve)
			n += t->free[l].blocks;
	return n;
}

static uint64_t free_bytes(const struct hd_heap *h, const struct tally *t)
{
	uint64_t n = 0;
	for (size_t l = 0; l < hd_heap_num_free_lists(h); l++)
		if (!hd_heap_free_list(h, l)->reserve)
			n += t->free[l].bytes;
	return n;
}

// What an allocator holds and does not use (issue 22): the memory its
// regions got from the system (system_bytes) plus its segments outside
// every region (a mapping per block), less the bytes of its used blocks.
// Its free and internal blocks lie in that memory; "other" is the rest
// (not carved into blocks yet, headers, metadata, alignment). Reserve
// lists are given apart: glibc's top chunks lie in the held memory (in
// "other"), jemalloc's retained extents are address space it gave back
// (outside). When the used, free and internal blocks add up to more than
// the regions hold, the backend does not count all it holds: the figure
// is unknown, not a guess.
struct held {
	uint64_t held, used, unused, free, reserve, internal, other;
	bool known;
};

static void held_of(const struct hd_heap *h, size_t a, struct held *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < hd_heap_num_regions(h); i++) {
		const struct hd_region *r = hd_heap_region(h, i);
		if (r->allocator == a)
			ret->held += r->system_bytes;
	}
	for (size_t i = 0; i < hd_heap_num_segments(h); i++) {
		const struct hd_heap_segment *g = hd_heap_segment(h, i);
		if (g->allocator == a && g->region == HD_NO_REGION && g->end > g->start)
			ret->held += g->end - g->start;
	}
	struct hd_allocator_totals t;
	hd_heap_allocator_totals(h, a, &t);
	ret->used = t.used_bytes;
	ret->free = t.free_bytes;
	ret->reserve = t.reserve_bytes;
	ret->internal = t.internal_bytes;
	uint64_t in = t.used_bytes + t.free_bytes + t.internal_bytes;
	ret->known = ret->held >= in;
	if (ret->known) {
		ret->unused = ret->held - ret->used;
		ret->other = ret->held - in;
	}
}

static void json_held(FILE *out, const struct hd_heap *h, size_t a)
{
	struct held x;
	held_of(h, a, &x);
	fprintf(out, ", \"held_bytes\": %" PRIu64 ", \"fragmentation\": ", x.held);
	if (!x.known) {
		fprintf(out, "null, \"fragmentation_unknown\": \"its used, free and internal blocks add up to more than the %" PRIu64 " bytes its regions got from the system\"",
			x.held);
		return;
	}
	fprintf(out,
		"{\"bytes\": %" PRIu64 ", \"free\": %" PRIu64 ", \"internal\": %" PRIu64 ", \"other\": %" PRIu64 ", \"reserve\": %" PRIu64 "}",
		x.unused, x.free, x.internal, x.other, x.reserve);
}

static void text_held(FILE *out, const struct hd_heap *h, size_t a)
{
	struct held x;
	held_of(h, a, &x);
	struct hd_heap_info info;
	hd_heap_allocator_info(h, a, &info);
	char held[32], used[32], un[32], fr[32], rs[32], in[32], ot[32];
	hd_format_size(x.held, held, sizeof(held));
	hd_format_size(x.used, used, sizeof(used));
	hd_format_size(x.reserve, rs, sizeof(rs));
	if (!x.known) {
		fprintf(out, "  %s: its regions got %s from the system, but its blocks add up to more: held but unused unknown\n",
			info.allocator, held);
		return;
	}
	hd_format_size(x.unused, un, sizeof(un));
	hd_format_size(x.free, fr, sizeof(fr));
	hd_format_size(x.internal, in, sizeof(in));
	hd_format_size(x.other, ot, sizeof(ot));
	fprintf(out, "  %s: holds %s, %s in used blocks, %s held but unused (%.1f%%):\n"
		"    free blocks %s, internal %s, other %s (not carved yet, headers, metadata, alignment); reserve lists %s\n",
		info.allocator, held, used, un,
		x.held ? 100.0 * (double)x.unused / (double)x.held : 0.0, fr, in,
		ot, rs);
}

static void json_count(FILE *out, const char *name, const struct count *c)
{
	fprintf(out, "\"%s\": {\"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
		name, c->blocks, c->bytes);
}

static void json_tally(FILE *out, const struct hd_heap *h, const struct tally *t)
{
	json_count(out, "used", &t->used);
	fputs(", ", out);
	json_count(out, "mmapped", &t->mmapped);
	fputs(", ", out);
	json_count(out, "internal", &t->internal);
	fprintf(out, ", \"usable\": %" PRIu64 ", \"overhead\": %" PRIu64 ", \"free\": {",
		t->usable, t->used.bytes + t->mmapped.bytes - t->usable);
	// Two allocators may name a list alike ("free"): one member each.
	bool first = true;
	for (size_t l = 1; l < hd_heap_num_free_lists(h); l++) {
		const char *name = hd_heap_free_list(h, l)->name;
		size_t k = 1;
		while (k < l && strcmp(hd_heap_free_list(h, k)->name, name) != 0)
			k++;
		if (k < l)
			continue;
		struct count c = t->free[l];
		for (k = l + 1; k < hd_heap_num_free_lists(h); k++)
			if (strcmp(hd_heap_free_list(h, k)->name, name) == 0) {
				c.blocks += t->free[k].blocks;
				c.bytes += t->free[k].bytes;
			}
		fputs(first ? "" : ", ", out);
		first = false;
		json_count(out, name, &c);
	}
	fputc('}', out);
}

static void render_json(FILE *out, struct hd_target *t, const struct hd_heap *h,
			const struct stats *s)
{
	fputc('{', out);
	hd_json_heap_header(out, t, h);
	fputs(", \"totals\": {", out);
	json_tally(out, h, &s->total);
	fputs("}, \"region_stats\": [", out);
	for (size_t i = 0; i < hd_heap_num_regions(h); i++) {
		const struct hd_region *r = hd_heap_region(h, i);
		struct hd_heap_info info;
		hd_heap_allocator_info(h, r->allocator, &info);
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", \"allocator\": ",
			i ? ", " : "", r->addr);
		hd_json_string(out, info.allocator);
		fputs(", ", out);
		json_tally(out, h, &s->regions[i]);
		fputc('}', out);
	}
	// Each allocator's tally (one allocator: the totals).
	fputs("], \"allocator_stats\": [", out);
	for (size_t a = 0; a < hd_heap_num_allocators(h); a++) {
		struct hd_heap_info info;
		hd_heap_allocator_info(h, a, &info);
		fprintf(out, "%s{\"name\": ", a ? ", " : "");
		hd_json_string(out, info.allocator);
		fputs(", ", out);
		json_tally(out, h, hd_heap_num_allocators(h) > 1 ? &s->allocs[a]
								  : &s->total);
		json_held(out, h, a);
		fputc('}', out);
	}
	fputs("], \"size_classes\": [", out);
	bool first = true;
	for (unsigned k = 0; k < NCLASSES; k++) {
		if (!s->classes[k].blocks)
			continue;
		uint64_t lo = k == 0 ? 0 : (1ULL << (k - 1)) + 1;
		fprintf(out,
			"%s{\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			first ? "" : ", ", lo, (uint64_t)1 << k, s->classes[k].blocks,
			s->classes[k].bytes);
		first = false;
	}
	fputs("]}\n", out);
}

static void text_row(FILE *out, const char *label, const struct count *c)
{
	char sz[32];
	hd_format_size(c->bytes, sz, sizeof(sz));
	fprintf(out, "  %-20s %12" PRIu64 " %12s\n", label, c->blocks, sz);
}

static void text_tally(FILE *out, const struct hd_heap *h, const struct tally *t)
{
	char sz[32];
	text_row(out, "used", &t->used);
	if (t->mmapped.blocks)
		text_row(out, "used (mmapped)", &t->mmapped);
	for (size_t l = 1; l < hd_heap_num_free_lists(h); l++) {
		if (!t->free[l].blocks)
			continue;
		char label[32];
		snprintf(label, sizeof(label), "free: %s", hd_heap_free_list(h, l)->name);
		text_row(out, label, &t->free[l]);
	}
	if (t->internal.blocks)
		text_row(out, "internal (allocator)", &t->internal);
	hd_format_size(t->used.bytes + t->mmapped.bytes - t->usable, sz,
		       sizeof(sz));
	fprintf(out, "  %-20s %12s %12s   block headers and padding of used blocks\n",
		"overhead", "", sz);
}

static void render_text(FILE *out, struct hd_target *t, const struct hd_heap *h,
			const struct stats *s, bool color)
{
	char used[32], freeb[32];
	hd_format_size(s->total.used.bytes + s->total.mmapped.bytes, used,
		       sizeof(used));
	hd_format_size(free_bytes(h, &s->total), freeb, sizeof(freeb));
	hd_text_problems(out, t, h, color);
	size_t nr = hd_heap_num_regions(h), nal = hd_heap_num_allocators(h);
	// Regions of one kind are counted by it ("3 arenas").
	const char *kind = nr ? hd_heap_region(h, 0)->kind : "region";
	for (size_t i = 1; i < nr; i++)
		if (strcmp(hd_heap_region(h, i)->kind, kind) != 0)
			kind = "region";
	size_t kl = strlen(kind);
	fprintf(out,
		"heap of %s: %" PRIu64 " used blocks (%s), %" PRIu64 " free (%s), %zu %s%s",
		hd_target_name(t), s->total.used.blocks + s->total.mmapped.blocks,
		used, free_blocks(h, &s->total), freeb, nr, kind,
		nr == 1 ? "" : kl && kind[kl - 1] == 's' ? "es" : "s");
	if (nal > 1)
		fprintf(out, ", %zu allocators", nal);
	fputc('\n', out);
	for (size_t a = 0; a < nal; a++)
		hd_text_allocator(out, h, a);
	fputc('\n', out);
	hd_heading(out, color, "Total");
	fprintf(out, "  %-20s %12s %12s\n", "", "blocks", "bytes");
	text_tally(out, h, &s->total);
	hd_heading(out, color, "\nHeld but unused (fragmentation)");
	for (size_t a = 0; a < nal; a++)
		text_held(out, h, a);
	for (size_t a = 0; nal > 1 && a < nal; a++) {
		struct hd_heap_info info;
		hd_heap_allocator_info(h, a, &info);
		hd_heading(out, color, "\nAllocator %s%s", info.allocator,
			   a == 0 ? " (primary: its used blocks hold the most bytes)" : "");
		text_tally(out, h, &s->allocs[a]);
	}
	for (size_t i = 0; i < nr; i++) {
		const struct hd_region *r = hd_heap_region(h, i);
		char sys[32], whose[64] = "";
		hd_format_size(r->system_bytes, sys, sizeof(sys));
		if (nal > 1) {
			struct hd_heap_info info;
			hd_heap_allocator_info(h, r->allocator, &info);
			snprintf(whose, sizeof(whose), "%s ", info.allocator);
		}
		hd_heading(out, color, "\nRegion 0x%" PRIx64 " (%s%s%s): %zu segment%s, %s from the system",
			r->addr, whose, r->primary ? "primary " : "", r->kind,
			r->num_segments, r->num_segments == 1 ? "" : "s", sys);
		text_tally(out, h, &s->regions[i]);
	}
	if (s->mmapped_only.mmapped.blocks) {
		hd_heading(out, color, "\nBlocks in mappings of their own (no region)");
		text_row(out, "used (mmapped)", &s->mmapped_only.mmapped);
	}
	hd_heading(out, color, "\nUsed blocks by size class (usable bytes)");
	fprintf(out, "  %-20s %12s %12s\n", "size", "blocks", "bytes");
	for (unsigned k = 0; k < NCLASSES; k++) {
		if (!s->classes[k].blocks)
			continue;
		char lo[32], hi[32], label[80];
		hd_format_size(k == 0 ? 0 : (1ULL << (k - 1)) + 1, lo, sizeof(lo));
		hd_format_size(1ULL << k, hi, sizeof(hi));
		snprintf(label, sizeof(label), "%s - %s", lo, hi);
		text_row(out, label, &s->classes[k]);
	}
}

struct hd_error *hd_render_stats(FILE *out, struct hd_session *session,
				 const struct hd_render_options *o)
{
	const struct hd_heap *h;
	struct hd_error *err = hd_session_heap(session, &h);
	if (err)
		return err;
	struct hd_target *t = hd_session_target(session);
	struct stats s;
	err = compute(h, &s);
	if (err)
		return err;
	if (o->format == HD_FORMAT_JSON)
		render_json(out, t, h, &s);
	else
		render_text(out, t, h, &s, o->color);
	stats_deinit(&s);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
