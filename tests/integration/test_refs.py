#!/usr/bin/env python3
"""References held the way C programs hold them (tests/fixtures/refs_fixture.c):
addresses kept in integers, byte buffers and unions, pointers to a block's
last word. Checked against the truth the fixture recorded:

  a leaks        typed and --untyped: exactly the fixture's leaked blocks
  b holders      every block the fixture stored in an integer, a char[] or a
                 union has an edge from its holder (graph --from), typed and
                 untyped
  c owners       `why POINTER` for a pointer to a block's last word (or any
                 recorded address inside a block) names that block, typed
                 and untyped
  d gdb          heap-why g_watch[K] (a long * to a counter's last member)
                 at the fixture's stop names the counter's block
  e live         leaks on the live process (--pid) equal the truth too

usage: test_refs.py --heapdom PATH --fixture PATH --gdb-plugin PATH
                    --workdir DIR [--only a,b] [--keep]
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402


class Truth:
    def __init__(self):
        self.blocks = {}     # name -> addr
        self.leaked = set()
        self.owner = []      # (pointer, block addr)
        self.holder = []     # (block addr, holder block addr | root name)
        self.module = None


def read_truth(path):
    t = Truth()

    def record(w, line):
        if w[0] == "block":
            t.blocks[w[1]] = int(w[2], 16)
        elif w[0] == "leaked":
            t.leaked.add(int(w[1], 16))
        elif w[0] == "owner":
            t.owner.append((int(w[1], 16), int(w[2], 16)))
        elif w[0] == "holder":
            t.holder.append((int(w[1], 16),
                             w[2] if w[2].startswith("root:") else int(w[2], 16)))
        elif w[0] == "module":
            t.module = w[1]
        elif w[0] != "pid":
            raise ValueError("unknown record")
    heaptest.read_truth(path, "refs_fixture", record)
    return t


MODES = (("typed", []), ("untyped", ["--untyped"]))


def check_leaks(hd, target, t):
    out = []
    for mode, extra in MODES:
        doc = heaptest.heapdom_json(hd, ["leaks"] + target + ["--json"] + extra)
        got = {int(b["addr"], 16) for b in doc["leaks"]}
        if got != t.leaked:
            names = {a: n for n, a in t.blocks.items()}
            out.append("%s: leaked %d blocks, truth %d; false leaks %s; missed %s"
                       % (mode, len(got), len(t.leaked),
                          [names.get(a, hex(a)) for a in sorted(got - t.leaked)][:12],
                          [names.get(a, hex(a)) for a in sorted(t.leaked - got)]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    hd = a.heapdom
    truth_path, core = run.path("refs.truth"), run.path("refs.core")
    heaptest.make_core(a.fixture, truth_path, core)
    t = read_truth(truth_path)
    target = [core, "--exe", a.fixture]
    names = {addr: n for n, addr in t.blocks.items()}

    run.case("a leaks", lambda: check_leaks(hd, target, t))

    def holders():
        out = []
        if len(t.holder) < 20:
            out.append("truth has only %d holder records" % len(t.holder))
        for mode, extra in MODES:
            for addr, holder in t.holder:
                if isinstance(holder, str):
                    continue  # a root: the leak check covers it
                doc = heaptest.heapdom_json(hd, ["graph"] + target + [
                    "--format", "json", "--from", hex(holder), "--depth", "1"] + extra)
                ids = {n["id"]: int(n["addr"], 16) for n in doc["nodes"]}
                edges = {(ids.get(x), ids.get(y)) for x, y in doc["edges"]}
                if (holder, addr) not in edges:
                    out.append("%s: no edge %s (0x%x) -> %s (0x%x)"
                               % (mode, names.get(holder), holder, names.get(addr), addr))
        return out
    run.case("b holders", holders)

    def owners():
        out = []
        lastword = 0
        for ptr, addr in t.owner:
            for mode, extra in MODES:
                doc = heaptest.heapdom_json(hd, ["why"] + target + [hex(ptr), "--json"] + extra)
                got = int(doc["block"]["addr"], 16)
                if got != addr:
                    out.append("%s: why 0x%x names block 0x%x, truth %s (0x%x)"
                               % (mode, ptr, got, names.get(addr), addr))
                if not doc.get("reachable"):
                    out.append("%s: why 0x%x: %s reported unreachable"
                               % (mode, ptr, names.get(addr)))
            blk = heaptest.heapdom_json(hd, ["why"] + target + [hex(addr), "--json"])["block"]
            if ptr + 8 == addr + blk["size"]:
                lastword += 1
        # The counters and queue nodes are 24-byte blocks: the recorded
        # pointers are their last words, the case this test is about.
        if lastword < 5:
            out.append("only %d owner records point at a block's last word" % lastword)
        return out
    run.case("c owners", owners)

    def gdb_why():
        counters = sorted((n, a) for n, a in t.blocks.items() if n.startswith("counter."))
        cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
               "-ex", "break hd_fixture_stop", "-ex", "run"]
        for k in range(len(counters)):
            cmd += ["-ex", "heap-why g_watch[%d]" % k]
        cmd += ["-ex", "kill", "--args", a.fixture, run.path("gdb.truth")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env=heaptest._env())
        gt = read_truth(run.path("gdb.truth"))
        out = []
        for name, _ in counters:
            addr = gt.blocks[name]
            want = "is in 0x%x" % addr
            if want not in r.stdout:
                out.append("heap-why for %s: %r not in output:\n%s"
                           % (name, want, r.stdout[-3000:] + r.stderr[-1000:]))
        return out
    run.case("d gdb", gdb_why)

    def live():
        ready = run.path("live.ready")
        proc = heaptest.start_fixture(a.fixture, run.path("live.truth"), ready)
        try:
            lt = read_truth(run.path("live.truth"))
            return check_leaks(hd, ["--pid", str(proc.pid)], lt)
        finally:
            heaptest.stop_fixture(proc)
    run.case("e live", live)

    return run.finish(remove=(".core", ".truth", ".ready"))


if __name__ == "__main__":
    sys.exit(main())
