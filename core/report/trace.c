// `heapdom trace`: the tables libheapdom-trace.so keeps in the traced
// process (core/include/heapdom_trace.h), read from the process or its
// core and reported by call site, source file, size class and age, with
// each site's allocations still live in the heap.
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom_trace.h"
#include "report/report_internal.h"

#define DEFAULT_TOP 20
// Live entries are read this many at a time (the table is 48 MiB).
#define LIVE_CHUNK 65536

static const char *const op_names[HD_TRACE_OPS] = {
	[HD_TRACE_MALLOC] = "malloc",
	[HD_TRACE_CALLOC] = "calloc",
	[HD_TRACE_REALLOC] = "realloc",
	[HD_TRACE_MEMALIGN] = "memalign",
	[HD_TRACE_FREE] = "free",
};

// The header of the state: everything before the sites.
struct trace_head {
	uint64_t magic;
	uint32_t version, size;
	uint32_t enabled, epoch;
	uint64_t pid;
	uint64_t dropped_live, untracked_frees;
	struct hd_trace_count classes[HD_TRACE_CLASSES];
	struct hd_trace_count ages[HD_TRACE_AGES];
	struct hd_trace_big big[HD_TRACE_BIG];
};

// The reader's copy of the header must be the library's, field for field.
_Static_assert(sizeof(struct trace_head) == offsetof(struct hd_trace_state, sites),
	       "trace_head is the state up to its sites");
_Static_assert(offsetof(struct trace_head, enabled) == offsetof(struct hd_trace_state, enabled) &&
	       offsetof(struct trace_head, dropped_live) == offsetof(struct hd_trace_state, dropped_live) &&
	       offsetof(struct trace_head, classes) == offsetof(struct hd_trace_state, classes) &&
	       offsetof(struct trace_head, ages) == offsetof(struct hd_trace_state, ages) &&
	       offsetof(struct trace_head, big) == offsetof(struct hd_trace_state, big),
	       "trace_head's fields are where the library writes them");

// One call site as reported: its counters, what of it is still live, and
// where it is.
struct site {
	struct hd_trace_site s;
	uint64_t live_count, live_bytes;
	struct hd_location loc;
	bool located;
	uint64_t alloc_count, alloc_bytes; // all allocating ops
};

struct birth {
	uint32_t epoch;
	uint64_t count, bytes;
};

struct trace {
	uint64_t addr;
	struct trace_head head;
	// Per op, the sum over every site slot, and the calls whose site
	// found no slot (the HD_TRACE_NO_SITE row).
	uint64_t calls[HD_TRACE_OPS], dropped_sites;
	struct site *sites;
	size_t num_sites;
	uint32_t *slot_site; // table slot -> index into sites, UINT32_MAX
	struct birth *births; // live allocations by birth epoch, sorted
	size_t num_births, cap_births;
	uint64_t live_count, live_bytes;
	uint64_t stale_entries; // live entries whose block is not in use
};

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
		h->dropped_live += sh[i].dropped_live;
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

// A live entry's size: sizes that do not fit its 32 bits are in `big`
// (a reader that stopped the process between the two writes finds none:
// the block's bytes are then unknown, and counted as 0).
static uint64_t big_size(const struct trace_head *h, uint64_t ptr, uint32_t size)
{
	if (size != HD_TRACE_BIG_SIZE)
		return size;
	for (size_t i = 0; i < HD_TRACE_BIG; i++)
		if (h->big[i].ptr == ptr)
			return h->big[i].size;
	return 0;
}

