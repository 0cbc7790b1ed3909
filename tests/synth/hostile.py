#!/usr/bin/env python3
"""Writes a synthetic core (mkcore.py's process) whose malloc metadata was
damaged in one hostile way, and its ground truth beside it (CORE.json).

The truth is mkcore.py's, plus what the damage is:
  "case": the case's name, "problem": what is wrong, in words;
  "named": addresses (hex) of which a warning must name one;
  "affected": user pointers of the blocks whose verdict the damage may
      change (a list whose rest is unreachable, a chunk whose size lies);
      every other block must keep the truth's verdict exactly;
  "heaps": each arena's heaps in the process; "heaps_found": those an
      exact walker can tell are the arena's (fewer where the damage
      leaves a heap nothing ties to its arena).

usage: hostile.py --version 2.35 (--case NAME | --clean) [--extra N] OUT.core
       hostile.py --list            (the cases and the versions each fits)
"""
import argparse
import array
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mkcore  # noqa: E402

PREV_INUSE = 1
# An address no core maps.
UNMAPPED = 0x100000000


def hx(v):
    return "0x%x" % v


def chunk_of(truth, user):
    return next(b for b in truth if int(b["addr"], 16) == user)


def main_heap_chunks(P, truth):
    """The main heap's blocks in address order, as (chunk address, record)."""
    return [(int(b["addr"], 16) - 16, b) for b in truth
            if b["arena"] == hx(P["main_arena"])]


def read64(mem, addr):
    m = mem._find(addr, 8)
    return struct.unpack_from("<Q", m["data"], addr - m["start"])[0]


# ------------------------------------------------------------- the cases
# Each takes the parts of mkcore.build and its truth, damages the memory
# image and returns (problem, named addresses, affected user pointers).


def tcache_bin(P):
    """Main thread's tcache and its bin of 0x30 chunks: [head, second]."""
    tc = P["tcaches"][0]
    return tc, 1, tc.bins[1]


def tcache_link(P, entry, target):
    P["mem"].w64(entry, mkcore.protect(P["f"], entry, target))


def tcache_cycle_head(P, truth):
    tc, i, (e1, e2) = tcache_bin(P)
    tcache_link(P, e2, e1)
    return "tcache list loops back to its head", [e2, e2 - 16], []


def tcache_cycle_tail(P, truth):
    tc, i, (e1, e2) = tcache_bin(P)
    tcache_link(P, e2, e2)  # a loop the head is not on
    return "tcache list loops without passing its head", [e2, e2 - 16], []


def fast_bin(P):
    return P["a1"], P["a1"].fast[0]


def fast_link(P, c, target):
    P["mem"].w64(c + 16, mkcore.protect(P["f"], c + 16, target))


def fastbin_cycle_head(P, truth):
    a, (c1, c2) = fast_bin(P)
    fast_link(P, c2, c1)
    return "fastbin loops back to its head", [c2], []


def fastbin_cycle_tail(P, truth):
    a, (c1, c2) = fast_bin(P)
    fast_link(P, c2, c2)
    return "fastbin loops without passing its head", [c2], []


def unsorted_cycle(P, truth):
    # The thread arena's unsorted bin: [chunk of 0x90, the old heap's top];
    # the second's fd goes back to the first, not to the bin.
    c1, c2 = P["a2"].bins[1]
    P["mem"].w64(c2 + 16, c1)
    return "unsorted bin loops without passing its head", [c2], []


def small_cycle(P, truth):
    c, = P["a1"].bins[0x200 >> 4]
    P["mem"].w64(c + 16, c)
    return "small bin's chunk points at itself", [c], []


def large_cycle(P, truth):
    c, = P["a1"].bins[48 + (0x500 >> 6)]
    P["mem"].w64(c + 16, c)
    return "large bin's chunk points at itself", [c], []


# Fake chunks of a ring FAKE_CHUNKS long (2**21, 32 MiB), in a mapping
# of their own: more than any heap walked here holds.
FAKE_CHUNKS = 1 << 21
FAKE_BASE = 0x7c0000000000


