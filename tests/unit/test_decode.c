// Unit tests of core/sample/decode: effective addresses of x86-64
// instructions. The bytes were assembled once with GNU as (the assembly is
// in each comment); expected addresses are computed here from the register
// values by the instruction's definition, not copied from the decoder.
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "sample/decode.h"
#include "check_util.h"

static struct hd_decoder *dec;
static struct hd_regs regs;
// Where the instructions are supposed to sit (RIP-relative tests).
static const uint64_t PC = 0x401000;

static void setup(void)
{
	ck_assert_no_error(hd_decoder_create(&dec));
	memset(&regs, 0, sizeof(regs));
	// Distinct values so that a wrong register gives a wrong address;
	// rbx has high bits so that 32-bit addressing must drop them.
	regs.rax = 0x0000100000001000;
	regs.rbx = 0x12345678fffffff0;
	regs.rcx = 0x30;
	regs.rdx = 0x5000;
	regs.rsi = 0x00007f0000001000;
	regs.rdi = 0x00007f0000002000;
	regs.rbp = 0x00007ffd00002000;
	regs.rsp = 0x00007ffd00001000;
	regs.r8 = 0x8800;
	regs.r12 = 0x00007f1200000000;
	regs.rip = PC;
	regs.fs_base = 0x00007f00deadb000;
	regs.gs_base = 0x00007f00beef0000;
}

static void teardown(void)
{
	hd_decoder_destroy(dec);
	dec = NULL;
}

struct result {
	struct hd_access a[HD_ACCESS_MAX];
	size_t n;
	size_t len;
};

static struct result decode_at(const uint8_t *code, size_t len, uint64_t pc)
{
	struct result r;
	memset(&r, 0, sizeof(r));
	ck_assert_no_error(hd_decode_accesses(dec, code, len, pc, &regs, r.a,
					      HD_ACCESS_MAX, &r.n, &r.len));
	return r;
}
#define DECODE(bytes) decode_at(bytes, sizeof(bytes), PC)

