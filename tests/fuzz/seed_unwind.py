#!/usr/bin/env python3
"""Seeds of fuzz_unwind.c: for each ELF program given, its .eh_frame (and
.debug_frame if any), a pc in some of its functions, registers, and a
stack of frame pointers and return addresses into its functions.

usage: seed_unwind.py OUTDIR PROGRAM...
"""
import os
import struct
import sys

NREGS = 17
RSP, RBP = 7, 6


def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        end = data.index(b"\0", stroff + h[0])
        name = data[stroff + h[0]:end].decode()
        out[name] = h
    return out


def functions(data, secs):
    if ".symtab" not in secs:
        return []
    sym, strtab = secs[".symtab"], secs[".strtab"]
    fns = []
    for off in range(sym[4], sym[4] + sym[5], 24):
        name, info, _, _, value, size = struct.unpack_from("<IBBHQQ", data, off)
        if info & 0xF == 2 and size > 8 and value:  # STT_FUNC
            fns.append((value, size))
    return sorted(fns)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for prog in sys.argv[2:]:
        data = open(prog, "rb").read()
        secs = sections(data)
        eh = secs.get(".eh_frame")
        df = secs.get(".debug_frame")
        eh_bytes = data[eh[4]:eh[4] + eh[5]] if eh else b""
        df_bytes = data[df[4]:df[4] + df[5]] if df else b""
        fns = functions(data, secs)
        rsp = 0x7FFD0000
        stack = bytearray()
        for i in range(64):
            if i % 2 == 0:
                stack += struct.pack("<Q", rsp + 0x40 * (i // 2 + 1))
            else:
                value = fns[i % len(fns)][0] + 5 if fns else 0x1005
                stack += struct.pack("<Q", value)
        base = os.path.basename(prog)
        for n, (value, size) in enumerate(fns[:12]):
            for k, pc in enumerate((value, value + 4, value + size // 2)):
                regs = [0x1000 + 0x100 * i for i in range(NREGS)]
                regs[RSP] = rsp
                regs[RBP] = rsp + 0x40
                head = struct.pack("<QQ", eh[2] if eh else 0, pc)
                head += struct.pack("<%dQ" % NREGS, *regs)
                head += struct.pack("<IHH", (1 << NREGS) - 1, len(eh_bytes),
                                    len(df_bytes))
                with open(f"{out}/{base}-{n}-{k}", "wb") as f:
                    f.write(head + eh_bytes + df_bytes + bytes(stack))


main()
