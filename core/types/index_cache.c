// A process-wide cache of type indexes keyed by file path and modification
// time, filled by hd_index_cache_get or ahead of time by a prefetch thread
// that runs while the heap is walked; behind it, the per-user cache on disk
// (index_disk.c), keyed by build-id, that spares the next process the DWARF.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "types/index_cache.h"
#include "types/index_disk.h"
#include "util/thread.h"
#include "util/clock.h"

struct cached {
	char *path;
	char *cu_suffix; // a filtered index's (the glibc walker's), or NULL
	struct timespec mtime;
	struct hd_type_index *ix;
	double seconds;
	bool building, done;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER;
static struct cached *cache;
static size_t num_cached, cap_cached;


// ------------------------------------------------------------ on disk

// The directory of the cache files, made if missing; false when caching is
// off (HEAPDOM_INDEX_CACHE=0) or there is nowhere to put it.
static bool disk_dir(char *buf, size_t len)
{
	const char *env = getenv("HEAPDOM_INDEX_CACHE");
	if (env && strcmp(env, "0") == 0)
		return false;
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;
	// The XDG spec: a relative XDG_CACHE_HOME is to be ignored.
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache", home);
	else
		return false;
	if (n <= 0 || (size_t)n >= len)
		return false;
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return false;
	n = snprintf(buf + n, len - (size_t)n, "/heapdom");
	if (n <= 0 || strlen(buf) >= len - 1)
		return false;
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return false;
	// Ours alone: a directory someone else can write to (a shared
	// XDG_CACHE_HOME, a symlink planted there) could hand us layouts
	// that pass every check and are still wrong.
	struct stat st;
	return lstat(buf, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && !(st.st_mode & 022);
}

// At most this many warnings about damaged cache files per process: a
// directory of them (a disk that went bad) is one problem, not hundreds.
#define MAX_WARNINGS 3
static _Atomic unsigned num_warnings;

// The file is not used, and is replaced by the index built from the DWARF.
static void warn_damaged(const char *file, const struct hd_error *err)
{
	unsigned n = atomic_fetch_add(&num_warnings, 1);
	if (n < MAX_WARNINGS)
		fprintf(stderr,
			"heapdom: warning: ignoring the type index cache file %s (%s); it is rebuilt from the DWARF%s\n",
			file, err->message,
			n + 1 == MAX_WARNINGS ? " (further such warnings are not shown)" : "");
}

// Where a fresh build is to be written, once it is in use.
struct disk_save {
	bool wanted;
	struct hd_index_key key;
	char file[4096 + 256];
};

// dir: the cache directory (disk_dir's), "" when the disk cache is off.
static struct hd_error *load_or_build(const char *path, const char *cu_suffix,
				      const char *dir, struct hd_type_index **ret,
				      bool *from_disk, struct disk_save *save)
{
	*ret = NULL;
	save->wanted = false;
	if (from_disk)
		*from_disk = false;
	bool cache = dir[0] != '\0';
	if (cache) {
		struct hd_error *err = hd_index_disk_key(path, cu_suffix, &save->key);
		// No build-id: nothing to key a file by.
		cache = !err && hd_index_disk_file(dir, &save->key, save->file,
						   sizeof(save->file));
		hd_error_destroy(err);
	}
	if (cache) {
		// A file that is missing, stale, damaged or from another
		// file is rebuilt (and replaced) below, never used.
		struct hd_error *err = hd_index_disk_read(save->file, &save->key, ret);
		if (!err) {
			// Used: the last file disk_prune removes.
			utimensat(AT_FDCWD, save->file, NULL, 0);
			if (from_disk)
				*from_disk = true;
			return NULL;
		}
		// Missing or stale (another libheapdom, another format) is
		// the normal life of a cache; a damaged file is worth a word.
		if (err->code != HD_ERROR_NOT_FOUND && err->code != HD_ERROR_MISMATCH)
			warn_damaged(save->file, err);
		hd_error_destroy(err);
	}
	struct hd_error *err = hd_type_index_build_filtered(path, cu_suffix, ret);
	save->wanted = !err && cache;
	return err;
}

// The cache keeps at most this much: each rebuilt program has a new
// build-id, so old files would pile up for ever.
#define DISK_BUDGET (UINT64_C(512) << 20)

struct cache_file {
	char name[256];
	struct timespec mtime;
	uint64_t size;
};

static int cmp_oldest(const void *a, const void *b)
{
	const struct cache_file *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

// Removes the least recently used index files (a read refreshes a file's
// mtime) while the directory holds more than DISK_BUDGET.
static void disk_prune(const char *file)
{
	char dir[4096];
	const char *slash = strrchr(file, '/');
	if (!slash || (size_t)(slash - file) >= sizeof(dir))
		return;
	memcpy(dir, file, (size_t)(slash - file));
	dir[slash - file] = '\0';
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct cache_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;
		if (strncmp(e->d_name, "types-", 6) != 0 || len < 5 ||
		    len >= sizeof(files->name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (strcmp(e->d_name + len - 4, ".idx") != 0) {
			// A writer's temporary file (types-*.idx.XXXXXX) left
			// by a process killed while writing: an hour is far
			// longer than any write takes.
			if (len > 11 && strncmp(e->d_name + len - 11, ".idx.", 5) == 0 &&
			    st.st_mtim.tv_sec + 3600 < time(NULL))
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct cache_file *p = realloc(files, c * sizeof(*p));
			if (!p)
				break;
			files = p;
			cap = c;
		}
		memcpy(files[n].name, e->d_name, len + 1);
		files[n].mtime = st.st_mtim;
		files[n].size = (uint64_t)st.st_size;
		total += files[n++].size;
	}
	if (total > DISK_BUDGET) {
		qsort(files, n, sizeof(*files), cmp_oldest);
		for (size_t i = 0; i < n && total > DISK_BUDGET; i++)
			if (unlinkat(dirfd(d), files[i].name, 0) == 0)
				total -= files[i].size;
	}
	closedir(d);
	free(files);
}

static void disk_save(const struct hd_type_index *ix, const struct disk_save *save)
{
	// A cache that cannot be written (read-only home, disk full) costs
	// the next process the build again, nothing else.
	if (!save->wanted)
		return;
	struct hd_error *err = hd_index_disk_write(ix, &save->key, save->file);
	if (!err)
		disk_prune(save->file);
	hd_error_destroy(err);
}

struct hd_error *hd_index_cache_build(const char *path, const char *cu_suffix,
				      struct hd_type_index **ret, bool *from_disk)
{
	struct disk_save *save = malloc(sizeof(*save));
	if (!save)
		return &hd_error_no_memory;
	char dir[4096];
	if (!disk_dir(dir, sizeof(dir)))
		dir[0] = '\0';
	struct hd_error *err = load_or_build(path, cu_suffix, dir, ret, from_disk, save);
	if (!err)
		disk_save(*ret, save);
	free(save);
	return err;
}

// ------------------------------------------------------------ in memory

static bool same_suffix(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

// The entry for path (and cu_suffix), added if new; called with the lock
// held.
static struct cached *lookup(const char *path, const char *cu_suffix,
			     const struct stat *st)
{
	for (size_t i = 0; i < num_cached; i++) {
		struct cached *c = &cache[i];
		if (strcmp(c->path, path) == 0 &&
		    same_suffix(c->cu_suffix, cu_suffix) &&
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
	char *suffix = cu_suffix ? strdup(cu_suffix) : NULL;
	if (!copy || (cu_suffix && !suffix)) {
		free(copy);
		free(suffix);
		return NULL;
	}
	cache[num_cached] = (struct cached){.path = copy, .cu_suffix = suffix,
					    .mtime = st->st_mtim};
	return &cache[num_cached++];
}

// hd_index_cache_get with the disk cache's directory decided by the caller
// (a prefetch decides in the thread that starts it: the environment is
// read there, not in the worker, which could race a setenv). With
// cu_suffix, the filtered index; *errp (then not NULL) gets the error of a
// build that failed, which is not kept: the next call tries again, and
// says why again.
static const struct hd_type_index *cache_get(const char *path,
					     const char *cu_suffix,
					     const char *dir, double *seconds,
					     struct hd_error **errp)
{
	struct stat st;
	if (seconds)
		*seconds = 0;
	if (errp)
		*errp = NULL;
	if (stat(path, &st) != 0) {
		// The error opening it would give, as without the cache.
		struct hd_type_index *ix = NULL;
		struct hd_error *err =
			errp ? hd_type_index_build_filtered(path, cu_suffix, &ix) : NULL;
		hd_type_index_destroy(ix);
		if (errp)
			*errp = err;
		return NULL;
	}
	pthread_mutex_lock(&lock);
	struct cached *c = lookup(path, cu_suffix, &st);
	if (!c) {
		pthread_mutex_unlock(&lock);
		if (errp)
			*errp = &hd_error_no_memory;
		return NULL;
	}
	size_t idx = (size_t)(c - cache);
	while (cache[idx].building)
		pthread_cond_wait(&built, &lock);
	if (!cache[idx].done) {
		cache[idx].building = true;
		pthread_mutex_unlock(&lock);
		double t0 = hd_seconds();
		struct hd_type_index *ix = NULL;
		struct disk_save *save = malloc(sizeof(*save));
		struct hd_error *err = save ? load_or_build(path, cu_suffix, dir, &ix, NULL, save)
					    : &hd_error_no_memory;
		if (err && cu_suffix) {
			// A filtered index that failed is not kept: asked
			// again, built again (as before there was a cache),
			// and its error said again.
			free(save);
			pthread_mutex_lock(&lock);
			cache[idx].building = false;
			pthread_cond_broadcast(&built);
			pthread_mutex_unlock(&lock);
			if (errp)
				*errp = err;
			else
				hd_error_destroy(err);
			return NULL;
		}
		if (err) {
			// No DWARF, or DWARF libdwarf cannot read: untyped.
			hd_error_destroy(err);
			ix = NULL;
		}
		double dt = hd_seconds() - t0;
		pthread_mutex_lock(&lock);
		cache[idx].ix = ix;
		cache[idx].seconds = dt;
		cache[idx].building = false;
		cache[idx].done = true;
		pthread_cond_broadcast(&built);
		// Written once published: whoever waits for the index does
		// not wait for the disk too. The index is immutable now.
		if (ix && save && save->wanted) {
			pthread_mutex_unlock(&lock);
			disk_save(ix, save);
			pthread_mutex_lock(&lock);
		}
		free(save);
	}
	const struct hd_type_index *ix = cache[idx].ix;
	if (seconds)
		*seconds = cache[idx].seconds;
	pthread_mutex_unlock(&lock);
	return ix;
}

const struct hd_type_index *hd_index_cache_get(const char *path,
					       double *seconds)
{
	char dir[4096];
	if (!disk_dir(dir, sizeof(dir)))
		dir[0] = '\0';
	return cache_get(path, NULL, dir, seconds, NULL);
}

struct hd_error *hd_index_cache_get_filtered(const char *path,
					     const char *cu_suffix,
					     const struct hd_type_index **ret)
{
	char dir[4096];
	if (!disk_dir(dir, sizeof(dir)))
		dir[0] = '\0';
	struct hd_error *err = NULL;
	*ret = cache_get(path, cu_suffix, dir, NULL, &err);
	if (!*ret && !err)
		err = hd_error_file(HD_ERROR_NOT_FOUND, path, "no DWARF debug info");
	return err;
}

// Whether path's index is being made by another thread now.
static bool being_built(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return false;
	bool ret = false;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < num_cached; i++) {
		const struct cached *c = &cache[i];
		if (strcmp(c->path, path) == 0 && !c->cu_suffix &&
		    c->mtime.tv_sec == st.st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			ret = c->building;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void hd_index_cache_get_many(const char *const *paths, size_t n,
			     const struct hd_type_index **ixs, double *seconds)
{
	char dir[4096];
	if (!disk_dir(dir, sizeof(dir)))
		dir[0] = '\0';
	bool *later = calloc(n ? n : 1, sizeof(*later));
	// First the files nobody is indexing (made here, on this thread),
	// then those a prefetch thread is on: typing waiting for libc's index
	// need not wait for ld.so's too, queued behind it, while this thread
	// could have made it.
	for (size_t i = 0; i < n; i++) {
		ixs[i] = NULL;
		seconds[i] = 0;
		if (!paths[i])
			continue;
		if (later && being_built(paths[i]))
			later[i] = true;
		else
			ixs[i] = cache_get(paths[i], NULL, dir, &seconds[i], NULL);
	}
	for (size_t i = 0; later && i < n; i++)
		if (later[i])
			ixs[i] = cache_get(paths[i], NULL, dir, &seconds[i], NULL);
	free(later);
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
	char dir[4096]; // the disk cache's, "" when off
	bool finished;   // the background worker is returning (under the lock)
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
			cache_get(p->paths[i], NULL, p->dir, NULL, NULL);
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

// The files a front-end asked to have read ahead, read in order by one
// thread (background): a program with a hundred libraries must not start a
// hundred threads reading DWARF at once.
struct queued {
	char *path, *cu_suffix;
	char dir[4096]; // the disk cache's when asked, "" when off
	struct queued *next;
};
static struct queued *queue_head, *queue_tail;
static struct hd_prefetch *background; // its worker's record, listed in running

static void queued_free(struct queued *q)
{
	free(q->path);
	free(q->cu_suffix);
	free(q);
}

static void *background_worker(void *arg)
{
	struct hd_prefetch *p = arg;
	pthread_mutex_lock(&lock);
	while (queue_head && !unloading) {
		struct queued *q = queue_head;
		queue_head = q->next;
		if (!queue_head)
			queue_tail = NULL;
		pthread_mutex_unlock(&lock);
		// The walker's layouts first: the heap is walked before
		// anything is typed.
		if (q->cu_suffix)
			cache_get(q->path, q->cu_suffix, q->dir, NULL, NULL);
		cache_get(q->path, NULL, q->dir, NULL, NULL);
		queued_free(q);
		pthread_mutex_lock(&lock);
	}
	// Under the lock: a file queued after this starts another worker.
	p->finished = true;
	pthread_mutex_unlock(&lock);
	return NULL;
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
	background = NULL;
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
	background = NULL;
	while (queue_head) {
		struct queued *q = queue_head;
		queue_head = q->next;
		queued_free(q);
	}
	queue_tail = NULL;
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
	if (!disk_dir(p->dir, sizeof(p->dir)))
		p->dir[0] = '\0';
	// Listed before it starts, so that no running thread is unlisted.
	pthread_mutex_lock(&lock);
	if (hd_thread_create(&p->thread, prefetch_worker, p) != 0) {
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

void hd_index_cache_prefetch_background(const char *path, const char *cu_suffix)
{
	struct queued *q = calloc(1, sizeof(*q));
	if (!q)
		return;
	q->path = strdup(path);
	q->cu_suffix = cu_suffix ? strdup(cu_suffix) : NULL;
	if (!q->path || (cu_suffix && !q->cu_suffix)) {
		queued_free(q);
		return;
	}
	if (!disk_dir(q->dir, sizeof(q->dir)))
		q->dir[0] = '\0';
	struct hd_prefetch *done = NULL, *p = NULL;
	pthread_mutex_lock(&lock);
	if (queue_tail)
		queue_tail->next = q;
	else
		queue_head = q;
	queue_tail = q;
	// A worker that has finished is joined (at once: it has returned or
	// is about to) and replaced.
	if (background && background->finished) {
		for (struct hd_prefetch **pp = &running; *pp; pp = &(*pp)->next) {
			if (*pp == background) {
				*pp = background->next;
				break;
			}
		}
		done = background;
		background = NULL;
	}
	if (!background && (p = calloc(1, sizeof(*p)))) {
		if (hd_thread_create(&p->thread, background_worker, p) == 0) {
			p->next = running;
			running = p;
			background = p;
		} else {
			// No thread: the file stays queued for the next call,
			// and typing reads it on demand meanwhile.
			free(p);
		}
	}
	pthread_mutex_unlock(&lock);
	if (done) {
		pthread_join(done->thread, NULL);
		prefetch_free(done);
	}
}
