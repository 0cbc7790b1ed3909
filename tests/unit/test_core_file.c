// Unit tests of the ELF core reader (core/target/core_file.c). Each test
// writes a synthetic core with <elf.h> structures into a temporary
// directory and opens it with hd_target_open_core.
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapdom.h"
#include "util/elf_read.h"
#include "check_util.h"

// Checks err's code and that its message contains needle (if not NULL),
// then releases it.
#define ck_assert_error_msg(err, want, needle)                                \
	do {                                                                  \
		struct hd_error *_e = (err);                                  \
		const char *_n = (needle);                                    \
		ck_assert_msg(_e, "expected an error, got success");          \
		ck_assert_msg(_e->code == (want), "error code %d, want %d: %s", \
			      _e->code, (want), _e->message);                 \
		ck_assert_ptr_nonnull(_e->message);                           \
		ck_assert_msg(!_n || strstr(_e->message, _n),                 \
			      "message \"%s\" lacks \"%s\"", _e->message, _n); \
		hd_error_destroy(_e);                                         \
	} while (0)

// Checks an HD_ERROR_FAULT naming address addr.
#define ck_assert_fault_at(err, addr, needle)                                 \
	do {                                                                  \
		struct hd_error *_f = (err);                                  \
		ck_assert_msg(_f, "expected a fault at 0x%" PRIx64,           \
			      (uint64_t)(addr));                              \
		ck_assert_msg(_f->has_address && _f->address == (addr),       \
			      "fault at 0x%" PRIx64 ", want 0x%" PRIx64 ": %s", \
			      _f->address, (uint64_t)(addr), _f->message);    \
		ck_assert_error_msg(_f, HD_ERROR_FAULT, needle);              \
	} while (0)

// Short enough that paths built from it never truncate.
static char tmpdir[256];

// A path in the temporary directory (static buffers, rotated).
static const char *tmp_path(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];
	snprintf(b, PATH_MAX, "%s/%s", tmpdir, name);
	return b;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f, "%s: %s", path, strerror(errno));
	if (len)
		ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

// ------------------------------------------------------------ builder

struct blob {
	uint8_t *data;
	size_t len, cap;
};

static void blob_put(struct blob *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->data = realloc(b->data, cap);
		ck_assert_ptr_nonnull(b->data);
		b->cap = cap;
	}
	if (p)
		memcpy(b->data + b->len, p, n);
	else
		memset(b->data + b->len, 0, n);
	b->len += n;
}

static void blob_align(struct blob *b, size_t a)
{
	if (b->len % a)
		blob_put(b, NULL, a - b->len % a);
}

static void blob_free(struct blob *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static void note_add(struct blob *notes, uint32_t type, const char *name,
		     const void *desc, size_t len)
{
	Elf64_Nhdr nh = {
		.n_namesz = (Elf64_Word)strlen(name) + 1,
		.n_descsz = (Elf64_Word)len,
		.n_type = type,
	};
	blob_put(notes, &nh, sizeof(nh));
	blob_put(notes, name, nh.n_namesz);
	blob_align(notes, 4);
	blob_put(notes, desc, len);
	blob_align(notes, 4);
}

// struct elf_prstatus on x86-64: 336 bytes, pr_pid at 32, pr_reg at 112.
#define PRSTATUS_SIZE 336
#define PRSTATUS_PID 32
#define PRSTATUS_REG 112

static uint64_t reg_value(int tid, int i)
{
	return 0x1000000ULL * (uint64_t)tid + 0x100 * (uint64_t)i + 7;
}

static void note_prstatus(struct blob *notes, int tid)
{
	uint8_t d[PRSTATUS_SIZE];
	memset(d, 0xee, sizeof(d));
	int32_t pid = tid;
	memcpy(d + PRSTATUS_PID, &pid, 4);
	for (int i = 0; i < 27; i++) {
		uint64_t v = reg_value(tid, i);
		memcpy(d + PRSTATUS_REG + 8 * i, &v, 8);
	}
	note_add(notes, NT_PRSTATUS, "CORE", d, sizeof(d));
}

static void note_auxv(struct blob *notes, const uint64_t *pairs, size_t n)
{
	note_add(notes, NT_AUXV, "CORE", pairs, n * 16);
}

struct file_entry {
	uint64_t start, end, pgoff;
	const char *name;
};

static void note_file(struct blob *notes, const struct file_entry *e,
		      size_t n)
{
	struct blob d = {0};
	uint64_t count = n, page = 4096;
	blob_put(&d, &count, 8);
	blob_put(&d, &page, 8);
	for (size_t i = 0; i < n; i++) {
		uint64_t v[3] = {e[i].start, e[i].end, e[i].pgoff};
		blob_put(&d, v, sizeof(v));
	}
	for (size_t i = 0; i < n; i++)
		blob_put(&d, e[i].name, strlen(e[i].name) + 1);
	note_add(notes, NT_FILE, "CORE", d.data, d.len);
	blob_free(&d);
}

struct seg {
	uint64_t vaddr, memsz, filesz;
	uint32_t flags; // PF_*
	const uint8_t *data; // filesz bytes, or NULL for the pattern
};

// Bytes of memory that a core holds: a function of the address, so that
// any misplaced offset shows.
static uint8_t mem_pattern(uint64_t a)
{
	return (uint8_t)(((a * 2654435761ULL) >> 13) ^ (a >> 3));
}

// Bytes of the backing file at file offset o.
static uint8_t file_pattern(uint64_t o)
{
	return (uint8_t)(((o * 40503ULL) >> 7) ^ 0xc3 ^ (o >> 11));
}

struct core_layout {
	size_t phoff;
	size_t notes_off, notes_len;
	size_t seg_off[16];
};

// Builds a core: ELF header, program headers (PT_NOTE first, then the
// PT_LOADs in the given order), the notes, then each segment's data
// page-aligned.
static void core_build(struct blob *out, uint16_t type, uint16_t machine,
		       const struct blob *notes, const struct seg *segs,
		       size_t nsegs, struct core_layout *lay)
{
	ck_assert_uint_le(nsegs, 16);
	size_t nph = (notes ? 1 : 0) + nsegs;
	size_t notes_off = sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr);
	size_t off = notes_off + (notes ? notes->len : 0);
	size_t seg_off[16];
	for (size_t i = 0; i < nsegs; i++) {
		off = (off + 4095) & ~(size_t)4095;
		seg_off[i] = off;
		off += segs[i].filesz;
	}

	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = type;
	eh.e_machine = machine;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(Elf64_Ehdr);
	eh.e_ehsize = sizeof(Elf64_Ehdr);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)nph;
	memset(out, 0, sizeof(*out));
	blob_put(out, &eh, sizeof(eh));
	if (notes) {
		Elf64_Phdr ph = {
			.p_type = PT_NOTE,
			.p_offset = notes_off,
			.p_filesz = notes->len,
			.p_align = 4,
		};
		blob_put(out, &ph, sizeof(ph));
	}
	for (size_t i = 0; i < nsegs; i++) {
		Elf64_Phdr ph = {
			.p_type = PT_LOAD,
			.p_flags = segs[i].flags,
			.p_offset = seg_off[i],
			.p_vaddr = segs[i].vaddr,
			.p_filesz = segs[i].filesz,
			.p_memsz = segs[i].memsz,
			.p_align = 4096,
		};
		blob_put(out, &ph, sizeof(ph));
	}
	if (notes)
		blob_put(out, notes->data, notes->len);
	for (size_t i = 0; i < nsegs; i++) {
		blob_put(out, NULL, seg_off[i] - out->len);
		if (segs[i].data) {
			blob_put(out, segs[i].data, segs[i].filesz);
		} else {
			for (uint64_t k = 0; k < segs[i].filesz; k++) {
				uint8_t v = mem_pattern(segs[i].vaddr + k);
				blob_put(out, &v, 1);
			}
		}
	}
	if (lay) {
		lay->phoff = sizeof(Elf64_Ehdr);
		lay->notes_off = notes_off;
		lay->notes_len = notes ? notes->len : 0;
		memcpy(lay->seg_off, seg_off, nsegs * sizeof(size_t));
	}
}

// ------------------------------------------------------------ the core

