#!/usr/bin/env python3
"""The allocator seam (issue 20): a second allocator behind it.

pool_fixture embeds "poolalloc", a pool allocator of its own (pools with
block headers and free lists), and records every pool and block it made:
address, usable size, used or free, and whether the program still reaches
it. heapdom's poolalloc backend (core/heap/poolalloc/, one registry line)
must be the one detected and give back exactly those blocks, states and
leaks from a gdb gcore of the program:

  blocks   allocator.name is poolalloc; the blocks (address, usable size,
           state) are the recorded ones, each in the region of its pool;
           the regions are the pools; the heap is complete (not partial)
  leaks    the leaked blocks are exactly the ones the program dropped
           (one of them only reachable from another leaked block)
  stats    used and free counts are the recorded ones
  two      with --malloc 20 the program also keeps 21 blocks of glibc's
           malloc: the pool heap is still shown exactly, and marked
           partial, naming glibc's heap it does not show
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402


def parse(path):
    pools, blocks = {}, {}

    def record(w, line):
        if w[0] == "pool":
            pools[int(w[1], 16)] = int(w[2])
        elif w[0] == "block":
            if w[3] not in ("used", "free") or w[4] not in ("reachable", "leaked", "-"):
                raise ValueError("bad state or verdict")
            blocks[int(w[1], 16)] = (int(w[2]), w[3], w[4])
        else:
            raise KeyError(w[0])
    heaptest.read_truth(path, "pool_fixture", record)
    if not pools or not blocks:
        raise heaptest.HarnessError("%s: no pools or no blocks recorded" % path)
    return pools, blocks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core, truth = run.path("pool.core"), run.path("pool.truth")
    state = {}

    def setup():
        heaptest.make_core(a.fixture, truth, core)
        state["truth"] = parse(truth)
        return []
    run.case("setup: gcore of pool_fixture and its truth", setup)
    if "truth" not in state:
        return run.finish()
    pools, truth_blocks = state["truth"]

    def case_blocks():
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
        out = []
        al = doc.get("allocator") or {}
        if al.get("name") != "poolalloc":
            out.append("allocator.name is %r, expected poolalloc (the registry chose "
                       "another backend)" % al.get("name"))
            return out
        if doc.get("partial") or doc.get("problems"):
            out.append("partial %r, problems %r" % (doc.get("partial"), doc.get("problems")[:5]))
        regions = {int(r["addr"], 16) for r in al.get("regions", [])}
        if regions != set(pools):
            out.append("regions %s, pools recorded %s" % (sorted(map(hex, regions)),
                                                           sorted(map(hex, pools))))
        got = {}
        for b in doc["blocks"]:
            addr = int(b["addr"], 16)
            got[addr] = (b["size"], b["state"])
            pool = next((p for p, size in pools.items() if p <= addr < p + size), None)
            if b["arena"] is None or pool is None or int(b["arena"], 16) != pool:
                out.append("block %s: region %s, but it lies in pool %s"
                           % (b["addr"], b["arena"], hex(pool) if pool else None))
            if b["state"] == "free" and b.get("list") != "free list":
                out.append("free block %s on list %r, expected 'free list'" % (b["addr"], b.get("list")))
        want = {addr: (u, s) for addr, (u, s, _) in truth_blocks.items()}
        for addr in sorted(set(want) | set(got)):
            if want.get(addr) != got.get(addr):
                out.append("block %s: heapdom %s, recorded %s" % (hex(addr), got.get(addr), want.get(addr)))
        return out[:20] + (["... %d more" % (len(out) - 20)] if len(out) > 20 else [])
    run.case("blocks: every pool block, its usable size, state and pool", case_blocks)

    def case_leaks():
        doc = heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"])
        got = {int(b["addr"], 16) for b in doc["leaks"]}
        want = {addr for addr, (_, _, v) in truth_blocks.items() if v == "leaked"}
        out = []
        for addr in sorted(want - got):
            out.append("dropped block %s not reported leaked" % hex(addr))
        for addr in sorted(got - want):
            out.append("block %s reported leaked, recorded %s" % (hex(addr), truth_blocks.get(addr)))
        if len(want) < 2:
            out.append("the fixture recorded %d leaked blocks; expected several" % len(want))
        return out[:20]
    run.case("leaks: exactly the blocks the program dropped", case_leaks)

    def case_stats():
        doc = heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"])
        tot = doc["totals"]
        used = sum(1 for _, s, _ in truth_blocks.values() if s == "used")
        free = sum(1 for _, s, _ in truth_blocks.values() if s == "free")
        got_free = sum(c["blocks"] for c in tot["free"].values())
        out = []
        if tot["used"]["blocks"] != used or got_free != free:
            out.append("stats: %d used, %d free; recorded %d used, %d free"
                       % (tot["used"]["blocks"], got_free, used, free))
        if len(doc.get("region_stats", [])) != len(pools):
            out.append("stats: %d regions, %d pools" % (len(doc.get("region_stats", [])), len(pools)))
        return out
    run.case("stats: used and free counts", case_stats)

    def case_two():
        core2, truth2 = run.path("pool2.core"), run.path("pool2.truth")
        heaptest.make_core(a.fixture, truth2, core2, ["--malloc", "20"])
        _, blocks2 = parse(truth2)
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core2, "--json"])
        out = []
        if (doc.get("allocator") or {}).get("name") != "poolalloc":
            out.append("allocator.name %r, expected poolalloc" % (doc.get("allocator") or {}).get("name"))
        other = doc.get("other_allocator") or ""
        if doc.get("partial") is not True or not other.startswith("glibc (its heap holds 21 used blocks"):
            out.append("partial %r, other_allocator %r: expected partial and glibc's 21 used blocks named"
                       % (doc.get("partial"), other))
        got = {int(b["addr"], 16): (b["size"], b["state"]) for b in doc.get("blocks", [])}
        want = {addr: (u, s) for addr, (u, s, _) in blocks2.items()}
        if got != want:
            out.append("%d blocks differ from the record" % len(set(got.items()) ^ set(want.items())))
        return out
    run.case("two allocators: the pool heap, marked partial for glibc's", case_two)
    return run.finish(remove=(".core", ".truth"))


if __name__ == "__main__":
    sys.exit(main())
