// Frames and locals for targets that have none of their own (the CLI on a
// core or on a ptrace-attached process): each thread is unwound from its
// registers with the modules' CFI, its frames named and its locals found
// the way the gdb front-end does it (gdb-plugin/heapdom.py,
// _describe_threads and _locals), so that one core gives the same roots
// in the CLI, gdb and lldb. A debugger's front-end adds its own frames.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>

#include "debuginfo/debuginfo_internal.h"
#include "debuginfo/dwarf_open.h"
#include "debuginfo/lines.h"
#include "debuginfo/frames_internal.h"
#include "debuginfo/scopes.h"
#include "target/target_internal.h"

// As the gdb front-end: frames per thread (levels, inlined ones included)
// and locals in all.
#define MAX_FRAMES 4096
#define MAX_LOCALS 20000
#define RULE_COLUMNS 128

Dwarf_Debug hd_mod_dwarf_info(struct hd_mod_dwarf *md)
{
	return md->debug_dbg ? md->debug_dbg : md->file_dbg;
}

static void setup_frame_rules(Dwarf_Debug dbg)
{
	dwarf_set_frame_rule_table_size(dbg, RULE_COLUMNS);
	dwarf_set_frame_rule_initial_value(dbg, DW_FRAME_SAME_VAL);
	dwarf_set_frame_same_value(dbg, DW_FRAME_SAME_VAL);
	dwarf_set_frame_undefined_value(dbg, DW_FRAME_UNDEFINED_VAL);
	dwarf_set_frame_cfa_value(dbg, DW_FRAME_CFA_COL3);
}

void hd_mod_dwarf_open(struct hd_mod_dwarf *md, const struct hd_module *m,
		       const char *file, const char *debug)
{
	memset(md, 0, sizeof(*md));
	md->opened = true;
	md->m = m;
	md->file_fd = md->debug_fd = -1;
	struct hd_error *err;
	if (file && (err = hd_dwarf_open(file, &md->file_fd, &md->file_dbg))) {
		hd_error_destroy(err);
		md->file_dbg = NULL;
		md->file_fd = -1;
	}
	if (debug && (err = hd_dwarf_open(debug, &md->debug_fd, &md->debug_dbg))) {
		hd_error_destroy(err);
		md->debug_dbg = NULL;
		md->debug_fd = -1;
	}
	if (md->file_dbg)
		setup_frame_rules(md->file_dbg);
	if (md->debug_dbg)
		setup_frame_rules(md->debug_dbg);
	md->info_path = md->debug_dbg ? debug : file;
}

void hd_mod_dwarf_close(struct hd_mod_dwarf *md)
{
	if (!md->opened)
		return;
	hd_cfi_release(md);
	if (md->aranges) {
		Dwarf_Debug dbg = hd_mod_dwarf_info(md);
		for (Dwarf_Signed k = 0; k < md->num_aranges; k++)
			dwarf_dealloc(dbg, md->aranges[k], DW_DLA_ARANGE);
		dwarf_dealloc(dbg, md->aranges, DW_DLA_LIST);
	}
	if (md->file_dbg)
		hd_dwarf_close(md->file_fd, md->file_dbg);
	if (md->debug_dbg)
		hd_dwarf_close(md->debug_fd, md->debug_dbg);
	md->opened = false;
}

struct pass {
	struct hd_debuginfo *di;
	struct hd_target *t;
	struct hd_mod_dwarf *mods;
	size_t num_mods;
	struct hd_frame *locals, *frames;
	size_t num_locals, cap_locals, num_frames, cap_frames;
	// The function holding AT_ENTRY (_start): its module and start.
	const struct hd_module *entry_mod;
	uint64_t entry_fn;
	// gdb's initial language: main's unit's (C++ 1, else 0).
	int main_cplus;
};

static struct hd_mod_dwarf *mod_dwarf(struct pass *p, const struct hd_module *m)
{
	size_t i = 0;
	while (i < p->num_mods && hd_target_module(p->t, i) != m)
		i++;
	if (i == p->num_mods)
		return NULL;
	struct hd_mod_dwarf *md = &p->mods[i];
	if (!md->opened)
		hd_mod_dwarf_open(md, m, m->file, hd_debuginfo_debug_file(p->di, m));
	return md;
}

