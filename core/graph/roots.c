// Named roots: threads (registers, stack, TLS), every module's global
// variables and unnamed writable data, and the remaining writable memory
// that is not the allocator's, each range claimed by exactly one root.
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo/debuginfo_internal.h"
#include "heapdom_trace.h"
#include "graph/graph_internal.h"
#include "graph/suballoc.h"
#include "util/demangle.h"
#include "util/elf_read.h"
#include "util/vec.h"
#include "util/search.h"

// Bytes below the stack pointer a function may use without moving it
// (System V x86-64 ABI, 3.2.2).
#define RED_ZONE 128

// sizeof(struct pthread) in glibc 2.36 on x86-64: the thread descriptor at
// the thread pointer, which holds pthread_setspecific values.
#define TCB_SIZE 2368

struct interval {
	uint64_t lo, hi;
};

struct claims {
	struct interval *iv; // sorted, disjoint
	size_t n, cap;
};

static size_t first_after(const struct claims *c, uint64_t addr)
{
	return HD_FIRST_ENDING_AFTER(c->iv, c->n, hi, addr);
}

static bool claim(struct claims *c, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return true;
	size_t i = first_after(c, lo);
	size_t j = i;
	while (j < c->n && c->iv[j].lo <= hi) {
		if (c->iv[j].lo < lo)
			lo = c->iv[j].lo;
		if (c->iv[j].hi > hi)
			hi = c->iv[j].hi;
		j++;
	}
	if (j == i) {
		struct interval dummy = {0};
		if (!HD_VEC_PUSH(c->iv, c->n, c->cap, dummy))
			return false;
		memmove(&c->iv[i + 1], &c->iv[i], (c->n - 1 - i) * sizeof(*c->iv));
	} else if (j > i + 1) {
		memmove(&c->iv[i + 1], &c->iv[j], (c->n - j) * sizeof(*c->iv));
		c->n -= j - i - 1;
	}
	c->iv[i] = (struct interval){lo, hi};
	return true;
}

static struct hd_error *push_root(struct hd_graph *g, const char *name,
				  enum hd_root_kind kind, uint64_t lo,
				  uint64_t hi, int tid)
{
	struct hd_root r = {.kind = kind, .start = lo, .end = hi, .tid = tid};
	r.name = strdup(name);
	if (!r.name || !HD_VEC_PUSH(g->roots, g->num_roots, g->cap_roots, r)) {
		free(r.name);
		return &hd_error_no_memory;
	}
	return NULL;
}

// Adds a root for each part of [lo, hi) no other root has, then claims it.
static struct hd_error *add_unclaimed(struct hd_graph *g, struct claims *c,
				      const char *name, enum hd_root_kind kind,
				      uint64_t lo, uint64_t hi, int tid)
{
	lo = (lo + 7) & ~7ULL;
	if (lo >= hi)
		return NULL;
	uint64_t p = lo;
	for (size_t i = first_after(c, lo); p < hi; i++) {
		uint64_t end = i < c->n && c->iv[i].lo < hi ? c->iv[i].lo : hi;
		if (end > p) {
			struct hd_error *err = push_root(g, name, kind, p, end, tid);
			if (err)
				return err;
		}
		if (i >= c->n || c->iv[i].lo >= hi)
			break;
		p = c->iv[i].hi;
	}
	return claim(c, lo, hi) ? NULL : &hd_error_no_memory;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static uint64_t static_tls_size(struct hd_target *t)
{
	uint64_t total = 0;
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		struct hd_elf_info info;
		if (!m->file)
			continue;
		struct hd_error *err = hd_elf_read_info(m->file, &info);
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		uint64_t align = info.tls_align ? info.tls_align : 1;
		total += (info.tls_memsz + align - 1) / align * align;
	}
	return (total + 63) & ~63ULL;
}

#define MAX_FRAME_LEVELS (1u << 20)

