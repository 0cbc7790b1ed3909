// Heap statistics: per region and in total, by state and free list, and a
// power-of-two size-class table of used blocks (like malloc_info).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define NCLASSES HD_SIZE_CLASSES
// Lists a backend may declare (heap_internal.h: 4 bits of flags).
#define NLISTS 16

struct count {
	uint64_t blocks, bytes;
};

struct tally {
	struct count used, internal, mmapped;
	struct count free[NLISTS];
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
		add(&t->free[b->list < NLISTS ? b->list : 0], b->extent);
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

struct stats {
	struct tally total, mmapped_only;
	struct tally *regions;
	struct count classes[NCLASSES];
};

static struct hd_error *compute(const struct hd_heap *h, struct stats *s)
{
	memset(s, 0, sizeof(*s));
	size_t na = hd_heap_num_regions(h);
	s->regions = calloc(na ? na : 1, sizeof(*s->regions));
	if (!s->regions)
		return &hd_error_no_memory;
	size_t n = hd_heap_num_blocks(h);
	for (size_t i = 0; i < n; i++) {
		struct hd_block b;
		hd_heap_block(h, i, &b);
		tally_block(&s->total, &b);
		tally_block(b.region == HD_NO_REGION || b.region >= na
				    ? &s->mmapped_only : &s->regions[b.region], &b);
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
	for (size_t l = 0; l < hd_heap_num_free_lists(h) && l < NLISTS; l++)
		if (!hd_heap_free_list(h, l)->reserve)
			n += t->free[l].blocks;
	return n;
}

static uint64_t free_bytes(const struct hd_heap *h, const struct tally *t)
{
	uint64_t n = 0;
	for (size_t l = 0; l < hd_heap_num_free_lists(h) && l < NLISTS; l++)
		if (!hd_heap_free_list(h, l)->reserve)
			n += t->free[l].bytes;
	return n;
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
	for (size_t l = 1; l < hd_heap_num_free_lists(h) && l < NLISTS; l++) {
		if (l > 1)
			fputs(", ", out);
		json_count(out, hd_heap_free_list(h, l)->name, &t->free[l]);
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
		fprintf(out, "%s{\"addr\": \"0x%" PRIx64 "\", ", i ? ", " : "",
			hd_heap_region(h, i)->addr);
		json_tally(out, h, &s->regions[i]);
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
	for (size_t l = 1; l < hd_heap_num_free_lists(h) && l < NLISTS; l++) {
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
	size_t nr = hd_heap_num_regions(h);
	const char *kind = nr ? hd_heap_region(h, 0)->kind : "region";
	size_t kl = strlen(kind);
	fprintf(out,
		"heap of %s: %" PRIu64 " used blocks (%s), %" PRIu64 " free (%s), %zu %s%s\n",
		hd_target_name(t), s->total.used.blocks + s->total.mmapped.blocks,
		used, free_blocks(h, &s->total), freeb, nr,
		kind, nr == 1 ? "" : kl && kind[kl - 1] == 's' ? "es" : "s");
	hd_text_allocator(out, h);
	fputc('\n', out);
	hd_heading(out, color, "Total");
	fprintf(out, "  %-20s %12s %12s\n", "", "blocks", "bytes");
	text_tally(out, h, &s->total);
	for (size_t i = 0; i < nr; i++) {
		const struct hd_region *r = hd_heap_region(h, i);
		char sys[32];
		hd_format_size(r->system_bytes, sys, sizeof(sys));
		hd_heading(out, color, "\nRegion 0x%" PRIx64 " (%s%s): %zu segment%s, %s from the system",
			r->addr, r->primary ? "primary " : "", r->kind,
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
	free(s.regions);
	if (ferror(out))
		return hd_error_create(HD_ERROR_OS, "cannot write output");
	return NULL;
}