// Live entries count only when the heap has a used block starting there:
// a block allocated while tracing was on and freed while it was off keeps
// its entry.
static struct hd_error *read_live(struct hd_target *t, const struct hd_heap *h,
				  struct trace *tr)
{
	struct hd_trace_live *buf = malloc(LIVE_CHUNK * sizeof(*buf));
	if (!buf)
		return &hd_error_no_memory;
	uint64_t base = tr->addr + offsetof(struct hd_trace_state, live);
	struct hd_error *err = NULL;
	for (size_t at = 0; at < HD_TRACE_LIVE && !err; at += LIVE_CHUNK) {
		err = hd_target_read(t, base + at * sizeof(*buf), buf,
				     LIVE_CHUNK * sizeof(*buf));
		if (err) {
			err = hd_error_prefix(err, "cannot read the tracer's live allocations");
			break;
		}
		for (size_t i = 0; i < LIVE_CHUNK && !err; i++) {
			const struct hd_trace_live *e = &buf[i];
			if (e->key <= 1)
				continue;
			uint64_t ptr = HD_TRACE_KEY_ADDR(e->key);
			uint32_t site = HD_TRACE_KEY_SITE(e->key);
			int64_t id = hd_heap_find(h, ptr);
			struct hd_block b;
			if (id >= 0)
				hd_heap_block(h, (size_t)id, &b);
			if (id < 0 || b.addr != ptr || b.state != HD_STATE_USED) {
				tr->stale_entries++;
				continue;
			}
			uint64_t size = big_size(&tr->head, ptr, HD_TRACE_INFO_SIZE(e->info));
			tr->live_count++;
			tr->live_bytes += size;
			if (tr->slot_site[site] != UINT32_MAX) {
				struct site *st = &tr->sites[tr->slot_site[site]];
				st->live_count++;
				st->live_bytes += size;
			}
			err = add_birth(tr, HD_TRACE_INFO_BIRTH(e->info), size);
		}
	}
	free(buf);
	return err;
}

static void trace_deinit(struct trace *tr)
{
	free(tr->sites);
	free(tr->slot_site);
	free(tr->births);
}

static struct hd_error *trace_load(struct hd_session *ses, struct trace *tr)
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
		err = read_live(t, h, tr);
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
		trace_deinit(tr);
	return err;
}

static void site_label(const struct site *s, char *buf, size_t len)
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

// Rows of the report: a site, a file, a size class or an age.
struct row {
	char label[512];
	uint64_t count[HD_TRACE_OPS], bytes[HD_TRACE_OPS];
	uint64_t alloc_count, alloc_bytes, live_count, live_bytes;
	const struct site *site; // by site
};

static int row_by_bytes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->alloc_bytes != y->alloc_bytes)
		return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
	if (x->alloc_count != y->alloc_count)
		return x->alloc_count > y->alloc_count ? -1 : 1;
	return strcmp(x->label, y->label);
}

static void row_add(struct row *r, const struct site *s)
{
	for (int op = 0; op < HD_TRACE_OPS; op++) {
		r->count[op] += s->s.op[op].count;
		r->bytes[op] += s->s.op[op].bytes;
	}
	r->alloc_count += s->alloc_count;
	r->alloc_bytes += s->alloc_bytes;
	r->live_count += s->live_count;
	r->live_bytes += s->live_bytes;
}

// One row per site, or per source file (sites without one grouped by
// module).
static struct hd_error *make_rows(const struct trace *tr, bool by_file,
				  struct row **ret, size_t *n)
{
	struct row *rows = calloc(tr->num_sites ? tr->num_sites : 1, sizeof(*rows));
	if (!rows)
		return &hd_error_no_memory;
	size_t k = 0;
	for (size_t i = 0; i < tr->num_sites; i++) {
		const struct site *s = &tr->sites[i];
		char label[512];
		if (!by_file)
			site_label(s, label, sizeof(label));
		else if (s->located && s->loc.file)
			snprintf(label, sizeof(label), "%s", s->loc.file);
		else
			snprintf(label, sizeof(label), "(no line table: %s)",
				 s->located ? s->loc.module : "no module");
		size_t j = 0;
		if (by_file)
			while (j < k && strcmp(rows[j].label, label) != 0)
				j++;
		else
			j = k;
		if (j == k) {
			memcpy(rows[k].label, label, sizeof(label));
			rows[k].site = by_file ? NULL : s;
			k++;
		}
		row_add(&rows[j], s);
	}
	qsort(rows, k, sizeof(*rows), row_by_bytes);
	*ret = rows;
	*n = k;
	return NULL;
}

static void json_ops(FILE *out, const uint64_t *count, const uint64_t *bytes)
{
	fputc('{', out);
	for (int op = 0; op < HD_TRACE_OPS; op++)
		fprintf(out, "%s\"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			op ? ", " : "", op_names[op], count[op], bytes[op]);
	fputc('}', out);
}

static void json_rows(FILE *out, const char *name, const struct row *rows,
		      size_t n, size_t top)
{
	fprintf(out, ", \"%s\": [", name);
	for (size_t i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];
		fputs(i ? ",\n  {" : "\n  {", out);
		if (r->site) {
			const struct site *s = r->site;
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
		} else {
			fputs("\"file\": ", out);
			hd_json_string(out, r->label);
		}
		fputs(", \"ops\": ", out);
		json_ops(out, r->count, r->bytes);
		fprintf(out, ", \"allocated\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
			"}, \"live\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}",
			r->alloc_count, r->alloc_bytes, r->live_count, r->live_bytes);
	}
	fputs("\n]", out);
}