// Frames the front-end knows split the live stack: each frame is a root
// named after its function; what no frame covers stays "thread N stack".
// A local is named after its thread, its frame and itself, "thread 1234
// #2 worker (file.c:48) local mine", so that one function's locals in two
// threads or two frames are two owners; its frame is found by level in a
// table of the thread's frames, not by searching them for every local.
static struct hd_error *frame_roots(struct hd_graph *g, struct claims *c,
				    struct hd_target *t, int tid, uint64_t lo,
				    uint64_t hi)
{
	size_t nframes = hd_target_num_frames(t);
	unsigned levels = 0;
	for (size_t i = 0; i < nframes; i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		// A front-end's levels are bounded (gdb's backtrace limit);
		// one past that is no frame this table holds.
		if (f->tid == tid && !f->local && f->level >= levels &&
		    f->level < MAX_FRAME_LEVELS)
			levels = f->level + 1;
	}
	const char **frame_of = calloc(levels ? levels : 1, sizeof(*frame_of));
	if (!frame_of)
		return &hd_error_no_memory;
	for (size_t i = 0; i < nframes; i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (f->tid == tid && !f->local && f->level < levels &&
		    !frame_of[f->level])
			frame_of[f->level] = f->name;
	}
	struct hd_error *err = NULL;
	for (size_t i = 0; i < nframes && !err; i++) {
		const struct hd_frame *f = hd_target_frame(t, i);
		if (f->tid != tid)
			continue;
		uint64_t a = f->sp < lo ? lo : f->sp;
		uint64_t b = f->caller_sp > hi ? hi : f->caller_sp;
		if (a >= b)
			continue;
		char name[800];
		if (!f->local)
			snprintf(name, sizeof(name), "thread %d %s", tid, f->name);
		else if (f->level < levels && frame_of[f->level])
			snprintf(name, sizeof(name), "thread %d %s local %s", tid,
				 frame_of[f->level], f->name);
		else
			snprintf(name, sizeof(name), "thread %d #%u local %s", tid,
				 f->level, f->name);
		err = add_unclaimed(g, c, name, f->local ? HD_ROOT_LOCAL : HD_ROOT_FRAME,
				    a, b, tid);
	}
	free(frame_of);
	return err;
}

static struct hd_error *thread_roots(struct hd_graph *g, struct claims *c,
				     struct hd_target *t)
{
	uint64_t tls = static_tls_size(t);
	size_t n = hd_target_num_threads(t);
	for (size_t i = 0; i < n; i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		if (!th->has_regs)
			continue;
		char name[64];
		snprintf(name, sizeof(name), "thread %d registers", th->tid);
		struct hd_error *err = push_root(g, name, HD_ROOT_REGISTERS, 0, 0,
						 th->tid);
		if (err)
			return err;
		struct hd_reg_root rr = {.root = g->num_roots - 1, .regs = th->regs};
		if (!HD_VEC_PUSH(g->reg_roots, g->num_reg_roots, g->cap_reg_roots, rr))
			return &hd_error_no_memory;

		uint64_t fs = th->regs.fs_base;
		const struct hd_mapping *tm = fs ? hd_target_find_mapping(t, fs) : NULL;
		if (tm) {
			uint64_t lo = fs - tls < tm->start ? tm->start : fs - tls;
			uint64_t hi = fs + TCB_SIZE > tm->end ? tm->end : fs + TCB_SIZE;
			snprintf(name, sizeof(name), "thread %d TLS", th->tid);
			err = add_unclaimed(g, c, name, HD_ROOT_TLS, lo, hi, th->tid);
			if (err)
				return err;
		}
		uint64_t sp = th->regs.rsp;
		const struct hd_mapping *sm = hd_target_find_mapping(t, sp);
		if (!sm || !sm->readable)
			continue;
		// The live stack runs from the stack pointer to the top, plus
		// the x86-64 ABI's red zone: the 128 bytes below it, where a
		// leaf function (every -O0 one) keeps its locals. Below lie
		// dead frames whose stale pointers keep nothing alive. valgrind
		// scans the red zone too.
		uint64_t lo = sp - sm->start > RED_ZONE ? sp - RED_ZONE : sm->start;
		uint64_t hi = sm->end;
		// A thread's TLS and descriptor sit above its stack.
		if (tm == sm && fs > sp && fs - tls > lo)
			hi = fs - tls;
		err = frame_roots(g, c, t, th->tid, lo, hi);
		if (err)
			return err;
		snprintf(name, sizeof(name), "thread %d stack", th->tid);
		err = add_unclaimed(g, c, name, HD_ROOT_STACK, lo, hi, th->tid);
		if (err)
			return err;
		if (!claim(c, sm->start, lo))
			return &hd_error_no_memory;
	}
	return NULL;
}

// An exited thread's stack and TLS hold stale pointers only; its
// descriptor (named by its pthread_t) holds its result until it is joined.
static struct hd_error *dead_thread_roots(struct hd_graph *g, struct claims *c,
					  struct hd_target *t)
{
	struct hd_dead_stack *dead = NULL;
	size_t n = 0;
	struct hd_error *err = hd_dead_thread_stacks(t, &dead, &n);
	for (size_t i = 0; i < n && !err; i++) {
		char name[64];
		snprintf(name, sizeof(name), "exited thread 0x%llx",
			 (unsigned long long)dead[i].descriptor);
		err = add_unclaimed(g, c, name, HD_ROOT_REGION,
				    dead[i].descriptor, dead[i].end, 0);
		if (!err && !claim(c, dead[i].start, dead[i].descriptor))
			err = &hd_error_no_memory;
	}
	free(dead);
	return err;
}