def fake_ring(P, safe):
    """FAKE_CHUNKS chunks of 0x20 bytes 16 apart (each one's fd is the
    next one's prev_size: chunk k's header at FAKE_BASE + 16k, size 0x21,
    fd the next chunk, safe-linked if safe), the last linking back to the
    first. Returns the first."""
    n = FAKE_CHUNKS
    words = array.array("Q", [0x21]) * (2 * n + 2)
    # Word 2k + 2 (at FAKE_BASE + 16(k + 1)) is chunk k's fd and chunk
    # k + 1's prev_size: the field's address is the next chunk's.
    nxt = range(FAKE_BASE + 16, FAKE_BASE + 16 * n, 16)
    words[2:2 * n:2] = array.array(
        "Q", ((a >> 12) ^ a for a in nxt) if safe else nxt)
    last = FAKE_BASE + 16 * n  # chunk n - 1's fd: back to the first
    words[2 * n] = (last >> 12) ^ FAKE_BASE if safe else FAKE_BASE
    words[0] = 0
    m = P["mem"].map(FAKE_BASE, 8 * len(words) + 0xfff & ~0xfff, 6)
    m["data"][:8 * len(words)] = words.tobytes()
    return FAKE_BASE


def fastbin_fake_ring(P, truth):
    # The fastbin's second chunk links into two million fake chunks that
    # link on and at last back to the first of them.
    a, (c1, c2) = fast_bin(P)
    fake = fake_ring(P, P["f"]["safe_linking"])
    fast_link(P, c2, fake)
    return "fastbin runs into %d fake chunks that cycle" % FAKE_CHUNKS, \
        [fake], []


def bin_fake_ring(P, truth):
    c, = P["a1"].bins[0x200 >> 4]
    P["mem"].w64(c + 16, fake_ring(P, False))
    return "small bin runs into %d fake chunks that cycle" % FAKE_CHUNKS, \
        [FAKE_BASE], []


def chunk_overlap(P, truth):
    # The main heap's chunk of 0x40 (after the first 0x20): its size says
    # 0x50, running 16 bytes into the next chunk.
    chunks = main_heap_chunks(P, truth)
    k = next(k for k, (c, b) in enumerate(chunks) if b["chunk"] == 0x40)
    c, b = chunks[k]
    flags = read64(P["mem"], c + 8) & 7
    P["mem"].w64(c + 8, 0x50 | flags)
    return "chunk size overlaps the next chunk", [c], [int(b["addr"], 16)]


def chunk_past_end(P, truth):
    chunks = main_heap_chunks(P, truth)
    c, b = next((c, b) for c, b in chunks if b["chunk"] == 0x90)
    flags = read64(P["mem"], c + 8) & 7
    P["mem"].w64(c + 8, 0x100000 | flags)
    return "chunk size runs past the heap's end", [c], [int(b["addr"], 16)]


def arena_ring_self(P, truth):
    a2 = P["a2"]
    P["mem"].w64(a2.addr + a2.st.off["next"], a2.addr)
    return "thread arena's next points at itself", [a2.addr], []


def fake_arenas(P, n, first_next):
    """n zeroed malloc_states in a mapping of their own, each one's next
    pointing at the following one; the last one's next is returned to the
    caller to set. Returns their addresses."""
    st = P["a2"].st
    size = (st.size + 15) & ~15
    base = 0x7d0000000000
    P["mem"].map(base, (n * size + 0xfff) & ~0xfff, 6)
    addrs = [base + k * size for k in range(n)]
    for k, a in enumerate(addrs):
        nxt = addrs[k + 1] if k + 1 < n else first_next
        P["mem"].w64(a + st.off["next"], nxt)
    return addrs


def arena_ring_pair(P, truth):
    # main_arena -> thread arena -> X -> thread arena -> X ...
    a2 = P["a2"]
    x, = fake_arenas(P, 1, a2.addr)
    P["mem"].w64(a2.addr + a2.st.off["next"], x)
    return "two arenas point at each other", [a2.addr, x], []