// The address space of the main test core:
//   A  [0x400000, 0x402000) rw-  anonymous, fully in the core
//   F  [0x402000, 0x404000) r--  backing file at pgoff 2, p_filesz 0
//   (gap)
//   P  [0x500000, 0x503000) rw-  first 0x1000 bytes in the core only
//   B  [0x503000, 0x504000) r-x  anonymous, fully in the core
//   G  [0x600000, 0x601000) r--  backing file at pgoff 100 (past its end)
//   M  [0x700000, 0x701000) r--  backing file that does not exist
//   Z  [0x800000, 0x801000) rw-  anonymous, nothing in the core
//   H  [0x900000, 0x903000) r-x  backing file at pgoff 1, first page in
//                                the core (as the kernel keeps ELF headers)
//   K  [0xa00000, 0xa02000) r--  backing file at pgoff 4: its second page
//                                lies past the end of the file
//   N  [0xb00000, 0xb02000)      backing file at pgoff 0, no segment in the
//                                core at all (gcore leaves read-only file
//                                mappings out): read from the file
//   Q  [0xc00000, 0xc03000)      backing file at pgoff 1 with a segment for
//                                its middle page only: the pages around it
//                                come from the file
#define A_START 0x400000ULL
#define A_END 0x402000ULL
#define F_START 0x402000ULL
#define F_END 0x404000ULL
#define F_PGOFF 2
#define P_START 0x500000ULL
#define P_PRESENT 0x1000ULL
#define P_END 0x503000ULL
#define B_START 0x503000ULL
#define B_END 0x504000ULL
#define G_START 0x600000ULL
#define G_END 0x601000ULL
#define M_START 0x700000ULL
#define M_END 0x701000ULL
#define Z_START 0x800000ULL
#define Z_END 0x801000ULL
#define H_START 0x900000ULL
#define H_PRESENT 0x1000ULL
#define H_END 0x903000ULL
#define H_PGOFF 1
#define K_START 0xa00000ULL
#define K_END 0xa02000ULL
#define K_PGOFF 4
#define N_START 0xb00000ULL
#define N_END 0xb02000ULL
#define Q_START 0xc00000ULL
#define Q_MID 0xc01000ULL
#define Q_MID_END 0xc02000ULL
#define Q_END 0xc03000ULL
#define Q_PGOFF 1
#define BACKING_SIZE (5 * 4096)
#define MISSING_FILE "/nonexistent-heapdom-test-dir/libmissing.so"

static const char *backing_path(void)
{
	static char path[PATH_MAX];
	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/backing.bin", tmpdir);
		uint8_t *d = malloc(BACKING_SIZE);
		ck_assert_ptr_nonnull(d);
		for (size_t i = 0; i < BACKING_SIZE; i++)
			d[i] = file_pattern(i);
		write_file(path, d, BACKING_SIZE);
		free(d);
	}
	return path;
}

static const uint64_t main_auxv[] = {
	AT_PAGESZ, 4096,     AT_ENTRY, 0x401000, AT_PHDR, 0x400040,
	AT_PHNUM,  9,        AT_RANDOM, 0x7ffffffde000, AT_NULL, 0,
};

static const int main_tids[] = {4242, 4250};

static void main_notes(struct blob *notes)
{
	memset(notes, 0, sizeof(*notes));
	note_prstatus(notes, main_tids[0]);
	// Notes heapdom does not read, one with an odd name length.
	uint8_t fp[512] = {1, 2, 3};
	note_add(notes, NT_FPREGSET, "CORE", fp, sizeof(fp));
	note_add(notes, NT_X86_XSTATE, "LINUX", fp, 100);
	note_prstatus(notes, main_tids[1]);
	note_auxv(notes, main_auxv, sizeof(main_auxv) / 16);
	const char *bp = backing_path();
	struct file_entry files[] = {
		{F_START, F_END, F_PGOFF, bp},
		{G_START, G_END, 100, bp},
		{M_START, M_END, 0, MISSING_FILE},
		{H_START, H_END, H_PGOFF, bp},
		{K_START, K_END, K_PGOFF, bp},
		{N_START, N_END, 0, bp},
		{Q_START, Q_END, Q_PGOFF, bp},
	};
	note_file(notes, files, 7);
}

// Program headers deliberately not in address order.
static const struct seg main_segs[] = {
	{P_START, P_END - P_START, P_PRESENT, PF_R | PF_W, NULL},
	{A_START, A_END - A_START, A_END - A_START, PF_R | PF_W, NULL},
	{F_START, F_END - F_START, 0, PF_R, NULL},
	{B_START, B_END - B_START, B_END - B_START, PF_R | PF_X, NULL},
	{G_START, G_END - G_START, 0, PF_R, NULL},
	{M_START, M_END - M_START, 0, PF_R, NULL},
	{Z_START, Z_END - Z_START, 0, PF_R | PF_W, NULL},
	{K_START, K_END - K_START, 0, PF_R, NULL},
	{H_START, H_END - H_START, H_PRESENT, PF_R | PF_X, NULL},
	{Q_MID, Q_MID_END - Q_MID, 0, PF_R, NULL},
};
#define NMAIN (sizeof(main_segs) / sizeof(main_segs[0]))

// Builds the main core into a blob.
static void main_core(struct blob *out, struct core_layout *lay)
{
	struct blob notes;
	main_notes(&notes);
	core_build(out, ET_CORE, EM_X86_64, &notes, main_segs, NMAIN, lay);
	blob_free(&notes);
}

static const char *write_main_core(const char *name)
{
	struct blob core;
	main_core(&core, NULL);
	const char *path = tmp_path(name);
	write_file(path, core.data, core.len);
	blob_free(&core);
	return path;
}

static struct hd_target *open_ok(const char *path,
				 const struct hd_target_options *opts)
{
	struct hd_target *t = NULL;
	ck_assert_no_error(hd_target_open_core(path, opts, &t));
	ck_assert_ptr_nonnull(t);
	return t;
}

// Checks that [addr, addr+len) reads as the core's memory pattern.
static void check_mem(struct hd_target *t, uint64_t addr, size_t len)
{
	uint8_t *buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x11, len);
	ck_assert_no_error(hd_target_read(t, addr, buf, len));
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(buf[i] == mem_pattern(addr + i),
			      "byte at 0x%" PRIx64 " is 0x%02x, want 0x%02x",
			      addr + i, buf[i], mem_pattern(addr + i));
	free(buf);
}

// Expected byte of F at address a.
static uint8_t f_byte(uint64_t a)
{
	return file_pattern(F_PGOFF * 4096 + (a - F_START));
}

