// Which framework modules run: the built-ins, shared objects named with
// --framework or found on HEAPDOM_FRAMEWORK_PATH; and the phases they run
// in, each module's failure contained to that module.
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap/heap_internal.h"
#include "semantic/fw_fast.h"
#include "semantic/semantic_internal.h"
#include "util/vec.h"
#include "util/sort.h"

extern const struct hd_framework hd_framework_glibc;
extern const struct hd_framework hd_framework_libstdcxx;
extern const struct hd_framework hd_framework_cpython;

static const struct hd_framework *const builtins[] = {
	&hd_framework_glibc,
	&hd_framework_libstdcxx,
	&hd_framework_cpython,
};
#define NUM_BUILTINS (sizeof(builtins) / sizeof(builtins[0]))

static struct hd_error *add_module(struct hd_fw *fw,
				   const struct hd_framework *ops,
				   const char *source, void *dl,
				   const char *error)
{
	struct hd_fw_module m = {.ops = ops, .dl = dl};
	m.source = strdup(source);
	if (error)
		m.error = strdup(error);
	if (!m.source || (error && !m.error) ||
	    !HD_VEC_PUSH(fw->mods, fw->num_mods, fw->cap_mods, m)) {
		free(m.source);
		free(m.error);
		if (dl)
			dlclose(dl);
		return &hd_error_no_memory;
	}
	return NULL;
}

// A module with no ops, only an error: a shared object that did not load.
static const struct hd_framework unloadable = {
	.abi = HD_FRAMEWORK_ABI, .name = "?", .version = "?",
	.description = "a module that could not be loaded",
};

// Loads a shared object. With strict (the user named it) a failure is an
// error; else it is listed as a module that could not load.
static struct hd_error *load_shared(struct hd_fw *fw, const char *path,
				    bool strict)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const char *why = NULL;
	char buf[512];
	const struct hd_framework *ops = NULL;
	if (!dl) {
		snprintf(buf, sizeof(buf), "cannot load: %s", dlerror());
		why = buf;
	} else {
		const struct hd_framework *(*init)(void);
		*(void **)&init = dlsym(dl, HD_FRAMEWORK_ENTRY);
		if (!init) {
			why = "exports no " HD_FRAMEWORK_ENTRY "()";
		} else if (!(ops = init()) || !ops->name || !ops->detect) {
			why = HD_FRAMEWORK_ENTRY "() gave no module with a name and detect";
			ops = NULL;
		} else if (ops->abi != HD_FRAMEWORK_ABI) {
			snprintf(buf, sizeof(buf),
				 "built for framework ABI %u, heapdom has %u: rebuild it against this heapdom_framework.h",
				 ops->abi, HD_FRAMEWORK_ABI);
			why = buf;
			ops = NULL;
		}
	}
	if (why) {
		if (dl)
			dlclose(dl);
		if (strict)
			return hd_error_file(HD_ERROR_INVALID, path,
					     "framework module %s", why);
		return add_module(fw, &unloadable, path, NULL, why);
	}
	for (size_t i = 0; i < fw->num_mods; i++)
		if (fw->mods[i].ops != &unloadable &&
		    strcmp(fw->mods[i].ops->name, ops->name) == 0) {
			dlclose(dl);
			if (strict)
				return hd_error_file(HD_ERROR_INVALID, path,
						     "framework module %s is already loaded from %s",
						     ops->name, fw->mods[i].source);
			return NULL;
		}
	return add_module(fw, ops, path, dl, NULL);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

#ifndef HD_FRAMEWORK_DIR
#define HD_FRAMEWORK_DIR "/usr/local/lib/heapdom/frameworks"
#endif

// HEAPDOM_FRAMEWORK_PATH, then the directory modules are installed in.
static char *search_path(void)
{
	const char *env = getenv("HEAPDOM_FRAMEWORK_PATH");
	char *path = NULL;
	if (asprintf(&path, "%s%s%s", env && *env ? env : "", env && *env ? ":" : "",
		     HD_FRAMEWORK_DIR) < 0)
		return NULL;
	return path;
}

