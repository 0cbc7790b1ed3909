#!/usr/bin/env python3
"""Seeds of fuzz_musl.c: mallocng memory images (musl 1.2.1-1.2.5's
layout, core/heap/musl/musl_internal.h): the 928 bytes of
__malloc_context, then the image at IMAGE: one meta area, a group of
64-byte slots (used ones with exact sizes: a small reserve, a size
trailer, an offset block; avail, freed and inactive ones; used blocks
pointing at each other), a group of 16-byte slots nested in one of its
slots, and a large allocation in a mapping of its own.

  full.bin      all of it, consistent (no problem)
  flat.bin      without the nested group
  fresh.bin     a context never initialised (an empty heap)
  loop.bin      the meta area list loops (its area links to itself)

usage: seed_musl.py OUTDIR
"""
import os
import struct
import sys

IMAGE = 0x10000000
SECRET = 0x5EC2E7C0FFEE1234
CTX = 928
AREA = IMAGE
G0 = IMAGE + 0x1000          # class 3 (64-byte slots), 10 slots, own page
G2 = IMAGE + 0x2000          # class 63: one slot, 2 pages


def meta(img, idx, prev, nxt, mem, avail, freed, last_idx, freeable, sc, maplen):
    off = 24 + 40 * idx
    struct.pack_into("<QQQIIQ", img, off, prev, nxt, mem, avail, freed,
                     last_idx | freeable << 5 | sc << 6 | maplen << 12)
    return AREA + off


def header(img, p, idx, code, storage):
    """The in-band header of a block at p: [-4] 0, [-3] idx | code << 5,
    [-2..-1] the offset from storage in 16-byte units."""
    o = p - 4 - IMAGE
    img[o] = 0
    img[o + 1] = idx | code << 5
    struct.pack_into("<H", img, o + 2, (p - storage) // 16)


def block(img, storage, stride, i, n, off=0):
    """A used slot i holding n bytes at offset off (16-byte units)."""
    start = storage + stride * i
    end = start + stride - 4
    p = start + 16 * off
    if off:
        o = start - 4 - IMAGE
        img[o + 1] = 7 << 5
        struct.pack_into("<H", img, o + 2, off)
    reserved = end - p - n
    code = reserved
    if reserved >= 5:
        struct.pack_into("<I", img, end - 4 - IMAGE, reserved)
        img[end - 5 - IMAGE] = 0
        code = 5
    header(img, p, i, code, storage)
    return p


def build(nested=True, fresh=False, loop=False):
    img = bytearray(0x4000)
    ctx = bytearray(CTX)
    struct.pack_into("<QQ", img, 0, SECRET, 0)
    struct.pack_into("<i", img, 16, 101)
    # G0: class 3, 10 slots, active_idx 7; slot 2 avail, 3 freed, 8-9
    # inactive, 5 holds G1 (when nested), the rest used.
    avail0, freed0 = 1 << 2, 1 << 3 | 1 << 8 | 1 << 9
    if not nested:
        avail0 |= 1 << 5
    m0 = meta(img, 0, AREA + 24, AREA + 24, G0, avail0, freed0, 9, 1, 3, 1)
    struct.pack_into("<QB", img, G0 - IMAGE, m0, 7)
    s0 = G0 + 16
    used = [block(img, s0, 64, 0, 50), block(img, s0, 64, 1, 58),
            block(img, s0, 64, 4, 20, off=1), block(img, s0, 64, 6, 40),
            block(img, s0, 64, 7, 60)]
    # a list: each used block points at the next
    for a, b in zip(used, used[1:]):
        struct.pack_into("<Q", img, a - IMAGE, b)
    usage = {3: 10, 0: 0}
    nmeta = 1
    if nested:
        # G1 in slot 5 of G0: class 0 (16-byte slots), 3 slots.
        g1 = s0 + 64 * 5
        header(img, g1, 5, 6, s0)
        m1 = meta(img, 1, AREA + 64, AREA + 64, g1, 1 << 2, 0, 2, 1, 0, 0)
        struct.pack_into("<QB", img, g1 - IMAGE, m1, 2)
        a = block(img, g1 + 16, 16, 0, 8)
        b = block(img, g1 + 16, 16, 1, 12)
        struct.pack_into("<Q", img, a - IMAGE, b)
        struct.pack_into("<Q", img, used[-1] - IMAGE, a)
        usage[0] = 3
        nmeta = 2
    # G2: a large allocation of 5000 bytes in 2 pages of its own.
    m2 = meta(img, nmeta, 0, 0, G2, 0, 0, 0, 1, 63, 2)
    struct.pack_into("<QB", img, G2 - IMAGE, m2, 0)
    big = block(img, G2 + 16, 2 * 4096 - 16, 0, 5000)
    struct.pack_into("<Q", img, big - IMAGE, used[0])
    nmeta += 1
    if loop:
        struct.pack_into("<Q", img, 8, AREA)
    struct.pack_into("<QII", ctx, 0, SECRET, 0 if fresh else 1, 1)
    struct.pack_into("<QQQQQQQQ", ctx, 16, 0, AREA + 24 + 40 * nmeta, 101 - nmeta, 0, 1,
                     0 if fresh else AREA, AREA + 0x1000 if loop else AREA, 0)
    struct.pack_into("<Q", ctx, 80 + 8 * 3, m0)
    for sc, n in usage.items():
        struct.pack_into("<Q", ctx, 464 + 8 * sc, n)
    if fresh:
        ctx = bytearray(CTX)
    return bytes(ctx) + bytes(img)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in (("full.bin", build()), ("flat.bin", build(nested=False)),
                       ("fresh.bin", build(fresh=True)), ("loop.bin", build(loop=True))):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