static void close_mods(struct pass *p)
{
	for (size_t i = 0; i < p->num_mods; i++)
		hd_mod_dwarf_close(&p->mods[i]);
	free(p->mods);
}

static bool read_word(void *arg, uint64_t addr, uint64_t *ret)
{
	struct hd_error *err = hd_target_read_u64(arg, addr, ret);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

static struct hd_error *push(struct hd_frame **v, size_t *n, size_t *cap,
			     const struct hd_frame *f)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		struct hd_frame *q = realloc(*v, nc * sizeof(**v));
		if (!q)
			return &hd_error_no_memory;
		*v = q;
		*cap = nc;
	}
	struct hd_frame *d = &(*v)[(*n)++];
	*d = *f;
	return NULL;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

// "#LEVEL func (file.c:LINE)" or "#LEVEL func", as gdb's _frame_name.
static struct hd_error *add_frame(struct pass *p, int tid, unsigned level,
				  uint64_t sp, uint64_t caller_sp,
				  const char *fn, const char *file,
				  unsigned line)
{
	char *name;
	int r = file && line ? asprintf(&name, "#%u %s (%s:%u)", level,
					fn ? fn : "??", base_of(file), line)
			     : asprintf(&name, "#%u %s", level, fn ? fn : "??");
	if (r < 0)
		return &hd_error_no_memory;
	struct hd_frame f = {.tid = tid, .level = level, .sp = sp,
			     .caller_sp = caller_sp, .name = name};
	struct hd_error *err = push(&p->frames, &p->num_frames, &p->cap_frames, &f);
	if (err)
		free(name);
	return err;
}

// gdb's _locals: the variables of the frame's blocks whose bytes lie in
// [sp, caller_sp); register-resident ones have no bytes and are left out.
static struct hd_error *add_locals(struct pass *p, int tid, unsigned level,
				   const struct hd_scopes *s,
				   const struct hd_unwind_regs *regs,
				   uint64_t cfa, uint64_t sp,
				   uint64_t caller_sp)
{
	struct hd_expr_ctx ctx = {.regs = regs, .cfa = cfa, .has_cfa = true,
				  .read = read_word, .arg = p->t};
	if (s->has_frame_base) {
		const struct hd_dwarf_op *fb = s->frame_base;
		bool is_value;
		if (s->num_frame_base == 1 && fb[0].atom >= DW_OP_reg0 &&
		    fb[0].atom <= DW_OP_reg16) {
			// A register frame base is the register's value.
			unsigned r = fb[0].atom - DW_OP_reg0;
			ctx.has_frame_base = regs->valid & (1u << r);
			ctx.frame_base = regs->r[r];
		} else {
			ctx.has_frame_base = hd_dwarf_expr_eval(
				fb, s->num_frame_base, &ctx, &ctx.frame_base,
				&is_value);
		}
	}
	for (size_t i = 0; i < s->num_vars && p->num_locals < MAX_LOCALS; i++) {
		const struct hd_scope_var *v = &s->vars[i];
		uint64_t addr;
		bool is_value;
		if (!v->has_loc || !v->size ||
		    !hd_dwarf_expr_eval(v->ops, v->num_ops, &ctx, &addr, &is_value) ||
		    is_value)
			continue;
		if (addr < sp || addr + v->size > caller_sp || addr + v->size < addr)
			continue;
		char *name;
		if (asprintf(&name, "%s", v->name) < 0)
			return &hd_error_no_memory;
		char *type = v->type_name ? strdup(v->type_name) : NULL;
		// A diagnostic for tests and bug reports: the locals found,
		// with their types, one "local NAME\tTYPE" line each.
		if (getenv("HEAPDOM_DEBUG_LOCALS"))
			fprintf(stderr, "local %s\t%s\n", name, type ? type : "?");
		struct hd_frame f = {.tid = tid, .level = level, .sp = addr,
				     .caller_sp = addr + v->size, .name = name,
				     .local = true, .type_name = type};
		struct hd_error *err =
			push(&p->locals, &p->num_locals, &p->cap_locals, &f);
		if (err) {
			free(name);
			free(type);
			return err;
		}
	}
	return NULL;
}

