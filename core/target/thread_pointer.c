// Recovers a thread's thread pointer (fs_base on x86-64) when the debugger
// does not report it (lldb 14 has no fs_base register). glibc's thread
// descriptor starts with tcbhead_t {tcb, dtv, self}: tcb and self point at
// the descriptor itself, and the descriptor holds the thread's id a few
// hundred bytes in. That shape, with the right id, is the thread pointer.
#include <string.h>

#include "target_internal.h"

#define SCAN_LIMIT (64ULL << 20)
#define TID_LO 0x100
#define TID_HI 0x800

static bool is_descriptor(const uint8_t *d, uint64_t len, uint64_t off,
			  uint64_t addr, int tid)
{
	uint64_t tcb, self;
	if (off + TID_HI > len)
		return false;
	memcpy(&tcb, d + off, 8);
	memcpy(&self, d + off + 16, 8);
	if (tcb != addr || self != addr)
		return false;
	for (uint64_t o = TID_LO; o < TID_HI; o += 4) {
		int32_t v;
		memcpy(&v, d + off + o, 4);
		if (v == tid)
			return true;
	}
	return false;
}

static bool scan_mapping(struct hd_target *t, const struct hd_mapping *m,
			 int tid, uint64_t *ret)
{
	struct hd_view v;
	struct hd_error *err = hd_target_view(t, m->start, m->end - m->start, &v);
	if (err) {
		hd_error_destroy(err);
		return false; // unreadable: nothing to find there
	}
	bool found = false;
	// Descriptors sit at the top of a thread's stack mapping: scan down.
	for (uint64_t off = (v.len & ~7ULL); off >= 8 && !found;) {
		off -= 8;
		if (is_descriptor(v.data, v.len, off, m->start + off, tid)) {
			*ret = m->start + off;
			found = true;
		}
	}
	hd_view_deinit(&v);
	return found;
}

static bool candidate(const struct hd_mapping *m)
{
	return m->readable && (m->prot & HD_PROT_WRITE) &&
	       !(m->prot & HD_PROT_EXEC);
}

void hd_target_recover_thread_pointers(struct hd_target *t)
{
	for (size_t i = 0; i < t->num_threads; i++) {
		struct hd_thread *th = &t->threads[i];
		if (!th->has_regs || th->regs.fs_base)
			continue;
		uint64_t budget = SCAN_LIMIT, fs = 0;
		// The thread's own stack mapping, then small anonymous
		// mappings (the main thread's descriptor), then the rest.
		const struct hd_mapping *sm = hd_target_find_mapping(t, th->regs.rsp);
		if (sm && candidate(sm) && sm->end - sm->start <= budget) {
			budget -= sm->end - sm->start;
			if (scan_mapping(t, sm, th->tid, &fs)) {
				th->regs.fs_base = fs;
				continue;
			}
		}
		for (int pass = 0; pass < 2 && !fs; pass++) {
			for (size_t k = 0; k < t->num_mappings && !fs; k++) {
				const struct hd_mapping *m = &t->mappings[k];
				uint64_t size = m->end - m->start;
				bool small = !m->path && size <= (1 << 20);
				if (m == sm || !candidate(m) || small != (pass == 0) ||
				    size > budget)
					continue;
				budget -= size;
				scan_mapping(t, m, th->tid, &fs);
			}
		}
		th->regs.fs_base = fs;
	}
}