static void gap_name(char *buf, size_t len, const char *mod,
		     const struct hd_elf_section *secs, size_t nsecs,
		     uint64_t link_addr)
{
	for (size_t i = 0; i < nsecs; i++) {
		if (link_addr >= secs[i].addr &&
		    link_addr < secs[i].addr + secs[i].size) {
			snprintf(buf, len, "%s:%s+0x%llx", mod, secs[i].name,
				 (unsigned long long)(link_addr - secs[i].addr));
			return;
		}
	}
	snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)link_addr);
}

// Globals of one writable range of a module, and region roots for the gaps.
static struct hd_error *module_range_roots(struct hd_graph *g, struct claims *c,
					   const struct hd_module *m,
					   const struct hd_elf_symbol *syms,
					   size_t nsyms,
					   const struct hd_elf_section *secs,
					   size_t nsecs, uint64_t lo, uint64_t hi)
{
	const char *mod = base_name(m->name);
	char name[512];
	uint64_t p = lo;
	// First symbol at or above lo (symbols sorted by value).
	size_t i = 0, j = nsyms;
	while (i < j) {
		size_t mid = (i + j) / 2;
		if (m->bias + syms[mid].value < lo)
			i = mid + 1;
		else
			j = mid;
	}
	for (; p < hi; i++) {
		uint64_t s_lo = i < nsyms ? m->bias + syms[i].value : hi;
		if (s_lo > hi)
			s_lo = hi;
		if (s_lo > p) {
			gap_name(name, sizeof(name), mod, secs, nsecs, p - m->bias);
			struct hd_error *err = add_unclaimed(g, c, name, HD_ROOT_REGION,
							     p, s_lo, 0);
			if (err)
				return err;
			p = s_lo;
		}
		if (i >= nsyms || s_lo >= hi)
			break;
		uint64_t s_hi = s_lo + syms[i].size;
		if (s_hi > hi)
			s_hi = hi;
		if (s_hi <= p)
			continue; // an alias or a symbol inside the previous one
		char *pretty = hd_demangle(syms[i].name);
		snprintf(name, sizeof(name), "%s:%s", mod, pretty ? pretty : syms[i].name);
		free(pretty);
		struct hd_error *err = add_unclaimed(g, c, name, HD_ROOT_GLOBAL,
						     p, s_hi, 0);
		if (err)
			return err;
		p = s_hi;
	}
	return NULL;
}

static struct hd_error *module_roots(struct hd_graph *g, struct claims *c,
				     struct hd_target *t,
				     struct hd_debuginfo *di)
{
	for (size_t k = 0; k < hd_target_num_modules(t); k++) {
		const struct hd_module *m = hd_target_module(t, k);
		struct hd_elf_symbol *syms = NULL;
		struct hd_elf_section *secs = NULL;
		size_t nsyms = 0, nsecs = 0;
		struct hd_error *err = hd_debuginfo_module_objects(di, m, &syms, &nsyms);
		if (!err)
			err = hd_debuginfo_module_sections(di, m, &secs, &nsecs);
		// Where the module's image ends in memory: its last allocated
		// section (.bss) rounded up to a page. An anonymous mapping
		// after the file's last page is its .bss only up to there; the
		// kernel may place an unrelated mmap (an allocator's arena)
		// right after it.
		uint64_t image_end = 0;
		for (size_t i = 0; i < nsecs; i++)
			if (secs[i].addr && m->bias + secs[i].addr + secs[i].size > image_end)
				image_end = m->bias + secs[i].addr + secs[i].size;
		image_end = (image_end + 0xfff) & ~0xfffULL;
		uint64_t prev_end = 0;
		for (size_t i = 0; i < hd_target_num_mappings(t) && !err; i++) {
			const struct hd_mapping *map = hd_target_mapping(t, i);
			// By path, or by address when the debugger gives no
			// names (lldb's regions of a core).
			bool mine = map->path ? strcmp(map->path, m->name) == 0
					      : map->start >= m->start && map->end <= m->end;
			// .bss beyond the file's last page is anonymous.
			bool bss = !map->path && map->start == prev_end &&
				   map->start >= m->start && map->start < image_end;
			if (mine)
				prev_end = map->end;
			if (!(mine || bss) || !(map->prot & HD_PROT_WRITE) ||
			    !map->readable)
				continue;
			uint64_t hi = bss && map->end > image_end ? image_end : map->end;
			err = module_range_roots(g, c, m, syms, nsyms, secs, nsecs,
						 map->start, hi);
		}
		hd_elf_free_symbols(syms, nsyms);
		hd_elf_free_sections(secs, nsecs);
		if (err)
			return err;
	}
	return NULL;
}