static void regs_from_thread(const struct hd_regs *r, struct hd_unwind_regs *u)
{
	const uint64_t v[HD_DW_NREGS] = {
		r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
		r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
		r->rip};
	memcpy(u->r, v, sizeof(v));
	u->valid = (1u << HD_DW_NREGS) - 1;
}

// Why a thread's unwinding stopped early, one warning per thread.
static void stopped(struct pass *p, int tid, unsigned level, uint64_t pc,
		    const char *why)
{
	char *msg;
	if (asprintf(&msg, "thread %d: backtrace stopped at frame #%u (pc 0x%" PRIx64
		     "): %s; the stack above it stays in the root \"thread %d stack\"",
		     tid, level, pc, why, tid) >= 0)
		hd_target_note(p->t, msg);
}

static struct hd_error *unwind_thread(struct pass *p, const struct hd_thread *th)
{
	struct hd_unwind_regs regs;
	regs_from_thread(&th->regs, &regs);
	unsigned level = 0;
	bool signal_next = false; // this frame was interrupted by a signal
	// The language gdb prints the thread's types in: its innermost
	// frame's, else the initial one (main's).
	int print_cplus = -1;
	for (unsigned k = 0; level < MAX_FRAMES; k++) {
		uint64_t pc = regs.r[HD_DW_RA], sp = regs.r[HD_DW_RSP];
		// A return address points after the call: look up the call.
		uint64_t lookup = k == 0 || signal_next ? pc : pc - 1;
		const struct hd_module *m = hd_target_find_module(p->t, lookup);
		if (!m) {
			if (k > 0 && pc != 0)
				stopped(p, th->tid, level, pc, "the pc is in no module");
			return NULL;
		}
		struct hd_mod_dwarf *md = mod_dwarf(p, m);
		uint64_t link = lookup - m->bias;
		// gdb does not go past the program's entry function (_start).
		if (m == p->entry_mod) {
			const char *fn;
			uint64_t start;
			struct hd_error *err =
				hd_debuginfo_function_at(p->di, lookup, &fn, &start);
			if (err)
				return err;
			if (fn && start == p->entry_fn)
				return NULL;
		}
		struct hd_unwind_regs caller;
		uint64_t cfa = 0;
		bool sig = false;
		struct hd_error *corrupt = NULL;
		enum hd_unwind_status st =
			md ? hd_cfi_step(md, link, &regs, read_word, p->t, &caller,
					 &cfa, &sig, &corrupt)
			   : HD_UNWIND_NO_CFI;
		if (st == HD_UNWIND_OUTERMOST)
			return NULL;
		if (st == HD_UNWIND_CORRUPT) {
			stopped(p, th->tid, level, pc, corrupt->message);
			hd_error_destroy(corrupt);
			return NULL;
		}
		// A module whose file is not used (not found, another
		// build) has its own warning, which says frames stop there.
		if (st == HD_UNWIND_NO_CFI && !m->file)
			return NULL;
		if (st != HD_UNWIND_OK) {
			stopped(p, th->tid, level, pc,
				st == HD_UNWIND_NO_CFI
					? "no call frame information (.eh_frame or .debug_frame) covers it"
					: "its call frame information needs a register or memory the target does not have");
			return NULL;
		}
		uint64_t caller_sp = caller.r[HD_DW_RSP];
		if (!(caller.valid & (1u << HD_DW_RSP)) || caller_sp <= sp) {
			stopped(p, th->tid, level, pc,
				"the unwound stack pointer does not increase (a corrupt stack?)");
			return NULL;
		}
		struct hd_scopes s;
		// A signal trampoline (its CIE says "S") is named at its pc,
		// as gdb names a SIGTRAMP_FRAME; its FDE starts a byte early
		// so that pc - 1 found it.
		if (sig && lookup != pc) {
			lookup = pc;
			link = pc - m->bias;
		}
		struct hd_error *err = hd_scopes_find(md, link, print_cplus, &s);
		if (!err && k == 0 && s.cplus != -1 && print_cplus == -1) {
			print_cplus = s.cplus;
		} else if (!err && k == 0) {
			// Frame 0 has no unit: types in main's language.
			print_cplus = p->main_cplus;
			hd_scopes_free(&s);
			err = hd_scopes_find(md, link, print_cplus, &s);
		}
		if (err && err->code == HD_ERROR_FORMAT) {
			// Corrupt DWARF at this frame: its functions and
			// locals are unknown, and so is the rest.
			stopped(p, th->tid, level, pc, err->message);
			hd_error_destroy(err);
			return NULL;
		}
		if (err)
			return err;
		if (s.num_fns) {
			// Inlined frames first: they share the stack pointer,
			// so they own no bytes; the out-of-line function's
			// frame owns [sp, caller_sp).
			for (size_t i = 0; i < s.num_fns && !err && level < MAX_FRAMES; i++) {
				const char *file = i ? s.fns[i - 1].call_file : s.file;
				unsigned line = i ? s.fns[i - 1].call_line : s.line;
				if (i + 1 < s.num_fns) {
					level++;
					continue;
				}
				err = add_locals(p, th->tid, level, &s, &regs, cfa, sp,
						 caller_sp);
				if (!err)
					err = add_frame(p, th->tid, level, sp, caller_sp,
							s.fns[i].name, file, line);
				level++;
			}
		} else {
			// No DWARF function (assembly, or no debug info): the
			// ELF symbol, and the line table's row if any.
			const char *fn;
			uint64_t start;
			err = hd_debuginfo_function_at(p->di, lookup, &fn, &start);
			if (!err)
				err = add_frame(p, th->tid, level++, sp, caller_sp, fn,
						s.file, s.line);
		}
		hd_scopes_free(&s);
		if (err)
			return err;
		if (caller.r[HD_DW_RA] == 0)
			return NULL; // gdb stops at a zero pc
		regs = caller;
		signal_next = sig;
	}
	return NULL;
}

