#!/usr/bin/env python3
"""Several allocators in one process (issue 22), and --allocator NAME.

pool_fixture --malloc 20 uses two allocators: its own "poolalloc" for the
600 items of its scenario and glibc's malloc for 21 blocks (an array and
20 blocks, each holding the only pointer to a pool item of its own; the
last one dropped). It records every pool block, every glibc block and
glibc's own statistics (mallinfo2). heapdom walks both heaps and merges
them; every check is against that record:

  blocks     one table: every pool block and every glibc block the program
             made, with its usable size, state and allocator; glibc's other
             blocks are only its own (internal, the free top); not partial
  totals     each allocator's totals: glibc's in-use and free bytes are
             mallinfo2's uordblks and fordblks; the pool's used/free counts
  leaks      exactly the recorded leaks of both heaps (a pool item only a
             leaked glibc block pointed to is leaked; one a kept glibc
             block points to is not)
  stats      text: one "allocator:" line and one tally per allocator
  semantic   one allocator node each, claiming its own metadata (the pool
             headers under poolalloc, malloc_state under glibc)
  only-pool  --allocator poolalloc: the pool's blocks only, glibc named as
             skipped because the user asked (partial)
  only-glibc --allocator glibc: glibc's blocks only, poolalloc skipped
  unknown    --allocator jemalloc-ish name: an error listing the known ones
  nothing    --allocator glibc on a run that never called malloc: an error
             naming glibc
  live       the same merged table from the running process (--pid)
  gdb        heap-blocks --allocator poolalloc, then heap-blocks without it
             (the session walks both again) on the core
  lldb       heapdom blocks --allocator glibc, then without, on the core
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

NMALLOC = 20


class Record:
    def __init__(self, path):
        self.pools, self.pool, self.glibc, self.gstats = {}, {}, {}, None

        def record(w, line):
            if w[0] == "pool":
                self.pools[int(w[1], 16)] = int(w[2])
            elif w[0] in ("block", "gblock"):
                (self.pool if w[0] == "block" else self.glibc)[int(w[1], 16)] = (
                    int(w[2]), w[3], w[4])
            elif w[0] == "gstats":
                self.gstats = (int(w[1]), int(w[2]))
            else:
                raise KeyError(w[0])
        heaptest.read_truth(path, "pool_fixture", record)
        if not self.pools or not self.pool:
            raise heaptest.HarnessError("%s: no pools or no blocks recorded" % path)

    def leaked(self):
        return {a for d in (self.pool, self.glibc) for a, v in d.items() if v[2] == "leaked"}


def by_addr(doc):
    return {int(b["addr"], 16): b for b in doc.get("blocks", [])}


def cap(out, n=20):
    return out[:n] + (["... %d more" % (len(out) - n)] if len(out) > n else [])


def check_pool_blocks(blocks, rec):
    out = []
    got = {a: (b["size"], b["state"]) for a, b in blocks.items() if b.get("allocator") == "poolalloc"}
    want = {a: (u, s) for a, (u, s, _) in rec.pool.items()}
    for a in sorted(set(got) | set(want)):
        if got.get(a) != want.get(a):
            out.append("pool block %s: heapdom %s, recorded %s" % (hex(a), got.get(a), want.get(a)))
    for a in got:
        b = blocks[a]
        pool = next((p for p, size in rec.pools.items() if p <= a < p + size), None)
        if pool is None or b.get("arena") is None or int(b["arena"], 16) != pool:
            out.append("pool block %s: region %s, lies in pool %s" % (hex(a), b.get("arena"), pool))
    return out


def check_glibc_blocks(blocks, rec):
    out = []
    mine = {a: b for a, b in blocks.items() if b.get("allocator") == "glibc"}
    for a, (u, s, _) in sorted(rec.glibc.items()):
        b = mine.get(a)
        if not b or (b["size"], b["state"]) != (u, s):
            out.append("glibc block %s: heapdom %s, recorded %s"
                       % (hex(a), b and (b["size"], b["state"]), (u, s)))
    # Nothing else of glibc's is the program's: only its own blocks.
    for a, b in sorted(mine.items()):
        if a not in rec.glibc and b["state"] == "used":
            out.append("glibc used block %s (%d B) the program never made" % (hex(a), b["size"]))
    return out


def names(doc):
    return [a.get("name") for a in doc.get("allocators", [])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--gdb-plugin")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core, truth = run.path("two.core"), run.path("two.truth")
    state = {}

    def setup():
        heaptest.make_core(a.fixture, truth, core, ["--malloc", str(NMALLOC)])
        state["rec"] = Record(truth)
        if len(state["rec"].glibc) != NMALLOC + 1 or not state["rec"].gstats:
            return ["the fixture recorded %d glibc blocks, expected %d, and gstats"
                    % (len(state["rec"].glibc), NMALLOC + 1)]
        return []
    run.case("setup: gcore of pool_fixture --malloc 20 and its record", setup)
    if "rec" not in state:
        return run.finish()
    rec = state["rec"]

    def merged(doc, what):
        out = []
        if (doc.get("allocator") or {}).get("name") != "poolalloc":
            out.append("%s: allocator %r, expected poolalloc (its used blocks hold the most bytes)"
                       % (what, (doc.get("allocator") or {}).get("name")))
        if sorted(names(doc)) != ["glibc", "poolalloc"]:
            out.append("%s: allocators %r, expected poolalloc and glibc" % (what, names(doc)))
        if doc.get("partial") or doc.get("problems") or doc.get("other_allocator"):
            out.append("%s: partial %r, problems %r, other_allocator %r: both heaps are walked"
                       % (what, doc.get("partial"), (doc.get("problems") or [])[:3],
                          doc.get("other_allocator")))
        return out

    def case_blocks():
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
        blocks = by_addr(doc)
        out = merged(doc, "blocks")
        out += check_pool_blocks(blocks, rec) + check_glibc_blocks(blocks, rec)
        addrs = [int(b["addr"], 16) for b in doc["blocks"]]
        if addrs != sorted(addrs):
            out.append("blocks are not in address order")
        return cap(out)
    run.case("blocks: one table, every pool and glibc block as recorded", case_blocks)

    def case_totals():
        doc = heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"])
        al = {x["name"]: x for x in doc.get("allocators", [])}
        out = []
        g, p = (al.get("glibc") or {}).get("totals"), (al.get("poolalloc") or {}).get("totals")
        if not g or not p:
            return ["allocators %r without totals" % list(al)]
        uord, ford = rec.gstats
        in_use = g["used"]["bytes"] + g["internal"]["bytes"]
        free = g["free"]["bytes"] + g["reserve"]["bytes"]
        if (in_use, free) != (uord, ford):
            out.append("glibc: %d B in use, %d B free; mallinfo2 says %d and %d" % (in_use, free, uord, ford))
        used = sum(1 for u, s, _ in rec.pool.values() if s == "used")
        nfree = sum(1 for u, s, _ in rec.pool.values() if s == "free")
        if (p["used"]["blocks"], p["free"]["blocks"]) != (used, nfree):
            out.append("poolalloc: %d used, %d free blocks; recorded %d and %d"
                       % (p["used"]["blocks"], p["free"]["blocks"], used, nfree))
        if g["used"]["blocks"] != len(rec.glibc):
            out.append("glibc: %d used blocks, recorded %d" % (g["used"]["blocks"], len(rec.glibc)))
        st = {x["name"]: x for x in doc.get("allocator_stats", [])}
        if (st.get("poolalloc") or {}).get("used", {}).get("blocks") != used:
            out.append("allocator_stats poolalloc: %r" % st.get("poolalloc"))
        tot = doc["totals"]["used"]["blocks"]
        if tot != used + len(rec.glibc):
            out.append("totals: %d used blocks, recorded %d + %d" % (tot, used, len(rec.glibc)))
        return out
    run.case("totals: each allocator's, glibc's against mallinfo2", case_totals)

    def case_leaks():
        doc = heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"])
        got = {int(b["addr"], 16) for b in doc["leaks"]}
        want = rec.leaked()
        out = ["not reported leaked: %s %s" % (hex(x), "glibc" if x in rec.glibc else "pool")
               for x in sorted(want - got)]
        out += ["reported leaked, recorded %s: %s" % (rec.pool.get(x) or rec.glibc.get(x), hex(x))
                for x in sorted(got - want)]
        if not any(x in rec.glibc for x in want):
            out.append("the record has no leaked glibc block")
        return cap(out)
    run.case("leaks: exactly the recorded leaks of both heaps", case_leaks)

    def case_stats_text():
        r = heaptest.run_heapdom(a.heapdom, ["stats", core])
        if r.rc != 0:
            return [r.describe()]
        lines = r.out.splitlines()
        out = []
        al = [ln for ln in lines if ln.startswith("allocator: ")]
        if len(al) != 2 or not al[0].startswith("allocator: poolalloc") or \
                not al[1].startswith("allocator: glibc"):
            out.append("allocator lines %r" % al)
        for name in ("poolalloc", "glibc"):
            if not any(ln.startswith("Allocator " + name) for ln in lines):
                out.append("no 'Allocator %s' tally" % name)
        return out
    run.case("stats: one allocator line and one tally each (text)", case_stats_text)

    def case_semantic():
        doc = heaptest.heapdom_json(a.heapdom, ["dominators", core, "--semantic", "--json"])
        nodes = {n["id"]: n for n in doc.get("nodes", [])}
        tops = {n["label"]: n for n in nodes.values()
                if n.get("parent") is None and n.get("kind") == "allocator"}
        out = []
        for label in ("poolalloc", "glibc malloc"):
            if label not in tops:
                out.append("no allocator node %r (top nodes %r)" % (label, sorted(tops)))
        if out:
            return out

        def child(top, label):
            return next((n for n in nodes.values()
                         if n.get("parent") == top["id"] and n["label"] == label), None)
        ph = child(tops["poolalloc"], "pool headers")
        if not ph or ph["object"]["blocks"] != len(rec.pools):
            out.append("poolalloc's 'pool headers' node %r: expected the %d pool headers"
                       % (ph and ph["object"], len(rec.pools)))
        gs = child(tops["glibc malloc"], "arena state and heap headers")
        if not gs or gs["object"]["blocks"] < 1:
            out.append("glibc's metadata node %r" % (gs and gs["object"]))
        return out
    run.case("semantic: one allocator node each, claiming its own metadata", case_semantic)

    def only(name, other):
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json", "--allocator", name])
        out = []
        if names(doc) != [name] or (doc.get("allocator") or {}).get("name") != name:
            out.append("allocators %r, expected only %s" % (names(doc), name))
        if doc.get("skipped_allocators") != [other] or \
                doc.get("skipped_by") != "--allocator " + name or doc.get("partial") is not True:
            out.append("skipped %r by %r, partial %r: expected %s skipped, partial"
                       % (doc.get("skipped_allocators"), doc.get("skipped_by"),
                          doc.get("partial"), other))
        blocks = by_addr(doc)
        if any(b.get("allocator") != name for b in blocks.values()):
            out.append("blocks of another allocator shown")
        out += check_pool_blocks(blocks, rec) if name == "poolalloc" else \
            check_glibc_blocks(blocks, rec)
        r = heaptest.run_heapdom(a.heapdom, ["stats", core, "--allocator", name])
        if r.rc != 0 or "not walked, as --allocator %s asked: %s" % (name, other) not in r.out:
            out.append("stats text does not say %s was not walked:\n%s" % (other, r.out[:400]))
        return cap(out)
    run.case("only-pool: --allocator poolalloc, glibc skipped as asked",
             lambda: only("poolalloc", "glibc"))
    run.case("only-glibc: --allocator glibc, poolalloc skipped as asked",
             lambda: only("glibc", "poolalloc"))

    def case_unknown():
        out = []
        for cmd in (["stats", core, "--allocator", "jemallocx"],
                    ["leaks", core, "--allocator=glibc,nosuch"]):
            r = heaptest.run_heapdom(a.heapdom, cmd)
            # The list names every backend (more than this test's two).
            known = r.err.split("walks", 1)[-1]
            if (r.rc == 0 or "unknown allocator" not in r.err or "poolalloc" not in known
                    or "glibc" not in known):
                out.append("%s: rc %s, stderr %r: expected an error listing poolalloc and glibc"
                           % (" ".join(cmd[2:]), r.rc, r.err.strip()))
        return out
    run.case("unknown: an unknown --allocator name is an error listing the known ones", case_unknown)

    def case_nothing():
        core1, truth1 = run.path("one.core"), run.path("one.truth")
        heaptest.make_core(a.fixture, truth1, core1)
        r = heaptest.run_heapdom(a.heapdom, ["blocks", core1, "--allocator", "glibc"])
        out = []
        if r.rc == 0 or "--allocator glibc" not in r.err or "no block" not in r.err:
            out.append("rc %s, stderr %r: expected an error naming glibc, which holds nothing"
                       % (r.rc, r.err.strip()))
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core1, "--json"])
        if names(doc) != ["poolalloc"] or doc.get("partial"):
            out.append("without --malloc: allocators %r, partial %r; expected poolalloc alone"
                       % (names(doc), doc.get("partial")))
        return out
    run.case("nothing: --allocator glibc where glibc holds nothing is an error", case_nothing)

    def case_live():
        ltruth, ready = run.path("live.truth"), run.path("live.ready")
        proc = heaptest.start_fixture(a.fixture, ltruth, ready, ["--malloc", str(NMALLOC)])
        try:
            lrec = Record(ltruth)
            doc = heaptest.heapdom_json(a.heapdom, ["blocks", "--pid", str(proc.pid), "--json"])
            out = merged(doc, "live")
            blocks = by_addr(doc)
            out += check_pool_blocks(blocks, lrec) + check_glibc_blocks(blocks, lrec)
            doc = heaptest.heapdom_json(a.heapdom, ["blocks", "--pid", str(proc.pid), "--json",
                                                    "--allocator", "poolalloc"])
            if names(doc) != ["poolalloc"] or doc.get("skipped_allocators") != ["glibc"]:
                out.append("live --allocator poolalloc: allocators %r, skipped %r"
                           % (names(doc), doc.get("skipped_allocators")))
            return cap(out)
        finally:
            heaptest.stop_fixture(proc)
    run.case("live: both heaps of the running process", case_live)

    def debugger_docs(argv, outs):
        env = heaptest.debugger_env(**({"HEAPDOM_LIB": a.lib} if a.lib else {}))
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                           env=env, stdin=subprocess.DEVNULL)
        docs = []
        for p in outs:
            if not os.path.exists(p):
                raise heaptest.HarnessError("no %s written\nstdout %s\nstderr %s"
                                            % (p, r.stdout[-1500:], r.stderr[-1500:]))
            with open(p) as f:
                docs.append(json.load(f))
            os.unlink(p)
        return docs, r

    def check_front(docs, name, other, what):
        only_doc, both_doc = docs
        out = []
        if names(only_doc) != [name] or only_doc.get("skipped_allocators") != [other]:
            out.append("%s --allocator %s: allocators %r, skipped %r"
                       % (what, name, names(only_doc), only_doc.get("skipped_allocators")))
        blocks = by_addr(only_doc)
        out += check_pool_blocks(blocks, rec) if name == "poolalloc" else \
            check_glibc_blocks(blocks, rec)
        out += merged(both_doc, what + " (the next command, without --allocator)")
        blocks = by_addr(both_doc)
        out += check_pool_blocks(blocks, rec) + check_glibc_blocks(blocks, rec)
        return cap(out)

    def case_gdb():
        if not a.gdb_plugin or not shutil.which("gdb"):
            return []
        o1, o2 = run.path("gdb-only.json"), run.path("gdb-both.json")
        argv = ["gdb", "-q", "-nx", "-batch", "-ex", "set python print-stack full",
                "-ex", "source " + a.gdb_plugin,
                "-ex", "heap-blocks --json --allocator poolalloc --output " + o1,
                "-ex", "heap-blocks --json --output " + o2, a.fixture, core]
        docs, _ = debugger_docs(argv, [o1, o2])
        return check_front(docs, "poolalloc", "glibc", "gdb")
    run.case("gdb: heap-blocks --allocator poolalloc, then both, on the core", case_gdb)

    def case_lldb():
        lldb = shutil.which("lldb-14")
        if not a.lldb_plugin or not lldb:
            return []
        o1, o2 = run.path("lldb-only.json"), run.path("lldb-both.json")
        argv = [lldb, "-x", "-b", "-c", core, a.fixture,
                "-o", "plugin load " + a.lldb_plugin,
                "-o", "heapdom blocks --json --allocator glibc --output " + o1,
                "-o", "heapdom blocks --json --output " + o2]
        docs, _ = debugger_docs(argv, [o1, o2])
        return check_front(docs, "glibc", "poolalloc", "lldb")
    run.case("lldb: heapdom blocks --allocator glibc, then both, on the core", case_lldb)
    return run.finish(remove=(".core", ".truth", ".ready"))


if __name__ == "__main__":
    sys.exit(main())
