// The core file a debugger in this process has loaded, found for a target
// whose memory that debugger reads (lldb 14's API does not say which file
// it loaded). The file is only a source of holes: the memory still comes
// through the debugger, and a hole is skipped only once the file is known
// to be the debugger's core (its threads and their stacks are the
// target's), since skipping on another file's holes would read zeros
// where the process had data.
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_internal.h"
#include "util/vec.h"

// Stack bytes compared per thread: two cores of one process taken at
// different times differ there first.
#define STACK_PROBE 256
// Files looked at, at most: a debugger maps a few hundred.
#define MAX_CANDIDATES 512

struct candidate {
	char *path;
	dev_t dev;
	ino_t ino;
};

struct candidates {
	struct candidate *v;
	size_t n, cap;
};

// Whether path is a regular file starting with a 64-bit ELF core header,
// and not one already listed; adds it then.
static bool add_candidate(struct candidates *c, const char *path)
{
	if (c->n >= MAX_CANDIDATES || path[0] != '/')
		return true;
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return true;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].dev == st.st_dev && c->v[i].ino == st.st_ino)
			return true;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return true;
	Elf64_Ehdr eh;
	ssize_t n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	if (n != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_CORE)
		return true;
	struct candidate k = {strdup(path), st.st_dev, st.st_ino};
	if (!k.path || !HD_VEC_PUSH(c->v, c->n, c->cap, k)) {
		free(k.path);
		return false;
	}
	return true;
}

// The files this process maps from their start (a debugger maps a core
// whole) and the files it holds open.
static bool list_candidates(struct candidates *c)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (f) {
		char *line = NULL;
		size_t cap = 0;
		while (getline(&line, &cap, f) >= 0) {
			line[strcspn(line, "\n")] = '\0';
			unsigned long long off;
			int at = 0;
			if (sscanf(line, "%*x-%*x %*s %llx %*s %*s %n", &off,
				   &at) < 1 || !at || off != 0)
				continue;
			if (!add_candidate(c, line + at)) {
				free(line);
				fclose(f);
				return false;
			}
		}
		free(line);
		fclose(f);
	}
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return true;
	struct dirent *ent;
	bool ok = true;
	while (ok && (ent = readdir(d))) {
		char link[320], path[4096];
		if (ent->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", ent->d_name);
		ssize_t n = readlink(link, path, sizeof(path) - 1);
		if (n <= 0)
			continue;
		path[n] = '\0';
		ok = add_candidate(c, path);
	}
	closedir(d);
	return ok;
}