struct hd_error *hd_debuginfo_add_frames(struct hd_debuginfo *di)
{
	struct pass p = {.di = di, .t = hd_debuginfo_target(di)};
	p.num_mods = hd_target_num_modules(p.t);
	p.mods = calloc(p.num_mods ? p.num_mods : 1, sizeof(*p.mods));
	if (!p.mods)
		return &hd_error_no_memory;
	uint64_t entry;
	struct hd_error *err = NULL;
	if (hd_target_auxv(p.t, 9 /* AT_ENTRY */, &entry)) {
		const char *fn;
		err = hd_debuginfo_function_at(di, entry, &fn, &p.entry_fn);
		if (!err && fn)
			p.entry_mod = hd_target_find_module(p.t, entry);
	}
	uint64_t main_addr, main_size;
	// main of the executable (the module of AT_ENTRY).
	const char *exe = p.entry_mod && p.entry_mod->name ? base_of(p.entry_mod->name)
							   : NULL;
	struct hd_error *merr = hd_debuginfo_find_symbol(di, exe, "main", &main_addr,
						       &main_size);
	const struct hd_module *mm = merr ? NULL : hd_target_find_module(p.t, main_addr);
	hd_error_destroy(merr);
	struct hd_mod_dwarf *mmd = mm ? mod_dwarf(&p, mm) : NULL;
	if (mmd && !err) {
		struct hd_scopes ms;
		err = hd_scopes_find(mmd, main_addr - mm->bias, 0, &ms);
		if (!err) {
			p.main_cplus = ms.cplus == 1;
			hd_scopes_free(&ms);
		} else if (err->code == HD_ERROR_FORMAT) {
			// Corrupt DWARF around main: C, and a thread whose
			// frames meet it says so.
			hd_error_destroy(err);
			err = NULL;
		}
	}
	for (size_t i = 0; i < hd_target_num_threads(p.t) && !err; i++) {
		const struct hd_thread *th = hd_target_thread(p.t, i);
		if (th->has_regs)
			err = unwind_thread(&p, th);
	}
	close_mods(&p);
	// Locals first: they take their bytes before the frame around them.
	for (size_t i = 0; i < p.num_locals && !err; i++)
		err = hd_target_add_frame(p.t, &p.locals[i]);
	for (size_t i = 0; i < p.num_frames && !err; i++)
		err = hd_target_add_frame(p.t, &p.frames[i]);
	for (size_t i = 0; i < p.num_locals; i++) {
		free(p.locals[i].name);
		free(p.locals[i].type_name);
	}
	for (size_t i = 0; i < p.num_frames; i++)
		free(p.frames[i].name);
	free(p.locals);
	free(p.frames);
	return err;
}
