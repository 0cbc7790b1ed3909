#!/usr/bin/env python3
"""Writes seed inputs of fuzz_trace (format in fuzz_trace.c): a tracer
state's head, then patches (u32 offset, u8 length, bytes) that fill call
sites, the no-site slot and per-thread shards.

Offsets from core/include/heapdom_trace.h (version 5): the head is 2096
bytes, sites (88 bytes each, 65536) start at 2096, shards (47136 bytes
each, their sites at +2080) at 5769264. A changed layout only makes these
seeds less useful: the harness reads whatever it is given."""
import struct
import sys

MAGIC, VERSION, SIZE = 0x4543415254444548, 5, 8785968
SITES, SITE, SHARDS, SHARD, SHARD_SITES = 2096, 88, 5769264, 47136, 2080
BIAS = 0x6a0000000000
NO_SITE = 65535


def head(epoch, enabled, key):
    h = struct.pack("<QIIIIQQQ", MAGIC, VERSION, SIZE, enabled, epoch, 4242,
                    key, 3)
    classes = b"".join(struct.pack("<QQ", k, k * 16) for k in range(64))
    ages = b"".join(struct.pack("<QQ", 64 - k, 0) for k in range(64))
    return h + classes + ages


def patch(off, data):
    assert len(data) < 256
    return struct.pack("<IB", off, len(data)) + data


def site(pc, counts):
    return struct.pack("<Q", pc) + b"".join(struct.pack("<QQ", c, c * 32)
                                            for c in counts)


def shard_site(slot, counts):
    return struct.pack("<II", slot, 0) + b"".join(
        struct.pack("<QQ", c, c * 8) for c in counts)


seeds = {
    "empty": head(0, 1, 0x1234567890abcdef),
    "sites": head(7, 1, 0x1111) + b"".join(
        patch(SITES + slot * SITE, site(BIAS + 0x1100 + slot, [slot, 1, 2, 0, slot]))
        for slot in (0, 5, 100, 4096, 65534)) +
        patch(SITES + NO_SITE * SITE, site(1, [9, 0, 0, 0, 9])),
    "shards": head(2, 0, 0x2222) +
        patch(SITES + 17 * SITE, site(BIAS + 0x1234, [4, 0, 0, 0, 1])) +
        patch(SHARDS, struct.pack("<QQ", 77, 5)) +
        patch(SHARDS + SHARD_SITES, shard_site(18, [3, 0, 1, 0, 2])) +
        patch(SHARDS + SHARD + SHARD_SITES + 88, shard_site(65536, [1, 1, 1, 1, 1])),
}
for name, data in seeds.items():
    with open(f"{sys.argv[1]}/{name}", "wb") as f:
        f.write(data)