static const struct hd_thread *find_thread(const struct hd_target *t, int tid)
{
	for (size_t i = 0; i < t->num_threads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

// Why core is not the memory t describes, or NULL when it is: the same
// threads (ids), the same PC and stack pointer in each, the same bytes at
// each stack pointer, and every range the core holds data for among t's
// mappings. *why is a static string or one to free (*owned).
static const char *mismatch(struct hd_target *t, struct hd_target *core,
			    char **owned)
{
	*owned = NULL;
	if (!t->num_threads)
		return "the target has no threads to compare";
	if (core->num_threads != t->num_threads)
		return "another number of threads";
	for (size_t i = 0; i < core->num_threads; i++) {
		const struct hd_thread *a = &core->threads[i];
		const struct hd_thread *b = find_thread(t, a->tid);
		if (!b)
			return "other thread ids";
		if (!a->has_regs || !b->has_regs)
			continue;
		if (a->regs.rip != b->regs.rip || a->regs.rsp != b->regs.rsp)
			return "other registers";
		uint8_t x[STACK_PROBE], y[STACK_PROBE];
		struct hd_error *ea = core->ops->read(core, a->regs.rsp, x, sizeof(x));
		struct hd_error *eb = t->ops->read(t, a->regs.rsp, y, sizeof(y));
		bool same = !ea && !eb && !memcmp(x, y, sizeof(x));
		bool both_fail = ea && eb;
		hd_error_destroy(ea);
		hd_error_destroy(eb);
		if (!same && !both_fail)
			return "other stack contents";
	}
	// Only what the file holds: a range the core left out (a file's
	// text) is read from the mapped file, which the debugger may not
	// list.
	if (!hd_core_num_segments(core))
		return "no memory segments";
	for (size_t i = 0; i < hd_core_num_segments(core); i++) {
		struct hd_extent e = hd_core_segment(core, i);
		for (uint64_t p = e.start; p < e.end;) {
			const struct hd_mapping *tm = hd_target_find_mapping(t, p);
			if (!tm || tm->end <= p) {
				if (asprintf(owned, "it holds memory at 0x%" PRIx64 " that the target does not",
					     p) < 0)
					*owned = NULL;
				return *owned ? *owned : "it holds memory the target does not";
			}
			p = tm->end;
		}
	}
	return NULL;
}

static void set_problem(struct hd_target *t, char *text)
{
	free(t->sparse_problem);
	t->sparse_problem = text;
}

struct hd_error *hd_target_use_loaded_core(struct hd_target *t)
{
	if (!t)
		return hd_error_create(HD_ERROR_INVALID,
				       "hd_target_use_loaded_core: the target is NULL");
	if (t->pagemap || t->ops->data_extents || t->sparse_core)
		return hd_error_create(HD_ERROR_INVALID,
			"hd_target_use_loaded_core: the %s target already knows its never-populated memory",
			t->kind);
	if (t->sparse_off)
		return NULL;
	struct candidates c = {0};
	if (!list_candidates(&c)) {
		for (size_t i = 0; i < c.n; i++)
			free(c.v[i].path);
		free(c.v);
		return &hd_error_no_memory;
	}
	// Why each core was refused, for the fallback's message.
	char *refused = NULL;
	size_t refused_len = 0;
	FILE *rf = open_memstream(&refused, &refused_len);
	struct hd_target *found = NULL;
	char *found_path = NULL, *second = NULL;
	for (size_t i = 0; i < c.n; i++) {
		struct hd_target *core;
		struct hd_error *err = hd_target_open_core(c.v[i].path, NULL, &core);
		const char *why;
		char *owned = NULL;
		if (err) {
			why = err->message;
		} else {
			why = mismatch(t, core, &owned);
		}
		if (!why && !found) {
			found = core;
			found_path = c.v[i].path;
			c.v[i].path = NULL;
		} else if (!why) {
			hd_target_destroy(core);
			second = c.v[i].path;
			c.v[i].path = NULL;
			break;
		} else {
			if (rf)
				fprintf(rf, "%s%s: %s", ftell(rf) ? "; " : "",
					c.v[i].path, why);
			if (!err)
				hd_target_destroy(core);
		}
		free(owned);
		hd_error_destroy(err);
	}
	if (rf)
		fclose(rf);
	for (size_t i = 0; i < c.n; i++)
		free(c.v[i].path);
	free(c.v);
	char *text = NULL;
	int r = 0;
	if (second) {
		// Two files hold this very memory: their holes may differ
		// (a copy made sparse), so neither is trusted.
		r = asprintf(&text,
			     "none: two core files loaded in this process match the target (%s, %s): every byte is read through the debugger",
			     found_path, second);
		hd_target_destroy(found);
		found = NULL;
	} else if (!found) {
		r = asprintf(&text,
			     "none: the debugger does not say which core file it loaded, and no core file mapped or open in this process matches the target%s%s%s: every byte is read through the debugger",
			     refused && *refused ? " (" : "",
			     refused && *refused ? refused : "",
			     refused && *refused ? ")" : "");
	}
	free(refused);
	free(second);
	if (r < 0)
		text = NULL;
	if (found) {
		char *source;
		if (asprintf(&source, "core holes (%s, the core file this process loaded)",
			     found_path) < 0) {
			hd_target_destroy(found);
			free(found_path);
			return &hd_error_no_memory;
		}
		t->sparse_core = found;
		t->sparse_core_source = source;
		set_problem(t, NULL);
		free(found_path);
	} else {
		free(found_path);
		set_problem(t, text);
	}
	return NULL;
}
