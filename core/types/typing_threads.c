// Large levels of the typing propagation followed on threads, when asked
// for (--jobs N > 1); typing.c holds the propagation on one thread and
// calls here.
//
// A large level is followed by threads, each over a run of its blocks in
// address order, that only read: the typings each block's references
// propose are recorded, and one thread applies them after, in the order
// the sequential pass would have (block by block, member by member), so
// the typing does not depend on the number of threads. The sequential pass
// follows a block with the typing it has when its turn comes, which an
// earlier block of its level may have given it: such a block (its entry
// is no longer the one its thread read) is followed again at its turn, as
// are blocks whose members are read from memory (hd_typing_follow_block).
#include <stdlib.h>

#include "types/typing_internal.h"
#include "util/thread.h"
#include "util/vec.h"

// The level goes by batches, so that what the threads record stays small.
#define LEVEL_BATCH 65536

// One typing a block's reference proposes: its target, the element count
// the target's size gives, and the slot of the block's entry.
struct proposal {
	uint32_t target;
	uint32_t count;
	uint32_t slot; // | PROPOSAL_SAME: the target had that entry already
	uint32_t entry; // the typing, HD_ENTRY_NONE: not made yet
};
#define PROPOSAL_SAME UINT32_C(0x80000000)
// The entry a thread records for a block it left to the applying thread.
#define ENTRY_DEFERRED (HD_ENTRY_NONE - 1)

struct level_part {
	const struct propagation *p;
	const uint32_t *ids;
	size_t n;
	uint32_t batch_lo, batch_hi; // the batch's first and last blocks
	uint32_t *entry;  // per block: its entry when read, or ENTRY_DEFERRED
	uint32_t *nprops; // per block: how many proposals it made
	struct proposal *props;
	size_t num_props, cap_props;
	// Whether a block of the batch proposes a typing to another, or was
	// left to the applying thread: the proposals must be applied in
	// order, on one thread (apply_part).
	bool ordered;
	bool no_memory;
};

// follow_refs, recording instead of assigning. A proposal that cannot
// change anything is dropped only when its entry exists already (applying
// it would create none): a target typed by its vtable or contradictory
// keeps that for good. One whose target has the entry already is marked:
// it is a no-op unless the target was retyped in this batch before its
// turn (hd_typing_assign's retyped list).
static bool collect_refs(struct level_part *w, uint32_t id,
			 const struct hd_type_entry *e, uint32_t lo, uint32_t hi)
{
	const struct propagation *p = w->p;
	const struct hd_typing *ty = p->ty;
	const struct hd_heap *h = p->h;
	const uint32_t *targets, *words;
	uint32_t n = hd_refs_row(p->refs, id, &targets, &words);
	if (!n)
		return true;
	uint32_t wpe = e->element_words;
	uint64_t wlimit = typed_words(h, e, id);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t wd = words[j], t = targets[j];
		if (wd >= wlimit)
			break;
		if (t & HD_EDGE_INTERIOR)
			continue;
		uint32_t r = wd % wpe;
		int32_t first = e->word_slot[r];
		if (first < 0)
			continue;
		for (size_t i = (size_t)first;
		     i < e->nslots && e->slots[i].offset / 8 == r; i++) {
			const struct hd_typed_slot *s = &e->slots[i];
			if (!s->usable)
				continue;
			uint32_t c = element_count(h, t, s->psize, s->chars, s->one);
			if (!c)
				continue;
			uint32_t known = c == 1 && s->single != HD_ENTRY_NONE
					 ? s->single
					 : hd_typing_find_entry(ty, e->module, s->pointee,
								c, NULL);
			uint32_t slot = (uint32_t)i;
			if (known != HD_ENTRY_NONE) {
				if ((ty->strength[t] & 0x7f) >= 2)
					continue;
				if (ty->block_entry[t] == known)
					slot |= PROPOSAL_SAME;
			}
			// A proposal that may retype a block of the batch
			// changes what that block proposes at its turn.
			if (!(slot & PROPOSAL_SAME) && t >= lo && t <= hi &&
			    (p->batch[t / 64] & (1ull << (t % 64))))
				w->ordered = true;
			struct proposal pr = {.target = t, .count = c, .slot = slot,
					      .entry = known};
			if (!HD_VEC_PUSH(w->props, w->num_props, w->cap_props, pr))
				return false;
		}
	}
	return true;
}

