// One analysis object per stop or core: each stage runs on first use and
// its result is kept, so front-ends ask for what they need.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "debuginfo/debuginfo_internal.h"
#include "graph/refs.h"
#include "heap/heap_internal.h"
#include "heapdom.h"
#include "semantic/semantic_internal.h"
#include "session/session_internal.h"
#include "target/target_internal.h"
#include "types/index_cache.h"
#include "types/typing.h"
#include "util/clock.h"

struct hd_session {
	struct hd_target *t;
	struct hd_session_options opts;
	struct hd_debuginfo *di;
	struct hd_heap *h;
	struct hd_index ix;
	bool have_ix;
	struct hd_refs refs; // the heap's references, until the graph is built
	bool have_refs;
	double t_scan;
	unsigned scan_threads;
	uint64_t scan_refs;
	struct hd_typing *ty;
	struct hd_prefetch *prefetch; // reading DWARF ahead of typing
	struct hd_graph *g;
	struct hd_dom *d;
	struct hd_dom *d_plain; // the plain view, made on demand
	struct hd_semantic *sem;
	char *sem_key; // the framework list sem was made with
	// The default modules' analysis for block names, when sem is not
	// theirs; names_g is its graph, without its edges.
	struct hd_fw *names_fw;
	struct hd_graph *names_g;
	// When the default modules found used sub-allocator blocks, names_g
	// keeps its edges (names_edges): their semantic tree, the only one in
	// which those blocks are vertices (types, why, --semantic), is made
	// from it when first asked for (names_sem, which then owns names_fw
	// and names_g). The reports that only name blocks never pay for it.
	bool names_edges;
	struct hd_semantic *names_sem;
	bool frames_done; // the target's frames are known (frames.c)
	// The allocators walked (hd_session_select_allocators), "" for the
	// default: opts.allocators, or every one detected.
	char allocators[128];
	char default_allocators[128];
	double t_walk, t_types, t_graph, t_dom, t_semantic, t_frames;
};

// The references and the typing's work tables were many medium blocks in
// malloc's own heap, which keeps their pages once they are freed (tens of
// MiB on a server's heap, not at its top, so never trimmed): return them
// before the dominator stage, the analysis's peak, allocates its own.
static void give_back_free_memory(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}