static void check_access_(const struct result *r, size_t i, uint64_t addr,
			  uint32_t size, bool write, bool implicit,
			  const char *what)
{
	ck_assert_msg(i < r->n, "%s: access %zu of %zu", what, i, r->n);
	const struct hd_access *a = &r->a[i];
	ck_assert_msg(a->addr == addr, "%s: addr 0x%" PRIx64 " != 0x%" PRIx64,
		      what, a->addr, addr);
	ck_assert_msg(a->size == size, "%s: size %u != %u", what, a->size,
		      size);
	ck_assert_msg(a->write == write, "%s: write %d != %d", what, a->write,
		      write);
	ck_assert_msg(a->implicit == implicit, "%s: implicit %d != %d", what,
		      a->implicit, implicit);
}
#define check_access(r, i, addr, size, write, implicit)                       \
	check_access_(&(r), i, addr, size, write, implicit, #r)

// Decodes code, which must be one instruction of len bytes making exactly
// one access, and checks it.
static void check_one_(const uint8_t *code, size_t len, uint64_t addr,
		       uint32_t size, bool write, bool implicit, const char *what)
{
	struct result r = decode_at(code, len, PC);

	ck_assert_msg(r.n == 1, "%s: %zu accesses, want 1", what, r.n);
	ck_assert_msg(r.len == len, "%s: length %zu, want %zu", what, r.len, len);
	check_access_(&r, 0, addr, size, write, implicit, what);
}

// Instructions that make one access at [rax].
struct rax_case {
	const char *what;
	uint8_t bytes[8];
	size_t len;
	uint32_t size;
	bool write;
};

static void check_rax_cases(const struct rax_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check_one_(cases[i].bytes, cases[i].len, regs.rax, cases[i].size,
			   cases[i].write, false, cases[i].what);
}
#define check_one(code, addr, size, write, implicit)                          \
	check_one_(code, sizeof(code), addr, size, write, implicit, #code)

// ------------------------------------------------------------ operands

START_TEST(test_base_index_scale)
{
	// mov rax, qword ptr [rbx+rcx*4+0x10]
	static const uint8_t load[] = { 0x48, 0x8b, 0x44, 0x8b, 0x10 };
	struct result r = DECODE(load);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.len, sizeof(load));
	check_access(r, 0, regs.rbx + regs.rcx * 4 + 0x10, 8, false, false);

	// mov qword ptr [rbx], rax
	static const uint8_t store[] = { 0x48, 0x89, 0x03 };
	check_one(store, regs.rbx, 8, true, false);

	// movzx eax, byte ptr [rsi]: 1 byte
	static const uint8_t movzx[] = { 0x0f, 0xb6, 0x06 };
	check_one(movzx, regs.rsi, 1, false, false);

	// mov r8, qword ptr [r12+rdx*8-0x20]: REX registers, negative disp
	static const uint8_t rex[] = { 0x4d, 0x8b, 0x44, 0xd4, 0xe0 };
	check_one(rex, regs.r12 + regs.rdx * 8 - 0x20, 8, false, false);

	// movabs rax, qword ptr [0x1122334455667788]
	static const uint8_t moffs[] = { 0x48, 0xa1, 0x88, 0x77, 0x66, 0x55,
					 0x44, 0x33, 0x22, 0x11 };
	check_one(moffs, 0x1122334455667788, 8, false, false);
}
END_TEST

START_TEST(test_sub_registers)
{
	// addr32 mov eax, dword ptr [ebx+ecx*2+4]: 32-bit register names
	// under the 0x67 override. EBX is 0xfffffff0, so the 32-bit sum
	// wraps, and the high half of RBX must not count.
	static const uint8_t addr32[] = { 0x67, 0x8b, 0x44, 0x4b, 0x04 };
	struct result r = DECODE(addr32);
	ck_assert_uint_eq(r.n, 1);
	uint32_t ea = (uint32_t)regs.rbx + (uint32_t)regs.rcx * 2 + 4;
	ck_assert_uint_lt(ea, 0x1000); // it did wrap
	check_access(r, 0, ea, 4, false, false);

	// addr32 mov eax, dword ptr [eip+0x10], at a pc above 4 GiB
	static const uint8_t eiprel[] = { 0x67, 0x8b, 0x05, 0x10, 0, 0, 0 };
	uint64_t pc = 0x100001000;
	r = decode_at(eiprel, sizeof(eiprel), pc);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, (uint32_t)(pc + sizeof(eiprel) + 0x10), 4, false,
		     false);

	// xlatb: reads [rbx + al], AL being the low byte of RAX
	static const uint8_t xlat[] = { 0xd7 };
	regs.rax = 0x1234567890abcd42;
	check_one(xlat, regs.rbx + (regs.rax & 0xff), 1, false, true);
}
END_TEST

START_TEST(test_rip_relative)
{
	// mov rax, qword ptr [rip+0x100]: relative to the NEXT instruction
	static const uint8_t fwd[] = { 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00 };
	struct result r = DECODE(fwd);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, PC + sizeof(fwd) + 0x100, 8, false, false);

	// mov eax, dword ptr [rip-0x10]
	static const uint8_t back[] = { 0x8b, 0x05, 0xf0, 0xff, 0xff, 0xff };
	check_one(back, PC + sizeof(back) - 0x10, 4, false, false);
}
END_TEST

START_TEST(test_segments)
{
	// mov rax, qword ptr fs:[0x28] (the stack protector canary)
	static const uint8_t fs[] = { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0 };
	struct result r = DECODE(fs);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, regs.fs_base + 0x28, 8, false, false);

	// mov rax, qword ptr gs:[rbx]
	static const uint8_t gs[] = { 0x65, 0x48, 0x8b, 0x03 };
	check_one(gs, regs.gs_base + regs.rbx, 8, false, false);

	// mov eax, dword ptr cs:[rax]: CS has no base in 64-bit mode
	static const uint8_t cs[] = { 0x2e, 0x8b, 0x00 };
	check_one(cs, regs.rax, 4, false, false);
}
END_TEST

// ---------------------------------------------------------------- stack