static void *collect_part(void *arg)
{
	struct level_part *w = arg;
	const struct propagation *p = w->p;
	const struct hd_typing *ty = p->ty;
	w->num_props = 0;
	w->no_memory = false;
	w->ordered = false;
	for (size_t b = 0; b < w->n; b++) {
		if (b + 3 * PREFETCH_AHEAD < w->n)
			hd_refs_offsets_prefetch(p->refs, w->ids[b + 3 * PREFETCH_AHEAD]);
		if (b + 2 * PREFETCH_AHEAD < w->n)
			hd_refs_row_prefetch(p->refs, w->ids[b + 2 * PREFETCH_AHEAD]);
		if (b + PREFETCH_AHEAD < w->n)
			prefetch_targets(p, w->ids[b + PREFETCH_AHEAD]);
		uint32_t id = w->ids[b], ei = ty->block_entry[id];
		w->entry[b] = ei;
		w->nprops[b] = 0;
		if (ei == HD_ENTRY_NONE || ty->entries[ei].module == NO_MODULE)
			continue;
		const struct hd_type_entry *e = &ty->entries[ei];
		// No typed member: hd_typing_follow_block types nothing either.
		if (e->slots_ready && !e->nslots)
			continue;
		if (!e->slots_ready || !e->word_slot ||
		    hd_heap_usable(p->h, id) / 8 >= HD_REF_FAR_WORD ||
		    !hd_refs_block_scanned(p->refs, id)) {
			w->entry[b] = ENTRY_DEFERRED;
			w->ordered = true;
			continue;
		}
		size_t before = w->num_props;
		if (!collect_refs(w, id, e, w->batch_lo, w->batch_hi)) {
			w->no_memory = true;
			return NULL;
		}
		w->nprops[b] = (uint32_t)(w->num_props - before);
	}
	return NULL;
}

// Applies a part's proposals in the sequential pass's order.
static struct hd_error *apply_part(struct propagation *p,
				   const struct level_part *w)
{
	struct hd_typing *ty = p->ty;
	size_t k = 0;
	for (size_t b = 0; b < w->n; b++) {
		uint32_t id = w->ids[b], ei = w->entry[b];
		size_t end = k + w->nprops[b];
		if (ei == ENTRY_DEFERRED || ty->block_entry[id] != ei) {
			k = end;
			struct hd_error *err = hd_typing_follow_block(p, id);
			if (err)
				return err;
			continue;
		}
		for (; k < end; k++) {
			if (k + 16 < w->num_props) {
				__builtin_prefetch(&ty->block_entry[w->props[k + 16].target]);
				__builtin_prefetch(&ty->strength[w->props[k + 16].target]);
			}
			const struct proposal *pr = &w->props[k];
			if ((pr->slot & PROPOSAL_SAME) &&
			    !(p->num_retyped &&
			      (p->retyped[pr->target / 64] & (1ull << (pr->target % 64)))))
				continue;
			uint32_t e;
			struct hd_error *err = hd_typing_slot_entry(ty, ei,
								    pr->slot & ~PROPOSAL_SAME,
								    pr->count, &e);
			if (!err)
				err = hd_typing_assign(p, pr->target, e, 1);
			if (err)
				return err;
		}
	}
	return NULL;
}

// The proposals of a batch that retype none of its blocks, applied by
// threads that each own a range of targets: a block's typing depends only
// on the proposals made to it, which its thread applies in the sequential
// order. The entries they need are made before, in that order, on one
// thread, so that they are numbered as the sequential pass numbers them;
// the next level is sorted, so the order of its blocks does not matter.
struct target_part {
	struct propagation q; // its own queue, counts and retyped list
	const struct level_part *parts;
	unsigned num_parts;
	uint32_t lo, hi; // targets [lo, hi), multiples of 64 (retyped bits)
	struct hd_error *err;
};

static struct hd_error *make_entries(struct propagation *p, struct level_part *w)
{
	size_t k = 0;
	for (size_t b = 0; b < w->n; b++) {
		size_t end = k + w->nprops[b];
		for (; k < end; k++) {
			struct proposal *pr = &w->props[k];
			if (pr->entry != HD_ENTRY_NONE)
				continue;
			struct hd_error *err = hd_typing_slot_entry(p->ty, w->entry[b],
								    pr->slot & ~PROPOSAL_SAME,
								    pr->count, &pr->entry);
			if (err)
				return err;
		}
	}
	return NULL;
}

static void *apply_targets(void *arg)
{
	struct target_part *a = arg;
	struct propagation *q = &a->q;
	for (unsigned j = 0; j < a->num_parts && !a->err; j++) {
		const struct level_part *w = &a->parts[j];
		for (size_t k = 0; k < w->num_props; k++) {
			if (k + 16 < w->num_props) {
				uint32_t f = w->props[k + 16].target;
				if (f >= a->lo && f < a->hi)
					__builtin_prefetch(&q->ty->block_entry[f]);
			}
			const struct proposal *pr = &w->props[k];
			uint32_t t = pr->target;
			if (t < a->lo || t >= a->hi)
				continue;
			if ((pr->slot & PROPOSAL_SAME) &&
			    !(q->num_retyped && (q->retyped[t / 64] & (1ull << (t % 64)))))
				continue;
			a->err = hd_typing_assign(q, t, pr->entry, 1);
			if (a->err)
				break;
		}
	}
	return NULL;
}