def empty_arenas(P, n, last_next):
    """n thread arenas as a thread's first malloc leaves them (mkcore's
    layout): each in a heap of one page of its own, 64 MiB aligned, after
    a heap_info pointing back at it, bins empty, the rest of the page its
    top chunk; each one's next is the following one, the last one's
    last_next. Returns their addresses."""
    st, hi = P["a2"].st, P["hi"]
    base = 0x600000000000
    addrs = [base + k * mkcore.HEAP_MAX + hi.size for k in range(n)]
    for k, a in enumerate(addrs):
        h = a - hi.size
        page = bytearray(mkcore.PAGE)
        put = lambda off, v: struct.pack_into("<Q", page, off, v)
        put(hi.off["ar_ptr"], a)
        put(hi.off["size"], mkcore.PAGE)
        put(hi.off["mprotect_size"], mkcore.PAGE)
        o = hi.size
        top = (a + st.size + 15) & ~15
        put(o + st.off["top"], top)
        for i in range(1, 128):
            fd = o + st.off["bins"] + 16 * (i - 1)
            put(fd, a + st.off["bins"] + 16 * (i - 1) - 16)
            put(fd + 8, a + st.off["bins"] + 16 * (i - 1) - 16)
        put(o + st.off["next"], addrs[k + 1] if k + 1 < n else last_next)
        put(o + st.off["system_mem"], mkcore.PAGE)
        put(o + st.off["max_system_mem"], mkcore.PAGE)
        put(top - h + 8, (h + mkcore.PAGE - top) | 1 | 4)
        P["mem"].maps.append({"start": h, "end": h + mkcore.PAGE, "prot": 6,
                              "path": None, "pgoff": 0, "data": page})
    return addrs


def arena_ring_long(P, truth):
    # A ring of 5000 empty arenas more, which does return to main_arena:
    # longer than any process has (arena_max defaults to 8 per cpu).
    a2 = P["a2"]
    fakes = empty_arenas(P, 5000, P["main_arena"])
    P["mem"].w64(a2.addr + a2.st.off["next"], fakes[0])
    for a in fakes:  # their top chunks are the truth's too
        top = (a + a2.st.size + 15) & ~15
        h = a - P["hi"].size
        truth.append({"addr": hx(top + 16), "chunk": h + mkcore.PAGE - top,
                      "state": "free", "list": "top", "arena": hx(a)})
    # The walk stops after as many arenas as it allows: the tops of the
    # arenas after that are not seen.
    return "arena ring longer than any real one", fakes, \
        [((a + a2.st.size + 15) & ~15) + 16 for a in fakes]


def tcache_count_huge(P, truth):
    tc, i, entries = tcache_bin(P)
    ts, mem = tc.ts, P["mem"]
    top = (1 << (8 * ts.csize)) - 1
    mem.wn(tc.user + ts.off["counts"] + i * ts.csize, ts.csize, top)
    mem.wn(tc.user + ts.off["counts"] + 20 * ts.csize, ts.csize, top)
    return "tcache counts[] far beyond its lists", [tc.user], []


def tcache_into_stack(P, truth):
    tc, i, (e1, e2) = tcache_bin(P)
    target = P["stack"] + 0x1e000
    tcache_link(P, e2, target)
    return "tcache entry points into a thread's stack", [target], []


def tcache_into_libc(P, truth):
    tc, i, (e1, e2) = tcache_bin(P)
    target = P["libc"] + 0x10100  # libc's writable data
    tcache_link(P, e2, target)
    return "tcache entry points into libc's data", [target], []


def tcache_into_chunk(P, truth):
    # Into the middle of the main heap's chunk of 0x90: a stale or forged
    # pointer, not a chunk's start.
    tc, i, (e1, e2) = tcache_bin(P)
    c, b = next((c, b) for c, b in main_heap_chunks(P, truth)
                if b["chunk"] == 0x90)
    target = c + 0x40
    tcache_link(P, e2, target)
    return "tcache entry points inside a chunk", [target], []


def tcache_head_unmapped(P, truth):
    tc, i, entries = tcache_bin(P)
    P["mem"].w64(tc.user + tc.ts.off["entries"] + 8 * i, UNMAPPED)
    return "tcache head points at unmapped memory", [UNMAPPED], entries


def heap_info_loop(P, truth):
    # The thread arena's newer heap: its prev points back at itself, so the
    # chain never reaches the arena's first heap.
    hi, h3 = P["hi"], P["h3"]
    P["mem"].w64(h3 + hi.off["prev"], h3)
    return "heap_info prev chain loops", [h3], []