START_TEST(test_basics)
{
	const char *path = write_main_core("basics.core");
	struct hd_target *t = open_ok(path, NULL);
	ck_assert_str_eq(hd_target_kind(t), "core");
	ck_assert_str_eq(hd_target_name(t), path);

	// Threads in note order, registers in user_regs_struct order.
	ck_assert_uint_eq(hd_target_num_threads(t), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct hd_thread *th = hd_target_thread(t, i);
		ck_assert_ptr_nonnull(th);
		int tid = main_tids[i];
		ck_assert_int_eq(th->tid, tid);
		ck_assert(th->has_regs);
		ck_assert_uint_eq(th->regs.r15, reg_value(tid, 0));
		ck_assert_uint_eq(th->regs.rax, reg_value(tid, 10));
		ck_assert_uint_eq(th->regs.rip, reg_value(tid, 16));
		ck_assert_uint_eq(th->regs.rsp, reg_value(tid, 19));
		ck_assert_uint_eq(th->regs.fs_base, reg_value(tid, 21));
		ck_assert_uint_eq(th->regs.gs, reg_value(tid, 26));
		uint64_t r[27];
		memcpy(r, &th->regs, sizeof(r));
		for (int k = 0; k < 27; k++)
			ck_assert_uint_eq(r[k], reg_value(tid, k));
	}
	ck_assert_ptr_null(hd_target_thread(t, 2));

	// Auxiliary vector.
	uint64_t v = 0;
	ck_assert(hd_target_auxv(t, AT_PAGESZ, &v));
	ck_assert_uint_eq(v, 4096);
	ck_assert(hd_target_auxv(t, AT_ENTRY, &v));
	ck_assert_uint_eq(v, 0x401000);
	ck_assert(hd_target_auxv(t, AT_RANDOM, &v));
	ck_assert_uint_eq(v, 0x7ffffffde000);
	ck_assert(!hd_target_auxv(t, AT_BASE, &v));
	ck_assert(!hd_target_auxv(t, AT_SYSINFO_EHDR, &v));

	// The backing file is not an ELF file: no module.
	ck_assert_uint_eq(hd_target_num_modules(t), 0);
	ck_assert_ptr_null(hd_target_find_module(t, F_START));
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_mappings)
{
	const char *path = write_main_core("mappings.core");
	struct hd_target *t = open_ok(path, NULL);
	struct {
		uint64_t start, end;
		uint32_t prot;
		const char *path; // "" for the backing file
		bool readable;
	} want[] = {
		{A_START, A_END, HD_PROT_READ | HD_PROT_WRITE, NULL, true},
		{F_START, F_END, HD_PROT_READ, "", true},
		{P_START, P_END, HD_PROT_READ | HD_PROT_WRITE, NULL, false},
		{B_START, B_END, HD_PROT_READ | HD_PROT_EXEC, NULL, true},
		{G_START, G_END, HD_PROT_READ, "", true},
		// Left out of the core, and its file is not here: unreadable.
		{M_START, M_END, HD_PROT_READ, MISSING_FILE, false},
		{Z_START, Z_END, HD_PROT_READ | HD_PROT_WRITE, NULL, false},
		{H_START, H_END, HD_PROT_READ | HD_PROT_EXEC, "", true},
		{K_START, K_END, HD_PROT_READ, "", true},
		{N_START, N_END, HD_PROT_READ, "", true},
		{Q_START, Q_MID, HD_PROT_READ, "", true},
		{Q_MID, Q_MID_END, HD_PROT_READ, "", true},
		{Q_MID_END, Q_END, HD_PROT_READ, "", true},
	};
	size_t n = sizeof(want) / sizeof(want[0]);
	ck_assert_uint_eq(hd_target_num_mappings(t), n);
	for (size_t i = 0; i < n; i++) {
		const struct hd_mapping *m = hd_target_mapping(t, i);
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_eq(m->start, want[i].start);
		ck_assert_uint_eq(m->end, want[i].end);
		ck_assert_uint_eq(m->prot, want[i].prot);
		ck_assert_msg(m->readable == want[i].readable,
			      "mapping %zu readable %d", i, m->readable);
		if (!want[i].path) {
			ck_assert_ptr_null(m->path);
		} else {
			ck_assert_ptr_nonnull(m->path);
			ck_assert_str_eq(m->path, want[i].path[0]
							  ? want[i].path
							  : backing_path());
		}
		if (i > 0)
			ck_assert_uint_le(hd_target_mapping(t, i - 1)->end,
					  m->start);
		ck_assert_ptr_eq(hd_target_find_mapping(t, m->start), m);
		ck_assert_ptr_eq(hd_target_find_mapping(t, m->end - 1), m);
	}
	ck_assert_uint_eq(hd_target_mapping(t, 1)->file_offset,
			  F_PGOFF * 4096);
	ck_assert_uint_eq(hd_target_mapping(t, 4)->file_offset, 100 * 4096);
	ck_assert_uint_eq(hd_target_mapping(t, 7)->file_offset,
			  H_PGOFF * 4096);
	ck_assert_uint_eq(hd_target_mapping(t, 8)->file_offset,
			  K_PGOFF * 4096);
	ck_assert_uint_eq(hd_target_mapping(t, 9)->file_offset, 0);
	ck_assert_uint_eq(hd_target_mapping(t, 10)->file_offset, Q_PGOFF * 4096);
	ck_assert_uint_eq(hd_target_mapping(t, 11)->file_offset,
			  Q_PGOFF * 4096 + 0x1000);
	ck_assert_uint_eq(hd_target_mapping(t, 12)->file_offset,
			  Q_PGOFF * 4096 + 0x2000);
	ck_assert_ptr_null(hd_target_mapping(t, n));
	ck_assert_ptr_null(hd_target_find_mapping(t, A_START - 1));
	ck_assert_ptr_null(hd_target_find_mapping(t, F_END));
	ck_assert_ptr_null(hd_target_find_mapping(t, Z_END));
	ck_assert_ptr_null(hd_target_find_mapping(t, 0));
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_read_present)
{
	const char *path = write_main_core("present.core");
	struct hd_target *t = open_ok(path, NULL);
	check_mem(t, A_START, A_END - A_START);
	check_mem(t, A_START + 0x123, 1);
	check_mem(t, A_END - 1, 1);
	check_mem(t, B_START, B_END - B_START);
	// The present part of P.
	check_mem(t, P_START, P_PRESENT);
	check_mem(t, P_START + P_PRESENT - 8, 8);
	uint64_t w = 0;
	ck_assert_no_error(hd_target_read_u64(t, A_START + 0x100, &w));
	uint64_t want = 0;
	for (int i = 7; i >= 0; i--)
		want = want << 8 | mem_pattern(A_START + 0x100 + i);
	ck_assert_uint_eq(w, want);
	// Zero-length reads succeed anywhere.
	ck_assert_no_error(hd_target_read(t, 0x10, &w, 0));
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_read_backing_file)
{
	const char *path = write_main_core("backing.core");
	struct hd_target *t = open_ok(path, NULL);
	uint8_t buf[F_END - F_START];
	memset(buf, 0, sizeof(buf));
	ck_assert_no_error(hd_target_read(t, F_START, buf, sizeof(buf)));
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_msg(buf[i] == f_byte(F_START + i),
			      "F+0x%zx is 0x%02x, want 0x%02x", i, buf[i],
			      f_byte(F_START + i));
	uint8_t b = 0;
	ck_assert_no_error(hd_target_read(t, F_START + 0x1777, &b, 1));
	ck_assert_uint_eq(b, f_byte(F_START + 0x1777));

	// A read spanning A (core data) and F (backing file).
	uint8_t span[64];
	ck_assert_no_error(hd_target_read(t, A_END - 32, span, sizeof(span)));
	for (size_t i = 0; i < 32; i++)
		ck_assert_uint_eq(span[i], mem_pattern(A_END - 32 + i));
	for (size_t i = 32; i < 64; i++)
		ck_assert_uint_eq(span[i], f_byte(F_START + i - 32));

	// G lies past the end of the backing file; M's file is missing.
	ck_assert_fault_at(hd_target_read(t, G_START, buf, 16), G_START,
			   "past the end");
	ck_assert_fault_at(hd_target_read(t, M_START + 8, buf, 16),
			   M_START + 8, MISSING_FILE);
	// The fd failure is remembered: a second read fails the same way.
	ck_assert_fault_at(hd_target_read(t, M_START, buf, 16), M_START,
			   "cannot be opened");

	// H: the first page from the core, the rest from the file.
	memset(buf, 0, sizeof(buf));
	ck_assert_no_error(hd_target_read(t, H_START + H_PRESENT - 0x800, buf,
					  0x1000));
	for (size_t i = 0; i < 0x800; i++)
		ck_assert_uint_eq(buf[i],
				  mem_pattern(H_START + H_PRESENT - 0x800 + i));
	for (size_t i = 0x800; i < 0x1000; i++)
		ck_assert_uint_eq(buf[i],
				  file_pattern(H_PGOFF * 4096 + H_PRESENT +
					       i - 0x800));
	ck_assert_no_error(hd_target_read(t, H_END - 1, buf, 1));
	ck_assert_uint_eq(buf[0], file_pattern(H_PGOFF * 4096 + H_END - 1 -
					       H_START));

	// K: the first page is in the file, the second is past its end. A
	// read over both names the first missing byte.
	memset(buf, 0, sizeof(buf));
	ck_assert_no_error(hd_target_read(t, K_START, buf, 0x1000));
	for (size_t i = 0; i < 0x1000; i++)
		ck_assert_uint_eq(buf[i], file_pattern(K_PGOFF * 4096 + i));
	ck_assert_fault_at(hd_target_read(t, K_START + 0x1000, buf, 8),
			   K_START + 0x1000, "past the end");
	ck_assert_fault_at(hd_target_read(t, K_START + 0xff0, buf, 0x20),
			   K_START + 0x1000, "past the end");
	ck_assert_fault_at(hd_target_read(t, K_START, buf, 0x2000),
			   K_START + 0x1000, "past the end");

	// N and Q: file ranges the core has no segment for read from the
	// file; one read crosses Q's three parts.
	memset(buf, 0, sizeof(buf));
	ck_assert_no_error(hd_target_read(t, N_START + 0x1ff0, buf, 16));
	for (size_t i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], file_pattern(0x1ff0 + i));
	uint8_t *q = malloc(Q_END - Q_START);
	ck_assert_ptr_nonnull(q);
	ck_assert_no_error(hd_target_read(t, Q_START, q, Q_END - Q_START));
	for (size_t i = 0; i < Q_END - Q_START; i++)
		ck_assert_uint_eq(q[i], file_pattern(Q_PGOFF * 4096 + i));
	free(q);
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_read_omitted)
{
	const char *path = write_main_core("omitted.core");
	struct hd_target *t = open_ok(path, NULL);
	uint8_t buf[0x3000];
	// Entirely in the omitted part of P.
	memset(buf, 0, sizeof(buf));
	ck_assert_fault_at(hd_target_read(t, P_START + 0x1800, buf, 16),
			   P_START + 0x1800, "not dumped");
	// Starting in the present part: the fault names the first missing
	// byte, and the present bytes were not zero-filled.
	ck_assert_fault_at(hd_target_read(t, P_START + P_PRESENT - 16, buf, 64),
			   P_START + P_PRESENT, NULL);
	ck_assert_fault_at(hd_target_read(t, P_START, buf, sizeof(buf)),
			   P_START + P_PRESENT, NULL);
	// Z has nothing at all; it is not readable as zeros.
	ck_assert_fault_at(hd_target_read(t, Z_START, buf, 8), Z_START, NULL);
	uint64_t w = 0;
	ck_assert_fault_at(hd_target_read_u64(t, Z_END - 8, &w), Z_END - 8,
			   NULL);
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_read_unmapped)
{
	const char *path = write_main_core("unmapped.core");
	struct hd_target *t = open_ok(path, NULL);
	uint8_t buf[64];
	ck_assert_fault_at(hd_target_read(t, 0, buf, 8), 0, "not mapped");
	ck_assert_fault_at(hd_target_read(t, A_START - 8, buf, 8),
			   A_START - 8, "not mapped");
	// Gap between F and P.
	ck_assert_fault_at(hd_target_read(t, F_END, buf, 8), F_END,
			   "not mapped");
	ck_assert_fault_at(hd_target_read(t, 0x480000, buf, 8), 0x480000,
			   "not mapped");
	// Running off the end of F into the gap.
	ck_assert_fault_at(hd_target_read(t, F_END - 8, buf, 16), F_END,
			   "not mapped");
	// Running off the end of B (present) into the gap.
	ck_assert_fault_at(hd_target_read(t, B_END - 4, buf, 8), B_END, NULL);
	// Beyond everything, and a read that wraps.
	ck_assert_fault_at(hd_target_read(t, 0xffffffffffff0000, buf, 8),
			   0xffffffffffff0000, NULL);
	ck_assert_error_msg(hd_target_read(t, UINT64_MAX - 3, buf, 8),
			    HD_ERROR_FAULT, NULL);
	hd_target_destroy(t);
}
END_TEST