// Every *.so of the directories of the search path, in name order.
static struct hd_error *load_search_path(struct hd_fw *fw)
{
	char *copy = search_path(), *save = NULL;
	if (!copy)
		return &hd_error_no_memory;
	struct hd_error *err = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir && !err;
	     dir = strtok_r(NULL, ":", &save)) {
		struct dirent **list = NULL;
		int n = scandir(dir, &list, NULL, alphasort);
		for (int i = 0; i < n; i++) {
			if (!err && ends_with(list[i]->d_name, ".so")) {
				char path[4096];
				snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
				err = load_shared(fw, path, false);
			}
			free(list[i]);
		}
		free(list);
	}
	free(copy);
	return err;
}

// The first NAME.so or heapdom-NAME.so on the search path into path, or
// an empty path.
static struct hd_error *find_on_search_path(const char *name, char *path,
					    size_t len)
{
	path[0] = '\0';
	char *copy = search_path(), *save = NULL;
	if (!copy)
		return &hd_error_no_memory;
	for (char *dir = strtok_r(copy, ":", &save); dir && !path[0];
	     dir = strtok_r(NULL, ":", &save)) {
		static const char *const forms[] = {"%s/%s.so", "%s/heapdom-%s.so"};
		for (size_t k = 0; k < 2 && !path[0]; k++) {
			snprintf(path, len, forms[k], dir, name);
			if (access(path, R_OK) != 0)
				path[0] = '\0';
		}
	}
	free(copy);
	return NULL;
}

// A module by name: a built-in, or NAME.so / heapdom-NAME.so on the
// search path.
static struct hd_error *load_named(struct hd_fw *fw, const char *name)
{
	if (strchr(name, '/'))
		return load_shared(fw, name, true);
	for (size_t i = 0; i < NUM_BUILTINS; i++)
		if (strcmp(builtins[i]->name, name) == 0) {
			for (size_t j = 0; j < fw->num_mods; j++)
				if (fw->mods[j].ops == builtins[i])
					return NULL;
			return add_module(fw, builtins[i], "built-in", NULL, NULL);
		}
	char path[4096];
	struct hd_error *err = find_on_search_path(name, path, sizeof(path));
	if (err)
		return err;
	if (path[0])
		return load_shared(fw, path, true);
	char known[256] = "";
	for (size_t i = 0; i < NUM_BUILTINS; i++) {
		if (i)
			strncat(known, ", ", sizeof(known) - strlen(known) - 1);
		strncat(known, builtins[i]->name, sizeof(known) - strlen(known) - 1);
	}
	return hd_error_create(HD_ERROR_NOT_FOUND,
			       "no framework module called '%s' (built-in: %s; give a path to a shared object, or put it on HEAPDOM_FRAMEWORK_PATH or in %s)",
			       name, known, HD_FRAMEWORK_DIR);
}

static void disable(struct hd_fw *fw, size_t i, const char *phase,
		    struct hd_error *err)
{
	struct hd_fw_module *m = &fw->mods[i];
	char *msg = NULL;
	if (asprintf(&msg, "%s failed: %s", phase, err->message) < 0)
		msg = NULL;
	hd_error_destroy(err);
	free(m->error);
	m->error = msg ? msg : strdup("failed");
	m->detected = false;
}