static uint64_t class_min(int k) { return k == 0 ? 0 : 1ull << (k - 1); }
static uint64_t class_max(int k) { return k == 0 ? 0 : k == 64 ? UINT64_MAX : (1ull << k) - 1; }

static void render_json(FILE *out, struct hd_session *ses, const struct trace *tr,
			const struct row *sites, size_t nsites,
			const struct row *files, size_t nfiles, size_t top)
{
	const struct trace_head *h = &tr->head;
	const struct hd_heap *heap;
	fputc('{', out);
	if (!hd_session_heap(ses, &heap)) {
		hd_json_heap_header(out, hd_session_target(ses), heap);
		fputs(", ", out);
	}
	fprintf(out, "\"tracer\": {\"address\": \"0x%" PRIx64 "\", \"enabled\": %s, \"epoch\": %u, \"pid\": %" PRIu64
		", \"calls\": ", tr->addr, h->enabled ? "true" : "false", h->epoch, h->pid);
	uint64_t zero[HD_TRACE_OPS] = {0};
	json_ops(out, tr->calls, zero);
	fprintf(out, ", \"dropped_sites\": %" PRIu64 ", \"dropped_live\": %" PRIu64
		", \"untracked_frees\": %" PRIu64 ", \"stale_live_entries\": %" PRIu64
		", \"sites\": %zu, \"live\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}",
		tr->dropped_sites, h->dropped_live, h->untracked_frees, tr->stale_entries,
		tr->num_sites, tr->live_count, tr->live_bytes);
	json_rows(out, "sites", sites, nsites, top);
	json_rows(out, "files", files, nfiles, top);
	fputs(", \"sizes\": [", out);
	bool first = true;
	for (int k = 0; k < HD_TRACE_CLASSES; k++) {
		if (!h->classes[k].count)
			continue;
		fprintf(out, "%s\n  {\"min\": %" PRIu64 ", \"max\": %" PRIu64 ", \"count\": %" PRIu64
			", \"bytes\": %" PRIu64 "}", first ? "" : ",", class_min(k), class_max(k),
			h->classes[k].count, h->classes[k].bytes);
		first = false;
	}
	fputs("\n], \"ages\": [", out);
	first = true;
	for (int a = 0; a < HD_TRACE_AGES; a++) {
		if (!h->ages[a].count)
			continue;
		fprintf(out, "%s\n  {\"age\": %d, \"or_more\": %s, \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			first ? "" : ",", a, a == HD_TRACE_AGES - 1 ? "true" : "false",
			h->ages[a].count, h->ages[a].bytes);
		first = false;
	}
	fputs("\n], \"live_by_birth\": [", out);
	for (size_t i = 0; i < tr->num_births; i++)
		fprintf(out, "%s\n  {\"epoch\": %u, \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			i ? "," : "", tr->births[i].epoch, tr->births[i].count, tr->births[i].bytes);
	fputs("\n]}\n", out);
}

static void text_rows(FILE *out, const char *what, const struct row *rows,
		      size_t n, size_t top, bool color)
{
	hd_heading(out, color, "Allocations by %s", what);
	fprintf(out, "  %10s %10s %8s %8s %8s %8s %10s %10s  %s\n", "allocs", "bytes",
		"malloc", "calloc", "realloc", "memalign", "frees", "live", what);
	for (size_t i = 0; i < n && i < top; i++) {
		const struct row *r = &rows[i];
		char b[32], l[32];
		hd_format_size(r->alloc_bytes, b, sizeof(b));
		hd_format_size(r->live_bytes, l, sizeof(l));
		fprintf(out, "  %10" PRIu64 " %10s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
			" %10" PRIu64 " %10s  %s\n",
			r->alloc_count, b, r->count[HD_TRACE_MALLOC], r->count[HD_TRACE_CALLOC],
			r->count[HD_TRACE_REALLOC], r->count[HD_TRACE_MEMALIGN],
			r->count[HD_TRACE_FREE], l, r->label);
	}
	if (n > top)
		fprintf(out, "  … %zu more (--top N, --all)\n", n - top);
}

static void text_sizes(FILE *out, const struct trace_head *h, bool color)
{
	hd_heading(out, color, "Allocations by size class");
	fprintf(out, "  %21s %10s %10s\n", "size", "count", "bytes");
	for (int k = 0; k < HD_TRACE_CLASSES; k++) {
		if (!h->classes[k].count)
			continue;
		char range[48], b[32];
		if (k == 0)
			snprintf(range, sizeof(range), "0");
		else
			snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, class_min(k), class_max(k));
		hd_format_size(h->classes[k].bytes, b, sizeof(b));
		fprintf(out, "  %21s %10" PRIu64 " %10s\n", range, h->classes[k].count, b);
	}
}

