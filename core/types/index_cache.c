// A process-wide cache of type indexes keyed by file path and modification
// time, filled by hd_index_cache_get or ahead of time by a prefetch thread
// that runs while the heap is walked.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "types/index_cache.h"

struct cached {
	char *path;
	struct timespec mtime;
	struct hd_type_index *ix;
	double seconds;
	bool building, done;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER;
static struct cached *cache;
static size_t num_cached, cap_cached;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

// The entry for path, added if new; called with the lock held.
static struct cached *lookup(const char *path, const struct stat *st)
{
	for (size_t i = 0; i < num_cached; i++) {
		struct cached *c = &cache[i];
		if (strcmp(c->path, path) == 0 &&
		    c->mtime.tv_sec == st->st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return c;
	}
	if (num_cached == cap_cached) {
		size_t cap = cap_cached ? 2 * cap_cached : 16;
		struct cached *p = realloc(cache, cap * sizeof(*p));
		if (!p)
			return NULL;
		cache = p;
		cap_cached = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return NULL;
	cache[num_cached] = (struct cached){.path = copy, .mtime = st->st_mtim};
	return &cache[num_cached++];
}

const struct hd_type_index *hd_index_cache_get(const char *path,
					       double *seconds)
{
	struct stat st;
	if (seconds)
		*seconds = 0;
	if (stat(path, &st) != 0)
		return NULL;
	pthread_mutex_lock(&lock);
	struct cached *c = lookup(path, &st);
	if (!c) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	size_t idx = (size_t)(c - cache);
	while (cache[idx].building)
		pthread_cond_wait(&built, &lock);
	if (!cache[idx].done) {
		cache[idx].building = true;
		pthread_mutex_unlock(&lock);
		double t0 = now();
		struct hd_type_index *ix = NULL;
		struct hd_error *err = hd_type_index_build(path, &ix);
		if (err) {
			// No DWARF, or DWARF libdwarf cannot read: untyped.
			hd_error_destroy(err);
			ix = NULL;
		}
		double dt = now() - t0;
		pthread_mutex_lock(&lock);
		cache[idx].ix = ix;
		cache[idx].seconds = dt;
		cache[idx].building = false;
		cache[idx].done = true;
		pthread_cond_broadcast(&built);
	}
	const struct hd_type_index *ix = cache[idx].ix;
	if (seconds)
		*seconds = cache[idx].seconds;
	pthread_mutex_unlock(&lock);
	return ix;
}

// One prefetch: its thread and files. Running prefetches are listed so that
// the library's destructor can join them: a front-end's caller joins its
// own (hd_index_cache_join), but if the library is unloaded or the process
// exits first (a debugger quitting while a session is kept), no thread of
// ours may go on running code that is about to be unmapped: lldb 14
// crashed at quit that way.
struct hd_prefetch {
	pthread_t thread;
	char **paths;
	size_t n;
	struct hd_prefetch *next;
};

static struct hd_prefetch *running;
static bool unloading; // the destructor ran: skip the files not yet begun

static void *prefetch_worker(void *arg)
{
	struct hd_prefetch *p = arg;
	for (size_t i = 0; i < p->n; i++) {
		pthread_mutex_lock(&lock);
		bool stop = unloading;
		pthread_mutex_unlock(&lock);
		if (!stop)
			hd_index_cache_get(p->paths[i], NULL);
	}
	return NULL;
}

static void prefetch_free(struct hd_prefetch *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->paths[i]);
	free(p->paths);
	free(p);
}

void hd_index_cache_join(struct hd_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&lock);
	bool listed = false;
	for (struct hd_prefetch **pp = &running; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			listed = true;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	// Not listed: the destructor has joined and freed it already, or this
	// is a fork's child, which has no thread to join.
	if (!listed)
		return;
	pthread_join(p->thread, NULL);
	prefetch_free(p);
}

// fork() copies the calling thread only: the child takes the lock in a
// consistent state, no prefetch thread, and no file half built by one.
static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void)
{
	running = NULL; // their records stay allocated: the parent's to free
	for (size_t i = 0; i < num_cached; i++)
		cache[i].building = false;
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void watch_forks(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((destructor)) static void join_all_prefetches(void)
{
	pthread_mutex_lock(&lock);
	unloading = true;
	struct hd_prefetch *list = running;
	running = NULL;
	pthread_mutex_unlock(&lock);
	while (list) {
		struct hd_prefetch *next = list->next;
		pthread_join(list->thread, NULL);
		prefetch_free(list);
		list = next;
	}
}

struct hd_prefetch *hd_index_cache_prefetch(const char *const *paths, size_t n)
{
	struct hd_prefetch *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->paths = calloc(n ? n : 1, sizeof(char *));
	if (!p->paths) {
		free(p);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (paths[i] && (p->paths[p->n] = strdup(paths[i])))
			p->n++;
	// Listed before it starts, so that no running thread is unlisted.
	pthread_mutex_lock(&lock);
	if (pthread_create(&p->thread, NULL, prefetch_worker, p) != 0) {
		pthread_mutex_unlock(&lock);
		// No thread: typing will index on demand.
		prefetch_free(p);
		return NULL;
	}
	p->next = running;
	running = p;
	pthread_mutex_unlock(&lock);
	return p;
}
