#!/usr/bin/env python3
"""jemalloc 5.3.0 (issue 22): heapdom's jemalloc backend against the truth
jemalloc_fixture records (a program linked with -ljemalloc, two threads).

  blocks   allocator.name is jemalloc, version 5.3.0; every block the
           program made is there with its usable size (malloc_usable_size)
           and state; a freed large block is either a free block at its
           address or inside a free (dirty/muzzy/retained) extent, since
           jemalloc merges freed extents, or inside a block the program
           did not make (jemalloc reuses it); the heap is complete
  tcache   both threads' caches are read: blocks on list "tcache", and the
           bytes heapdom shows used + thread-cached + internal equal
           mallctl("stats.allocated") exactly (jemalloc counts cached
           regions and its internal allocations as allocated); the facts
           allocated_bytes and active_bytes equal stats.allocated and
           stats.active
  leaks    the leaked blocks are exactly the ones the program dropped
  bins     per arena, the slab regions heapdom finds allocated in the
           bitmaps equal the arena's bins' own count (bin stats curregs,
           fact bins_curregs): jemalloc's statistics as a second oracle
  live     the same blocks, states and oracle on the running process (--pid)
  gdb      the gdb front-end (heap-blocks --json) on the core and attached
           to the running process: the same checks
  lldb     the lldb front-end (heapdom blocks --json) on the core and
           attached to the running process
"""
import argparse
import bisect
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

FREE_EXTENTS = ("dirty", "muzzy", "retained")


def parse(path):
    blocks, stats = {}, {}

    def record(w, line):
        if w[0] == "block":
            if w[3] not in ("used", "free") or w[4] not in ("reachable", "leaked", "-"):
                raise ValueError("bad state or verdict")
            blocks[int(w[1], 16)] = (int(w[2]), w[3], w[4])
        elif w[0] == "stat":
            stats[w[1]] = int(w[2])
        else:
            raise KeyError(w[0])
    heaptest.read_truth(path, "jemalloc_fixture", record)
    if not blocks or "allocated" not in stats:
        raise heaptest.HarnessError("%s: no blocks or no stats recorded" % path)
    return blocks, stats


