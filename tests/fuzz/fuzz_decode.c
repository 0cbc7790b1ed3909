// The instruction decoder of access sampling (core/sample/decode.c): the
// input is the registers (first 27 words, short inputs zero-padded) and
// the code bytes after them; the instruction at the start and the nearest
// memory instruction after it are decoded as the sampler does.
#include <stdint.h>
#include <string.h>

#include "sample/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hd_decoder *d;
	if (!d && hd_decoder_create(&d))
		__builtin_trap();
	struct hd_regs regs = {0};
	size_t r = size < sizeof(regs) ? size : sizeof(regs);
	memcpy(&regs, data, r);
	const uint8_t *code = data + r;
	size_t len = size - r;
	uint64_t pc = regs.rip;
	struct hd_access acc[HD_ACCESS_MAX];
	size_t n, insn_len;
	hd_error_destroy(hd_decode_accesses(d, code, len, pc, &regs, acc,
					    HD_ACCESS_MAX, &n, &insn_len));
	uint64_t insn_pc;
	bool approx;
	hd_error_destroy(hd_decode_nearest(d, code, len, pc, &regs, 16, acc,
					   HD_ACCESS_MAX, &n, &insn_pc, &approx));
	// A cap smaller than the accesses: only cap written, *n the total.
	hd_error_destroy(hd_decode_accesses(d, code, len, pc, &regs, acc, 1, &n,
					    NULL));
	return 0;
}
