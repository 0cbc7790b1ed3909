#!/usr/bin/env python3
"""Seeds of fuzz_jemalloc.c: jemalloc 5.3.0 memory images (the layout of
core/heap/jemalloc/layout.c): 64 bytes (the rtree's base b0, root[0] = the
leaf, arenas[0..5]), the leaf's 256 entries for the image's pages, then
the image at IMAGE: slabs of three classes with their descriptors and
bitmaps, a large extent (cache-oblivious: its pointer past the page
start), a dirty extent, arena 0 with its bins' counts, its base (b0) and
a thread cache holding three regions in a stack allocated from a slab.

usage: seed_jemalloc.py OUTDIR
"""
import os
import struct
import sys

IMAGE = 0x10000000
LEAF = 0x20000000
PAGE = 4096
EDATA_AT = 0x30000
ARENA_AT = 0x40000
TSLOW_AT = 0x56000
TCACHE_AT = 0x57000
B0_AT = 0x58000
ARENA_IND, ARENA_BASE, ARENA_TCACHE_QL, ARENA_BINS = 78928, 78936, 10392, 78952
BIN_SIZE, BIN_CURREGS = 224, 136


def size_of(szind):
    if szind == 0:
        return 8
    if szind < 5:
        return 16 * szind
    g, k = divmod(szind - 5, 4)
    base = 64 << g
    return base + (k + 1) * (base >> 2)


def build(slabs, large, dirty, cached, link_used=True):
    img = bytearray(0x100000)
    entries = bytearray(2048)
    used_regions = {}        # szind -> regions allocated in bitmaps
    regions = []             # (addr, szind, allocated)
    nedata = 0

    def edata(bits, addr, size, bitmap=None):
        nonlocal nedata
        at = EDATA_AT + 128 * nedata
        nedata += 1
        struct.pack_into("<QQQ", img, at, bits, addr, size)
        if bitmap is not None:
            for g in range(8):
                struct.pack_into("<Q", img, at + 64 + 8 * g, (bitmap >> (64 * g)) & (2**64 - 1))
        return IMAGE + at

    def register(page, e, szind, slab, state):
        bits = e | (szind << 48) | (state << 2) | (1 if slab else 0)
        struct.pack_into("<Q", entries, 8 * page, bits)

    for page, npages, szind, free in slabs:
        reg = size_of(szind)
        n = npages * PAGE // reg
        bitmap = 0
        for i in range(n):
            if i in free:
                bitmap |= 1 << i
            else:
                regions.append((IMAGE + page * PAGE + i * reg, szind))
        used_regions[szind] = used_regions.get(szind, 0) + n - len(free)
        bits = (1 << 12) | (szind << 20) | (len(free) << 28)
        e = edata(bits, IMAGE + page * PAGE, npages * PAGE, bitmap)
        for p in range(page, page + npages):
            register(p, e, szind, True, 0)
    for page, npages, szind, off in large:
        e = edata(szind << 20, IMAGE + page * PAGE + off, npages * PAGE)
        register(page, e, szind, False, 0)
        register(page + npages - 1, e, szind, False, 0)
        regions.append((IMAGE + page * PAGE + off, szind))
    for page, npages in dirty:
        e = edata((1 << 17) | (231 << 20), IMAGE + page * PAGE, npages * PAGE)
        register(page, e, 231, False, 1)
        register(page + npages - 1, e, 231, False, 1)
    # arena 0 and its base b0
    struct.pack_into("<I", img, ARENA_AT + ARENA_IND, 0)
    struct.pack_into("<Q", img, ARENA_AT + ARENA_BASE, IMAGE + B0_AT)
    for szind, n in used_regions.items():
        struct.pack_into("<Q", img, ARENA_AT + ARENA_BINS + szind * BIN_SIZE + BIN_CURREGS, n)
    struct.pack_into("<Q", img, B0_AT + 160, IMAGE + B0_AT + 0x4000)   # blocks
    struct.pack_into("<QQ", img, B0_AT + 0x4000, 0x8000, 0)            # size, next
    # the thread cache: its stacks in the first allocated region of the
    # largest slab class, three regions of `cached`'s class cached
    if cached is not None:
        stacks = max((r for r in regions if r[1] < 36), key=lambda r: size_of(r[1]))[0]
        struct.pack_into("<Q", img, ARENA_AT + ARENA_TCACHE_QL, IMAGE + TSLOW_AT)
        struct.pack_into("<QQ", img, TSLOW_AT, IMAGE + TSLOW_AT, IMAGE + TSLOW_AT)
        struct.pack_into("<Q", img, TSLOW_AT + 40, IMAGE + ARENA_AT)
        struct.pack_into("<Q", img, TSLOW_AT + 160, stacks)
        struct.pack_into("<Q", img, TSLOW_AT + 168, IMAGE + TCACHE_AT)
        struct.pack_into("<Q", img, TCACHE_AT, IMAGE + TSLOW_AT)
        items = [r[0] for r in regions if r[1] == cached and r[0] != stacks][:3]
        for b in range(cached + 1):
            at = TCACHE_AT + 8 + 24 * b
            if b < cached:
                head, n = stacks, 0
            else:
                head, n = stacks + 8, len(items)
                for k, it in enumerate(items):
                    struct.pack_into("<Q", img, stacks - IMAGE + 8 + 8 * k, it)
            struct.pack_into("<QQHHH", img, at, head, 0, (head + 8 * n) & 0xffff,
                             stacks & 0xffff, (head + 8 * n) & 0xffff)
    # used regions point at each other (a list)
    if link_used:
        addrs = [r[0] for r in regions]
        for a, b in zip(addrs, addrs[1:]):
            if a != IMAGE + TSLOW_AT:
                struct.pack_into("<Q", img, a - IMAGE, b)
    # trim the image's trailing zeros
    end = max(i for i in range(len(img)) if img[i]) + 1
    end = (end + 7) & ~7
    header = struct.pack("<8Q", IMAGE + B0_AT, LEAF, IMAGE + ARENA_AT, 0, 0, 0, 0, 0)
    return header + bytes(entries) + bytes(img[:end])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        # slabs: (page, pages, szind, free region indices)
        "slabs": build([(0, 1, 2, {1, 5, 9}), (1, 5, 5, {0, 3}), (6, 1, 8, set())],
                       [], [], None),
        "tcache": build([(0, 1, 2, {1, 5, 9}), (1, 5, 5, {0, 3}), (6, 5, 13, {2})],
                        [(16, 5, 36, 0x40)], [(32, 4)], 2),
        "large": build([(0, 1, 1, set())], [(8, 5, 36, 0x80), (13, 9, 39, 0x1c0)],
                       [(22, 2)], None, link_used=False),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
