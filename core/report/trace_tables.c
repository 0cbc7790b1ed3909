// The allocation tracer's tables read from a process or a core
// (trace_tables.h).
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "report/trace_tables.h"

// Tags are read through windows of this many bytes of a heap segment.
#define TAG_WINDOW (1u << 20)

// The reader's copy of the header must be the library's, field for field.
_Static_assert(sizeof(struct trace_head) == offsetof(struct hd_trace_state, sites),
	       "trace_head is the state up to its sites");
_Static_assert(offsetof(struct trace_head, enabled) == offsetof(struct hd_trace_state, enabled) &&
	       offsetof(struct trace_head, tag_key) == offsetof(struct hd_trace_state, tag_key) &&
	       offsetof(struct trace_head, classes) == offsetof(struct hd_trace_state, classes) &&
	       offsetof(struct trace_head, ages) == offsetof(struct hd_trace_state, ages),
	       "trace_head's fields are where the library writes them");

struct hd_error *hd_trace_locate(struct hd_session *s, uint64_t *addr)
{
	struct hd_debuginfo *di = hd_session_debuginfo(s);
	uint64_t size = 0;
	struct hd_error *err = hd_debuginfo_find_symbol(di, NULL, HD_TRACE_SYMBOL,
							addr, &size);
	if (err) {
		hd_error_destroy(err);
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s has no allocation tracer: libheapdom-trace.so is not loaded (LD_PRELOAD it, or heap-trace start in gdb or lldb)",
				       hd_target_name(hd_session_target(s)));
	}
	return NULL;
}

static struct hd_error *read_head(struct hd_target *t, uint64_t addr,
				  struct trace_head *h)
{
	struct hd_error *err = hd_target_read(t, addr, h, sizeof(*h));
	if (err)
		return hd_error_prefix(err, "cannot read the tracer's state at 0x%" PRIx64, addr);
	if (h->magic != HD_TRACE_MAGIC)
		return hd_error_at(HD_ERROR_FORMAT, addr,
				   "the tracer's state at 0x%" PRIx64 " is not initialised (no magic): the library was loaded but its constructor has not run",
				   addr);
	if (h->version != HD_TRACE_VERSION || h->size != sizeof(struct hd_trace_state))
		return hd_error_at(HD_ERROR_MISMATCH, addr,
				   "the tracer in the process is version %u (%u bytes), this heapdom reads version %u (%zu bytes): use the libheapdom-trace.so built with it",
				   h->version, h->size, HD_TRACE_VERSION,
				   sizeof(struct hd_trace_state));
	return NULL;
}

// Reads one of the tracer's tables (what: its name in the error) into a
// new buffer, *out; the caller frees it.
static struct hd_error *read_table(struct hd_target *t, uint64_t addr, size_t bytes,
				   const char *what, void **out)
{
	void *buf = malloc(bytes);
	if (!buf)
		return &hd_error_no_memory;
	struct hd_error *err = hd_target_read(t, addr, buf, bytes);
	if (err) {
		free(buf);
		return hd_error_prefix(err, "cannot read the tracer's %s", what);
	}
	*out = buf;
	return NULL;
}

static void add_count(struct hd_trace_count *to, const struct hd_trace_count *c)
{
	to->count += c->count;
	to->bytes += c->bytes;
}

// Adds the threads' shards (heapdom_trace.h) to the shared counters: the
// head's and the site rows (raw). A shard entry naming no slot is skipped
// (a damaged core).
static struct hd_error *fold_shards(struct hd_target *t, struct trace *tr,
				    struct hd_trace_site *raw)
{
	size_t n = HD_TRACE_SHARDS;
	struct hd_trace_shard *sh = NULL;
	struct hd_error *err = read_table(t, tr->addr + offsetof(struct hd_trace_state, shards),
					  n * sizeof(*sh), "per-thread counters", (void **)&sh);
	if (err)
		return err;
	struct trace_head *h = &tr->head;
	for (size_t i = 0; i < n; i++) {
		h->untracked_frees += sh[i].untracked_frees;
		for (int k = 0; k < HD_TRACE_CLASSES; k++)
			add_count(&h->classes[k], &sh[i].classes[k]);
		for (int k = 0; k < HD_TRACE_AGES; k++)
			add_count(&h->ages[k], &sh[i].ages[k]);
		for (size_t j = 0; j < HD_TRACE_SHARD_SITES; j++) {
			const struct hd_trace_shard_site *ss = &sh[i].sites[j];
			if (ss->slot == 0 || ss->slot > HD_TRACE_SITES)
				continue;
			for (int op = 0; op < HD_TRACE_OPS; op++)
				add_count(&raw[ss->slot - 1].op[op], &ss->op[op]);
		}
	}
	free(sh);
	return NULL;
}