def check_blocks(doc, truth):
    blocks, stats = truth
    out = []
    al = doc.get("allocator") or {}
    if al.get("name") != "jemalloc" or al.get("version") != "5.3.0":
        return ["allocator %r version %r, expected jemalloc 5.3.0" % (al.get("name"), al.get("version"))]
    if doc.get("partial") or doc.get("problems"):
        out.append("partial %r, problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
    got = {int(b["addr"], 16): b for b in doc["blocks"]}
    starts = sorted(got)
    for addr, (usable, state, _) in sorted(blocks.items()):
        b = got.get(addr)
        if b is not None and (b["size"], b["state"]) == (usable, state):
            continue
        if state == "free":
            # jemalloc merges a freed extent with its free neighbours
            # (before or after it: the block heapdom finds may start at
            # addr, larger), and may reuse it, or its start, for an
            # allocation of its own (a thread cache's stacks, the stats
            # mallctl refreshes) or one the program did not record
            # (libc's). A merged extent holds no block the program holds.
            i = bisect.bisect_right(starts, addr) - 1
            c = got[starts[i]] if i >= 0 else None
            end = starts[i] + c["size"] if c else 0
            if c and starts[i] <= addr < end and (
                    (c["state"] == "free" and c.get("list") in FREE_EXTENTS and
                     not any(s == "used" for a2, (_, s, _) in blocks.items()
                             if starts[i] <= a2 < end)) or
                    c["state"] == "internal" or
                    (c["state"] == "used" and starts[i] not in blocks)):
                continue
        out.append("block %s: heapdom %s, recorded %s" % (
            hex(addr), (b["size"], b["state"], b.get("list")) if b else None, (usable, state)))
    lists = {}
    for b in doc["blocks"]:
        if b["state"] == "free":
            lists[b.get("list")] = lists.get(b.get("list"), 0) + 1
    for want in ("tcache", "slab"):
        if not lists.get(want):
            out.append("no free block on list %r (lists %r)" % (want, lists))
    for r in al.get("regions", []):
        f = r.get("facts") or {}
        if f.get("bins_curregs") != f.get("slab_regions_allocated"):
            out.append("arena %s: %r slab regions allocated in the bitmaps, its bins count %r"
                       % (r.get("addr"), f.get("slab_regions_allocated"), f.get("bins_curregs")))
    used = sum(b["size"] for b in doc["blocks"] if b["state"] == "used")
    cached = sum(b["size"] for b in doc["blocks"] if b.get("list") == "tcache")
    internal = sum(b["size"] for b in doc["blocks"] if b["state"] == "internal")
    if (al.get("facts") or {}).get("allocated_bytes") != stats["allocated"]:
        out.append("fact allocated_bytes %r, stats.allocated %d"
                   % ((al.get("facts") or {}).get("allocated_bytes"), stats["allocated"]))
    if "active" in stats and (al.get("facts") or {}).get("active_bytes") != stats["active"]:
        out.append("fact active_bytes %r, stats.active %d"
                   % ((al.get("facts") or {}).get("active_bytes"), stats["active"]))
    if used + cached + internal != stats["allocated"]:
        out.append("used %d + thread-cached %d + internal %d = %d bytes; stats.allocated %d"
                   % (used, cached, internal, used + cached + internal, stats["allocated"]))
    return out[:20] + (["... %d more" % (len(out) - 20)] if len(out) > 20 else [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--gdb-plugin")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core, truth = run.path("jemalloc.core"), run.path("jemalloc.truth")
    state = {}

    def setup():
        heaptest.make_core(a.fixture, truth, core)
        state["truth"] = parse(truth)
        return []
    run.case("setup: gcore of jemalloc_fixture and its truth", setup)
    if "truth" not in state:
        return run.finish()
    t = state["truth"]

    run.case("blocks: every block, usable size and state; tcache; stats.allocated",
             lambda: check_blocks(heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"]), t))

    def case_leaks():
        doc = heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"])
        got = {int(b["addr"], 16) for b in doc["leaks"]}
        want = {addr for addr, (_, _, v) in t[0].items() if v == "leaked"}
        out = ["dropped block %s not reported leaked" % hex(x) for x in sorted(want - got)]
        out += ["block %s reported leaked, recorded %s" % (hex(x), t[0].get(x)) for x in sorted(got - want)]
        if len(want) < 2:
            out.append("the fixture recorded %d leaked blocks; expected several" % len(want))
        return out[:20]
    run.case("leaks: exactly the blocks the program dropped", case_leaks)

    def case_live():
        ltruth, ready = run.path("live.truth"), run.path("live.ready")
        proc = heaptest.start_fixture(a.fixture, ltruth, ready)
        try:
            lt = parse(ltruth)
            doc = heaptest.heapdom_json(a.heapdom, ["blocks", "--pid", str(proc.pid), "--json"])
        finally:
            heaptest.stop_fixture(proc)
        return check_blocks(doc, lt)
    run.case("live: the same on the running process (--pid)", case_live)

    def env():
        e = heaptest._env()
        if a.lib:
            e["HEAPDOM_LIB"] = os.path.abspath(a.lib)
        return e

    def debugger_json(cmd, out):
        if os.path.exists(out):
            os.unlink(out)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env(),
                           stdin=subprocess.DEVNULL, errors="replace")
        if not os.path.isfile(out) or not os.path.getsize(out):
            raise heaptest.HarnessError("%s wrote no JSON (rc %d)\n%s%s" % (
                cmd[0], r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
        import json
        with open(out) as f:
            return json.load(f)

    def gdb_blocks(argv):
        out = run.path("gdb.json")
        return debugger_json(["gdb", "-q", "-nx", "-batch",
                              "-ex", "source " + os.path.abspath(a.gdb_plugin),
                              "-ex", "pipe heap-blocks --json | cat > " + out] + argv, out)

    if a.gdb_plugin:
        run.case("gdb: heap-blocks --json on the core",
                 lambda: check_blocks(gdb_blocks([a.fixture, core]), t))

        def case_gdb_live():
            ltruth, ready = run.path("glive.truth"), run.path("glive.ready")
            proc = heaptest.start_fixture(a.fixture, ltruth, ready)
            try:
                lt = parse(ltruth)
                doc = gdb_blocks(["-p", str(proc.pid)])
            finally:
                heaptest.stop_fixture(proc)
            return check_blocks(doc, lt)
        run.case("gdb: heap-blocks --json attached to the running process", case_gdb_live)

    if a.lldb_plugin:
        def lldb_blocks(target):
            out = run.path("lldb.json")
            return debugger_json(["lldb-14", "-x", "-b",
                                  "-o", "plugin load " + os.path.abspath(a.lldb_plugin)]
                                 + target + ["-o", "heapdom blocks --json --output " + out], out)

        run.case("lldb: heapdom blocks --json on the core", lambda: check_blocks(
            lldb_blocks(["-o", "target create %s --core %s" % (a.fixture, core)]), t))

        def case_lldb_live():
            ltruth, ready = run.path("llive.truth"), run.path("llive.ready")
            proc = heaptest.start_fixture(a.fixture, ltruth, ready)
            try:
                lt = parse(ltruth)
                doc = lldb_blocks(["-p", str(proc.pid)])
            finally:
                heaptest.stop_fixture(proc)
            return check_blocks(doc, lt)
        run.case("lldb: heapdom blocks --json attached to the running process", case_lldb_live)
    return run.finish(remove=(".core", ".truth"))


if __name__ == "__main__":
    sys.exit(main())
