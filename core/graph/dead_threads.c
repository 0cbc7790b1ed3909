// Stacks of threads that have exited. glibc keeps a joined or detached
// thread's stack mapped (its stack cache, up to 40 MiB) to give it to the
// next thread; until then the mapping still holds the dead thread's frames
// and static TLS, whose stale pointers would keep blocks alive that the
// program has in fact leaked. Such a mapping is recognised by the thread
// descriptor at its top: tcbhead_t's tcb and self point at the descriptor
// itself, and its tid is 0 or less: the kernel writes 0 there when the
// thread exits (glibc creates threads with CLONE_CHILD_CLEARTID on
// &pd->tid), and glibc -1 once the thread is joined (its FREE_P test is
// tid <= 0).
// Where tid lies in the descriptor is learnt from the live threads, whose
// descriptors hold their own ids: no debug info needed.
#include <string.h>

#include "graph/graph_internal.h"
#include "util/vec.h"

// The descriptor's tid is this far in (struct pthread; 0x2d0 in 2.36).
#define TID_LO 0x100
#define TID_HI 0x800
// glibc puts the descriptor at the top of the stack mapping, below it
// only the alignment of the static TLS (0x940 bytes from the top in
// 2.36); a thread's stack is at least PTHREAD_STACK_MIN (16 KiB).
#define TOP_SCAN (16u << 10)

// The offset of tid in the descriptors of the live threads: the one
// offset at which each holds its own id. 0: none, or not one.
static uint64_t tid_offset(struct hd_target *t)
{
	uint32_t candidates[(TID_HI - TID_LO) / 4];
	size_t n = 0;
	bool first = true;
	for (size_t i = 0; i < hd_target_num_threads(t); i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		uint8_t d[TID_HI];
		if (!th->has_regs || !th->regs.fs_base || th->tid <= 0)
			continue;
		struct hd_error *err = hd_target_read(t, th->regs.fs_base, d, sizeof(d));
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		size_t kept = 0;
		for (uint32_t o = TID_LO; o < TID_HI; o += 4) {
			int32_t v;
			memcpy(&v, d + o, 4);
			bool was = false;
			for (size_t k = 0; !first && k < n && !was; k++)
				was = candidates[k] == o;
			if (v == th->tid && (first || was))
				candidates[kept++] = o;
		}
		n = kept;
		first = false;
	}
	return n == 1 ? candidates[0] : 0;
}

// Whether a live thread's stack pointer or descriptor lies in m.
static bool has_live_thread(struct hd_target *t, const struct hd_mapping *m)
{
	for (size_t i = 0; i < hd_target_num_threads(t); i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		if (!th->has_regs)
			continue;
		if ((th->regs.rsp >= m->start && th->regs.rsp < m->end) ||
		    (th->regs.fs_base >= m->start && th->regs.fs_base < m->end))
			return true;
	}
	return false;
}

// The address of an exited thread's descriptor in the top of m, or 0.
static uint64_t dead_descriptor(struct hd_target *t, const struct hd_mapping *m,
				uint64_t tid_off)
{
	uint64_t len = TOP_SCAN;
	struct hd_view v;
	if (m->end - m->start < len)
		return 0;
	struct hd_error *err = hd_target_view(t, m->end - len, len, &v);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	uint64_t found = 0;
	for (uint64_t off = 0; off + tid_off + 4 <= v.len && !found; off += 8) {
		uint64_t addr = v.addr + off, tcb, self;
		int32_t tid;
		memcpy(&tcb, v.data + off, 8);
		memcpy(&self, v.data + off + 16, 8);
		memcpy(&tid, v.data + off + tid_off, 4);
		if (tcb == addr && self == addr && tid <= 0)
			found = addr;
	}
	hd_view_deinit(&v);
	return found;
}

struct hd_error *hd_dead_thread_stacks(struct hd_target *t,
				       struct hd_dead_stack **ret, size_t *num)
{
	uint64_t tid_off = tid_offset(t);
	struct hd_dead_stack *v = NULL;
	size_t n = 0, cap = 0;
	*ret = NULL;
	*num = 0;
	if (!tid_off)
		return NULL;
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		if (m->path || !m->readable || !(m->prot & HD_PROT_WRITE) ||
		    has_live_thread(t, m))
			continue;
		uint64_t d = dead_descriptor(t, m, tid_off);
		// The descriptor itself stays a root: it holds the thread's
		// result until the thread is joined.
		struct hd_dead_stack ds = {m->start, d, m->end};
		if (d && !HD_VEC_PUSH(v, n, cap, ds)) {
			free(v);
			return &hd_error_no_memory;
		}
	}
	*ret = v;
	*num = n;
	return NULL;
}