START_TEST(test_view)
{
	const char *path = write_main_core("view.core");
	struct hd_target *t = open_ok(path, NULL);
	struct hd_view v;

	// Inside a present segment: zero-copy.
	ck_assert_no_error(hd_target_view(t, A_START + 0x10, 0x1000, &v));
	ck_assert_ptr_null(v.owned);
	ck_assert_ptr_nonnull(v.data);
	ck_assert_uint_eq(v.addr, A_START + 0x10);
	ck_assert_uint_eq(v.len, 0x1000);
	for (size_t i = 0; i < v.len; i++)
		ck_assert_uint_eq(v.data[i], mem_pattern(A_START + 0x10 + i));
	hd_view_deinit(&v);
	ck_assert_ptr_null(v.data);

	// The whole of B, and the present part of P, are zero-copy too.
	ck_assert_no_error(hd_target_view(t, B_START, B_END - B_START, &v));
	ck_assert_ptr_null(v.owned);
	ck_assert_uint_eq(v.data[B_END - B_START - 1],
			  mem_pattern(B_END - 1));
	hd_view_deinit(&v);
	ck_assert_no_error(hd_target_view(t, P_START, P_PRESENT, &v));
	ck_assert_ptr_null(v.owned);
	hd_view_deinit(&v);

	// Across A and F: a copy.
	ck_assert_no_error(hd_target_view(t, A_END - 0x100, 0x200, &v));
	ck_assert_ptr_nonnull(v.owned);
	ck_assert_ptr_eq(v.data, v.owned);
	for (size_t i = 0; i < 0x100; i++)
		ck_assert_uint_eq(v.data[i], mem_pattern(A_END - 0x100 + i));
	for (size_t i = 0x100; i < 0x200; i++)
		ck_assert_uint_eq(v.data[i], f_byte(F_START + i - 0x100));
	hd_view_deinit(&v);
	ck_assert_ptr_null(v.owned);

	// From the backing file: a copy.
	ck_assert_no_error(hd_target_view(t, F_START + 0x800, 0x100, &v));
	ck_assert_ptr_nonnull(v.owned);
	for (size_t i = 0; i < 0x100; i++)
		ck_assert_uint_eq(v.data[i], f_byte(F_START + 0x800 + i));
	hd_view_deinit(&v);

	// Into the omitted part of P, or the gap: the read's fault.
	ck_assert_fault_at(hd_target_view(t, P_START + P_PRESENT - 8, 16, &v),
			   P_START + P_PRESENT, NULL);
	ck_assert_fault_at(hd_target_view(t, F_END, 16, &v), F_END, NULL);
	hd_target_destroy(t);
}
END_TEST