def third_heap(P, truth):
    """The thread arena grows into a third heap (h4, after h3), as
    sysmalloc's new_heap leaves it: h3's top freed into the unsorted bin
    behind two fenceposts, h4's heap_info with prev = h3, a used chunk and
    the new top. Returns h4; the truth's heaps say 3."""
    a2, hi, mem, f = P["a2"], P["hi"], P["mem"], P["f"]
    h3, top2 = P["h3"], P["top2"]
    h4 = h3 + mkcore.HEAP_MAX
    truth.remove(chunk_of(truth, top2 + 16))
    mkcore.Heap(mem, f, top2, h3 + 0x21000, a2.addr, False, truth).retire(a2)
    mem.map(h4, 0x21000, 6)
    mem.map(h4 + 0x21000, mkcore.HEAP_MAX - 0x21000, 0, dumped=False)
    mem.w64(h4 + hi.off["ar_ptr"], a2.addr)
    mem.w64(h4 + hi.off["prev"], h3)
    mem.w64(h4 + hi.off["size"], 0x21000)
    mem.w64(h4 + hi.off["mprotect_size"], 0x21000)
    if f["heap_pagesize"]:
        mem.w64(h4 + hi.off["pagesize"], mkcore.PAGE)
    hp4 = mkcore.Heap(mem, f, h4 + hi.size, h4 + 0x21000, a2.addr, False,
                      truth)
    hp4.chunk(0x50, "used")
    top4 = hp4.top()
    a2.write(top4, P["main_arena"], 3 * 0x21000, 2)
    P["heaps"] = {hx(P["main_arena"]): 1, hx(a2.addr): 3}
    return h4


def heap_info_owner(P, truth):
    # Of the thread arena's three heaps, the newest (holding top) names
    # no arena as its owner: the middle one is found by its own heap_info,
    # and the top's heap, whose prev leads there, is the arena's still.
    h4 = third_heap(P, truth)
    P["mem"].w64(h4 + P["hi"].off["ar_ptr"], 0x4141414141414140)
    return "top's heap_info names no arena as its owner", [h4], []


def heap_info_owner_prev(P, truth):
    # As heap-info-owner, with the whole heap_info of the top's heap
    # zeroed: the middle heap is still found (the one heap naming the
    # arena that none names as prev, chained to the first), but nothing
    # says the top's heap is the arena's: it is skipped, named, and its
    # blocks are the affected ones.
    h4 = third_heap(P, truth)
    hi = P["hi"]
    for field in ("ar_ptr", "prev", "size", "mprotect_size"):
        P["mem"].w64(h4 + hi.off[field], 0)
    affected = [int(b["addr"], 16) for b in truth
                if h4 < int(b["addr"], 16) < h4 + mkcore.HEAP_MAX]
    P["heaps_found"] = {hx(P["main_arena"]): 1, hx(P["a2"].addr): 2}
    return "top's heap_info zeroed", [h4], affected


def heap_info_owner_fork(P, truth):
    # As heap-info-owner-prev, and two more heap_infos naming the thread
    # arena, each a page of its own with prev = the middle heap: the
    # chain forks, and nothing says which branch is live. The heaps that
    # name the arena are skipped and named, the first heap alone walked.
    h4 = third_heap(P, truth)
    hi, mem, a2 = P["hi"], P["mem"], P["a2"]
    for field in ("ar_ptr", "prev", "size", "mprotect_size"):
        mem.w64(h4 + hi.off[field], 0)
    forks = [h4 + mkcore.HEAP_MAX, h4 + 2 * mkcore.HEAP_MAX]
    for h in forks:
        mem.map(h, mkcore.PAGE, 6)
        mem.w64(h + hi.off["ar_ptr"], a2.addr)
        mem.w64(h + hi.off["prev"], P["h3"])
        mem.w64(h + hi.off["size"], mkcore.PAGE)
        mem.w64(h + hi.off["mprotect_size"], mkcore.PAGE)
    h3 = P["h3"]
    affected = [int(b["addr"], 16) for b in truth
                if h3 < int(b["addr"], 16) < h4 + mkcore.HEAP_MAX]
    # The skipped heaps' bin chunks link to the arena's other bin chunks,
    # whose headers lie in the last word of the blocks before them: read
    # as memory outside every heap, those links keep such a block from
    # being called leaked.
    linked = {c for cs in a2.bins.values() for c in cs}
    affected += [int(b["addr"], 16) for b in truth
                 if int(b["addr"], 16) - 16 + b["chunk"] in linked]
    P["heaps_found"] = {hx(P["main_arena"]): 1, hx(a2.addr): 1}
    return "heap_info chain forks", [h3] + forks, affected


def heap_info_size(P, truth):
    hi, h3 = P["hi"], P["h3"]
    P["mem"].w64(h3 + hi.off["size"], 4 * mkcore.HEAP_MAX)
    return "heap_info size larger than HEAP_MAX_SIZE", [h3], []


def top_unmapped(P, truth):
    a1 = P["a1"]
    P["mem"].w64(a1.addr + a1.st.off["top"], UNMAPPED)
    return "main arena's top is unmapped", [UNMAPPED], [P["top1"] + 16]