START_TEST(test_push_pop)
{
	// push rax
	static const uint8_t push[] = { 0x50 };
	struct result r = DECODE(push);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, regs.rsp - 8, 8, true, true);

	// push qword ptr [rax]: the operand is read, the stack written
	static const uint8_t pushm[] = { 0xff, 0x30 };
	r = DECODE(pushm);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rax, 8, false, false);
	check_access(r, 1, regs.rsp - 8, 8, true, true);

	// push word ptr [rax] (0x66): 2 bytes each way
	static const uint8_t push16[] = { 0x66, 0xff, 0x30 };
	r = DECODE(push16);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rax, 2, false, false);
	check_access(r, 1, regs.rsp - 2, 2, true, true);

	// pushfq
	static const uint8_t pushf[] = { 0x9c };
	check_one(pushf, regs.rsp - 8, 8, true, true);

	// pop rax
	static const uint8_t pop[] = { 0x58 };
	check_one(pop, regs.rsp, 8, false, true);

	// pop qword ptr [rsp+8]: the address uses RSP after the pop
	static const uint8_t popm[] = { 0x8f, 0x44, 0x24, 0x08 };
	r = DECODE(popm);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rsp + 8 + 8, 8, true, false);
	check_access(r, 1, regs.rsp, 8, false, true);
}
END_TEST

START_TEST(test_call_ret)
{
	// call rel32
	static const uint8_t call[] = { 0xe8, 0, 0, 0, 0 };
	struct result r = DECODE(call);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, regs.rsp - 8, 8, true, true);

	// call rax: only the return address
	static const uint8_t callr[] = { 0xff, 0xd0 };
	check_one(callr, regs.rsp - 8, 8, true, true);

	// call qword ptr [rax+8]: the pointer is read too
	static const uint8_t callm[] = { 0xff, 0x50, 0x08 };
	r = DECODE(callm);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rax + 8, 8, false, false);
	check_access(r, 1, regs.rsp - 8, 8, true, true);

	// ret; ret 8
	static const uint8_t ret[] = { 0xc3 };
	check_one(ret, regs.rsp, 8, false, true);
	static const uint8_t ret8[] = { 0xc2, 0x08, 0x00 };
	check_one(ret8, regs.rsp, 8, false, true);

	// leave: pops RBP from where RBP points
	static const uint8_t leave[] = { 0xc9 };
	check_one(leave, regs.rbp, 8, false, true);

	// enter 0x10, 0: pushes RBP
	static const uint8_t enter[] = { 0xc8, 0x10, 0x00, 0x00 };
	check_one(enter, regs.rsp - 8, 8, true, true);

	// jmp qword ptr [rax]: a plain read, no stack
	static const uint8_t jmpm[] = { 0xff, 0x20 };
	check_one(jmpm, regs.rax, 8, false, false);
}
END_TEST

// --------------------------------------------------------------- strings

START_TEST(test_strings)
{
	// rep movsb byte ptr es:[rdi], byte ptr [rsi]: first element only
	static const uint8_t repmovsb[] = { 0xf3, 0xa4 };
	struct result r = DECODE(repmovsb);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rdi, 1, true, true);
	check_access(r, 1, regs.rsi, 1, false, true);

	// ... and nothing at all when RCX is 0
	uint64_t rcx = regs.rcx;
	regs.rcx = 0;
	r = DECODE(repmovsb);
	ck_assert_uint_eq(r.n, 0);
	regs.rcx = rcx;

	// movsq
	static const uint8_t movsq[] = { 0x48, 0xa5 };
	r = DECODE(movsq);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rdi, 8, true, true);
	check_access(r, 1, regs.rsi, 8, false, true);

	// movsd (the string one, not SSE): 4 bytes
	static const uint8_t movsd[] = { 0xa5 };
	r = DECODE(movsd);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rdi, 4, true, true);
	check_access(r, 1, regs.rsi, 4, false, true);

	// movsb byte ptr es:[rdi], byte ptr fs:[rsi]: the override is RSI's
	static const uint8_t fsmovs[] = { 0x64, 0xa4 };
	r = DECODE(fsmovs);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rdi, 1, true, true);
	check_access(r, 1, regs.fs_base + regs.rsi, 1, false, true);

	// rep stosq
	static const uint8_t stosq[] = { 0xf3, 0x48, 0xab };
	check_one(stosq, regs.rdi, 8, true, true);

	// lodsd
	static const uint8_t lodsd[] = { 0xad };
	check_one(lodsd, regs.rsi, 4, false, true);

	// cmpsw: both read
	static const uint8_t cmpsw[] = { 0x66, 0xa7 };
	r = DECODE(cmpsw);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, regs.rsi, 2, false, true);
	check_access(r, 1, regs.rdi, 2, false, true);

	// repne scasb: reads RDI
	static const uint8_t scasb[] = { 0xf2, 0xae };
	check_one(scasb, regs.rdi, 1, false, true);

	// addr32 movsb byte ptr es:[edi], byte ptr [esi]
	regs.rsi = 0xaaaaaaaa00001234;
	regs.rdi = 0xbbbbbbbb00005678;
	static const uint8_t movs32[] = { 0x67, 0xa4 };
	r = DECODE(movs32);
	ck_assert_uint_eq(r.n, 2);
	check_access(r, 0, (uint32_t)regs.rdi, 1, true, true);
	check_access(r, 1, (uint32_t)regs.rsi, 1, false, true);

	// movsd xmm0, qword ptr [rax]: SSE, not a string instruction
	static const uint8_t ssemovsd[] = { 0xf2, 0x0f, 0x10, 0x00 };
	check_one(ssemovsd, regs.rax, 8, false, false);
}
END_TEST

