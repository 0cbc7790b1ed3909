#!/usr/bin/env python3
"""Seeds of fuzz_pool.c: poolalloc memory images (the layout of
tests/fixtures/pool_fixture.c and core/heap/poolalloc/poolalloc.c): the
value of poolalloc_pools, then the image at IMAGE with one or two pools of
used and free blocks, the free blocks on their pool's free list, used
blocks pointing at each other.

usage: seed_pool.py OUTDIR
"""
import os
import struct
import sys

IMAGE = 0x10000000
POOL_SIZE = 0x4000
MAGIC = 0x6C6F6F7050444850
USED, FREE = 0xA110C8ED, 0xF4EEB10C


def pool(img, base, nxt, sizes, free_idx):
    off, blocks = 64, []
    for s in sizes:
        blocks.append(off)
        off += s
    top = off
    free = [blocks[i] for i in free_idx]
    # free list: last freed first; each free block's data holds the next
    fl = 0
    for b in free:
        struct.pack_into("<Q", img, base - IMAGE + b + 16, fl)
        fl = base + b
    struct.pack_into("<QQQQQQ", img, base - IMAGE, MAGIC, nxt, POOL_SIZE, top,
                     fl, len(sizes))
    for i, (b, s) in enumerate(zip(blocks, sizes)):
        struct.pack_into("<IIQ", img, base - IMAGE + b, s,
                         FREE if b in free else USED, base)
    # used blocks point at the next used block's data (a list)
    used = [b for b in blocks if b not in free]
    for a, b in zip(used, used[1:]):
        struct.pack_into("<Q", img, base - IMAGE + a + 16, base + b + 16)
    return [base + b + 16 for b in used]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = {
        "one-pool": [([32, 48, 64, 32, 128, 32], [1, 3])],
        "two-pools": [([32, 32, 32, 64], [2]), ([48, 96, 32, 32, 32], [0, 4])],
        "all-free": [([64, 64, 64], [0, 1, 2])],
    }
    for name, pools in cases.items():
        img = bytearray(POOL_SIZE * len(pools))
        for i, (sizes, free_idx) in enumerate(pools):
            base = IMAGE + i * POOL_SIZE
            nxt = IMAGE + (i + 1) * POOL_SIZE if i + 1 < len(pools) else 0
            pool(img, base, nxt, sizes, free_idx)
        with open(f"{out}/{name}", "wb") as f:
            f.write(struct.pack("<Q", IMAGE) + bytes(img))
    # The merged path of fuzz_pool.c: the same two pools, and glibc chunks
    # in the input's last 256 bytes (offset >> 4 | (size >> 4) - 2 << 16 |
    # free << 22 | mmapped << 31): one overlapping the first pool's blocks,
    # two in the second pool's unused tail, one free, one mmapped.
    img = bytearray(POOL_SIZE * 2)
    pool(img, IMAGE, IMAGE + POOL_SIZE, [32, 32, 32, 64], [2])
    pool(img, IMAGE + POOL_SIZE, 0, [48, 96, 32, 32, 32], [0, 4])
    words = [(0x50 >> 4) | (4 << 16),
             ((POOL_SIZE + 0x2000) >> 4) | (2 << 16),
             ((POOL_SIZE + 0x2100) >> 4) | (6 << 16) | (1 << 22),
             ((POOL_SIZE + 0x3000) >> 4) | (10 << 16) | (1 << 31)]
    tail = b"".join(struct.pack("<I", w) for w in words)
    img[len(img) - 256:len(img) - 256 + len(tail)] = tail
    with open(f"{out}/with-glibc", "wb") as f:
        f.write(struct.pack("<Q", IMAGE) + bytes(img))


main()