static struct hd_error *read_sites(struct hd_target *t, struct trace *tr)
{
	size_t n = HD_TRACE_SITES;
	struct hd_trace_site *raw = NULL;
	struct hd_error *err = read_table(t, tr->addr + offsetof(struct hd_trace_state, sites),
					  n * sizeof(*raw), "call sites", (void **)&raw);
	if (err)
		return err;
	err = fold_shards(t, tr, raw);
	if (err) {
		free(raw);
		return err;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		for (int op = 0; op < HD_TRACE_OPS; op++) {
			tr->calls[op] += raw[i].op[op].count;
			if (i == HD_TRACE_NO_SITE)
				tr->dropped_sites += raw[i].op[op].count;
		}
		k += raw[i].pc != 0 && i != HD_TRACE_NO_SITE;
	}
	tr->sites = calloc(k ? k : 1, sizeof(*tr->sites));
	tr->slot_site = malloc(n * sizeof(*tr->slot_site));
	if (!tr->sites || !tr->slot_site) {
		free(raw);
		return &hd_error_no_memory;
	}
	for (size_t i = 0; i < n; i++) {
		tr->slot_site[i] = UINT32_MAX;
		if (!raw[i].pc || i == HD_TRACE_NO_SITE)
			continue;
		tr->slot_site[i] = (uint32_t)tr->num_sites;
		struct site *s = &tr->sites[tr->num_sites++];
		s->s = raw[i];
		for (int op = 0; op < HD_TRACE_OPS; op++)
			if (op != HD_TRACE_FREE) {
				s->alloc_count += raw[i].op[op].count;
				s->alloc_bytes += raw[i].op[op].bytes;
			}
	}
	free(raw);
	return NULL;
}

static struct hd_error *add_birth(struct trace *tr, uint32_t epoch, uint64_t bytes)
{
	// Epochs are few and arrive mostly in order: find from the end.
	size_t i = tr->num_births;
	while (i > 0 && tr->births[i - 1].epoch > epoch)
		i--;
	if (i > 0 && tr->births[i - 1].epoch == epoch) {
		tr->births[i - 1].count++;
		tr->births[i - 1].bytes += bytes;
		return NULL;
	}
	if (tr->num_births == tr->cap_births) {
		size_t cap = tr->cap_births ? 2 * tr->cap_births : 64;
		struct birth *b = realloc(tr->births, cap * sizeof(*b));
		if (!b)
			return &hd_error_no_memory;
		tr->births = b;
		tr->cap_births = cap;
	}
	memmove(&tr->births[i + 1], &tr->births[i],
		(tr->num_births - i) * sizeof(*tr->births));
	tr->births[i] = (struct birth){epoch, 1, bytes};
	tr->num_births++;
	return NULL;
}

static struct hd_error *add_block(struct trace *tr, uint64_t addr, uint32_t site,
				  uint32_t birth)
{
	if (tr->num_blocks == tr->cap_blocks) {
		size_t cap = tr->cap_blocks ? 2 * tr->cap_blocks : 1024;
		struct traced_block *b = realloc(tr->blocks, cap * sizeof(*b));
		if (!b)
			return &hd_error_no_memory;
		tr->blocks = b;
		tr->cap_blocks = cap;
	}
	tr->blocks[tr->num_blocks++] = (struct traced_block){addr, site, birth};
	return NULL;
}

// A copy of [lo, lo + len) of a heap segment, TAG_WINDOW bytes at most.
struct tag_window {
	uint8_t *buf;
	uint64_t lo, len;
};

// What is read of a block for its tag: its last two words, the tag and
// the word before it (a far slack's, heapdom_trace.h).
#define TAG_READ (2 * HD_TRACE_TAG)

// Reads the TAG_READ bytes at addr into tag, through the window (refilled
// from addr to at most seg_end when addr is outside it). False if they
// cannot be read.
static bool window_read(struct hd_target *t, struct tag_window *w, uint64_t addr,
			uint64_t seg_end, uint64_t tag[2])
{
	if (addr < w->lo || addr + TAG_READ > w->lo + w->len) {
		uint64_t len = seg_end - addr < TAG_WINDOW ? seg_end - addr : TAG_WINDOW;
		struct hd_error *err = hd_target_read(t, addr, w->buf, len);
		if (err) {
			hd_error_destroy(err);
			w->len = 0;
			err = hd_target_read(t, addr, tag, TAG_READ);
			if (err)
				hd_error_destroy(err);
			return !err;
		}
		w->lo = addr;
		w->len = len;
	}
	memcpy(tag, w->buf + (addr - w->lo), TAG_READ);
	return true;
}