// ------------------------------------------------------------ no access

START_TEST(test_no_access)
{
	static const struct {
		const char *what;
		uint8_t bytes[10];
		size_t len;
	} cases[] = {
		{ "lea rax, [rbx+rcx*8+0x10]",
		  { 0x48, 0x8d, 0x44, 0xcb, 0x10 }, 5 },
		{ "nop dword ptr [rax+rax]", { 0x0f, 0x1f, 0x04, 0x00 }, 4 },
		{ "nop word ptr cs:[rax+rax]",
		  { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 10 },
		{ "nop", { 0x90 }, 1 },
		{ "prefetcht0 byte ptr [rax]", { 0x0f, 0x18, 0x08 }, 3 },
		{ "prefetchnta byte ptr [rax]", { 0x0f, 0x18, 0x00 }, 3 },
		{ "prefetchw byte ptr [rax]", { 0x0f, 0x0d, 0x08 }, 3 },
		{ "add rax, rbx", { 0x48, 0x01, 0xd8 }, 3 },
		{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4 },
		{ "syscall", { 0x0f, 0x05 }, 2 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = decode_at(cases[i].bytes, cases[i].len, PC);
		ck_assert_msg(r.n == 0, "%s: %zu accesses", cases[i].what, r.n);
		ck_assert_msg(r.len == cases[i].len, "%s: length %zu",
			      cases[i].what, r.len);
	}
}
END_TEST

// ------------------------------------------------------- read or write

START_TEST(test_read_modify_write)
{
	static const struct rax_case cases[] = {
		{ "lock cmpxchg qword ptr [rax], rcx",
		  { 0xf0, 0x48, 0x0f, 0xb1, 0x08 }, 5, 8, true },
		{ "cmpxchg qword ptr [rax], rcx",
		  { 0x48, 0x0f, 0xb1, 0x08 }, 4, 8, true },
		{ "lock add qword ptr [rax], rbx",
		  { 0xf0, 0x48, 0x01, 0x18 }, 4, 8, true },
		{ "add qword ptr [rax], 1", { 0x48, 0x83, 0x00, 0x01 }, 4, 8, true },
		{ "inc dword ptr [rax]", { 0xff, 0x00 }, 2, 4, true },
		{ "xadd qword ptr [rax], rcx",
		  { 0x48, 0x0f, 0xc1, 0x08 }, 4, 8, true },
		{ "xchg qword ptr [rax], rcx", { 0x48, 0x87, 0x08 }, 3, 8, true },
		{ "cmpxchg16b xmmword ptr [rax]",
		  { 0x48, 0x0f, 0xc7, 0x08 }, 4, 16, true },
		{ "sete byte ptr [rax]", { 0x0f, 0x94, 0x00 }, 3, 1, true },
		{ "movnti qword ptr [rax], rcx",
		  { 0x48, 0x0f, 0xc3, 0x08 }, 4, 8, true },
		{ "fstp qword ptr [rax]", { 0xdd, 0x18 }, 2, 8, true },
		{ "stmxcsr dword ptr [rax]", { 0x0f, 0xae, 0x18 }, 3, 4, true },
		{ "pextrd dword ptr [rax], xmm0, 1",
		  { 0x66, 0x0f, 0x3a, 0x16, 0x00, 0x01 }, 6, 4, true },
		{ "fxsave [rax]", { 0x0f, 0xae, 0x00 }, 3, 512, true },
		{ "cmp qword ptr [rax], rbx", { 0x48, 0x39, 0x18 }, 3, 8, false },
		{ "test qword ptr [rax], rbx", { 0x48, 0x85, 0x18 }, 3, 8, false },
		{ "bt qword ptr [rax], rbx", { 0x48, 0x0f, 0xa3, 0x18 }, 4, 8, false },
		{ "fld dword ptr [rax]", { 0xd9, 0x00 }, 2, 4, false },
		{ "cmove rax, qword ptr [rax]",
		  { 0x48, 0x0f, 0x44, 0x00 }, 4, 8, false },
	};
	check_rax_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

START_TEST(test_vector)
{
	static const struct rax_case cases[] = {
		{ "movdqu xmm0, xmmword ptr [rax]",
		  { 0xf3, 0x0f, 0x6f, 0x00 }, 4, 16, false },
		{ "movdqu xmmword ptr [rax], xmm0",
		  { 0xf3, 0x0f, 0x7f, 0x00 }, 4, 16, true },
		{ "movaps xmmword ptr [rax], xmm1", { 0x0f, 0x29, 0x08 }, 3, 16, true },
		{ "vmovdqu ymm0, ymmword ptr [rax]",
		  { 0xc5, 0xfe, 0x6f, 0x00 }, 4, 32, false },
		{ "vmovdqu ymmword ptr [rax], ymm0",
		  { 0xc5, 0xfe, 0x7f, 0x00 }, 4, 32, true },
		{ "vmovdqu64 zmm0, zmmword ptr [rax]",
		  { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x00 }, 6, 64, false },
		{ "vextracti128 xmmword ptr [rax], ymm1, 1",
		  { 0xc4, 0xe3, 0x7d, 0x39, 0x08, 0x01 }, 6, 16, true },
		{ "vmaskmovps ymmword ptr [rax], ymm1, ymm2",
		  { 0xc4, 0xe2, 0x75, 0x2e, 0x10 }, 5, 32, true },
	};
	check_rax_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

START_TEST(test_gather_scatter)
{
	// vpgatherdd ymm0, dword ptr [rax+ymm1*4+8], ymm2: base + disp, size
	// unknown (the lanes' indexes are in ymm1)
	static const uint8_t gather[] = { 0xc4, 0xe2, 0x6d, 0x90, 0x44, 0x88, 0x08 };
	struct result r = DECODE(gather);
	ck_assert_uint_eq(r.n, 1);
	check_access(r, 0, regs.rax + 8, 0, false, false);

	// vpscatterdd dword ptr [rax+zmm1*4+8]{k1}, zmm2 (capstone shows rcx
	// as the index: it must not be used)
	static const uint8_t scatter[] = { 0x62, 0xf2, 0x7d, 0x49, 0xa0, 0x54,
					   0x88, 0x02 };
	check_one(scatter, regs.rax + 8, 0, true, false);
}
END_TEST

// ----------------------------------------------------------- edge cases

START_TEST(test_invalid)
{
	struct hd_access a[HD_ACCESS_MAX];
	size_t n = 99, len = 99;
	// push es: invalid in 64-bit mode
	static const uint8_t pushes[] = { 0x06 };
	struct hd_error *err = hd_decode_accesses(dec, pushes, sizeof(pushes), PC,
						  &regs, a, HD_ACCESS_MAX, &n,
						  &len);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	ck_assert(err->has_address && err->address == PC);
	hd_error_destroy(err);

	// mov rax, ... cut before its ModR/M byte
	static const uint8_t cut[] = { 0x48, 0x8b };
	err = hd_decode_accesses(dec, cut, sizeof(cut), PC, &regs, a,
				 HD_ACCESS_MAX, &n, &len);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	hd_error_destroy(err);

	// no bytes at all
	err = hd_decode_accesses(dec, cut, 0, PC, &regs, a, HD_ACCESS_MAX, &n,
				 &len);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	hd_error_destroy(err);

	// the decoder still works afterwards
	static const uint8_t push[] = { 0x50 };
	struct result r = DECODE(push);
	ck_assert_uint_eq(r.n, 1);
}
END_TEST

START_TEST(test_capacity)
{
	// push qword ptr [rax] has two accesses; cap 1 writes one, counts two
	static const uint8_t pushm[] = { 0xff, 0x30 };
	struct hd_access a[2];
	memset(a, 0xee, sizeof(a));
	size_t n = 0;
	ck_assert_no_error(hd_decode_accesses(dec, pushm, sizeof(pushm), PC,
					      &regs, a, 1, &n, NULL));
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(a[0].addr, regs.rax);
	ck_assert_uint_eq(a[1].addr, 0xeeeeeeeeeeeeeeee);

	// cap 0, out NULL: just the count
	ck_assert_no_error(hd_decode_accesses(dec, pushm, sizeof(pushm), PC,
					      &regs, NULL, 0, &n, NULL));
	ck_assert_uint_eq(n, 2);
}
END_TEST

// -------------------------------------------------------------- nearest

struct nearest {
	struct hd_access a[HD_ACCESS_MAX];
	size_t n;
	uint64_t pc;
	bool approximate;
};

static struct nearest nearest_at(const uint8_t *code, size_t len,
				 unsigned limit)
{
	struct nearest r;
	memset(&r, 0, sizeof(r));
	ck_assert_no_error(hd_decode_nearest(dec, code, len, PC, &regs, limit,
					     r.a, HD_ACCESS_MAX, &r.n, &r.pc,
					     &r.approximate));
	return r;
}

START_TEST(test_nearest)
{
	// The instruction at pc is a memory one: exact.
	// mov rax, qword ptr [rbx+rcx*4+0x10]
	static const uint8_t direct[] = { 0x48, 0x8b, 0x44, 0x8b, 0x10, 0x90 };
	struct nearest r = nearest_at(direct, sizeof(direct), 4);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.pc, PC);
	ck_assert(!r.approximate);
	ck_assert_uint_eq(r.a[0].addr, regs.rbx + regs.rcx * 4 + 0x10);

	// Loads whose registers the skipped instructions change are no
	// answer; the first whose registers are intact is.
	static const uint8_t seq[] = {
		0x31, 0xc9,             // +0  xor ecx, ecx
		0x48, 0x83, 0xc2, 0x01, // +2  add rdx, 1
		0x48, 0x8b, 0x42, 0x08, // +6  mov rax, qword ptr [rdx+8]
		0x48, 0x8b, 0x1c, 0xce, // +10 mov rbx, qword ptr [rsi+rcx*8]
		0x4c, 0x8b, 0x47, 0x10, // +14 mov r8, qword ptr [rdi+0x10]
	};
	r = nearest_at(seq, sizeof(seq), 8);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.pc, PC + 14);
	ck_assert(r.approximate);
	ck_assert_uint_eq(r.a[0].addr, regs.rdi + 0x10);
	ck_assert_uint_eq(r.a[0].size, 8);
	ck_assert(!r.a[0].write);

	// Not within the limit: the load is the fifth instruction.
	r = nearest_at(seq, sizeof(seq), 3);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_uint_eq(r.pc, PC);

	// A register the skipped code does not touch keeps its load valid:
	// rdx changes, rsi and rcx do not.
	static const uint8_t keep[] = {
		0x48, 0x83, 0xc2, 0x01, // +0 add rdx, 1
		0x48, 0x8b, 0x1c, 0xce, // +4 mov rbx, qword ptr [rsi+rcx*8]
	};
	r = nearest_at(keep, sizeof(keep), 8);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.pc, PC + 4);
	ck_assert(r.approximate);
	ck_assert_uint_eq(r.a[0].addr, regs.rsi + regs.rcx * 8);

	// sub rsp changes RSP: the push after it is skipped.
	static const uint8_t stack[] = {
		0x48, 0x83, 0xec, 0x08, // +0 sub rsp, 8
		0x50,                   // +4 push rax
		0x4c, 0x8b, 0x47, 0x10, // +5 mov r8, qword ptr [rdi+0x10]
	};
	r = nearest_at(stack, sizeof(stack), 8);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.pc, PC + 5);
	ck_assert_uint_eq(r.a[0].addr, regs.rdi + 0x10);

	// RIP-relative loads use their own address.
	static const uint8_t rip[] = {
		0x90,                                     // +0 nop
		0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, // +1 mov rax, [rip+0x100]
	};
	r = nearest_at(rip, sizeof(rip), 8);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.pc, PC + 1);
	ck_assert_uint_eq(r.a[0].addr, PC + 8 + 0x100);

	// A jump ends the search: what follows need not run.
	static const uint8_t jump[] = {
		0x31, 0xc9,       // xor ecx, ecx
		0xeb, 0x00,       // jmp +0
		0x48, 0x8b, 0x07, // mov rax, qword ptr [rdi]
	};
	r = nearest_at(jump, sizeof(jump), 8);
	ck_assert_uint_eq(r.n, 0);

	// Bytes that stop decoding after pc end the search without error.
	static const uint8_t junk[] = { 0x31, 0xc9, 0x06, 0x48, 0x8b, 0x07 };
	r = nearest_at(junk, sizeof(junk), 8);
	ck_assert_uint_eq(r.n, 0);

	// An invalid instruction at pc is an error.
	struct hd_access a[HD_ACCESS_MAX];
	size_t n;
	uint64_t ipc;
	bool approx;
	struct hd_error *err = hd_decode_nearest(dec, junk + 2, 1, PC, &regs,
						 8, a, HD_ACCESS_MAX, &n, &ipc,
						 &approx);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
	hd_error_destroy(err);
}
END_TEST