struct hd_error *hd_session_create(struct hd_target *t,
				   const struct hd_session_options *o,
				   struct hd_session **ret)
{
	struct hd_session *s = calloc(1, sizeof(*s));
	if (!s)
		return &hd_error_no_memory;
	if (o)
		s->opts = *o;
	if (s->opts.allocators && strlen(s->opts.allocators) >= sizeof(s->allocators)) {
		free(s);
		return hd_error_create(HD_ERROR_INVALID,
				       "--allocator: the list is too long");
	}
	if (s->opts.allocators) {
		struct hd_error *err = hd_heap_check_allocators(s->opts.allocators);
		if (err) {
			free(s);
			return err;
		}
		snprintf(s->allocators, sizeof(s->allocators), "%s",
			 s->opts.allocators);
		snprintf(s->default_allocators, sizeof(s->default_allocators),
			 "%s", s->opts.allocators);
	}
	s->opts.allocators = NULL; // the caller's string: copied above
	s->t = t;
	// Some debuggers (lldb 14) cannot report the thread pointer.
	hd_target_recover_thread_pointers(t);
	struct hd_error *err = hd_debuginfo_create(t, &s->opts.debug, &s->di);
	if (err) {
		s->t = NULL;
		hd_session_destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

void hd_session_prepare_types(struct hd_session *s)
{
	// Read the modules' DWARF on the second core while the heap is
	// walked: typing needs it only after the walk.
	if (s->opts.untyped || s->prefetch || s->ty)
		return;
	size_t n = hd_target_num_modules(s->t);
	const char **paths = calloc(n ? n : 1, sizeof(*paths));
	if (!paths)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct hd_module *m = hd_target_module(s->t, i);
		paths[i] = hd_debuginfo_debug_file(s->di, m);
		if (!paths[i])
			paths[i] = m->file;
	}
	s->prefetch = hd_index_cache_prefetch(paths, n);
	free(paths);
}

void hd_session_join_prefetch(struct hd_session *s)
{
	hd_index_cache_join(s->prefetch);
	s->prefetch = NULL;
}

// Drops the heap and every stage computed from it.
static void drop_heap(struct hd_session *s)
{
	hd_semantic_destroy(s->sem);
	free(s->sem_key);
	hd_fw_destroy(s->names_fw);
	hd_graph_destroy(s->names_g);
	hd_semantic_destroy(s->names_sem);
	hd_dom_destroy(s->d);
	hd_dom_destroy(s->d_plain);
	hd_graph_destroy(s->g);
	hd_typing_destroy(s->ty);
	if (s->have_refs)
		hd_refs_deinit(&s->refs);
	s->have_refs = false;
	if (s->have_ix)
		hd_index_deinit(&s->ix);
	hd_heap_destroy(s->h);
	s->sem = NULL;
	s->sem_key = NULL;
	s->names_fw = NULL;
	s->names_g = NULL;
	s->names_edges = false;
	s->names_sem = NULL;
	s->d = s->d_plain = NULL;
	s->g = NULL;
	s->ty = NULL;
	s->have_ix = false;
	s->h = NULL;
}

void hd_session_destroy(struct hd_session *s)
{
	if (!s)
		return;
	hd_session_join_prefetch(s);
	drop_heap(s);
	hd_debuginfo_destroy(s->di);
	hd_target_destroy(s->t);
	free(s);
}

struct hd_error *hd_session_select_allocators(struct hd_session *s,
					      const char *names)
{
	if (names) {
		struct hd_error *err = hd_heap_check_allocators(names);
		if (err)
			return err;
		if (strlen(names) >= sizeof(s->allocators))
			return hd_error_create(HD_ERROR_INVALID,
					       "--allocator: the list is too long");
	}
	// NULL: back to what the session was made with.
	const char *want = names ? names : s->default_allocators;
	if (strcmp(want, s->allocators) == 0)
		return NULL;
	hd_session_join_prefetch(s);
	drop_heap(s);
	snprintf(s->allocators, sizeof(s->allocators), "%s", want);
	return NULL;
}

// A process that exited or executed another program while it was read:
// what the stages computed rests on reads that failed, so they fail too.
static struct hd_error *check_lost(struct hd_session *s)
{
	const char *lost = hd_target_lost(s->t);
	return lost ? hd_error_create(HD_ERROR_NOT_FOUND, "%s", lost) : NULL;
}

struct hd_target *hd_session_target(struct hd_session *s) { return s->t; }
struct hd_debuginfo *hd_session_debuginfo(struct hd_session *s) { return s->di; }

struct hd_error *hd_session_heap(struct hd_session *s,
				 const struct hd_heap **ret)
{
	if (!s->h) {
		double t0 = hd_seconds();
		struct hd_heap_options ho = {
			.use_debuginfo = !s->opts.no_libc_debuginfo,
			.allocators = s->allocators[0] ? s->allocators : NULL,
		};
		struct hd_error *err = hd_heap_walk_threads(
			s->t, s->di, &ho, hd_threads_wanted(s->opts.threads),
			s->opts.threads != 0, &s->h);
		if (err) {
			struct hd_error *lost = check_lost(s);
			if (lost) {
				hd_error_destroy(err);
				return lost;
			}
			return err;
		}
		s->t_walk = hd_seconds() - t0;
	}
	*ret = s->h;
	return check_lost(s);
}

static struct hd_error *session_index(struct hd_session *s)
{
	if (s->have_ix)
		return NULL;
	const struct hd_heap *h;
	struct hd_error *err = hd_session_heap(s, &h);
	if (!err)
		err = hd_index_init(&s->ix, h);
	s->have_ix = !err;
	return err;
}

// The heap's references, for typing and the graph: one scan of the heap.
static struct hd_error *session_refs(struct hd_session *s)
{
	if (s->have_refs)
		return NULL;
	struct hd_error *err = session_index(s);
	if (err)
		return err;
	err = hd_refs_init(&s->refs, s->t, s->h, &s->ix, s->opts.threads);
	if (err)
		return err;
	s->have_refs = true;
	s->t_scan = s->refs.seconds;
	s->scan_threads = s->refs.threads;
	s->scan_refs = s->refs.num;
	return NULL;
}

double hd_session_scan_seconds(const struct hd_session *s, unsigned *threads,
			       uint64_t *refs)
{
	if (threads)
		*threads = s->scan_threads;
	if (refs)
		*refs = s->scan_refs;
	return s->t_scan;
}

// A core or a ptrace-attached process has no debugger to tell its frames:
// unwind its threads here, once, before typing (typed locals type blocks)
// and the graph (frames and locals are roots). Front-ends' targets come
// with their own frames.
static struct hd_error *session_frames(struct hd_session *s)
{
	if (s->frames_done)
		return NULL;
	s->frames_done = true;
	bool own = strcmp(hd_target_kind(s->t), "core") == 0 ||
		   (strcmp(hd_target_kind(s->t), "live") == 0 &&
		    !s->t->frontend_threads);
	if (!own || hd_target_num_frames(s->t))
		return NULL;
	double t0 = hd_seconds();
	struct hd_error *err = hd_debuginfo_add_frames(s->di);
	s->t_frames = hd_seconds() - t0;
	return err;
}

struct hd_error *hd_session_typing(struct hd_session *s,
				   const struct hd_typing **ret)
{
	if (s->opts.untyped) {
		*ret = NULL;
		return NULL;
	}
	if (!s->ty) {
		if (s->g)
			return hd_error_create(HD_ERROR_INVALID,
					       "typing must be computed before the graph");
		struct hd_error *err = session_frames(s);
		if (!err)
			err = session_refs(s);
		if (err)
			return err;
		double t0 = hd_seconds();
		err = hd_typing_compute(s->t, s->di, s->h, &s->ix, &s->refs,
					s->opts.threads, &s->ty);
		hd_session_join_prefetch(s);
		if (err)
			return err;
		s->t_types = hd_seconds() - t0;
	}
	*ret = s->ty;
	return check_lost(s);
}

struct hd_error *hd_session_graph(struct hd_session *s,
				  const struct hd_graph **ret)
{
	if (!s->g) {
		const struct hd_typing *ty = NULL;
		struct hd_error *err = session_frames(s);
		if (!err)
			err = session_index(s);
		if (!err && !s->opts.untyped)
			err = hd_session_typing(s, &ty);
		if (!err)
			err = session_refs(s);
		if (err)
			return err;
		double t0 = hd_seconds();
		err = hd_graph_build_refs(s->t, s->di, s->h, &s->ix, &s->refs,
					  ty ? hd_typing_pointer_map : NULL,
					  ty ? hd_typing_word_typed : NULL,
					  (void *)ty, &s->g);
		if (err)
			return err;
		s->t_graph = hd_seconds() - t0;
		// Typing (if any) and the graph are built: the references and
		// the address index have done their work.
		hd_refs_deinit(&s->refs);
		s->have_refs = false;
		hd_index_deinit(&s->ix);
		s->have_ix = false;
		give_back_free_memory();
	}
	*ret = s->g;
	return check_lost(s);
}

struct hd_error *hd_session_dom(struct hd_session *s, const struct hd_dom **ret)
{
	return hd_session_dom_view(s, HD_DOM_RANKED, ret);
}

struct hd_error *hd_session_dom_view(struct hd_session *s,
				     enum hd_dom_view view,
				     const struct hd_dom **ret)
{
	struct hd_dom **d = view == HD_DOM_PLAIN ? &s->d_plain : &s->d;
	if (!*d) {
		const struct hd_graph *g;
		struct hd_error *err = hd_session_graph(s, &g);
		if (err)
			return err;
		double t0 = hd_seconds();
		err = hd_dom_compute_view(g, s->h, view, d);
		if (err)
			return err;
		s->t_dom = hd_seconds() - t0;
	}
	*ret = *d;
	return NULL;
}

double hd_session_frames_seconds(const struct hd_session *s)
{
	return s->t_frames;
}

void hd_session_times(const struct hd_session *s, double *walk, double *types,
		      double *graph, double *dom)
{
	*walk = s->t_walk;
	*types = s->t_types;
	*graph = s->t_graph;
	*dom = s->t_dom;
}

// The frameworks asked for, as one string to compare with the last.
static char *framework_key(const char *const *names, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	char *key = malloc(len);
	if (!key)
		return NULL;
	key[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strcat(key, names[i]);
		strcat(key, "\n");
	}
	return key;
}

static bool has_used_subblocks(const struct hd_fw *fw);
static struct hd_error *framework_run(struct hd_session *s,
				      const char *const *names, size_t n,
				      bool names_only, struct hd_fw **ret_fw,
				      struct hd_graph **ret_g);

static struct hd_error *names_semantic(struct hd_session *s);

struct hd_error *hd_session_semantic(struct hd_session *s,
				     const char *const *names, size_t n,
				     const struct hd_semantic **ret)
{
	// The default modules' run for the names, if it was made with its
	// edges, is the run this one would make.
	if (n == 0 && s->names_edges) {
		struct hd_error *err = names_semantic(s);
		if (err)
			return err;
	}
	if (n == 0 && s->names_sem) {
		*ret = s->names_sem;
		return NULL;
	}
	char *key = framework_key(names, n);
	if (!key)
		return &hd_error_no_memory;
	if (s->sem && strcmp(key, s->sem_key) == 0) {
		free(key);
		*ret = s->sem;
		return NULL;
	}
	hd_semantic_destroy(s->sem);
	s->sem = NULL;
	free(s->sem_key);
	s->sem_key = key;
	double t0 = hd_seconds();
	struct hd_fw *fw;
	struct hd_graph *g;
	struct hd_error *err = framework_run(s, names, n, false, &fw, &g);
	if (err)
		return err;
	err = hd_semantic_compute(fw, g, &s->sem);
	if (err) {
		hd_fw_destroy(fw);
		hd_graph_destroy(g);
		return err;
	}
	s->t_semantic = hd_seconds() - t0;
	*ret = s->sem;
	return NULL;
}

// Whether a module added a block the program uses (not the allocator's
// own bookkeeping, not a free slot).
static bool has_used_subblocks(const struct hd_fw *fw)
{
	for (size_t i = 0; i < fw->sa.num_blocks; i++)
		if (fw->sa.blocks[i].state == HD_STATE_USED)
			return true;
	return false;
}

static struct hd_error *default_names(struct hd_session *s)
{
	if ((s->sem && !s->sem_key[0]) || s->names_fw || s->names_sem)
		return NULL;
	struct hd_fw *fw;
	struct hd_graph *g;
	struct hd_error *err = framework_run(s, NULL, 0, true, &fw, &g);
	if (err)
		return err;
	if (has_used_subblocks(fw)) {
		// Their blocks are vertices of the semantic graph alone: its
		// tree is made for the reports that count or explain them
		// (names_semantic). A graph too large for it fails here, as
		// it did when the tree was made at once.
		err = hd_semantic_check(fw, g);
		if (err) {
			hd_fw_destroy(fw);
			hd_graph_destroy(g);
			return err;
		}
		s->names_fw = fw;
		s->names_g = g;
		s->names_edges = true;
		return NULL;
	}
	// Only the names are asked for: the modules have run, nothing reads
	// this graph's edges again.
	free((void *)g->fwd.offsets);
	free((void *)g->fwd.targets);
	hd_csr_free_owned(&g->rev);
	g->fwd = g->rev = (struct hd_csr){0};
	s->names_fw = fw;
	s->names_g = g;
	return NULL;
}

struct hd_error *hd_session_framework_names(struct hd_session *s,
					    const struct hd_fw **ret)
{
	struct hd_error *err = default_names(s);
	if (err)
		return err;
	*ret = s->sem && !s->sem_key[0] ? s->sem->fw
	     : s->names_sem ? s->names_sem->fw : s->names_fw;
	return NULL;
}

// The default modules' semantic tree from the names' run and its edges.
// On failure the names stay (the edges may not).
static struct hd_error *names_semantic(struct hd_session *s)
{
	if (s->names_sem || !s->names_edges)
		return NULL;
	s->names_edges = false;
	double t0 = hd_seconds();
	struct hd_error *err = hd_semantic_compute(s->names_fw, s->names_g,
						   &s->names_sem);
	s->t_semantic = hd_seconds() - t0;
	if (err)
		return err;
	s->names_fw = NULL; // the tree's now
	s->names_g = NULL;
	return NULL;
}

struct hd_error *hd_session_subblock_semantic(struct hd_session *s,
					      const struct hd_semantic **ret)
{
	struct hd_error *err = default_names(s);
	if (!err)
		err = names_semantic(s);
	if (err)
		return err;
	const struct hd_semantic *sem = s->sem && !s->sem_key[0] ? s->sem
				      : s->names_sem;
	*ret = sem && has_used_subblocks(sem->fw) ? sem : NULL;
	return NULL;
}

// The framework modules named (n == 0: the default ones) after analyze,
// over a graph of their own: the sub-allocators' blocks are vertices of it,
// and the plain graph of this stop stays as it was. With names_only, the
// caller keeps the graph's edges only if the modules found sub-allocator
// blocks in use (default_names).
static struct hd_error *framework_run(struct hd_session *s,
				      const char *const *names, size_t n,
				      bool names_only, struct hd_fw **ret_fw,
				      struct hd_graph **ret_g)
{
	const struct hd_heap *h;
	const struct hd_typing *ty = NULL;
	struct hd_error *err = hd_session_heap(s, &h);
	if (!err && !s->opts.untyped)
		err = hd_session_typing(s, &ty);
	if (err)
		return err;
	struct hd_fw *fw;
	err = hd_fw_create(s->t, s->di, h, ty, names, n, &fw);
	if (err)
		return err;
	bool had_ix = s->have_ix;
	err = session_frames(s);
	// Modules that read no edge (the allocator module alone, as in any
	// program without a framework) need the vertices only: a second scan
	// of the heap would cost as much time and memory as the first.
	bool edges = !names_only || hd_fw_reads_edges(fw) ||
		     has_used_subblocks(fw);
	// Nothing but the names will be read (default_names): the modules'
	// nodes, assignments and marks need not be kept.
	if (!edges)
		hd_fw_set_names_only(fw);
	// With the analysis graph, a module that only names blocks may wait
	// until a report asks about a block it could name (defer.c).
	if (!edges && s->g)
		hd_fw_set_claim_graph(fw, s->g);
	// A graph that scans the heap itself: the references typing followed
	// would only take room (the plain graph, if ever asked for, finds
	// them again).
	if (!err && edges && s->have_refs) {
		hd_refs_deinit(&s->refs);
		s->have_refs = false;
	}
	if (!err && edges)
		err = session_index(s);
	struct hd_graph *g = NULL;
	fw->sa.threads = s->opts.threads;
	if (!err && edges)
		err = hd_graph_build_with(s->t, s->di, h, &s->ix,
					  ty ? hd_typing_pointer_map : NULL,
					  (void *)ty, &fw->sa, &g);
	else if (!err)
		err = hd_graph_build_vertices(s->t, s->di, h, &fw->sa, &g);
	if (!had_ix && s->g) {
		hd_index_deinit(&s->ix);
		s->have_ix = false;
	}
	if (err) {
		hd_fw_destroy(fw);
		return err;
	}
	err = hd_fw_analyze(fw, g);
	struct hd_error *lost = check_lost(s);
	if (err || lost) {
		hd_fw_destroy(fw);
		hd_graph_destroy(g);
		if (lost)
			hd_error_destroy(err);
		return lost ? lost : err;
	}
	*ret_fw = fw;
	*ret_g = g;
	return NULL;
}

bool hd_session_names_note(const struct hd_session *s, char *buf, size_t len)
{
	const struct hd_fw *fw = s->names_sem ? s->names_sem->fw : s->names_fw;
	return fw && hd_fw_defer_describe(fw, buf, len);
}

double hd_session_semantic_seconds(const struct hd_session *s)
{
	return s->t_semantic;
}