static int block_cmp(const void *a, const void *b)
{
	const struct hd_subblock *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int region_cmp(const void *a, const void *b)
{
	const struct hd_subregion *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

// Merges the sorted runs [a, mid) and [mid, end) of blocks, stably (on
// equal addresses the left run's block comes first), through buf, which
// holds the shorter run.
static void merge_runs(struct hd_subblock *bl, size_t a, size_t mid, size_t end,
		       struct hd_subblock *buf)
{
	size_t nl = mid - a, nr = end - mid;
	if (nl <= nr) {
		memcpy(buf, bl + a, nl * sizeof(*buf));
		size_t i = 0, j = mid, o = a;
		while (i < nl && j < end)
			bl[o++] = bl[j].addr < buf[i].addr ? bl[j++] : buf[i++];
		memcpy(bl + o, buf + i, (nl - i) * sizeof(*buf));
	} else {
		memcpy(buf, bl + mid, nr * sizeof(*buf));
		size_t i = mid, j = nr, o = end;
		while (i > a && j > 0)
			bl[--o] = bl[i - 1].addr > buf[j - 1].addr ? bl[--i] : buf[--j];
		memcpy(bl + a, buf, j * sizeof(*buf));
	}
}

// Sorts the blocks by address, stably like glibc's qsort (a merge sort)
// so that of two blocks at one address the same one is refused. Modules
// mostly add blocks in address order (a pool's slots one after another),
// each module its own run: a few runs are merged through a buffer as long
// as the shorter one, not sorted again whole (a copy of ten million).
static struct hd_error *sort_blocks(struct hd_suballoc *sa)
{
	size_t n = sa->num_blocks, runs = 1;
	for (size_t i = 1; i < n; i++)
		runs += sa->blocks[i].addr < sa->blocks[i - 1].addr;
	if (runs == 1)
		return NULL;
	if (runs > 64) {
		hd_qsort(sa->blocks, n, sizeof(*sa->blocks), block_cmp);
		return NULL;
	}
	// Merge the leftmost two runs until one is left: stable, since
	// every merge is of neighbours.
	size_t first_end = 1;
	while (first_end < n && sa->blocks[first_end].addr >= sa->blocks[first_end - 1].addr)
		first_end++;
	struct hd_subblock *buf = NULL;
	size_t cap = 0;
	while (first_end < n) {
		size_t end = first_end + 1;
		while (end < n && sa->blocks[end].addr >= sa->blocks[end - 1].addr)
			end++;
		size_t need = first_end < end - first_end ? first_end : end - first_end;
		if (need > cap) {
			struct hd_subblock *nb = realloc(buf, need * sizeof(*nb));
			if (!nb) {
				free(buf);
				return &hd_error_no_memory;
			}
			buf = nb;
			cap = need;
		}
		merge_runs(sa->blocks, 0, first_end, end, buf);
		first_end = end;
	}
	free(buf);
	return NULL;
}

static bool in_region(const struct hd_subregion *rg, const struct hd_subblock *b)
{
	return rg->module == b->module && b->addr >= rg->start &&
	       b->addr + b->size <= rg->end;
}

// Sorts the sub-allocator's blocks, finds the malloc'd block around each,
// and refuses the ones that break the rules (with a warning to their
// module): outside any used block or region of theirs, or overlapping.
static struct hd_error *finalize_blocks(struct hd_fw *fw)
{
	struct hd_suballoc *sa = &fw->sa;
	// Modules mostly add blocks in address order (a pool's slots one
	// after another): a million sorted blocks need no sort. glibc's qsort
	// is a stable merge sort, so skipping it changes no order.
	struct hd_error *err = sort_blocks(sa);
	if (err)
		return err;
	hd_qsort(sa->regions, sa->num_regions, sizeof(*sa->regions), region_cmp);
	size_t out = 0;
	uint64_t prev_end = 0;
	// The region the last block lay in: a pool's blocks share one, so
	// most blocks need no search of them all (a Python heap has
	// millions of blocks in hundreds of arenas).
	size_t last_region = SIZE_MAX;
	size_t below = 0; // heap blocks whose address is at or below the block's
	for (size_t i = 0; i < sa->num_blocks; i++) {
		struct hd_subblock b = sa->blocks[i];
		fw->cur = b.module;
		if (b.addr < prev_end) {
			hd_fw_warn(fw, b.addr, "block of %llu bytes overlaps the block before it: refused",
				   (unsigned long long)b.size);
			continue;
		}
		// hd_heap_find(fw->h, b.addr), the blocks coming in address
		// order: the last heap block at or below it, found by a cursor
		// rather than a search per block.
		while (below < fw->h->num_blocks && fw->h->addr[below] <= b.addr)
			below++;
		int64_t id = below ? (int64_t)below - 1 : -1;
		if (id >= 0 && b.addr - fw->h->addr[id] >= hd_heap_usable(fw->h, (size_t)id))
			id = -1;
		bool ok = false;
		if (id >= 0) {
			struct hd_block hb;
			hd_heap_block(fw->h, (size_t)id, &hb);
			if (hb.state == HD_STATE_USED && b.addr >= hb.addr &&
			    b.addr + b.size <= hb.addr + hb.usable) {
				b.container = id;
				ok = true;
			}
		}
		if (!ok && last_region < sa->num_regions &&
		    in_region(&sa->regions[last_region], &b))
			ok = true;
		for (size_t r = 0; !ok && r < sa->num_regions; r++)
			if (in_region(&sa->regions[r], &b)) {
				ok = true;
				last_region = r;
			}
		if (!ok) {
			hd_fw_warn(fw, b.addr,
				   "block of %llu bytes lies in no used heap block and no region of this module: refused",
				   (unsigned long long)b.size);
			continue;
		}
		sa->blocks[out++] = b;
		prev_end = b.addr + b.size;
		fw->mods[b.module].subblocks++;
	}
	sa->num_blocks = out;
	if (out) {
		sa->lo = sa->blocks[0].addr;
		sa->hi = sa->blocks[out - 1].addr + sa->blocks[out - 1].size;
	}
	// Containers, ascending (blocks are sorted, so are their containers).
	size_t nc = 0;
	for (size_t i = 0; i < out; i++)
		nc += sa->blocks[i].container >= 0 &&
		      (i == 0 || sa->blocks[i - 1].container != sa->blocks[i].container);
	sa->containers = malloc((nc ? nc : 1) * sizeof(*sa->containers));
	sa->container_bytes = calloc(nc ? nc : 1, sizeof(*sa->container_bytes));
	if (!sa->containers || !sa->container_bytes)
		return &hd_error_no_memory;
	for (size_t i = 0; i < out; i++) {
		const struct hd_subblock *b = &sa->blocks[i];
		if (b->container < 0)
			continue;
		if (!sa->num_containers ||
		    sa->containers[sa->num_containers - 1] != (uint32_t)b->container)
			sa->containers[sa->num_containers++] = (uint32_t)b->container;
		// An internal block (a pool's header) stays part of the
		// malloc'd block around it: its bytes and its references.
		if (b->state != HD_STATE_INTERNAL)
			sa->container_bytes[sa->num_containers - 1] += b->size;
	}
	// Final: the index every look-up of a block goes through.
	return hd_suballoc_index(sa) ? NULL : &hd_error_no_memory;
}

struct hd_error *hd_fw_create(struct hd_target *t, struct hd_debuginfo *di,
			      const struct hd_heap *h, const struct hd_typing *ty,
			      const char *const *names, size_t n,
			      struct hd_fw **ret)
{
	struct hd_fw *fw = calloc(1, sizeof(*fw));
	if (!fw)
		return &hd_error_no_memory;
	fw->t = t;
	fw->di = di;
	fw->h = h;
	fw->ty = ty;
	struct hd_error *err = NULL;
	if (n) {
		for (size_t i = 0; i < n && !err; i++)
			err = load_named(fw, names[i]);
	} else {
		for (size_t i = 0; i < NUM_BUILTINS && !err; i++)
			err = add_module(fw, builtins[i], "built-in", NULL, NULL);
		if (!err)
			err = load_search_path(fw);
	}
	if (err) {
		hd_fw_destroy(fw);
		return err;
	}
	fw->phase = HD_FW_DETECT;
	for (size_t i = 0; i < fw->num_mods; i++) {
		struct hd_fw_module *m = &fw->mods[i];
		if (m->error)
			continue;
		fw->cur = (uint16_t)i;
		bool detected = false;
		err = m->ops->detect(fw, &detected);
		if (err == &hd_error_no_memory)
			goto fail;
		if (err)
			disable(fw, i, "detect", err);
		else
			m->detected = detected;
	}
	fw->phase = HD_FW_BLOCKS;
	for (size_t i = 0; i < fw->num_mods; i++) {
		struct hd_fw_module *m = &fw->mods[i];
		if (!m->detected || !m->ops->blocks)
			continue;
		fw->cur = (uint16_t)i;
		size_t nb = fw->sa.num_blocks, nr = fw->sa.num_regions;
		err = m->ops->blocks(fw);
		if (err == &hd_error_no_memory)
			goto fail;
		if (err) {
			// Undo what it added: nothing of a failed module stays.
			fw->sa.num_blocks = nb;
			fw->sa.num_regions = nr;
			m->regions = 0;
			disable(fw, i, "blocks", err);
		}
	}
	err = finalize_blocks(fw);
	if (err)
		goto fail;
	*ret = fw;
	return NULL;
fail:
	hd_fw_destroy(fw);
	return err;
}

// Runs module i's analyze; a module that fails leaves nothing behind.
static struct hd_error *run_module(struct hd_fw *fw, size_t i)
{
	struct hd_fw_module *m = &fw->mods[i];
	fw->cur = (uint16_t)i;
	size_t nodes = fw->num_nodes, conflicts = fw->num_conflicts;
	uint32_t light = fw->light_nodes;
	hd_fw_journal_reset(fw);
	struct hd_error *err = m->ops->analyze(fw);
	if (err == &hd_error_no_memory)
		return err;
	if (err) {
		hd_fw_undo_module(fw);
		fw->num_conflicts = conflicts;
		for (size_t k = nodes; k < fw->num_nodes; k++) {
			free(fw->nodes[k].label);
			free(fw->nodes[k].kind);
		}
		fw->num_nodes = nodes;
		fw->light_nodes = light;
		m->nodes = m->assigned = 0;
		disable(fw, i, "analyze", err);
	}
	hd_fw_journal_reset(fw);
	return NULL;
}

// After the modules' analyze.
static struct hd_error *analyze_done(struct hd_fw *fw)
{
	fw->phase = HD_FW_DONE;
	// The modules' look-ups are done and nothing is undone after analyze:
	// the index, memos and journal would only take room.
	hd_fw_index_free(fw);
	hd_fw_objects_free(fw);
	free(fw->undo);
	fw->undo = NULL;
	fw->num_undo = fw->cap_undo = 0;
	for (int w = 0; w < 4; w++) {
		free(fw->touched[w]);
		fw->touched[w] = NULL;
	}
	return hd_fw_resolve_shared(fw);
}

// The built-in modules that may wait until a block they could name is
// asked about (defer.c).
extern const struct hd_fw_deferral hd_libstdcxx_deferral;
static const struct hd_fw_deferral *const deferrals[] = {
	&hd_libstdcxx_deferral,
};

// The module that may wait, or SIZE_MAX: only when fw keeps names alone,
// knows the analysis graph, and the module is the last to analyze (so the
// modules run in their usual order whenever it runs).
static size_t deferred_module(const struct hd_fw *fw,
			      const struct hd_fw_deferral **spec)
{
	// (names_only: no sub-allocator block is in use, so every block the
	// module may name is a heap block.)
	if (!fw->names_only || !fw->claim_g || !fw->ty)
		return SIZE_MAX;
	size_t last = SIZE_MAX;
	for (size_t i = 0; i < fw->num_mods; i++)
		if (fw->mods[i].detected && fw->mods[i].ops->analyze)
			last = i;
	if (last == SIZE_MAX)
		return SIZE_MAX;
	for (size_t k = 0; k < sizeof(deferrals) / sizeof(deferrals[0]); k++) {
		if (deferrals[k]->ops == fw->mods[last].ops) {
			*spec = deferrals[k];
			return last;
		}
	}
	return SIZE_MAX;
}

struct hd_error *hd_fw_analyze(struct hd_fw *fw, const struct hd_graph *g)
{
	fw->g = g;
	fw->phase = HD_FW_ANALYZE;
	const struct hd_fw_deferral *spec = NULL;
	size_t later = deferred_module(fw, &spec);
	for (size_t i = 0; i < fw->num_mods; i++) {
		struct hd_fw_module *m = &fw->mods[i];
		if (!m->detected || !m->ops->analyze || i == later)
			continue;
		struct hd_error *err = run_module(fw, i);
		if (err)
			return err;
	}
	if (later != SIZE_MAX) {
		struct hd_error *err = hd_fw_defer_create(fw, later, spec, fw->claim_g);
		if (err == &hd_error_no_memory)
			return err;
		if (err) {
			hd_error_destroy(err);
			if ((err = run_module(fw, later)))
				return err;
		}
	}
	fw->claim_g = NULL; // the search keeps what it needs
	return analyze_done(fw);
}

void hd_fw_run_deferred(struct hd_fw *fw, size_t module)
{
	fw->phase = HD_FW_ANALYZE;
	struct hd_error *err = run_module(fw, module);
	if (err) { // out of memory: the module's names are not given
		hd_fw_undo_module(fw);
		disable(fw, module, "analyze", err);
	}
	err = analyze_done(fw);
	if (err)
		hd_error_destroy(err);
}

void hd_fw_set_claim_graph(struct hd_fw *fw, const struct hd_graph *g)
{
	fw->claim_g = g;
}

bool hd_fw_reads_edges(const struct hd_fw *fw)
{
	// The built-in modules (glibc, libstdc++, CPython) number vertices
	// and never follow an edge; a module loaded from a shared object may
	// (hd_fw_graph is public).
	for (size_t i = 0; i < fw->num_mods; i++)
		if (fw->mods[i].detected && !fw->mods[i].error && fw->mods[i].dl)
			return true;
	return false;
}

void hd_fw_destroy(struct hd_fw *fw)
{
	if (!fw)
		return;
	for (size_t i = 0; i < fw->num_mods; i++) {
		struct hd_fw_module *m = &fw->mods[i];
		free(m->source);
		free(m->error);
		for (size_t k = 0; k < m->num_notes; k++)
			free(m->notes[k]);
		free(m->notes);
		for (size_t k = 0; k < m->num_warnings; k++)
			free(m->warnings[k].message);
		free(m->warnings);
		free(m->priv);
		if (m->dl)
			dlclose(m->dl);
	}
	free(fw->mods);
	hd_fw_defer_destroy(fw);
	for (size_t i = 0; i < fw->num_nodes; i++) {
		free(fw->nodes[i].label);
		free(fw->nodes[i].kind);
	}
	free(fw->nodes);
	free(fw->sa.blocks);
	free(fw->sa.regions);
	free(fw->sa.containers);
	free(fw->sa.container_bytes);
	free(fw->sa.dense);
	free(fw->assigned);
	free(fw->fw_bytes);
	hd_fw_zeroed_free(fw->names, fw->names_bytes);
	hd_fw_zeroed_free(fw->dwarf, fw->dwarf_bytes);
	free(fw->undo);
	for (int w = 0; w < 4; w++)
		free(fw->touched[w]);
	free(fw->conflicts);
	free(fw->marks);
	free(fw->root_order);
	hd_fw_cache_destroy(fw->cache);
	hd_fw_index_free(fw);
	hd_fw_objects_free(fw);
	hd_fw_labels_free(fw);
	free(fw);
}