// Random bytes: an error (FORMAT only) or a sane answer, never a crash.
START_TEST(test_random_bytes)
{
	uint64_t state = 0x2545f4914f6cdd1d;
	size_t valid = 0, with_access = 0;
	for (unsigned round = 0; round < 20000; round++) {
		uint8_t code[32];
		for (size_t i = 0; i < sizeof(code); i++) {
			state ^= state << 13; // xorshift64
			state ^= state >> 7;
			state ^= state << 17;
			code[i] = (uint8_t)state;
		}
		struct hd_access a[HD_ACCESS_MAX];
		size_t n = 0, len = 0;
		struct hd_error *err = hd_decode_accesses(dec, code, 15, PC, &regs,
							  a, HD_ACCESS_MAX, &n,
							  &len);
		if (err) {
			ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
			hd_error_destroy(err);
		} else {
			ck_assert(len >= 1 && len <= 15);
			ck_assert_uint_le(n, HD_ACCESS_MAX);
			valid++;
			with_access += n > 0;
		}
		uint64_t ipc;
		bool approx;
		err = hd_decode_nearest(dec, code, sizeof(code), PC, &regs, 16, a,
					HD_ACCESS_MAX, &n, &ipc, &approx);
		if (err) {
			ck_assert_int_eq(err->code, HD_ERROR_FORMAT);
			hd_error_destroy(err);
		} else {
			ck_assert_uint_le(n, HD_ACCESS_MAX);
			ck_assert(ipc >= PC && ipc < PC + sizeof(code));
			ck_assert(approx == (ipc != PC));
		}
	}
	// Most random bytes decode, and many touch memory.
	ck_assert_uint_gt(valid, 10000);
	ck_assert_uint_gt(with_access, 1000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("decode");
	TCase *tc = tcase_create("decode");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_base_index_scale);
	tcase_add_test(tc, test_sub_registers);
	tcase_add_test(tc, test_rip_relative);
	tcase_add_test(tc, test_segments);
	tcase_add_test(tc, test_push_pop);
	tcase_add_test(tc, test_call_ret);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_no_access);
	tcase_add_test(tc, test_read_modify_write);
	tcase_add_test(tc, test_vector);
	tcase_add_test(tc, test_gather_scatter);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_capacity);
	tcase_add_test(tc, test_nearest);
	tcase_add_test(tc, test_random_bytes);
	suite_add_tcase(s, tc);
	int failed = hd_run_suite(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