// A hole punched in a segment's bytes (as the kernel leaves untouched
// pages when it dumps to a file): views say where data is and read zeros
// in the hole; HEAPDOM_SPARSE=0 turns that off.
START_TEST(test_holes)
{
	struct blob core;
	struct core_layout lay;
	main_core(&core, &lay);
	const char *path = tmp_path("holes.core");
	write_file(path, core.data, core.len);
	blob_free(&core);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	// main_segs[1] is A: two pages; the second becomes a hole.
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)lay.seg_off[1] + 4096, 4096) != 0) {
		close(fd);
		return; // no holes on this file system: nothing to test
	}
	close(fd);
	struct hd_target *t = open_ok(path, NULL);
	ck_assert_str_eq(hd_target_sparse_source(t), "core holes");
	struct hd_extent *ext;
	size_t n;
	ck_assert_no_error(hd_target_data_extents(t, A_START, A_END - A_START, &ext, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(ext[0].start, A_START);
	ck_assert_uint_eq(ext[0].end, A_START + 4096);
	free(ext);
	struct hd_view v;
	ck_assert_no_error(hd_target_view(t, A_START, A_END - A_START, &v));
	ck_assert(v.sparse);
	ck_assert_uint_eq(v.num_extents, 1);
	for (size_t i = 0; i < 4096; i++)
		ck_assert_uint_eq(v.data[i], mem_pattern(A_START + i));
	for (size_t i = 4096; i < 8192; i++)
		ck_assert_uint_eq(v.data[i], 0);
	uint64_t lo, hi;
	ck_assert(hd_view_next_data(&v, A_START + 8, A_END, &lo, &hi));
	ck_assert_uint_eq(lo, A_START + 8);
	ck_assert_uint_eq(hi, A_START + 4096);
	ck_assert(!hd_view_next_data(&v, A_START + 4096, A_END, &lo, &hi));
	hd_view_deinit(&v);
	hd_target_destroy(t);

	setenv("HEAPDOM_SPARSE", "0", 1);
	t = open_ok(path, NULL);
	unsetenv("HEAPDOM_SPARSE");
	ck_assert_str_eq(hd_target_sparse_source(t), "off");
	ck_assert_no_error(hd_target_view(t, A_START, A_END - A_START, &v));
	ck_assert(!v.sparse);
	ck_assert(hd_view_next_data(&v, A_START + 4096, A_END, &lo, &hi));
	hd_view_deinit(&v);
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------------------ sysroot

START_TEST(test_sysroot)
{
	// The core names /lib/foo.so; the file lives under a sysroot.
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/sysroot", tmpdir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	char lib[PATH_MAX];
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	ck_assert_int_eq(mkdir(lib, 0755), 0);
	snprintf(lib, sizeof(lib), "%s/lib/foo.so", dir);
	uint8_t d[2 * 4096];
	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = file_pattern(i);
	write_file(lib, d, sizeof(d));

	struct blob notes = {0};
	note_prstatus(&notes, 1);
	struct file_entry files[] = {{0x7f0000001000, 0x7f0000002000, 1,
				      "/lib/foo.so"}};
	note_file(&notes, files, 1);
	struct seg segs[] = {
		{0x7f0000000000, 0x1000, 0x1000, PF_R | PF_W, NULL},
		{0x7f0000001000, 0x1000, 0, PF_R, NULL},
	};
	struct blob core;
	core_build(&core, ET_CORE, EM_X86_64, &notes, segs, 2, NULL);
	const char *path = tmp_path("sysroot.core");
	write_file(path, core.data, core.len);
	blob_free(&core);
	blob_free(&notes);

	uint8_t buf[4096];
	// With the sysroot: from <sysroot>/lib/foo.so at offset 4096.
	struct hd_target_options opts = {.sysroot = dir};
	struct hd_target *t = open_ok(path, &opts);
	const struct hd_mapping *m = hd_target_find_mapping(t, 0x7f0000001000);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->path, "/lib/foo.so"); // as the target knows it
	ck_assert(m->readable);
	ck_assert_no_error(hd_target_read(t, 0x7f0000001000, buf, sizeof(buf)));
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], file_pattern(4096 + i));
	// Across the anonymous page and the file page.
	ck_assert_no_error(hd_target_read(t, 0x7f0000000ff0, buf, 32));
	for (size_t i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], mem_pattern(0x7f0000000ff0 + i));
	for (size_t i = 16; i < 32; i++)
		ck_assert_uint_eq(buf[i], file_pattern(4096 + i - 16));
	hd_target_destroy(t);

	// Without it, /lib/foo.so is not on this machine: a fault, not zeros.
	if (access("/lib/foo.so", F_OK) != 0) {
		t = open_ok(path, NULL);
		ck_assert_fault_at(hd_target_read(t, 0x7f0000001010, buf, 8),
				   0x7f0000001010, "/lib/foo.so");
		hd_target_destroy(t);
	}
	// A sysroot without the file: the same.
	opts.sysroot = tmpdir;
	t = open_ok(path, &opts);
	ck_assert_fault_at(hd_target_read(t, 0x7f0000001000, buf, 8),
			   0x7f0000001000, "--sysroot");
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------------------ errors

// Opens a core that must fail with code; the message must name the file
// and contain needle.
static void expect_open_error(const char *path, enum hd_error_code code,
			      const char *needle)
{
	struct hd_target *t = (struct hd_target *)0x1;
	struct hd_error *err = hd_target_open_core(path, NULL, &t);
	ck_assert_msg(err, "%s: opened, expected error code %d", path, code);
	ck_assert_msg(strstr(err->message, path), "message \"%s\" lacks %s",
		      err->message, path);
	ck_assert_msg(err->path && strcmp(err->path, path) == 0,
		      "err->path %s, want %s", err->path ? err->path : "NULL",
		      path);
	ck_assert_error_msg(err, code, needle);
	ck_assert_ptr_eq(t, (struct hd_target *)0x1); // untouched
}

START_TEST(test_error_nonexistent)
{
	const char *path = tmp_path("no-such.core");
	struct hd_target *t = NULL;
	struct hd_error *err = hd_target_open_core(path, NULL, &t);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->errnum, ENOENT);
	hd_error_destroy(err);
	expect_open_error(path, HD_ERROR_OS, strerror(ENOENT));
}
END_TEST

START_TEST(test_error_directory)
{
	expect_open_error(tmpdir, HD_ERROR_FORMAT, "not a regular file");
}
END_TEST

START_TEST(test_error_empty)
{
	const char *path = tmp_path("empty.core");
	write_file(path, "", 0);
	expect_open_error(path, HD_ERROR_FORMAT, "empty");
}
END_TEST

START_TEST(test_error_text)
{
	const char *path = tmp_path("text.core");
	const char text[] = "this is not a core dump\nat all\n";
	write_file(path, text, sizeof(text) - 1);
	expect_open_error(path, HD_ERROR_FORMAT, "not an ELF");
	// Shorter than the ELF magic.
	path = tmp_path("tiny.core");
	write_file(path, "\177E", 2);
	expect_open_error(path, HD_ERROR_FORMAT, "not an ELF");
	// The magic, then nothing.
	path = tmp_path("magic.core");
	write_file(path, ELFMAG, SELFMAG);
	expect_open_error(path, HD_ERROR_FORMAT, "truncated");
}
END_TEST

