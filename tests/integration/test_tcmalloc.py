#!/usr/bin/env python3
"""gperftools 2.10's tcmalloc (issue 22): heapdom's tcmalloc backend against
the truth tcmalloc_fixture records (a program linked with
-ltcmalloc_minimal, two threads).

  blocks   allocator.name is tcmalloc, version 2.10; every block the
           program made is there with its usable size (malloc_usable_size)
           and state; a freed large block is either a free block at its
           address or inside a free page heap span (tcmalloc merges freed
           spans), or inside a block the program did not make (tcmalloc
           reused it); free objects on the lists "thread cache", "central"
           and "transfer cache"; and tcmalloc's own statistics
           (MallocExtension_GetNumericProperty at the stop) exactly:
           generic.current_allocated_bytes = heapdom's used bytes,
           tcmalloc.thread_cache_free_bytes = bytes on "thread cache",
           tcmalloc.transfer_cache_free_bytes = bytes on "transfer cache",
           tcmalloc.central_cache_free_bytes = bytes on "central" plus the
           unused tails of the spans of small objects (fact
           span_tail_bytes; tcmalloc counts them there),
           tcmalloc.pageheap_free_bytes = bytes on "page heap",
           tcmalloc.pageheap_unmapped_bytes = bytes on "returned"
  leaks    the leaked blocks are exactly the ones the program dropped,
           and the one block gperftools leaks itself (a default
           MallocExtension whose only pointer Register() overwrites)
  live     the same on the running process (--pid)
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

FREE_SPANS = ("page heap", "returned")
# The fixture's statistic, and the lists whose bytes make it.
STATS = {
    "generic.current_allocated_bytes": None,
    "tcmalloc.thread_cache_free_bytes": ("thread cache",),
    "tcmalloc.transfer_cache_free_bytes": ("transfer cache",),
    "tcmalloc.central_cache_free_bytes": ("central",),
    "tcmalloc.pageheap_free_bytes": ("page heap",),
    "tcmalloc.pageheap_unmapped_bytes": ("returned",),
}


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
    heaptest.read_truth(path, "tcmalloc_fixture", record)
    if not blocks or set(stats) != set(STATS):
        raise heaptest.HarnessError("%s: no blocks or not every stat recorded" % path)
    return blocks, stats


def check_blocks(doc, truth):
    blocks, stats = truth
    out = []
    al = doc.get("allocator") or {}
    if al.get("name") != "tcmalloc" or al.get("version") != "2.10":
        return ["allocator %r version %r, expected tcmalloc 2.10" % (al.get("name"), al.get("version"))]
    if doc.get("partial") or doc.get("problems"):
        out.append("partial %r, problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
    tc = [b for b in doc["blocks"] if b.get("allocator", "tcmalloc") == "tcmalloc"]
    got = {int(b["addr"], 16): b for b in tc}
    starts = sorted(got)
    for addr, (usable, state, _) in sorted(blocks.items()):
        b = got.get(addr)
        if b is not None and (b["size"], b["state"]) == (usable, state):
            continue
        if state == "free" and (b is None or b.get("list") in FREE_SPANS):
            i = bisect.bisect_right(starts, addr) - 1
            c = got[starts[i]] if i >= 0 else None
            if c and starts[i] <= addr < starts[i] + c["size"] and (
                    (c["state"] == "free" and c.get("list") in FREE_SPANS) or
                    (c["state"] == "used" and starts[i] not in blocks)):
                continue
        out.append("block %s: heapdom %s, recorded %s" % (
            hex(addr), (b["size"], b["state"], b.get("list")) if b else None, (usable, state)))
    bytes_on = {}
    for b in tc:
        if b["state"] == "free":
            bytes_on[b.get("list")] = bytes_on.get(b.get("list"), 0) + b["size"]
    for want in ("thread cache", "central", "transfer cache"):
        if not bytes_on.get(want):
            out.append("no free block on list %r (lists %r)" % (want, sorted(bytes_on)))
    facts = al.get("facts") or {}
    tail = facts.get("span_tail_bytes", 0)
    for name, lists in STATS.items():
        if lists is None:
            # tcmalloc counts a sampled span's pages past its block.
            mine = sum(b["size"] for b in tc if b["state"] == "used") + \
                facts.get("sampled_tail_bytes", 0)
        else:
            mine = sum(bytes_on.get(l, 0) for l in lists)
            if name == "tcmalloc.central_cache_free_bytes":
                mine += tail
        if mine != stats[name]:
            out.append("%s: tcmalloc says %d, heapdom's blocks make %d" % (name, stats[name], mine))
        fact = facts.get(name.split(".", 1)[1])
        if fact != stats[name]:
            out.append("fact %s %r, tcmalloc says %d" % (name.split(".", 1)[1], fact, stats[name]))
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
    ap.add_argument("--frontends", default="all", choices=("all", "none", "only"))
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core, truth = run.path("tcmalloc.core"), run.path("tcmalloc.truth")
    state = {}

    def setup():
        heaptest.make_core(a.fixture, truth, core)
        state["truth"] = parse(truth)
        return []
    run.case("setup: gcore of tcmalloc_fixture and its truth", setup)
    if "truth" not in state:
        return run.finish()
    t = state["truth"]

    cli = a.frontends != "only"
    if cli:
        run.case("blocks: every block, usable size and state; free lists; MallocExtension statistics",
                 lambda: check_blocks(heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"]), t))

    def case_leaks():
        doc = heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"])
        got = {int(b["addr"], 16) for b in doc["leaks"]}
        want = {addr for addr, (_, _, v) in t[0].items() if v == "leaked"}
        out = ["dropped block %s not reported leaked" % hex(x) for x in sorted(want - got)]
        # gperftools leaks one block itself: MallocExtension's InitModule
        # makes a default `new MallocExtension` (8 bytes, its vtable) and
        # Register() overwrites the only pointer to it with tcmalloc's
        # implementation (malloc_extension.cc; it tells its own heap
        # checker to ignore it). The fixture did not make it.
        types = {int(b["addr"], 16): (b.get("type"), b["size"]) for b in doc["leaks"]}
        own = {x for x in got - want if x not in t[0] and types.get(x) == ("MallocExtension", 8)}
        if len(own) > 1:
            out.append("%d MallocExtension blocks leaked; gperftools leaks one" % len(own))
        out += ["block %s reported leaked, recorded %s" % (hex(x), t[0].get(x)) for x in sorted(got - want - own)]
        if len(want) < 2:
            out.append("the fixture recorded %d leaked blocks; expected several" % len(want))
        return out[:20]
    if cli:
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
    if cli:
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

    if a.frontends == "none":
        return run.finish(remove=(".core", ".truth"))
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