def top_size_past_heap(P, truth):
    top = P["top1"]
    flags = read64(P["mem"], top + 8) & 7
    P["mem"].w64(top + 8, 0x4000000 | flags)
    return "main arena's top chunk runs past its heap", [top], []


def thread_top_outside(P, truth):
    # The thread arena's top beyond the end its heap_info gives (in the
    # reserved, never-used part of the 64 MiB).
    a2, h3 = P["a2"], P["h3"]
    bad = h3 + 0x30000
    P["mem"].w64(a2.addr + a2.st.off["top"], bad)
    return "thread arena's top lies beyond its heap", [bad], [P["top2"] + 16]


TCACHE = [28, 35, 42]
FAST = [25, 28, 35]
ALL = [25, 28, 35, 43]
CASES = {
    "tcache-cycle-head": (tcache_cycle_head, TCACHE),
    "tcache-cycle-tail": (tcache_cycle_tail, TCACHE),
    "fastbin-cycle-head": (fastbin_cycle_head, FAST),
    "fastbin-cycle-tail": (fastbin_cycle_tail, FAST),
    "unsorted-cycle": (unsorted_cycle, ALL),
    "small-cycle": (small_cycle, ALL),
    "large-cycle": (large_cycle, ALL),
    # 32 MiB cores: one layout with safe-linking, one without.
    "fastbin-fake-ring": (fastbin_fake_ring, [28, 35]),
    "bin-fake-ring": (bin_fake_ring, [35]),
    "chunk-overlap": (chunk_overlap, ALL),
    "chunk-past-end": (chunk_past_end, ALL),
    "arena-ring-self": (arena_ring_self, ALL),
    "arena-ring-pair": (arena_ring_pair, ALL),
    "arena-ring-long": (arena_ring_long, [25, 35]),
    # 2.42's num_slots is room left, up to the tunable's 65535: no count
    # there is impossible.
    "tcache-count-huge": (tcache_count_huge, [28, 35]),
    "tcache-into-stack": (tcache_into_stack, TCACHE),
    "tcache-into-libc": (tcache_into_libc, TCACHE),
    "tcache-into-chunk": (tcache_into_chunk, TCACHE),
    "tcache-head-unmapped": (tcache_head_unmapped, TCACHE),
    "heap-info-loop": (heap_info_loop, ALL),
    "heap-info-size": (heap_info_size, ALL),
    "heap-info-owner": (heap_info_owner, ALL),
    "heap-info-owner-prev": (heap_info_owner_prev, ALL),
    "heap-info-owner-fork": (heap_info_owner_fork, ALL),
    "top-unmapped": (top_unmapped, ALL),
    "top-size-past-heap": (top_size_past_heap, ALL),
    "thread-top-outside": (thread_top_outside, ALL),
}


def write(case, minor, out, extra=0):
    parts = {}
    mem, truth, threads, auxv, where = mkcore.build(minor, True, None,
                                                    parts=parts, extra=extra)
    problem, named, affected = (CASES[case][0](parts, truth) if case
                                else ("none", [], []))
    mkcore.write_core(out, mem, threads, auxv, True)
    lo, hi = mkcore.same_layout_range(minor)
    with open(out + ".json", "w") as f:
        json.dump({"version": "2.%d" % minor, "range": [lo, hi],
                   "case": case, "problem": problem,
                   "named": [hx(a) for a in named],
                   "affected": [hx(a) for a in affected],
                   **where, "extra": extra,
                   # A case may grow the heaps, or leave one that cannot
                   # be told the arena's (heaps_found: what an exact
                   # walker finds).
                   "heaps": parts.get("heaps", where["heaps"]),
                   "heaps_found": parts.get("heaps_found",
                                            parts.get("heaps",
                                                      where["heaps"])),
                   # A grown heap is for timing: its truth is left out.
                   "blocks": truth if not extra else None}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", help="2.N")
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--clean", action="store_true",
                    help="no damage (the bench's baseline)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--extra", type=int, default=0,
                    help="grow the main heap by this many used chunks "
                    "(timing only: the truth's blocks are left out)")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    if a.list:
        for name, (fn, versions) in CASES.items():
            print(name, ",".join("2.%d" % v for v in versions))
        return
    if not (a.version and (a.case or a.clean) and a.out):
        ap.error("--version, --case (or --clean) and OUT are required")
    minor = int(a.version.split(".")[1])
    write(a.case, minor, a.out, a.extra)


if __name__ == "__main__":
    main()
