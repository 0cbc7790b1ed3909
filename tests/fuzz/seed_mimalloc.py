#!/usr/bin/env python3
"""Seeds of fuzz_mimalloc.c: mimalloc 2.0.9 segments (the layout of
core/heap/mimalloc/mimalloc_internal.h): the main heap's cookie,
thread_delayed_free and thread id, then a segment's header and slices, then
the memory from the segment + 64 KiB on. Pages of small blocks with free,
local_free and thread_free lists and used blocks pointing at each other, a
medium page, a page reached by the heap's thread_delayed_free list, a free
span; a huge segment; an abandoned segment (thread id 0).

usage: seed_mimalloc.py OUTDIR
"""
import os
import struct
import sys

SEGMENT = 0x20000000000
PAGES = 0x10000
SLICE = 0x10000
HEAP = 0x7F0000000000 + 0x4000
COOKIE = 0x5A17C0DE12345678
TID = 0x7FFFF7D6E740
SEG_SLICES, PAGE_SIZE = 264, 80
HEADER = SEG_SLICES + 513 * PAGE_SIZE


def segment(pages, kind=0, slices=512, thread=TID, tail_len=None):
    """pages: (slice index, slice count, block size, capacity, reserved,
    free, local_free, thread_free indices, heap). Returns (header, tail,
    delayed head)."""
    hdr = bytearray(HEADER)
    struct.pack_into("<Q", hdr, 208, sum(1 for p in pages if p[2]))     # used
    struct.pack_into("<Q", hdr, 216, SEGMENT ^ COOKIE)                 # cookie
    struct.pack_into("<QQ", hdr, 224, slices, 1)                      # slices, info
    struct.pack_into("<I", hdr, 240, kind)
    struct.pack_into("<QQ", hdr, 248, min(slices, 512), thread)        # entries, thread
    tail = bytearray(tail_len or 0x30000)

    def slice_at(i, count, bsize):
        struct.pack_into("<II", hdr, SEG_SLICES + i * PAGE_SIZE, count, 0)
        struct.pack_into("<I", hdr, SEG_SLICES + i * PAGE_SIZE + 28, bsize)
    slice_at(0, 1, SLICE)
    for idx, count, bsize, cap, res, free, local, tfree, heap in pages:
        slice_at(idx, count, bsize)
        off = SEG_SLICES + idx * PAGE_SIZE
        if not bsize:
            continue
        start = SEGMENT + idx * SLICE + (384 if 8 <= bsize <= 1024 else 0)
        heads = []
        for lst in (free, local, tfree):
            head = 0
            for i in reversed(lst):
                a = start + i * bsize
                if PAGES <= a - SEGMENT < PAGES + len(tail) - 8:
                    struct.pack_into("<Q", tail, a - SEGMENT - PAGES, head)
                head = a
            heads.append(head)
        unused = len(free) + len(local)
        struct.pack_into("<HH", hdr, off + 10, cap, res)
        struct.pack_into("<QII", hdr, off + 16, heads[0], cap - unused, bsize)
        struct.pack_into("<QQQ", hdr, off + 32, heads[1], heads[2] | 2, heap)
        # used blocks point at the next used block (a list)
        listed = set(free) | set(local) | set(tfree)
        used = [start + i * bsize for i in range(cap) if i not in listed]
        for a, b in zip(used, used[1:]):
            if PAGES <= a - SEGMENT < PAGES + len(tail) - 8:
                struct.pack_into("<Q", tail, a - SEGMENT - PAGES, b)
    return hdr, tail


def write(out, name, hdr, tail, delayed=0, thread=TID):
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<QQQ", COOKIE, delayed, thread) + bytes(hdr) + bytes(tail))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # Small pages of 32 and 48 bytes, a medium page, a free span.
    pages = [(1, 1, 32, 64, 2036, [3, 9, 10], [20, 21], [30, 31, 40], HEAP),
             (2, 1, 48, 40, 1357, [0, 39], [], [5], HEAP),
             (3, 8, 114688, 4, 4, [0], [], [], HEAP),
             (11, 501, 0, 0, 0, [], [], [], 0)]
    hdr, tail = segment(pages)
    write(out, "small-medium", hdr, tail)
    # A block on the heap's thread_delayed_free list (block 50 of a full page).
    pages = [(1, 1, 64, 1016, 1016, [], [], [7], HEAP),
             (2, 510, 0, 0, 0, [], [], [], 0)]
    hdr, tail = segment(pages, tail_len=0x10000)
    delayed = SEGMENT + SLICE + 384 + 50 * 64
    struct.pack_into("<Q", tail, delayed - SEGMENT - PAGES, 0)
    write(out, "delayed", hdr, tail, delayed)
    # An abandoned segment: no heap, thread id 0.
    pages = [(1, 1, 16, 100, 4072, [1, 2], [3], [], 0),
             (2, 510, 0, 0, 0, [], [], [], 0)]
    hdr, tail = segment(pages, thread=0, tail_len=0x1000)
    write(out, "abandoned", hdr, tail)
    # A huge segment: one page of 40 MiB (its block size MI_HUGE_BLOCK_SIZE).
    pages = [(1, 640, 0x80000000, 1, 1, [], [], [], HEAP)]
    hdr, tail = segment(pages, kind=1, slices=641, tail_len=0x100)
    write(out, "huge", hdr, tail)


if __name__ == "__main__":
    main()