static struct hd_error *other_roots(struct hd_graph *g, struct claims *c,
				    struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		if (!m->readable || !(m->prot & HD_PROT_WRITE) ||
		    (m->path && (strcmp(m->path, "[vvar]") == 0 ||
				 strcmp(m->path, "[vsyscall]") == 0)))
			continue;
		char name[512];
		if (m->path)
			snprintf(name, sizeof(name), "%s+0x%llx", m->path,
				 (unsigned long long)m->file_offset);
		else
			snprintf(name, sizeof(name), "anon 0x%llx-0x%llx",
				 (unsigned long long)m->start,
				 (unsigned long long)m->end);
		struct hd_error *err = add_unclaimed(g, c, name, HD_ROOT_REGION,
						     m->start, m->end, 0);
		if (err)
			return err;
	}
	return NULL;
}

struct hd_error *hd_roots_collect(struct hd_graph *g, struct hd_target *t,
				  struct hd_debuginfo *di,
				  const struct hd_heap *h)
{
	struct claims c = {0};
	struct hd_error *err = NULL;
	// The allocator's memory is no root: its blocks are vertices.
	for (size_t i = 0; i < hd_heap_num_segments(h) && !err; i++) {
		const struct hd_heap_segment *s = hd_heap_segment(h, i);
		if (!claim(&c, s->start, s->end))
			err = &hd_error_no_memory;
	}
	// Nor are the mappings of sub-allocators: their blocks are vertices.
	for (size_t i = 0; g->sub && i < g->sub->num_regions && !err; i++)
		if (!claim(&c, g->sub->regions[i].start, g->sub->regions[i].end))
			err = &hd_error_no_memory;
	// Nor is its metadata outside the blocks (glibc's main_arena, whose
	// bins point at blocks): it keeps no block alive.
	for (size_t i = 0; i < hd_heap_num_metadata(h) && !err; i++) {
		const struct hd_heap_metadata *m = hd_heap_metadata(h, i);
		if (!claim(&c, m->start, m->end))
			err = &hd_error_no_memory;
	}
	// Nor is the allocation tracer's state (heapdom_trace.h): counters
	// of the tracer's own, none of the program's pointers, and 9 MiB not
	// worth scanning.
	uint64_t tracer, tracer_size;
	struct hd_error *none = hd_debuginfo_find_symbol(di, NULL, HD_TRACE_SYMBOL, &tracer,
							 &tracer_size);
	if (none)
		hd_error_destroy(none);
	else if (!err && !claim(&c, tracer, tracer + tracer_size))
		err = &hd_error_no_memory;
	if (!err)
		err = thread_roots(g, &c, t);
	if (!err)
		err = dead_thread_roots(g, &c, t);
	if (!err)
		err = module_roots(g, &c, t, di);
	if (!err)
		err = other_roots(g, &c, t);
	free(c.iv);
	return err;
}

const char *hd_root_kind_name(enum hd_root_kind k)
{
	switch (k) {
	case HD_ROOT_GLOBAL: return "global";
	case HD_ROOT_REGION: return "region";
	case HD_ROOT_REGISTERS: return "registers";
	case HD_ROOT_STACK: return "stack";
	case HD_ROOT_FRAME: return "frame";
	case HD_ROOT_TLS: return "tls";
	case HD_ROOT_LOCAL: return "local";
	}
	return "?";
}

unsigned hd_root_rank(enum hd_root_kind k)
{
	switch (k) {
	case HD_ROOT_GLOBAL:
	case HD_ROOT_REGION:
		return 0;
	case HD_ROOT_TLS:
		return 1;
	case HD_ROOT_LOCAL:
		return 2;
	case HD_ROOT_FRAME:
	case HD_ROOT_STACK:
		return 3;
	case HD_ROOT_REGISTERS:
		return 4;
	}
	return 0;
}

const char *hd_root_rank_name(unsigned rank)
{
	static const char *const names[HD_ROOT_RANKS] = {
		"globals", "tls", "locals", "stack", "registers"};
	return rank < HD_ROOT_RANKS ? names[rank] : "?";
}