static struct hd_error *apply_by_targets(struct propagation *p)
{
	unsigned k = p->threads;
	struct target_part a[HD_TYPING_MAX_THREADS];
	uint64_t words = p->h->num_blocks / 64 + 1;
	for (unsigned j = 0; j < k; j++) {
		a[j] = (struct target_part){.q = *p, .parts = p->parts, .num_parts = k};
		struct propagation *q = &a[j].q;
		q->queue = NULL;
		q->head = q->tail = q->cap = 0;
		q->conflicts = 0;
		q->ambiguous = 0;
		q->retyped_ids = NULL;
		q->num_retyped = q->cap_retyped = 0;
		q->track = true;
		uint64_t lo = words * j / k * 64, hi = words * (j + 1) / k * 64;
		a[j].lo = (uint32_t)(lo < UINT32_MAX ? lo : UINT32_MAX);
		a[j].hi = (uint32_t)(hi < UINT32_MAX ? hi : UINT32_MAX);
	}
	hd_threads_run(apply_targets, a, sizeof(*a), k);
	struct hd_error *err = NULL;
	for (unsigned j = 0; j < k; j++) {
		struct propagation *q = &a[j].q;
		if (!err)
			err = a[j].err;
		for (size_t i = 0; !err && i < q->tail; i++)
			err = hd_typing_push(p, q->queue[i]);
		for (size_t i = 0; !err && i < q->num_retyped; i++)
			if (!HD_VEC_PUSH(p->retyped_ids, p->num_retyped,
					 p->cap_retyped, q->retyped_ids[i]))
				err = &hd_error_no_memory;
		// Not pushed: cleared here.
		for (size_t i = 0; err && i < q->num_retyped; i++)
			p->retyped[q->retyped_ids[i] / 64] = 0;
		p->conflicts += q->conflicts;
		p->ambiguous += q->ambiguous;
		free(q->queue);
		free(q->retyped_ids);
	}
	return err;
}

static struct hd_error *level_parts_init(struct propagation *p)
{
	size_t per = LEVEL_BATCH / p->threads + 1;
	p->parts = calloc(p->threads, sizeof(*p->parts));
	p->retyped = calloc(p->h->num_blocks / 64 + 1, sizeof(*p->retyped));
	p->batch = calloc(p->h->num_blocks / 64 + 1, sizeof(*p->batch));
	if (!p->parts || !p->retyped || !p->batch)
		return &hd_error_no_memory;
	for (unsigned j = 0; j < p->threads; j++) {
		p->parts[j].p = p;
		p->parts[j].entry = malloc(per * sizeof(uint32_t));
		p->parts[j].nprops = malloc(per * sizeof(uint32_t));
		if (!p->parts[j].entry || !p->parts[j].nprops)
			return &hd_error_no_memory;
	}
	return NULL;
}

void hd_typing_level_parts_deinit(struct propagation *p)
{
	for (unsigned j = 0; p->parts && j < p->threads; j++) {
		free(p->parts[j].entry);
		free(p->parts[j].nprops);
		free(p->parts[j].props);
	}
	free(p->parts);
	free(p->retyped);
	free(p->retyped_ids);
	free(p->batch);
}

struct hd_error *hd_typing_follow_level_threads(struct propagation *p,
						const uint32_t *ids, size_t n)
{
	struct hd_typing *ty = p->ty;
	struct hd_error *err = p->parts ? NULL : level_parts_init(p);
	unsigned k = p->threads;
	for (size_t b0 = 0; !err && b0 < n; b0 += LEVEL_BATCH) {
		size_t bn = n - b0 < LEVEL_BATCH ? n - b0 : LEVEL_BATCH;
		// The threads only read: the entries' slots first.
		for (size_t i = 0; i < bn && !err; i++) {
			uint32_t ei = ty->block_entry[ids[b0 + i]];
			if (ei != HD_ENTRY_NONE && ty->entries[ei].module != NO_MODULE)
				err = hd_typing_entry_slots(ty, ei);
		}
		if (err)
			break;
		for (size_t i = 0; i < bn; i++)
			p->batch[ids[b0 + i] / 64] |= 1ull << (ids[b0 + i] % 64);
		for (unsigned j = 0; j < k; j++) {
			size_t lo = bn * j / k, hi = bn * (j + 1) / k;
			p->parts[j].ids = ids + b0 + lo;
			p->parts[j].n = hi - lo;
			p->parts[j].batch_lo = ids[b0];
			p->parts[j].batch_hi = ids[b0 + bn - 1];
		}
		hd_threads_run(collect_part, p->parts, sizeof(*p->parts), k);
		for (size_t i = 0; i < bn; i++)
			p->batch[ids[b0 + i] / 64] = 0;
		bool ordered = false;
		for (unsigned j = 0; j < k && !err; j++) {
			if (p->parts[j].no_memory)
				err = &hd_error_no_memory;
			ordered |= p->parts[j].ordered;
		}
		if (!ordered) {
			for (unsigned j = 0; j < k && !err; j++)
				err = make_entries(p, &p->parts[j]);
			if (!err)
				err = apply_by_targets(p);
		} else {
			p->track = true;
			for (unsigned j = 0; j < k && !err; j++)
				err = apply_part(p, &p->parts[j]);
			p->track = false;
		}
		for (size_t i = 0; i < p->num_retyped; i++)
			p->retyped[p->retyped_ids[i] / 64] = 0;
		p->num_retyped = 0;
	}
	if (k > p->threads_used)
		p->threads_used = k;
	return err;
}
