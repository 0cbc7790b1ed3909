#!/usr/bin/env python3
"""Seeds of fuzz_tcmalloc.c: gperftools 2.10 memory images (the layouts of
core/heap/tcmalloc/tcmalloc_internal.h) as records (u8 where: 0 the .bss,
1 the heap; u32 offset; u16 length; bytes). The .bss holds the page heap
(page map root, free_ lists of self-linked dummy spans), four central
free lists and a size map of four classes (8, 16 bytes and 256 KiB); the
heap holds a span of 8-byte objects (three on its own object list, two in
the transfer cache), a span of 16-byte objects, a large span in use, a
free span, a thread cache holding objects of both classes, and the page
map leaf.

  full.bin      all of it, consistent (no problem)
  loop.bin      the thread cache's list of class 1 loops
  badclass.bin  a span says a size class the size map does not have
  fresh.bin     Static::inited_ 0: tcmalloc never initialised

usage: seed_tcmalloc.py OUTDIR
"""
import os
import struct
import sys

BIAS = 0x6a0000000000
BSS = BIAS + 0x10000
IMAGE = 0x10000000
PH_ROOT, PH_ALLOC, PH_FREE = 0x80000, 0x180000, 0x180068
CENTRAL, CFL = 0x184000, 1216
MOVE, C2S, PAGES, NUM = 0x1aa000, 0x1aa200, 0x1aa400, 0x1aa800
THREAD_HEAPS, INITED = 0x1aa810, 0x1aa818
SPANS, TCACHE, LEAF = 0x100000, 0x110000, 0x200000
SIZES, MOVES, NPAGES = [0, 8, 16, 262144], [0, 2, 2, 1], [0, 1, 1, 32]


def rec(out, where, off, data):
    out += struct.pack("<BIH", where, off, len(data)) + bytes(data)


def image(loop=False, badclass=False, inited=True):
    out = bytearray()
    # .bss: the page heap's allocator_ (a function of the module), free_.
    rec(out, 0, PH_ALLOC, struct.pack("<Q", BSS + 0x100))
    dummies = bytearray(256 * 48)
    for k in range(256):
        a = BSS + PH_FREE + 48 * k
        struct.pack_into("<QQQQ", dummies, 48 * k, 0, 0, a, a)
    rec(out, 0, PH_FREE, dummies)
    rec(out, 0, PH_ROOT, struct.pack("<Q", IMAGE + LEAF))
    # stats_: system bytes (the seven pages of the spans below), free bytes.
    rec(out, 0, PH_FREE + 256 * 48, struct.pack("<QQ", 7 << 13, 2 << 13))
    central = bytearray(4 * CFL)
    for i in range(4):
        c = BSS + CENTRAL + CFL * i
        struct.pack_into("<Q", central, CFL * i + 8, i)
        for d in (16, 64):
            struct.pack_into("<QQ", central, CFL * i + d + 16, c + d, c + d)
    # Class 1's transfer cache: one slot of two objects.
    a8 = IMAGE
    struct.pack_into("<QQ", central, CFL + 128, a8 + 8 * 30, a8 + 8 * 31)
    struct.pack_into("<i", central, CFL + 1152, 1)
    rec(out, 0, CENTRAL, central)
    rec(out, 0, MOVE, struct.pack("<4i", *MOVES))
    rec(out, 0, C2S, struct.pack("<4i", *SIZES))
    rec(out, 0, PAGES, struct.pack("<4Q", *NPAGES))
    rec(out, 0, NUM, struct.pack("<Q", 4))
    rec(out, 0, THREAD_HEAPS, struct.pack("<Q", IMAGE + TCACHE))
    rec(out, 0, INITED, bytes([1 if inited else 0]))
    # The heap: spans (start page, length, next, prev, objects, bits).
    p0 = IMAGE >> 13
    spans = [  # (first page, pages, class, location, objects, refcount)
        (p0, 1, 5 if badclass else 1, 0, a8 + 8 * 10, 1024 - 3),
        (p0 + 1, 1, 2, 0, 0, 512),
        (p0 + 2, 3, 0, 0, 0, 0),
        (p0 + 5, 2, 0, 1, 0, 0),
    ]
    leaf = {}
    for k, (page, n, sc, loc, objs, ref) in enumerate(spans):
        addr = IMAGE + SPANS + 64 * k
        rec(out, 1, SPANS + 64 * k, struct.pack("<QQQQQI", page, n, 0, 0, objs,
                                                ref | sc << 16 | loc << 24))
        for p in ([page, page + n - 1] if loc else range(page, page + n)):
            leaf[p] = addr
    for p, addr in leaf.items():
        rec(out, 1, LEAF + 8 * (p & 0x3ffff), struct.pack("<Q", addr))
    # Objects of span 0: its list 10 -> 11 -> 12; transfer 30 -> 31;
    # thread cache 20 -> 21. Span 1: thread cache 5. Used blocks point on.
    links = {10: 11, 11: 12, 12: 0, 30: 31, 31: 0, 20: 21, 21: 20 if loop else 0}
    for i, nxt in links.items():
        rec(out, 1, 8 * i, struct.pack("<Q", a8 + 8 * nxt if nxt else 0))
    rec(out, 1, 0, struct.pack("<Q", IMAGE + 0x4000))        # block 0 -> large
    rec(out, 1, 0x4000, struct.pack("<Q", IMAGE + 0x2000 + 16))  # large -> 16B #1
    tc = bytearray(4160)
    struct.pack_into("<QI", tc, 32 * 1, a8 + 8 * 20, 2)
    struct.pack_into("<QI", tc, 32 * 2, IMAGE + 0x2000 + 16 * 5, 1)
    struct.pack_into("<i", tc, 4096, 2 * 8 + 16)
    rec(out, 1, TCACHE, tc)
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, img in (("full.bin", image()), ("loop.bin", image(loop=True)),
                      ("badclass.bin", image(badclass=True)),
                      ("fresh.bin", image(inited=False))):
        with open(os.path.join(d, name), "wb") as f:
            f.write(img)


if __name__ == "__main__":
    main()