static void text_ages(FILE *out, const struct trace *tr, bool color)
{
	const struct trace_head *h = &tr->head;
	hd_heading(out, color, "Frees by age (epochs between allocation and free; now %u)", h->epoch);
	fprintf(out, "  %8s %10s %10s\n", "age", "count", "bytes");
	for (int a = 0; a < HD_TRACE_AGES; a++) {
		if (!h->ages[a].count)
			continue;
		char b[32];
		hd_format_size(h->ages[a].bytes, b, sizeof(b));
		fprintf(out, "  %7d%s %10" PRIu64 " %10s\n", a, a == HD_TRACE_AGES - 1 ? "+" : " ",
			h->ages[a].count, b);
	}
	hd_heading(out, color, "\nLive allocations by birth epoch");
	fprintf(out, "  %8s %10s %10s\n", "epoch", "count", "bytes");
	for (size_t i = 0; i < tr->num_births; i++) {
		char b[32];
		hd_format_size(tr->births[i].bytes, b, sizeof(b));
		fprintf(out, "  %8u %10" PRIu64 " %10s\n", tr->births[i].epoch,
			tr->births[i].count, b);
	}
}

struct hd_error *hd_render_trace(FILE *out, struct hd_session *ses,
				 const struct hd_render_options *o)
{
	struct trace tr;
	struct hd_error *err = trace_load(ses, &tr);
	if (err)
		return err;
	struct row *sites = NULL, *files = NULL;
	size_t nsites = 0, nfiles = 0;
	err = make_rows(&tr, false, &sites, &nsites);
	if (!err)
		err = make_rows(&tr, true, &files, &nfiles);
	size_t top = o->all ? SIZE_MAX : o->top ? o->top : DEFAULT_TOP;
	if (!err && o->format == HD_FORMAT_JSON) {
		render_json(out, ses, &tr, sites, nsites, files, nfiles, top);
	} else if (!err) {
		const struct trace_head *h = &tr.head;
		uint64_t allocs = 0;
		for (int op = 0; op < HD_TRACE_OPS; op++)
			allocs += op == HD_TRACE_FREE ? 0 : tr.calls[op];
		fprintf(out, "tracer of %s: %s, epoch %u; %" PRIu64 " allocations, %" PRIu64
			" frees traced at %zu call sites; %" PRIu64 " allocations live (%" PRIu64 " bytes)\n",
			hd_target_name(hd_session_target(ses)), h->enabled ? "on" : "off", h->epoch,
			allocs, tr.calls[HD_TRACE_FREE], tr.num_sites, tr.live_count, tr.live_bytes);
		if (tr.dropped_sites || h->dropped_live)
			fprintf(out, "warning: tables full: %" PRIu64 " calls at sites not recorded, %" PRIu64
				" allocations not followed to their free\n", tr.dropped_sites, h->dropped_live);
		fputc('\n', out);
		switch (o->trace_by) {
		case HD_TRACE_BY_FILE: text_rows(out, "file", files, nfiles, top, o->color); break;
		case HD_TRACE_BY_SIZE: text_sizes(out, h, o->color); break;
		case HD_TRACE_BY_AGE: text_ages(out, &tr, o->color); break;
		default: text_rows(out, "call site", sites, nsites, top, o->color); break;
		}
	}
	free(sites);
	free(files);
	trace_deinit(&tr);
	if (!err && ferror(out))
		err = hd_error_create(HD_ERROR_OS, "cannot write output");
	return err;
}