START_TEST(test_error_not_core)
{
	// A synthetic ET_EXEC.
	struct blob notes = {0};
	note_prstatus(&notes, 1);
	struct blob core;
	core_build(&core, ET_EXEC, EM_X86_64, &notes, main_segs, 1, NULL);
	const char *path = tmp_path("exec.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "not a core");
	blob_free(&core);
	// A relocatable object.
	core_build(&core, ET_REL, EM_X86_64, &notes, main_segs, 1, NULL);
	path = tmp_path("rel.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "not a core");
	blob_free(&core);
	blob_free(&notes);
	// A real program.
	if (access("/bin/true", R_OK) == 0)
		expect_open_error("/bin/true", HD_ERROR_FORMAT, "not a core");
}
END_TEST

START_TEST(test_error_foreign)
{
	struct blob core;
	main_core(&core, NULL);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)core.data;
	eh->e_machine = EM_AARCH64;
	const char *path = tmp_path("aarch64.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_UNSUPPORTED, "foreign");

	eh->e_machine = EM_X86_64;
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	path = tmp_path("elf32.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_UNSUPPORTED, "64-bit");

	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2MSB;
	path = tmp_path("bigendian.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_UNSUPPORTED, "little-endian");
	blob_free(&core);
}
END_TEST

START_TEST(test_error_truncated_phdrs)
{
	struct blob core;
	struct core_layout lay;
	main_core(&core, &lay);
	// In the middle of the third program header.
	size_t cut = lay.phoff + 2 * sizeof(Elf64_Phdr) + 20;
	const char *path = tmp_path("trunc-phdrs.core");
	write_file(path, core.data, cut);
	expect_open_error(path, HD_ERROR_FORMAT, "program headers");
	// Right after the ELF header.
	path = tmp_path("trunc-ehdr.core");
	write_file(path, core.data, sizeof(Elf64_Ehdr));
	expect_open_error(path, HD_ERROR_FORMAT, "program headers");
	// Inside the ELF header.
	path = tmp_path("trunc-ehdr2.core");
	write_file(path, core.data, 40);
	expect_open_error(path, HD_ERROR_FORMAT, "truncated");
	// e_phoff far past the end.
	((Elf64_Ehdr *)core.data)->e_phoff = 1ULL << 40;
	path = tmp_path("phoff.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "program headers");
	// e_phnum huge.
	((Elf64_Ehdr *)core.data)->e_phoff = sizeof(Elf64_Ehdr);
	((Elf64_Ehdr *)core.data)->e_phnum = 0xfff0;
	path = tmp_path("phnum.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "program headers");
	// A wrong program header entry size.
	((Elf64_Ehdr *)core.data)->e_phnum = 1 + NMAIN;
	((Elf64_Ehdr *)core.data)->e_phentsize = 32;
	path = tmp_path("phentsize.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, NULL);
	blob_free(&core);
}
END_TEST

// Program headers at an offset no core writer uses (found by fuzz_core:
// they were read in place, misaligned): a clear error, not a crash.
START_TEST(test_error_misaligned_phdrs)
{
	struct blob core;
	struct core_layout lay;
	main_core(&core, &lay);
	((Elf64_Ehdr *)core.data)->e_phoff = lay.phoff + 4;
	const char *path = tmp_path("phoff-misaligned.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "not 8-byte aligned");
	blob_free(&core);
}
END_TEST

START_TEST(test_error_notes_past_eof)
{
	struct blob core;
	struct core_layout lay;
	main_core(&core, &lay);
	// Cut inside the notes.
	const char *path = tmp_path("trunc-notes.core");
	write_file(path, core.data, lay.notes_off + lay.notes_len / 2);
	expect_open_error(path, HD_ERROR_FORMAT, "notes segment");
	// The notes segment's offset past the end of an intact file.
	Elf64_Phdr *ph = (Elf64_Phdr *)(core.data + lay.phoff);
	ck_assert_uint_eq(ph[0].p_type, PT_NOTE);
	ph[0].p_offset = core.len + 4096;
	path = tmp_path("notes-offset.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "notes segment");
	// A size that overflows offset + size.
	ph[0].p_offset = lay.notes_off;
	ph[0].p_filesz = UINT64_MAX - 8;
	path = tmp_path("notes-size.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "notes segment");
	// No notes at all.
	ph[0].p_type = PT_NULL;
	path = tmp_path("no-notes.core");
	write_file(path, core.data, core.len);
	expect_open_error(path, HD_ERROR_FORMAT, "no notes");
	blob_free(&core);
}
END_TEST

// Builds a core whose only note is given raw, and checks the error.
static void expect_bad_notes(const char *name, const struct blob *notes,
			     const char *needle)
{
	struct blob core;
	core_build(&core, ET_CORE, EM_X86_64, notes, main_segs, 2, NULL);
	const char *path = tmp_path(name);
	write_file(path, core.data, core.len);
	blob_free(&core);
	expect_open_error(path, HD_ERROR_FORMAT, needle);
}

START_TEST(test_error_bad_notes)
{
	// n_descsz of the last note runs past the segment.
	struct blob notes = {0};
	note_prstatus(&notes, 1);
	size_t last = notes.len;
	note_auxv(&notes, main_auxv, 2);
	Elf64_Nhdr *nh = (Elf64_Nhdr *)(notes.data + last);
	nh->n_descsz = 0x10000;
	expect_bad_notes("descsz.core", &notes, "runs past");
	// So large that offset + size would overflow 32 bits.
	nh->n_descsz = 0xfffffff0;
	expect_bad_notes("descsz2.core", &notes, "runs past");
	// n_namesz too large.
	nh->n_descsz = 32;
	nh->n_namesz = 0xfffffffd;
	expect_bad_notes("namesz.core", &notes, "runs past");
	blob_free(&notes);

	// An NT_PRSTATUS too short for the registers.
	notes = (struct blob){0};
	uint8_t small[100] = {0};
	note_add(&notes, NT_PRSTATUS, "CORE", small, sizeof(small));
	expect_bad_notes("prstatus.core", &notes, "NT_PRSTATUS");
	blob_free(&notes);

	// NT_FILE whose count claims more entries than it holds.
	notes = (struct blob){0};
	uint64_t nt_file[4] = {1000, 4096, 0x400000, 0x401000};
	note_add(&notes, NT_FILE, "CORE", nt_file, sizeof(nt_file));
	expect_bad_notes("ntfile-count.core", &notes, "NT_FILE");
	blob_free(&notes);

	// NT_FILE whose last name lacks its terminator.
	notes = (struct blob){0};
	uint8_t nf[16 + 24 + 6];
	uint64_t hdr[5] = {1, 4096, 0x400000, 0x401000, 0};
	memcpy(nf, hdr, 40);
	memcpy(nf + 40, "/a/bcd", 6);
	note_add(&notes, NT_FILE, "CORE", nf, sizeof(nf));
	expect_bad_notes("ntfile-name.core", &notes, "NT_FILE");
	blob_free(&notes);
}
END_TEST

START_TEST(test_error_segment_wraps)
{
	struct blob notes = {0};
	note_prstatus(&notes, 1);
	struct seg segs[] = {
		{0xfffffffffffff000, 0x2000, 0, PF_R | PF_W, NULL},
	};
	struct blob core;
	core_build(&core, ET_CORE, EM_X86_64, &notes, segs, 1, NULL);
	const char *path = tmp_path("wraps.core");
	write_file(path, core.data, core.len);
	blob_free(&core);
	blob_free(&notes);
	expect_open_error(path, HD_ERROR_FORMAT, "wraps");
}
END_TEST

START_TEST(test_truncated_load)
{
	struct blob core;
	struct core_layout lay;
	main_core(&core, &lay);
	// main_segs[1] is A; its data follows P's in the file, B's follows.
	ck_assert_uint_eq(main_segs[1].vaddr, A_START);
	size_t cut_in_a = 0x1234;
	size_t cut = lay.seg_off[1] + cut_in_a;
	ck_assert_uint_lt(lay.seg_off[0], lay.seg_off[1]);
	ck_assert_uint_gt(lay.seg_off[3], lay.seg_off[1]);
	const char *path = tmp_path("trunc-load.core");
	write_file(path, core.data, cut);
	blob_free(&core);

	struct hd_target *t = open_ok(path, NULL);
	ck_assert_uint_eq(hd_target_num_threads(t), 2);
	// Before the cut: fine.
	check_mem(t, A_START, cut_in_a);
	check_mem(t, P_START, P_PRESENT);
	// After it: a fault naming the first missing byte, saying why.
	uint64_t cut_addr = A_START + cut_in_a;
	uint8_t buf[0x100];
	ck_assert_fault_at(hd_target_read(t, cut_addr, buf, 8), cut_addr,
			   "truncated");
	ck_assert_fault_at(hd_target_read(t, cut_addr - 0x10, buf, 0x20),
			   cut_addr, "truncated");
	ck_assert_fault_at(hd_target_read(t, A_END - 8, buf, 8), A_END - 8,
			   "truncated");
	// B lies wholly past the cut.
	ck_assert_fault_at(hd_target_read(t, B_START, buf, 8), B_START,
			   "truncated");
	// F still comes from its backing file.
	ck_assert_no_error(hd_target_read(t, F_START, buf, 16));
	for (size_t i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], f_byte(F_START + i));
	// A view that would reach past the cut is refused, not zero-filled.
	struct hd_view v;
	ck_assert_fault_at(hd_target_view(t, cut_addr - 8, 16, &v), cut_addr,
			   "truncated");
	ck_assert_no_error(hd_target_view(t, cut_addr - 16, 16, &v));
	ck_assert_ptr_null(v.owned);
	hd_view_deinit(&v);
	// Mappings say which ranges are incomplete.
	ck_assert(!hd_target_find_mapping(t, A_START)->readable);
	ck_assert(!hd_target_find_mapping(t, B_START)->readable);
	ck_assert(hd_target_find_mapping(t, F_START)->readable);
	// The target says it is truncated, from the first missing byte.
	struct hd_truncation tr;
	ck_assert(hd_target_truncation(t, &tr));
	ck_assert_uint_eq(tr.file_size, cut);
	ck_assert_uint_gt(tr.expected_size, cut);
	ck_assert_uint_eq(tr.first_start, cut_addr);
	ck_assert_uint_eq(tr.first_end, A_END);
	ck_assert_uint_ge(tr.num_ranges, 2);
	ck_assert_uint_ge(tr.missing_bytes, (A_END - cut_addr) + (B_END - B_START));
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------------------ modules

// This test program itself serves as a real ELF file backing a mapping.
struct self_elf {
	char path[PATH_MAX];
	uint8_t page[4096];
	size_t page_len;
	uint16_t type;
	uint64_t min_vaddr, phoff;
	size_t build_id_off, build_id_len; // in page, 0 if none
};

static void read_self(struct self_elf *s)
{
	memset(s, 0, sizeof(*s));
	ssize_t n = readlink("/proc/self/exe", s->path, sizeof(s->path) - 1);
	ck_assert_int_gt(n, 0);
	s->path[n] = '\0';
	int fd = open(s->path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t r = pread(fd, s->page, sizeof(s->page), 0);
	ck_assert_int_ge(r, (ssize_t)sizeof(Elf64_Ehdr));
	s->page_len = (size_t)r;
	close(fd);
	Elf64_Ehdr eh;
	memcpy(&eh, s->page, sizeof(eh));
	s->type = eh.e_type;
	s->phoff = eh.e_phoff;
	s->min_vaddr = UINT64_MAX;
	ck_assert_uint_le(eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr),
			  s->page_len);
	for (size_t i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, s->page + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_vaddr < s->min_vaddr)
			s->min_vaddr = ph.p_vaddr & ~0xfffULL;
		if (ph.p_type != PT_NOTE || ph.p_offset + ph.p_filesz > s->page_len)
			continue;
		size_t off = ph.p_offset, end = ph.p_offset + ph.p_filesz;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			Elf64_Nhdr nh;
			memcpy(&nh, s->page + off, sizeof(nh));
			size_t desc = off + sizeof(nh) + ((nh.n_namesz + 3) & ~3u);
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    desc + nh.n_descsz <= end) {
				s->build_id_off = desc;
				s->build_id_len = nh.n_descsz;
			}
			off = desc + ((nh.n_descsz + 3) & ~3u);
		}
	}
}

// A core mapping the first page of this program at base, either present
// in the core (page != NULL) or from the file (p_filesz 0), with AT_PHDR
// pointing at it when is_exe.
static const char *self_core(const char *name, const struct self_elf *s,
			     uint64_t base, const uint8_t *page, bool is_exe)
{
	struct blob notes = {0};
	note_prstatus(&notes, 77);
	uint64_t auxv[] = {AT_PHDR, is_exe ? base + s->phoff : 0x1000,
			   AT_PAGESZ, 4096, AT_NULL, 0};
	note_auxv(&notes, auxv, 3);
	struct file_entry files[] = {{base, base + 0x1000, 0, s->path}};
	note_file(&notes, files, 1);
	struct seg segs[] = {
		{base, 0x1000, page ? 0x1000 : 0, PF_R, page},
		{0x1000, 0x1000, 0x1000, PF_R | PF_W, NULL},
	};
	struct blob core;
	core_build(&core, ET_CORE, EM_X86_64, &notes, segs, 2, NULL);
	const char *path = tmp_path(name);
	write_file(path, core.data, core.len);
	blob_free(&core);
	blob_free(&notes);
	return path;
}

START_TEST(test_module_self)
{
	struct self_elf s;
	read_self(&s);
	if (s.page_len < 4096 || (s.type != ET_DYN && s.type != ET_EXEC)) {
		fprintf(stderr, "test_module_self: skipped, odd executable\n");
		return;
	}
	uint64_t base = s.type == ET_DYN ? 0x555555554000 : s.min_vaddr;
	struct hd_elf_info info;
	ck_assert_no_error(hd_elf_read_info(s.path, &info));

	const char *path = self_core("self.core", &s, base, NULL, true);
	struct hd_target *t = open_ok(path, NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 1);
	const struct hd_module *m = hd_target_module(t, 0);
	ck_assert_str_eq(m->name, s.path);
	ck_assert_ptr_nonnull(m->file);
	ck_assert_str_eq(m->file, s.path);
	ck_assert(m->is_exe);
	ck_assert_uint_eq(m->start, base);
	ck_assert_uint_eq(m->end, base + 0x1000);
	ck_assert_uint_eq(m->bias, base - s.min_vaddr);
	ck_assert_uint_eq(m->build_id_len, info.build_id_len);
	ck_assert_mem_eq(m->build_id, info.build_id, info.build_id_len);
	ck_assert_ptr_eq(hd_target_find_module(t, base + 0x10), m);
	ck_assert_ptr_null(hd_target_find_module(t, base + 0x1000));
	// The ELF header, read through the backing file.
	uint8_t magic[4];
	ck_assert_no_error(hd_target_read(t, base, magic, 4));
	ck_assert_mem_eq(magic, ELFMAG, 4);
	hd_target_destroy(t);

	if (!s.build_id_len) {
		fprintf(stderr, "test_module_self: no build-id, mismatch "
				"checks skipped\n");
		return;
	}
	ck_assert_uint_eq(s.build_id_len, info.build_id_len);
	// The core's copy of the first page has another build-id: as the
	// executable, the module stays without its file, and one warning
	// names both files and both build-ids (the rest of the analysis
	// goes on without that executable's symbols)...
	uint8_t page[4096];
	memcpy(page, s.page, sizeof(page));
	page[s.build_id_off] ^= 0xff;
	path = self_core("self-mismatch.core", &s, base, page, true);
	t = open_ok(path, NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 1);
	m = hd_target_module(t, 0);
	ck_assert(m->is_exe);
	ck_assert_ptr_null(m->file);
	ck_assert_uint_eq(hd_target_num_warnings(t), 1);
	const char *w = hd_target_warning(t, 0);
	char want_id[81], have_id[81];
	for (size_t i = 0; i < s.build_id_len && i < 40; i++) {
		sprintf(want_id + 2 * i, "%02x", page[s.build_id_off + i]);
		sprintf(have_id + 2 * i, "%02x", info.build_id[i]);
	}
	ck_assert_msg(strstr(w, s.path) && strstr(w, path) &&
		      strstr(w, want_id) && strstr(w, have_id) &&
		      strstr(w, "--exe"), "%s", w);
	hd_target_destroy(t);

	// ...as a library, the module stays but without its file, and one
	// warning says its symbols are not used.
	path = self_core("self-lib.core", &s, base, page, false);
	t = open_ok(path, NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 1);
	m = hd_target_module(t, 0);
	ck_assert(!m->is_exe);
	ck_assert_ptr_null(m->file);
	ck_assert_uint_eq(m->build_id_len, s.build_id_len);
	ck_assert_mem_eq(m->build_id, page + s.build_id_off, s.build_id_len);
	ck_assert_uint_eq(hd_target_num_warnings(t), 1);
	ck_assert_msg(strstr(hd_target_warning(t, 0), "1 library on this machine is not the build"),
		      "%s", hd_target_warning(t, 0));
	hd_target_destroy(t);

	// --exe naming the right file: the module uses it.
	path = self_core("self-exe.core", &s, base, NULL, true);
	struct hd_target_options opts = {.exe = s.path};
	t = open_ok(path, &opts);
	ck_assert_uint_eq(hd_target_num_modules(t), 1);
	ck_assert_str_eq(hd_target_module(t, 0)->file, s.path);
	hd_target_destroy(t);
	// --exe naming a file that is not ELF: an error.
	opts.exe = backing_path();
	struct hd_target *bad = (struct hd_target *)0x1;
	struct hd_error *err = hd_target_open_core(path, &opts, &bad);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err->message, backing_path()), "%s",
		      err->message);
	hd_error_destroy(err);
	ck_assert_ptr_eq(bad, (struct hd_target *)0x1);
	// --exe naming another program, and the core without the page that
	// holds the executable's build-id: nothing to check it against (the
	// file at the recorded path is no evidence of what ran), so it is
	// used, and a warning says unverified.
	struct hd_elf_info other;
	struct hd_error *oerr = hd_elf_read_info("/bin/true", &other);
	if (!oerr && other.build_id_len) {
		opts.exe = "/bin/true";
		t = open_ok(path, &opts);
		ck_assert_str_eq(hd_target_module(t, 0)->file, "/bin/true");
		ck_assert_uint_eq(hd_target_num_warnings(t), 1);
		ck_assert_msg(strstr(hd_target_warning(t, 0), "/bin/true") &&
			      strstr(hd_target_warning(t, 0), "cannot be checked"),
			      "%s", hd_target_warning(t, 0));
		hd_target_destroy(t);
		// With the page in the core: its build-id differs; a warning,
		// and the executable's file is not used.
		path = self_core("self-other.core", &s, base, s.page, true);
		t = open_ok(path, &opts);
		ck_assert_ptr_null(hd_target_module(t, 0)->file);
		ck_assert_uint_eq(hd_target_num_warnings(t), 1);
		ck_assert_msg(strstr(hd_target_warning(t, 0), "/bin/true") &&
			      strstr(hd_target_warning(t, 0), "is not the one that made"),
			      "%s", hd_target_warning(t, 0));
		hd_target_destroy(t);
	}
	hd_error_destroy(oerr);

	// The right page present in the core: fine.
	path = self_core("self-present.core", &s, base, s.page, true);
	t = open_ok(path, NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 1);
	ck_assert_ptr_nonnull(hd_target_module(t, 0)->file);
	ck_assert(hd_target_module(t, 0)->is_exe);
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------ cores without NT_FILE

// A core without NT_FILE whose process memory shows an executable at
// 0x400000 (AT_PHDR, PT_PHDR, PT_DYNAMIC with DT_DEBUG), the dynamic
// linker's r_debug and link_map list in its data page, and one library at
// 0x7f0000000000 (ELF header, PT_DYNAMIC). The library's l_next is
// `last_next`: 0 ends the list, its own address makes a cycle, an unmapped
// address cuts it.
#define NL_EXE 0x400000ULL
#define NL_DATA 0x600000ULL
#define NL_LIB 0x7f0000000000ULL
static const char *noteless_core(const char *name, uint64_t last_next)
{
	static uint8_t exe[0x2000], data[0x1000], lib[0x2000];
	memset(exe, 0, sizeof(exe));
	memset(data, 0, sizeof(data));
	memset(lib, 0, sizeof(lib));
	// The executable: header, PT_PHDR, PT_LOAD, PT_DYNAMIC.
	Elf64_Ehdr eh = {.e_type = ET_EXEC, .e_machine = EM_X86_64,
			 .e_phoff = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 3};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	Elf64_Phdr ph[3] = {
		{.p_type = PT_PHDR, .p_vaddr = NL_EXE + 64, .p_filesz = 3 * 56},
		{.p_type = PT_LOAD, .p_vaddr = NL_EXE, .p_filesz = 0x2000,
		 .p_memsz = 0x2000},
		{.p_type = PT_DYNAMIC, .p_vaddr = NL_EXE + 0x1000,
		 .p_filesz = 32},
	};
	memcpy(exe, &eh, sizeof(eh));
	memcpy(exe + 64, ph, sizeof(ph));
	Elf64_Dyn dyn[2] = {{.d_tag = DT_DEBUG, .d_un.d_val = NL_DATA},
			    {.d_tag = DT_NULL}};
	memcpy(exe + 0x1000, dyn, sizeof(dyn));
	// r_debug {r_version, r_map}, then two link_maps and the strings.
	uint64_t rd[2] = {1, NL_DATA + 0x100};
	memcpy(data, rd, sizeof(rd));
	uint64_t lm0[4] = {0, NL_DATA + 0x800, NL_EXE + 0x1000, NL_DATA + 0x200};
	uint64_t lm1[4] = {NL_LIB, NL_DATA + 0x810, NL_LIB + 0x1000, last_next};
	memcpy(data + 0x100, lm0, sizeof(lm0));
	memcpy(data + 0x200, lm1, sizeof(lm1));
	strcpy((char *)data + 0x810, "/nonexistent-heapdom-test-dir/libfoo.so");
	strcpy((char *)data + 0x900, "/nonexistent-heapdom-test-dir/prog");
	// The library: linked at 0, its dynamic section on its second page.
	eh.e_type = ET_DYN;
	eh.e_phnum = 2;
	Elf64_Phdr lph[2] = {
		{.p_type = PT_LOAD, .p_vaddr = 0, .p_filesz = 0x1800,
		 .p_memsz = 0x1800},
		{.p_type = PT_DYNAMIC, .p_vaddr = 0x1000, .p_filesz = 16},
	};
	memcpy(lib, &eh, sizeof(eh));
	memcpy(lib + 64, lph, sizeof(lph));
	struct blob notes = {0};
	note_prstatus(&notes, 9);
	uint64_t auxv[] = {AT_PHDR, NL_EXE + 64, AT_PHNUM, 3,
			   AT_EXECFN, NL_DATA + 0x900, AT_NULL, 0};
	note_auxv(&notes, auxv, 4);
	struct seg segs[] = {
		{NL_EXE, sizeof(exe), sizeof(exe), PF_R, exe},
		{NL_DATA, sizeof(data), sizeof(data), PF_R | PF_W, data},
		{NL_LIB, sizeof(lib), sizeof(lib), PF_R, lib},
	};
	struct blob core;
	core_build(&core, ET_CORE, EM_X86_64, &notes, segs, 3, NULL);
	const char *path = tmp_path(name);
	write_file(path, core.data, core.len);
	blob_free(&core);
	blob_free(&notes);
	return path;
}

START_TEST(test_noteless_link_map)
{
	// The list ends: the executable and the library, by name, range and
	// load bias; the library's range is its file-backed part, page-rounded.
	struct hd_target *t = open_ok(noteless_core("nl.core", 0), NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 2);
	const struct hd_module *e = hd_target_module(t, 0), *l = hd_target_module(t, 1);
	ck_assert(e->is_exe && !l->is_exe);
	ck_assert_str_eq(e->name, "/nonexistent-heapdom-test-dir/prog");
	ck_assert_uint_eq(e->start, NL_EXE);
	ck_assert_uint_eq(e->end, NL_EXE + 0x2000);
	ck_assert_uint_eq(e->bias, 0);
	ck_assert_str_eq(l->name, "/nonexistent-heapdom-test-dir/libfoo.so");
	ck_assert_uint_eq(l->start, NL_LIB);
	ck_assert_uint_eq(l->end, NL_LIB + 0x2000);
	ck_assert_uint_eq(l->bias, NL_LIB);
	ck_assert_ptr_null(l->file);
	// The library's mappings carry its name, as NT_FILE would give them.
	ck_assert_str_eq(hd_target_find_mapping(t, NL_LIB)->path, l->name);
	ck_assert_ptr_null(hd_target_find_mapping(t, NL_DATA)->path);
	size_t n = hd_target_num_warnings(t);
	ck_assert_uint_ge(n, 1);
	ck_assert_msg(strstr(hd_target_warning(t, 0), "2 modules found from the process's memory") &&
		      !strstr(hd_target_warning(t, 0), "cycle"),
		      "%s", hd_target_warning(t, 0));
	hd_target_destroy(t);

	// l_next pointing at itself: the walk stops, the same two modules,
	// and the warning says the list is no list.
	t = open_ok(noteless_core("nl-cycle.core", NL_DATA + 0x200), NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 2);
	hd_target_num_warnings(t);
	ck_assert_msg(strstr(hd_target_warning(t, 0), "a cycle?"), "%s",
		      hd_target_warning(t, 0));
	hd_target_destroy(t);

	// l_next into memory the core does not hold: what was found stays,
	// and the warning names where the list is cut.
	t = open_ok(noteless_core("nl-cut.core", 0x12345000), NULL);
	ck_assert_uint_eq(hd_target_num_modules(t), 2);
	hd_target_num_warnings(t);
	ck_assert_msg(strstr(hd_target_warning(t, 0), "cut at 0x12345000"), "%s",
		      hd_target_warning(t, 0));
	hd_target_destroy(t);
}
END_TEST

// ------------------------------------------------------------ main

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/heapdom-core-XXXXXX",
		 base && base[0] ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}

	Suite *s = suite_create("core_file");
	TCase *tc = tcase_create("read");
	tcase_add_test(tc, test_basics);
	tcase_add_test(tc, test_mappings);
	tcase_add_test(tc, test_read_present);
	tcase_add_test(tc, test_read_backing_file);
	tcase_add_test(tc, test_read_omitted);
	tcase_add_test(tc, test_read_unmapped);
	tcase_add_test(tc, test_view);
	tcase_add_test(tc, test_holes);
	tcase_add_test(tc, test_sysroot);
	tcase_add_test(tc, test_truncated_load);
	tcase_add_test(tc, test_module_self);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_error_nonexistent);
	tcase_add_test(tc, test_error_directory);
	tcase_add_test(tc, test_error_empty);
	tcase_add_test(tc, test_error_text);
	tcase_add_test(tc, test_error_not_core);
	tcase_add_test(tc, test_error_foreign);
	tcase_add_test(tc, test_error_truncated_phdrs);
	tcase_add_test(tc, test_error_misaligned_phdrs);
	tcase_add_test(tc, test_error_notes_past_eof);
	tcase_add_test(tc, test_error_bad_notes);
	tcase_add_test(tc, test_error_segment_wraps);
	tcase_add_test(tc, test_noteless_link_map);
	suite_add_tcase(s, tc);

	int failed = hd_run_suite(s);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