// The used blocks the tracer tagged (heapdom_trace.h): the tag in the
// last usable word of each, checked against the state's key.
static struct hd_error *read_tags(struct hd_target *t, const struct hd_heap *h,
				  struct trace *tr, bool blocks)
{
	struct tag_window w = {.buf = malloc(TAG_WINDOW)};
	if (!w.buf)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	size_t id = 0, n = hd_heap_num_blocks(h);
	for (size_t s = 0; s < hd_heap_num_segments(h) && !err; s++) {
		const struct hd_heap_segment *seg = hd_heap_segment(h, s);
		for (; id < n && !err; id++) {
			struct hd_block b;
			hd_heap_block(h, id, &b);
			if (b.addr >= seg->end)
				break;
			uint64_t tag[2], size;
			uint32_t site, birth;
			if (b.state != HD_STATE_USED || b.addr < seg->start || b.usable < TAG_READ ||
			    b.addr + b.usable > seg->end ||
			    !window_read(t, &w, b.addr + b.usable - TAG_READ, seg->end, tag) ||
			    !hd_trace_tag_read(&tag[1], b.addr, tr->head.tag_key, b.usable, &size,
					       &site, &birth))
				continue;
			birth = hd_trace_tag_birth(tr->head.epoch, birth);
			tr->live_count++;
			tr->live_bytes += size;
			uint32_t ix = site < HD_TRACE_SITES ? tr->slot_site[site] : UINT32_MAX;
			if (ix != UINT32_MAX) {
				tr->sites[ix].live_count++;
				tr->sites[ix].live_bytes += size;
			}
			err = add_birth(tr, birth, size);
			if (!err && blocks)
				err = add_block(tr, b.addr, ix, birth);
		}
	}
	free(w.buf);
	return err;
}

void hd_trace_deinit(struct trace *tr)
{
	free(tr->sites);
	free(tr->slot_site);
	free(tr->births);
	free(tr->blocks);
}

struct hd_error *hd_trace_load(struct hd_session *ses, struct trace *tr, bool blocks)
{
	memset(tr, 0, sizeof(*tr));
	struct hd_target *t = hd_session_target(ses);
	const struct hd_heap *h;
	struct hd_error *err = hd_trace_locate(ses, &tr->addr);
	if (!err)
		err = read_head(t, tr->addr, &tr->head);
	if (!err)
		err = read_sites(t, tr);
	if (!err)
		err = hd_session_heap(ses, &h);
	if (!err)
		err = read_tags(t, h, tr, blocks);
	struct hd_debuginfo *di = hd_session_debuginfo(ses);
	for (size_t i = 0; !err && i < tr->num_sites; i++) {
		struct site *s = &tr->sites[i];
		// A return address: the call is the instruction before it.
		struct hd_error *e = hd_debuginfo_locate(di, s->s.pc - 1, &s->loc);
		s->located = !e;
		if (e == &hd_error_no_memory)
			err = e;
		else
			hd_error_destroy(e);
	}
	if (err)
		hd_trace_deinit(tr);
	return err;
}

void hd_trace_site_label(const struct site *s, char *buf, size_t len)
{
	if (!s->located || !s->loc.function) {
		snprintf(buf, len, "0x%" PRIx64 "%s%s", s->s.pc,
			 s->located ? " in " : "", s->located ? s->loc.module : "");
		return;
	}
	if (s->loc.file)
		snprintf(buf, len, "%s (%s:%u)", s->loc.function, s->loc.file, s->loc.line);
	else
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", s->loc.function, s->loc.offset,
			 s->loc.module);
}

void hd_trace_site_json(FILE *out, const struct site *s)
{
	fprintf(out, "\"pc\": \"0x%" PRIx64 "\", \"function\": ", s->s.pc);
	if (s->located && s->loc.function)
		hd_json_string(out, s->loc.function);
	else
		fputs("null", out);
	fputs(", \"file\": ", out);
	if (s->located && s->loc.file)
		hd_json_string(out, s->loc.file);
	else
		fputs("null", out);
	fprintf(out, ", \"line\": %u, \"module\": ", s->located ? s->loc.line : 0);
	if (s->located)
		hd_json_string(out, s->loc.module);
	else
		fputs("null", out);
}
